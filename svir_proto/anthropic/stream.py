"""The Anthropic Messages stream (``POST /v1/messages`` with ``"stream": true``): response bytes
to the event vocabulary and a `Completion`.

Anthropic's API reference, "Streaming Messages", is the requirement: each SSE event is
``event: NAME`` and ``data: {"type": NAME, ...}``; the decoder reads the JSON's own ``type``.

Rule 1 (the message): ``message_start`` gives the identity (``message.id``, ``message.model``)
    as `StreamStarted`, and its ``usage`` the first counts (Rule 5); its own ``content`` (a
    proxy's prefill) is noted, not carried. Content before it is read all the same (a problem
    is noted); a second ``message_start`` is a `PeerProtocolError`.
Rule 2 (blocks): ``content_block_start`` opens block ``index`` (each index greater than every
    earlier one), ``content_block_delta`` adds to an open block, ``content_block_stop`` closes
    it; a delta or stop for a block that is not open, or a delta of the wrong kind for its
    block (``text_delta`` in a ``tool_use`` block), is a `PeerProtocolError`. At most
    `MAX_OPEN_BLOCKS` are open at once, and one ``text`` and one ``thinking`` block among them
    (text of two would interleave, in no order a client could put back).
Rule 3 (what blocks carry): ``text`` (``text_delta``) is `TextDelta`; ``thinking``
    (``thinking_delta``) is `ReasoningDelta` with carrier ``thinking``, and its
    ``signature_delta`` a `ReasoningSignature` that closes the signed block
    (`Completion.reasoning_blocks`); ``redacted_thinking`` is a redacted `ReasoningSignature`
    whose ``signature`` is the block's ``data``; ``tool_use`` is a tool call (the calls
    numbered 0, 1, ... in block order: `ToolCallDelta.index` is that number, not the block's
    index) whose ``input_json_delta`` pieces are its arguments, or, when no piece came, the
    ``input`` its start carried (``{}`` then gives ``"{}"``). Any other block type
    (``server_tool_use``, ``web_search_tool_result``, ...) is kept out of the text and the
    calls, its deltas skipped, and noted once in ``problems``; so are ``citations_delta`` and
    delta types this decoder does not know.
Rule 4 (the end of the message): ``message_delta`` gives ``delta.stop_reason`` as `Finished`
    (the first one counts; ``stop_sequence`` is kept in `stop_sequence`, and noted: no event
    carries it) and its ``usage``,
    which is cumulative and merged into what ``message_start`` said: a count the delta does
    not repeat (or gives as ``null``) keeps its earlier value, so no count is lost.
Rule 5 (usage): counted as `Usage` says: ``prompt_tokens`` is ``input_tokens`` plus
    ``cache_creation_input_tokens`` plus ``cache_read_input_tokens`` (Anthropic counts input
    without the cache), ``cached_tokens`` the cache reads, ``cache_creation_tokens`` the
    writes, ``reasoning_tokens`` ``output_tokens_details.thinking_tokens``, ``total_tokens``
    prompt plus completion (or what a svir encoder wrote under ``vendor:svir``). The counts
    are in ``result.usage`` from ``message_start`` on; a `Usage` event comes when they are
    final: with each ``message_delta`` that has ``usage``, or, if none had, at the end (before
    the tool calls, the error or `StreamEnded`), unless every count is 0: a placeholder, as
    gateways (ours included) write before the counts are known, never an event of its own.
Rule 6 (errors): an ``error`` event is `StreamFailed` with the kind of its ``error.type``
    (``overloaded_error``, ``rate_limit_error``, ``api_error``, ...); it ends the stream, as
    Anthropic ends it there: `StreamEnded(done=True)`, not complete.
Rule 7 (versioning): ``ping`` is counted (`pings`); an event type this decoder does not know
    is ignored and noted once in ``problems``, as the API's versioning policy asks of clients.
    An SSE ``event:`` name that differs from the JSON's ``type`` is noted, and the ``type``
    decides.
Rule 8 (completeness): ``message_stop`` ends the stream; the tool calls are checked and emitted
    whole (`ToolCall`, in call order), then `StreamEnded`. The stream is complete when
    ``message_stop`` came after a ``stop_reason``, with no error. Events after the end are
    counted (``ignored_after_done``), not read; a body that ends before it gives
    ``StreamEnded(complete=False, done=False)``, the calls kept as ``pending_tool_calls``, and
    so does a ``message_stop`` while a ``tool_use`` block is still open (its input never
    ended: a cut inside a call, as Gemini's decoder reads one, attack round 30).

A payload that is not a JSON object is a `PeerProtocolError` with its byte offset. This module
never does I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from functools import partial
from typing import Any, Final

from .. import _json
from .._dialect import DEFAULT_MAX_RESULT_SIZE, DialectDecoder
from .._jsonbytes import NOT_PLAIN, string_text
from .._pieces import JOIN, Pieces
from ..errors import Failure, FailureKind, PeerProtocolError
from ..events import (
    Completion,
    Event,
    Finished,
    FinishReason,
    ReasoningSignature,
    StreamFailed,
    StreamStarted,
    ToolCall,
    Usage,
    reasoning_delta,
    text_delta,
    tool_call_delta,
)
from ..openai._toolcalls import DEFAULT_MAX_TOOL_CALLS, ToolCallAssembler, call_notes
from ..sse import DEFAULT_MAX_EVENT_SIZE, Errors
from ._envelope import BUDGET, DELTA, Envelope, learn
from ._wire import STOP_REASONS
from .status import failure_from_error

__all__ = ["MAX_OPEN_BLOCKS", "MessagesStreamDecoder"]

MAX_OPEN_BLOCKS: Final = 64
"""Content blocks open at once (Rule 2). Anthropic opens one at a time; a peer that opens
blocks without closing them may hold at most this many (count what grows, not only bytes)."""

_TEXT: Final = 1
_TOOL: Final = 2
_THINKING: Final = 3
_OTHER: Final = 4
_KINDS: Final = {"text": _TEXT, "tool_use": _TOOL, "thinking": _THINKING}
_HOT: Final = {
    _TEXT: ("text_delta", "text"),
    _TOOL: ("input_json_delta", "partial_json"),
    _THINKING: ("thinking_delta", "thinking"),
}
"""A block's kind to the delta type of its pieces and the key that holds them (the hot path)."""
_DELTA_KIND: Final = {
    "text_delta": _TEXT,
    "input_json_delta": _TOOL,
    "thinking_delta": _THINKING,
    "signature_delta": _THINKING,
}
_USAGE_KEYS: Final = (
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "output_tokens",
)
SVIR_USAGE: Final = "vendor:svir"
"""The key under which a svir encoder writes what Anthropic's usage has no field for."""


