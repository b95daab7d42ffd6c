"""The OpenAI Responses API stream (``POST /v1/responses``, ``stream: true``): response bytes to
events and a `Completion`, following the API reference's "Streaming events" as OpenAI and
llama.cpp send them.

Each SSE event's data is one JSON object whose ``type`` names it (the SSE ``event:`` field
repeats it; the JSON's own ``type`` decides, the field only stands in when the JSON has none).

Rule 1 (order): ``sequence_number``, where an event has one, rises by exactly one: a gap or a
    repeat is a `PeerProtocolError` naming the number expected and the number that came. The
    first one may be any number (a stream resumed with ``starting_after`` begins past 0).
    llama.cpp numbers nothing: events without a number are not checked.
Rule 2 (identity): ``response.created`` (or ``.in_progress``, ``.queued``, whichever comes
    first) gives `StreamStarted` with the response ``id``, ``model`` and ``created_at``.
Rule 3 (items): ``response.output_item.added`` opens an output item; events about an item find
    it by ``output_index``, else by ``item_id`` (llama.cpp sends no index; GitHub Copilot
    changes the ids on every event, noted once). An index added twice is an error; a delta
    for an item never added opens it (noted). ``message`` items carry ``output_text`` parts
    (`TextDelta`, index 0: the text of every part and message is joined, as the SDK's
    ``output_text`` joins it) and ``refusal`` parts (`RefusalDelta`); ``function_call`` items
    a tool call (`ToolCallDelta` at ``.added`` with its ``call_id`` and ``name``, then the
    argument deltas); ``reasoning`` items their summary (``reasoning_summary_text``, carrier
    ``summary``) and raw reasoning (``reasoning_text``, carrier ``reasoning_text``: llama.cpp
    for reasoning models), the parts of one item joined with a blank line. A reasoning item's
    ``encrypted_content`` at ``response.output_item.done`` (the API says the one at ``.added``
    may be partial) is a `ReasoningSignature` with its ``item_id``, closing the block.
Rule 4 (whole values): each ``.done`` event (``output_text``, ``refusal``,
    ``function_call_arguments``, the summary and reasoning texts, ``content_part``,
    ``output_item``) carries the whole value. When the deltas so far begin it, the rest is
    emitted as one more delta (a server may send a value whole, without deltas). When they do
    not: for text, refusal and reasoning a problem is noted and the deltas are kept, because
    they are what a client has already shown and the events cannot be taken back; for a tool
    call's arguments it is a `ToolCallError`, because a call is executed, and two different
    argument strings leave no safe one to execute. Without ``keep_text`` a part's text is not
    kept, only its length and a CRC-32 of it (`_Tally`), which settle a whole value the same
    way: a relay never joins deltas to the rest of a value they do not begin (attack 31). A
    whole item whose parts do not include one its deltas gave (a text streamed as part 1,
    given whole as part 0) is not settled against its deltas: noted, as a value that differs.
    An item's parts (a message's content, a reasoning item's summary and content) are
    `svir_proto._dialect.MAX_ENTRIES` at most: each may be a delta of its own.
Rule 5 (the end): ``response.completed`` ends a complete stream: `Finished` (``TOOL_CALLS``
    when a function call was made, else ``STOP``, raw ``"completed"``), `Usage`, the tool calls
    whole and checked (``_toolcalls``), `StreamEnded`. ``response.incomplete`` ends it the same
    way, complete but cut short: ``max_output_tokens`` is ``LENGTH``, ``content_filter`` is
    ``CONTENT_FILTER``, another reason ``OTHER`` (the reason is the raw value). There is no
    ``[DONE]`` in this dialect (one is ignored). Items in the final response that were never
    streamed are read from it whole, and so is a streamed ``function_call`` never said done.
    One that neither a ``.done`` event nor the final response says whole ends the stream as a
    cut (its arguments may not be whole; the calls kept pending, as a body that ends inside
    a call, attack round 30). Events after the end are counted, not read.
Rule 6 (failures): an ``error`` event, and a ``response.failed`` response's ``error``, are a
    `StreamFailed` (one: the API sends ``error`` and then ``response.failed`` for the same
    failure); ``response.failed`` ends the stream, never complete. A body that ends after an
    ``error`` event ended where its server ended it (``done``); any other body that ends
    before the end event is a cut.
Rule 7 (what is ignored): event types this module does not name are ignored, as the API asks
    of clients (it adds them): the built-in tools' progress (``response.web_search_call.*``,
    ``file_search_call.*``, ``code_interpreter_call.*`` with its code deltas,
    ``image_generation_call.*`` with its partial images, ``mcp_call.*``, ``mcp_list_tools.*``,
    ``custom_tool_call_input.*``, ``shell_call.*``), ``response.audio.*``,
    ``response.output_text.annotation.added`` (citations have no event in the vocabulary: they
    are noted, as a part's ``annotations`` are; fidelity 43 F05) and anything newer; their
    names are kept in ``ignored_types``. Output items of other types
    (``web_search_call``, ``custom_tool_call``...) are noted once per type in ``problems``:
    the vocabulary cannot carry them.

Bounds: ``max_event_size`` bytes an event, ``max_result_size`` characters of text, reasoning,
refusal and arguments (each output item counts `ITEM_SIZE`), ``max_tool_calls`` calls,
``max_output_items`` items, `MAX_IGNORED_TYPES` names kept. Speed: a delta that repeats the
bytes of the one before it, but for its delta, number and padding, is read by one compiled
pattern instead of the parser (`svir_proto._template`); events, errors and results are the
same either way.

A payload that is not JSON is a `PeerProtocolError` with its byte offset. This module does no
I/O and reads no clock.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any, Final
from zlib import crc32

from .. import _json
from .. import _weights as weights
from .._dialect import DEFAULT_MAX_RESULT_SIZE, DialectDecoder, json_error
from .._notes import MAX_NOTE
from .._pieces import Pieces
from .._template import BUDGET, Template, budget_after
from ..errors import Failure, PeerProtocolError
from ..events import (
    Completion,
    Event,
    Finished,
    FinishReason,
    ReasoningCarrier,
    ReasoningDelta,
    ReasoningSignature,
    RefusalDelta,
    StreamFailed,
    StreamStarted,
    ToolCall,
    Usage,
    reasoning_delta,
    text_delta,
    tool_call_delta,
)
from ..openai._toolcalls import DEFAULT_MAX_TOOL_CALLS, ToolCallAssembler, ToolCallError
from ..sse import DEFAULT_MAX_EVENT_SIZE, Errors
from ._wire import INCOMPLETE, failure, usage_in

__all__ = ["DEFAULT_MAX_OUTPUT_ITEMS", "ResponsesStreamDecoder", "decode_response"]

DEFAULT_MAX_OUTPUT_ITEMS: Final = 1024
"""Output items one response may open. A turn of an agent makes a few: reasoning, a message,
its tool calls; one with built-in tools a few dozen (a web search is two items per query).
Each counts `ITEM_SIZE` against ``max_result_size`` too, so empty items cannot flood memory."""
ITEM_SIZE: Final = 256
"""What an output item counts against ``max_result_size``, in characters: about what it holds."""
MAX_IGNORED_TYPES: Final = 64
"""Distinct ignored event type names kept in ``ignored_types``; more are ignored unnamed, as
is a name longer than `svir_proto._notes.MAX_NOTE` (attack 34: a peer's names may be
megabytes long)."""
_ANNOTATIONS: Final = "output_text annotations (citations) are not carried"
SEPARATOR: Final = "\n\n"
"""Joins the summary or reasoning parts of one reasoning item (Rule 3)."""
DELTA_KEY: Final = b'"delta":'
"""The key of a delta event's text, and of its number (`svir_proto._template` Rule 1)."""
NUMBER_KEY: Final = b'"sequence_number":'
_DONE: Final = b"[DONE]"

