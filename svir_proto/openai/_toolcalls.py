"""Assembling streamed tool calls (wire reference 3.3: which call each piece belongs to).

Field rules, which get every surveyed server right at once:

Rule 1: a piece belongs to the call with its ``index``. Without an index it belongs to the call
    with its ``id``; without either, to the only call there is (or a new one if there is none).
Rule 2: ``id`` is set once; an identical repeat is ignored. A *different* id on an index that
    already has one starts a new call (servers that reuse index 0 for the next call).
Rule 3: ``name`` takes the first value; a repeat of the whole name so far is ignored (servers
    that repeat it on every chunk); anything else is a continuation and is appended. The wire
    cannot tell a repeat from a continuation equal to the name so far (``aa`` sent as ``a``,
    ``a``); we read it as a repeat, because servers that repeat names are common and tool names
    that are their own first half doubled are not.
Rule 4: ``arguments`` always append.

Each call has an index of its own, which its deltas and its whole `ToolCall` carry: its wire
index (a piece without one: the next free position), or, when another call has that one (a
call that reused an index, Rule 2), the one after the highest given (attack 49b F1: two calls
of one index were one call to an encoder, the second's arguments appended to the first's).
Checks at the end (`finish`): indices contiguous from 0, ids non-empty and unique, names
non-empty; a violation raises `ToolCallError`, which names the call. Whole calls come in
index order.
"""

from __future__ import annotations

from typing import Final

from .._pieces import JOIN, Pieces
from ..errors import PeerProtocolError
from ..events import Finished, FinishReason, ToolCall, ToolCallDelta, tool_call_delta

__all__ = ["DEFAULT_MAX_TOOL_CALLS", "ToolCallAssembler", "ToolCallError", "call_notes", "folded"]

DEFAULT_MAX_TOOL_CALLS: Final = 128
"""Calls one response may make. OpenAI documents no limit; 128 is the most tools a request may
declare there, and a model calls each at most a few times (compare h2's CONTINUATION_BACKLOG:
count what grows, not only bytes)."""


class ToolCallError(PeerProtocolError):
    """The server's tool calls break the rules of wire reference 3.3.

    Attributes:
        index: the call's position among the calls, in wire-index order.
        call_id: its id, as far as it arrived.
    """

    def __init__(self, message: str, *, index: int, call_id: str, offset: int | None = None):
        super().__init__(message, offset=offset)
        self.index = index
        self.call_id = call_id


class _Call:
    __slots__ = ("args", "id", "index", "name")

    def __init__(self, index: int) -> None:
        self.index = index  # its own (the module docstring)
        self.id = ""
        self.name = ""
        self.args = Pieces()  # at about its size, however finely it was cut