class MessagesStreamDecoder(DialectDecoder):
    """Decode a streamed Messages API response body (the bytes after the head).

    Args:
        declared_tools: the names of the tools the request declared; a call of any other tool
            is flagged (``ToolCall.declared`` is ``False`` and a problem is noted). ``None``:
            not checked.
        max_event_size: bytes one SSE event may take.
        max_tool_calls: tool calls one response may make.
        max_result_size: characters of text, reasoning, signatures and arguments the result
            may accumulate.
        keep_text: keep the text and the thinking in ``result`` (``False``: the deltas are
            still events, but neither kept, so ``result.text``, ``result.reasoning`` and the
            text of each of ``result.reasoning_blocks`` are empty, nor counted against
            ``max_result_size``, which still bounds the signatures and the tool calls'
            arguments: a relay that passes the deltas on holds no copy of the answer).
        errors: invalid UTF-8 and lone surrogates: ``"strict"`` (a `PeerProtocolError` with the
            offset) or ``"replace"`` (U+FFFD), whatever the JSON parser.

    Attributes:
        message_id, model: from ``message_start`` (``None`` before it).
        stop_sequence: the stop sequence that ended the answer, when ``stop_reason`` is
            ``stop_sequence``.
        pings: ``ping`` events seen.

    Events come with the pull API (``receive_data``/``next_event``, ``feed``/``close``); the
    whole picture is ``result``, at any time.
    """

    TEXTS = frozenset({"text", "thinking", "partial_json"})
    """Where a delta's text, thinking and a tool's input are (`_halves`)."""

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
        self._open: dict[int, int] = {}  # block index -> kind, for the open blocks
        self._last = -1  # the greatest block index started
        self._tools: dict[int, int] = {}  # open tool_use block index -> call number
        self._start_input: dict[int, str] = {}  # call number -> its start's input, as JSON
        self._started = False
        self._text = self._kept()  # without keep_text, nothing: `DialectDecoder._kept`
        self._reasoning = self._kept()
        self._finish: Finished | None = None
        self._counts: dict[str, int] = {}
        self._thinking_tokens: int | None = None
        self._total: int | None = None
        self._usage: Usage | None = None
        self._usage_sent = False
        self._failure: Failure | None = None
        self._tool_calls: tuple[ToolCall, ...] = ()
        self._done = False
        self._ignored = 0
        self._envelope: Envelope | None = None  # the open block's (see _envelope)
        self._budget = BUDGET  # envelopes that may still fail to be learned in a row
        self.message_id: str | None = None
        self.model: str | None = None
        self.stop_sequence: str | None = None
        self.pings = 0

    # -- the result ----------------------------------------------------------------------------

    @property
    def result(self) -> Completion:
        """Everything the stream has said so far; see `Completion`."""
        finish = self._finish
        reasoning = self._joined(self._reasoning)
        return Completion(
            text=self._joined(self._text),
            reasoning=reasoning,
            reasoning_carrier="thinking" if reasoning else None,
            reasoning_blocks=tuple(self._blocks),
            tool_calls=self._tool_calls,
            pending_tool_calls=() if self._tool_calls else self._calls.pending(),
            finish_reason=None if finish is None else finish.reason,
            finish_raw=None if finish is None else finish.raw,
            usage=self._usage,
            error=self._failure,
            done=self._done,
            closed=self._closed,
            cut=self._cut,
            filtered=finish is not None and finish.reason is FinishReason.CONTENT_FILTER,
            ignored_after_done=self._ignored,
            problems=tuple(self._problems),
            complete=self._complete(),
        )

    def _complete(self) -> bool:
        return (
            self._done
            and self._finish is not None
            and self._failure is None
            and self._deferred is None
        )

    # -- one SSE event -----------------------------------------------------------------------

    def _on_event(self, sse_type: str | None, data: bytes | bytearray, at: int) -> None:
        if self._done:
            self._ignored += 1  # Rule 8, whatever the event
            return
        envelope = self._envelope
        if envelope is not None and (sse_type is None or sse_type == DELTA):
            try:
                piece = envelope.read(data)
            except UnicodeDecodeError:  # the general way applies the policy
                piece = None
            if piece is not None:  # a piece of the open block: _envelope Rule 2
                if piece:
                    self._carrier(envelope)(piece, at)
                return
        if len(data) > self._deep:  # orjson nests deeper, and bounds nothing
            obj = self._long(data, at, "an event's data")
        else:
            try:
                obj = self._loads(data)
            except (ValueError, RecursionError):
                obj = self._canonical(data, at, "an event's data")
        if type(obj) is not dict:
            raise PeerProtocolError("an event's data must be a JSON object", offset=at)
        etype = obj.get("type")
        if etype == "content_block_delta":  # the hot path: a piece of an open block, read here
            index = obj.get("index")
            delta = obj.get("delta")
            if type(delta) is dict and type(index) is int:
                kind = self._open.get(index)
                hot = _HOT.get(kind)  # type: ignore[arg-type]
                if hot is not None and delta.get("type") == hot[0]:
                    piece = delta.get(hot[1])
                    if type(piece) is str:
                        if piece:
                            if kind == _TEXT:
                                self._carry_text(piece, at)
                            elif kind == _TOOL:
                                number = self._tools[index]
                                self._carry_arguments(
                                    number, self._calls.calls[number].args, piece, at
                                )
                            else:
                                self._add_reasoning(piece, at)
                        if sse_type is not None and sse_type != etype:
                            self._mismatch(sse_type, etype)
                        if self._envelope is None and self._budget:
                            self._learn(data, obj, hot[1], index, kind)  # type: ignore[arg-type]
                        return
        elif type(etype) is not str:
            raise PeerProtocolError(f"an event's type must be a string, not {etype!r}", offset=at)
        if sse_type is not None and sse_type != etype:
            self._mismatch(sse_type, etype)
        handler = _HANDLERS.get(etype)
        if handler is None:  # Rule 7
            self._note(f"ignored events of unknown type {etype!r}")
            return
        handler(self, obj, at)

    def _mismatch(self, sse_type: str, etype: str) -> None:
        self._note(f"an SSE event named {sse_type!r} carried type {etype!r}")

    # Rule 1

    def _on_message_start(self, obj: dict[str, Any], at: int) -> None:
        message = _field(obj, "message", dict, at)
        if self._started:
            raise PeerProtocolError("a second message_start", offset=at)
        mid = message.get("id")
        model = message.get("model")
        self.message_id = mid if isinstance(mid, str) else ""
        self.model = model if isinstance(model, str) else ""
        self._started = True
        self._queue.append(StreamStarted(response_id=self.message_id, model=self.model))
        if message.get("content"):  # (a proxy's prefill: attack 43 F3)
            self._note("message_start's content (blocks before the stream's) is not carried")
        usage = message.get("usage")
        if usage is not None:
            self._on_usage(usage, at)  # an event once final: Rule 5

    def _begin(self) -> None:
        if not self._started:
            self._started = True
            self._note("content came before message_start")

    # Rules 2 and 3

    def _on_block_start(self, obj: dict[str, Any], at: int) -> None:
        self._begin()
        index = _field(obj, "index", int, at)
        block = _field(obj, "content_block", dict, at)
        btype = block.get("type")
        if type(btype) is not str:
            raise PeerProtocolError(
                f"content_block.type must be a string, not {btype!r}", offset=at
            )
        if index <= self._last:
            raise PeerProtocolError(
                f"content_block_start for block {index}, after block {self._last} started",
                offset=at,
            )
        if len(self._open) >= MAX_OPEN_BLOCKS:
            raise PeerProtocolError(
                f"more than {MAX_OPEN_BLOCKS} content blocks open at once",
                offset=at,
                limit="max_open_blocks",
                limit_value=MAX_OPEN_BLOCKS,
            )
        self._last = index
        kind = _KINDS.get(btype, _OTHER)
        if kind in (_TEXT, _THINKING):
            other = next((i for i, k in self._open.items() if k == kind), None)
            if other is not None:  # (attack 37: "A", "B" read as "BA", as they came)
                raise PeerProtocolError(
                    f"a {btype} block ({index}) opened while block {other}, of that kind too, is "
                    "open: their text would interleave",
                    offset=at,
                )
        if btype == "redacted_thinking":
            data = block.get("data")
            if type(data) is not str:
                raise PeerProtocolError("redacted_thinking needs data, a string", offset=at)
            self._sign(ReasoningSignature(signature=data, carrier="thinking", redacted=True), at)
        elif kind == _TEXT:
            text = block.get("text")
            if text is not None and type(text) is not str:
                raise PeerProtocolError("a text block's text must be a string", offset=at)
            if text:
                self._add_text(text, at)
        elif kind == _THINKING:
            thinking = block.get("thinking")
            if thinking is not None and type(thinking) is not str:
                raise PeerProtocolError("a thinking block's thinking must be a string", offset=at)
            if thinking:
                self._add_reasoning(thinking, at)
            signature = block.get("signature")
            if type(signature) is str and signature:
                self._add_signature(signature, at)
        elif kind == _TOOL:
            call_id = block.get("id")
            name = block.get("name")
            if type(call_id) is not str or type(name) is not str:
                raise PeerProtocolError("a tool_use block needs an id and a name", offset=at)
            number = len(self._calls.calls)
            self._grow(len(call_id) + len(name), at)  # held until the end, as arguments are
            self._queue.append(self._calls.apply(number, call_id, name, None, at))
            self._tools[index] = number
            start = block.get("input")
            if isinstance(start, dict) and start:
                text = _json.dumps(start).decode()
                self._grow(len(text), at)
                self._start_input[number] = text
        else:
            self._note(f"content blocks of type {btype!r} are not carried (kept out of the text)")
        self._open[index] = kind

    def _on_block_delta(self, obj: dict[str, Any], at: int) -> None:
        index = _field(obj, "index", int, at)
        delta = _field(obj, "delta", dict, at)
        kind = self._open.get(index)
        if kind is None:
            raise PeerProtocolError(f"content_block_delta for block {index}, not open", offset=at)
        dtype = delta.get("type")
        if type(dtype) is not str:
            raise PeerProtocolError(f"delta.type must be a string, not {dtype!r}", offset=at)
        wanted = _DELTA_KIND.get(dtype)
        if wanted is None:
            what = "citations are" if dtype == "citations_delta" else f"{dtype!r} deltas are"
            self._note(f"{what} not carried")
            return
        if kind == _OTHER:  # e.g. a server_tool_use block's input: skipped (Rule 3)
            return
        if wanted != kind:
            raise PeerProtocolError(
                f"a {dtype} for block {index}, which is not a block of that kind", offset=at
            )
        if dtype == "text_delta":  # a string text is the hot path's: here it is not one
            _string(delta, "text", at)
        elif dtype == "input_json_delta":  # a string piece is the hot path's: here it is not
            _string(delta, "partial_json", at)
        elif dtype == "thinking_delta":  # likewise
            _string(delta, "thinking", at)
        else:
            self._add_signature(_string(delta, "signature", at), at)

    def _on_block_stop(self, obj: dict[str, Any], at: int) -> None:
        index = _field(obj, "index", int, at)
        kind = self._open.pop(index, None)
        if kind is None:
            raise PeerProtocolError(f"content_block_stop for block {index}, not open", offset=at)
        envelope = self._envelope
        if envelope is not None and envelope.index == index:
            self._envelope = None  # its block is closed: _envelope Rule 4
        if kind == _THINKING:
            self._block.clear()  # a signature signs its own block only: unsigned, it ends here
        elif kind == _TOOL:
            number = self._tools.pop(index)
            start = self._start_input.pop(number, None)
            if not self._calls.calls[number].args:  # no piece came: its start's input, whole
                self._queue.append(self._calls.arguments(number, start or "{}", at))

    def _add_text(self, text: str, at: int) -> None:
        self._grow(len(text) * self._weight, at)
        self._text.append(text)
        self._queue.append(text_delta(text))

    def _add_reasoning(self, text: str, at: int) -> None:
        self._size += len(text) * self._weight
        if self._size > self._max_result:
            self._grow(0, at)  # raises
        self._reasoning.append(text)
        self._block.append(text)
        self._queue.append(reasoning_delta(text, "thinking"))

    # What a non-empty piece of an open block carries, on every path (the general one and the
    # envelope's): text, reasoning (`_add_reasoning`), a tool call's arguments.

    def _carry_text(self, piece: str, at: int) -> None:
        self._size += len(piece) * self._weight
        if self._size > self._max_result:
            self._grow(0, at)  # raises
        self._text.append(piece)
        self._queue.append(text_delta(piece))

    def _carry_arguments(self, number: int, args: Pieces, piece: str, at: int) -> None:
        """`ToolCallAssembler.arguments` at once, for call ``number`` (applied at its block's
        start, so it is ``calls[number]``, with that wire index), whose ``args`` these are."""
        self._size += len(piece)
        if self._size > self._max_result:
            self._grow(0, at)  # raises
        held = args.held  # `Pieces.append` without its call
        held.append(piece)
        if len(held) >= JOIN:
            args.squeeze()
        self._queue.append(tool_call_delta(number, piece))

    def _carrier(self, envelope: Envelope) -> Callable[[str, int], None]:
        """What carries a non-empty piece of the envelope's block (never kept: no cycle)."""
        kind = envelope.kind
        if kind == _TEXT:
            return self._carry_text
        if kind == _TOOL:
            number = envelope.number
            return partial(self._carry_arguments, number, self._calls.calls[number].args)
        return self._add_reasoning

    # -- the envelope (see _envelope) ----------------------------------------------------------

    def _learn(
        self, payload: bytes | bytearray, obj: dict[str, Any], key: str, index: int, kind: int
    ) -> None:
        """Learn the envelope of a piece the hot path just read (_envelope Rule 1)."""
        found = learn(payload, obj, key, self._loads)
        if found is None:
            self._budget -= 1
            return
        number = self._tools[index] if kind == _TOOL else -1
        self._envelope = Envelope(*found, index, kind, number)
        self._budget = BUDGET

    def feed(self, data: bytes | bytearray | memoryview) -> list[Event]:
        """`DialectDecoder.feed`, with the envelope's express first (_envelope Rule 3): while
        the typed express could take a piece (``_fast``), one that is exactly one event
        repeating the open block's envelope is carried here, as that express would."""
        envelope = self._envelope
        if envelope is not None and self._fast and type(data) is bytes:
            framer = self._framer
            before, after, data_at = envelope.express[framer.gap == 10]
            end = len(data) - len(after)
            if (
                end >= len(before)
                and data.startswith(before)
                and data.endswith(after)
                and len(data) <= framer.max_event_size
            ):
                try:
                    piece = string_text(data, len(before), end)
                except UnicodeDecodeError:  # the general way applies the policy
                    piece = None
                if piece is not None:
                    at = framer._base + self._skipped + data_at
                    self._skipped += len(data)  # counted into the framer's offsets later
                    if not piece:
                        return []
                    try:
                        self._carrier(envelope)(piece, at)
                    except PeerProtocolError as exc:  # max_result_size: as the express does
                        self._fast = None
                        self._deferred = self._error = exc
                        raise
                    out = self._queue
                    self._queue = []
                    return out
        return DialectDecoder.feed(self, data)

    def _on_typed(
        self, at: int, types: Sequence[str], payloads: Sequence[bytes | bytearray], eol: int
    ) -> None:
        """`DialectDecoder._on_typed`, a run of typed events at once: a piece of the open block
        that repeats its envelope is carried here (`Envelope.read`, inline); any other event
        goes the general way (`_on_event`), which may learn an envelope or forget it."""
        on_event = self._on_event
        head = 13 + eol
        tail = eol + eol
        envelope = self._envelope
        opened = closed = b""
        nopened = nclosed = 0
        carry = None
        if envelope is not None:
            opened, closed, carry = envelope.head, envelope.tail, self._carrier(envelope)
            nopened, nclosed = len(opened), len(closed)
        for sse_type, payload in zip(types, payloads, strict=True):
            at += len(sse_type) + head
            size = len(payload)
            if (
                carry is not None
                and payload.startswith(opened)
                and payload.endswith(closed)
                and sse_type == DELTA
            ):
                end = size - nclosed
                raw = payload[nopened:end]
                try:  # string_text, its common case inline: a piece with nothing escaped
                    if 0x5C not in raw and len(raw.translate(None, NOT_PLAIN)) == len(raw):
                        piece = raw.decode() if end >= nopened else None
                    else:
                        piece = string_text(payload, nopened, end)
                except UnicodeDecodeError:  # the general way applies the policy
                    piece = None
                if piece is not None:
                    if piece:
                        carry(piece, at)
                    at += size + tail
                    continue
            on_event(sse_type, payload, at)
            if self._envelope is not envelope:
                envelope = self._envelope
                carry = None
                if envelope is not None:
                    opened, closed = envelope.head, envelope.tail
                    nopened, nclosed = len(opened), len(closed)
                    carry = self._carrier(envelope)
            at += size + tail

    def _add_signature(self, signature: str, at: int) -> None:
        if signature:
            self._sign(ReasoningSignature(signature=signature, carrier="thinking"), at)

    # Rules 4 and 5

    def _on_message_delta(self, obj: dict[str, Any], at: int) -> None:
        self._begin()
        delta = _field(obj, "delta", dict, at)
        reason = delta.get("stop_reason")
        if reason is not None:
            if type(reason) is not str:
                raise PeerProtocolError(f"stop_reason must be a string, not {reason!r}", offset=at)
            if self._finish is not None:
                self._note(f"a second stop_reason {reason!r} after {self._finish.raw!r}")
            else:
                if reason not in STOP_REASONS:
                    self._note(f"unknown stop_reason {reason!r}")
                sequence = delta.get("stop_sequence")
                self.stop_sequence = sequence if isinstance(sequence, str) else None
                if self.stop_sequence:  # (fidelity 43 F11: the other dialects have no field)
                    self._note(
                        f"the stop sequence that ended the answer ({self.stop_sequence[:64]!r}) "
                        "is not carried"
                    )
                self._finish = Finished(
                    reason=STOP_REASONS.get(reason, FinishReason.OTHER), raw=reason
                )
                self._queue.append(self._finish)
        usage = obj.get("usage")
        if usage is not None:
            self._on_usage(usage, at)
            self._queue.append(self._usage)  # type: ignore[arg-type]
            self._usage_sent = True

    def _final_usage(self) -> None:
        """The counts of ``message_start`` as an event, when no ``message_delta`` gave any."""
        if not self._usage_sent and self._usage is not None and any(self._counts.values()):
            self._usage_sent = True
            self._queue.append(self._usage)

    def _on_usage(self, raw: object, at: int) -> None:
        if type(raw) is not dict:
            raise PeerProtocolError("'usage' must be an object", offset=at)
        counts = self._counts
        for key in _USAGE_KEYS:
            value = raw.get(key)
            if type(value) is int and value >= 0:
                counts[key] = value
        details = raw.get("output_tokens_details")
        if type(details) is dict:
            thinking = details.get("thinking_tokens")
            if type(thinking) is int and thinking >= 0:
                self._thinking_tokens = thinking
        ours = raw.get(SVIR_USAGE)
        if type(ours) is dict:
            total = ours.get("total_tokens")
            if type(total) is int and total >= 0:
                self._total = total
        fresh = counts.get("input_tokens")
        creation = counts.get("cache_creation_input_tokens")
        read = counts.get("cache_read_input_tokens")
        output = counts.get("output_tokens")
        prompt = None
        if fresh is not None or creation is not None or read is not None:
            prompt = (fresh or 0) + (creation or 0) + (read or 0)
        total = self._total
        if total is None and prompt is not None and output is not None:
            total = prompt + output
        self._usage = Usage(
            prompt_tokens=prompt,
            completion_tokens=output,
            total_tokens=total,
            reasoning_tokens=self._thinking_tokens,
            cached_tokens=read,
            cache_creation_tokens=creation,
        )

    # Rules 6 to 8

    def _on_ping(self, obj: dict[str, Any], at: int) -> None:
        self.pings += 1

    def _on_error(self, obj: dict[str, Any], at: int) -> None:
        error = obj.get("error")
        error_type = message = None
        if isinstance(error, dict):
            error_type, message = error.get("type"), error.get("message")
        failure = failure_from_error(
            error_type if isinstance(error_type, str) else None,
            message
            if isinstance(message, str) and message
            else "the server reported an error without a message",
            default=FailureKind.SERVER_ERROR,
        )
        self._failure = failure
        self._final_usage()
        self._queue.append(StreamFailed(error=failure))
        self._ended()  # Anthropic ends the stream with its error
        self._terminate(done=True)

    def _ended(self) -> None:
        """The stream is over (Rule 8): nothing after it is read, on any path."""
        self._done = True
        self._envelope = None

    def _on_message_stop(self, obj: dict[str, Any], at: int) -> None:
        self._ended()
        self._final_usage()
        if not self._started:  # no message at all: a stream with nothing, which a translated
            self._note("message_stop came before any message_start")  # stream is a cut too
            self._terminate(done=False)  # (attack 48 F5: a whole answer was an empty 200)
            return
        open_calls = sorted(i for i, kind in self._open.items() if kind == _TOOL)
        if open_calls:  # their input never ended: not whole, as a body cut inside them
            self._note(
                f"message_stop with tool_use blocks still open: {open_calls}: their input may "
                "not be whole, so the stream is a cut"
            )
            self._terminate(done=False)
            return
        finish = self._finish
        calls = self._tool_calls = self._calls.finish(self._declared)  # whole at the end,
        self._queue.extend(calls)  # a stop_reason said or not (attack 48 F1: dropped without)
        if finish is None:
            self._note("message_stop came without a stop_reason")
        for note in call_notes(calls, finish, "stop_reason", "tool_use"):
            self._note(note)
        if self._open:
            self._note(f"message_stop with blocks still open: {sorted(self._open)}")
        self._terminate(done=True)

    def _on_body_end(self) -> None:
        if not self._done:
            self._final_usage()
            self._note("the body ended before message_stop")
            self._terminate(done=False)

    def _after_end(self, exc: PeerProtocolError) -> bool:
        self._note(f"after the end of the stream: {exc}")  # noted once; not read further
        return True


def _field(obj: dict[str, Any], name: str, kind: type, at: int) -> Any:
    value = obj.get(name)
    if type(value) is not kind:
        raise PeerProtocolError(
            f"{obj.get('type')} needs {name!r} ({kind.__name__}), got {value!r}"[:200], offset=at
        )
    return value


def _string(delta: dict[str, Any], name: str, at: int) -> str:
    value = delta.get(name)
    if type(value) is not str:
        raise PeerProtocolError(
            f"{delta.get('type')} needs {name!r}, a string, not {value!r}"[:200], offset=at
        )
    return value


_HANDLERS: Final = {
    "message_start": MessagesStreamDecoder._on_message_start,
    "content_block_start": MessagesStreamDecoder._on_block_start,
    "content_block_delta": MessagesStreamDecoder._on_block_delta,
    "content_block_stop": MessagesStreamDecoder._on_block_stop,
    "message_delta": MessagesStreamDecoder._on_message_delta,
    "message_stop": MessagesStreamDecoder._on_message_stop,
    "ping": MessagesStreamDecoder._on_ping,
    "error": MessagesStreamDecoder._on_error,
}
