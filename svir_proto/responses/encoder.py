"""Events to the Responses API's stream: the server side of the dialect, for a gateway that
answers Responses clients (openai-python's ``responses.create(stream=True)`` and
``responses.stream``, the AI SDK, OpenAI's agents) from any upstream.

It writes what the API reference's "Streaming events" describe, as OpenAI sends them:

Rule 1: ``response.created`` and ``response.in_progress`` first (at `StreamStarted`, or before
    whatever comes first); ``sequence_number`` from 0, rising by one, on every event.
Rule 2: output items in order, each announced (``response.output_item.added``), its parts
    opened (``response.content_part.added``, ``response.reasoning_summary_part.added``) and
    closed with every ``.done`` event carrying the whole value, then
    ``response.output_item.done``: a ``message`` item with an ``output_text`` part for text
    (a ``refusal`` part for a refusal); a ``reasoning`` item for reasoning, its ``summary``
    parts for the ``summary`` carrier and ``reasoning_text`` content for raw reasoning (every
    other carrier, as llama.cpp writes a reasoning model's thinking); a `ReasoningSignature`
    is the item's ``encrypted_content`` and closes it; a ``function_call`` item per tool call.
    A message or reasoning item closes when an item of another kind begins; tool calls stay
    open until they are whole (`ToolCall`) or the stream ends, so interleaved argument
    deltas are never lost.
Rule 3: a tool call's ``output_item.added`` waits until its ``call_id`` and whole ``name``
    are known (its first arguments and a name that is whole, `svir_proto._names`: with
    ``declared_tools``, a declared name no other declared name goes on from; or the whole
    `ToolCall`; or text, reasoning or a refusal after its id and name, which go after it, as
    in the whole answer, and which end the name); argument deltas stay deltas; a `ToolCall`
    with no deltas before it is written as one delta.
Rule 4: the end: `StreamEnded` (its marker seen) writes ``response.completed``, or
    ``response.incomplete`` for ``LENGTH`` (``max_output_tokens``), ``CONTENT_FILTER``
    (``content_filter``), any ``OTHER`` finish (its raw value the reason: Gemini's
    ``MALFORMED_FUNCTION_CALL``, Anthropic's ``pause_turn`` are no finished answer) and no
    finish at all, with the whole response object: output items and usage (``_wire``); the
    message that such an end cut short is ``incomplete`` too. A cut
    (``StreamEnded(done=False)``) writes nothing more, so the client sees the cut.
    `StreamFailed` writes an ``error`` event (the reference's flat ``code``, ``message``,
    ``param``) and ``response.failed`` with the failure, and ends the stream; whatever
    follows writes nothing.

The final response object needs the whole answer, so this encoder keeps it, and only it: the
text, reasoning and arguments of the output items, at most ``max_output_size`` characters, each
item after the first counting `ITEM_COST` more (an answer that switched between text and
reasoning at every character gave a client a new item each time, and a final event of 39 MB:
attack 42 F3) (beyond, `AnswerTooLarge`, a `ValueError`; a `StreamFailed` then still ends the
stream). What it cannot carry it lists in ``lost``, one sentence each: content-filter verdicts
(the API has no field for them), a reasoning item's upstream id once its reasoning was written
(the id must be announced before the signature that carries it; ``hold_reasoning`` keeps it, at
the cost of holding each block), a whole call that disagrees with its deltas. This module does
no I/O and reads no clock.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Final

from .._dialect import DEFAULT_MAX_RESULT_SIZE
from .._json import dumps
from .._names import name_settled
from .._pieces import Pieces
from .._signatures import carried_signature
from .._weights import RUN
from ..answer import BLOCKED, no_value
from ..errors import AnswerTooLarge, Failure
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
from ._wire import CARRIERS, REASON_OF, error_code, usage_out
from .request import KNOWN, ResponsesRequest

__all__ = ["ITEM_COST", "ResponsesStreamEncoder"]

ITEM_COST: Final = RUN
"""Characters each message or reasoning item after the first counts towards
``max_output_size`` besides its text, as a whole answer's fold weighs a run that another kind
ended (`svir_proto.answer`, Rule 5): so a stream fails no sooner than the whole answer would
(attack 49b F5: 256 for every item failed a one-character stream under a bound of 100, which
the whole answer kept), and an answer that switches kinds at every character still holds
some 64 bytes per character, not more."""
_ECHOED: Final = tuple(sorted(KNOWN - {"model", "input", "stream"}))
"""The request fields a response object repeats (when the encoder is given the request)."""


class _Part:
    """A part of a message or reasoning item: ``t`` text, ``r`` refusal, ``s`` summary, ``c``
    reasoning text."""

    __slots__ = ("closed", "kind", "pieces")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.pieces = Pieces()
        self.closed = False

    def text(self) -> str:
        return self.pieces.text()


class _Open:
    """A message or reasoning item being written."""

    __slots__ = ("id", "incomplete", "index", "kind", "parts", "signature")

    def __init__(self, kind: str, item_id: str, index: int) -> None:
        self.kind = kind  # "message" or "reasoning"
        self.id = item_id
        self.index = index
        self.parts: list[_Part] = []
        self.signature: str | None = None
        self.incomplete = False  # a message the answer's end cut short (Rule 4)

    def index_of(self, part: int) -> int:
        """A part's index among its kind's: a reasoning item numbers its summary parts and
        its ``reasoning_text`` parts apart; a message numbers all its parts."""
        if self.kind == "message":
            return part
        kind = self.parts[part].kind
        return sum(1 for p in self.parts[: part + 1] if p.kind == kind) - 1


class _Call:
    """A tool call: announced once its ``call_id`` and ``name`` are known, in index order."""

    __slots__ = (
        "announced",
        "args",
        "call_id",
        "closed",
        "held",
        "id",
        "index",
        "name",
        "whole",
        "wire",
    )

    def __init__(self, wire: int) -> None:
        self.wire = wire  # the vocabulary's index
        self.call_id = ""
        self.name = ""
        self.args = Pieces()  # written
        self.held: list[str] = []  # not yet written: the call waits (Rule 3)
        self.whole: str | None = None  # the arguments of its ToolCall
        self.id = ""
        self.index = -1  # its output_index, once announced
        self.announced = False
        self.closed = False

    @property
    def ready(self) -> bool:
        return self.whole is not None or any(self.held)


class ResponsesStreamEncoder:
    """Write vocabulary events as Responses API SSE events; see the module docstring.

    Args:
        model, response_id, created: the response's identity (``created``: the caller's
            clock, seconds); a `StreamStarted` replaces what it sets.
        hold_reasoning: hold a block of reasoning until its signature (or whatever comes
            after it), so that its item is announced with the upstream's id, which comes with
            the signature: for a Responses upstream relayed to a Responses client that sends
            its reasoning items back (``store: false``). The reasoning then reaches the client
            a block at a time instead of a delta at a time.
        request: the request being answered, whose options the response object repeats
            (``instructions``, ``tools``, ``tool_choice``, ``max_output_tokens``...).
        max_output_size: characters of text, reasoning and arguments kept for the final
            response object.
        declared_tools: the names of the tools the request declared, to know when a streamed
            call's name is whole (Rule 3); ``None``: once it is not empty.
        repeat_instructions: whether the response object repeats the request's
            ``instructions``, as the API does: a prompt, written again in every lifecycle
            event (a gateway does not: what a body holds would be written four times more).
        begun: the ``sequence_number`` the next event takes in a stream another writer began
            (its ``response.created`` went out: a gateway whose relay of it broke off), which
            this one ends: it writes no lifecycle of its own and numbers on from there.

    ``encode(event)`` returns the bytes for one event (often ``b""``: held, or not carried);
    ``response()`` is the final response object, for a client that asked for no stream.
    """

    def __init__(
        self,
        *,
        model: str = "",
        response_id: str = "resp_svir",
        created: int = 0,
        request: ResponsesRequest | None = None,
        max_output_size: int = DEFAULT_MAX_RESULT_SIZE,
        hold_reasoning: bool = False,
        declared_tools: Collection[str] | None = None,
        repeat_instructions: bool = True,
        begun: int | None = None,
    ) -> None:
        self.model = model
        self.declared_tools = declared_tools
        self.hold_reasoning = hold_reasoning
        self.response_id = response_id
        self.created = created
        self.max_output_size = max_output_size
        self.seq = 0
        self.lost: list[str] = []
        """What this encoder could not carry, one sentence each (for the gateway's log)."""
        self.status = "in_progress"
        self._echo: dict[str, Any] = {}
        if request is not None:
            doc = request.to_document()
            self._echo = {k: doc[k] for k in _ECHOED if k in doc}
            if not repeat_instructions:
                self._echo.pop("instructions", None)
        self._started = False
        if begun is not None:  # another writer's stream, ended by this one: numbered on
            self._started, self.seq = True, begun
        self._ended = False
        self._items: list[_Open | _Call] = []  # in output order
        self._open: _Open | None = None
        self._calls: list[_Call] = []  # every call, in the order they came
        self._by_wire: dict[int, _Call] = {}  # the latest call with each index
        self._by_call_id: dict[str, _Call] = {}
        self._waiting: list[_Call] = []  # calls not yet announced
        self._next = 0  # the lowest index not yet announced, when indices come in order
        self._finish: Finished | None = None
        self._blocked = False  # a verdict blocked the answer: its finish is `BLOCKED`
        self._usage: Usage | None = None
        self._failure: Failure | None = None
        self._size = 0
        self._text_head = b""  # the constant bytes of the open text part's deltas
        self._text_id = b""
        self._held: list[ReasoningDelta] = []  # hold_reasoning: the block not yet written

    # -- writing -----------------------------------------------------------------------------

    def _event(self, etype: str, fields: dict[str, Any]) -> bytes:
        data = dumps({"type": etype, "sequence_number": self.seq, **fields})
        self.seq += 1
        return b"event: %b\ndata: %b\n\n" % (etype.encode(), data)  # (one copy of a long one)

    def _grow(self, n: int) -> None:
        self._size += n
        if self._size > self.max_output_size:
            raise AnswerTooLarge(
                f"the answer is larger than max_output_size ({self.max_output_size} characters)"
                f": it counts {ITEM_COST} for each output item too ({len(self._items)} so far), "
                "which the response object the stream ends with holds"
            )

    def _note(self, what: str) -> None:
        if what not in self.lost:
            self.lost.append(what)

    def _item_id(self, prefix: str) -> str:
        base = self.response_id[5:] if self.response_id.startswith("resp_") else self.response_id
        return f"{prefix}_{base}_{len(self._items)}"

    def response(self) -> dict[str, Any]:
        """The response object as it stands (whole once the stream has ended)."""
        out: dict[str, Any] = {
            "id": self.response_id,
            "object": "response",
            "created_at": self.created,
            "status": self.status,
            "error": None,
            "incomplete_details": None,
            "model": self.model,
            "output": [self._whole(item) for item in self._items],
            "usage": None if self._usage is None else usage_out(self._usage),
            # the API's defaults, which every response carries (the request's, when given)
            "tools": [],
            "tool_choice": "auto",
            "parallel_tool_calls": True,
        }
        if self._failure is not None:
            out["error"] = {"code": error_code(self._failure), "message": self._failure.message}
        if self.status == "incomplete":
            reason = None if self._finish is None else self._finish.raw
            out["incomplete_details"] = {"reason": reason}
        out.update(self._echo)
        return out

    def _start(self) -> bytes:
        if self._started:
            return b""
        self._started = True
        snapshot = {**self.response(), "output": [], "usage": None}
        return self._event("response.created", {"response": snapshot}) + self._event(
            "response.in_progress", {"response": snapshot}
        )

    # -- the items -------------------------------------------------------------------------

    def _whole(self, item: _Open | _Call) -> dict[str, Any]:
        if isinstance(item, _Call):
            return {
                "id": item.id,
                "type": "function_call",
                "status": "completed" if item.closed else "in_progress",
                "arguments": item.args.text(),
                "call_id": item.call_id,
                "name": item.name,
            }
        if item.kind == "message":
            return {
                "id": item.id,
                "type": "message",
                "status": (
                    "in_progress"
                    if item is self._open
                    else "incomplete"
                    if item.incomplete
                    else "completed"
                ),
                "content": [_part(p.kind, p.text()) for p in item.parts],
                "role": "assistant",
            }
        out: dict[str, Any] = {
            "id": item.id,
            "type": "reasoning",
            "summary": [
                {"type": "summary_text", "text": p.text()} for p in item.parts if p.kind == "s"
            ],
        }
        content = [
            {"type": "reasoning_text", "text": p.text()} for p in item.parts if p.kind == "c"
        ]
        if content:
            out["content"] = content
        if item.signature is not None:
            out["encrypted_content"] = item.signature
        return out

    def _open_item(self, kind: str, item_id: str | None = None) -> bytes:
        """Close the open item and open one of ``kind`` (message or reasoning): after the
        first item, it counts `ITEM_COST` characters towards ``max_output_size``."""
        if self._items:
            self._grow(ITEM_COST)
        out = self._close_open()
        prefix = "msg" if kind == "message" else "rs"
        item = _Open(kind, item_id or self._item_id(prefix), len(self._items))
        self._items.append(item)
        self._open = item
        announced: dict[str, Any] = {"id": item.id, "type": kind}
        if kind == "message":
            announced.update(status="in_progress", content=[], role="assistant")
        else:
            announced["summary"] = []
        return out + self._event(
            "response.output_item.added", {"output_index": item.index, "item": announced}
        )

    def _where(self, item: _Open | _Call) -> dict[str, Any]:
        return {"item_id": item.id, "output_index": item.index}

    def _open_part(self, kind: str) -> bytes:
        """Open a part of ``kind`` in the open item; the part before it closes."""
        item = self._open
        assert item is not None
        out = self._close_part()
        item.parts.append(_Part(kind))
        self._text_head = b""
        where = self._where(item)
        index = item.index_of(len(item.parts) - 1)
        if kind == "s":
            return out + self._event(
                "response.reasoning_summary_part.added",
                {**where, "summary_index": index, "part": {"type": "summary_text", "text": ""}},
            )
        return out + self._event(
            "response.content_part.added",
            {**where, "content_index": index, "part": _part(kind, "")},
        )

    def _close_part(self) -> bytes:
        return b"".join(self._part_done())

    def _part_done(self) -> list[bytes]:
        """The events that close the open part, each of which carries its whole text."""
        item = self._open
        if item is None or not item.parts or item.parts[-1].closed:
            return []
        part = item.parts[-1]
        part.closed = True
        text = part.text()
        where = self._where(item)
        index = item.index_of(len(item.parts) - 1)
        if part.kind == "s":
            where["summary_index"] = index
            return [
                self._event("response.reasoning_summary_text.done", {**where, "text": text}),
                self._event(
                    "response.reasoning_summary_part.done",
                    {**where, "part": {"type": "summary_text", "text": text}},
                ),
            ]
        where["content_index"] = index
        if part.kind == "t":
            done = self._event("response.output_text.done", {**where, "text": text, "logprobs": []})
        elif part.kind == "r":
            done = self._event("response.refusal.done", {**where, "refusal": text})
        else:
            done = self._event("response.reasoning_text.done", {**where, "text": text})
        return [
            done,
            self._event("response.content_part.done", {**where, "part": _part(part.kind, text)}),
        ]

    def _close_open(self) -> bytes:
        return b"".join(self._item_done())

    def _item_done(self) -> list[bytes]:
        """The events that close the open item: its part's, then its own (the answer's end
        writes its text four times, joined once: attack 44 F3)."""
        item = self._open
        if item is None:
            return []
        out = self._part_done()
        self._open = None
        self._text_head = b""
        whole = self._whole(item)
        out.append(
            self._event("response.output_item.done", {"output_index": item.index, "item": whole})
        )
        return out

    def _piece(self, kind: str, text: str) -> bytes:
        """A delta of the open item's current part, opening what it needs."""
        out = self._flush(followed=True) if self._waiting else b""
        item = self._open
        wanted = "message" if kind in ("t", "r") else "reasoning"
        if item is None or item.kind != wanted or item.signature is not None:
            out += self._open_item(wanted)
            item = self._open
            assert item is not None
        if not item.parts or item.parts[-1].kind != kind:
            out += self._open_part(kind)
        self._grow(len(text))
        item.parts[-1].pieces.append(text)
        if kind == "t":  # the most frequent event, its constant bytes written once
            head = self._text_head
            if not head:
                head = self._text_head = (
                    b',"output_index":'
                    + str(item.index).encode()
                    + b',"content_index":'
                    + str(len(item.parts) - 1).encode()
                    + b',"delta":'
                )
                self._text_id = dumps(item.id)
            seq = self.seq
            self.seq = seq + 1
            return out + b"".join(
                (
                    b"event: response.output_text.delta\n"
                    b'data: {"type":"response.output_text.delta","sequence_number":',
                    str(seq).encode(),
                    b',"item_id":',
                    self._text_id,
                    head,
                    dumps(text),
                    b',"logprobs":[]}\n\n',
                )
            )
        where = self._where(item)
        index = item.index_of(len(item.parts) - 1)
        if kind == "r":
            return out + self._event(
                "response.refusal.delta", {**where, "content_index": index, "delta": text}
            )
        if kind == "s":
            return out + self._event(
                "response.reasoning_summary_text.delta",
                {**where, "summary_index": index, "delta": text},
            )
        return out + self._event(
            "response.reasoning_text.delta", {**where, "content_index": index, "delta": text}
        )

    # -- tool calls ----------------------------------------------------------------------------

    def _call(self, wire: int, call_id: str | None) -> _Call:
        """The call a piece belongs to: by its id, else the latest with its index, unless
        that one has another id (a server that reuses an index for the next call)."""
        call = self._by_call_id.get(call_id) if call_id else None
        if call is None:
            call = self._by_wire.get(wire)
            if call is None or (call_id and call.call_id and call.call_id != call_id):
                call = _Call(wire)
                self._calls.append(call)
                self._waiting.append(call)
                self._by_wire[wire] = call
        if call_id and not call.call_id:
            call.call_id = call_id
            self._by_call_id[call_id] = call
        return call

    def _announce(self, call: _Call) -> bytes:
        out = self._close_open()
        call.announced = True
        call.index = len(self._items)
        call.id = self._item_id("fc")
        self._items.append(call)
        item = {
            "id": call.id,
            "type": "function_call",
            "status": "in_progress",
            "arguments": "",
            "call_id": call.call_id,
            "name": call.name,
        }
        out += self._event("response.output_item.added", {"output_index": call.index, "item": item})
        self._size -= sum(map(len, call.held))  # counted when held, again as written (attack 39)
        for piece in call.held:
            out += self._arguments(call, piece)
        call.held.clear()
        if call.whole is not None:
            out += self._settle(call)
        return out

    def _flush(self, *, force: bool = False, followed: bool = False) -> bytes:
        """Announce the waiting calls that may go: ready, and no lower index still to come
        (Rule 3); with ``force`` (the end), all of them, in index order; ``followed`` (text,
        reasoning or a refusal comes): those whose id and whole name came too, with no
        arguments yet or a name not settled, before it, where the whole answer has them
        (attack 47 H2: OpenAI's first delta of a call has no arguments; attack 49b F2: a
        name that text followed is whole, as no server continues it). (A call whose id or
        name is still to come goes after it; the whole answer has it where it began.)"""
        out = b""
        while self._waiting:
            ready = [
                c
                for c in self._waiting
                if force
                or (
                    c.wire <= self._next
                    and (self._named(c) or (followed and bool(c.name)))
                    and (c.ready or (followed and bool(c.call_id)))
                )
            ]
            if not ready:
                break
            call = min(ready, key=lambda c: c.wire)  # min() keeps the first of equals
            self._waiting.remove(call)
            self._next = max(self._next, call.wire + 1)
            out += self._announce(call)
        return out

    def _named(self, call: _Call) -> bool:
        """Whether the call's name is whole (Rule 3), or its `ToolCall` came."""
        return call.whole is not None or name_settled(call.name, self.declared_tools)

    def _arguments(self, call: _Call, text: str) -> bytes:
        if not text:
            return b""
        self._grow(len(text))
        call.args.append(text)
        return self._event(
            "response.function_call_arguments.delta", {**self._where(call), "delta": text}
        )

    def _settle(self, call: _Call) -> bytes:
        """A whole call's remaining arguments, then its end."""
        whole = call.whole or ""
        have = call.args.text()
        out = b""
        if whole.startswith(have):
            out = self._arguments(call, whole[len(have) :])
        else:
            self._note(f"tool call {call.call_id!r}: the whole arguments differ from its deltas")
            call.args.set(whole)
        return out + self._close_call(call)

    def _close_call(self, call: _Call) -> bytes:
        if call.closed:
            return b""
        call.closed = True
        arguments = call.args.text()
        out = self._event(
            "response.function_call_arguments.done", {**self._where(call), "arguments": arguments}
        )
        return out + self._event(
            "response.output_item.done", {"output_index": call.index, "item": self._whole(call)}
        )

    def _on_delta(self, event: ToolCallDelta) -> bytes:
        call = self._call(event.index, event.id)
        if call.whole is not None:
            self._note(f"tool call {event.index} had arguments after it was whole: not carried")
            return b""
        if event.name:  # a name may go on after its call was announced: its .done has it whole
            call.name += event.name
            if call.announced:  # (the AI SDK names a streamed call from its .added)
                self._note("a tool call's name continued after its output_item.added")
        if call.announced:
            return self._arguments(call, event.arguments)
        if event.arguments:
            self._grow(len(event.arguments))
            call.held.append(event.arguments)
        if event.arguments or event.name:  # it may be ready now
            return self._flush()
        return b""

    def _on_call(self, event: ToolCall) -> bytes:
        call = self._call(event.index, event.id)
        if call.whole is not None:  # a second call with this id: one of its own
            call = _Call(event.index)
            call.call_id = event.id
            self._calls.append(call)
            self._waiting.append(call)
        call.name = event.name
        call.whole = event.arguments
        if call.announced:
            return self._settle(call)
        return self._flush()

    # -- the end -------------------------------------------------------------------------------

    def _cut_short(self, finish: Finished | None) -> bool:
        """Whether the answer ends ``response.incomplete`` (Rule 4); if so, the message being
        written is ``incomplete`` too, as OpenAI writes the message ``max_output_tokens``
        stopped."""
        short = finish is None or finish.reason in REASON_OF or finish.reason is FinishReason.OTHER
        if short and self._open is not None and self._open.kind == "message":
            self._open.incomplete = True
        return short

    def _end(self) -> bytes:
        finish = self._finish
        short = self._cut_short(finish)
        usage = self._usage
        if (
            usage is not None
            and usage.reasoning_tokens is None
            and any(type(item) is _Open and item.kind == "reasoning" for item in self._items)
        ):  # (fidelity 43 F06: Anthropic's count has no such share; the SDK's types want 0)
            self._note(
                "usage: the upstream does not count reasoning tokens apart: "
                "output_tokens_details.reasoning_tokens says 0"
            )
        out = self._item_done()
        out.append(self._flush(force=True))
        out += map(self._close_call, self._calls)
        if finish is None:
            self._note("the upstream ended without a finish reason: sent as response.incomplete")
            self.status = "incomplete"
        elif short:
            self.status = "incomplete"
            if finish.reason in REASON_OF:
                self._finish = Finished(reason=finish.reason, raw=REASON_OF[finish.reason])
        else:
            self.status = "completed"
        self._ended = True
        etype = "response.completed" if self.status == "completed" else "response.incomplete"
        out.append(self._event(etype, {"response": self.response()}))
        return b"".join(out)

    def _fail(self, failure: Failure) -> bytes:
        self._ended = True
        self._failure = failure
        self.status = "failed"
        out = self._event(
            "error", {"code": error_code(failure), "message": failure.message, "param": None}
        )
        return out + self._event("response.failed", {"response": self.response()})

    @property
    def done(self) -> bool:
        """The stream's last event (``response.completed``, ``.incomplete`` or ``.failed``)
        was written; not for a cut, which stays a cut."""
        return self._ended and self.status in ("completed", "incomplete", "failed")

    def encode(self, event: Event) -> bytes:
        """The bytes for one event (``b""`` for what is held or has no event here)."""
        if self._ended:
            return b""
        if self.hold_reasoning:
            if isinstance(event, ReasoningDelta):
                if event.text:
                    self._grow(len(event.text))
                    self._held.append(event)
                return self._start()
            if self._held:  # the block ends: written whole, with its own id if it is signed
                held, self._held = self._held, []
                self._size -= sum(len(e.text) for e in held)  # counted again as written
                out = self._start()
                if isinstance(event, ReasoningSignature):
                    out += self._open_item("reasoning", _own_id(event))
                for e in held:
                    out += self._encode(e)
                return out + self._encode(event)
        return self._encode(event)

    def _encode(self, event: Event) -> bytes:
        match event:
            case TextDelta():
                return self._start() + self._piece("t", event.text) if event.text else b""
            case StreamStarted():
                if not self._started:
                    self.response_id = event.response_id or self.response_id
                    self.model = event.model or self.model
                    self.created = event.created or self.created
                return self._start()
            case ReasoningDelta():
                if not event.text:
                    return b""
                return self._start() + self._piece(
                    "s" if event.carrier == "summary" else "c", event.text
                )
            case ReasoningSignature():
                out = self._start()  # (no call goes before it: it signs what came before)
                item = self._open
                if item is None or item.kind != "reasoning" or item.signature is not None:
                    out += self._open_item("reasoning", _own_id(event))
                    item = self._open
                    assert item is not None
                elif _own_id(event) and event.item_id != item.id:
                    self._note(
                        "reasoning item ids are this encoder's own once their reasoning was "
                        "written: the upstream's id comes with its signature, at the end"
                    )
                signature = (  # another vendor's is carried (`svir_proto.hub`)
                    event.signature
                    if event.carrier in CARRIERS
                    else carried_signature(
                        event.signature, event.carrier, event.item_id, redacted=event.redacted
                    )
                )
                self._grow(len(signature))
                item.signature = signature
                return out + self._close_open()
            case RefusalDelta():
                return self._start() + self._piece("r", event.text) if event.text else b""
            case ToolCallDelta():
                return self._start() + self._on_delta(event)
            case ToolCall():
                return self._start() + self._on_call(event)
            case Finished():
                self._finish = BLOCKED if self._blocked else event
                if event.reason is FinishReason.OTHER:  # (fidelity 43 F03)
                    self._note(
                        no_value(
                            event.raw,
                            "the Responses API's",
                            "response.incomplete, its reason as it came",
                        )
                    )
                self._cut_short(event)  # (a message a later verdict blocked was whole: its
                return self._start() + self._close_open()  # item, streamed or not; review 43 M4)
            case Usage():
                self._usage = event
                return self._start()
            case FilterVerdict():
                if event.blocks:
                    self._blocked = True
                    self._finish = None if self._finish is None else BLOCKED
                if event.filtered or event.detected:
                    self._note("content-filter verdicts have no field in the Responses API")
                return b""
            case StreamFailed():
                return self._start() + self._fail(event.error)
            case StreamEnded():
                if not event.done:
                    self._ended = True  # a cut stays a cut
                    return b""
                return self._start() + self._end()
        return b""


def _part(kind: str, text: str) -> dict[str, Any]:
    if kind == "t":
        return {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
    if kind == "r":
        return {"type": "refusal", "refusal": text}
    return {"type": "reasoning_text", "text": text}


def _own_id(signature: ReasoningSignature) -> str | None:
    """The reasoning item's id a signature names, if it is the Responses API's own: another
    dialect's ``item_id`` names something else (Gemini's, the call the signature is on), and
    an item named so would share its id with that call (client round 32)."""
    return signature.item_id if signature.carrier in CARRIERS else None