class ToolCallAssembler:
    """Tool-call pieces in, `ToolCallDelta` events out; whole `ToolCall` events at the end."""

    def __init__(self, *, max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS) -> None:
        self.max_tool_calls = max_tool_calls
        self.calls: list[_Call] = []
        self._by_index: dict[int, _Call] = {}  # by wire index: the last call given it
        self._by_id: dict[str, _Call] = {}
        self._given: set[int] = set()  # the calls' own indices

    def piece(self, raw: object, at: int) -> ToolCallDelta:
        """Apply one element of ``delta.tool_calls``; return what it carried."""
        if not isinstance(raw, dict):
            raise PeerProtocolError(f"a tool call must be an object, not {raw!r}", offset=at)
        index = raw.get("index")
        call_id = raw.get("id")
        function = raw.get("function")
        if function is None:
            function = {}
        elif not isinstance(function, dict):
            raise PeerProtocolError("tool call 'function' must be an object", offset=at)
        name = function.get("name")
        args = function.get("arguments")
        if not (
            (call_id is None or type(call_id) is str)
            and (name is None or type(name) is str)
            and (args is None or type(args) is str)
        ):
            field, value = next(
                (field, value)
                for field, value in (
                    ("id", call_id),
                    ("function.name", name),
                    ("function.arguments", args),
                )
                if value is not None and type(value) is not str
            )
            raise PeerProtocolError(f"tool call {field} must be a string, not {value!r}", offset=at)
        if index is not None and (type(index) is not int or index < 0):
            raise PeerProtocolError(
                f"tool call index must be an int >= 0, not {index!r}", offset=at
            )
        return self.apply(index, call_id, name, args, at)

    def arguments(self, index: int, args: str, at: int) -> ToolCallDelta:
        """`piece` for ``{"index": index, "function": {"arguments": args}}``, the most common
        piece, already checked."""
        call = self._by_index.get(index)
        if call is None:
            return self.apply(index, None, None, args, at)
        if args:  # Rule 4, `Pieces.append` without its call (the hot path)
            held = call.args.held
            held.append(args)
            if len(held) >= JOIN:
                call.args.squeeze()
        return tool_call_delta(call.index, args)

    def apply(
        self, index: int | None, call_id: str | None, name: str | None, args: str | None, at: int
    ) -> ToolCallDelta:
        """Apply a piece's checked fields (Rules 1 to 4); return what it carried."""
        call = self._resolve(index, call_id or None, at)  # Rule 1
        new_id = None
        if call_id and call_id != call.id:
            call.id = new_id = call_id  # Rule 2 (a different id was resolved to a new call)
            self._by_id[call_id] = call
        name_part = None
        if name and name != call.name:  # Rule 3
            call.name += name
            name_part = name
        if args:  # Rule 4
            call.args.append(args)
        return tool_call_delta(call.index, args or "", new_id, name_part)

    def _resolve(self, index: int | None, call_id: str | None, at: int) -> _Call:
        if index is not None:
            call = self._by_index.get(index)
            if call is not None and not (call_id and call.id and call_id != call.id):
                return call
        elif call_id is not None:
            known = self._by_id.get(call_id)
            if known is not None:
                return known
        elif len(self.calls) == 1:
            return self.calls[0]
        elif self.calls:
            raise PeerProtocolError(
                f"a tool call has neither index nor id while {len(self.calls)} calls are open",
                offset=at,
            )
        if len(self.calls) >= self.max_tool_calls:
            raise too_many_calls(self.max_tool_calls, at)
        wire = index if index is not None else len(self.calls)
        given = self._given
        call = _Call(wire if wire not in given else max(given) + 1)
        given.add(call.index)
        self.calls.append(call)
        self._by_index[wire] = call
        return call

    def pending(self) -> tuple[ToolCallDelta, ...]:
        """The calls as assembled so far (for a stream that never completed)."""
        return tuple(
            ToolCallDelta(
                index=c.index, id=c.id or None, name=c.name or None, arguments=c.args.text()
            )
            for c in self.calls
        )

    def finish(self, declared: frozenset[str] | None) -> tuple[ToolCall, ...]:
        """Check the calls (see the module docstring) and return them whole.

        Raises:
            ToolCallError: indices with a gap, an empty or repeated id, an empty name.
        """
        ordered = sorted(self.calls, key=lambda c: c.index)
        given = [c.index for c in ordered]
        if given != list(range(len(given))):
            raise ToolCallError(
                f"tool call indices are not contiguous from 0: {given} (missing {_gaps(given)})",
                index=len(self.calls) - 1,
                call_id=ordered[-1].id,
            )
        seen: dict[str, int] = {}
        out = []
        for i, c in enumerate(ordered):
            label = f"tool call {i} (id {c.id!r}, name {c.name!r})"
            if not c.id:
                raise ToolCallError(f"{label} has no id", index=i, call_id=c.id)
            if c.id in seen:
                raise ToolCallError(
                    f"{label} repeats the id of tool call {seen[c.id]}", index=i, call_id=c.id
                )
            if not c.name:
                raise ToolCallError(f"{label} has no name", index=i, call_id=c.id)
            seen[c.id] = i
            out.append(
                ToolCall(
                    index=i,
                    id=c.id,
                    name=c.name,
                    arguments=c.args.text(),
                    declared=None if declared is None else c.name in declared,
                )
            )
        return tuple(out)


