"""A stream's events folded into its whole answer, and back: for a server that answers a client
that asked for no stream from an upstream that streams (the gateway, translating), and for a
library that serves whole answers from any decoder's `Completion`.

`AnswerFold` takes the vocabulary's events as a decoder gives them and makes the `Completion`
each dialect's ``answer`` writes as that dialect's one JSON object (`DialectSpec.answer`);
`ordered_parts` gives its reasoning, text and calls in the order the stream gave them, for a dialect
whose whole answer has an order (a Messages ``content``, a Responses ``output``); `replay`
gives the events of a `Completion` again, in that order.

Rule 1 (text): text, refusal and reasoning deltas are joined. Reasoning that a
    `ReasoningSignature` closes is a block (`Completion.reasoning_blocks`), in order; a
    redacted block has no text, so the reasoning before it is the next block's; what comes
    after the last signature is the unsigned tail: ``reasoning`` is every block's text, then
    the tail (`unsigned_reasoning`). A `TextRun` is its deltas.
Rule 2 (tool calls): the whole `ToolCall` events, which every decoder emits once the stream
    has ended and its calls were checked; their deltas are read for their place only (Rule 6).
Rule 3 (the rest): the last `Finished` and the last `Usage` (a server may send usage on every
    chunk); the content-filter verdicts as they came; the identity of the first
    `StreamStarted` (``response_id``, ``model``, ``created``: each one it sets).
Rule 4 (the end): `StreamFailed` is the answer's ``error``, `StreamEnded` its end: ``done``
    when the stream ended with its marker, else a cut. Nothing after the end is read.
Rule 5 (bound): at most ``max_size`` characters of text, reasoning, refusal, arguments and
    signatures are kept, and the ids and names of tool calls and reasoning blocks' item ids,
    each verdict, block and call weighing a fixed amount too (`svir_proto._weights`); past it,
    `AnswerTooLarge`, and the fold keeps nothing more. The text is held as it
    comes at about its size, however the upstream cut it (`svir_proto._pieces`). Each
    place Rule 6 keeps weighs `svir_proto._weights.RUN` (a stream that switched between text
    and reasoning at every character would hold some 90 bytes per character).
Rule 6 (order, fidelity 43 F08: a whole answer came back grouped, all reasoning, then all
    text, then all calls, where its stream had interleaved them): the fold keeps the order
    of the answer's parts as `Completion.segments`: a run of text, of reasoning or of
    refusal ends where a delta of another kind (not empty) begins, or a call; a signed block
    has the place of its signature; a call the place of its first event (the first
    `ToolCallDelta` of an index not begun, or its whole `ToolCall` when no delta of its
    index began one), unless the call before it came later: the calls keep their order
    (the decoders', the index's), as a stream that writes them in order places them.
    What it keeps per place is one int (where the run ended, read from `Pieces.mark` at the
    switch), nothing per delta: a delta costs one comparison more.

No I/O here.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator
from itertools import accumulate
from typing import Final

import attrs

from ._dialect import DEFAULT_MAX_RESULT_SIZE
from ._json import canonical
from ._pieces import Pieces
from ._weights import BLOCK, CALL, RUN, VERDICT, verdict
from .errors import AnswerTooLarge, Failure, FailureKind
from .events import (
    AnswerSegment,
    Completion,
    Event,
    FilterVerdict,
    Finished,
    FinishReason,
    ReasoningBlock,
    ReasoningCarrier,
    ReasoningDelta,
    ReasoningSignature,
    RefusalDelta,
    SegmentField,
    StreamEnded,
    StreamFailed,
    StreamStarted,
    TextDelta,
    TextRun,
    ToolCall,
    ToolCallDelta,
    Usage,
)

__all__ = [
    "BLOCKED",
    "VERDICT",
    "AnswerFold",
    "AnswerPart",
    "cut_by_length",
    "finished_of",
    "no_value",
    "not_an_object",
    "ordered_parts",
    "replay",
    "unsigned_reasoning",
]

# Rule 6: the fold's order is a list of ints, ``end << 3 | kind``: a run of reasoning, text or
# refusal that ended at character ``end`` of its field; a signed block (the reasoning before
# it ended at ``end``), whose ``end`` is the next one's; a call, whose ``end`` is its index.
_REASONING: Final = 1
_BLOCK: Final = 2
_TEXT: Final = 3
_REFUSAL: Final = 4
_CALL: Final = 5
_FIELDS: Final[tuple[SegmentField, ...]] = (
    "text",  # (no kind 0: the fold's run before any)
    "reasoning",
    "reasoning_blocks",
    "text",
    "refusal",
    "tool_calls",
)


class AnswerFold:
    """Fold a stream's events into its `Completion` (see the module docstring).

    Args:
        response_id, model, created: the answer's identity until a `StreamStarted` sets it.
        max_size: characters of text, reasoning, refusal and arguments kept (Rule 5).
    """

    def __init__(
        self,
        *,
        response_id: str = "",
        model: str = "",
        created: int = 0,
        max_size: int = DEFAULT_MAX_RESULT_SIZE,
    ) -> None:
        self.response_id = response_id
        self.model = model
        self.created = created
        self.max_size = max_size
        self.ended: StreamEnded | None = None
        """The `StreamEnded` that ended the stream, once it came."""
        self._identified = False
        self._size = 0
        self._text = Pieces()  # (a piece held alone would cost 50 times its characters)
        self._refusal = Pieces()
        self._reasoning = Pieces()  # every piece, signed or not
        self._tail = Pieces()  # the pieces since the last signature
        self._carrier: ReasoningCarrier | None = None
        self._blocks: list[ReasoningBlock] = []
        self._calls: list[ToolCall] = []
        self._run = 0  # the kind of the run going on (Rule 6), 0 before any
        self._order: list[int] = []  # Rule 6: ``end << 3 | kind`` each
        self._begun: set[int] = set()  # the indices of calls placed by a delta, not yet whole
        self._verdicts: list[FilterVerdict] = []
        self._finish: Finished | None = None
        self._usage: Usage | None = None
        self._error: Failure | None = None

    def _grow(self, n: int) -> None:
        self._size += n
        if self._size > self.max_size:
            self.ended = StreamEnded(complete=False)  # nothing more is kept
            raise AnswerTooLarge(
                f"the answer is larger than the {self.max_size} characters kept of an answer "
                "that is not streamed"
            )

    def _switch(self, run: int) -> None:
        """A run of another kind begins, or a call (``run`` 0): the run going on ends where
        its field is (Rule 6)."""
        ended = self._run
        if ended:
            self._grow(RUN)
            pieces = (
                self._reasoning
                if ended == _REASONING
                else self._text
                if ended == _TEXT
                else self._refusal
            )
            self._order.append(pieces.mark() << 3 | ended)
        self._run = run

    def _place(self, index: int) -> None:
        """A call's first event: its place (Rule 6)."""
        self._switch(0)
        self._grow(RUN)
        self._order.append(index << 3 | _CALL)

    def add(self, event: Event | TextRun) -> None:
        """Fold one event in; nothing after the stream's end is read (Rule 4).

        Raises:
            AnswerTooLarge: the answer passed ``max_size`` (Rule 5).
        """
        if self.ended is not None:
            return
        match event:
            case TextDelta():
                if self._run != _TEXT and event.text:
                    self._switch(_TEXT)
                self._grow(len(event.text))
                self._text.append(event.text)
            case TextRun():
                for delta in event.deltas():
                    self.add(delta)
            case ReasoningDelta():
                if self._run != _REASONING and event.text:
                    self._switch(_REASONING)
                self._grow(len(event.text))
                self._reasoning.append(event.text)
                self._tail.append(event.text)
                self._carrier = self._carrier or event.carrier
            case ReasoningSignature():
                # held too (a redacted block is only this), with the block that holds it
                self._grow(BLOCK + RUN + len(event.signature) + len(event.item_id or ""))
                if self._run != _REASONING:
                    self._switch(_REASONING)
                text = "" if event.redacted else self._tail.text()
                self._blocks.append(ReasoningBlock.closed_by(event, text))
                self._order.append(self._reasoning.mark() << 3 | _BLOCK)
                if not event.redacted:  # a redacted block has no text: the tail is not its
                    self._tail = Pieces()
                self._carrier = self._carrier or event.carrier
            case RefusalDelta():
                if self._run != _REFUSAL and event.text:
                    self._switch(_REFUSAL)
                self._grow(len(event.text))
                self._refusal.append(event.text)
            case ToolCallDelta():
                if event.index not in self._begun:
                    self._place(event.index)
                    self._begun.add(event.index)
            case ToolCall():
                self._grow(CALL + len(event.arguments) + len(event.id) + len(event.name))
                if event.index in self._begun:
                    self._begun.remove(event.index)  # (its deltas took its place)
                else:
                    self._place(event.index)
                self._calls.append(event)
            case Finished():
                self._finish = event
            case Usage():
                self._usage = event
            case FilterVerdict():
                self._grow(verdict(event))  # held too (`svir_proto._weights`)
                self._verdicts.append(event)
            case StreamStarted() if not self._identified:
                self._identified = True
                self.response_id = event.response_id or self.response_id
                self.model = event.model or self.model
                self.created = event.created or self.created
            case StreamFailed():
                self._error = self._error or event.error
            case StreamEnded():
                self.ended = event

    def extend(self, events: Iterable[Event | TextRun]) -> None:
        """`add` each event, in order."""
        for event in events:
            self.add(event)

    @property
    def error(self) -> Failure | None:
        """The failure the stream reported, if it did."""
        return self._error

    def _segments(self, reasoning: str, text: str, refusal: str) -> tuple[AnswerSegment, ...]:
        """The order (Rule 6) as the result's segments, the run going on last, then the
        calls that have no place of their own. The calls keep their order (the decoders',
        the index's), each placed where its first event came unless a call before it came
        later: then right after that one, as a stream that writes calls in their order
        places it (attack 50b N3: call 1 begun before some text and call 0 after it, the
        k-th place took the k-th call, call 0 before the text); a place no call took (a cut)
        has none."""
        made: list[tuple[SegmentField, int, int]] = []
        at = [0] * 6  # by kind: where its next segment begins

        def put(kind: int, end: int) -> None:
            start = at[kind]
            if end > start:
                at[kind] = end
                field = _FIELDS[kind]
                if made and made[-1][0] == field and made[-1][2] == start:
                    start = made.pop()[1]  # (a call between them had no place: one run)
                made.append((field, start, end))

        calls = self._calls
        first: dict[int, list[int]] = {}  # by index: the places its calls' first events took
        places = [entry >> 3 for entry in self._order if entry & 7 == _CALL]
        for place in range(len(places) - 1, -1, -1):
            first.setdefault(places[place], []).append(place)
        at_place = [0] * len(places)  # by place: how many calls go at it
        place = 0
        for call in calls if places else ():  # (each whole call took a place, or its index)
            mine = first.get(call.index)
            place = max(place, mine.pop() if mine else place)
            at_place[place] += 1
        upto = list(accumulate(at_place))  # by place: how many calls go at it or before it
        j = 0
        for entry in self._order:
            kind = entry & 7
            if kind == _BLOCK:
                put(_REASONING, entry >> 3)
                put(_BLOCK, at[_BLOCK] + 1)
            elif kind == _CALL:
                put(_CALL, upto[j])
                j += 1
            else:
                put(kind, entry >> 3)
        ends = (0, len(reasoning), len(self._blocks), len(text), len(refusal), len(calls))
        for kind in (self._run, _REASONING, _BLOCK, _TEXT, _REFUSAL, _CALL):
            put(kind, ends[kind])
        return tuple(AnswerSegment(field=f, start=start, end=end) for f, start, end in made)

    def result(self) -> Completion:
        """The answer as far as it came (whole once `ended` says ``done``)."""
        finish = self._finish
        done = self.ended is not None and self.ended.done
        text = self._text.text()
        reasoning = self._reasoning.text()
        refusal = self._refusal.text()
        return Completion(
            text=text,
            reasoning=reasoning,
            reasoning_carrier=self._carrier,
            reasoning_blocks=tuple(self._blocks),
            refusal=refusal,
            tool_calls=tuple(self._calls),
            finish_reason=None if finish is None else finish.reason,
            finish_raw=None if finish is None else finish.raw,
            usage=self._usage,
            filter_verdicts=tuple(self._verdicts),
            filtered=any(v.filtered for v in self._verdicts),
            error=self._error,
            done=done,
            closed=self.ended is not None,
            cut=self.ended is not None and not done,
            complete=done and finish is not None and self._error is None,
            segments=self._segments(reasoning, text, refusal),
        )


