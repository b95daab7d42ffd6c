"""LLM-Stream 1.0 events (draft-spk-agentproto-llm-stream-00, section 5), client side.

`LLMStreamDecoder` checks every event as `LLMStreamEncoder` writes it (``v`` "1.0", ``seq`` from 0
rising by one, the SSE ``event:`` field equal to ``type``, lifecycle order) and decodes it to
the event vocabulary, keeping a `Completion` that means what it means for the OpenAI dialect:
complete is ``stream.end`` after a ``content.stop``, with no error.

Envelope rules the decoder enforces (each a `PeerProtocolError`):

Rule 1: ``data`` is one JSON object (5.1); ``v`` is "1.0"; ``type`` is a string equal to the SSE
    ``event:`` field (5.2).
Rule 2: ``seq`` is an integer from 0, rising by exactly one: a gap names what was expected and
    what came (5.2.1). A stream that reaches 2^53 is terminated (8.4, ``limit="seq"``).
Rule 3: the lifecycle (``_lifecycle``): ``stream.start`` first, ``error`` then only
    ``stream.end``, nothing after ``stream.end``.
Rule 4: each event's required fields, with their types (5.3); a block's ``content.delta`` may not
    follow its ``content.stop``; tool-call ids are unique.
Rule 5: unknown fields and unknown extension namespaces are ignored (5.2). An unknown event
    *type* is checked as an envelope (v, seq, type), then ignored and noted in ``problems``: the
    registry grows by Specification Required (10.2), and a 1.0 client must survive a newer
    server. ``tool.call`` is checked against the declared tools (8.2): an undeclared tool is
    flagged (``declared=False``, a problem noted), never passed off as a declared call.
Rule 6: ``content.stop`` ends a block (4, "each content block is terminated by content.stop"),
    once: a block's second stop is not read (noted; attack 73 F1, F2). The primary block's
    (index 0) is the answer's `Finished`; another's is a `BlockStopped` with its index, and,
    when the primary block had none by ``stream.end``, the last of them is the answer's
    `Finished` then, before the end (attack 69 F6: each stop was a `Finished`, and a client
    of one text got two finishes). Each stop is held (``max_result_size``), its raw reason
    with it.

What the draft has no event for travels in the ``"vendor:svir"`` extension (the table is in
`svir_proto.llmstream._wire`); `LLMStreamEncoder` (`svir_proto.llmstream.encoder`) writes it.

Speed: a ``content.delta`` without extensions that repeats the bytes of the one before it, but
for its text and ``seq``, is read by a template instead of the parser (`svir_proto._template`),
while the stream is streaming and its block open; a ``usage`` of the draft's fields alone that
repeats the bytes of the one before it, but for its numbers (a server that reports usage with
every delta, as section 5.3 allows), is read by a pattern whose numbers are holes
(`svir_proto._jsonbytes.counts_pattern`), in a state where a usage leaves the state as it is.
Events, errors and results are the same either way.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Collection, Sequence
from typing import Any, Final

from .. import _weights as weights
from .._deprecated import renamed
from .._dialect import DEFAULT_MAX_RESULT_SIZE, DialectDecoder
from .._jsonbytes import MAX_LEARNED, counts_pattern
from .._template import BUDGET, Template, budget_after
from ..errors import Failure, FailureKind, PeerProtocolError
from ..events import (
    REASONING_CARRIERS,
    BlockStopped,
    Completion,
    Event,
    FilterVerdict,
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
    text_delta,
    usage_counts,
)
from ..openai._toolcalls import DEFAULT_MAX_TOOL_CALLS, too_many_calls
from ..sse import DEFAULT_MAX_EVENT_SIZE, Errors
from ._lifecycle import EVENT_TYPES, State, advance, refusal
from ._wire import (
    DEFAULT_RAW,
    ERROR_CODES,
    MAX_SEQ,
    STOP_REASONS,
    SVIR_EXTENSION,
    VERSION,
    failure_in,
    verdict_in,
)

__all__ = ["ERROR_CODES", "MAX_SEQ", "STOP_REASONS", "SVIR_EXTENSION", "LLMStreamDecoder"]

DELTA_KEY: Final = b'"text":'
"""The key of a ``content.delta``'s text, and of its number (`svir_proto._template` Rule 1)."""
NUMBER_KEY: Final = b'"seq":'
_DELTA: Final = "content.delta"
_USAGE: Final = "usage"
_USAGE_KEYS: Final = frozenset({"v", "seq", "type", "input_tokens", "output_tokens"})
_COUNTED: Final = ("seq", "input_tokens", "output_tokens")
__getattr__ = renamed(__name__, {"StreamDecoder": "LLMStreamDecoder"}, globals())