def folded(pieces: list[object]) -> list[object]:
    """``delta.tool_calls`` with each run of bare argument pieces joined to the piece before it.

    ``{"index": i, "function": {"arguments": s}}`` right after a valid piece of index ``i``
    says nothing the two would not say as one piece (Rule 1 finds the same call, Rule 4
    appends), and one chunk may hold hundreds of thousands of them: a delta for each would
    cost the decoder and every client of a relay a delta per piece (attack 41 F2). A piece
    that is anything else ends the run and is kept as it came, so `ToolCallAssembler.piece`
    reports it where it stands.
    """
    if len(pieces) < 2:
        return pieces
    out: list[object] = []
    held: list[str] = []  # the arguments of the run after out[-1]
    last: int | None = None  # out[-1]'s index, when out[-1] is a valid piece with one
    for raw in pieces:
        if last is not None and _bare(raw, last):
            held.append(raw["function"]["arguments"])  # type: ignore[index]
            continue
        if held:
            out[-1] = _joined(out[-1], held)  # type: ignore[arg-type]
            held = []
        out.append(raw)
        last = _index_of(raw)
    if held:
        out[-1] = _joined(out[-1], held)  # type: ignore[arg-type]
    return out


def _bare(raw: object, index: int) -> bool:
    """Whether ``raw`` is ``{"index": index, "function": {"arguments": <string>}}``."""
    if type(raw) is not dict or len(raw) != 2 or raw.get("index") != index:
        return False
    function = raw.get("function")
    return (
        type(raw["index"]) is int
        and type(function) is dict
        and len(function) == 1
        and type(function.get("arguments")) is str
    )


def _index_of(raw: object) -> int | None:
    """The index of a piece `ToolCallAssembler.piece` would take whole, else ``None``."""
    if type(raw) is not dict:
        return None
    index = raw.get("index")
    function = raw.get("function")
    if type(index) is not int or index < 0:
        return None
    if function is None:
        return index
    if type(function) is not dict:
        return None
    args = function.get("arguments")
    return index if args is None or type(args) is str else None


def _joined(raw: dict[str, object], more: list[str]) -> dict[str, object]:
    """``raw`` with ``more`` appended to its arguments, as one piece (a new object: the
    parsed chunk is left as it came)."""
    function = raw.get("function") or {}
    args = function.get("arguments") or ""  # type: ignore[attr-defined]
    return {**raw, "function": {**function, "arguments": args + "".join(more)}}  # type: ignore[dict-item]


def too_many_calls(limit: int, at: int) -> PeerProtocolError:
    """The error of a response that makes more than ``limit`` (``max_tool_calls``) calls."""
    return PeerProtocolError(
        f"more than max_tool_calls ({limit}) tool calls",
        offset=at,
        limit="max_tool_calls",
        limit_value=limit,
    )


def _gaps(wire: list[int], most: int = 8) -> str:
    """The first ``most`` indices missing from sorted ``wire``: a peer's index may be 10**12,
    so they are counted up to the bound, never made as a range."""
    missing: list[int] = []
    want = 0
    for index in wire:
        while want < index and len(missing) <= most:
            missing.append(want)
            want += 1
        want = index + 1
    shown = ", ".join(map(str, missing[:most]))
    return f"{shown}, ..." if len(missing) > most else shown


def call_notes(
    calls: tuple[ToolCall, ...],
    finish: Finished | None,
    field: str,
    called: str | None = None,
    kind: str = "tool calls",
) -> list[str]:
    """What a decoder says of a stream's whole calls at its end: calls with a finish (its
    ``field``: ``finish_reason``) that is not for calls; that finish (its value ``called``,
    when the dialect has one) with no call; each call of a tool the request did not declare."""
    notes = []
    if finish is not None:
        if calls and finish.reason not in (FinishReason.TOOL_CALLS, FinishReason.LENGTH):
            notes.append(f"{kind} arrived with {field} {finish.raw!r}")
        elif called is not None and not calls and finish.reason is FinishReason.TOOL_CALLS:
            notes.append(f"{field} {called!r} without any tool call")
    notes += [
        f"tool call {c.id!r} calls {c.name!r}, not declared by the request"
        for c in calls
        if c.declared is False
    ]
    return notes