BLOCKED: Final = Finished(reason=FinishReason.CONTENT_FILTER, raw="content_filter")
"""The finish of an answer that a content-filter verdict blocked (`FilterVerdict.blocks`),
whatever finish the stream gave. A dialect with no verdicts says so by its finish (fidelity 43
F01: the answer went on as approved)."""


def no_value(raw: str, whose: str, sent: str) -> str:
    """What an encoder says of a finish its dialect has no value for (fidelity 43 F03: a
    paused or failed turn, written as it came or as the nearest, not as a plain end)."""
    return f"finish {raw!r} is none of {whose}: sent as {sent}"


def finished_of(result: Completion, *, verdicts: bool = False) -> Finished | None:
    """The `Finished` a result's finish came in (``None`` when it has none), for the mappings
    the encoders make from one; ``verdicts``: `BLOCKED` when a verdict blocked the answer, for
    a dialect that has no verdicts (`replay` gives the finish as it came)."""
    if (
        verdicts
        and result.finish_reason is not None
        and any(v.blocks for v in result.filter_verdicts)
    ):
        return BLOCKED
    reason = result.finish_reason
    return (
        None if reason is None else Finished(reason=reason, raw=result.finish_raw or reason.value)
    )


def unsigned_reasoning(result: Completion) -> str:
    """The reasoning after the last signed block (Rule 1): all of it when none was signed."""
    signed = sum(len(block.text) for block in result.reasoning_blocks)
    return result.reasoning[signed:]


