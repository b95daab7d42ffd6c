"""LLM-Stream 1.0 events (draft-spk-agentproto-llm-stream-00, section 5), server side.

`LLMStreamEncoder` writes events as SSE: ``v`` "1.0", ``seq`` from 0 rising by one, the SSE
``event:`` field equal to ``type``, ``request_id`` echoed on ``stream.start`` and
``stream.end``, in lifecycle order (``_lifecycle``), and refuses to write out of order. What
the draft has no event for it writes in the svir extension (`svir_proto.llmstream._wire`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from .._deprecated import renamed
from .._json import dumps
from ..answer import no_value
from ..errors import CallerProtocolError
from ..events import (
    BlockStopped,
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
    TextRun,
    ToolCall,
    Usage,
)
from ._lifecycle import State, advance, refusal
from ._wire import (
    DEFAULT_RAW,
    ERROR_CODES,
    STOP_OF,
    STOP_REASONS,
    SVIR_EXTENSION,
    VERSION,
    error_code,
    failure_out,
    verdict_out,
)

__all__ = ["LLMStreamEncoder"]
__getattr__ = renamed(__name__, {"StreamEncoder": "LLMStreamEncoder"}, globals())

_DELTA: Final = (
    b'event: content.delta\ndata: {"v":"1.0","seq":%d,"type":"content.delta","index":%d,'
    b'"role":"assistant","delta":{"text":%b}}\n\n'
)
"""A ``content.delta`` while streaming, with no extension: its number, its block's index and
its text's JSON, in one formatting call (what `LLMStreamEncoder._event` writes, field for
field)."""
_RUN_HEAD: Final = _DELTA.partition(b"%b")[0].replace(b'"index":%d', b'"index":0') + b'"'
_RUN_TAIL: Final = b'"' + _DELTA.partition(b"%b")[2]
_RUN_NEXT: Final = _RUN_TAIL + _RUN_HEAD
"""`_DELTA` for block 0, its text's JSON string around a `TextRun`'s bodies, which its LF
stand between: a run is written with one formatting call, of all its numbers."""


class LLMStreamEncoder:
    """Write LLM-Stream events as SSE bytes, in lifecycle order, numbering ``seq``.

    Args:
        request_id: echoed on ``stream.start`` and ``stream.end`` (section 4.6).

    Every method returns the bytes of one event. Raises `CallerProtocolError` when asked to write
    out of lifecycle order (``cannot send <type> in state <STATE>``) and `ValueError` for a bad
    value; either way nothing is written and the state does not change.
    """

    def __init__(self, *, request_id: str | None = None) -> None:
        self.request_id = request_id
        self.seq = 0
        self.state = State.IDLE
        self._stopped: set[int] = set()
        self.lost: list[str] = []
        """What the draft has no value for, a sentence each (a relay says it)."""

    def _event(
        self, type_: str, fields: dict[str, Any], ext: Mapping[str, Any] | None = None
    ) -> bytes:
        nxt = advance(self.state, type_)
        if nxt is None:
            raise CallerProtocolError(refusal(self.state, type_, "send"))
        obj = {"v": VERSION, "seq": self.seq, "type": type_, **fields}
        if ext:
            obj[SVIR_EXTENSION] = dict(ext)
        data = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        self.state = nxt
        self.seq += 1
        return f"event: {type_}\ndata: {data}\n\n".encode()

    def start(self, *, model: str, created: int, request_id: str | None = None) -> bytes:
        if not isinstance(model, str) or type(created) is not int:
            raise ValueError("stream.start needs a model (str) and created (int)")
        rid = request_id if request_id is not None else self.request_id
        self.request_id = rid
        fields: dict[str, Any] = {"model": model, "created": created}
        if rid is not None:
            fields = {"request_id": rid, **fields}
        return self._event("stream.start", fields)

    def delta(self, text: str, *, index: int = 0, ext: Mapping[str, Any] | None = None) -> bytes:
        if not isinstance(text, str):
            raise ValueError("content.delta text must be a str")
        if index in self._stopped:
            raise CallerProtocolError(
                f"cannot send content.delta for block {index} after its content.stop"
            )
        if ext is None and self.state is State.STREAMING:  # the most frequent event, templated
            seq = self.seq
            self.seq = seq + 1
            return _DELTA % (seq, index, dumps(text))
        fields = {"index": index, "role": "assistant", "delta": {"text": text}}
        return self._event("content.delta", fields, ext)

    def deltas(self, run: TextRun) -> bytes:
        """The ``content.delta`` of each text of ``run``, its JSON copied as it is: the bytes
        that `delta` writes for each text in turn, and the same errors (the first text meets
        them)."""
        if self.state is not State.STREAMING or 0 in self._stopped:
            return b"".join(self.delta(event.text) for event in run.deltas())
        seq = self.seq
        self.seq = seq + run.count
        bodies = run.bodies
        if 0x25 in bodies:  # a "%", which the formatting would read
            bodies = bodies.replace(b"%", b"%%")
        return (_RUN_HEAD + bodies.replace(b"\n", _RUN_NEXT) + _RUN_TAIL) % tuple(
            range(seq, seq + run.count)
        )

    def stop(
        self, stop_reason: str, *, index: int = 0, ext: Mapping[str, Any] | None = None
    ) -> bytes:
        if stop_reason not in STOP_REASONS:
            raise ValueError(
                f"stop_reason must be one of {sorted(STOP_REASONS)}, not {stop_reason!r}"
            )
        out = self._event("content.stop", {"index": index, "stop_reason": stop_reason}, ext)
        self._stopped.add(index)
        return out

    def tool_call(self, *, id: str, name: str, arguments: str, index: int = 0) -> bytes:
        if not (
            isinstance(id, str)
            and id
            and isinstance(name, str)
            and name
            and isinstance(arguments, str)
        ):
            raise ValueError("tool.call needs a non-empty id and name and string arguments")
        fields = {"index": index, "id": id, "name": name, "arguments": arguments}
        return self._event("tool.call", fields)

    def usage(
        self, *, input_tokens: int, output_tokens: int, ext: Mapping[str, Any] | None = None
    ) -> bytes:
        fields = {"input_tokens": input_tokens, "output_tokens": output_tokens}
        return self._event("usage", fields, ext)

    def error(self, code: str, message: str, *, ext: Mapping[str, Any] | None = None) -> bytes:
        if code not in ERROR_CODES:
            raise ValueError(f"error code must be one of {sorted(ERROR_CODES)}, not {code!r}")
        return self._event("error", {"code": code, "message": message}, ext)

    def end(self) -> bytes:
        fields = {} if self.request_id is None else {"request_id": self.request_id}
        return self._event("stream.end", fields)

    def _stop(self, reason: FinishReason, raw: str, index: int) -> bytes:
        """The ``content.stop`` of block ``index`` for a finish reason of the vocabulary."""
        stop = STOP_OF[reason]
        if reason is FinishReason.OTHER:  # (fidelity 43 F03: not a plain end)
            self.lost.append(
                no_value(
                    raw, "the draft's stop reasons", f"{stop!r}, itself under {SVIR_EXTENSION}"
                )
            )
        # the extension only when the plain stop_reason would not give this back
        plain = (STOP_REASONS[stop], DEFAULT_RAW[stop]) == (reason, raw)
        ext = None if plain else {"finish": raw, "reason": reason.value}
        return self.stop(stop, index=index, ext=ext)

    def encode(self, event: Event) -> bytes:
        """One vocabulary event as wire bytes (the table in `svir_proto.llmstream._wire`).

        ``ToolCallDelta`` has no wire form (``tool.call`` carries whole calls): ``b""``; so do
        ``ResponseStarted`` and ``RequestFailed``, which are HTTP, not stream, events.
        """
        match event:
            case StreamStarted():
                return self.start(
                    model=event.model, created=event.created or 0, request_id=event.request_id
                )
            case TextDelta():
                return self.delta(event.text, index=event.index)
            case ReasoningDelta():
                return self.delta("", ext={"reasoning": event.text, "carrier": event.carrier})
            case ReasoningSignature():
                signed: dict[str, Any] = {"signature": event.signature, "carrier": event.carrier}
                if event.redacted:
                    signed["redacted"] = True
                if event.item_id is not None:
                    signed["item_id"] = event.item_id
                return self.delta("", ext=signed)
            case RefusalDelta():
                return self.delta("", ext={"refusal": event.text})
            case FilterVerdict():
                return self.delta("", ext={"filter": verdict_out(event)})
            case ToolCall():
                return self.tool_call(
                    id=event.id, name=event.name, arguments=event.arguments, index=event.index
                )
            case Finished():
                return self._stop(event.reason, event.raw, 0)
            case BlockStopped():
                return self._stop(event.reason, event.raw, event.index)
            case Usage():
                extra = {
                    k: v
                    for k, v in (
                        ("total_tokens", event.total_tokens),
                        ("reasoning_tokens", event.reasoning_tokens),
                        ("cached_tokens", event.cached_tokens),
                        ("cache_creation_tokens", event.cache_creation_tokens),
                    )
                    if v is not None
                }
                return self.usage(
                    input_tokens=event.prompt_tokens or 0,
                    output_tokens=event.completion_tokens or 0,
                    ext=extra or None,
                )
            case StreamFailed():
                f = event.error
                return self.error(error_code(f.kind), f.message, ext=failure_out(f))
            case StreamEnded():
                return self.end()
        return b""