# -- decoding ---------------------------------------------------------------------------------


class LLMStreamDecoder(DialectDecoder):
    """Decode an LLM-Stream response body (client side); see the module docstring's rules.

    Args:
        declared_tools: the tools the request declared (section 8.2); ``None``: not checked.
        max_event_size: bytes one SSE event may take.
        max_tool_calls: tool calls one response may make.
        max_result_size: characters of text, reasoning, signatures and tool calls the result may
            hold (each block, call and verdict weighs a fixed amount too: `svir_proto._weights`).
        keep_text: keep the text, reasoning and refusal in ``result`` (``False``: the deltas
            are still events, but neither kept, so ``result.text``, ``result.reasoning``,
            ``result.refusal`` and the text of each of ``result.reasoning_blocks`` are empty,
            nor counted against ``max_result_size``, which still bounds the signatures and the
            tool calls' arguments: a relay that passes the deltas on holds no copy of them).
        errors: invalid UTF-8 and lone surrogates: ``"strict"`` or ``"replace"`` (U+FFFD).
    """

    TEXTS = frozenset({"text", "arguments", "reasoning", "refusal"})
    """Where a delta's text, reasoning and refusal and a call's arguments are (`_halves`)."""

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
        self._max_tool_calls = max_tool_calls
        self._state = State.IDLE
        self._seq = 0
        self._stopped: set[int] = set()
        self._text = self._kept()  # without keep_text, nothing: `DialectDecoder._kept`
        self._reasoning = self._kept()
        self._carrier: ReasoningCarrier | None = None
        self._refusal = self._kept()
        self._calls: list[ToolCall] = []
        self._ids: set[str] = set()
        self._finish: Finished | None = None
        self._usage: Usage | None = None
        self._verdicts: list[FilterVerdict] = []
        self._failure: Failure | None = None
        self.model: str | None = None
        self.request_id: str | None = None
        self._template: Template | None = None  # the last content.delta's bytes
        self._max_event = max_event_size
        self._budget = BUDGET
        # the last usage's bytes, its numbers holes: a pattern's fullmatch, and the group of
        # each of `_COUNTED`; learned again (within a budget) when a usage does not repeat it
        self._counts: tuple[Callable[..., re.Match[bytes] | None], tuple[int, ...]] | None = None
        self._counts_budget = BUDGET

    @property
    def result(self) -> Completion:
        """Everything the stream has said so far; see `Completion`."""
        finish = self._finish
        done = self._state is State.ENDED
        return Completion(
            text=self._joined(self._text),
            reasoning=self._joined(self._reasoning),
            reasoning_carrier=self._carrier,
            reasoning_blocks=tuple(self._blocks),
            refusal=self._joined(self._refusal),
            tool_calls=tuple(self._calls),
            finish_reason=None if finish is None else finish.reason,
            finish_raw=None if finish is None else finish.raw,
            usage=self._usage,
            filter_verdicts=tuple(self._verdicts),
            error=self._failure,
            done=done,
            closed=self._closed,
            cut=self._cut,
            filtered=any(v.blocks for v in self._verdicts)
            or (finish is not None and finish.reason is FinishReason.CONTENT_FILTER),
            problems=tuple(self._problems),
            complete=self._complete(),
        )

    def _complete(self) -> bool:
        return (
            self._state is State.ENDED
            and self._finish is not None
            and self._failure is None
            and self._deferred is None
        )

    # -- the deltas a template reads (`svir_proto._template`) ------------------------------

    def feed(self, data: bytes | bytearray | memoryview) -> list[Event]:
        """`DialectDecoder.feed`, with the template first: a piece that is exactly one
        ``content.delta`` repeating the last one's bytes (a live stream's every read) is read
        by the template alone (`Template.one`), as the typed express would read it; in any
        other piece, the run of them it completes is read ahead of the lanes
        (`DialectDecoder._ahead`), which take what follows."""
        template = self._template
        if (
            template is not None  # (only while streaming: `_general`)
            and type(data) is bytes
            and (self._fast or (self._fast is False and b"\n" in data))  # (else none ends)
            and self._framer.gap == 8
            and self._seq < MAX_SEQ
        ):
            size = len(data)
            text = template.one(data, self._seq) if self._fast and size <= self._max_event else None
            if text is not None:
                if self._size + len(text) * self._weight <= self._max_result:
                    self._skipped += size
                    if not text:
                        return self._took(template, [], 1)
                    template.hits += 1  # `_took` of one delta, inline: a live stream's every read
                    self._seq += 1
                    self._size += len(text) * self._weight
                    self._text.append(text)
                    return [text_delta(text, template.hot)]
            elif self._seq + size + len(self._framer._buf) < MAX_SEQ:  # a run's numbers too
                got = self._ahead(template, data, self._seq, self._text_room())
                if got is not None:
                    return self._then(self._took(template, got[0], got[1]), got[2])
        return DialectDecoder.feed(self, data)

    _on_typed = DialectDecoder._runs

    def _hot(
        self, types: Sequence[str] | None, payloads: Sequence[bytes | bytearray], i: int
    ) -> int:
        """Read the ``content.delta`` events from ``payloads[i]`` on that repeat the last
        one's bytes, with the numbers the stream expects (`Template.run`), as `_on_event`
        would; return the index of the first one it did not read, for `_on_event` (which
        reports what is wrong with it, if anything is)."""
        template = self._template  # (only while streaming: `_general`)
        if template is None or types is None or types[i] != _DELTA:
            return i  # (simple events: of no type, never content.delta)
        end = len(payloads)
        if types.count(_DELTA) != end:  # the run of deltas from i, in a mixed batch
            end = i + 1
            while end < len(types) and types[end] == _DELTA:
                end += 1
        if self._seq + end - i > MAX_SEQ:
            return i  # the last numbers: _on_event says where the stream stops
        texts, count, _ = template.run(payloads[i:end], 0, self._seq, self._text_room())
        if count:
            self._queue.extend(self._took(template, texts, count))
        return i + count

    def _took(self, template: Template, texts: list[str], count: int) -> list[Event]:
        """Take ``count`` deltas a template read, ``texts`` their texts that are not empty
        (within ``max_result_size``); return their events."""
        template.hits += count
        self._seq += count
        if not texts:
            return []
        self._size += sum(map(len, texts)) * self._weight
        self._text.extend(texts)
        index = template.hot
        return [text_delta(text, index) for text in texts]

    def _learn(self, data: bytes | bytearray, seq: int, index: int) -> None:
        """Keep the bytes of a ``content.delta`` read the general way, within the budget."""
        self._budget = budget_after(self._template, self._budget)
        if not self._budget:
            self._template = None
            return
        template = Template.learn(data, seq, DELTA_KEY, NUMBER_KEY)
        if template is not None:
            template.hot = index  # the block its deltas are of
            template.typed(_DELTA)
        else:
            self._budget -= 1  # a try that could not learn is a try (Rule 5 of `_template`)
        self._template = template

    # -- one event the general way ----------------------------------------------------------

    def _on_event(self, sse_type: str | None, data: bytes | bytearray, at: int) -> None:
        if sse_type != _DELTA or not self._hot((sse_type,), (data,), 0):
            self._general(sse_type, data, at)

    def _general(self, sse_type: str | None, data: bytes | bytearray, at: int) -> None:
        if sse_type == _USAGE and self._counts is not None and self._counted(data):
            return
        if len(data) > self._deep:  # orjson nests deeper, and bounds nothing
            obj = self._long(data, at, "an event's data")
        else:
            try:
                obj = self._loads(data)
            except (ValueError, RecursionError):
                obj = self._canonical(data, at, "an event's data")
        if type(obj) is not dict:  # Rule 1
            raise PeerProtocolError("an event's data must be one JSON object", offset=at)
        v = obj.get("v")
        if v != VERSION:
            raise PeerProtocolError(f"unsupported version v={v!r}: expected '1.0'", offset=at)
        seq = obj.get("seq")
        if type(seq) is not int:  # Rule 2
            raise PeerProtocolError(f"seq must be an integer, not {seq!r}", offset=at)
        if seq >= MAX_SEQ:
            raise PeerProtocolError(
                "seq reached 2^53: the stream is terminated (section 8.4)",
                offset=at,
                limit="seq",
                limit_value=MAX_SEQ,
            )
        if seq != self._seq:
            what = "events were lost" if seq > self._seq else "an event came again or out of order"
            raise PeerProtocolError(f"seq gap: expected {self._seq}, got {seq} ({what})", offset=at)
        type_ = obj.get("type")
        if not isinstance(type_, str):
            raise PeerProtocolError(f"type must be a string, not {type_!r}", offset=at)
        if type_ != (sse_type or "message"):
            shown = "no event: field" if sse_type is None else f"event: {sse_type}"
            raise PeerProtocolError(f"type {type_!r} does not match the SSE {shown}", offset=at)
        self._seq += 1
        if type_ not in EVENT_TYPES:  # Rule 5
            self._note(f"ignored events of unknown type {type_!r}")
            return
        nxt = advance(self._state, type_)  # Rule 3
        if nxt is None:
            raise PeerProtocolError(refusal(self._state, type_, "receive"), offset=at)
        ext = obj.get(SVIR_EXTENSION)
        if not isinstance(ext, dict):
            ext = {}
        handler = _HANDLERS[type_]
        handler(self, obj, ext, at)
        self._state = nxt
        if nxt is not State.STREAMING:
            self._template = None  # deltas may not come now: each is checked
        elif type_ == _DELTA and self._budget and SVIR_EXTENSION not in obj:
            self._learn(data, seq, obj["index"])  # a delta that means its text alone
        if type_ == _USAGE and self._counts_budget and obj.keys() == _USAGE_KEYS:
            self._learn_counts(data, obj)

    def _counted(self, data: bytes | bytearray) -> bool:
        """Read a usage that repeats the last one's bytes but for its numbers, its ``seq`` the
        one expected, as `_general` would; ``False``, having changed nothing, for any other
        (the general way reads it, and says what is wrong with it, if anything is)."""
        match, (seq_at, input_at, output_at) = self._counts  # type: ignore[misc]
        m = match(data)
        if m is None or int(m[seq_at]) != self._seq or self._seq >= MAX_SEQ:
            return False
        if advance(self._state, _USAGE) is not self._state:
            return False  # a usage that changes the state, or may not come now
        self._seq += 1
        self._usage = usage_counts(int(m[input_at]), int(m[output_at]), None)
        self._queue.append(self._usage)
        return True

    def _learn_counts(self, data: bytes | bytearray, obj: dict[str, Any]) -> None:
        """Keep the bytes of a usage of the draft's fields alone (read the general way, so
        valid), its numbers holes, if the pattern reads back the numbers the parser read (a
        key twice, a negative number: not learned)."""
        self._counts_budget -= 1
        if len(data) > MAX_LEARNED:  # `svir_proto._jsonbytes` Rule 4
            return
        pattern, groups = counts_pattern(bytes(data))
        m = re.fullmatch(pattern, data, re.DOTALL)
        keys = [key for key in obj if key in _COUNTED]  # in the order of the bytes
        if groups != 3 or m is None or [int(g) for g in m.groups()] != [obj[k] for k in keys]:
            return
        slots = tuple(keys.index(key) + 1 for key in _COUNTED)
        self._counts = re.compile(pattern, re.DOTALL).fullmatch, slots

    # Rule 4, one handler per event type

    def _on_start(self, obj: dict[str, Any], ext: dict[str, Any], at: int) -> None:
        model = _field(obj, "model", str, at)
        created = _field(obj, "created", int, at)
        rid = obj.get("request_id")
        rid = rid if isinstance(rid, str) else None
        self.model, self.request_id = model, rid
        self._queue.append(
            StreamStarted(response_id="", model=model, created=created, request_id=rid)
        )

    def _on_delta(self, obj: dict[str, Any], ext: dict[str, Any], at: int) -> None:
        index = _field(obj, "index", int, at)
        _field(obj, "role", str, at)
        delta = _field(obj, "delta", dict, at)
        text = delta.get("text")
        if not isinstance(text, str):
            raise PeerProtocolError("content.delta needs delta.text, a string", offset=at)
        if index in self._stopped:
            raise PeerProtocolError(
                f"content.delta for block {index} after its content.stop", offset=at
            )
        if text:
            self._grow(len(text) * self._weight, at)
            self._text.append(text)
            self._queue.append(text_delta(text, index))
        reasoning = ext.get("reasoning")
        wire = ext.get("carrier")
        # a str first: a JSON array or object is not hashable
        carrier: ReasoningCarrier = (
            wire if isinstance(wire, str) and wire in REASONING_CARRIERS else "reasoning"  # type: ignore[assignment]
        )
        if isinstance(reasoning, str) and reasoning:
            self._grow(len(reasoning) * self._weight, at)
            if self._carrier is None:
                self._carrier = carrier
            self._reasoning.append(reasoning)
            self._block.append(reasoning)
            self._queue.append(ReasoningDelta(text=reasoning, carrier=carrier))
        signature = ext.get("signature")
        if isinstance(signature, str) and signature:
            item = ext.get("item_id")
            self._sign(
                ReasoningSignature(
                    signature=signature,
                    carrier=carrier,
                    redacted=ext.get("redacted") is True,
                    item_id=item if isinstance(item, str) else None,
                ),
                at,
            )
        refused = ext.get("refusal")
        if isinstance(refused, str) and refused:
            self._grow(len(refused) * self._weight, at)
            self._refusal.append(refused)
            self._queue.append(RefusalDelta(text=refused))
        verdict = verdict_in(ext.get("filter"))
        if verdict is not None:
            self._grow(weights.verdict(verdict), at)
            self._verdicts.append(verdict)
            self._queue.append(verdict)

    def _on_stop(self, obj: dict[str, Any], ext: dict[str, Any], at: int) -> None:
        index = _field(obj, "index", int, at)
        reason = _field(obj, "stop_reason", str, at)
        self._template = None  # a block's deltas may not follow its stop: each is checked
        if index in self._stopped:  # a block ends once (Rule 6): the first stop is its
            self._note(f"content.stop came again for block {index}: its first is kept")
            return
        if reason not in STOP_REASONS:
            self._note(f"unknown stop_reason {reason!r}")
        normal = STOP_REASONS.get(reason, FinishReason.OTHER)
        raw = ext.get("finish")
        if isinstance(raw, str):  # a svir peer's own finish reason, and its normal form
            with contextlib.suppress(ValueError):
                normal = FinishReason(ext.get("reason"))
        else:
            raw = DEFAULT_RAW.get(reason, reason)
        self._grow(weights.PART + len(raw), at)  # each block's stop is held (attack 73 F1)
        self._stopped.add(index)
        if index:  # another block than the primary: its own stop (Rule 6)
            self._queue.append(BlockStopped(index=index, reason=normal, raw=raw))
            if 0 not in self._stopped:
                self._finish = Finished(reason=normal, raw=raw)  # the answer's, unless it comes
            return
        self._finish = Finished(reason=normal, raw=raw)
        self._queue.append(self._finish)

    def _on_tool(self, obj: dict[str, Any], ext: dict[str, Any], at: int) -> None:
        index = _field(obj, "index", int, at)
        call_id = _field(obj, "id", str, at)
        name = _field(obj, "name", str, at)
        arguments = _field(obj, "arguments", str, at)
        if not call_id or not name:
            raise PeerProtocolError("tool.call needs a non-empty id and name", offset=at)
        if call_id in self._ids:
            raise PeerProtocolError(f"tool.call id {call_id!r} was already used", offset=at)
        if len(self._calls) >= self._max_tool_calls:
            raise too_many_calls(self._max_tool_calls, at)
        self._ids.add(call_id)
        self._grow(weights.CALL + len(arguments) + len(call_id) + len(name), at)
        declared = None if self._declared is None else name in self._declared
        if declared is False:
            self._note(f"tool call {call_id!r} calls {name!r}, not declared by the request")
        call = ToolCall(index=index, id=call_id, name=name, arguments=arguments, declared=declared)
        self._calls.append(call)
        self._queue.append(call)

    def _on_usage(self, obj: dict[str, Any], ext: dict[str, Any], at: int) -> None:
        def extra(key: str) -> int | None:
            value = ext.get(key)
            return value if type(value) is int else None

        self._usage = Usage(
            prompt_tokens=_field(obj, "input_tokens", int, at),
            completion_tokens=_field(obj, "output_tokens", int, at),
            total_tokens=extra("total_tokens"),
            reasoning_tokens=extra("reasoning_tokens"),
            cached_tokens=extra("cached_tokens"),
            cache_creation_tokens=extra("cache_creation_tokens"),
        )
        self._queue.append(self._usage)

    def _on_error(self, obj: dict[str, Any], ext: dict[str, Any], at: int) -> None:
        code = _field(obj, "code", str, at)
        message = _field(obj, "message", str, at)
        if code not in ERROR_CODES:
            self._note(f"unknown error code {code!r}")
        # a svir peer's finer kind and its own code, null included; others have only theirs
        kind, own = failure_in(ext, ERROR_CODES.get(code, FailureKind.SERVER_ERROR), code)
        failure = Failure(kind=kind, message=message, code=own)
        self._failure = failure
        self._queue.append(StreamFailed(error=failure))

    def _on_end(self, obj: dict[str, Any], ext: dict[str, Any], at: int) -> None:
        self._state = State.ENDED  # so that result and StreamEnded agree
        if self._finish is None and self._failure is None:
            self._note("stream.end came without a content.stop")
        elif self._finish is not None and 0 not in self._stopped and self._failure is None:
            # no primary stop came: the last block's is the answer's finish (Rule 6)
            self._note("no content.stop came for block 0: the last block's stop is the finish")
            self._queue.append(self._finish)
        self._terminate(done=True)

    def _on_body_end(self) -> None:
        if self._state is not State.ENDED:
            self._note("the body ended before stream.end")
            self._terminate(done=False)


def _field(obj: dict[str, Any], name: str, kind: type, at: int) -> Any:
    value = obj.get(name)
    if type(value) is not kind:
        raise PeerProtocolError(
            f"{obj.get('type')} needs {name!r} ({kind.__name__}), got {value!r}"[:200], offset=at
        )
    return value


_HANDLERS: Final = {
    "stream.start": LLMStreamDecoder._on_start,
    "content.delta": LLMStreamDecoder._on_delta,
    "content.stop": LLMStreamDecoder._on_stop,
    "tool.call": LLMStreamDecoder._on_tool,
    "usage": LLMStreamDecoder._on_usage,
    "error": LLMStreamDecoder._on_error,
    "stream.end": LLMStreamDecoder._on_end,
}