AnswerPart = ReasoningBlock | ReasoningDelta | TextDelta | RefusalDelta | ToolCall
"""One part of a whole answer (`ordered_parts`): a signed or redacted block of reasoning, reasoning
that no signature closed, text, refusal text, a call."""


def ordered_parts(result: Completion) -> Iterator[AnswerPart]:
    """The parts of ``result`` in the order its stream gave them (`Completion.segments`,
    Rule 6), as a stream of them is written, for a whole answer that writes them in order; for
    a result that kept none (a decoder's own), its signed blocks, its reasoning no signature
    closed, its text, its refusal, its calls.

    A signed block is one part where its signature came, with the reasoning of the run right
    before its signature (attack 48 F3: a block of the reasoning since the last signature,
    given where that began, joined two thoughts a call stood between, moved the second before
    the call, and signed the first, which Gemini had not signed): a stream cannot hold a block
    open across a call or text, so the reasoning of the block's earlier runs, and all of it
    when its signature came after other parts (Gemini signs a turn on its last part, after
    the text), went out unsigned, each where it came, and the signature in a block of its
    own. The whole answer is that stream's. A redacted block has no text: the reasoning right
    before it went out unsigned. Reasoning that no signature closed
    (`unsigned_reasoning`) is a `ReasoningDelta` of the result's carrier; text, refusal and
    calls are the text or the items of their segments."""
    blocks = result.reasoning_blocks
    reasoning = result.reasoning
    carrier = result.reasoning_carrier or "reasoning_content"
    ends: list[int] = []  # where each block's text ends in ``reasoning``
    signed = 0
    for block in blocks:
        signed += len(block.text)
        ends.append(signed)
    segments = result.segments
    if not segments:  # no order kept: the blocks, the unsigned reasoning, text, refusal, calls
        yield from blocks
        if len(reasoning) > signed:
            yield ReasoningDelta(text=reasoning[signed:], carrier=carrier)
        if result.text:
            yield TextDelta(text=result.text)
        if result.refusal:
            yield RefusalDelta(text=result.refusal)
        yield from result.tool_calls
        return
    own = (-1, "")  # a block and its own text: the run right before its signature
    for i, segment in enumerate(segments):
        start, end = segment.start, segment.end
        match segment.field:
            case "reasoning":
                cut = end
                after = segments[i + 1] if i + 1 < len(segments) else None
                if after is not None and after.field == "reasoning_blocks":
                    k = after.start  # the block whose signature came right after this run
                    if k < len(blocks) and ends[k] == end and not blocks[k].redacted:
                        cut = max(start, end - len(blocks[k].text))
                        own = (k, reasoning[cut:end])
                if cut > start:  # unsigned: of the carrier of the block whose text it is
                    k = bisect_right(ends, start)  # (review 49 1a), or the answer's
                    of = blocks[k].carrier if k < len(blocks) else carrier
                    yield ReasoningDelta(text=reasoning[start:cut], carrier=of)
            case "reasoning_blocks":
                for k in range(start, end):
                    block = blocks[k]
                    text = own[1] if own[0] == k else ""
                    yield block if block.text == text else attrs.evolve(block, text=text)
            case "text":
                yield TextDelta(text=result.text[start:end])
            case "refusal":
                yield RefusalDelta(text=result.refusal[start:end])
            case _:  # "tool_calls"
                yield from result.tool_calls[start:end]


