"""The event vocabulary both dialects decode to, and `Completion`, the result of one stream.

Every decoder in svir-proto (OpenAI Chat Completions, LLM-Stream) turns bytes into these
events, so a consumer that handles them handles every server of either dialect, and translating
between dialects is a function from events to events (ARCHITECTURE.md, "The one event
vocabulary").

Rules: events are immutable (``attrs.frozen``: slotted, hashable; fields of immutable types),
flat, and never subclass each other; dispatch on them with ``match`` and end with
``assert_never``. This module holds values only: no parsing, no I/O.
"""

from __future__ import annotations

import enum
import json
from typing import Final, Literal, final, get_args

import attrs

from ._json import canonical
from .errors import Failure, FilterResult

__all__ = [
    "AnswerSegment",
    "Completion",
    "Event",
    "FilterOffsets",
    "FilterVerdict",
    "FinishReason",
    "BlockStopped",
    "Finished",
    "ParsedArguments",
    "REASONING_CARRIERS",
    "ReasoningBlock",
    "ReasoningCarrier",
    "ReasoningDelta",
    "ReasoningSignature",
    "RefusalDelta",
    "RequestFailed",
    "ResponseStarted",
    "Retrying",
    "SegmentField",
    "StreamEnded",
    "StreamFailed",
    "StreamStarted",
    "TextDelta",
    "TextRun",
    "ToolCall",
    "ToolCallDelta",
    "Usage",
]

ReasoningCarrier = Literal[
    "reasoning_content", "reasoning", "think", "thinking", "summary", "reasoning_text", "thought"
]
"""Where reasoning arrived: OpenAI Chat's ``reasoning_content`` or ``reasoning`` key or inline
``<think>`` markers; Anthropic's ``thinking`` blocks; the Responses API's reasoning ``summary``
or its ``reasoning_text`` content; Gemini's ``thought`` parts."""
REASONING_CARRIERS: Final = frozenset(get_args(ReasoningCarrier))


@final
class FinishReason(enum.Enum):
    """Why generation stopped, normalised across dialects; the wire value stays in ``raw``."""

    STOP = "stop"
    LENGTH = "length"
    TOOL_CALLS = "tool_calls"
    CONTENT_FILTER = "content_filter"
    OTHER = "other"


@final
@attrs.frozen(kw_only=True)
class StreamStarted:
    """The stream's identity: the first chunk with a real ``id`` (OpenAI), or ``stream.start``."""

    response_id: str
    model: str
    created: int | None = None
    request_id: str | None = None


@final
@attrs.frozen(kw_only=True)
class TextDelta:
    """A fragment of the answer's text (``delta.content``, ``content.delta``)."""

    text: str
    index: int = 0


@final
@attrs.frozen(kw_only=True)
class TextRun:
    """A run of `TextDelta` events of block 0, each text as the body of its JSON string: the
    bytes `svir_proto._json.dumps` writes between the quotes for it (whatever JSON backend is
    installed). What a decoder asked for ``text_runs`` gives in place of those events, for an
    encoder that copies the bytes instead of writing each text again (the gateway, from an
    OpenAI upstream to LLM-Stream). Not one of the vocabulary's `Event` types: no decoder gives
    it unless asked.

    ``bodies`` holds the bodies joined with LF, which a body never holds (JSON escapes it);
    ``count`` is how many there are. No body is empty: a run stands for at least one event.
    """

    bodies: bytes
    count: int

    def deltas(self) -> list[TextDelta]:
        """The `TextDelta` events this run stands for, in order."""
        return [
            text_delta(body.decode() if 0x5C not in body else json.loads(b'"%b"' % body))
            for body in self.bodies.split(b"\n")
        ]


@final
@attrs.frozen(kw_only=True)
class ReasoningDelta:
    """A fragment of reasoning, with the carrier it arrived in (wire reference section 4)."""

    text: str
    carrier: ReasoningCarrier