_WHAT: Final = {"t": "text", "r": "refusal", "s": "reasoning summary", "c": "reasoning"}
"""What each kind of part is called in a note."""
_LIST: Final = {"t": "t", "r": "t", "s": "s", "c": "c"}
"""The list each kind of part is numbered in: a message's content holds text and refusals."""


class _Item:
    """An output item as the stream builds it."""

    __slots__ = (
        "call",
        "carrier",
        "done",
        "has_text",
        "id",
        "kind",
        "last_part",
        "parts",
        "streamed",
    )

    def __init__(self, kind: str, item_id: str) -> None:
        self.kind = kind  # message, function_call, reasoning, or another type
        self.id = item_id
        self.done = False  # a function_call item said whole (.done events, the final output)
        self.call = -1  # a function_call item's tool-call index
        # the text so far of each part (without keep_text, its length: a `_Tally`)
        self.parts: dict[tuple[str, int], list[str] | _Tally] = {}
        self.last_part: tuple[str, int] | None = None
        self.streamed: dict[str, int] = {}  # the highest part deltas gave, by `_LIST`
        self.has_text = False
        self.carrier: ReasoningCarrier | None = None


class _Tally:
    """A part's deltas without ``keep_text``: where a list would keep them, their length and a
    CRC-32 of their UTF-8, which Rule 4 settles a whole value against
    (`ResponsesStreamDecoder._settle`): whether the deltas begin it, without holding them. (An
    upstream could make a value whose beginning has the deltas' CRC, but it could as well have
    sent that text in its deltas: nothing it says is trusted more for it.)"""

    __slots__ = ("crc", "size")

    def __init__(self) -> None:
        self.size = 0
        self.crc = 0

    def append(self, text: str) -> None:
        self.size += len(text)
        self.crc = crc32(text.encode("utf-8", "surrogatepass"), self.crc)

    def extend(self, texts: Iterable[str]) -> None:
        self.append("".join(texts))

    def begins(self, final: str) -> bool:
        """Whether the deltas are the beginning of ``final`` (or all of it)."""
        size = self.size
        return len(final) >= size and (
            crc32(final[:size].encode("utf-8", "surrogatepass")) == self.crc
        )


Handler = Callable[["ResponsesStreamDecoder", dict[str, Any], int], None]


