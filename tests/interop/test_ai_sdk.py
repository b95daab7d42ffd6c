"""The Vercel AI SDK under Node through the gateway and directly from the upstream (issue 17):
``ai``'s streamText and generateText on the chat models of ``@ai-sdk/openai-compatible`` and of
``@ai-sdk/openai`` (``.chat(...)``) must report the same: every stream part, the raw chunks,
text, tool calls, usage (with its ``raw`` details), finish reason, provider metadata, and the
same error for an upstream's error status (401 apart: the gateway's 502).

The scripts are tests/interop/node/ai_sdk.mjs (one Node process for all the specs of a test,
see tests/interop/nodejs.py); against the replay server, with every stream recording and every
non-streamed answer, and against llama.cpp.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any, Final

import pytest

from tests.gateway.test_gateway_server import gateway
from tests.interop import nodejs
from tests.interop.steady import named, steady
from tests.interop.upstream import ANSWERS, STATUSES, STREAMS, TOOL_ONLY, InteropUpstream
from tests.live import cases

PROVIDERS: Final = ("compatible", "openai")
PROMPT: Final = "What is the weather in Vienna?"
TOOLS: Final = {
    "get_weather": {
        "description": cases.WEATHER.description,
        "parameters": cases.WEATHER.parameters,
    }
}


def spec(key: str, base: str, provider: str, call: str, model: str, **more: Any) -> dict[str, Any]:
    return {
        "id": key, "base": base, "provider": provider, "call": call, "model": model,
        "prompt": PROMPT, "tools": TOOLS, **more,
    }  # fmt: skip


@pytest.fixture(scope="module")
def replayed(upstream: InteropUpstream) -> dict[str, dict[str, Any]]:
    """Every recording, both providers, streamText and generateText, direct and through the
    gateway (one gateway: the upstream picks the recording by the request's model); and each
    error status. By spec id: ``WHERE/PROVIDER/CALL/NAME``."""
    nodejs.require()
    direct = upstream.interop("by-model", "by-model")
    specs = []
    with contextlib.ExitStack() as stack:
        through, _ = stack.enter_context(gateway(direct))
        bases = {"direct": direct, "gateway": through}
        for status, style in STATUSES:
            up = upstream.base("status", str(status), style)
            bases[f"direct-{status}-{style}"] = up
            bases[f"gateway-{status}-{style}"] = stack.enter_context(gateway(up))[0]
        for where in ("direct", "gateway"):
            for provider in PROVIDERS:
                for name in STREAMS:
                    key = f"{where}/{provider}/stream/{name}"
                    specs.append(spec(key, bases[where], provider, "stream", name))
                for name in ANSWERS:
                    key = f"{where}/{provider}/generate/{name}"
                    specs.append(spec(key, bases[where], provider, "generate", name))
                for status, style in STATUSES:
                    for call in ("stream", "generate"):
                        key = f"{where}/{provider}/{call}/{status}-{style}"
                        specs.append(
                            spec(key, bases[f"{where}-{status}-{style}"], provider, call, "m")
                        )
        return nodejs.run("ai_sdk.mjs", specs)


def made_up(result: dict[str, Any]) -> list[str]:
    """The ids the SDK made up (for a tool call that came without one): ids of its parts that
    the server never said."""
    said = json.dumps([result.get("raw"), result.get("response")])
    ids: list[str] = []

    def walk(doc: Any) -> None:
        if isinstance(doc, dict):
            for k, v in doc.items():
                if k in ("id", "toolCallId") and isinstance(v, str) and json.dumps(v) not in said:
                    ids.append(v)
                walk(v)
        elif isinstance(doc, list):
            for v in doc:
                walk(v)

    walk([result.get(k) for k in ("parts", "content", "toolCalls")])
    return ids


def clean(result: dict[str, Any]) -> Any:
    """A result without its spec's id, the ids the SDK made up named by their order."""
    result = {k: v for k, v in result.items() if k != "id"}
    return named(result, made_up(result))


def pair(results: dict[str, dict[str, Any]], key: str) -> tuple[dict[str, Any], dict[str, Any]]:
    return clean(results[f"direct/{key}"]), clean(results[f"gateway/{key}"])


def assert_same(direct: dict[str, Any], through: dict[str, Any]) -> None:
    for i, (a, b) in enumerate(
        zip(direct.get("parts", ()), through.get("parts", ()), strict=False)
    ):
        assert b == a, f"part {i} differs"
    for i, (a, b) in enumerate(zip(direct.get("raw", ()), through.get("raw", ()), strict=False)):
        assert b == a, f"raw chunk {i} differs"
    assert through == direct


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("name", STREAMS)
def test_stream_text_through_the_gateway_reports_what_it_reports_direct(
    replayed: dict[str, dict[str, Any]], name: str, provider: str
) -> None:
    direct, through = pair(replayed, f"{provider}/stream/{name}")
    assert direct["parts"]
    assert_same(direct, through)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("name", ANSWERS)
def test_generate_text_through_the_gateway_reports_what_it_reports_direct(
    replayed: dict[str, dict[str, Any]], name: str, provider: str
) -> None:
    direct, through = pair(replayed, f"{provider}/generate/{name}")
    assert "thrown" not in direct, direct
    assert_same(direct, through)
    assert through["usage"]["raw"]["prompt_tokens_details"]["cached_tokens"] is not None


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("name", TOOL_ONLY)
def test_a_tool_only_answer_has_no_empty_text_part(
    replayed: dict[str, dict[str, Any]], name: str, provider: str
) -> None:
    """issue 17: with the role chunk's ``null`` made ``""``, @ai-sdk/openai's chat model began
    a text part (an empty bubble in a UI) before the tool call."""
    _, through = pair(replayed, f"{provider}/stream/{name}")
    kinds = [p["type"] for p in through["parts"]]
    assert not {"text-start", "text-delta", "text-end"} & set(kinds), kinds
    calls = [p for p in through["parts"] if p["type"] == "tool-call"]
    assert [c["toolName"] for c in calls] == ["get_weather"]
    assert calls[0]["input"] == {"city": "Vienna"}
    assert through["finishReason"]["value"] == "tool-calls"
    assert through["text"]["value"] == ""


@pytest.mark.parametrize("provider", PROVIDERS)
def test_usage_with_cached_and_reasoning_tokens(
    replayed: dict[str, dict[str, Any]], provider: str
) -> None:
    for call in ("stream", "generate"):
        _, through = pair(replayed, f"{provider}/{call}/openai-tool-only")
        usage = through["usage"]["value"] if call == "stream" else through["usage"]
        assert usage["inputTokens"] == 2006
        assert usage["inputTokenDetails"]["cacheReadTokens"] == 1920
        assert usage["outputTokenDetails"]["reasoningTokens"] == 256
        assert usage["raw"]["completion_tokens_details"]["rejected_prediction_tokens"] == 0


@pytest.mark.parametrize("call", ["stream", "generate"])
@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(("status", "style"), STATUSES)
def test_an_upstream_error_status_reaches_the_ai_sdk_as_an_http_error(
    replayed: dict[str, dict[str, Any]], status: int, style: str, provider: str, call: str
) -> None:
    direct, through = pair(replayed, f"{provider}/{call}/{status}-{style}")
    if call == "stream":  # streamText reports an error part, and its promises reject
        errors = [p["error"] for p in through["parts"] if p["type"] == "error"]
        assert len(errors) == 1
        error = errors[0]
        assert "error" in through["text"]
    else:
        error = through["thrown"]
    assert error["name"] == "AI_APICallError"
    if status != 401:
        assert error["statusCode"] == status
        assert_same(direct, through)
        return
    assert error["statusCode"] == 502  # never the client's own 401
    assert json.loads(error["responseBody"])["error"]["code"] == "upstream_authentication"


# -- llama.cpp ----------------------------------------------------------------------------------


def volatile(result: dict[str, Any]) -> list[str]:
    """The ids llama.cpp made up for one answer: of the completion and of its tool calls."""
    docs = list(result.get("raw", ()))
    body = result.get("response", {}).get("body")
    if body is not None:
        docs.append(body)
    ids = []
    for doc in docs:
        ids.append(doc.get("id"))
        for choice in doc.get("choices", ()):
            message = choice.get("delta") or choice.get("message") or {}
            ids += [c.get("id") for c in message.get("tool_calls") or ()]
    return [i for i in ids if isinstance(i, str)]


@pytest.fixture(scope="module")
def from_llama(llama: str) -> dict[str, tuple[Any, Any]]:
    """Each case through the gateway and direct, after a first request with the same prompt
    (see test_openai_gateway.twice): ``{key: (through, direct)}``, made `steady`."""
    nodejs.require()
    text = {"model": cases.MODEL, "prompt": "Say hello to Vienna.", "maxOutputTokens": 6,
            "temperature": 0}  # fmt: skip
    tool = {
        "model": cases.MODEL,
        "prompt": "What is the weather in Vienna?",
        "wireMessages": json.loads(cases.TOOL_CALL.body().read())["messages"],
        "tools": TOOLS,
        "toolChoice": "required",
        "maxOutputTokens": 40,
        "temperature": 0,
    }
    overflow = {"model": cases.MODEL, "prompt": "word " * 700}  # past the 512 tokens of -c
    keys = []
    specs = []
    with gateway(llama) as (base, _):
        for provider in PROVIDERS:
            for call, case, request in (
                ("stream", "text", text), ("generate", "text", text), ("stream", "tool", tool),
                ("stream", "overflow", overflow), ("generate", "overflow", overflow),
            ):  # fmt: skip
                key = f"{provider}/{call}/{case}"
                keys.append(key)
                one = {"provider": provider, "call": call, **request}
                specs += [
                    {**one, "id": f"warm/{key}", "base": llama, "maxOutputTokens": 1},
                    {**one, "id": f"gateway/{key}", "base": base},
                    {**one, "id": f"direct/{key}", "base": llama},
                ]
        results = nodejs.run("ai_sdk.mjs", specs)

    def llama_clean(r: dict[str, Any]) -> Any:
        return steady(named(clean(r), volatile(r)))

    return {
        k: (llama_clean(results[f"gateway/{k}"]), llama_clean(results[f"direct/{k}"])) for k in keys
    }


@pytest.mark.parametrize("provider", PROVIDERS)
def test_llamacpp_through_the_gateway_as_direct_in_the_ai_sdk(
    from_llama: dict[str, tuple[Any, Any]], provider: str
) -> None:
    for case in ("stream/text", "generate/text", "stream/tool"):
        through, direct = from_llama[f"{provider}/{case}"]
        assert "thrown" not in direct, direct
        assert_same(direct, through)
    through, _ = from_llama[f"{provider}/stream/text"]
    assert through["text"]["value"].strip()
    assert through["usage"]["value"]["outputTokens"] == 6
    assert through["finishReason"]["value"] == "length"
    assert "timings" in through["raw"][-1]
    through, _ = from_llama[f"{provider}/stream/tool"]
    kinds = [p["type"] for p in through["parts"]]
    assert "tool-call" in kinds, through["parts"]
    assert "text-start" not in kinds[: kinds.index("tool-call")]  # no empty text part first
    for call in ("stream", "generate"):  # llama.cpp's 400 before any answer, kept
        through, direct = from_llama[f"{provider}/{call}/overflow"]
        assert_same(direct, through)
        errors = [p["error"] for p in through.get("parts", ()) if p["type"] == "error"]
        error = errors[0] if call == "stream" else through["thrown"]
        assert (error["name"], error["statusCode"]) == ("AI_APICallError", 400)