@final
@attrs.frozen(kw_only=True)
class ReasoningSignature:
    """What closes one block of reasoning and must go back with it unchanged in the next turn:
    Anthropic's ``signature_delta`` (or a ``redacted_thinking`` block, whose text is withheld:
    ``redacted``, and ``signature`` holds its encrypted ``data``), the Responses API's
    ``encrypted_content`` and reasoning item ``item_id``, Gemini's ``thoughtSignature``.

    The reasoning since the previous signature is the block it signs (`ReasoningBlock`).
    """

    signature: str
    carrier: ReasoningCarrier
    redacted: bool = False
    item_id: str | None = None


@final
@attrs.frozen(kw_only=True)
class RefusalDelta:
    """A fragment of the model's refusal to answer (``delta.refusal``)."""

    text: str


@final
@attrs.frozen(kw_only=True)
class ToolCallDelta:
    """The fragments of one tool call that one chunk carried; not yet safe to execute."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@final
@attrs.frozen(kw_only=True)
class ParsedArguments:
    """A tool call's arguments parsed as JSON: ``value``, or ``error`` saying why not."""

    value: object = None
    error: str | None = None


@final
@attrs.frozen(kw_only=True)
class ToolCall:
    """A whole tool call, emitted only once the stream is complete and the call checked.

    ``declared`` is ``True`` or ``False`` when the caller told the decoder which tools the
    request declared (draft section 8.2), ``None`` when it did not.
    """

    index: int
    id: str
    name: str
    arguments: str
    declared: bool | None = None

    def parse_arguments(self) -> ParsedArguments:
        """Parse ``arguments`` as JSON; invalid JSON is reported, never raised."""
        try:  # by the one JSON policy: no NaN, no lone surrogates (svir_proto._json)
            return ParsedArguments(value=canonical(self.arguments))
        except (ValueError, RecursionError) as exc:
            return ParsedArguments(error=f"tool call {self.id!r} ({self.name}): {exc}")


@final
@attrs.frozen(kw_only=True)
class Finished:
    """The finish reason (``finish_reason``, ``content.stop``), normalised, with the raw value."""

    reason: FinishReason
    raw: str


@final
@attrs.frozen(kw_only=True)
class BlockStopped:
    """The end of a content block other than the answer's primary one (index 0), with its stop
    reason: an LLM-Stream answer's ``content.stop`` for block ``index`` (the draft ends each
    block so; every other dialect's answer is one block). The primary block's stop is the
    answer's `Finished`; a client of a dialect with one text has no place for another's."""

    index: int
    reason: FinishReason
    raw: str


@final
@attrs.frozen(kw_only=True)
class Usage:
    """Token counts (the usage chunk, LLM-Stream ``usage``, Anthropic's ``message_start`` and
    ``message_delta``, the Responses API's ``response.completed``, Gemini's ``usageMetadata``).

    Counted as OpenAI counts them, whatever the dialect: ``prompt_tokens`` is every input token,
    those read from a cache (``cached_tokens``) and those written to one
    (``cache_creation_tokens``, Anthropic's) included; ``completion_tokens`` is every output
    token, the reasoning (``reasoning_tokens``) included. Anthropic reports its input without
    the cache tokens and Gemini its output without the thoughts: their decoders add them, their
    encoders take them out again, so every count survives every dialect that has a field for it.
    """

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None
    cache_creation_tokens: int | None = None


@final
@attrs.frozen(kw_only=True)
class FilterOffsets:
    """Azure ``content_filter_offsets``: which part of the answer an annotation applies to."""

    check_offset: int | None = None
    start_offset: int | None = None
    end_offset: int | None = None


