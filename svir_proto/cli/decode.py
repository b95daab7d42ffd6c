"""``svir decode`` and ``svir translate``: what svir-proto makes of a recorded body, offline.

``svir decode FILE`` reads a recorded response body (``-`` for standard input) and prints what
the decoders make of it, fed piece by piece as a network would deliver it: the typed events
(of the dialect its first event shows: LLM-Stream's ``stream.start``, Anthropic's
``message_start``, the Responses API's ``response.created``, Gemini's ``candidates``, else
OpenAI's Chat Completions; ``--dialect`` says it instead)
and the final result (``--sse`` shows the SSE events instead). ``svir translate FILE`` shows
what a gateway sends an LLM-Stream client for a recorded OpenAI body.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

from ..dialects import detect, dialect
from ..errors import SvirProtocolError
from ..events import (
    BlockStopped,
    Completion,
    Event,
    FilterVerdict,
    Finished,
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
from ..openai import ChatStreamDecoder
from ..sse import EndOfStream, SSEComment, SSEDecoder
from ..translate import OpenAIToLLMStream

__all__ = ["decode_events", "decode_sse", "read", "translate"]


def read(path: str) -> bytes:
    return sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()


def _pieces(body: bytes, piece: int) -> list[bytes]:
    return [body[i : i + piece] for i in range(0, len(body), piece)]


def decode_sse(body: bytes, piece: int, out: list[str]) -> int:
    decoder = SSEDecoder()
    try:
        for p in _pieces(body, piece):
            out.extend(_show_sse(item) for item in decoder.feed(p))
        out.extend(_show_sse(item) for item in decoder.close())
    except SvirProtocolError as exc:
        out.extend(_show_sse(item) for item in exc.pending_events)
        out.append(f"error: {exc}")
        return 1
    return 0


def _show_sse(item: object) -> str:
    if isinstance(item, SSEComment):
        return f": {item.text}"
    if isinstance(item, EndOfStream):
        return "end of body" + (" (an incomplete event was discarded)" if item.incomplete else "")
    return repr(item)


_NAMES: Final = {
    "llm-stream": "an LLM-Stream body",
    "messages": "an Anthropic Messages body",
    "responses": "an OpenAI Responses body",
    "gemini": "a Gemini body",
}


def decode_events(body: bytes, piece: int, out: list[str], name: str | None = None) -> int:
    """Decode ``body`` in dialect ``name``, or in the dialect `detect` finds."""
    name = name or detect(body)
    if name in _NAMES:
        out.append(f"({_NAMES[name]})")
    decoder = dialect(name).decoder()
    status = 0
    try:
        for p in _pieces(body, piece):
            out.extend(_show(e) for e in decoder.feed(p))
        out.extend(_show(e) for e in decoder.close())
    except SvirProtocolError as exc:
        out.extend(_show(e) for e in exc.pending_events)  # type: ignore[arg-type]
        out.append(f"error: {exc}")
        status = 1
    out.append("")
    out.extend(_show_result(decoder.result))
    return status


def translate(body: bytes, out: list[str]) -> int:
    """What a gateway would send an LLM-Stream client for this OpenAI upstream body."""
    decoder = ChatStreamDecoder()
    translator = OpenAIToLLMStream(model="unknown")
    try:
        events = decoder.feed(body) + decoder.close()
    except SvirProtocolError as exc:
        out.append(f"error: {exc}")
        return 1
    out.append(b"".join(translator.feed(e) for e in events).decode().rstrip("\n"))
    return 0


def _show(e: Event) -> str:
    match e:
        case StreamStarted():
            return f"started   {e.response_id or '(no id)'} model={e.model or '?'}"
        case TextDelta():
            return f"text      {e.text!r}"
        case ReasoningDelta():
            return f"reasoning {e.text!r} ({e.carrier})"
        case ReasoningSignature():
            what = "redacted reasoning" if e.redacted else "signature"
            return f"signed    {what} ({e.carrier}, {len(e.signature)} characters)"
        case RefusalDelta():
            return f"refusal   {e.text!r}"
        case ToolCallDelta():
            parts = [f"#{e.index}"] + [
                f"{k}={v!r}" for k, v in (("id", e.id), ("name", e.name)) if v
            ]
            return f"tool part {' '.join(parts)} args+={e.arguments!r}"
        case ToolCall():
            flag = "" if e.declared is not False else "  (NOT DECLARED)"
            return f"tool call #{e.index} {e.id} {e.name}({e.arguments}){flag}"
        case Finished():
            return f"finished  {e.reason.value} (raw {e.raw!r})"
        case BlockStopped():
            return f"block #{e.index} stopped {e.reason.value} (raw {e.raw!r})"
        case Usage():
            cached = f" cached={e.cached_tokens}" if e.cached_tokens is not None else ""
            return f"usage     prompt={e.prompt_tokens} completion={e.completion_tokens}{cached}"
        case FilterVerdict():
            what = "FILTERED" if e.filtered else "detected" if e.detected else "clean"
            return f"filter    {e.scope}: {what} ({len(e.results)} categories)"
        case StreamFailed():
            return f"failed    {e.error.kind.value}: {e.error.message}"
        case StreamEnded():
            return f"ended     complete={e.complete} done={e.done}"
    return repr(e)  # pragma: no cover - every event type is matched above; a new one shows so


def _show_result(r: Completion) -> list[str]:
    lines = ["result:"]
    for label, value in (("text", r.text), ("reasoning", r.reasoning), ("refusal", r.refusal)):
        if value:
            lines.append(f"  {label}: {value!r}")
    for call in r.tool_calls:
        parsed = call.parse_arguments()
        args = parsed.value if parsed.error is None else f"(invalid JSON) {call.arguments!r}"
        lines.append(f"  call {call.id}: {call.name}({args})")
    finish = r.finish_raw or "none"
    lines.append(f"  finish: {finish}   usage: {r.usage or 'none'}")
    lines.append(
        f"  end marker ([DONE] or stream.end): {r.done}"
        f"   body ended: {r.closed}{' (cut)' if r.cut else ''}"
        f"   filtered: {r.filtered}   error: {r.error.kind.value if r.error else 'none'}"
    )
    lines.extend(f"  noticed: {p}" for p in r.problems)
    lines.append(f"  complete: {r.complete} (the stream)   usable: {r.usable} (the answer)")
    return lines
