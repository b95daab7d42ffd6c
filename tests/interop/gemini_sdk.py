"""Google's own client, the ``google-genai`` package, against a loopback server of ours: what
it reports of an answer (`Report`), for the interop and live tests. Skipped where the package
is not installed."""

from __future__ import annotations

import threading
import typing
from collections.abc import Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs
import pytest

from svir_proto.events import Completion, FinishReason
from svir_proto.gemini._wire import FINISH_OF
from tests.helpers import run

genai = pytest.importorskip("google.genai")
from google.genai import errors, types  # noqa: E402


class Replay(BaseHTTPRequestHandler):
    answer: typing.ClassVar[tuple[int, str, bytes]] = (200, "text/event-stream", b"")
    seen: typing.ClassVar[list[tuple[str, dict[str, str], bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Replay.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        status, content_type, data = Replay.answer
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module", name="sdk_server")
def loopback() -> Iterator[str]:
    """A loopback server that answers with `Replay.answer` and records `Replay.seen`."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Replay)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@attrs.frozen
class Report:
    """What a client says of an answer."""

    text: str
    thoughts: str
    calls: tuple[tuple[str, object], ...]
    finish: str | None
    usage: tuple[int | None, ...] | None
    error: tuple[int, str | None] | None


def sdk(
    base: str, body: bytes, *, status: int = 200, content_type: str = "text/event-stream"
) -> Report:
    Replay.seen.clear()
    Replay.answer = (status, content_type, body)
    return through(base, model="gemini-2.5-flash", contents="hi")


def through(
    base: str, *, model: str, contents: Any, config: Any = None, whole: bool = False
) -> Report:
    """What the SDK reports of the answer of the server at ``base`` (its root): streamed
    (``generate_content_stream``), or asked whole (``generate_content``)."""
    client = genai.Client(api_key="test-key", http_options=types.HttpOptions(base_url=base))
    try:
        if whole:
            return report(
                [client.models.generate_content(model=model, contents=contents, config=config)]
            )
        return report(
            client.models.generate_content_stream(model=model, contents=contents, config=config)
        )
    except errors.APIError as exc:
        return Report("", "", (), None, None, (exc.code, exc.status))


def report(chunks: Iterable[Any]) -> Report:
    """What the SDK's ``GenerateContentResponse`` objects say, read as an application does
    (an `errors.APIError` raised on the way is the report's ``error``)."""
    text: list[str] = []
    thoughts: list[str] = []
    calls: list[tuple[str, object]] = []
    finish = None
    usage = None
    error = None
    try:
        for chunk in chunks:
            if chunk.prompt_feedback is not None and chunk.prompt_feedback.block_reason:
                finish = finish or chunk.prompt_feedback.block_reason.value
            for candidate in chunk.candidates or ():
                if candidate.index:
                    continue
                for part in (candidate.content.parts if candidate.content else None) or ():
                    if part.text:
                        (thoughts if part.thought else text).append(part.text)
                    if part.function_call is not None:
                        calls.append((part.function_call.name or "", part.function_call.args))
                if candidate.finish_reason is not None:
                    finish = finish or candidate.finish_reason.value
            u = chunk.usage_metadata
            if u is not None:
                usage = (
                    (u.prompt_token_count or 0) + (u.tool_use_prompt_token_count or 0),
                    (u.candidates_token_count or 0) + (u.thoughts_token_count or 0),
                    u.thoughts_token_count,
                    u.cached_content_token_count,
                    u.total_token_count,
                )
    except errors.APIError as exc:
        error = (exc.code, exc.status)
    return Report("".join(text), "".join(thoughts), tuple(calls), finish, usage, error)


def finish_of(result: Completion) -> str | None:
    """The ``finishReason`` `GeminiStreamEncoder` writes for ``result``."""
    if result.error is not None or result.finish_reason is None or not result.done:
        return None  # a failure ends the stream, a cut writes no finish (encoder Rules 5, 6)
    raw = result.finish_raw
    if any(v.filtered and v.scope == "completion" for v in result.filter_verdicts):
        return "SAFETY"  # (blocked after it finished: fidelity 43 F01)
    if result.finish_reason is FinishReason.OTHER:
        return "OTHER"
    if raw in ("STOP", "MAX_TOKENS"):
        return raw
    return FINISH_OF[result.finish_reason]


def ours(result: Completion, *, finish: str | None, error: tuple[int, str | None] | None) -> Report:
    u = result.usage
    return Report(
        result.text + result.refusal,  # the encoder writes a refusal as text (encoder Rule 1)
        result.reasoning,
        tuple((c.name, c.parse_arguments().value) for c in result.tool_calls),
        finish,
        None
        if u is None
        else (
            u.prompt_tokens or 0,
            u.completion_tokens or 0,
            u.reasoning_tokens,
            u.cached_tokens,
            u.total_tokens,
        ),
        error,
    )


def decode(decoder: Any, body: bytes) -> tuple[list[Any], Completion]:
    events = run(decoder, [body])
    return events, decoder.result