@final
@attrs.frozen(kw_only=True)
class FilterVerdict:
    """A content-filter verdict on the prompt or on the answer (Azure, wire reference 3.7).

    ``filtered`` is true when any category blocked; ``detected`` when any category detected
    something, blocked or not (annotate-only filters), or rated it above ``safe``.

    The repeat rule: Azure repeats its verdict on every chunk of the answer, almost always
    "safe" in every category. A verdict on the answer is an event, and is kept in
    `Completion.filter_verdicts`, when it is news: the first one; one that differs from the
    last in any way (a category, a severity, a flag); one that found something (``filtered``
    or ``detected``), even repeated; and every asynchronous annotation (it has ``offsets``),
    including a block after ``stop``. A verdict that repeats the last one and found nothing is
    only counted (`Completion.filter_repeats`): no object per chunk, no memory per chunk.
    """

    scope: Literal["prompt", "completion"]
    results: tuple[FilterResult, ...]
    offsets: FilterOffsets | None = None
    filtered: bool = False
    detected: bool = False

    @property
    def blocks(self) -> bool:
        """The verdict blocked the answer (``filtered``, on the answer: one on the prompt blocks
        no answer), even after its finish: Azure's asynchronous filter blocks after ``stop``."""
        return self.filtered and self.scope == "completion"


@final
@attrs.frozen(kw_only=True)
class StreamFailed:
    """The server reported a failure inside the stream; what came before stays in the result."""

    error: Failure


@final
@attrs.frozen(kw_only=True)
class StreamEnded:
    """The last event of every stream; ``complete`` as in `Completion.complete`; ``done``: the
    stream's end marker (``[DONE]``, ``stream.end``) was seen, so the stream ended where its
    server ended it, whole or not; false: the body ended without it (a cut)."""

    complete: bool
    done: bool = False


@final
@attrs.frozen(kw_only=True)
class ResponseStarted:
    """A response head that is a stream: its status and headers (lower-cased names)."""

    status: int
    headers: tuple[tuple[str, str], ...]


@final
@attrs.frozen(kw_only=True)
class RequestFailed:
    """A response head (and bounded body) that is a failure, not a stream."""

    failure: Failure


@final
@attrs.frozen(kw_only=True)
class Retrying:
    """The request is sent again (attempt ``attempt``, from 2) after ``delay`` seconds, because
    of ``failure``; ``reason`` says what changed, if anything. Nothing of the answer had arrived:
    a retry never repeats a generation that had begun."""

    attempt: int
    delay: float
    reason: str
    failure: Failure


Event = (
    StreamStarted
    | TextDelta
    | ReasoningDelta
    | ReasoningSignature
    | RefusalDelta
    | ToolCallDelta
    | ToolCall
    | Finished
    | BlockStopped
    | Usage
    | FilterVerdict
    | StreamFailed
    | StreamEnded
    | ResponseStarted
    | RequestFailed
    | Retrying
)


@final
@attrs.frozen(kw_only=True)
class ReasoningBlock:
    """One signed block of reasoning, to send back unchanged (`Completion.reasoning_blocks`):
    its ``text`` (empty when ``redacted``) and the `ReasoningSignature` that closed it."""

    text: str
    signature: str
    carrier: ReasoningCarrier
    redacted: bool = False
    item_id: str | None = None

    @classmethod
    def closed_by(cls, signature: ReasoningSignature, text: str) -> ReasoningBlock:
        """The block ``signature`` closes, of the reasoning ``text`` before it (none kept when
        it is redacted)."""
        return cls(
            text="" if signature.redacted else text,
            signature=signature.signature,
            carrier=signature.carrier,
            redacted=signature.redacted,
            item_id=signature.item_id,
        )


SegmentField = Literal["reasoning", "reasoning_blocks", "text", "refusal", "tool_calls"]
"""The `Completion` fields an answer's parts are kept in (`AnswerSegment.field`)."""


@final
@attrs.frozen(kw_only=True)
class AnswerSegment:
    """One part of an answer, in the order its stream gave it (`Completion.segments`): the
    slice ``[start:end]`` of the `Completion` field ``field`` names, characters of
    ``reasoning``, ``text`` or ``refusal`` (a run of deltas between two events of another
    kind), or items of ``reasoning_blocks`` or ``tool_calls`` (a signed block where its
    signature came, a call where its first event came)."""

    field: SegmentField
    start: int
    end: int


