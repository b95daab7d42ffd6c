"""Events to Gemini ``streamGenerateContent`` chunks: the server side of the dialect, for a
gateway that answers Gemini clients from any upstream.

Each event that has a form is one whole ``GenerateContentResponse``, framed as Google frames it
(``alt=sse``: ``data: {...}`` and CRLF line ends; without it, Rule 8), with ``modelVersion`` and
``responseId`` on every chunk as Gemini writes them:

Rule 1: `TextDelta` is a text part; `ReasoningDelta` a ``"thought": true`` part (whatever its
    carrier); `RefusalDelta` a text part too (Gemini has no refusal: listed in ``lost``).
Rule 2: function calls go out whole, as Gemini sends them: one ``functionCall`` part with the
    call's ``id``, ``name`` and ``args``. The `ToolCallDelta` pieces of a call are held until
    they make it whole (an id, a name, and arguments that parse as a JSON object); the call
    then goes out with the next event, in its place among the text, in index order (a call
    whole before the one before it waits for that one). A call whose arguments are no JSON
    object (none are ``{}``) cannot be written: the stream ends with its failure (Rule 6), as
    the Messages encoder's does (attack 62 F3: it went as ``{}``, a call the client would run
    with arguments the model never gave, said only in ``lost``, which a Gemini client of a
    gateway never reads); unless the answer's length cut it (a ``length`` finish, before or
    after it: such a call waits for the finish), when it is left out and said in ``lost``,
    as the whole answer leaves it out (review 63). A call that only the decoder's whole
    `ToolCall` completes (LLM-Stream's, which has no pieces) goes out then. A call that never
    became whole is not sent (a client would execute it): listed. Holding a call costs memory
    with its arguments, which the format demands (Gemini has no argument deltas).
Rule 3: a `ReasoningSignature` of Gemini's whose ``item_id`` names a call not yet written
    rides on that call's part as ``thoughtSignature`` (so the client sends it back with it, as
    Gemini requires): `GeminiStreamDecoder` gives it right before the call's delta, and a
    decoder may give it right after, which is why a whole call waits for the next event; one
    whose call never comes goes out at the end. Any other is an empty text part carrying it,
    as Gemini streams one; another vendor's (an Anthropic ``thinking`` block's, a redacted
    block's data) in base64 as `svir_proto._signatures.carried_in_base64` writes it, so that
    a client that sends it back sends it to its vendor whole (attack 62 F1: it went as it was,
    came back from google-genai re-encoded, and was dropped as Gemini's; F2: the SDK refuses
    an answer whose signature is not base64).
Rule 4: `Finished` and `Usage` are held for the last chunk, which `StreamEnded` writes when
    the upstream's stream was complete: ``finishReason`` (the raw value when it is
    Gemini's own, else the normal form's) and ``usageMetadata`` with the thoughts taken out of
    the candidates again; a token count Gemini has no field for goes under
    ``usageMetadata["vendor:svir"]`` (``cacheCreationTokenCount``), which
    `GeminiStreamDecoder` reads and other clients ignore. A prompt blocked upstream (a
    filtered prompt verdict, then a ``content_filter`` finish with no answer) is written as
    ``promptFeedback.blockReason`` instead.
Rule 5: a cut, or a stream that ended incomplete (``StreamEnded(complete=False)``: a cut, an
    end marker without a finish, a streamed call left open), writes no finish: a Gemini
    client, which has no end marker to miss, sees an answer without a finishReason (and for a
    cut the transport cuts the body); the usage goes out without it.
Rule 6: `StreamFailed` is an ``{"error": {...}}`` chunk as Gemini sends one
    (`error_object`: its kind and code travel in an ``ErrorInfo``), and the end of the
    stream: what follows is not written (a Gemini client raises at the error). A `Usage`
    held for the last chunk goes out before it, in a chunk of its own: what the answer cost
    so far, which Gemini's own chunks say on each (review 64 F6: it was lost).
Rule 7: `FilterVerdict` is ``safetyRatings`` (on a candidate, or in ``promptFeedback``) for
    Gemini's own ``HARM_CATEGORY_*`` categories; other services' categories have no form.
Rule 8: without ``alt=sse`` (``sse=False``) the stream is one JSON array, as Gemini streams it
    then: ``[`` before the first chunk, ``,`` and a CRLF before each one after it, and ``]``
    after the last, written once the stream is `done` (complete, or failed: its error chunk
    is the array's last element); a stream that ended incomplete leaves it open, as the
    transport cuts its body (Rule 5). No chunk holds a line end (JSON escapes them), so the
    chunks are written as SSE and reframed (`ArrayWriter`, which a relay of a Gemini
    upstream's SSE to a client that asked for the array uses too, nothing decoded); the
    separators are CRLF whatever ``crlf`` says.

Every event whose content has no form here is listed in ``lost``, one sentence each, once.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from typing import Any, Final

from .._json import canonical, dumps
from .._signatures import carried_in_base64
from ..answer import BLOCKED, cut_by_length, no_value, not_an_object
from ..events import (
    Event,
    FilterVerdict,
    Finished,
    FinishReason,
    ReasoningDelta,
    ReasoningSignature,
    RefusalDelta,
    StreamEnded,
    StreamFailed,
    StreamStarted,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from ..sse.framer import RawItem, SSEFramer
from . import _safety
from ._wire import BLOCK_REASONS, CARRIER, FINISH, FINISH_OF, SVIR_EXTENSION, usage_out
from .status import error_object

__all__ = ["ArrayWriter", "GeminiStreamEncoder"]

FUNCTION_ARGS: Final = "a functionCall's args"
"""What a call's arguments must be in Gemini's form (`svir_proto.answer.not_an_object`)."""

_OTHER_FINISHES: Final = frozenset(
    {
        "OTHER",
        "LANGUAGE",
        "MALFORMED_FUNCTION_CALL",
        "FINISH_REASON_UNSPECIFIED",
        "UNEXPECTED_TOOL_CALL",
        "TOO_MANY_TOOL_CALLS",
        "NO_IMAGE",
        "IMAGE_OTHER",
        "MISSING_THOUGHT_SIGNATURE",
        "MALFORMED_RESPONSE",
    }
)


class ArrayWriter:
    r"""Whole SSE events of a Gemini stream as the elements of the one JSON array a client asks
    for without ``alt=sse`` (Rule 8): the data of each event the Gemini decoder reads, as it
    came, nothing decoded; ``[`` before the first element, ``,`` and a CRLF before each one
    after it, and at the `end` ``\r\n]`` (``[]`` when none came).

    The events are read by the one SSE framer every decoder shares (`SSEFramer`: the WHATWG
    rules, a byte order mark, line ends, ``data`` fields joined by a line feed), with the
    Gemini decoder's own reading of them: blanks before the stream's first line are nothing
    (its Rule 10), an event of another type than ``message`` is not the stream's (so never an
    element: review 76 and attack 75 F1, whose ``data: ]`` closed the array), nor one with no
    data or blank data. A body that begins ``[`` is no SSE (an upstream that ignored
    ``alt=sse`` and named its array SSE: the decoder reads the array it is): nothing of it is
    written and its end is a cut (attack 77 F1: passed as it came, a truncated array ended
    whole, and the gateway's error after it began a second array); an error the gateway ends
    it with is then the array's one element.
    `events` takes whole events (each ends with its blank line), but at the stream's end:
    what follows the last blank line then is an event the end cut, which SSE discards, and
    so does this; the `end` is then no ``]``, and the stream is `cut` (attack 75 F3: a closed
    array said that an answer whose last chunk was lost had ended), as the decoder says.

    ``written``: the elements written so far (a writer that goes on from another's: its count).
    ``cut``: the `end` came inside an event (the framer's Rule 6): the array stays open.
    """

    __slots__ = ("_ended", "_framer", "_whole", "cut", "written")

    def __init__(self, written: int = 0) -> None:
        self.written = written
        self.cut = False
        self._framer: SSEFramer | None = None  # made at the stream's first byte but blanks
        self._whole = False  # the body is an array, not SSE: nothing is written of it
        self._ended = False

    def events(self, data: bytes) -> bytes:
        """The array's next elements, for these whole events (``b""`` once it ended)."""
        if self._ended or not data:
            return b""
        framer = self._framer
        if framer is None:  # the stream begins: the decoder's Rule 10
            data = data.lstrip(b" \t\r\n")
            if not data:
                return b""
            self._whole = data[0] == 0x5B  # "["
            framer = self._framer = SSEFramer(max_event_size=_UNBOUNDED, errors="replace")
            framer.quiet = True
        if self._whole:
            return b""
        framer.receive(data)
        items: list[RawItem] = []
        framer.frame(items)  # (nothing to raise: no bound it can pass, text replaced)
        payloads: list[bytes | bytearray] = []
        for item in items:
            if len(item) == 4:  # a run of events of type message: `RawBatch`
                payloads += item[1]
            elif len(item) == 5:  # typed events: `RawTyped`
                _, types, typed, _, _ = item
                payloads += (p for t, p in zip(types, typed, strict=True) if t == "message")
            elif len(item) == 6 and item[0] in (None, "message"):  # `RawEvent`
                payloads.append(item[1])
            # (else a comment, or an event of another type: `_dialect`'s `_on_event`)
        return self.elements(payloads)

    def elements(self, payloads: Iterable[bytes | bytearray]) -> bytes:
        """The array's next elements, for these events' data: what `events` writes once it
        framed them, and what an encoder that knows its own events' data writes without
        framing them again (nothing comes after the `end` of either)."""
        out: list[bytes | bytearray] = []
        lead = b",\r\n" if self.written else b"["
        for payload in payloads:
            if payload and not payload.isspace():
                out += (lead, payload)
                lead = b",\r\n"
                self.written += 1
        return b"".join(out)

    def end(self) -> bytes:
        """The array's end, once (``b""`` after, and for a stream that ended inside an event or
        was no SSE: `cut`)."""
        if self._ended:
            return b""
        self._ended = True
        framer = self._framer
        if self._whole:
            self.cut = True
        elif framer is not None:
            framer.receive(b"")  # (the end of the body: Rule 6 says what it cut)
            framer.frame([])
            self.cut = framer.end is not None and framer.end.incomplete
        if self.cut:
            return b""
        return b"\r\n]" if self.written else b"[]"


_UNBOUNDED: Final = 1 << 62
"""`ArrayWriter`'s framer's bound: none (the gateway bounds what a relay holds of an event)."""


def _rfc3339(seconds: int) -> str:
    when = datetime.datetime.fromtimestamp(seconds, tz=datetime.timezone.utc)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


class GeminiStreamEncoder:
    """Write events as ``GenerateContentResponse`` SSE chunks (see the module's rules).

    Args:
        model: ``modelVersion`` on every chunk; a `StreamStarted` with a model replaces it.
        response_id: ``responseId`` on every chunk; a `StreamStarted` with an id replaces it.
        created: seconds since the epoch (the caller's clock: the encoder reads none); when
            given, ``createTime`` (Vertex AI's field) on every chunk.
        crlf: CRLF line ends, as Google writes them (else LF).
        sse: SSE chunks (``alt=sse``); else one JSON array (Rule 8).
        opened: for an array another writer began (a relay that broke off: `ArrayWriter`),
            the elements it wrote; this encoder's follow them.

    Attributes:
        lost: what could not be carried, one sentence each, for the gateway's log.
        done: the stream's end was written: its last chunk, with the finish (the upstream's
            stream was complete), or its error chunk (Rule 6); its body may end there.
    """

    def __init__(
        self,
        *,
        model: str = "",
        response_id: str = "",
        created: int = 0,
        crlf: bool = True,
        sse: bool = True,
        opened: int = 0,
    ) -> None:
        self.model = model
        self.response_id = response_id
        self.created = created
        self.lost: list[str] = []
        self.done = False
        self._end = b"\r\n\r\n" if crlf else b"\n\n"
        self._ident = b""  # the identity every chunk ends with
        self._text_head = b'data: {"candidates":[{"content":{"parts":[{"text":'
        # Rule 2: the calls by the index of their pieces
        self._held: dict[int, _Held] = {}  # not yet whole
        self._whole: dict[int, ToolCall] = {}  # whole, waiting for their turn
        self._next = 0  # the index whose turn it is
        self._index_of: dict[str, int] = {}  # the index of a call not yet whole, by its id
        self._written: set[str] = set()  # the ids of the calls written
        self._ids: set[str] = set()  # the ids of the calls not yet written
        self._signatures: dict[str, str] = {}  # Rule 3: call id -> signature
        self._unwritable: list[ToolCall] = []  # Rule 2: no object, till a finish says why
        self._finish: Finished | None = None
        self._filtered = False  # a verdict blocked the answer: its finish is `BLOCKED`
        self._usage: Usage | None = None
        self._blocked: FilterVerdict | None = None  # a filtered prompt verdict, held
        self._answered = False  # a candidate part was written
        self._started = False  # a StreamStarted came
        self._sent = False  # a chunk with the identity was written
        self._over = False  # a failure or the end was written
        # Rule 8: the array's writer (``opened``: the elements another writer wrote of it)
        self._array: ArrayWriter | None = None if sse else ArrayWriter(opened)

    def _note(self, sentence: str) -> None:
        if sentence not in self.lost:
            self.lost.append(sentence)

    # -- chunks ------------------------------------------------------------------------------

    def _tail(self) -> bytes:
        self._sent = True  # every chunk but an error ends with it
        ident = self._ident
        if not ident:
            ident = (
                b'"modelVersion":' + dumps(self.model) + b',"responseId":' + dumps(self.response_id)
            )
            if self.created:
                ident += b',"createTime":' + dumps(_rfc3339(self.created))
            ident = self._ident = ident + b"}" + self._end
        return ident

    def _chunk(self, obj: dict[str, Any]) -> bytes:
        return b"data: " + dumps(obj)[:-1] + b"," + self._tail()

    def _parts(self, parts: list[dict[str, Any]], **candidate: Any) -> bytes:
        self._answered = True
        return self._chunk(
            {
                "candidates": [
                    {"content": {"parts": parts, "role": "model"}, **candidate, "index": 0}
                ]
            }
        )

    def _text(self, text: str) -> bytes:
        self._answered = True
        return self._text_head + dumps(text) + b'}],"role":"model"},"index":0}],' + self._tail()

    # -- events ------------------------------------------------------------------------------

    def encode(self, event: Event) -> bytes:
        """The bytes for one event (``b""`` for what is held or has no form)."""
        out = self._event(event)
        array = self._array
        if array is None:
            return out
        # Rule 8: its own chunks, each one "data: " and its JSON, need no framing to be read
        framed = array.elements(c[6:] for c in out.split(self._end) if c) if out else b""
        return framed + array.end() if self.done else framed

    def _event(self, event: Event) -> bytes:
        if self._over:
            return b""
        if (
            type(event) is ReasoningSignature
            and event.item_id is not None
            and event.item_id not in self._written
            and event.carrier == CARRIER
            and not event.redacted
        ):  # Rule 3: it goes out with its call (held till the end if that never comes)
            self._signatures[event.item_id] = event.signature
            return self._flush()
        out = self._flush()
        return out if self._over else out + self._encode(event)  # (a call that failed ends it)

    def _encode(self, event: Event) -> bytes:
        match event:
            case TextDelta():
                return self._text(event.text) if event.text else b""
            case ReasoningDelta():
                if event.carrier != CARRIER:
                    self._note(f"reasoning's carrier {event.carrier!r}: sent as thought parts")
                if not event.text:
                    return b""
                return self._parts([{"text": event.text, "thought": True}])
            case ToolCallDelta():
                self._piece(event)
            case ToolCall():
                if event.id in self._written:
                    return b""
                index = self._index_of.pop(event.id, None)
                if index is not None:  # its pieces never made it whole: this does
                    self._held.pop(index, None)
                    self._whole[index] = event
                    return self._flush()
                return self._call(event)
            case ReasoningSignature():
                signature = event.signature
                if event.carrier != CARRIER or event.redacted:  # Rule 3: carried
                    signature = carried_in_base64(
                        signature, event.carrier, event.item_id, redacted=event.redacted
                    )
                return self._parts([{"text": "", "thoughtSignature": signature}])
            case RefusalDelta():
                self._note("a refusal: Gemini has none, it went out as text")
                return self._text(event.text) if event.text else b""
            case Finished():
                if self._finish is None:
                    self._finish = event
                    return self._unwritten()
            case Usage():
                self._usage = event
            case FilterVerdict():
                return self._verdict(event)
            case StreamFailed():
                self._over = self.done = True  # (its error chunk is the stream's end: Rule 6)
                if self._usage is not None:  # what it cost so far, as Gemini's chunks say it
                    return self._chunk({"usageMetadata": self._usage_doc(self._usage)}) + (
                        self._chunk_raw(error_object(event.error))
                    )
                # a stream that began but said nothing yet: its identity first, as the
                # upstream's first chunk gave it (else a client would not know it began)
                began = b"data: {" + self._tail() if self._started and not self._sent else b""
                return began + self._chunk_raw(error_object(event.error))
            case StreamEnded():
                return self._ended(event)
            case StreamStarted():
                self._started = True
                self.response_id = event.response_id or self.response_id
                self.model = event.model or self.model
                self.created = event.created or self.created
                self._ident = b""
        return b""

    def _chunk_raw(self, obj: dict[str, Any]) -> bytes:
        return b"data: " + dumps(obj) + self._end

    def _piece(self, piece: ToolCallDelta) -> None:
        """Rule 2: hold a call's pieces until they make it whole."""
        index = piece.index
        if index < self._next or index in self._whole:
            if piece.arguments:
                self._note(f"tool call {index}: arguments after it was whole, not sent")
            return
        held = self._held.get(index)
        if held is None:
            held = self._held[index] = _Held()
        if piece.id:
            held.id = piece.id
            self._ids.add(piece.id)
            self._index_of[piece.id] = index
        if piece.name:
            held.name += piece.name
        if piece.arguments:
            held.pieces.append(piece.arguments)
            held.size += len(piece.arguments)
            if tail := piece.arguments.rstrip():
                held.closed = tail[-1] == "}"
        arguments = held.whole()
        if held.id and held.name and arguments is not None:
            del self._held[index]
            self._index_of.pop(held.id, None)
            self._whole[index] = ToolCall(
                index=index, id=held.id, name=held.name, arguments=arguments
            )

    def _flush(self) -> bytes:
        """The whole calls whose turn it is (in index order), each one event after it became
        whole (so that a signature a decoder gives right after it still rides on it; one
        given before it is held already, Rule 3)."""
        out = []
        while self._next in self._whole and not self._over:  # (a call that failed ends it)
            out.append(self._call(self._whole.pop(self._next)))
            self._next += 1
        return b"".join(out)

    def _call(self, call: ToolCall) -> bytes:
        self._written.add(call.id)
        self._ids.discard(call.id)
        args = call_args(call.arguments)
        if args is None:  # Rule 2: never a call with arguments the model did not give
            self._unwritable.append(call)
            return self._unwritten() if self._finish is not None else b""
        part: dict[str, Any] = {"functionCall": {"id": call.id, "name": call.name, "args": args}}
        signature = self._signatures.pop(call.id, None)
        if signature is not None:
            part["thoughtSignature"] = signature
        return self._parts([part])

    def _unwritten(self) -> bytes:
        """Rule 2: the calls whose arguments are no object, once the finish came (or the end
        without one): left out and said when the length cut them, else the stream's end."""
        calls, self._unwritable = self._unwritable, []
        if not calls:
            return b""
        finish = self._finish
        if finish is not None and finish.reason is FinishReason.LENGTH:
            for call in calls:
                self._note(cut_by_length(call, written=False))
            return b""
        return self._encode(StreamFailed(error=not_an_object(calls[0], FUNCTION_ARGS)))

    @staticmethod
    def _usage_doc(usage: Usage) -> dict[str, Any]:
        """``usageMetadata`` (Rule 4)."""
        doc: dict[str, Any] = usage_out(usage)
        if usage.cache_creation_tokens is not None:
            doc[SVIR_EXTENSION] = {"cacheCreationTokenCount": usage.cache_creation_tokens}
        return doc

    def _verdict(self, verdict: FilterVerdict) -> bytes:
        ratings = _safety.ratings(verdict.results)
        if len(ratings) < len(verdict.results):
            self._note("filter verdicts in categories Gemini has not: not sent")
        if verdict.scope == "prompt":
            if verdict.filtered:
                self._blocked = verdict  # Rule 4: its reason comes with the finish
                return b""
            return self._chunk({"promptFeedback": {"safetyRatings": ratings}}) if ratings else b""
        self._filtered = self._filtered or verdict.blocks  # (after its finish too: F01)
        if not ratings:
            return b""
        return self._chunk({"candidates": [{"safetyRatings": ratings, "index": 0}]})

    def _ended(self, end: StreamEnded) -> bytes:
        if self._unwritable:  # (no finish came to say the length cut them)
            return self._unwritten()
        self._over = True
        for index in sorted(self._held):
            self._note(f"tool call {index} never became whole: not sent")
        for index in sorted(self._whole):
            self._note(f"tool call {index} waited for a call before it that never came: not sent")
        out = [
            self._parts([{"text": "", "thoughtSignature": s}]) for s in self._signatures.values()
        ]
        self._signatures.clear()
        finish = self._finish if end.complete else None  # Rule 5
        if finish is not None and self._filtered:  # (fidelity 43 F01, review 43 M8)
            finish = BLOCKED
        tail: dict[str, Any] = {}
        if self._usage is not None:
            tail["usageMetadata"] = self._usage_doc(self._usage)
        blocked = self._blocked
        if (
            blocked is not None
            and finish is not None
            and finish.reason is FinishReason.CONTENT_FILTER
            and not self._answered
        ):
            reason = finish.raw if finish.raw in BLOCK_REASONS else "OTHER"
            feedback: dict[str, Any] = {"blockReason": reason}
            ratings = _safety.ratings(blocked.results)
            if ratings:
                feedback["safetyRatings"] = ratings
            out.append(self._chunk({"promptFeedback": feedback, **tail}))
        else:
            ratings = [] if blocked is None else _safety.ratings(blocked.results)
            if ratings:
                out.append(self._chunk({"promptFeedback": {"safetyRatings": ratings}}))
            if finish is not None:
                for sentence in _unvalued(finish):
                    self._note(sentence)
                candidate = {
                    "content": {"parts": [{"text": ""}], "role": "model"},
                    "finishReason": _finish_value(finish),
                    "index": 0,
                }
                out.append(self._chunk({"candidates": [candidate], **tail}))
            elif tail:
                out.append(self._chunk(tail))
        self.done = end.complete
        return b"".join(out)


CHECK_COST: Final = 8
"""Characters parsed, at most, for each of a call's arguments to see whether they are whole
(Rule 2): a piece ending with ``}`` in every delta of a long string would parse them all each
time (attack 81 F2: 0.5 MB of arguments in pieces stalled the loop 5 s); past it, the call
waits for its whole `ToolCall`, which every decoder gives at the end."""


class _Held:
    """A call's pieces, not whole yet (Rule 2)."""

    __slots__ = ("checked", "closed", "id", "name", "pieces", "size")

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.pieces: list[str] = []
        self.size = 0  # characters of arguments
        self.closed = False  # their last that is not blank is a ``}``
        self.checked = 0  # characters parsed to see whether they are whole (`CHECK_COST`)

    def whole(self) -> str | None:
        """The arguments, when they are a JSON object: asked only when they end with ``}``,
        within `CHECK_COST` times their length."""
        size = self.size
        if not self.closed or self.checked + size > CHECK_COST * size:
            return None
        self.checked += size
        arguments = "".join(self.pieces)
        self.pieces[:] = [arguments]
        return arguments if _object(arguments) is not None else None


def call_args(arguments: str) -> dict[str, Any] | None:
    """A call's arguments as a ``functionCall``'s ``args``: a JSON object, ``{}`` for none;
    ``None`` when they are no object (Rule 2)."""
    return _object(arguments) if arguments.strip() else {}


def _object(text: str) -> dict[str, Any] | None:
    try:
        value = canonical(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _unvalued(finish: Finished) -> list[str]:
    """A finish that none of Gemini's values means, which goes as ``OTHER``, said (fidelity 43
    F03; attack 74 F3: Anthropic's ``pause_turn``, a turn to go on with, went out unsaid;
    attack 75 F4: so did a Chat server's ``STOP``, spelled as Gemini's but not its meaning)."""
    raw = finish.raw
    if finish.reason is not FinishReason.OTHER or not raw:
        return []
    value = _finish_value(finish)
    return [] if value == raw else [no_value(raw, "Gemini's finish reasons", value)]


def _finish_value(finish: Finished) -> str:
    """The raw value when it is Gemini's and means the same, else the normal form's."""
    raw = finish.raw
    if raw in FINISH:
        same = FINISH[raw] is finish.reason or (
            raw == "STOP" and finish.reason is FinishReason.TOOL_CALLS
        )
    else:
        same = raw in _OTHER_FINISHES and finish.reason is FinishReason.OTHER
    return raw if same else FINISH_OF[finish.reason]
