"""A stream's events folded into its whole answer, and back: for a server that answers a client
that asked for no stream from an upstream that streams (the gateway, translating), and for a
library that serves whole answers from any decoder's `Completion`.

`AnswerFold` takes the vocabulary's events as a decoder gives them and makes the `Completion`
each dialect's ``answer`` writes as that dialect's one JSON object (`DialectSpec.answer`);
`replay` gives the events of a `Completion` again, in the order the encoders read.

Rule 1 (text): text, refusal and reasoning deltas are joined. Reasoning that a
    `ReasoningSignature` closes is a block (`Completion.reasoning_blocks`), in order; a
    redacted block has no text, so the reasoning before it is the next block's; what comes
    after the last signature is the unsigned tail: ``reasoning`` is every block's text, then
    the tail (`unsigned_reasoning`). A `TextRun` is its deltas.
Rule 2 (tool calls): the whole `ToolCall` events, which every decoder emits once the stream
    has ended and its calls were checked; their deltas are read for nothing here.
Rule 3 (the rest): the last `Finished` and the last `Usage` (a server may send usage on every
    chunk); the content-filter verdicts as they came; the identity of the first
    `StreamStarted` (``response_id``, ``model``, ``created``: each one it sets).
Rule 4 (the end): `StreamFailed` is the answer's ``error``, `StreamEnded` its end: ``done``
    when the stream ended with its marker, else a cut. Nothing after the end is read.
Rule 5 (bound): at most ``max_size`` characters of text, reasoning, refusal, arguments and
    signatures are kept, and the ids and names of tool calls and reasoning blocks' item ids,
    each verdict, block and call weighing a fixed amount too (`svir_proto._weights`); past it,
    `AnswerTooLarge`, and the fold keeps nothing more. The text is held as it
    comes at about its size, however the upstream cut it (`svir_proto._pieces`).

No I/O here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Final

from ._dialect import DEFAULT_MAX_RESULT_SIZE
from ._pieces import Pieces
from ._weights import BLOCK, CALL, VERDICT, verdict
from .errors import AnswerTooLarge, Failure
from .events import (
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
    StreamEnded,
    StreamFailed,
    StreamStarted,
    TextDelta,
    TextRun,
    ToolCall,
    Usage,
)

__all__ = [
    "BLOCKED",
    "VERDICT",
    "AnswerFold",
    "finished_of",
    "no_value",
    "replay",
    "unsigned_reasoning",
]


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

    def add(self, event: Event | TextRun) -> None:
        """Fold one event in; nothing after the stream's end is read (Rule 4).

        Raises:
            AnswerTooLarge: the answer passed ``max_size`` (Rule 5).
        """
        if self.ended is not None:
            return
        match event:
            case TextDelta():
                self._grow(len(event.text))
                self._text.append(event.text)
            case TextRun():
                for delta in event.deltas():
                    self.add(delta)
            case ReasoningDelta():
                self._grow(len(event.text))
                self._reasoning.append(event.text)
                self._tail.append(event.text)
                self._carrier = self._carrier or event.carrier
            case ReasoningSignature():
                # held too (a redacted block is only this), with the block that holds it
                self._grow(BLOCK + len(event.signature) + len(event.item_id or ""))
                text = "" if event.redacted else self._tail.text()
                self._blocks.append(ReasoningBlock.closed_by(event, text))
                if not event.redacted:  # a redacted block has no text: the tail is not its
                    self._tail = Pieces()
                self._carrier = self._carrier or event.carrier
            case RefusalDelta():
                self._grow(len(event.text))
                self._refusal.append(event.text)
            case ToolCall():
                self._grow(CALL + len(event.arguments) + len(event.id) + len(event.name))
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

    def result(self) -> Completion:
        """The answer as far as it came (whole once `ended` says ``done``)."""
        finish = self._finish
        done = self.ended is not None and self.ended.done
        return Completion(
            text=self._text.text(),
            reasoning=self._reasoning.text(),
            reasoning_carrier=self._carrier,
            reasoning_blocks=tuple(self._blocks),
            refusal=self._refusal.text(),
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


def replay(result: Completion) -> Iterator[Event]:
    """The events that fold into ``result`` (`AnswerFold`), in the order the encoders read
    them: the signed reasoning blocks and the unsigned tail, the text, the refusal, the
    content-filter verdicts, the finish, the usage, the whole calls, then the end (an error
    first, if there was one). A result that was not ``done`` ends as a cut."""
    for block in result.reasoning_blocks:
        if block.text:
            yield ReasoningDelta(text=block.text, carrier=block.carrier)
        yield ReasoningSignature(
            signature=block.signature,
            carrier=block.carrier,
            redacted=block.redacted,
            item_id=block.item_id,
        )
    tail = unsigned_reasoning(result)
    if tail:
        yield ReasoningDelta(text=tail, carrier=result.reasoning_carrier or "reasoning_content")
    if result.text:
        yield TextDelta(text=result.text)
    if result.refusal:
        yield RefusalDelta(text=result.refusal)
    yield from result.filter_verdicts
    finished = finished_of(result)
    if finished is not None:
        yield finished
    if result.usage is not None:
        yield result.usage
    yield from result.tool_calls
    if result.error is not None:
        yield StreamFailed(error=result.error)
    yield StreamEnded(complete=result.complete, done=result.done)