class ResponsesStreamDecoder(DialectDecoder):
    """Decode a streamed Responses API body (the bytes after the head); see the module's rules.

    Args:
        declared_tools: the names of the function tools the request declared; a call of any
            other is flagged (``ToolCall.declared`` is ``False`` and a problem is noted).
            ``None``: not checked.
        max_event_size: bytes one SSE event may take (see `SSEDecoder`).
        max_result_size: characters the result may accumulate.
        keep_text: keep the text, reasoning and refusal in ``result`` (``False``: the deltas
            are still events, but neither kept, so ``result.text``, ``result.reasoning``,
            ``result.refusal`` and the text of each of ``result.reasoning_blocks`` are empty,
            nor counted against ``max_result_size``, which still bounds the items, the calls
            and their arguments: a relay that passes the deltas on holds no copy of them;
            Rule 4 then settles a whole value by its length).
        max_tool_calls: function calls one response may make.
        max_output_items: output items one response may open.
        errors: invalid UTF-8 and lone surrogates: ``"strict"`` (a `PeerProtocolError` with
            the offset) or ``"replace"`` (U+FFFD).

    Events come with the pull API (``receive_data``/``next_event``, ``feed``/``close``); the
    whole picture is ``result``, at any time. ``response_id`` and ``model`` hold the latest
    identity the stream gave (the model often arrives only with ``response.completed``).
    """

    TEXTS = frozenset({"delta"})
    """Where a delta event's text, reasoning and a call's arguments are (`_halves`)."""

    def __init__(
        self,
        *,
        declared_tools: Collection[str] | None = None,
        max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
        max_result_size: int = DEFAULT_MAX_RESULT_SIZE,
        keep_text: bool = True,
        max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS,
        max_output_items: int = DEFAULT_MAX_OUTPUT_ITEMS,
        errors: Errors = "strict",
    ) -> None:
        super().__init__(
            max_event_size=max_event_size,
            max_result_size=max_result_size,
            keep_text=keep_text,
            errors=errors,
        )
        if type(max_output_items) is not int or max_output_items < 1:
            raise ValueError(f"max_output_items must be a positive int, not {max_output_items!r}")
        self._declared = None if declared_tools is None else frozenset(declared_tools)
        self._calls = ToolCallAssembler(max_tool_calls=max_tool_calls)
        self._max_items = max_output_items
        self._seq: int | None = None  # the sequence_number the next numbered event must have
        self._unnumbered = False  # an event without a number came after numbered ones
        self._started = False
        self._items: list[_Item] = []
        self._by_index: dict[int, _Item] = {}
        self._by_id: dict[str, _Item] = {}
        self._text = self._kept()  # without keep_text, nothing: `DialectDecoder._kept`
        self._reasoning = self._kept()
        self._carrier: ReasoningCarrier | None = None
        self._refusal = self._kept()
        self._finish: Finished | None = None
        self._usage: Usage | None = None
        self._failure: Failure | None = None
        self._errored = False  # an error event came
        self._tool_calls: tuple[ToolCall, ...] = ()
        self._ended = False  # the end event came
        self._open_cut = False  # it came with a call still open: a cut (`_finished`)
        self._ignored = 0
        self.ignored_types: set[str] = set()
        """The event types this stream sent that were ignored (Rule 7), at most
        `MAX_IGNORED_TYPES` of them."""
        self.response_id = ""
        self.model = ""
        self._template: Template | None = (
            None  # the last delta event's bytes (`svir_proto._template`)
        )
        self._max_event = max_event_size
        self._room = max_result_size - len(SEPARATOR)
        """What the deltas a template reads may add to the result: `_piece` may add a
        separator."""
        self._budget = BUDGET

    # -- the result ------------------------------------------------------------------------

    @property
    def next_sequence(self) -> int | None:
        """The ``sequence_number`` the stream's next event takes, as far as its events were
        read whole (``None`` before the first numbered one): where a writer that ends the
        stream in its place numbers on from (a gateway whose relay of it broke off)."""
        return self._seq

    @property
    def result(self) -> Completion:
        """Everything the stream has said so far; see `Completion`."""
        finish = self._finish
        return Completion(
            text=self._joined(self._text),
            reasoning=self._joined(self._reasoning),
            reasoning_carrier=self._carrier,
            reasoning_blocks=tuple(self._blocks),
            refusal=self._joined(self._refusal),
            tool_calls=self._tool_calls,
            pending_tool_calls=() if self._tool_calls else self._calls.pending(),
            finish_reason=None if finish is None else finish.reason,
            finish_raw=None if finish is None else finish.raw,
            usage=self._usage,
            error=self._failure,
            done=self._ended and not self._open_cut,
            closed=self._closed,
            cut=self._cut or self._open_cut,
            usage_missing=self._usage is None
            and self._failure is None
            and (self._ended or self._closed),
            filtered=finish is not None and finish.reason is FinishReason.CONTENT_FILTER,
            ignored_after_done=self._ignored,
            problems=tuple(self._problems),
            complete=self._complete(),
        )

    def _complete(self) -> bool:
        return (
            self._ended
            and not self._open_cut
            and self._finish is not None
            and self._failure is None
            and self._deferred is None  # a stream that broke the protocol is never whole
        )

    # -- one SSE event -----------------------------------------------------------------------

    def feed(self, data: bytes | bytearray | memoryview) -> list[Event]:
        """`DialectDecoder.feed`, with the template first: a piece that is exactly one typed
        event repeating the last delta's bytes (``event: NAME``, ``data: `` the template's
        bytes, a blank line; a live stream's every read) is read by the template alone
        (`Template.one`), without the framer's tests, as the typed express would read it; in
        any other piece, the run of such events it completes is read ahead of the lanes
        (`DialectDecoder._ahead`), which take what follows."""
        template = self._template
        if (
            template is not None
            and type(data) is bytes
            and (self._fast or (self._fast is False and b"\n" in data))  # (else none ends)
            and self._framer.gap == 8
            and (seq := self._numbering(template)) is not None
        ):
            size = len(data)
            text = template.one(data, seq) if self._fast and size <= self._max_event else None
            if text is not None:
                # (unweighted: without keep_text, a text this long goes the general way, which
                # counts it as nothing)
                if self._size + len(text) <= self._room:
                    self._skipped += size
                    kind, rec, _, pieces = template.hot
                    if text and (kind == "t" or kind == "a"):  # `_took`'s commonest cases
                        template.hits += 1
                        if template.numbered:
                            self._seq = seq + 1
                        pieces.append(text)
                        if kind == "a":
                            self._size += len(text)
                            return [tool_call_delta(rec.call, text)]
                        self._size += len(text) * self._weight
                        self._text.append(text)
                        return [text_delta(text)]
                    return self._took(template, [text] if text else [], 1, len(text))
            else:
                got = self._ahead(template, data, seq, self._room_for(template))
                if got is not None:
                    texts, count, rest = got
                    out = self._took(template, texts, count, sum(map(len, texts)))
                    return self._then(out, rest)
        return DialectDecoder.feed(self, data)

    _on_batch = DialectDecoder._batch_runs
    _on_typed = DialectDecoder._runs

    def _on_event(self, sse_type: str | None, data: bytes | bytearray, at: int) -> None:
        if not self._hot(None, (data,), 0):
            self._general(sse_type, data, at)

    def _hot(
        self, types: Sequence[str] | None, payloads: Sequence[bytes | bytearray], i: int
    ) -> int:
        """Read the deltas from ``payloads[i]`` on that repeat the last delta's bytes, with
        the numbers the stream expects (`Template.run`), as the general way would read them; return
        the index of the first one it did not read, for the general way (which also reports
        what is wrong with it, if anything is). Nothing here raises: a delta that would pass
        ``max_result_size`` is left to the general way, which says where."""
        template = self._template
        if template is None:
            return i
        seq = self._numbering(template)
        if seq is None:
            return i
        room = self._room_for(template)
        texts, j, left = template.run(payloads, i, seq, room)
        if j > i:
            self._queue.extend(self._took(template, texts, j - i, room - left))
        return j

    def _room_for(self, template: Template) -> int:
        """What the deltas ``template`` reads may add to the result (`_room`): a call's
        arguments always count; text, refusal and reasoning only when kept."""
        if self._keep_text or template.hot[0] == "a":
            return self._room - self._size
        return sys.maxsize

    def _numbering(self, template: Template) -> int | None:
        """The number the template's next delta must have (0 when the stream numbers none),
        or ``None`` when no delta may be read by it now: the stream ended; a numbered template
        before the first number; an unnumbered one on a numbered stream, which the general way
        notes."""
        seq = self._seq
        if self._ended:
            return None
        if template.numbered:
            return seq
        if seq is not None and not self._unnumbered:
            return None
        return 0

    def _took(self, template: Template, texts: list[str], count: int, added: int) -> list[Event]:
        """Take ``count`` deltas a template read, ``texts`` their texts that are not empty,
        ``added`` characters in all (within `_room`); return their events."""
        template.hits += count
        if template.numbered:
            self._seq += count  # type: ignore[operator]  # numbered: an int
        if not texts:
            return []
        kind, rec, key, pieces = template.hot
        if kind == "a":
            call = rec.call  # (a comprehension: a partial costs more for one event per read)
            out: list[Event] = [tool_call_delta(call, text) for text in texts]
        elif kind == "t":
            self._text.extend(texts)
            out = list(map(text_delta, texts))
        elif kind != "r" and rec.last_part == key:  # the reasoning part as before
            self._reasoning.extend(texts)
            self._block.extend(texts)
            carrier = template.carrier
            out = [reasoning_delta(text, carrier) for text in texts]
        else:  # a refusal, or a reasoning part after another: what _piece says (it counts)
            queue = self._queue
            self._queue = []
            for text in texts:
                self._piece(rec, key, text, 0)  # (so the offset is never reported)
            out, self._queue = self._queue, queue
            return out
        pieces.extend(texts)
        self._size += added if kind == "a" else added * self._weight
        return out

    def _general(self, sse_type: str | None, data: bytes | bytearray, at: int) -> None:
        """One event, the general way (`_read`); one that raises was not read whole, and
        leaves `next_sequence` as it found it."""
        seq = self._seq
        try:
            self._read(sse_type, data, at)
        except BaseException:
            self._seq = seq
            raise

    def _read(self, sse_type: str | None, data: bytes | bytearray, at: int) -> None:
        """One event, the general way: parsed, checked, dispatched on its type."""
        if self._ended:
            if data != _DONE:
                self._ignored += 1  # Rule 5
            return
        if len(data) > self._deep:  # orjson nests deeper, and bounds nothing
            obj = self._long(data, at, "an event's data")
        else:
            try:
                obj = self._loads(data)
            except (ValueError, RecursionError):
                if data == _DONE:  # Rule 5: Chat Completions' marker, not this dialect's
                    self._note("a [DONE] marker came before the end of the response: ignored")
                    return
                obj = self._canonical(data, at, "an event's data")
        if type(obj) is not dict:
            raise PeerProtocolError(
                f"an event's data must be a JSON object, not {type(obj).__name__}", offset=at
            )
        etype = obj.get("type")
        learn = self._budget
        if type(etype) is not str:
            if etype is not None:
                raise PeerProtocolError(
                    f"an event's type must be a string, not {etype!r}"[:200], offset=at
                )
            if sse_type is not None and sse_type != "message":
                etype = sse_type  # a server that names its events on the SSE line only
            elif "error" in obj:
                etype = "error"  # a proxy's bare {"error": {...}}
            else:
                raise PeerProtocolError("an event's data has no type", offset=at)
            obj["type"] = etype
            learn = 0  # bytes that do not say their type: another SSE name would mean another
        seq = obj.get("sequence_number")
        if seq is not None:  # Rule 1
            if type(seq) is not int or seq < 0:
                raise PeerProtocolError(
                    f"sequence_number must be an integer >= 0, not {seq!r}"[:200], offset=at
                )
            expected = self._seq
            if expected is not None and seq != expected:
                what = (
                    "events were lost" if seq > expected else "an event came again or out of order"
                )
                raise PeerProtocolError(
                    f"sequence_number gap: expected {expected}, got {seq} ({what})", offset=at
                )
            self._seq = seq + 1
        elif self._seq is not None and not self._unnumbered:
            self._unnumbered = True
            self._note("some events have no sequence_number: their order is not checked")
        delta = _DELTAS.get(etype)
        if delta is not None:  # Rule 3's deltas, one way for all five
            kind, part, index_key = delta
            rec = self._item_for(obj, kind, at)
            text = _string(obj, "delta", at)
            key = None if index_key is None else (part, _index(obj, index_key))
            if key is None:
                self._arguments(rec, text, at)
            else:
                self._piece(rec, key, text, at)
            if learn:
                pieces: list[str] | _Tally | Pieces | None
                if key is None:
                    pieces = self._calls.calls[rec.call].args
                else:
                    pieces = rec.parts.get(key)
                    if pieces is None:
                        pieces = self._new_part(rec, key, at)
                self._learn(data, seq, (rec, key, pieces), sse_type)
            return
        handler = _HANDLERS.get(etype)
        if handler is None:  # Rule 7
            if len(self.ignored_types) < MAX_IGNORED_TYPES and len(etype) <= MAX_NOTE:
                self.ignored_types.add(etype)
            if etype == "response.output_text.annotation.added":
                self._note(_ANNOTATIONS)
            return
        handler(self, obj, at)

    def _learn(
        self,
        data: bytes | bytearray,
        seq: object,
        target: tuple[_Item, Any, list[str] | _Tally | Pieces],
        sse_type: str | None,
    ) -> None:
        """Keep the bytes of a delta read the general way (`Template.learn`), within the budget, and
        the head of a typed event that carries them (for `feed`'s express)."""
        self._budget = budget_after(self._template, self._budget)
        if not self._budget:
            self._template = None
            return
        template = Template.learn(data, seq if type(seq) is int else None, DELTA_KEY, NUMBER_KEY)
        if template is not None:
            rec, key, pieces = target
            kind = "a" if key is None else key[0]
            # the kind of part (t text, r refusal, s summary, c reasoning text, a arguments),
            # the item, the part's key and its pieces
            template.hot = (kind, rec, key, pieces)
            template.carrier = "summary" if kind == "s" else "reasoning_text"
            if sse_type is not None:
                template.typed(sse_type)
        else:
            self._budget -= 1  # a try that could not learn is a try (Rule 5 of `_template`)
        self._template = template

    # -- Rule 2: the response's identity -------------------------------------------------

    def _on_lifecycle(self, obj: dict[str, Any], at: int) -> None:
        response = obj.get("response")
        if type(response) is not dict:
            raise PeerProtocolError(f"{obj['type']} needs a response object", offset=at)
        self._identify(response)

    def _identify(self, response: dict[str, Any]) -> None:
        rid = response.get("id")
        model = response.get("model")
        if isinstance(model, str) and model:
            self.model = model
        if isinstance(rid, str) and rid:
            if self.response_id and rid != self.response_id:
                self._note("the response id changes between events")
            else:
                self.response_id = rid
        if not self._started:
            self._started = True
            created = response.get("created_at")
            if type(created) is float and created.is_integer():
                created = int(created)
            self._queue.append(
                StreamStarted(
                    response_id=self.response_id,
                    model=self.model,
                    created=created if type(created) is int and created > 0 else None,
                )
            )

    def _start(self) -> None:
        """A server that never said who it is (no ``response.created``)."""
        if not self._started:
            self._started = True
            self._queue.append(StreamStarted(response_id="", model=""))

    # -- Rule 3: output items --------------------------------------------------------------

    def _new_item(self, kind: str, item_id: str, index: int | None, at: int) -> _Item:
        if len(self._items) >= self._max_items:
            raise PeerProtocolError(
                f"more than max_output_items ({self._max_items}) output items",
                offset=at,
                limit="max_output_items",
                limit_value=self._max_items,
            )
        if index is not None and index in self._by_index:
            raise PeerProtocolError(f"output item {index} was added twice", offset=at)
        if index is None and item_id in self._by_id:
            raise PeerProtocolError(f"output item {item_id!r} was added twice", offset=at)
        self._grow(ITEM_SIZE + len(item_id or ""), at)
        self._start()
        rec = _Item(kind, item_id)
        if index is not None:
            self._by_index[index] = rec
        if item_id:
            self._by_id[item_id] = rec
        self._items.append(rec)
        if kind == "function_call":
            rec.call = len(self._calls.calls)
            self._calls.apply(rec.call, None, None, None, at)
        elif kind not in ("message", "reasoning"):
            self._note(f"output items of type {kind!r} are not carried")
        return rec

    def _item_for(self, obj: dict[str, Any], kind: str, at: int) -> _Item:
        """The item an event is about (Rule 3), opened if it was never added."""
        index = obj.get("output_index")
        iid = obj.get("item_id")
        rec = None
        if type(index) is int:
            rec = self._by_index.get(index)
        else:
            index = None
        if rec is None and type(iid) is str:
            rec = self._by_id.get(iid)
        if rec is None:
            if index is None and type(iid) is not str and self._items:
                rec = self._items[-1]  # a server that says neither: the item it last opened
            else:
                self._note("an event came for an output item that was never added")
                return self._new_item(kind, iid if type(iid) is str else "", index, at)
        elif type(iid) is str and iid != rec.id:
            self._note("item_id changes between events of one output item")
        if rec.kind != kind:
            raise PeerProtocolError(
                f"{obj['type']} for output item {rec.id!r}, which is a {rec.kind}"[:200], offset=at
            )
        return rec

    def _on_item_added(self, obj: dict[str, Any], at: int) -> None:
        item = _object(obj, "item", at)
        kind = _kind(item, at)
        index = obj.get("output_index")
        iid = item.get("id")
        rec = self._new_item(
            kind,
            iid if type(iid) is str else "",
            index if type(index) is int else None,
            at,
        )
        self._item_whole(rec, item, at, done=False)

    def _on_item_done(self, obj: dict[str, Any], at: int) -> None:
        item = _object(obj, "item", at)
        kind = _kind(item, at)
        iid = item.get("id")
        probe = {"type": obj["type"], "output_index": obj.get("output_index")}
        if type(iid) is str:
            probe["item_id"] = iid
        if type(probe["output_index"]) is int or (type(iid) is str and iid in self._by_id):
            rec = self._item_for(probe, kind, at)
        else:  # an item sent whole, never added
            rec = self._new_item(kind, iid if type(iid) is str else "", None, at)
        self._item_whole(rec, item, at, done=True)

    def _item_whole(self, rec: _Item, item: dict[str, Any], at: int, *, done: bool) -> None:
        """What an item object says whole (at ``.added``, ``.done``, or in the final
        response): each value settled against its deltas (Rule 4)."""
        kind = rec.kind
        if kind == "message":
            content = item.get("content")
            parts = (
                self._entries(content, "a message item's content", at)
                if type(content) is list
                else ()
            )
            if self._unlisted(rec, "trc", len(parts)):
                return
            for i, part in enumerate(parts):
                if type(part) is dict:
                    self._settle_part(rec, i, part, at)
        elif kind == "function_call":
            self._settle_call(rec, item, at)
            rec.done = rec.done or done
        elif kind == "reasoning":
            for key, field in (("s", "summary"), ("c", "content")):
                given = item.get(field)
                listed = (
                    self._entries(given, f"a reasoning item's {field}", at)
                    if type(given) is list
                    else ()
                )
                if self._unlisted(rec, key, len(listed)):
                    continue
                for i, part in enumerate(listed):
                    if type(part) is dict and type(part.get("text")) is str:
                        self._settle(rec, (key, i), part["text"], at)
            if done:
                signature = item.get("encrypted_content")
                if type(signature) is str and signature:
                    self._sign(
                        ReasoningSignature(
                            signature=signature,
                            carrier=rec.carrier or "summary",
                            item_id=rec.id or None,
                        ),
                        at,
                    )
                else:
                    self._block.clear()  # unsigned: no block to send back

    def _unlisted(self, rec: _Item, kinds: str, listed: int) -> bool:
        """Whether deltas of ``kinds`` gave a part past the ``listed`` parts a whole item gives
        (when it gives any): its parts are not the deltas', and none is settled against them,
        which is noted (attack 49b F3: a text streamed as part 1, given whole as part 0, went
        out twice)."""
        if listed:
            for key in rec.parts:
                if key[0] in kinds and key[1] >= listed:
                    self._differs(rec, key)
                    return True
        return False

    def _settle_part(self, rec: _Item, index: int, part: dict[str, Any], at: int) -> None:
        kind = part.get("type")
        if kind == "output_text" and type(part.get("text")) is str:
            if part.get("annotations"):
                self._note(_ANNOTATIONS)
            self._settle(rec, ("t", index), part["text"], at)
        elif kind == "refusal" and type(part.get("refusal")) is str:
            self._settle(rec, ("r", index), part["refusal"], at)
        elif kind == "reasoning_text" and type(part.get("text")) is str:
            self._settle(rec, ("c", index), part["text"], at)

    def _settle(self, rec: _Item, key: tuple[str, int], final: str, at: int) -> None:
        """Rule 4 for a text: ``final`` is the part's whole value."""
        pieces = rec.parts.get(key)
        if isinstance(pieces, _Tally):  # not kept: by its length and CRC
            if not pieces.begins(final):
                self._differs(rec, key)
            elif len(final) > pieces.size:
                self._late(rec, key, pieces.size)
                self._piece(rec, key, final[pieces.size :], at)
            return
        have = self._joined(pieces) if pieces else ""
        if final == have:
            return
        if final.startswith(have):
            self._late(rec, key, len(have))
            self._piece(rec, key, final[len(have) :], at)
            return
        self._differs(rec, key)

    def _late(self, rec: _Item, key: tuple[str, int], had: int) -> None:
        """A part's whole value adds to what its deltas gave (``had`` characters): said when
        parts after it were streamed already, as what it adds goes after them (attack 50b
        N8; review 51 r6: its rest, not only a part that had streamed nothing)."""
        if self._streamed_after(rec, key):
            what = "rest of the" if had else "whole"
            self._note(
                f"the {what} {_WHAT[key[0]]} of output item {rec.id!r}, part {key[1]}, "
                "came after the parts after it were streamed: written after them"
            )

    @staticmethod
    def _streamed_after(rec: _Item, key: tuple[str, int]) -> bool:
        """Whether deltas gave a part after part ``key`` of its list (a message's content,
        a reasoning item's summary or its content), kept as they came (review 50 r4: a scan
        of the item's parts at each whole part was quadratic)."""
        return rec.streamed.get(_LIST[key[0]], -1) > key[1]

    def _differs(self, rec: _Item, key: tuple[str, int]) -> None:
        self._note(
            f"the whole {_WHAT[key[0]]} of output item {rec.id!r} differs from its deltas: "
            "the deltas are kept"
        )

    def _settle_call(self, rec: _Item, item: dict[str, Any], at: int) -> None:
        """Rule 4 for a call's ``call_id`` (set once) and ``name`` (its rest, when the name
        so far begins it), then its arguments."""
        call = self._calls.calls[rec.call]
        call_id = item.get("call_id")
        name = item.get("name")
        new_id = None
        if type(call_id) is str and call_id:
            if not call.id:
                new_id = call_id
            elif call_id != call.id:
                self._note("a tool call's call_id changes between events: the first is kept")
        new_name = None
        if type(name) is str and name != call.name:
            if name.startswith(call.name):
                new_name = name[len(call.name) :]
            else:
                self._note("a tool call's name changes between events: the first is kept")
        if new_id is not None or new_name is not None:
            delta = self._calls.apply(rec.call, new_id, new_name, None, at)
            self._grow(len(delta.name or "") + len(delta.id or ""), at)
            self._queue.append(delta)
        arguments = item.get("arguments")
        if type(arguments) is str:
            self._settle_arguments(rec, arguments, at)

    def _settle_arguments(self, rec: _Item, final: str, at: int) -> None:
        """Rule 4 for a tool call's arguments: a mismatch is an error."""
        call = self._calls.calls[rec.call]
        have = call.args.text()
        if final == have:
            return
        if final.startswith(have):
            self._arguments(rec, final[len(have) :], at)
            return
        raise ToolCallError(
            f"tool call {rec.call} (id {call.id!r}): the whole arguments {final[:80]!r} are not "
            f"the joined deltas {have[:80]!r}",
            index=rec.call,
            call_id=call.id,
            offset=at,
        )

    def _piece(self, rec: _Item, key: tuple[str, int], text: str, at: int) -> None:
        """A delta of part ``key`` of an item."""
        if not text:
            return
        kind = key[0]
        if kind == "t":
            self._size += len(text) * self._weight
            if self._size > self._max_result:
                self._grow(0, at)  # raises
            self._text.append(text)
            self._queue.append(text_delta(text))
        elif kind == "r":
            self._grow(len(text) * self._weight, at)
            self._refusal.append(text)
            self._queue.append(RefusalDelta(text=text))
        else:
            carrier: ReasoningCarrier = "summary" if kind == "s" else "reasoning_text"
            shown = text
            if rec.has_text and rec.last_part != key:
                shown = SEPARATOR + text  # Rule 3: the parts of one item
            self._grow(len(shown) * self._weight, at)
            if self._carrier is None:
                self._carrier = carrier
            if rec.carrier is None:
                rec.carrier = carrier
            self._reasoning.append(shown)
            self._block.append(shown)
            self._queue.append(ReasoningDelta(text=shown, carrier=carrier))
        rec.last_part = key
        rec.has_text = True
        pieces = rec.parts.get(key)
        if pieces is None:
            pieces = self._new_part(rec, key, at)
        pieces.append(text)

    def _new_part(self, rec: _Item, key: tuple[str, int], at: int) -> list[str] | _Tally:
        """Where part ``key`` of an item keeps its deltas (`_part`), noted as the highest of
        its list so far (`_streamed_after`)."""
        rec.streamed[_LIST[key[0]]] = max(rec.streamed.get(_LIST[key[0]], -1), key[1])
        pieces = rec.parts[key] = self._part(at)
        return pieces

    def _part(self, at: int) -> list[str] | _Tally:
        """Where a part's deltas are kept: a list, or without ``keep_text`` a `_Tally`; it
        weighs `svir_proto._weights.PART` either way (a peer chooses how many parts)."""
        self._grow(weights.PART, at)
        return [] if self._keep_text else _Tally()

    def _arguments(self, rec: _Item, text: str, at: int) -> None:
        if text:
            self._size += len(text)
            if self._size > self._max_result:
                self._grow(0, at)  # raises
            self._queue.append(self._calls.arguments(rec.call, text, at))

    # -- the deltas and whole values, one handler per event type -------------------------

    def _on_text_done(self, obj: dict[str, Any], at: int) -> None:
        rec = self._item_for(obj, "message", at)
        self._settle(rec, ("t", _index(obj, "content_index")), _string(obj, "text", at), at)

    def _on_refusal_done(self, obj: dict[str, Any], at: int) -> None:
        rec = self._item_for(obj, "message", at)
        self._settle(rec, ("r", _index(obj, "content_index")), _string(obj, "refusal", at), at)

    def _on_part(self, obj: dict[str, Any], at: int) -> None:
        part = _object(obj, "part", at)
        kind = "reasoning" if part.get("type") == "reasoning_text" else "message"
        rec = self._item_for(obj, kind, at)
        self._settle_part(rec, _index(obj, "content_index"), part, at)

    def _on_arguments_done(self, obj: dict[str, Any], at: int) -> None:
        rec = self._item_for(obj, "function_call", at)
        self._settle_arguments(rec, _string(obj, "arguments", at), at)
        rec.done = True  # its arguments are whole

    def _on_summary_part(self, obj: dict[str, Any], at: int) -> None:
        part = _object(obj, "part", at)
        rec = self._item_for(obj, "reasoning", at)
        if type(part.get("text")) is str:
            self._settle(rec, ("s", _index(obj, "summary_index")), part["text"], at)

    def _on_summary_done(self, obj: dict[str, Any], at: int) -> None:
        rec = self._item_for(obj, "reasoning", at)
        self._settle(rec, ("s", _index(obj, "summary_index")), _string(obj, "text", at), at)

    def _on_reasoning_done(self, obj: dict[str, Any], at: int) -> None:
        rec = self._item_for(obj, "reasoning", at)
        self._settle(rec, ("c", _index(obj, "content_index")), _string(obj, "text", at), at)

    # -- Rules 5 and 6: the end ------------------------------------------------------------

    def _final(self, obj: dict[str, Any], at: int) -> dict[str, Any]:
        """The final response: its identity, and the items it has that were never streamed."""
        response = obj.get("response")
        if type(response) is not dict:
            raise PeerProtocolError(f"{obj['type']} needs a response object", offset=at)
        self._identify(response)
        output = response.get("output")
        if type(output) is list:
            for i, rec in enumerate(self._items):  # a call streamed but never said done
                if rec.kind == "function_call" and not rec.done and i < len(output):
                    item = output[i]
                    if type(item) is dict and item.get("type") == "function_call":
                        self._item_whole(rec, item, at, done=True)  # the output says it whole
            for item in output[len(self._items) :]:
                if type(item) is dict:
                    rec = self._new_item(_kind(item, at), "", None, at)
                    rec.id = item["id"] if type(item.get("id")) is str else ""
                    self._item_whole(rec, item, at, done=True)
        usage = usage_in(response.get("usage"))
        if usage is not None:
            self._usage = usage
        return response

    def _on_completed(self, obj: dict[str, Any], at: int) -> None:
        response = self._final(obj, at)
        status = response.get("status")
        self._finished(Finished(reason=FinishReason.STOP, raw="completed"), at)
        if isinstance(status, str) and status != "completed":
            self._note(f"response.completed with status {status!r}")

    def _on_incomplete(self, obj: dict[str, Any], at: int) -> None:
        response = self._final(obj, at)
        details = response.get("incomplete_details")
        reason = details.get("reason") if type(details) is dict else None
        raw = reason if isinstance(reason, str) and reason else "incomplete"
        self._finished(Finished(reason=INCOMPLETE.get(raw, FinishReason.OTHER), raw=raw), at)

    def _finished(self, finish: Finished, at: int) -> None:
        calls = self._calls.finish(self._declared) if self._calls.calls else ()
        open_calls = [r.id or str(i) for i, r in enumerate(self._items)
                      if r.kind == "function_call" and not r.done]  # fmt: skip
        if open_calls and self._failure is None:  # their arguments never ended: a cut
            self._note(
                f"the response ended with function_call items never done: {open_calls}: their "
                "arguments may not be whole, so the stream is a cut"
            )
            self._ended = self._open_cut = True  # nothing after it is read; not done
            self._terminate(done=False)
            return
        if calls and finish.reason is FinishReason.STOP:
            finish = Finished(reason=FinishReason.TOOL_CALLS, raw=finish.raw)
        self._finish = finish
        self._queue.append(finish)
        if self._usage is not None:
            self._queue.append(self._usage)
        if self._failure is None:
            self._tool_calls = calls
            self._queue.extend(calls)
            for call in calls:
                if call.declared is False:
                    self._note(
                        f"tool call {call.id!r} calls {call.name!r}, not declared by the request"
                    )
        self._end(done=True)

    def _on_failed(self, obj: dict[str, Any], at: int) -> None:
        response = self._final(obj, at)
        error = response.get("error")
        self._fail(failure(error if error is not None else "the response failed"))
        if self._usage is not None:
            self._queue.append(self._usage)
        self._end(done=True)

    def _on_error(self, obj: dict[str, Any], at: int) -> None:
        self._errored = True
        self._fail(failure(obj))

    def _fail(self, f: Failure) -> None:
        if self._failure is None:
            self._failure = f
            self._queue.append(StreamFailed(error=f))
        elif f.message != self._failure.message:
            self._note("another failure came after the first: the first is kept")

    def _end(self, *, done: bool) -> None:
        self._ended = done
        self._terminate(done=done)

    def _on_body_end(self) -> None:
        if not self._ended:
            if self._errored:  # Rule 6: its server ended it with the error
                self._end(done=True)
                return
            self._note("the body ended before response.completed")
            self._terminate(done=False)

    def _after_end(self, exc: PeerProtocolError) -> bool:
        self._note(f"after the end of the response: {exc}")
        return True