@final
@attrs.frozen(kw_only=True)
class Completion:
    """The result of one stream, kept by every decoder as ``decoder.result``.

    Each signal that a stream may end with is recorded separately, because servers disagree on
    which they send (PEERS.md, "knowing that the answer is complete"):

    Attributes:
        text, reasoning, refusal: the joined deltas; empty when the decoder did not keep
            them (``keep_text=False``, as a relay that passes the deltas on decodes: the
            events carry them all the same; ``reasoning_carrier`` may then be ``None``).
        reasoning_carrier: the key the reasoning first arrived in, to send it back under the
            same key (``"think"``: inline markers, never sent back).
        reasoning_blocks: the reasoning as the signed blocks the server closed with a
            `ReasoningSignature` (Anthropic, Responses, Gemini), to send back unchanged; empty
            for a dialect that signs nothing. Without ``keep_text``, each block's text is
            empty (its signature is kept).
        tool_calls: the whole, checked calls; empty until the stream is complete.
        pending_tool_calls: the calls as assembled so far when they never became whole (a
            stream cut, or failed, before ``[DONE]``): kept, never passed off as executable.
        finish_reason, finish_raw: the normalised finish reason and the wire value.
        usage: token counts, if the server sent them.
        filter_verdicts: the content-filter verdicts on the prompt and the answer that were
            news (see `FilterVerdict` for the repeat rule).
        filter_repeats: verdicts on the answer that repeated the last one and found nothing,
            counted and not kept.
        error: the failure the server reported in the stream, if any.
        done: the end marker was seen (``[DONE]``, ``stream.end``).
        closed: the body ended (the caller passed ``b""``).
        cut: the body ended inside an event, so something was lost.
        usage_missing: usage was expected (the request asked for it) and never came.
        filtered: a verdict said the answer was blocked, even with a ``stop`` finish.
        ignored_after_done: events that arrived after the end marker and were ignored.
        problems: what the decoder noticed and did not repair (for example a ``stop`` finish
            with tool calls), one sentence each.
        interrupted: why the body stopped before its end, when the client knows: it gave up
            (a timeout, a cancel, leaving the stream early) or the connection dropped.
            ``None`` when nothing interrupted it.
        complete: the *stream* is whole: a finish reason, then the end marker, and no error.
            It says nothing of what the finish reason was: an answer cut by ``max_tokens``
            (``length``) or blocked by a filter is a complete stream. See `usable`.
        segments: the answer's parts in the order the stream gave them (reasoning, a signed
            block, text, a call, more reasoning...), each an `AnswerSegment` of the fields
            above, for a whole answer that writes them in that order (a Messages
            ``content``, a Responses ``output``), as `svir_proto.answer.AnswerFold` keeps
            them; empty when the order was not kept (a decoder's own result): reasoning,
            then text, then calls (`svir_proto.answer.ordered_parts`).
    """

    text: str = ""
    reasoning: str = ""
    reasoning_carrier: ReasoningCarrier | None = None
    reasoning_blocks: tuple[ReasoningBlock, ...] = ()
    refusal: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    pending_tool_calls: tuple[ToolCallDelta, ...] = ()
    finish_reason: FinishReason | None = None
    finish_raw: str | None = None
    usage: Usage | None = None
    filter_verdicts: tuple[FilterVerdict, ...] = ()
    filter_repeats: int = 0
    error: Failure | None = None
    done: bool = False
    closed: bool = False
    cut: bool = False
    usage_missing: bool = False
    filtered: bool = False
    ignored_after_done: int = 0
    problems: tuple[str, ...] = ()
    interrupted: str | None = None
    complete: bool = False
    segments: tuple[AnswerSegment, ...] = ()

    @property
    def usable(self) -> bool:
        """The *answer* is whole and may be used as it is: the stream is complete, nothing was
        filtered, and the model stopped on its own or to call tools (not ``length``, which
        cuts the answer short, wire reference 2.6; not ``content_filter``; not an unknown
        reason)."""
        return (
            self.complete
            and not self.filtered
            and self.finish_reason in (FinishReason.STOP, FinishReason.TOOL_CALLS)
        )

    def parsed_arguments(self) -> tuple[ParsedArguments, ...]:
        """Each tool call's arguments parsed as JSON, in call order, errors reported per call."""
        return tuple(call.parse_arguments() for call in self.tool_calls)


