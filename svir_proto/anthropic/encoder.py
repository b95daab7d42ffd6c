"""Events to the Anthropic Messages stream: the server side of the dialect, for a gateway that
answers Anthropic clients (the ``anthropic`` SDK, coding agents) from any upstream.

Anthropic's API reference, "Streaming Messages", gives the shape; the events come in the order
any of our decoders emits them (`ToolCallDelta` pieces as they come, then `Finished`, `Usage`,
the whole `ToolCall` events, `StreamEnded`; or only whole calls; a `StreamFailed` anywhere).

Rule 1 (the message): ``message_start`` goes out with the first event after `StreamStarted`
    (so that a `Usage` known at once, as from an Anthropic upstream, is in it). Its ``usage``
    is what is known then; a count not known yet is written as 0 there, as the SDK needs the
    object, and the real count follows in ``message_delta`` (which, since 2025, carries input
    and cache counts too, and which clients take over ``message_start``'s).
Rule 2 (blocks): text, thinking and tool_use blocks are opened and closed in order, one at a
    time, numbered from 0. Text after reasoning opens a text block: nothing is lost at the
    switch. A `ReasoningSignature` is a ``signature_delta`` that closes its thinking block; a
    redacted one is a ``redacted_thinking`` block whose ``data`` is the signature.
Rule 3 (tool calls): a `ToolCallDelta` streams as ``input_json_delta`` in its call's
    ``tool_use`` block, opened once the call's id is known, its arguments begin and its name
    is whole (`svir_proto._names`: with ``declared_tools``, a declared name no other declared
    name goes on from; a name may come in pieces, even after the arguments began, as in wire
    reference 3.3, and a block cannot be renamed; or a name that text, thinking or the end
    followed, which no server continues). Blocks cannot interleave and come in call order,
    so the pieces of a call whose turn has not come (another call's block is open, or an
    earlier call has not begun) are held until it comes: the end, a failure or a cut, where
    they are written whole (the only memory that grows with the answer). So the first call
    streams as it comes and a later one arrives at once, whole, never lost nor out of order,
    whatever the upstream interleaved. A whole `ToolCall` whose call was streamed is not
    sent again; one that was not (LLM-Stream upstreams send only whole calls) is written
    whole: start, one ``input_json_delta``, stop.
    A call whose arguments are not a JSON object (``tool_use.input`` always is one) ends the
    stream as a failure (Rule 6), not as a success whose input the client cannot read.
    Text, thinking or a signature that comes while a call's block is open and its arguments
    are not yet a JSON object is held and written once the block closes (as soon as its
    arguments are a JSON object, at the call's whole `ToolCall`, the next call's turn or the
    end), so that the rest of the arguments still goes in the call's block (attack 41 F4: the
    block was closed, the rest lost, and the stream ended as a success); past `MAX_DEFERRED`
    characters held, the block closes, and arguments that come after it fail the stream at
    the call's whole `ToolCall`. What was held is written in a block left open, so that the
    text after it joins it, and a later call opens at its turn: the blocks come in the order
    the whole answer has (attack 45 F4: once anything was held, the text after the call was
    held with it, and the later calls till the end). Whether the arguments are an object is
    asked at a piece that ends with ``}``, within `CHECK_COST` times their length in all.
Rule 4 (the end): `Finished` and `Usage` are held until `StreamEnded`; then the open block is
    closed, held calls are written, and ``message_delta`` carries ``stop_reason`` (the raw
    value when it is Anthropic's and means the same, else ``end_turn``, ``max_tokens``,
    ``tool_use``, ``refusal`` for STOP, LENGTH, TOOL_CALLS, CONTENT_FILTER, and ``refusal``
    for a STOP after refusal text, an OpenAI ``refusal``, written as text; OTHER is its raw
    value, Anthropic's or not: ``end_turn`` would make a turn that failed or paused upstream
    (Gemini's ``MALFORMED_FUNCTION_CALL``) look finished, and a client reads an unknown
    ``stop_reason`` as what it is) and the final usage, then ``message_stop``.
    `StreamEnded(done=False)` is a cut: no ``message_stop``, so the client sees it; a finish
    or usage that came before the cut still goes out in a ``message_delta``.
Rule 5 (usage): Anthropic counts input without the cache: ``input_tokens`` is
    ``prompt_tokens`` less ``cached_tokens`` and ``cache_creation_tokens``, which go as
    ``cache_read_input_tokens`` and ``cache_creation_input_tokens``; ``reasoning_tokens`` as
    ``output_tokens_details.thinking_tokens``; a ``total_tokens`` that is not input plus
    output under ``"vendor:svir": {"total_tokens": N}`` (our decoder reads it back).
Rule 6 (failures): `StreamFailed` is an ``error`` event with the ``error.type`` of its kind
    (`svir_proto.anthropic.status`), and the stream ends there; a finish or usage that came
    before it goes out first in a ``message_delta``, as at a cut.

What this dialect has no field for is listed in `MessagesStreamEncoder.lost` as it happens.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Collection
from typing import Any, Final

from .._json import canonical, dumps
from .._names import name_settled
from .._pieces import Pieces
from .._signatures import thinking_signature
from ..answer import BLOCKED, cut_by_length, no_value
from ..answer import not_an_object as answer_not_an_object
from ..errors import Failure, FailureKind
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
from ._wire import STOP_OF, STOP_REASONS
from .status import error_object
from .stream import SVIR_USAGE

__all__ = [
    "MessagesStreamEncoder",
    "an_object",
    "not_an_object",
    "stop_reason_of",
    "usage_object",
]

_TEXT_DELTA: Final = (
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":',
    b',"delta":{"type":"text_delta","text":',
    b"}}\n\n",
)


NO_VERDICTS: Final = "content-filter verdicts have no field in the Messages API"
NO_USAGE: Final = "usage: the upstream gave none, so message_delta says 0 output tokens"
REFUSAL_AS_TEXT: Final = "refusal text: written as text, the turn's stop_reason refusal"
"""What the encoder says it lost, and the whole answer (`svir_proto.anthropic.answer`)."""


def unvalued(finished: Finished) -> list[str]:
    """A finish none of the Messages API's stop reasons, said (fidelity 43 F03: a paused or
    failed turn goes as it came, not as ``end_turn``)."""
    if finished.reason is FinishReason.OTHER and finished.raw not in STOP_REASONS:
        return [no_value(finished.raw, "the Messages API's stop reasons", "it came")]
    return []


def stop_reason_of(finished: Finished, *, refused: bool = False) -> str:
    """The ``stop_reason`` for a finish (Rule 4); ``refused``: the answer was a refusal (an
    OpenAI ``refusal``), which Anthropic says by ``refusal``, not by the text alone."""
    if STOP_REASONS.get(finished.raw) is finished.reason:
        reason = finished.raw
    elif finished.reason is FinishReason.OTHER and finished.raw:
        return finished.raw  # not end_turn: a failed or paused turn would look finished
    else:
        reason = STOP_OF[finished.reason]
    return "refusal" if refused and reason == "end_turn" else reason


def usage_object(usage: Usage, *, start: bool = False) -> dict[str, Any]:
    """Anthropic's ``usage`` object for ``usage`` (Rule 5); ``start``: for ``message_start``,
    which always has ``input_tokens``."""
    cached = usage.cached_tokens
    creation = usage.cache_creation_tokens
    out: dict[str, Any] = {}
    if usage.prompt_tokens is not None:
        out["input_tokens"] = max(usage.prompt_tokens - (cached or 0) - (creation or 0), 0)
    elif start:
        out["input_tokens"] = 0
    if creation is not None:
        out["cache_creation_input_tokens"] = creation
    if cached is not None:
        out["cache_read_input_tokens"] = cached
    out["output_tokens"] = usage.completion_tokens or 0
    if usage.reasoning_tokens is not None:
        out["output_tokens_details"] = {"thinking_tokens": usage.reasoning_tokens}
    total = usage.total_tokens
    if total is not None and (
        usage.prompt_tokens is None
        or usage.completion_tokens is None
        or total != usage.prompt_tokens + usage.completion_tokens
    ):
        out[SVIR_USAGE] = {"total_tokens": total}
    return out


MAX_DEFERRED: Final = 1 << 20
"""Characters of text and thinking held while a call's block waits for the rest of its
arguments (Rule 3), each delta counted `DEFER_COST` more."""
DEFER_COST: Final = 64
CHECK_COST: Final = 8
"""Characters parsed, at most, for each of a call's arguments to see whether they are whole
while something is held (Rule 3): a piece ending with ``}`` in every delta of a long string
would parse them all each time; past it, they are taken whole when the block closes."""


_NAMELESS: Final = sys.maxsize
"""`_Call.named_at` of a call whose name has not begun: no text ends it."""


class _Call:
    __slots__ = ("args", "broken", "checked", "id", "name", "named_at", "order", "sent", "state")

    def __init__(self, order: int) -> None:
        self.order = order  # how many calls had begun before it
        self.id = ""
        self.name = ""
        self.args = Pieces()  # pieces held while the call waits for its turn
        self.sent = Pieces()  # what its open block was given (Rule 3)
        self.state = 0  # 0: not written yet, 1: its block is open, 2: written
        self.broken = False  # arguments came after its block was closed
        self.checked = 0  # characters parsed to see whether ``sent`` is whole (`CHECK_COST`)
        self.named_at = _NAMELESS  # `MessagesStreamEncoder._texts` when its name began


class MessagesStreamEncoder:
    """Write vocabulary events as Messages API stream events (``event: NAME`` / ``data:``).

    Args:
        model: the model every ``message_start`` names, unless `StreamStarted` names one.
        message_id: the message id, unless `StreamStarted` gives one.
        created: accepted for the encoders' common signature; the Messages stream has no
            timestamp, so it is not written.
        declared_tools: the names of the tools the request declared, to know when a streamed
            call's name is whole (Rule 3); ``None``: once it is not empty.

    Attributes:
        lost: what this dialect could not carry, one sentence each, as it happened.
        done: ``message_stop`` (or the ``error`` event that ends a failed stream) was written.
    """

    def __init__(
        self,
        *,
        model: str = "",
        message_id: str = "msg_svir",
        created: int = 0,
        declared_tools: Collection[str] | None = None,
    ):
        self.model = model
        self.declared_tools = declared_tools
        self.message_id = message_id
        self.created = created
        self.lost: list[str] = []
        self.done = False
        self._identified = False  # a StreamStarted came: message_start is due
        self._started = False
        self._ended = False
        self._index = 0  # the next block's index
        self._open: str | None = None  # "text", "thinking", "tool" or None
        self._open_call: _Call | None = None
        self._calls: dict[int, _Call] = {}
        self._finish: Finished | None = None
        self._blocked = False  # a verdict blocked the answer: its finish is `BLOCKED`
        self._cut_call: tuple[ToolCall, bool] | None = None  # no object (and written): the
        # finish decides whether it is a failure or the answer's length cut it
        self._refused = False  # a refusal's text was written: stop_reason says "refusal"
        self._usage: Usage | None = None
        self._deferred: deque[Any] = deque()  # what came while a call's block waits (Rule 3): a
        self._deferred_size = 0  # signature, or a run [its kind, its carrier, its texts]
        self._deferred_after = 0  # how many calls had begun when the first of it came
        self._next_call = 0  # every call below this index has opened its block
        self._texts = 0  # text, thinking or signatures that came: what ends a name begun
        # before (Rule 3; attack 51 F1: not one that had not begun, whose first piece it took)

    def _lose(self, what: str) -> None:
        if what not in self.lost:
            self.lost.append(what)

    @staticmethod
    def _event(name: str, obj: dict[str, Any]) -> bytes:
        return b"event: " + name.encode() + b"\ndata: " + dumps(obj) + b"\n\n"

    def _begin(self, usage: Usage | None = None) -> bytes:
        if self._started:
            return b""
        self._started = True
        counts = usage_object(usage or Usage(), start=True)
        message: dict[str, Any] = {
            "id": self.message_id,
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": self.model,
            "stop_reason": None,
            "stop_sequence": None,
            "usage": counts,
        }
        return self._event("message_start", {"type": "message_start", "message": message})

    def _close(self, *, keep: bool = False) -> bytes:
        """Close the open block; after a call's, write what was deferred (Rule 3), leaving no
        block open (``keep``: the last one it opened stays open, and a call begun before what
        was deferred opens first, which what was deferred waits for in turn; one whose
        arguments are whole already closes at once, then the next one's turn: a loop, not a
        call per call, however many are held: review 51 r1)."""
        piece, opened = self._close_one(keep)
        parts = [piece]  # (nearly always the only one: a join of one is that one)
        while opened is not None and an_object(opened.sent.text(), empty=False):
            piece, opened = self._close_one(keep)
            parts.append(piece)
        return b"".join(parts)

    def _close_one(self, keep: bool) -> tuple[bytes, _Call | None]:
        """`_close`'s one step: the bytes, and the call whose block it opened first, if any
        (only with ``keep``)."""
        if self._open is None:
            return b"", None
        call = self._open_call
        if call is not None:
            call.state = 2
            call.sent = Pieces()
            self._open_call = None
        self._open = None
        self._index += 1
        out = self._event(
            "content_block_stop", {"type": "content_block_stop", "index": self._index - 1}
        )
        if call is None or not self._deferred:
            return out, None
        after = self._begun_before(self._deferred_after) if keep else None
        if after is not None:  # attack 46 G3: f, g begun, text B: f, g, then B
            return out + self._open_tool(after), after
        deferred, size = self._deferred, self._deferred_size
        self._deferred, self._deferred_size = deque(), 0
        parts = [out]
        while deferred:
            held = deferred.popleft()  # (none sliced off the rest: review 51 r1)
            size -= _held_size(held)
            if type(held) is list:  # a run: one delta
                kind, carrier, texts = held
                text = "".join(texts)
                event = kind(text=text, carrier=carrier) if carrier else kind(text=text)
                parts.append(self._content(event))
            elif type(held) is _Call:  # a call began here: its block goes here if it may
                after = self._begun_before(held.order + 1) if keep else None
                if after is None:
                    continue
                self._deferred, self._deferred_size = deferred, size  # (which waits for it)
                self._deferred_after = held.order + 1  # (review 46 M1: what it holds)
                parts.append(self._open_tool(after))
                return b"".join(parts), after
            else:
                parts.append(self._content(held))
        if not keep:
            parts.append(self._close())
        return b"".join(parts), None

    def _new_call(self, index: int) -> _Call:
        """A call's first event: what is deferred notes where it began (attack 46 G3)."""
        call = self._calls[index] = _Call(len(self._calls))
        if self._deferred:
            self._deferred.append(call)
        return call

    def _content_now(self, event: Event, text: str) -> bytes:
        """Text, thinking or a signature (of ``text``): written, unless a call's block is open
        (then it waits for the calls begun before it, or for that call's arguments)."""
        out = b""
        if text:  # (Rule 3: what comes after a name ends it; nothing does not: review 50 r9)
            self._texts += 1
        if self._open_call is None:  # a call begun before it, its arguments still to come,
            after = self._begun_before(len(self._calls))  # goes first (review 46 M2)
            if after is None:
                return self._content(event)
            out = self._open_tool(after)
        out += self._calls_first()
        if self._defer(event, text):
            return out
        return out + self._content(event)

    def _calls_first(self) -> bytes:
        """Before text or thinking that comes while a call's block is open with its arguments
        whole: the calls begun before it whose blocks are next open first (and close, if
        theirs are whole too), as the whole answer has them before it (attack 46 G3)."""
        if self._deferred:
            return b""
        out = b""
        call = self._open_call
        assert call is not None  # (asked only while a call's block is open)
        while (after := self._begun_before(len(self._calls))) is not None and an_object(
            call.sent.text(), empty=False
        ):
            out += self._open_tool(after)  # (which closes the open block)
            call = after
        return out

    def _begun_before(self, calls: int) -> _Call | None:
        """The call whose block is next (`_turn`), if it began before ``calls`` calls had and
        its block may open (its id and name are known)."""
        index = self._next_call
        while (call := self._calls.get(index)) is not None and call.state:
            index += 1
        self._next_call = index  # (every call before it has opened its block)
        if call is None or call.order >= calls or not call.id or not self._named(call):
            return None
        return call

    def _defer(self, event: Event, text: str) -> bool:
        """Hold ``event`` (of ``text``) while the open call's block waits for the rest of
        its arguments (Rule 3); ``False``: write it now. A delta of the kind of the last one
        held joins it; each counts `DEFER_COST` characters more, so that a million
        one-character deltas are not held (review 41: their flush took minutes)."""
        call = self._open_call
        assert call is not None  # (asked only while a call's block is open)
        if not self._deferred:
            if an_object(call.sent.text(), empty=False):
                return False  # its arguments are whole: the block may close (attack 46 G2:
                # not when they are only blanks so far, which the rest of the object follows)
            self._deferred_size = 0  # (review 46 M1: one that went over it held nothing)
            self._deferred_after = len(self._calls)
        size = self._deferred_size + len(text) + DEFER_COST
        if size > MAX_DEFERRED:
            return False  # the block closes, what was held is written, then this
        self._deferred_size = size  # (what is held counts: `_held_size` of each)
        if isinstance(event, ReasoningSignature):
            self._deferred.append(event)
            return True
        carrier = event.carrier if isinstance(event, ReasoningDelta) else None
        last = self._deferred[-1] if self._deferred else None
        if type(last) is list and last[0] is type(event) and last[1] == carrier:
            last[2].append(text)
        else:
            self._deferred.append([type(event), carrier, [text]])
        return True

    def _start_block(self, kind: str, block: dict[str, Any]) -> bytes:
        out = self._begin() + self._close()
        self._open = kind
        return out + self._event(
            "content_block_start",
            {"type": "content_block_start", "index": self._index, "content_block": block},
        )

    def _delta(self, delta: dict[str, Any]) -> bytes:
        return self._event(
            "content_block_delta",
            {"type": "content_block_delta", "index": self._index, "delta": delta},
        )

    def _text(self, text: str) -> bytes:
        out = b""
        if self._open != "text":
            out = self._start_block("text", {"type": "text", "text": ""})
        if not text:
            return out
        head, middle, tail = _TEXT_DELTA
        return out + head + str(self._index).encode() + middle + dumps(text) + tail

    def _thinking(self) -> bytes:
        if self._open == "thinking":
            return b""
        return self._start_block("thinking", {"type": "thinking", "thinking": "", "signature": ""})

    def _open_tool(self, call: _Call) -> bytes:
        out = self._start_block(
            "tool", {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
        )
        call.state = 1
        self._open_call = call
        args = call.args.text()
        call.args.set("")
        if args:
            call.sent.append(args)
            out += self._delta({"type": "input_json_delta", "partial_json": args})
        return out

    def _whole(self, call: _Call, arguments: str) -> bytes:
        """A call not streamed, written whole (Rule 3)."""
        call.args.set(arguments)
        return self._open_tool(call) + self._close()

    def _tool_delta(self, event: ToolCallDelta) -> bytes:
        call = self._calls.get(event.index)
        if call is None:
            call = self._new_call(event.index)
        if event.id and not call.id:
            call.id = event.id
        if event.name:
            if call.state:
                self._lose("a tool call's name continued after its block opened")
            else:
                if not call.name:
                    call.named_at = self._texts
                call.name += event.name
        if call.state == 1:
            if not event.arguments:
                return b""
            call.sent.append(event.arguments)
            out = self._delta({"type": "input_json_delta", "partial_json": event.arguments})
            if self._deferred and self._whole_now(call, event.arguments):
                out += self._close(keep=True)  # what waited goes now (Rule 3)
            return out
        if call.state == 2:
            if event.arguments:
                self._lose("tool-call arguments that came after their call's block was closed")
                if event.arguments.strip():  # (Rule 3: fails at its whole ToolCall)
                    call.broken = True
            return b""
        if event.arguments:
            call.args.append(event.arguments)
        if (
            call.args
            and call.id
            and self._named(call)
            and self._open != "tool"
            and self._turn(event.index)
        ):
            return self._open_tool(call)
        return b""  # held: not its turn yet, or its id or whole name is not known yet

    def _named(self, call: _Call) -> bool:
        """Whether the call's name is whole (Rule 3): settled (`svir_proto._names`), or
        followed by text, thinking or a signature, or the end (attack 49b F2: a call held
        till the end for a name that never grew was written after the text that followed
        it, where the whole answer has it before)."""
        if call.named_at < self._texts:
            return bool(call.name)
        return name_settled(call.name, self.declared_tools)

    def _whole_now(self, call: _Call, piece: str) -> bool:
        """Whether the open call's arguments became a JSON object with ``piece`` (Rule 3:
        asked only at a piece ending with ``}``, within `CHECK_COST`)."""
        if not piece.rstrip().endswith("}"):
            return False
        size = call.sent.mark()
        if call.checked + size > CHECK_COST * size:
            return False
        call.checked += size
        return an_object(call.sent.text(), empty=False)

    def _turn(self, index: int) -> bool:
        """Call ``index`` may open its block: every call before it has opened its own, so the
        blocks come in call order (and no other call's block is open)."""
        calls = self._calls
        return all(k in calls and calls[k].state for k in range(index))

    def _held(self) -> bytes:
        """Close the open block and write the calls still held, whole, in call order: those
        begun before what was deferred before it (attack 49b F2)."""
        self._texts = _NAMELESS  # the end: every name is whole
        parts = []
        while self._open_call is not None:
            parts.append(self._close(keep=True))
        parts.append(self._close())
        for _, call in sorted(self._calls.items()):
            if call.state == 0 and call.id and call.name:
                parts += (self._begin(), self._whole(call, call.args.text()))
        return b"".join(parts)

    def _end(self) -> bytes:
        out = self._begin() + self._held()
        finish = self._finish
        usage = self._usage
        if usage is None:
            self._lose(NO_USAGE)
        delta = {
            "stop_reason": (
                None if finish is None else stop_reason_of(finish, refused=self._refused)
            ),
            "stop_sequence": None,
        }
        out += self._event(
            "message_delta",
            {"type": "message_delta", "delta": delta, "usage": usage_object(usage or Usage())},
        )
        return out + self._event("message_stop", {"type": "message_stop"})

    def _cut(self) -> bytes:
        """A cut stays a cut (Rule 4) and an error ends the stream (Rule 6): no
        ``message_stop``; but a finish or usage that came before goes out in a
        ``message_delta``, as the upstream said them."""
        out = self._held()
        if self._finish is None and self._usage is None:
            return out if out or not self._identified else self._begin()
        out = self._begin() + out
        delta = {
            "stop_reason": (
                None
                if self._finish is None
                else stop_reason_of(self._finish, refused=self._refused)
            ),
            "stop_sequence": None,
        }
        usage = usage_object(self._usage or Usage())
        return out + self._event(
            "message_delta", {"type": "message_delta", "delta": delta, "usage": usage}
        )

    def _content(self, event: Event) -> bytes:
        """Text, thinking, a signature or a refusal's text, written now."""
        match event:
            case TextDelta():
                return self._begin() + self._text(event.text)
            case ReasoningDelta():
                out = self._thinking()
                if event.text:
                    out += self._delta({"type": "thinking_delta", "thinking": event.text})
                return out
            case ReasoningSignature() if event.redacted:
                out = self._start_block(
                    "redacted", {"type": "redacted_thinking", "data": event.signature}
                )
                return out + self._close()
            case ReasoningSignature():
                out = self._thinking()
                signature = thinking_signature(event.signature, event.carrier, event.item_id)
                out += self._delta({"type": "signature_delta", "signature": signature})
                return out + self._close()
            case RefusalDelta():
                self._lose(REFUSAL_AS_TEXT)
                self._refused = self._refused or bool(event.text)
                return self._begin() + self._text(event.text)
        return b""  # pragma: no cover - only those four come here

    def encode(self, event: Event) -> bytes:
        """The bytes for one event (often ``b""``: held until its turn, or not carried).

        After the stream has ended (``message_stop``, an ``error``, a cut) nothing more is
        written.
        """
        if self._ended:
            return b""
        match event:
            case TextDelta() | ReasoningDelta() | RefusalDelta():
                return self._content_now(event, event.text)
            case ReasoningSignature():
                return self._content_now(event, event.signature)
            case ToolCallDelta():
                return self._begin() + self._tool_delta(event)
            case ToolCall():
                call = self._calls.get(event.index)
                if call is None:
                    call = self._new_call(event.index)
                if not an_object(event.arguments):  # a failure, unless the answer's length
                    finish = self._finish  # cut it (review 43 M7): the finish says which
                    if finish is not None and finish.reason is not FinishReason.LENGTH:
                        call.state = 2  # not written whole at the end either
                        return self.encode(StreamFailed(error=not_an_object(event)))
                    written = call.state != 0
                    out = self._close() if call is self._open_call else b""
                    call.state = 2
                    if finish is None:
                        self._cut_call = self._cut_call or (event, written)
                    else:
                        self._lose(cut_by_length(event, written=written))
                    return out
                if call.broken:  # (Rule 3: what its block was given is not all)
                    return self.encode(StreamFailed(error=_cut_short(event.index, event.name)))
                if call is self._open_call:  # whole: what waited for it follows, after the
                    return self._close(keep=True)  # calls begun before it (attack 49b F2)
                if call.state != 0:
                    return b""  # streamed already
                call.id, call.name = event.id, event.name
                return self._whole(call, event.arguments)
            case StreamStarted():
                self._identified = True
                self.message_id = event.response_id or self.message_id
                self.model = event.model or self.model
                return b""  # written with the next event (Rule 1)
            case Usage():
                self._usage = event
                return self._begin(event)  # in message_start if nothing was written yet
            case Finished():
                self._finish = BLOCKED if self._blocked else event
                for sentence in unvalued(event):
                    self._lose(sentence)
                cut = self._cut_call
                if cut is not None and event.reason is FinishReason.LENGTH:
                    self._cut_call = None
                    self._lose(cut_by_length(cut[0], written=cut[1]))
                return b""
            case FilterVerdict():
                if event.blocks:
                    self._blocked = True
                    self._finish = None if self._finish is None else BLOCKED
                if event.filtered or event.detected:
                    self._lose(NO_VERDICTS)
                return b""
            case StreamFailed():
                self._ended = self.done = True
                error = {"type": "error", "error": error_object(event.error)}
                return self._cut() + self._event("error", error)
            case StreamEnded():
                cut = self._cut_call
                if cut is not None and event.done:  # (no finish said the length cut it)
                    self._cut_call = None
                    return self.encode(StreamFailed(error=not_an_object(cut[0])))
                broken = [(i, c.name) for i, c in sorted(self._calls.items()) if c.broken]
                if broken and event.done:  # (Rule 3: no whole ToolCall came to say it)
                    return self.encode(StreamFailed(error=_cut_short(*broken[0])))
                self._ended = True
                if not event.done:
                    return self._cut()
                self.done = True
                return self._end()
        return b""


def _held_size(held: Any) -> int:
    """What a deferred run, signature or call counts towards `MAX_DEFERRED` (`_defer`)."""
    if type(held) is list:
        return sum(map(len, held[2])) + DEFER_COST * len(held[2])
    if type(held) is _Call:
        return 0
    return len(held.signature) + DEFER_COST


def _cut_short(index: int, name: str) -> Failure:
    return Failure(
        kind=FailureKind.UNEXPECTED,
        message=f"tool call {index} ({name!r}): more of its arguments came after its "
        "tool_use block was closed (text or thinking came between them, more than a block "
        f"can hold back ({MAX_DEFERRED} characters), or after its arguments were a whole "
        "object): its input was written in part",
        code="invalid_tool_arguments",
    )


def an_object(arguments: str, *, empty: bool = True) -> bool:
    """Whether a call's arguments can be a ``tool_use`` input: a JSON object, or nothing
    (unless not ``empty``: arguments still coming are not whole while only blanks)."""
    text = arguments.strip()
    if not text:
        return empty
    if text[0] != "{":
        return False
    try:
        return isinstance(canonical(text), dict)
    except (ValueError, RecursionError):
        return False


def not_an_object(call: ToolCall) -> Failure:
    """The failure of a ``tool_use`` whose input cannot be written (`svir_proto.answer`)."""
    return answer_not_an_object(call, "a tool_use input")
