"""Interop with Google's own client, the ``google-genai`` package, over loopback.

A small HTTP server on 127.0.0.1 answers ``streamGenerateContent`` with bytes we choose and
records what the client sent. Three directions:

- the Gemini fixtures (tests/conformance/gemini), served as they are: what the SDK reports
  (text, thoughts, function calls and their args, finish reason, usage) equals what
  `GeminiStreamDecoder` reports on the same bytes;
- every OpenAI and LLM-Stream fixture, decoded by our decoders and written by
  `GeminiStreamEncoder`: the SDK reads our bytes as the answer our decoder read in the other
  dialect;
- the request the SDK sends is read by `GeminiRequest.parse` as the request we build.
"""

from __future__ import annotations

import threading
import typing
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import attrs
import pytest

from svir_proto.events import Completion, FinishReason
from svir_proto.gemini import (
    GeminiContent,
    GeminiFunctionCall,
    GeminiFunctionDeclaration,
    GeminiFunctionResponse,
    GeminiGenerationConfig,
    GeminiInlineData,
    GeminiRequest,
    GeminiStreamDecoder,
    GeminiStreamEncoder,
    GeminiText,
    GeminiThinkingConfig,
    GeminiTool,
    GeminiToolConfig,
    parse_gemini_target,
)
from svir_proto.gemini._wire import FINISH_OF, STATUS_OF
from svir_proto.llmstream import LLMStreamDecoder
from svir_proto.openai import ChatStreamDecoder
from tests.helpers import CONFORMANCE, run

genai = pytest.importorskip("google.genai")
from google.genai import errors, types  # noqa: E402

GEMINI = sorted((CONFORMANCE / "gemini").glob("*.sse"))
OPENAI = sorted((CONFORMANCE / "openai").glob("*.sse")) + sorted(
    (CONFORMANCE / "llamacpp").glob("*.sse")
)
LLMSTREAM = sorted((CONFORMANCE / "llmstream").glob("*.sse"))
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))


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


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
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
    client = genai.Client(api_key="test-key", http_options=types.HttpOptions(base_url=base))
    text: list[str] = []
    thoughts: list[str] = []
    calls: list[tuple[str, object]] = []
    finish = None
    usage = None
    error = None
    try:
        for chunk in client.models.generate_content_stream(model="gemini-2.5-flash", contents="hi"):
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


def _decode(decoder: Any, body: bytes) -> tuple[list[Any], Completion]:
    events = run(decoder, [body])
    return events, decoder.result


# -- the SDK on Gemini's own bytes -------------------------------------------------------------


@pytest.mark.parametrize("path", GEMINI, ids=lambda p: p.stem)
def test_the_sdk_reads_a_gemini_stream_as_our_decoder_does(server: str, path: Path) -> None:
    body = path.read_bytes()
    _, result = _decode(GeminiStreamDecoder(), body)
    if result.cut:  # the SDK cannot parse half an event: it raises, where we say "cut"
        with pytest.raises(genai.errors.UnknownApiResponseError):
            sdk(server, body)
        return
    seen = sdk(server, body)
    error = None
    if result.error is not None:
        error = (seen.error[0] if seen.error else None, result.error.code)
    expected = ours(result, finish=result.finish_raw, error=error)
    if b"partialArgs" in body:  # the SDK gives Vertex AI's partial parts as they came
        assert [name for name, _ in seen.calls] == ["get_current_weather", "", "", ""]
        seen = attrs.evolve(seen, calls=expected.calls)
    assert seen == expected


# -- the SDK on our encoder's bytes ------------------------------------------------------------


def _through_our_encoder(decoder: Any, body: bytes) -> tuple[bytes, Completion]:
    events, result = _decode(decoder, body)
    encoder = GeminiStreamEncoder(model="gemini-2.5-flash", response_id="r-1")
    return b"".join(encoder.encode(e) for e in events), result


def _expected_finish(result: Completion) -> str | None:
    if result.error is not None or result.finish_reason is None or not result.done:
        return None  # a failure ends the stream, a cut writes no finish (encoder Rules 5, 6)
    raw = result.finish_raw
    if result.finish_reason is FinishReason.OTHER:
        return "OTHER"
    if raw in ("STOP", "MAX_TOKENS"):
        return raw
    return FINISH_OF[result.finish_reason]


@pytest.mark.parametrize(
    ("path", "make"),
    [(p, ChatStreamDecoder) for p in OPENAI] + [(p, LLMStreamDecoder) for p in LLMSTREAM],
    ids=lambda x: x.stem if isinstance(x, Path) else "",
)
def test_the_sdk_reads_our_encoder_as_our_decoder_read_the_source(
    server: str, path: Path, make: Any
) -> None:
    data, result = _through_our_encoder(make(), path.read_bytes())
    seen = sdk(server, data)
    error = None
    if result.error is not None:
        error = (STATUS_OF[result.error.kind][0], STATUS_OF[result.error.kind][1])
    assert seen == ours(result, finish=_expected_finish(result), error=error)