# -- building the hot events ---------------------------------------------------------------
# A decoder builds a TextDelta or a ToolCallDelta for nearly every chunk. attrs's __init__ for
# a frozen class sets each field through a bound object.__setattr__, which costs as much as the
# rest of reading a chunk; these set the slots through their descriptors, at half the cost,
# and build the very same objects (tests/unit/test_events.py checks every field is set).

_new: Final = object.__new__
_set_text: Final = TextDelta.__dict__["text"].__set__
_set_text_index: Final = TextDelta.__dict__["index"].__set__
_set_run_bodies: Final = TextRun.__dict__["bodies"].__set__
_set_run_count: Final = TextRun.__dict__["count"].__set__
_set_call_index: Final = ToolCallDelta.__dict__["index"].__set__
_set_call_id: Final = ToolCallDelta.__dict__["id"].__set__
_set_call_name: Final = ToolCallDelta.__dict__["name"].__set__
_set_call_arguments: Final = ToolCallDelta.__dict__["arguments"].__set__
_set_reasoning_text: Final = ReasoningDelta.__dict__["text"].__set__
_set_reasoning_carrier: Final = ReasoningDelta.__dict__["carrier"].__set__
_set_usage: Final = tuple(
    Usage.__dict__[field.name].__set__ for field in attrs.fields(Usage)
)  # prompt, completion, total, reasoning, cached, cache creation


def text_delta(text: str, index: int = 0) -> TextDelta:
    """``TextDelta(text=text, index=index)``, built for the hot path."""
    event: TextDelta = _new(TextDelta)
    _set_text(event, text)
    _set_text_index(event, index)
    return event


def text_run(bodies: bytes, count: int) -> TextRun:
    """``TextRun(bodies=bodies, count=count)``, built for the hot path."""
    event: TextRun = _new(TextRun)
    _set_run_bodies(event, bodies)
    _set_run_count(event, count)
    return event


def tool_call_delta(
    index: int, arguments: str, call_id: str | None = None, name: str | None = None
) -> ToolCallDelta:
    """``ToolCallDelta(index=..., id=call_id, name=name, arguments=...)``, for the hot path."""
    event: ToolCallDelta = _new(ToolCallDelta)
    _set_call_index(event, index)
    _set_call_id(event, call_id)
    _set_call_name(event, name)
    _set_call_arguments(event, arguments)
    return event


def usage_counts(
    prompt: int | None,
    completion: int | None,
    total: int | None,
    reasoning: int | None = None,
    cached: int | None = None,
) -> Usage:
    """``Usage(prompt_tokens=prompt, ...)`` with no cache creation, for the hot path (vLLM's
    usage on every chunk)."""
    event: Usage = _new(Usage)
    a, b, c, d, e, f = _set_usage
    a(event, prompt)
    b(event, completion)
    c(event, total)
    d(event, reasoning)
    e(event, cached)
    f(event, None)
    return event


def reasoning_delta(text: str, carrier: ReasoningCarrier) -> ReasoningDelta:
    """``ReasoningDelta(text=text, carrier=carrier)``, built for the hot path."""
    event: ReasoningDelta = _new(ReasoningDelta)
    _set_reasoning_text(event, text)
    _set_reasoning_carrier(event, carrier)
    return event
