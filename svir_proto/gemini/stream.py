"""The Gemini stream (``streamGenerateContent``): response bytes to events and a
`Completion`.

Each SSE event's data is one whole ``GenerateContentResponse`` (Gemini API reference,
"generateContent" and "streamGenerateContent"); Google frames them ``data: {...}`` with CRLF
line ends (``alt=sse``) and sends no end marker; without ``alt=sse`` they are the elements of
one JSON array (Rule 10).

Rule 1 (identity): ``responseId`` and ``modelVersion`` (and Vertex AI's ``createTime``) of
    the first chunk that has them are `StreamStarted`; a later, different ``responseId`` is
    noted in ``problems``. A chunk with content before any identity starts the stream with
    none.
Rule 2 (candidates): the answer is candidate 0 (``index`` absent or 0). With
    ``candidateCount`` > 1 the other candidates are not decoded: the vocabulary has one answer
    per stream; that they were ignored is noted in ``problems``, once. A chunk's candidates,
    and a candidate's parts (after runs of plain text are joined), are
    `svir_proto._dialect.MAX_ENTRIES` at most.
Rule 3 (parts, in order): ``text`` is a `TextDelta`; ``text`` with ``"thought": true`` a
    `ReasoningDelta` (carrier ``thought``); a ``thoughtSignature`` on any part (an empty text
    part included, which Gemini streams to carry one) is a `ReasoningSignature` after the
    part's own event, closing the reasoning since the last one (`Completion.reasoning_blocks`).
    On a ``functionCall`` part its ``item_id`` is the call's id, so the signature goes back on
    that call, and it comes before the call's first event (on the part that opens it): the
    reasoning it closes came before the call, and an encoder ends its block with the signature
    before the call (an Anthropic client's ``thinking`` block, signed, then the ``tool_use``:
    client round 32). Other parts (``inlineData``, ``executableCode``, ...) have no event: noted.
Rule 4 (function calls): a ``functionCall`` part is one whole call, given as one
    `ToolCallDelta` (its ``args`` as compact JSON); its id is Gemini's ``id``, or, when it has
    none, ``RESPONSEID-N`` (the last ``responseId`` seen; ``call-N`` before any), N its index
    among the calls: the same bytes always give the same ids. Vertex AI's streamed arguments
    (``partialArgs``, ``willContinue``, `svir_proto.gemini._partial`) open a call whose first
    delta has its id and name; the arguments follow whole when it closes. Calls are checked
    (`svir_proto.openai._toolcalls`) and emitted whole as `ToolCall` once the stream is
    complete, against ``declared_tools`` when given.
Rule 5 (finish): candidate 0's first ``finishReason`` is `Finished` with the raw value kept:
    ``STOP`` is ``tool_calls`` when calls came, ``MAX_TOKENS`` ``length``, the safety family
    (``SAFETY``, ``RECITATION``, ``BLOCKLIST``, ``PROHIBITED_CONTENT``, ``SPII``,
    ``IMAGE_SAFETY``, ...) ``content_filter``, anything else ``other``. A later one is noted,
    and so is ``finishMessage`` (why a ``MALFORMED_FUNCTION_CALL``). The candidate's other
    metadata has no event: its sources and token alternatives (``citationMetadata``,
    ``groundingMetadata``, ``urlContextMetadata``, ``logprobsResult``) are noted, once each
    (fidelity 43 F04, F09); ``avgLogprobs``, one number on every answer of some models, is
    not.
Rule 6 (safety): ``safetyRatings`` are `FilterVerdict` events by `FilterVerdict`'s repeat rule
    (a verdict that repeats the last quiet one is only counted); ``promptFeedback`` is a verdict
    on the prompt, and its ``blockReason`` (a prompt blocked before any candidate) is also the
    finish: ``Finished(content_filter, raw=BLOCKREASON)``. A block is what the server decided,
    not a failure of the exchange: the stream is complete, its answer not `usable`, and an
    OpenAI client through the gateway sees ``content_filter``, as Azure's clients do.
Rule 7 (usage): ``usageMetadata`` is cumulative and repeated on every chunk: the last one
    counts, normalised (`svir_proto.gemini._wire`). It is a `Usage` event when it is news:
    with the finish, when a later chunk changes it, and at the end if it never went out.
Rule 8 (errors): an ``{"error": {...}}`` chunk is `StreamFailed` (`failure_from_error`).
Rule 9 (the end): there is no end marker. The stream is *done* when its body ends cleanly at
    an event boundary after a finish or an error, with no streamed call left open: the server
    ended it where it meant to. ``StreamEnded.done`` and `Completion.done` mean exactly that
    for this dialect. It is *complete* when done after a finish, with no error and no
    protocol error; the tool calls are then checked and emitted, then `StreamEnded`. A body
    that ends inside an event, inside a streamed call (its arguments never whole: a client of
    the gateway was told a complete answer with the call empty, attack 28), or without a
    finish or an error, is a cut (``done`` false).

Rule 10 (the array form): a body whose first byte but blanks is ``[`` is Gemini's stream
    without ``alt=sse``, one JSON array of the same chunks, read by
    `svir_proto.gemini._array.ElementFramer` (its grammar checked, each element bounded by
    ``max_event_size``); each element is read as an SSE event's data is (one that repeats
    the learned envelope where the framer holds it, `GeminiStreamDecoder._read_held`), and
    the body is done (Rule 9) only if it ended after the array's ``]``. Anything else is read
    as SSE.

A payload that is not a JSON object is a `PeerProtocolError` with its byte offset. No I/O.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Collection, Sequence
from typing import Any, Final

from .. import _weights as weights
from .._dialect import DEEP, DEFAULT_MAX_RESULT_SIZE, DialectDecoder
from .._jsonbytes import LONG_HOLE
from .._pull import PullDecoder
from ..errors import Failure, FailureKind, FilterResult, PeerProtocolError
from ..events import (
    Completion,
    Event,
    FilterVerdict,
    Finished,
    FinishReason,
    ReasoningDelta,
    ReasoningSignature,
    StreamFailed,
    StreamStarted,
    ToolCall,
    ToolCallDelta,
    Usage,
    text_delta,
)
from ..openai._toolcalls import (
    DEFAULT_MAX_TOOL_CALLS,
    ToolCallAssembler,
    ToolCallError,
    call_notes,
)
from ..sse import DEFAULT_MAX_EVENT_SIZE, Errors
from . import _safety
from ._array import ElementFramer
from ._envelope import BUDGET, USAGE, Envelope, string_text
from ._partial import PartialCall
from ._wire import CARRIER, FINISH, usage_in
from .status import failure_from_error

__all__ = ["GeminiStreamDecoder"]

_PART_KEYS: Final = frozenset({"text", "thought", "thoughtSignature", "functionCall"})
_UNCARRIED: Final = {
    "citationMetadata": "the sources it recites",
    "groundingMetadata": "the search results the answer rests on",
    "urlContextMetadata": "the URLs it read",
    "logprobsResult": "the tokens' log probabilities",
}
"""A candidate's metadata that no event carries, noted (Rule 5), with what it holds."""
_UNCARRIED_KEYS: Final = frozenset(_UNCARRIED)
_ABSENT: Final = object()
_REACH: Final = 8192
"""How far past a short chunk's length `GeminiStreamDecoder._read_held` looks for the end of an
element's hole in the array's buffer: an element that begins as the envelope does but does not
go on as it does costs a search of at most this, not one to the end of the buffer, however
many such elements a read holds."""
_RFC3339: Final = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(?:\.\d{1,9})?(?:([Zz])|([+-])(\d\d):(\d\d))"
)