_FINAL_OF: Final = {"failed": "response.failed", "incomplete": "response.incomplete"}


def decode_response(body: bytes | bytearray, **options: Any) -> tuple[list[Event], Completion]:
    """A non-streamed answer (``stream: false``): its response object read as the final event
    of a stream that sent nothing else (``response.completed``, or ``.incomplete`` or
    ``.failed`` as its ``status`` says), so its events and `Completion` are what that stream
    gives: each text and each call's arguments one delta, then the end (Rule 5).

    Args:
        options: as `ResponsesStreamDecoder` takes them.

    Raises:
        PeerProtocolError: the body is not a JSON object, or breaks a rule; an offset is one
            in the event made of it (``data: {"type": ..., "response": BODY}``).
    """
    try:
        obj = _json.canonical(body)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise json_error(body, 0, exc, "a response") from exc
    if type(obj) is not dict:
        raise PeerProtocolError("a response must be a JSON object", offset=0)
    status = obj.get("status")
    etype = _FINAL_OF.get(status, "response.completed") if isinstance(status, str) else None
    event = {"type": etype or "response.completed", "response": obj}
    decoder = ResponsesStreamDecoder(**options)
    events = decoder.feed(b"data: " + _json.dumps(event) + b"\n\n") + decoder.close()
    return events, decoder.result