def _bytes_of(request: GeminiRequest) -> list[object]:
    return [
        p.decoded() if isinstance(p, GeminiInlineData) else p
        for c in request.contents
        for p in c.parts
    ]


# -- the SDK's request -------------------------------------------------------------------------


def test_the_request_the_sdk_sends_is_the_request_we_build(server: str) -> None:
    from tests.conformance.test_gemini_conformance import HERE

    sdk(server, (HERE / "stream-text.sse").read_bytes())  # warm: the client is real
    Replay.seen.clear()
    client = genai.Client(api_key="test-key", http_options=types.HttpOptions(base_url=server))
    history = [
        types.Content(role="user", parts=[types.Part(text="Weather in Paris?")]),
        types.Content(
            role="model",
            parts=[
                types.Part(
                    function_call=types.FunctionCall(name="get_weather", args={"city": "Paris"}),
                    thought_signature=b"sig-bytes",
                )
            ],
        ),
        types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        name="get_weather", response={"output": "sunny"}
                    )
                ),
                types.Part.from_bytes(data=PNG, mime_type="image/png"),
            ],
        ),
    ]
    config = types.GenerateContentConfig(
        system_instruction="Be brief.",
        max_output_tokens=64,
        temperature=0.5,
        top_k=4,
        stop_sequences=["END"],
        thinking_config=types.ThinkingConfig(thinking_budget=128, include_thoughts=True),
        tools=[
            types.Tool(
                function_declarations=[
                    types.FunctionDeclaration(
                        name="get_weather",
                        description="The weather in a city",
                        parameters_json_schema={
                            "type": "object",
                            "properties": {"city": {"type": "string"}},
                        },
                    )
                ]
            )
        ],
        tool_config=types.ToolConfig(
            function_calling_config=types.FunctionCallingConfig(
                mode=types.FunctionCallingConfigMode.ANY, allowed_function_names=["get_weather"]
            )
        ),
    )
    Replay.answer = (200, "text/event-stream", (HERE / "stream-text.sse").read_bytes())
    list(
        client.models.generate_content_stream(
            model="gemini-2.5-flash", contents=history, config=config
        )
    )
    target, headers, body = Replay.seen[0]
    where = parse_gemini_target(target)
    assert (where.model, where.stream, where.alt) == ("gemini-2.5-flash", True, "sse")
    assert headers["x-goog-api-key"] == "test-key"
    import base64

    signature = base64.b64encode(b"sig-bytes").decode()
    ours_request = GeminiRequest(
        model="gemini-2.5-flash",
        system_instruction=GeminiContent(role="user", parts="Be brief."),
        contents=[
            GeminiContent(role="user", parts="Weather in Paris?"),
            GeminiContent(
                role="model",
                parts=[
                    GeminiFunctionCall(
                        name="get_weather", args={"city": "Paris"}, thought_signature=signature
                    )
                ],
            ),
            GeminiContent(
                role="user",
                parts=[
                    GeminiFunctionResponse(name="get_weather", response={"output": "sunny"}),
                    GeminiInlineData.from_bytes(PNG, "image/png"),
                ],
            ),
        ],
        tools=[
            GeminiTool(
                function_declarations=[
                    GeminiFunctionDeclaration(
                        name="get_weather",
                        description="The weather in a city",
                        parameters_json_schema={
                            "type": "object",
                            "properties": {"city": {"type": "string"}},
                        },
                    )
                ]
            )
        ],
        tool_config=GeminiToolConfig(mode="ANY", allowed_function_names=["get_weather"]),
        generation_config=GeminiGenerationConfig(
            max_output_tokens=64,
            temperature=0.5,
            top_k=4,
            stop_sequences=["END"],
            thinking_config=GeminiThinkingConfig(thinking_budget=128, include_thoughts=True),
        ),
    )
    parsed = GeminiRequest.parse(body, model=where.model)
    mine = GeminiRequest.parse(ours_request.body().read(), model=where.model)
    assert _bytes_of(parsed) == _bytes_of(mine)  # the SDK writes base64 URL-safe
    for field in ("system_instruction", "tools", "tool_config", "generation_config", "extra"):
        assert getattr(parsed, field) == getattr(mine, field), field
    assert [type(p) for c in parsed.contents for p in c.parts] == [
        GeminiText,
        GeminiFunctionCall,
        GeminiFunctionResponse,
        GeminiInlineData,
    ]


@pytest.mark.parametrize(
    ("status", "name"),
    [(429, "rate-limited-retry-info"), (400, "api-key-invalid"), (503, "overloaded")],
)
def test_the_sdk_and_we_read_an_error_body_alike(server: str, status: int, name: str) -> None:
    from svir_proto.gemini import gemini_body_outcome
    from tests.conformance.test_gemini_conformance import ERRORS

    case = next(c for c in ERRORS if c["name"] == name)
    seen = sdk(server, case["body"].encode(), status=status, content_type="application/json")
    failure = gemini_body_outcome(
        status, [("content-type", "application/json")], case["body"].encode()
    ).failure
    assert seen.error == (status, failure.code)