_Pending = dict[str, Any] | bytes | re.Match[bytes] | None
"""The usage the hot loop read last, not parsed yet (`GeminiStreamDecoder._settle`)."""
_new: Final = object.__new__
_set_reasoning: Final = ReasoningDelta.__dict__["text"].__set__
_set_carrier: Final = ReasoningDelta.__dict__["carrier"].__set__


def thought_delta(text: str) -> ReasoningDelta:
    """``ReasoningDelta(text=text, carrier="thought")``, built for the hot path as
    `svir_proto.events.text_delta` builds its event (the same object, at half the cost)."""
    event: ReasoningDelta = _new(ReasoningDelta)
    _set_reasoning(event, text)
    _set_carrier(event, CARRIER)
    return event


def _created(value: object) -> int | None:
    """Vertex AI's ``createTime`` (RFC 3339) as seconds since the epoch."""
    if not isinstance(value, str):
        return None
    m = _RFC3339.fullmatch(value)
    if m is None:
        return None
    y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
    try:
        when = datetime.datetime(y, mo, d, h, mi, s, tzinfo=datetime.timezone.utc)
    except ValueError:
        return None
    if m.group(8):
        shift = datetime.timedelta(hours=int(m.group(9)), minutes=int(m.group(10)))
        when = when - shift if m.group(8) == "+" else when + shift
    seconds = int(when.timestamp())
    return seconds if seconds > 0 else None