def _object(obj: dict[str, Any], name: str, at: int) -> dict[str, Any]:
    value = obj.get(name)
    if type(value) is not dict:
        raise PeerProtocolError(f"{obj['type']} needs {name!r}, an object", offset=at)
    return value


def _kind(item: dict[str, Any], at: int) -> str:
    kind = item.get("type")
    if type(kind) is not str or not kind:
        raise PeerProtocolError(f"an output item needs a type, not {kind!r}"[:200], offset=at)
    return kind


def _string(obj: dict[str, Any], name: str, at: int) -> str:
    value = obj.get(name)
    if type(value) is not str:
        raise PeerProtocolError(
            f"{obj['type']} needs {name!r}, a string, not {value!r}"[:200], offset=at
        )
    return value


def _index(obj: dict[str, Any], name: str) -> int:
    value = obj.get(name)
    return value if type(value) is int and value >= 0 else 0


_DELTAS: Final[dict[str, tuple[str, str, str | None]]] = {
    # event type: (the kind of item, the kind of part, the key of the part's index)
    "response.output_text.delta": ("message", "t", "content_index"),
    "response.refusal.delta": ("message", "r", "content_index"),
    "response.reasoning_summary_text.delta": ("reasoning", "s", "summary_index"),
    "response.reasoning_text.delta": ("reasoning", "c", "content_index"),
    "response.function_call_arguments.delta": ("function_call", "a", None),
}
_HANDLERS: Final[dict[str, Handler]] = {
    "response.created": ResponsesStreamDecoder._on_lifecycle,
    "response.in_progress": ResponsesStreamDecoder._on_lifecycle,
    "response.queued": ResponsesStreamDecoder._on_lifecycle,
    "response.output_item.added": ResponsesStreamDecoder._on_item_added,
    "response.output_item.done": ResponsesStreamDecoder._on_item_done,
    "response.content_part.added": ResponsesStreamDecoder._on_part,
    "response.content_part.done": ResponsesStreamDecoder._on_part,
    "response.output_text.done": ResponsesStreamDecoder._on_text_done,
    "response.refusal.done": ResponsesStreamDecoder._on_refusal_done,
    "response.function_call_arguments.done": ResponsesStreamDecoder._on_arguments_done,
    "response.reasoning_summary_part.added": ResponsesStreamDecoder._on_summary_part,
    "response.reasoning_summary_part.done": ResponsesStreamDecoder._on_summary_part,
    "response.reasoning_summary_text.done": ResponsesStreamDecoder._on_summary_done,
    "response.reasoning_text.done": ResponsesStreamDecoder._on_reasoning_done,
    "response.completed": ResponsesStreamDecoder._on_completed,
    "response.incomplete": ResponsesStreamDecoder._on_incomplete,
    "response.failed": ResponsesStreamDecoder._on_failed,
    "error": ResponsesStreamDecoder._on_error,
}
