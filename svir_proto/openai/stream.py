"""The OpenAI-compatible Chat Completions stream: response bytes to events and a `Completion`.

Every fact of the wire reference sections 3 and 4 is handled here, for OpenAI, Azure OpenAI,
vLLM, llama.cpp, LM Studio and mlx-lm alike:

Rule 1 (identity, 3.2): the stream's ``id`` and ``model`` come from the first chunk that has
    them. Azure's prompt-filter and annotation chunks (empty ``id``/``model``) never become it.
Rule 2 (choices): one choice, index 0; another index is an error (``n > 1`` is not supported).
    A chunk with empty ``choices``, no ``object``, no ``delta``, or unknown keys is never
    dropped and never crashes; each delta key may be ``null``. Choices of bare content in a
    row in one chunk are read as one, as are one call's bare argument pieces in a row
    (`_folded`, `folded`): one delta each, however many a chunk holds. (So a run that
    crosses ``max_result_size`` is refused whole: the error is the same, with its offset,
    but none of the run's pieces came before it; review 42 F5.) Past that, a chunk's
    choices and their call pieces are `svir_proto._dialect.MAX_ENTRIES` at most in all.
Rule 3 (deltas, 3.2 and 4): ``reasoning_content``, ``reasoning`` (once, if a server sends both
    with the same text), ``content`` (split on inline ``<think>`` markers), ``refusal`` and
    ``tool_calls`` (see ``_toolcalls``), in that order. Any other key that holds something (a
    legacy ``function_call``, ``annotations``, ``audio``) is noted in ``problems``: not
    carried; so is a choice's ``logprobs`` that holds any.
Rule 4 (finish): the first ``finish_reason`` counts; a later one is noted in ``problems``.
    ``tool_calls`` exactly when calls exist, except ``length``: a mismatch is noted, not
    repaired.
Rule 5 (usage, 3.4): a chunk's ``usage`` object is a `Usage`; ``null`` never erases one.
Rule 6 (errors, 3.5): an ``{"error": ...}`` chunk and an ``event: error`` (JSON or plain text)
    are `StreamFailed`; what came before stays in the result, which is then not complete.
Rule 7 (filters, 3.7): Azure's prompt verdict (``prompt_filter_results``, older
    ``prompt_annotations``), per-choice ``content_filter_results`` and asynchronous annotations
    (``content_filter_offsets``) are `FilterVerdict` events.
Rule 8 (the end): ``[DONE]`` ends the stream: the tool calls are checked and emitted whole, then
    `StreamEnded`. Data after ``[DONE]`` is counted, not decoded. A body that ends before
    ``[DONE]`` gives ``StreamEnded(complete=False)``, even after a finish chunk.

A payload that is not JSON is a `PeerProtocolError` with its byte offset. This module never
does I/O; clocks belong to the caller (see `svir_proto.speed`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Final, Literal

from .. import _json
from .. import _weights as weights
from .._dialect import DEEP, DEFAULT_MAX_RESULT_SIZE, DialectDecoder
from ..errors import Failure, FailureKind, FilterResult, PeerProtocolError
from ..events import (
    Completion,
    FilterOffsets,
    FilterVerdict,
    Finished,
    FinishReason,
    ReasoningCarrier,
    ReasoningDelta,
    RefusalDelta,
    StreamFailed,
    StreamStarted,
    ToolCall,
    ToolCallDelta,
    Usage,
    reasoning_delta,
    text_delta,
    usage_counts,
)
from ..sse import DEFAULT_MAX_EVENT_SIZE, Errors
from ._envelope import BUDGET, LEARNED_FROM, NO_FILTERS, USAGE_PATHS, Envelope, Read, learnable
from ._failures import failure_from_error_object, filter_results
from ._think import ThinkSplitter
from ._toolcalls import DEFAULT_MAX_TOOL_CALLS, ToolCallAssembler, call_notes, folded

__all__ = ["DEFAULT_MAX_RESULT_SIZE", "ChatStreamDecoder"]

_FINISH: Final = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "tool_calls": FinishReason.TOOL_CALLS,
    "tool_call": FinishReason.TOOL_CALLS,  # mlx-lm before PR #782
    "content_filter": FinishReason.CONTENT_FILTER,
}
_READ_FINISH: Final = {
    **_FINISH,
    # TGI's own stops (its router's `FinishReason::format`), read, never written (an encoder
    # writes "stop" for them): a stop sequence of the request, and the end-of-sequence token
    # before TGI said "stop" for that
    "stop_sequence": FinishReason.STOP,
    "eos_token": FinishReason.STOP,
}
_DONE: Final = b"[DONE]"
_IN_STREAM: Final = FailureKind.SERVER_ERROR  # an error inside a 200 stream, unless recognised


class ChatStreamDecoder(DialectDecoder):
    """Decode a streamed Chat Completions response body (the bytes after the head).

    Args:
        declared_tools: the names of the tools the request declared; a call of any other tool
            is flagged (``ToolCall.declared`` is ``False`` and a problem is noted). ``None``:
            not checked.
        expect_usage: the request asked for usage (``stream_options.include_usage``); a stream
            that ends without it sets ``usage_missing``.
        keep_text: keep the text, reasoning and refusal in ``result`` (``False``: the deltas
            are still events, but neither kept nor counted against ``max_result_size``, which
            bounds what is kept: a relay that passes them on needs no memory that grows with
            the answer, and no bound on its length).
        think_tags: split inline ``<think>...</think>`` out of ``content`` (section 4).
        think_opened: the chat template opened ``<think>`` in the prompt, so the content starts
            inside reasoning.
        max_event_size: bytes one SSE event may take (see `SSEDecoder`).
        max_tool_calls: calls one response may make.
        max_result_size: characters the result may accumulate.
        errors: invalid UTF-8 and lone surrogates in a chunk: ``"strict"`` (a
            `PeerProtocolError` with the offset) or ``"replace"`` (U+FFFD), whatever the JSON
            parser, or ``"surrogates"`` (U+FFFD for an escaped lone surrogate only; see
            `svir_proto._json`).

    Events come with the pull API (``receive_data``/``next_event``, ``feed``/``close``); the
    whole picture is ``result``, at any time.
    """

    TEXTS = frozenset({"content", "reasoning_content", "reasoning", "refusal", "arguments"})
    """Where a delta's text, reasoning, refusal and a call's arguments are (`_halves`)."""

    def __init__(
        self,
        *,
        declared_tools: Collection[str] | None = None,
        expect_usage: bool = False,
        keep_text: bool = True,
        think_tags: bool = True,
        think_opened: bool = False,
        max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
        max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS,
        max_result_size: int = DEFAULT_MAX_RESULT_SIZE,
        errors: Errors = "strict",
    ) -> None:
        super().__init__(
            max_event_size=max_event_size,
            max_result_size=max_result_size,
            keep_text=keep_text,
            errors=errors,
        )
        self._declared = None if declared_tools is None else frozenset(declared_tools)
        self._expect_usage = expect_usage
        self._think = ThinkSplitter(opened=think_opened) if think_tags else None
        self._calls = ToolCallAssembler(max_tool_calls=max_tool_calls)
        # what the stream has said so far
        self._id = ""
        self._started = False
        self._id_changed = False  # "chunk id changed" was noted
        self._text = self._kept()  # without keep_text, nothing: `DialectDecoder._kept`
        self._reasoning = self._kept()
        self._carrier: ReasoningCarrier | None = None
        self._refusal = self._kept()
        self._finish: Finished | None = None
        self._usage: Usage | None = None
        self._verdicts: list[FilterVerdict] = []
        self._quiet: object = None  # the raw results of the last verdict, if it found nothing
        self._repeats = 0  # verdicts that repeated a quiet one (not news)
        self._envelope: Envelope | None = None
        self._budget = BUDGET
        self._failure: Failure | None = None  # the first failure the stream reported
        self._tool_calls: tuple[ToolCall, ...] = ()
        self._done = False
        self._ignored = 0

    # -- the result ------------------------------------------------------------------------

    @property
    def result(self) -> Completion:
        """Everything the stream has said so far; see `Completion`."""
        text = self._joined(self._text)
        finish = self._finish
        failure = self._failure
        completion_filtered = any(v.blocks for v in self._verdicts)
        return Completion(
            text=text,
            reasoning=self._joined(self._reasoning),
            reasoning_carrier=self._carrier,
            refusal=self._joined(self._refusal),
            tool_calls=self._tool_calls,
            pending_tool_calls=() if self._tool_calls else self._calls.pending(),
            finish_reason=None if finish is None else finish.reason,
            finish_raw=None if finish is None else finish.raw,
            usage=self._usage,
            filter_verdicts=tuple(self._verdicts),
            filter_repeats=self._repeats,
            error=failure,
            done=self._done,
            closed=self._closed,
            cut=self._cut,
            usage_missing=self._expect_usage
            and self._usage is None
            and (self._done or self._closed),
            filtered=completion_filtered
            or (finish is not None and finish.reason is FinishReason.CONTENT_FILTER),
            ignored_after_done=self._ignored,
            problems=tuple(self._problems),
            complete=self._complete(),
        )

    def _complete(self) -> bool:
        return (
            self._done
            and self._finish is not None
            and self._failure is None
            and self._deferred is None  # a stream that broke the protocol is never whole
        )

    # -- one SSE event -------------------------------------------------------------------------

    def _on_event(self, sse_type: str | None, payload: bytes | bytearray, at: int) -> None:
        if self._done:
            self._ignored += 1  # Rule 8, whatever the event type
            return
        if sse_type is not None and sse_type != "message":
            if sse_type == "error":
                self._event_error(payload, at)
            return  # other event types are not part of this protocol (3.1): ignored
        self._on_batch(at - 6, [payload], 0)

    def _chunk(self, payload: bytes | bytearray, at: int) -> None:
        """One chunk (or ``[DONE]``), the general way: parsed whole."""
        if payload == _DONE:
            self._on_done()
            return
        if len(payload) > self._deep:  # orjson nests deeper, and bounds nothing
            obj = self._long(payload, at, "a chunk")
        else:
            try:
                obj = self._loads(payload)
            except (ValueError, RecursionError):
                obj = self._canonical(payload, at, "a chunk")
        if type(obj) is not dict:
            raise PeerProtocolError(
                f"a chunk must be a JSON object, not {type(obj).__name__}", offset=at
            )
        # Rule 1
        cid = obj.get("id")
        if cid != self._id:
            self._identity(obj, cid)
        # Rule 2
        choices = obj.get("choices")
        if choices is not None:
            if type(choices) is not list:
                raise PeerProtocolError("'choices' must be a list", offset=at)
            for choice in (
                choices if len(choices) < 2 else self._entries(_folded(choices), "choices", at)
            ):
                self._choice(choice, at)
        usage = obj.get("usage")
        if usage is not None:
            self._on_usage(usage, at)
        error = obj.get("error")
        if error is not None:
            self._fail(failure_from_error_object(obj, status=None, default=_IN_STREAM))
        prompt = obj.get("prompt_filter_results")
        if prompt is None:
            prompt = obj.get("prompt_annotations")
        if prompt is not None:
            self._prompt_verdicts(prompt)
        if self._budget:
            choice = learnable(obj)
            if choice is not None:
                self._learn(payload, choice, usage)

    # -- a chunk that repeats the envelope (see _envelope) -----------------------------------

    def _repeats_plainly(self, envelope: Envelope) -> bool:
        """Whether a chunk that repeats ``envelope`` around plain content says nothing but its
        content: the stream goes on, the envelope has no padding, and its filter verdict, if
        any, found nothing and is the last one (a repeat, not news: Rule 7). What a subclass
        that takes such chunks without reading them (the relay's watcher, the runs) asks."""
        filters = envelope.filters
        return (
            not self._done
            and envelope.head_rest is None
            and envelope.tail_rest is None  # (so no usage hole either)
            and (filters is NO_FILTERS or filters is None or filters is self._quiet)
        )

    def _on_batch(self, at: int, payloads: Sequence[bytes | bytearray], gap: int) -> None:
        """The hot loop, over a run of simple events (one data line each, no type): a chunk
        that repeats the learned envelope (see `_envelope`) is read here, plain content at
        once; any other goes the general way (`_chunk`)."""
        chunk = self._chunk
        content = self._content
        calls = self._calls
        queue = self._queue
        at += 6  # where each payload begins
        for payload in payloads:
            if self._done:
                self._ignored += 1  # Rule 8
            else:
                envelope = self._envelope
                got: Read = None
                if envelope is not None:
                    try:
                        got = envelope.read(payload)
                    except UnicodeDecodeError:  # the general way applies the policy
                        got = None
                    if isinstance(got, str):
                        if got:
                            content(got, at)
                    elif got is not None:
                        first, second = got
                        if type(second) is str:  # a plain delta: a call's arguments, reasoning
                            if type(first) is int:  # _tool_delta, inline
                                self._size += len(second)
                                if self._size > self._max_result:
                                    self._grow(0, at)  # raises
                                queue.append(calls.arguments(first, second, at))
                            elif second:
                                self._reason(second, first)  # type: ignore[arg-type]
                        elif not self._repeat(payload, first, second, at):  # type: ignore[arg-type]
                            got = None
                if got is None:
                    chunk(payload, at)
                else:
                    envelope.hits += 1  # type: ignore[union-attr]
                    filters = envelope.filters  # type: ignore[union-attr]
                    if filters is not NO_FILTERS:  # Azure's verdict on every chunk
                        if filters is self._quiet and filters is not None:
                            self._repeats += 1  # what _completion_verdict would find, at once
                        else:
                            self._completion_verdict(filters, None)
                    if envelope.counts is not None:  # type: ignore[union-attr]
                        self._usage = envelope.usage()  # type: ignore[union-attr]
                        queue.append(self._usage)
            at += len(payload) + gap

    def _repeat(self, payload: bytes | bytearray, start: int, end: int, at: int) -> bool:
        """Read the delta at ``payload[start:end]`` of a chunk that repeats the envelope, one
        that is not plain (it is parsed alone); ``False``, having changed nothing, when the
        chunk must go the general way."""
        if len(payload) > DEEP:
            return False  # the general way checks its depth
        try:
            delta = self._loads(payload[start:end])
        except (ValueError, RecursionError):
            return False
        if type(delta) is not dict:
            return False
        if delta:
            self._delta(delta, at)
        return True

    def _learn(self, payload: bytes | bytearray, choice: dict[str, object], usage: object) -> None:
        if not self._started:
            return  # a repeat reads its delta past _delta, which would start the stream
        if len(payload) > LEARNED_FROM:  # not a try: what was learned stays (review 42 F7)
            return
        previous = self._envelope
        if previous is not None:
            self._budget = BUDGET if previous.hits else self._budget - 1
        envelope = Envelope.learn(payload, choice, usage) if self._budget else None
        if envelope is None and self._budget:
            self._budget -= 1  # a try that learned nothing (a usage of floats, say) counts
        self._envelope = envelope

    # -- one chunk ---------------------------------------------------------------------------

    def _identity(self, obj: dict[str, object], cid: object) -> None:
        model = obj.get("model")
        if not (cid or model):
            return  # Azure filter chunks and annotations: never the identity
        if not self._started:
            created = obj.get("created")
            self._started = True
            self._id = cid if isinstance(cid, str) else ""
            self._queue.append(
                StreamStarted(
                    response_id=self._id,
                    model=model if isinstance(model, str) else "",
                    created=created if type(created) is int and created > 0 else None,
                )
            )
        elif cid and self._id and not self._id_changed:
            self._id_changed = True
            self._note(f"chunk id changed from {self._id!r} to {cid!r}")

    def _choice(self, choice: object, at: int) -> None:
        if type(choice) is not dict:
            raise PeerProtocolError("a choice must be an object", offset=at)
        index = choice.get("index")
        if index and index != 0:
            raise PeerProtocolError(
                f"choice index {index!r}: only one choice (n = 1) is supported", offset=at
            )
        delta = choice.get("delta")
        if delta is not None:
            if type(delta) is not dict:
                raise PeerProtocolError("'delta' must be an object", offset=at)
            if delta:
                self._delta(delta, at)
        if "content_filter_results" in choice or "content_filter_offsets" in choice:
            self._completion_verdict(
                choice.get("content_filter_results"), choice.get("content_filter_offsets")
            )
        logprobs = choice.get("logprobs")
        if logprobs and (type(logprobs) is not dict or any(logprobs.values())):
            self._note("choices[].logprobs are not carried")  # (fidelity 43 F09)
        finish = choice.get("finish_reason")
        if finish is not None:
            self._on_finish(finish, at)

    def _delta(self, delta: dict[str, object], at: int) -> None:
        queue = self._queue
        if not self._started:  # a server that never said who it is
            self._started = True
            queue.append(StreamStarted(response_id="", model=""))
        # Rule 3, reasoning first: it precedes the content it comes with
        rc = delta.get("reasoning_content")
        if rc:
            self._reason(_string(rc, "reasoning_content", at), "reasoning_content")
        r = delta.get("reasoning")
        if r and r != rc:
            self._reason(_string(r, "reasoning", at), "reasoning")
        content = delta.get("content")
        if content:
            if type(content) is not str:
                raise PeerProtocolError("delta.content must be a string", offset=at)
            self._content(content, at)
        refusal = delta.get("refusal")
        if refusal:
            text = _string(refusal, "refusal", at)
            self._grow(len(text) * self._weight, at)
            self._refusal.append(text)
            queue.append(RefusalDelta(text=text))
        if not delta.keys() <= DELTA_KEYS:  # what no rule reads: said (attack 42 F4)
            for key in sorted(delta.keys() - DELTA_KEYS):
                if delta[key] not in NOTHING:
                    self._note(f"delta.{key} is not carried{_WHAT.get(key, '')}")
        calls = delta.get("tool_calls")
        if calls is not None:
            if type(calls) is not list:
                raise PeerProtocolError("delta.tool_calls must be a list", offset=at)
            piece = self._calls.piece
            for raw in self._entries(folded(calls), "delta.tool_calls", at):
                self._tool_delta(piece(raw, at), at)

    def _tool_delta(self, call: ToolCallDelta, at: int) -> None:
        self._grow(len(call.arguments) + len(call.name or "") + len(call.id or ""), at)
        self._queue.append(call)

    def _content(self, content: str, at: int) -> None:
        think = self._think
        if (
            think is None
            or (  # no marker, and no end that may begin one (`ThinkSplitter`)
                not think.inside
                and not think.held
                and ("<" not in content or ("<think>" not in content and "<" not in content[-6:]))
            )
        ):
            self._size += len(content) * self._weight
            if self._size > self._max_result:
                self._grow(0, at)  # raises
            self._text.append(content)
            self._queue.append(text_delta(content))
        else:
            for reasoning, piece in think.split(content):
                self._emit_split(reasoning, piece, at)

    def _reason(self, text: str, carrier: ReasoningCarrier) -> None:
        self._size += len(text) * self._weight
        if self._size > self._max_result:
            self._grow(0, None)  # raises
        if self._carrier is None:
            self._carrier = carrier
        self._reasoning.append(text)
        self._queue.append(reasoning_delta(text, carrier))

    def _emit_split(self, reasoning: bool, piece: str, at: int | None) -> None:
        self._grow(len(piece) * self._weight, at)
        if reasoning:
            if self._carrier is None:
                self._carrier = "think"
            self._reasoning.append(piece)
            self._queue.append(ReasoningDelta(text=piece, carrier="think"))
        else:
            self._text.append(piece)
            self._queue.append(text_delta(piece))

    def _flush_think(self) -> None:
        if self._think is not None:
            for reasoning, piece in self._think.flush():
                self._emit_split(reasoning, piece, None)

    def _on_finish(self, raw: object, at: int) -> None:
        if not isinstance(raw, str):
            raise PeerProtocolError(f"finish_reason must be a string, not {raw!r}", offset=at)
        if self._finish is not None:  # Rule 4
            self._note(f"a second finish_reason {raw!r} after {self._finish.raw!r}")
            return
        self._flush_think()
        self._finish = Finished(reason=_READ_FINISH.get(raw, FinishReason.OTHER), raw=raw)
        self._queue.append(self._finish)

    def _on_usage(self, raw: object, at: int) -> None:
        if not isinstance(raw, dict):
            raise PeerProtocolError("'usage' must be an object", offset=at)
        counts = []
        for path in USAGE_PATHS:  # where each count is (as an envelope's usage hole reads it)
            value: object = raw
            for key in path:
                value = value.get(key) if isinstance(value, dict) else None
            counts.append(_count(value))
        self._usage = usage_counts(*counts)
        self._queue.append(self._usage)

    def _fail(self, failure: Failure) -> None:
        self._flush_think()
        if self._failure is None:
            self._failure = failure
        self._queue.append(StreamFailed(error=failure))

    def _event_error(self, data: bytes | bytearray, at: int) -> None:
        """``event: error`` (LM Studio): JSON or plain text, then usually nothing more."""
        try:
            body: object = _json.canonical(data, errors=self._errors)
        except (ValueError, UnicodeDecodeError, RecursionError):  # the error said in words
            body = data.decode("utf-8", "replace").strip()
        self._fail(failure_from_error_object(body, status=None, default=_IN_STREAM))

    def _prompt_verdicts(self, raw: object) -> None:
        for entry in raw if isinstance(raw, list) else [raw]:
            if isinstance(entry, dict):
                results = filter_results(entry.get("content_filter_results"))
                if results:
                    self._verdict("prompt", results)

    def _completion_verdict(self, raw: object, raw_offsets: object) -> None:
        """Rule 7's repeat rule: a verdict on the answer that repeats the last one, and found
        nothing, is not news (see `FilterVerdict`)."""
        offsets = None
        if isinstance(raw_offsets, dict):
            offsets = FilterOffsets(
                check_offset=_count(raw_offsets.get("check_offset")),
                start_offset=_count(raw_offsets.get("start_offset")),
                end_offset=_count(raw_offsets.get("end_offset")),
            )
        elif raw == self._quiet and raw is not None:
            self._quiet = raw  # the same object next time: `is` settles it
            self._repeats += 1
            return
        results = filter_results(raw)
        if results or offsets is not None:
            verdict = self._verdict("completion", results, offsets)
            if offsets is None:
                self._quiet = None if verdict.filtered or verdict.detected else raw

    def _verdict(
        self,
        scope: Literal["prompt", "completion"],
        results: tuple[FilterResult, ...],
        offsets: FilterOffsets | None = None,
    ) -> FilterVerdict:
        verdict = FilterVerdict(
            scope=scope,
            results=results,
            offsets=offsets,
            filtered=any(r.filtered for r in results),
            detected=any(
                r.filtered or r.detected or (r.severity not in (None, "safe")) for r in results
            ),
        )
        self._grow(weights.verdict(verdict), None)
        self._verdicts.append(verdict)
        self._queue.append(verdict)
        return verdict

    # -- the end -----------------------------------------------------------------------------

    def _on_done(self) -> None:
        """``[DONE]`` (Rule 8): check and emit the tool calls, then end the stream."""
        self._done = True
        self._flush_think()
        finish = self._finish
        if self._failure is None:  # the calls are whole at the marker, a finish said or not
            calls = self._tool_calls = self._calls.finish(self._declared)
            self._queue.extend(calls)  # (attack 48 F1: without one they were dropped)
            if finish is None:
                self._note("[DONE] came without a finish_reason")
            for note in call_notes(calls, finish, "finish_reason", "tool_calls"):
                self._note(note)
        self._terminate(done=True)

    def _on_body_end(self) -> None:
        if not self._done:
            self._flush_think()
            if self._finish is not None:
                self._note("the body ended after the finish chunk but before [DONE]")
            self._terminate(done=False)

    def _after_end(self, exc: PeerProtocolError) -> bool:
        self._note(f"after [DONE]: {exc}")  # noted once; what follows is not read
        return True


def _folded(choices: list[object]) -> list[object]:
    """``choices`` with each run of bare content joined into one choice: a choice that is
    ``{"index": 0, "delta": {"content": <string>}}`` (``index`` may be left out, and
    ``logprobs`` and ``finish_reason`` may be ``null``) says, after another, nothing the two
    would not say as one. A chunk may repeat it hundreds of thousands of times; a delta for
    each would cost the decoder and every client of a relay a delta per choice (attack 41
    F2). Any other choice is kept as it came, in its place."""
    out: list[object] = []
    run: list[str] = []
    for choice in choices:
        text = _bare_content(choice)
        if text is None:
            if run:
                out.append({"index": 0, "delta": {"content": "".join(run)}})
                run = []
            out.append(choice)
        else:
            run.append(text)
    if run:
        out.append({"index": 0, "delta": {"content": "".join(run)}})
    return out


def _bare_content(choice: object) -> str | None:
    """The content of a choice `_folded` may join, else ``None``."""
    if type(choice) is not dict or not choice.keys() <= _BARE_KEYS:
        return None
    index = choice.get("index")
    delta = choice.get("delta")
    if (
        (index is not None and (type(index) is not int or index != 0))
        or choice.get("logprobs") is not None
        or choice.get("finish_reason") is not None
        or type(delta) is not dict
        or len(delta) != 1
    ):
        return None
    content = delta.get("content")
    return content if type(content) is str else None


_BARE_KEYS: Final = frozenset(("index", "delta", "logprobs", "finish_reason"))
DELTA_KEYS: Final = frozenset(
    ("role", "content", "reasoning_content", "reasoning", "refusal", "tool_calls")
)
"""The keys of a delta the rules read (Rule 3); another that holds something is noted (and
is progress to a relay's watcher: `svir_proto.openai.watch` Rule 2)."""
NOTHING: Final[tuple[object, ...]] = (None, "", [], {})
"""The values of a delta's keys that carry nothing (compared by equality)."""
_WHAT: Final = {
    "function_call": " (a legacy function call: the answer's call is lost)",
    "annotations": " (citations)",
    "audio": " (audio and its transcript)",
}


def _string(value: object, field: str, at: int) -> str:
    if type(value) is not str:
        raise PeerProtocolError(f"delta.{field} must be a string, not {value!r}", offset=at)
    return value


def _count(value: object) -> int | None:
    return value if type(value) is int and value >= 0 else None