class GeminiStreamDecoder(DialectDecoder):
    """Decode a ``streamGenerateContent`` response body (the bytes after the head): SSE
    (``alt=sse``), or one JSON array (Rule 10).

    Args:
        declared_tools: the names of the functions the request declared; a call of any other
            is flagged (``ToolCall.declared`` is ``False`` and a problem is noted). ``None``:
            not checked.
        max_event_size: bytes one SSE event may take (see `SSEDecoder`), or one element of
            the array form.
        max_tool_calls: calls one response may make.
        max_result_size: characters the result may accumulate.
        keep_text: keep the text and the thoughts in ``result`` (``False``: the deltas are
            still events, but neither kept, so ``result.text``, ``result.reasoning`` and the
            text of each of ``result.reasoning_blocks`` are empty, nor counted against
            ``max_result_size``, which still bounds the signatures, the calls and their
            arguments: a relay that passes the deltas on holds no copy of the answer).
        errors: invalid UTF-8 and lone surrogates: ``"strict"`` (a `PeerProtocolError` with the
            offset) or ``"replace"`` (U+FFFD), whatever the JSON parser.

    Events come with the pull API (``receive_data``/``next_event``, ``feed``/``close``); the
    whole picture is ``result``, at any time. The module docstring gives the rules.
    """

    TEXTS = frozenset({"text"})
    """Where a part's text and thought are (`_halves`)."""
    RUNS = frozenset({"parts"})
    """``parts`` is a run: a pair may be cut between two parts (attack 41 F6)."""

    def __init__(
        self,
        *,
        declared_tools: Collection[str] | None = None,
        max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
        max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS,
        max_result_size: int = DEFAULT_MAX_RESULT_SIZE,
        keep_text: bool = True,
        errors: Errors = "strict",
    ) -> None:
        super().__init__(
            max_event_size=max_event_size,
            max_result_size=max_result_size,
            keep_text=keep_text,
            errors=errors,
        )
        self._declared = None if declared_tools is None else frozenset(declared_tools)
        self._calls = ToolCallAssembler(max_tool_calls=max_tool_calls)
        self._streamed: PartialCall | None = None  # a call whose arguments are streaming
        self._streamed_id = ""
        self._rid: object = None  # the responseId of the last chunk, as it came
        self._started = False
        self._array: bool | None = None  # the body is one JSON array (Rule 10), once known
        self._elements: ElementFramer | None = None  # its elements, then
        self._blanks = 0  # bytes of blanks before the body's first other byte
        self._text = self._kept()  # without keep_text, nothing: `DialectDecoder._kept`
        self._reasoning = self._kept()
        self._finish: Finished | None = None
        self._by_prompt = False  # the finish is the prompt's blockReason
        self._usage_raw: dict[str, Any] | None = None
        self._usage_sent: dict[str, Any] | None = None
        self._usage: Usage | None = None  # built from _usage_raw when asked for
        self._pending: _Pending = None  # the hot loop's usage
        self._envelope: Envelope | None = None  # the chunks the hot loop reads (`_envelope`)
        self._budget = BUDGET
        self._verdicts: list[FilterVerdict] = []
        self._quiet: object = None  # the ratings of the last verdict, if it found nothing
        self._quiet_verdict: FilterVerdict | None = None  # that verdict
        self._repeats = 0
        self._failure: Failure | None = None
        self._tool_calls: tuple[ToolCall, ...] = ()
        self._done = False

    # -- the result ------------------------------------------------------------------------

    @property
    def result(self) -> Completion:
        """Everything the stream has said so far; see `Completion` and Rule 9."""
        finish = self._finish
        return Completion(
            text=self._joined(self._text),
            reasoning=self._joined(self._reasoning),
            reasoning_carrier=CARRIER if self._reasoning else None,
            reasoning_blocks=tuple(self._blocks),
            tool_calls=self._tool_calls,
            pending_tool_calls=() if self._tool_calls else self._calls.pending(),
            finish_reason=None if finish is None else finish.reason,
            finish_raw=None if finish is None else finish.raw,
            usage=self._usage_now(),
            filter_verdicts=tuple(self._verdicts),
            filter_repeats=self._repeats,
            error=self._failure,
            done=self._done,
            closed=self._closed,
            cut=self._cut,
            filtered=any(v.blocks for v in self._verdicts)
            or (finish is not None and finish.reason is FinishReason.CONTENT_FILTER),
            problems=tuple(self._problems),
            complete=self._complete(),
        )

    def _complete(self) -> bool:
        return (
            self._done
            and self._finish is not None
            and self._failure is None
            and self._streamed is None
            and self._deferred is None
        )

    def _usage_now(self) -> Usage | None:
        if self._pending is not None:
            self._settle()
        if self._usage is None and self._usage_raw is not None:
            self._usage = usage_in(self._usage_raw)
        return self._usage

    def _settle(self) -> None:
        """The usage the hot loop read last is the stream's (as bytes: the envelope's)."""
        pending = self._pending
        self._pending = None
        if isinstance(pending, dict):
            self._usage_raw = pending
        elif isinstance(pending, bytes):
            usage = self._loads(pending)
            assert isinstance(usage, dict)
            self._usage_raw = usage
        else:
            assert pending is not None  # called when there is one
            usage = self._loads(pending.group(USAGE))  # the envelope's pattern: a JSON object
            assert isinstance(usage, dict)
            self._usage_raw = usage
        self._usage = None

    # -- one SSE event -----------------------------------------------------------------------

    @property
    def pending(self) -> int:
        elements = self._elements
        return self._framer.pending if elements is None else elements.pending

    def feed(self, data: bytes | bytearray | memoryview) -> list[Event]:
        if self._array is False:  # (SSE: nearly every read)
            return DialectDecoder.feed(self, data)
        if self._array is None and data and not self._eof:
            data = self._begins(data)
            if not data:
                return []  # (blanks only: nothing to read yet)
        if self._array:
            return PullDecoder.feed(self, data)
        return DialectDecoder.feed(self, data)

    def _receive(self, data: bytes) -> None:
        if self._array is None and data:  # `receive_data`'s way
            data = self._begins(data)
            if not data:
                return
        if self._elements is not None:
            self._elements.receive(data)
        else:
            DialectDecoder._receive(self, data)

    def _begins(self, data: bytes | bytearray | memoryview) -> bytes:
        """Rule 10: whether the body is SSE or one JSON array, once its first byte but JSON's
        blanks comes; what of ``data`` is to be read (``b""`` until then). The blanks before
        it are counted, not read, however the reads cut them (review 65: they were read when
        they came with that byte, and Python's other blanks were skipped too): before SSE,
        line ends are empty lines, which say nothing, and a space or a tab before the first
        line is taken for nothing too (the SSE standard would read it as the beginning of a
        field's name, which no server sends)."""
        data = bytes(data)
        rest = data.lstrip(b" \t\r\n")
        self._blanks += len(data) - len(rest)
        if not rest:
            return b""
        self._array = rest[0] == 0x5B  # "["
        if self._array:
            size = self._framer.max_event_size
            self._elements = ElementFramer(max_element=size, offset=self._blanks)
        elif self._blanks:
            self._framer.skip(self._blanks)
        return rest

    def _fill(self) -> None:
        elements = self._elements
        if elements is None:
            DialectDecoder._fill(self)
            return
        if self._closed:  # (nothing is read after the body's end)
            return
        try:
            elements.read(self._element, self._read_held)
            if elements.ended:
                self._closed = True
                self._cut = not elements.whole
                self._on_body_end()
        except PeerProtocolError as exc:  # delivered after what came before it
            self._deferred = exc

    def _element(self, payload: bytes, at: int, maybe: bool) -> bool:
        """Rule 10: one element of the array, read as an SSE event's data is (the hot loop's
        way), if it is one whole JSON object; one that ``maybe`` is not (`ElementFramer`'s
        tries) and is not, read nothing of, is ``False``."""
        try:
            self._on_batch(at - 6, (payload,), 0, maybe)
        except _NotWhole:
            return False
        return True

    def _read_held(self, buf: bytearray, start: int, end: int, at: int) -> int:
        """Rule 10: the element at ``start`` of the framer's buffer, read at once when it
        repeats the learned envelope before ``end`` (the hot loop's way, on the buffer, which
        spares the framer its search for the element's end and a copy): where it ends; else
        -1, having read nothing."""
        envelope = self._envelope
        if envelope is None:
            return -1
        head, opened, _, long_at, key, skip, _, kind, rated = envelope.unpacked
        if not buf.startswith(head, start):
            return -1
        short, closing = envelope.leading
        opened += start
        end = min(end, start + long_at + _REACH)
        closed = buf.find(key, opened, end) - skip  # (where a hole ends, if it does: Rule 2)
        if closed < opened:
            return -1
        try:
            if closed - opened < LONG_HOLE:  # one pattern, over as much as a short chunk takes
                if (m := short(buf, opened, min(end, start + long_at))) is None:
                    return -1
                span = m[1]
                hole = span.decode() if 0x5C not in span else string_text(buf, opened, m.end(1))
            elif (m := closing(buf, closed, end)) is None:
                return -1
            else:
                hole = string_text(buf, opened, closed)
        except UnicodeDecodeError:  # the general way applies the policy
            return -1
        if hole is None:
            return -1
        self._hit(hole, kind, rated, at)
        self._pending = m[USAGE]  # (bytes: the buffer changes, and a match reads it then)
        envelope.hits += 1
        return m.end()

    def _hit(self, hole: str, kind: str, rated: bool, at: int) -> None:
        """A chunk at ``at`` that repeats the envelope, ``hole`` its hole's text, read (the hot
        loop does this inline, a method call being 4 % of an SSE text chunk's time; a test
        holds the two to the same events, result and errors)."""
        if kind == "piece":
            call = self._streamed
            assert call is not None  # only `_chunk` closes it, and forgets the envelope
            path = call._raw
            assert type(path) is str  # the envelope's, which it was when learned
            call._pieces.append(hole)
            self._size += len(path) + len(hole)
            if self._size > self._max_result:
                self._grow(0, at)  # raises
        elif hole:
            self._size += len(hole) * self._weight
            if self._size > self._max_result:
                self._grow(0, at)  # raises
            if kind == "text":
                self._text.append(hole)
                self._queue.append(text_delta(hole))
            else:
                self._reasoning.append(hole)
                self._block.append(hole)
                self._queue.append(thought_delta(hole))
        if rated:
            self._repeats += 1

    def _on_event(self, sse_type: str | None, payload: bytes | bytearray, at: int) -> None:
        if sse_type is not None and sse_type != "message":
            self._note(f"ignored SSE events of type {sse_type!r}")
            return
        self._chunk(payload, at)

    def _on_batch(
        self, at: int, payloads: Sequence[bytes | bytearray], gap: int, maybe: bool = False
    ) -> None:
        """The hot loop, over a run of simple events: a chunk that is only one text or thought
        part of candidate 0 (nearly every chunk of an answer), or one more piece of a streamed
        string argument, is read here: without a parser when it repeats the envelope learned
        from the last such chunk (`svir_proto.gemini._envelope`), else its levels unpacked at
        once (a chunk of another shape fails to unpack, or fails a check after); any other
        goes `_chunk`. All ways read a chunk alike (property tests hold them to it). With
        ``maybe``, one payload that may not be whole (Rule 10): `_NotWhole` if it does not
        parse, before anything is read of it."""
        loads = self._loads
        deep = self._deep
        queue = self._queue
        texts = self._text
        weight = self._weight  # 0 without keep_text: the text counts for nothing
        rid = self._rid
        fast = self._finish is None and self._started
        envelope = self._envelope
        if envelope is not None:
            head, opened, whole, long_at, key, skip, rest, kind, rated = envelope.unpacked
        at += 6  # where each payload begins
        for payload in payloads:
            hole = None
            if envelope is not None and payload.startswith(head):  # `Envelope.read`, inline
                try:
                    if len(payload) < long_at:  # one pattern: the hole's body, then the rest
                        if (m := whole(payload, opened)) is not None:
                            span = m[1]  # its common case inline: nothing escaped
                            hole = (
                                span.decode()
                                if 0x5C not in span
                                else string_text(payload, opened, m.end(1))
                            )
                    elif (closed := payload.rfind(key) - skip) >= opened and (
                        m := rest(payload, closed)
                    ) is not None:  # a long hole: its end found from the end
                        hole = string_text(payload, opened, closed)
                except UnicodeDecodeError:  # the general way applies the policy
                    hole = None
                if hole is not None:  # `_hit`, inline
                    if kind == "piece":
                        call = self._streamed
                        assert call is not None  # only `_chunk` closes it, and forgets this
                        path = call._raw
                        assert type(path) is str  # the envelope's, which it was when learned
                        call._pieces.append(hole)
                        self._size += len(path) + len(hole)
                        if self._size > self._max_result:
                            self._grow(0, at)  # raises
                    elif hole:
                        self._size += len(hole) * weight
                        if self._size > self._max_result:
                            self._grow(0, at)  # raises
                        if kind == "text":
                            texts.append(hole)
                            queue.append(text_delta(hole))
                        else:
                            self._reasoning.append(hole)
                            self._block.append(hole)
                            queue.append(thought_delta(hole))
                    if rated:
                        self._repeats += 1
                    envelope.hits += 1
                    self._pending = m
                    at += len(payload) + gap
                    continue
            try:
                obj = loads(payload) if len(payload) <= deep else self._long(payload, at, "a chunk")
            except (ValueError, RecursionError, PeerProtocolError) as exc:
                if maybe:
                    raise _NotWhole from None  # (or read the general way once known whole)
                if isinstance(exc, PeerProtocolError):
                    raise
                obj = None
            if (
                fast
                and type(obj) is dict
                and len(obj) == 4  # candidates, usageMetadata, modelVersion, responseId
                and obj.get("responseId", _ABSENT) == rid
                and "modelVersion" in obj
            ):
                try:
                    (c,) = obj["candidates"]
                    content = c["content"]
                    (part,) = content["parts"]
                    chunk_usage = obj["usageMetadata"]
                except (KeyError, TypeError, ValueError):
                    part = None
                if (
                    type(part) is dict
                    and type(c) is dict
                    and (
                        len(c) == 2  # content, index
                        or (  # repeated quiet ratings (gemini-1.5's on every chunk): counted
                            len(c) == 3
                            and c.get("safetyRatings") == self._quiet
                            and self._quiet is not None
                        )
                    )
                    and not c.get("index", 1)
                    and type(content) is dict
                    and len(content) == 2  # parts, role
                    and "role" in content
                    and type(chunk_usage) is dict
                    and len(payload) <= DEEP
                ):
                    n = len(part)
                    text = part.get("text")
                    kind = ""
                    if type(text) is str and (n == 1 or (n == 2 and part.get("thought") is True)):
                        kind = "text" if n == 1 else "thought"
                        if text:
                            self._size += len(text) * weight
                            if self._size > self._max_result:
                                self._grow(0, at)  # raises
                            if n == 1:
                                texts.append(text)
                                queue.append(text_delta(text))
                            else:
                                self._reasoning.append(text)
                                self._block.append(text)
                                queue.append(thought_delta(text))
                    elif (  # one more piece of the string a streamed call's argument is
                        n == 1
                        and (call := self._streamed) is not None
                        and type(fc := part.get("functionCall")) is dict
                        and len(fc) == 2
                        and fc.get("willContinue") is True
                        and type(pieces := fc.get("partialArgs")) is list
                        and len(pieces) == 1
                        and type(arg := pieces[0]) is dict
                        and len(arg) == 3
                        and arg.get("willContinue") is True
                        and type(piece := arg.get("stringValue")) is str
                        and type(raw := arg.get("jsonPath")) is str
                        and raw == call._raw
                    ):
                        kind = "piece"
                        call._pieces.append(piece)
                        self._size += len(raw) + len(piece)
                        if self._size > self._max_result:
                            self._grow(0, at)  # raises
                    if kind:
                        if len(c) == 3:
                            self._repeats += 1
                        self._pending = chunk_usage
                        envelope = self._learn(payload, kind, len(c) == 3)
                        if envelope is not None:
                            head, opened, whole, long_at, key, skip, rest, kind, rated = (
                                envelope.unpacked
                            )
                        at += len(payload) + gap
                        continue
            self._chunk(payload, at, obj)
            rid = self._rid
            fast = self._finish is None and self._started
            envelope = None  # `_chunk` forgot it
            at += len(payload) + gap

    def _learn(self, payload: bytes | bytearray, kind: str, rated: bool) -> Envelope | None:
        """The envelope of a chunk the hot loop has just read (Rule 4 of `_envelope`)."""
        previous = self._envelope
        if previous is not None:
            self._budget = BUDGET if previous.hits else self._budget - 1
        if self._budget <= 0:
            envelope = None
        else:
            envelope = Envelope.learn(payload, kind)
            if envelope is None:
                self._budget -= 1  # a try that could not learn is a try (Rule 4 of `_envelope`)
        if envelope is not None and rated:
            envelope.rate()
        self._envelope = envelope
        return envelope

    def _chunk(self, payload: bytes | bytearray, at: int, obj: object = None) -> None:
        """One ``GenerateContentResponse`` (``obj``: as the fast parser read it, if it did)."""
        self._envelope = None  # what it changes, the envelope's reading took as settled
        if self._pending is not None:
            self._settle()
        if obj is None:  # (the hot loop's reading is checked: `_on_batch`)
            if len(payload) > self._deep:  # orjson nests deeper, and bounds nothing
                obj = self._long(payload, at, "a chunk")
            else:
                try:
                    obj = self._loads(payload)
                except (ValueError, RecursionError):
                    obj = self._canonical(payload, at, "a chunk")
        if type(obj) is not dict:
            raise PeerProtocolError(
                f"a chunk must be a JSON object, not {type(obj).__name__}", offset=at
            )
        rid = obj.get("responseId")
        if rid != self._rid or not self._started:  # Rule 1
            self._identity(obj, rid)
        feedback = obj.get("promptFeedback")
        if feedback is not None:
            self._feedback(feedback, at)
        candidates = obj.get("candidates")
        if candidates is not None:
            if type(candidates) is not list:
                raise PeerProtocolError("'candidates' must be a list", offset=at)
            for candidate in self._entries(candidates, "candidates", at):
                self._candidate(candidate, at)
        usage = obj.get("usageMetadata")
        if usage is not None:
            if type(usage) is not dict:
                raise PeerProtocolError("'usageMetadata' must be an object", offset=at)
            if usage != self._usage_raw:
                self._usage_raw = usage
                self._usage = None
        if self._finish is not None and self._usage_raw is not self._usage_sent:  # Rule 7
            self._send_usage()
        error = obj.get("error")
        if error is not None:  # Rule 8
            self._fail(failure_from_error(obj, status=None, default=FailureKind.SERVER_ERROR))

    def _identity(self, obj: dict[str, Any], rid: object) -> None:
        model = obj.get("modelVersion")
        if not self._started:
            if rid is None and model is None:
                return
            self._started = True
            self._queue.append(
                StreamStarted(
                    response_id=rid if isinstance(rid, str) else "",
                    model=model if isinstance(model, str) else "",
                    created=_created(obj.get("createTime")),
                )
            )
        elif rid is not None and self._rid is not None:
            self._note(f"responseId changed from {self._rid!r} to {rid!r}")
        if rid is not None:
            self._rid = rid

    def _start(self) -> None:
        """Content before any identity (Rule 1)."""
        self._started = True
        self._queue.append(StreamStarted(response_id="", model=""))

    # -- Rule 2 and 3 --------------------------------------------------------------------------

    def _candidate(self, candidate: object, at: int) -> None:
        if type(candidate) is not dict:
            raise PeerProtocolError("a candidate must be an object", offset=at)
        index = candidate.get("index")
        if index:  # absent, null and 0 are candidate 0 (proto3 leaves 0 out)
            if type(index) is not int:
                raise PeerProtocolError(f"candidate index {index!r} is not an integer", offset=at)
            self._note("candidates other than index 0 were ignored (candidateCount > 1)")
            return
        content = candidate.get("content")
        if content is not None:
            if type(content) is not dict:
                raise PeerProtocolError("a candidate's content must be an object", offset=at)
            parts = content.get("parts")
            if parts is not None:
                if type(parts) is not list:
                    raise PeerProtocolError("content.parts must be a list", offset=at)
                if parts and not self._started:
                    self._start()
                for part in (
                    self._entries(_merged(parts), "content.parts", at) if len(parts) > 1 else parts
                ):
                    self._part(part, at)
        ratings = candidate.get("safetyRatings")
        if ratings is not None:
            self._completion_verdict(ratings)
        if not _UNCARRIED_KEYS.isdisjoint(candidate):  # (one test for the usual chunk)
            for key in sorted(_UNCARRIED_KEYS.intersection(candidate)):
                if candidate[key]:
                    self._note(f"{key} is not carried ({_UNCARRIED[key]})")
        finish = candidate.get("finishReason")
        if finish is not None:
            if type(finish) is not str:
                raise PeerProtocolError(f"finishReason must be a string, not {finish!r}", offset=at)
            reason = FINISH.get(finish, FinishReason.OTHER)
            if reason is FinishReason.STOP and self._calls.calls:
                reason = FinishReason.TOOL_CALLS
            self._on_finish(reason, finish)
            message = candidate.get("finishMessage")
            if isinstance(message, str) and message:
                self._note(f"finishMessage: {message[:200]}")

    def _part(self, part: object, at: int) -> None:
        if type(part) is not dict:
            raise PeerProtocolError("a part must be an object", offset=at)
        text = part.get("text")
        if text is not None:
            if type(text) is not str:
                raise PeerProtocolError("a part's text must be a string", offset=at)
            if text:
                self._size += len(text) * self._weight
                if self._size > self._max_result:
                    self._grow(0, at)  # raises
                if part.get("thought") is True:
                    self._reasoning.append(text)
                    self._block.append(text)
                    self._queue.append(ReasoningDelta(text=text, carrier=CARRIER))
                else:
                    self._text.append(text)
                    self._queue.append(text_delta(text))
            signature = part.get("thoughtSignature")
            if signature is not None:
                self._signed(signature, None, at)
            return
        call = part.get("functionCall")
        if call is not None:
            self._function_call(call, part.get("thoughtSignature"), at)
            return
        for key in part:
            if key not in _PART_KEYS:
                self._note(f"ignored parts of kind {key!r}: the vocabulary has no event for them")
        signature = part.get("thoughtSignature")
        if signature is not None:
            self._signed(signature, None, at)

    def _signed(self, signature: object, item_id: str | None, at: int) -> None:
        if type(signature) is not str:
            raise PeerProtocolError("thoughtSignature must be a string", offset=at)
        if signature:
            self._sign(
                ReasoningSignature(signature=signature, carrier=CARRIER, item_id=item_id), at
            )

    # -- Rule 4 --------------------------------------------------------------------------------

    def _function_call(self, call: object, signature: object, at: int) -> None:
        if type(call) is not dict:
            raise PeerProtocolError("functionCall must be an object", offset=at)
        name = call.get("name")
        if name is not None and type(name) is not str:
            raise PeerProtocolError(f"functionCall.name must be a string, not {name!r}", offset=at)
        call_id = call.get("id")
        if call_id is not None and type(call_id) is not str:
            raise PeerProtocolError("functionCall.id must be a string", offset=at)
        partial = call.get("partialArgs")
        if partial is not None and type(partial) is not list:
            raise PeerProtocolError("functionCall.partialArgs must be a list", offset=at)
        more = call.get("willContinue") is True
        streamed = self._streamed
        if streamed is None and (partial is not None or more):  # a streamed call opens
            n = len(self._calls.calls)
            call_id = call_id or self._call_id(n)
            if signature is not None:  # before the call, as a whole call's (Rule 3)
                self._signed(signature, call_id, at)
                signature = None
            self._tool_delta(n, call_id, name, "", at)
            streamed = self._streamed = PartialCall(n)
            self._streamed_id = call_id
        if streamed is not None:  # it goes on (or has just opened)
            for arg in partial or ():
                self._grow(streamed.add(arg, at), at)
            if not more:
                self._streamed = None
                arguments = streamed.arguments()
                self._tool_delta(streamed.index, None, None, arguments, at)
            if signature is not None:
                self._signed(signature, self._streamed_id, at)
            return
        args = call.get("args")
        if args is None:
            arguments = "{}"
        elif type(args) is dict:
            arguments = json.dumps(args, ensure_ascii=False, separators=(",", ":"))
        else:
            raise PeerProtocolError(f"functionCall.args must be an object, not {args!r}", offset=at)
        n = len(self._calls.calls)
        call_id = call_id or self._call_id(n)
        if signature is not None:  # before the call: the reasoning it closes came before it
            self._signed(signature, call_id, at)
        self._tool_delta(n, call_id, name, arguments, at)

    def _call_id(self, n: int) -> str:
        rid = self._rid
        return f"{rid if isinstance(rid, str) and rid else 'call'}-{n}"

    def _tool_delta(
        self, index: int, call_id: str | None, name: str | None, arguments: str, at: int
    ) -> None:
        delta: ToolCallDelta = self._calls.apply(index, call_id, name, arguments, at)
        self._grow(len(delta.arguments) + len(delta.name or "") + len(delta.id or ""), at)
        self._queue.append(delta)

    # -- Rules 5 to 8 --------------------------------------------------------------------------

    def _on_finish(self, reason: FinishReason, raw: str, *, prompt: bool = False) -> None:
        """The answer's finish, once (``prompt``: the prompt's ``blockReason``). The prompt's
        block and a candidate's ``finishReason`` that means the same, in either order, are
        one finish said twice, nothing more (attack 74 saw it said to be a second one)."""
        first = self._finish
        if first is None:
            self._finish = Finished(reason=reason, raw=raw)
            self._by_prompt = prompt
            self._queue.append(self._finish)
        elif prompt is not self._by_prompt:  # one of each
            if reason is not first.reason:
                block, finish = (raw, first.raw) if prompt else (first.raw, raw)
                self._note(f"the prompt's blockReason {block!r} and a finishReason {finish!r}")
        else:
            self._note(f"a second finishReason {raw!r} after {first.raw!r}")

    def _send_usage(self) -> None:
        self._usage_sent = self._usage_raw
        usage = self._usage_now()
        assert usage is not None  # called when there is usage news
        self._queue.append(usage)

    def _feedback(self, feedback: object, at: int) -> None:
        if type(feedback) is not dict:
            raise PeerProtocolError("'promptFeedback' must be an object", offset=at)
        block = feedback.get("blockReason")
        if block is not None and type(block) is not str:
            raise PeerProtocolError(f"blockReason must be a string, not {block!r}", offset=at)
        found = _safety.results(feedback.get("safetyRatings"))
        if found or block is not None:
            if not self._started:
                self._start()
            self._verdict(_safety.verdict("prompt", found, block is not None))
        if block is not None:
            self._on_finish(FinishReason.CONTENT_FILTER, block, prompt=True)

    def _completion_verdict(self, ratings: object) -> None:
        """Rule 6: the repeat rule of `FilterVerdict`."""
        if ratings == self._quiet and self._quiet is not None:
            self._quiet = ratings  # the same object next time, if the parser shares it
            self._repeats += 1
            return
        found: tuple[FilterResult, ...] = _safety.results(ratings)
        if found:
            verdict = _safety.verdict("completion", found, False)
            if not verdict.detected and verdict == self._quiet_verdict:
                self._quiet = ratings  # Vertex's scores changed, the verdict did not: a repeat
                self._repeats += 1
                return
            self._verdict(verdict)
            self._quiet = None if verdict.detected else ratings
            self._quiet_verdict = None if verdict.detected else verdict

    def _verdict(self, verdict: FilterVerdict) -> None:
        self._grow(weights.verdict(verdict), None)
        self._verdicts.append(verdict)
        self._queue.append(verdict)

    def _fail(self, failure: Failure) -> None:
        if self._failure is None:
            self._failure = failure
        self._queue.append(StreamFailed(error=failure))

    # -- Rule 9 --------------------------------------------------------------------------------

    def _on_body_end(self) -> None:
        if self._pending is not None:
            self._settle()
        finish = self._finish
        self._done = (
            not self._cut
            and self._streamed is None
            and (finish is not None or self._failure is not None)
        )
        if self._usage_raw is not None and self._usage_raw is not self._usage_sent:
            self._send_usage()
        if self._cut:
            self._note(
                "the body ended before the array's end"
                if self._array
                else "the body ended inside an event"
            )
        elif finish is None and self._failure is None:
            self._note("the body ended without a finishReason")
        if self._streamed is not None:
            self._note("the body ended inside a streamed function call")
        if self._complete():
            try:
                self._tool_calls = self._calls.finish(self._declared)
            except ToolCallError as exc:  # delivered after what came before it
                self._deferred = exc
                return
            self._queue.extend(self._tool_calls)
            assert finish is not None
            for note in call_notes(self._tool_calls, finish, "finishReason", kind="function calls"):
                self._note(note)
        self._terminate(done=self._done)


