"""``svir chat`` and ``svir models``: talk to a server, for a person or a script.

The answer goes to standard output as it arrives. Reasoning is set apart: dimmed on a terminal,
and on standard error, each block prefixed, when the output is a pipe, so that what a script
reads is the answer alone. Tool calls are shown whole once the stream is complete. Everything
else (retries, the finish, usage, the speed, what went wrong) goes to standard error. With
``--json``, standard output carries one JSON object per event and one for the result.

Each way of failing has its own exit status (`EXIT`) and one line that says what happened;
what arrived before a failure is still shown, and said to be partial. An answer cut by
``max_tokens`` (finish ``length``) has its own status too, so a script can tell it from a whole
one without reading standard error.

Rule 1 (the terminal): what a server sent is written to a terminal without its C0 and C1
    control characters (newline and tab kept): escape sequences in an answer could retitle or
    clear the terminal, or hide what was written. A pipe, and ``--json``, get it exactly.
Rule 2: the summary line (finish, usage, speed) comes only after a stream began: a failure
    before it (an HTTP error, no connection, a timeout before the first byte) is its one line.
"""

from __future__ import annotations

import enum
import json
import os
import sys
import time
from typing import Any, Final, TextIO

import attrs

from ..errors import (
    ConnectionFailedError,
    Failure,
    FailureKind,
    RequestFailedError,
    StreamTimeout,
    SvirProtocolError,
)
from ..events import (
    Completion,
    Event,
    FilterVerdict,
    Finished,
    FinishReason,
    ReasoningDelta,
    RefusalDelta,
    Retrying,
    StreamFailed,
    StreamStarted,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from ..openai.endpoint import DEFAULT_BASE_URL, Endpoint, ModelInfo, ModelKind
from ..openai.parts import ImagePart, TextFile, TextPart
from ..openai.request import ChatRequest, SystemMessage, UserMessage
from ..speed import SpeedMeter
from ..transports._shared import Timeouts
from ..transports.blocking import Client

__all__ = ["DEFAULT_BASE_URL", "EXIT", "chat", "models", "terminal_safe"]

EXIT: Final = {
    "ok": 0,
    "protocol": 1,  # the server's bytes broke the protocol
    "usage": 2,  # a bad argument (argparse's own status)
    "connect": 3,  # connection refused, unknown host, TLS
    "authentication": 4,
    "rate_limited": 5,
    "context_overflow": 6,
    "content_filter": 7,
    "not_a_stream": 8,
    "timeout": 9,
    "partial": 10,  # the stream was cut: what arrived is shown, marked partial
    "failed": 11,  # any other failure the server reported
    "length": 12,  # a whole stream, but the answer was cut by max_tokens (finish: length)
    "interrupted": 130,  # Ctrl-C
}
PROGRESS_MIN: Final = 4 * 1024 * 1024
"""Bodies from this size on show a progress bar while they upload (on a terminal only)."""
DIM: Final = "\x1b[2m"
RESET: Final = "\x1b[0m"

# Rule 1: C0 but newline and tab, DEL, and C1
_CONTROLS: Final = dict.fromkeys([*range(0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)])
_STARTED: Final = (
    StreamStarted,
    TextDelta,
    ReasoningDelta,
    RefusalDelta,
    ToolCallDelta,
    ToolCall,
    Finished,
    Usage,
)


def terminal_safe(text: str) -> str:
    """``text`` without its C0 and C1 control characters, newline and tab kept (Rule 1)."""
    return text.translate(_CONTROLS)


def _for(stream: TextIO, text: str) -> str:
    """What a server sent, as written to ``stream``: made safe on a terminal (Rule 1)."""
    return terminal_safe(text) if stream.isatty() else text


_BY_KIND: Final = {
    FailureKind.AUTHENTICATION: ("authentication", "bad credentials"),
    FailureKind.RATE_LIMITED: ("rate_limited", "rate limited"),
    FailureKind.CONTEXT_OVERFLOW: ("context_overflow", "the prompt does not fit the context"),
    FailureKind.CONTENT_FILTER: ("content_filter", "blocked by a content filter"),
    FailureKind.NOT_A_STREAM: ("not_a_stream", "not a stream"),
    FailureKind.TIMEOUT: ("timeout", "the server timed out"),
}


def failure_line(failure: Failure) -> tuple[int, str]:
    """The exit status and the one line for a failure the server reported."""
    key, what = _BY_KIND.get(failure.kind, ("failed", f"the server failed ({failure.kind.value})"))
    status = f"HTTP {failure.status}: " if failure.status is not None else ""
    line = f"{what}: {status}{failure.message}"
    if failure.kind is FailureKind.RATE_LIMITED and failure.retry_after is not None:
        line += f" (wait {failure.retry_after:g} s)"
    return EXIT[key], line


def plain(value: Any) -> Any:
    """An event or result as JSON-ready values (enums as their values)."""
    if attrs.has(type(value)):
        return {f.name: plain(getattr(value, f.name)) for f in attrs.fields(type(value))}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    return value


class Screen:
    """What a person sees while the answer streams (see the module docstring)."""

    def __init__(self, out: TextIO, err: TextIO, *, as_json: bool) -> None:
        self.out = out
        self.err = err
        self.json = as_json
        self.tty = out.isatty() and not as_json
        self.meter = SpeedMeter()
        self.start = time.monotonic()
        self.first: float | None = None  # when the first visible token came
        self.started = False  # a stream began (Rule 2)
        self._mode = ""  # what was written last: "", "text", "reasoning", "refusal"

    def show(self, event: Event) -> None:
        now = time.monotonic()
        if isinstance(event, (TextDelta, ReasoningDelta, RefusalDelta)) and self.first is None:
            self.first = now
        if isinstance(event, _STARTED):
            self.started = True
        self.meter.observe(event, now)
        if self.json:
            self.out.write(json.dumps({"type": type(event).__name__, **plain(event)}) + "\n")
            self.out.flush()
            return
        out, err = self.out, self.err
        if isinstance(event, TextDelta):
            self._switch("text")
            out.write(_for(out, event.text))
        elif isinstance(event, ReasoningDelta):
            if self.tty:
                self._switch("reasoning")
                out.write(DIM + _for(out, event.text) + RESET)
            else:
                if self._mode != "reasoning":
                    err.write("thinking: ")
                self._mode = "reasoning"
                err.write(_for(err, event.text))
        elif isinstance(event, RefusalDelta):
            self._switch("refusal")
            out.write(_for(out, event.text))
        elif isinstance(event, ToolCall):
            self._switch("")
            line = f"tool call {event.name}({event.arguments})  [id {event.id}]"
            out.write(_for(out, line) + "\n")
        elif isinstance(event, Retrying):
            f = event.failure
            line = f"{event.reason} [{f.kind.value}: {f.message}]"
            err.write(f"retry (attempt {event.attempt}) in {event.delay:g} s: {_for(err, line)}\n")
        elif isinstance(event, StreamFailed):
            self._switch("")
        elif isinstance(event, FilterVerdict) and (event.filtered or event.detected):
            verdict = "blocked" if event.filtered else "flagged"
            cats = ", ".join(r.category for r in event.results if r.filtered or r.detected)
            line = f"content filter: {event.scope} {verdict} ({cats or 'no category'})"
            err.write(_for(err, line) + "\n")
        out.flush()

    def _switch(self, mode: str) -> None:
        """Set blocks of a different kind apart: a blank line between reasoning and answer."""
        if self._mode and mode != self._mode:
            if self._mode == "reasoning" and not self.tty:
                self.err.write("\n")
            else:
                self.out.write("\n\n" if mode else "\n")
        elif mode == "refusal" and self._mode != "refusal":
            self.out.write("[refusal] ")
        self._mode = mode

    def summary(self, result: Completion) -> None:
        """The finish, usage and speed, after the answer."""
        if self.json:
            self.out.write(json.dumps({"type": "result", **plain(result), "usable": result.usable}))
            self.out.write("\n")
            return
        if (self._mode and self._mode != "reasoning") or (self._mode == "reasoning" and self.tty):
            self.out.write("\n")
        elif self._mode == "reasoning":
            self.err.write("\n")
        self.out.flush()
        if not self.started:  # Rule 2: the failure's own line says it all
            return
        parts = [f"finish: {_for(self.err, result.finish_raw or 'none')}"]
        if result.finish_raw == "length":
            parts[0] += " (cut by max_tokens)"
        usage = result.usage
        if usage is not None:
            parts.append(f"tokens: {usage.prompt_tokens} in, {usage.completion_tokens} out")
        rate = self.meter.rate
        if rate is not None:
            parts.append(f"{rate:.1f} tokens/s")
        if self.first is not None:
            parts.append(f"first token after {self.first - self.start:.2f} s")
        self.err.write(" | ".join(parts) + "\n")


def _request(args: Any, model: str) -> ChatRequest:
    parts: list[TextPart | ImagePart | TextFile] = [TextPart(text=args.prompt)]
    parts += [TextFile.from_path(p) for p in args.file]
    parts += [ImagePart.from_path(p) for p in args.image]
    messages: list[SystemMessage | UserMessage] = []
    if args.system:
        messages.append(SystemMessage(content=args.system))
    messages.append(UserMessage(content=parts))
    return ChatRequest(
        model=model, messages=messages, max_tokens=args.max_tokens, include_usage=True
    )


def _client(args: Any, err: TextIO) -> Client:
    base = args.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
    key = args.api_key or os.environ.get("OPENAI_API_KEY") or None
    timeouts = (
        Timeouts() if args.timeout is None else Timeouts(first_byte=args.timeout, read=args.timeout)
    )
    progress = _Progress(err) if err.isatty() else None
    return Client(Endpoint.parse(base, key), timeouts=timeouts, on_upload=progress)


class _Progress:
    """A progress bar on standard error while a large body uploads."""

    def __init__(self, err: TextIO) -> None:
        self.err = err
        self.last = 0.0

    def __call__(self, sent: int, total: int) -> None:
        now = time.monotonic()
        if total < PROGRESS_MIN or (now - self.last < 0.1 and sent < total):
            return
        self.last = now
        filled = int(30 * sent / total)
        bar = "#" * filled + "." * (30 - filled)
        self.err.write(f"\ruploading [{bar}] {sent / 1e6:.1f} of {total / 1e6:.1f} MB")
        if sent >= total:
            self.err.write("\n")
        self.err.flush()


def chat(args: Any, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """``svir chat``: stream one answer; returns the exit status."""
    try:
        with _client(args, err) as client:
            model = args.model or _first_chat_model(client.list_models())
            request = _request(args, model)
            screen = Screen(out, err, as_json=args.json)
            with client.stream_chat(request) as stream:
                try:
                    for event in stream:
                        screen.show(event)
                finally:
                    result = stream.result
                    screen.summary(result)
    except ConnectionFailedError as exc:
        return _fail(err, "connect", f"cannot connect: {exc}")
    except StreamTimeout as exc:
        return _fail(err, "timeout", f"{exc}; what arrived is shown above, partial")
    except RequestFailedError as exc:
        status, line = failure_line(exc.failure)
        return _said(err, status, line)
    except SvirProtocolError as exc:
        return _fail(err, "protocol", f"the server broke the protocol: {exc}")
    except KeyboardInterrupt:
        return _fail(err, "interrupted", "interrupted; what arrived is shown above, partial")
    except (ValueError, OSError) as exc:  # a bad argument or a file that cannot be read
        return _fail(err, "usage", str(exc))
    return _verdict(result, err)


def _verdict(result: Completion, err: TextIO) -> int:
    if result.error is not None:
        status, line = failure_line(result.error)
        partial = (
            " (after a partial answer, shown above)" if result.text or result.reasoning else ""
        )
        return _said(err, status, line + partial)
    if not result.complete:
        why = result.interrupted or "the stream ended before its end marker"
        return _fail(err, "partial", f"partial answer: {why}")
    if result.finish_reason is FinishReason.LENGTH:
        return _fail(err, "length", "the answer was cut by max_tokens (finish: length)")
    return EXIT["ok"]


def _said(err: TextIO, status: int, line: str) -> int:
    """The one line for a failure (its words may be the server's: Rule 1)."""
    err.write(f"svir: {_for(err, line)}\n")
    return status


def _fail(err: TextIO, key: str, line: str) -> int:
    return _said(err, EXIT[key], line)


def _first_chat_model(listed: tuple[ModelInfo, ...]) -> str:
    for m in listed:
        if m.kind is ModelKind.CHAT:
            return m.id
    raise ValueError("the server lists no chat model: pass --model")


def models(args: Any, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """``svir models``: the listing, chat models apart from the rest."""
    try:
        with _client(args, err) as client:
            listed = client.list_models()
    except ConnectionFailedError as exc:
        return _fail(err, "connect", f"cannot connect: {exc}")
    except StreamTimeout as exc:
        return _fail(err, "timeout", str(exc))
    except RequestFailedError as exc:
        status, line = failure_line(exc.failure)
        return _said(err, status, line)
    except SvirProtocolError as exc:
        return _fail(err, "protocol", f"the server broke the protocol: {exc}")
    except ValueError as exc:
        return _fail(err, "usage", str(exc))
    if args.json:
        out.write(json.dumps([plain(m) for m in listed]) + "\n")
        return EXIT["ok"]
    chat_models = [m for m in listed if m.kind is ModelKind.CHAT]
    others = [m for m in listed if m.kind is not ModelKind.CHAT]
    out.write("chat models:\n" if chat_models else "no chat models\n")
    out.writelines(f"  {_for(out, m.id)}\n" for m in chat_models)
    if others:
        out.write("other models (not for chat):\n")
        out.writelines(f"  {_for(out, m.id)}  ({m.kind.value})\n" for m in others)
    return EXIT["ok"]
