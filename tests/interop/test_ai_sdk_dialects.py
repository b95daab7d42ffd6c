"""The Vercel AI SDK's vendor providers through the gateway (issue 19): ``@ai-sdk/anthropic``'s
Messages model, ``@ai-sdk/openai``'s Responses model and ``@ai-sdk/google``'s Gemini model,
under Node, in front of llama.cpp.

The Anthropic model is compared with itself talking to llama.cpp's own /v1/messages, through a
gateway to llama.cpp's chat endpoint (translated) and to its messages endpoint (relayed). The
Responses model cannot be compared with llama.cpp's own /v1/responses, which it does not read
(no text, finish ``error``: llama.cpp's deltas lack what the SDK needs); it is compared with the
AI SDK's Chat Completions model on llama.cpp's chat endpoint, the same answer in another
dialect; so is the Gemini model (llama.cpp serves no Gemini), through gateways to each of
llama.cpp's dialects. Each must report the same text, finish reason and token counts.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from tests.gateway.test_gateway_server import gateway
from tests.interop import nodejs
from tests.live import cases

TEXT = {"model": cases.MODEL, "prompt": "Say hello to Vienna.", "temperature": 0}


def seen(result: dict[str, Any]) -> tuple[Any, ...]:
    assert "thrown" not in result, result
    if "parts" not in result:  # generateText's: its values, none of them a promise
        result = {k: {"value": result[k]} for k in ("text", "finishReason", "usage")}
    usage = result["usage"]["value"]
    return (
        result["text"]["value"],
        result["finishReason"]["value"],
        usage["inputTokens"],
        usage["outputTokens"],
    )


@pytest.fixture(scope="module")
def answers(llama: str) -> dict[str, tuple[Any, ...]]:
    nodejs.require()
    specs = []
    with contextlib.ExitStack() as stack:
        bases = {"direct": llama}
        for upstream in ("chat", "messages", "responses"):
            bases[upstream] = stack.enter_context(gateway(llama, upstream_dialect=upstream))[0]
        for limit in (6, 40):
            one = {**TEXT, "call": "stream", "maxOutputTokens": limit}
            for where, base in bases.items():
                specs.append({**one, "id": f"anthropic/{where}/{limit}", "base": base,
                              "provider": "anthropic"})  # fmt: skip
            specs.append({**one, "id": f"compatible/direct/{limit}", "base": llama,
                          "provider": "compatible"})  # fmt: skip
            specs.append({**one, "id": f"responses/chat/{limit}", "base": bases["chat"],
                          "provider": "responses"})  # fmt: skip
            for upstream in ("chat", "messages", "responses"):
                for call in ("stream", "generate"):
                    specs.append({**one, "call": call, "provider": "google",
                                  "id": f"google/{upstream}/{call}/{limit}",
                                  "base": bases[upstream][:-3] + "/v1beta"})  # fmt: skip
            # generateText asks for no stream: the whole answer, translated
            whole = {**one, "call": "generate"}
            specs.append({**whole, "id": f"anthropic/chat/generate/{limit}",
                          "base": bases["chat"], "provider": "anthropic"})  # fmt: skip
            specs.append({**whole, "id": f"responses/chat/generate/{limit}",
                          "base": bases["chat"], "provider": "responses"})  # fmt: skip
            specs.append({**whole, "id": f"compatible/messages/generate/{limit}",
                          "base": bases["messages"], "provider": "compatible"})  # fmt: skip
        results = nodejs.run("ai_sdk.mjs", specs)
    return {key: seen(r) for key, r in results.items()}


@pytest.mark.parametrize("limit", [6, 40])
def test_the_anthropic_provider_through_the_gateway(
    answers: dict[str, tuple[Any, ...]], limit: int
) -> None:
    direct = answers[f"anthropic/direct/{limit}"]
    assert direct[0].strip()
    assert answers[f"anthropic/chat/{limit}"] == direct  # translated from Chat Completions
    assert answers[f"anthropic/messages/{limit}"] == direct  # relayed


@pytest.mark.parametrize("limit", [6, 40])
def test_the_responses_provider_through_the_gateway(
    answers: dict[str, tuple[Any, ...]], limit: int
) -> None:
    chat = answers[f"compatible/direct/{limit}"]
    assert chat[0].strip()
    assert answers[f"responses/chat/{limit}"] == chat
    if limit == 6:
        assert chat[1] == "length"


@pytest.mark.parametrize("limit", [6, 40])
def test_generate_text_through_a_translating_gateway(
    answers: dict[str, tuple[Any, ...]], limit: int
) -> None:
    """generateText asks for no stream: through a gateway whose upstream speaks another
    dialect, each provider gets the whole answer its stream gives (a 400 before: only
    streams were translated)."""
    assert answers[f"anthropic/chat/generate/{limit}"] == answers[f"anthropic/direct/{limit}"]
    assert answers[f"responses/chat/generate/{limit}"] == answers[f"compatible/direct/{limit}"]
    assert answers[f"compatible/messages/generate/{limit}"] == answers[f"compatible/direct/{limit}"]


@pytest.mark.parametrize("call", ["stream", "generate"])
@pytest.mark.parametrize("upstream", ["chat", "messages", "responses"])
@pytest.mark.parametrize("limit", [6, 40])
def test_the_google_provider_through_the_gateway(
    answers: dict[str, tuple[Any, ...]], limit: int, upstream: str, call: str
) -> None:
    """streamText and generateText on Gemini's path, to each of llama.cpp's dialects: what the
    Chat Completions model reads of llama.cpp's chat endpoint (but for llama.cpp's own
    Responses endpoint, which calls an answer cut by its limit complete: `LLAMA_CUT`)."""
    chat = answers[f"compatible/direct/{limit}"]
    got = answers[f"google/{upstream}/{call}/{limit}"]
    if upstream == "responses" and chat[1] == "length":
        assert got == (chat[0], "stop", *chat[2:])
        return
    assert got == chat