class _NotWhole(Exception):
    """An array element's try (Rule 10) was not one whole JSON object."""


def _merged(parts: list[object]) -> list[object]:
    """``parts`` with each run of plain text parts of one kind (`_plain`) as one part, their
    texts joined: a chunk of many is one delta, not one a part (attack 39 F2: 600,000 parts of
    one character in one event, a delta each, stalled the gateway's other clients 2 s and made
    its answer 9-16 times the upstream's)."""
    out: list[object] = []
    run: list[str] = []
    thought = False
    for part in parts:
        plain = _plain(part)
        if plain is not None and run and plain[1] == thought:
            run.append(plain[0])
            continue
        if len(run) > 1:
            out[-1] = _joined_part(run, thought)
        run, thought = ([plain[0]], plain[1]) if plain is not None else ([], False)
        out.append(part)
    if len(run) > 1:
        out[-1] = _joined_part(run, thought)
    return out


def _plain(part: object) -> tuple[str, bool] | None:
    """A text part that `_part` reads as its text alone (a thought or not): its text, and
    whether it is a thought. What `_part` does not read of a text part (``thought: false``,
    an empty ``thoughtSignature``, a key it does not know) does not break a run (attack 41
    F1: a ``"thought": false`` on each part did); a signature does, as does a value `_part`
    refuses."""
    if type(part) is not dict or type(text := part.get("text")) is not str:
        return None
    if len(part) > 1:
        signature = part.get("thoughtSignature")
        if signature is not None and signature != "":
            return None  # a signature event follows the part: its place is kept
        return text, part.get("thought") is True
    return text, False


def _joined_part(texts: list[str], thought: bool) -> dict[str, object]:
    joined = "".join(texts)
    return {"text": joined, "thought": True} if thought else {"text": joined}
