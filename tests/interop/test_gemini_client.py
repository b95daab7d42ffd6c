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

from pathlib import Path
from typing import Any

import attrs
import pytest

from svir_proto.events import Completion
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
    parse_target,
)
from svir_proto.gemini._wire import STATUS_OF
from svir_proto.llmstream import LLMStreamDecoder
from svir_proto.openai import ChatStreamDecoder
from tests.helpers import CONFORMANCE

genai = pytest.importorskip("google.genai")
from google.genai import types  # noqa: E402

from tests.interop.gemini_sdk import (  # noqa: E402, F401
    Replay,
    decode,
    finish_of,
    loopback,
    ours,
    sdk,
)

GEMINI = sorted((CONFORMANCE / "gemini").glob("*.sse"))
OPENAI = sorted((CONFORMANCE / "openai").glob("*.sse")) + sorted(
    (CONFORMANCE / "llamacpp").glob("*.sse")
)
LLMSTREAM = sorted((CONFORMANCE / "llmstream").glob("*.sse"))
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))


# -- the SDK on Gemini's own bytes -------------------------------------------------------------


@pytest.mark.parametrize("path", GEMINI, ids=lambda p: p.stem)
def test_the_sdk_reads_a_gemini_stream_as_our_decoder_does(sdk_server: str, path: Path) -> None:
    body = path.read_bytes()
    _, result = decode(GeminiStreamDecoder(), body)
    if result.cut:  # the SDK cannot parse half an event: it raises, where we say "cut"
        with pytest.raises(genai.errors.UnknownApiResponseError):
            sdk(sdk_server, body)
        return
    seen = sdk(sdk_server, body)
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
    events, result = decode(decoder, body)
    encoder = GeminiStreamEncoder(model="gemini-2.5-flash", response_id="r-1")
    return b"".join(encoder.encode(e) for e in events), result


@pytest.mark.parametrize(
    ("path", "make"),
    [(p, ChatStreamDecoder) for p in OPENAI] + [(p, LLMStreamDecoder) for p in LLMSTREAM],
    ids=lambda x: x.stem if isinstance(x, Path) else "",
)
def test_the_sdk_reads_our_encoder_as_our_decoder_read_the_source(
    sdk_server: str, path: Path, make: Any
) -> None:
    data, result = _through_our_encoder(make(), path.read_bytes())
    seen = sdk(sdk_server, data)
    error = None
    if result.error is not None:
        error = (STATUS_OF[result.error.kind][0], STATUS_OF[result.error.kind][1])
    assert seen == ours(result, finish=finish_of(result), error=error)


def _bytes_of(request: GeminiRequest) -> list[object]:
    return [
        p.decoded() if isinstance(p, GeminiInlineData) else p
        for c in request.contents
        for p in c.parts
    ]


# -- the SDK's request -------------------------------------------------------------------------


def test_the_request_the_sdk_sends_is_the_request_we_build(sdk_server: str) -> None:
    from tests.conformance.test_gemini_conformance import HERE

    sdk(sdk_server, (HERE / "stream-text.sse").read_bytes())  # warm: the client is real
    Replay.seen.clear()
    client = genai.Client(api_key="test-key", http_options=types.HttpOptions(base_url=sdk_server))
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
    where = parse_target(target)
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
def test_the_sdk_and_we_read_an_error_body_alike(sdk_server: str, status: int, name: str) -> None:
    from svir_proto.gemini import body_outcome
    from tests.conformance.test_gemini_conformance import ERRORS

    case = next(c for c in ERRORS if c["name"] == name)
    seen = sdk(sdk_server, case["body"].encode(), status=status, content_type="application/json")
    failure = body_outcome(
        status, [("content-type", "application/json")], case["body"].encode()
    ).failure
    assert seen.error == (status, failure.code)
