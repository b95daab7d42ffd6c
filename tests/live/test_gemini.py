"""Gemini live: llama.cpp does not serve Gemini, so its OpenAI answers (the same requests the
other live tests send, `tests.live.cases`) go through `GeminiStreamEncoder` and back through
`GeminiStreamDecoder`, and through Google's own client (``google-genai``) on loopback: both
must read the answer llama.cpp gave. And a Gemini request, through the hub, is answered by
llama.cpp's chat endpoint as a Gemini client would be (the gateway's path)."""

from __future__ import annotations

from typing import Any

import pytest

from svir_proto.events import FinishReason
from svir_proto.gemini import (
    GeminiContent,
    GeminiGenerationConfig,
    GeminiRequest,
    GeminiStreamDecoder,
    GeminiStreamEncoder,
)
from svir_proto.gemini.hub import to_hub
from svir_proto.openai import ChatStreamDecoder
from svir_proto.translate import llm_to_openai
from tests.helpers import run
from tests.live import cases
from tests.live.record import fetch, options

genai = pytest.importorskip("google.genai")

from tests.interop.gemini_sdk import loopback, ours, sdk  # noqa: E402, F401

CASES = {"stream": cases.STREAM, "length": cases.LENGTH, "tool-call": cases.TOOL_CALL}


def _translated(llama: str, request: Any) -> tuple[bytes, Any, Any]:
    status, content_type, body = fetch(llama, request)
    assert (status, content_type.split(";")[0]) == (200, "text/event-stream")
    chat = ChatStreamDecoder(**options(request))
    events = run(chat, [body])
    encoder = GeminiStreamEncoder(model=cases.MODEL, response_id="live-1")
    data = b"".join(encoder.encode(e) for e in events)
    assert encoder.done
    return data, chat.result, encoder


@pytest.mark.parametrize("name", CASES)
def test_a_live_answer_survives_the_gemini_round_trip(llama: str, name: str) -> None:
    request = CASES[name]
    data, source, _ = _translated(llama, request)
    gemini = GeminiStreamDecoder(declared_tools=request.tool_names)
    run(gemini, [data[i : i + 1460] for i in range(0, len(data), 1460)])
    got = gemini.result
    assert got.complete == source.complete
    assert got.text == source.text
    assert [(c.id, c.name, c.parse_arguments().value) for c in got.tool_calls] == [
        (c.id, c.name, c.parse_arguments().value) for c in source.tool_calls
    ]
    assert got.finish_reason is source.finish_reason
    assert got.usage == source.usage
    if name == "length":
        assert got.finish_raw == "MAX_TOKENS"


@pytest.mark.parametrize("name", CASES)
def test_google_genai_reads_a_live_answer_as_we_do(llama: str, sdk_server: str, name: str) -> None:
    data, source, _ = _translated(llama, CASES[name])
    finish = {FinishReason.STOP: "STOP", FinishReason.TOOL_CALLS: "STOP"}.get(
        source.finish_reason,  # type: ignore[arg-type]
        "MAX_TOKENS",
    )
    assert sdk(sdk_server, data) == ours(source, finish=finish, error=None)


def test_a_gemini_client_answered_by_llama_through_the_hub(llama: str, sdk_server: str) -> None:
    asked = GeminiRequest(
        model=cases.MODEL,
        system_instruction=GeminiContent(role=None, parts="Answer in one short sentence."),
        contents=[GeminiContent(parts="Say hello to Vienna.")],
        generation_config=GeminiGenerationConfig(max_output_tokens=30, temperature=0),
    )
    upstream = llm_to_openai(to_hub(asked))
    assert upstream.max_tokens == 30
    data, source, _ = _translated(llama, upstream)
    assert source.text.strip()
    seen = sdk(sdk_server, data)
    assert seen.text == source.text
    assert seen.finish in ("STOP", "MAX_TOKENS")
    assert seen.usage is not None
    assert seen.usage[0] == source.usage.prompt_tokens  # type: ignore[union-attr]