def replay(result: Completion) -> Iterator[Event]:
    """The events that fold into ``result`` (`AnswerFold`), in the order the encoders read
    them: its `ordered_parts` (a signed block as its reasoning and then its signature), the
    content-filter verdicts, the finish, the usage, then the end (an error first, if there
    was one). A result that kept no order gives its whole calls after the usage, as the
    decoders emit them; one that kept it, each where it came (its fold has the same
    segments). A result that was not ``done`` ends as a cut."""
    ordered = bool(result.segments)
    for part in ordered_parts(result):
        if type(part) is ReasoningBlock:
            if part.text:
                yield ReasoningDelta(text=part.text, carrier=part.carrier)
            yield ReasoningSignature(
                signature=part.signature,
                carrier=part.carrier,
                redacted=part.redacted,
                item_id=part.item_id,
            )
        elif ordered or type(part) is not ToolCall:
            yield part
    yield from result.filter_verdicts
    finished = finished_of(result)
    if finished is not None:
        yield finished
    if result.usage is not None:
        yield result.usage
    if not ordered:
        yield from result.tool_calls
    if result.error is not None:
        yield StreamFailed(error=result.error)
    yield StreamEnded(complete=result.complete, done=result.done)


def cut_by_length(call: ToolCall, *, written: bool) -> str:
    """A call the answer's length cut, its arguments no object: said, as its dialect closed it
    with what it had (as Anthropic's own ``max_tokens`` does) or left it out."""
    return (
        f"tool call {call.index} ({call.name!r}) was cut by the answer's length: its arguments "
        "are no object, and " + ("its input is what came of them" if written else "it is left out")
    )


def not_an_object(call: ToolCall, must: str) -> Failure:
    """The failure of an answer whose call a dialect cannot write, its arguments being no JSON
    object (``must``: what the dialect's form needs them to be, ``a tool_use input``), with
    the reason they did not read when they began as one (attack 47 H3: say why). Every
    dialect that cannot write such a call ends with it, streamed or whole: a client would run
    the call with arguments the model never gave (attack 62 F3)."""
    text = call.arguments.strip()
    why = ""
    if text[:1] == "{":  # an object, but not one that reads
        try:
            canonical(text)
        except (ValueError, RecursionError) as exc:
            why = f" ({exc})"
    return Failure(
        kind=FailureKind.UNEXPECTED,
        message=f"the upstream broke the protocol: the arguments of tool call {call.index} "
        f"({call.name!r}) are not a JSON object, which {must} must be{why}",
        code="invalid_tool_arguments",
    )
