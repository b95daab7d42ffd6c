"""Against the real thing: llama.cpp's llama-server with SmolLM2-135M on loopback, through every
transport of the contract suite. What llama.cpp sends is also recorded (tests/live/record.py)
and replayed offline; here the live answers are checked for what must hold whatever the model
says."""

from __future__ import annotations

import json
import urllib.request

import pytest

from svir_proto import (
    FailureKind,
    FinishReason,
    RequestFailed,
    Retrying,
    StreamEnded,
    TextDelta,
    ToolCall,
    plan_retry,
)
from svir_proto.transports import Timeouts, blocking
from tests.live import cases
from tests.transports.drivers import TRANSPORTS, models, run

pytestmark = pytest.mark.filterwarnings(  # httpcore's own generators under trio, see test_contract
    "ignore:Exception ignored in. <async_generator object "
    "(PoolByteStream|HTTP11ConnectionByteStream|Response|AsyncHTTP11Connection)[.]"
    ":pytest.PytestUnraisableExceptionWarning"
)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_streamed_answer_with_usage(llama: str, transport: str) -> None:
    out = run(transport, llama, cases.STREAM)
    assert out.error is None
    r = out.result
    assert r.complete
    assert r.usable
    assert r.text.strip()
    assert r.finish_reason is FinishReason.STOP
    assert r.usage is not None
    assert r.usage.prompt_tokens
    assert r.usage.completion_tokens
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
    assert not r.usage_missing
    assert not r.problems
    texts = [e for e in out.events if isinstance(e, TextDelta)]
    assert len(texts) > 3  # it streamed, token by token


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_max_tokens_ends_in_length(llama: str, transport: str) -> None:
    r = run(transport, llama, cases.LENGTH).result
    assert r.finish_reason is FinishReason.LENGTH
    assert r.complete
    assert not r.usable
    assert r.usage is not None
    assert r.usage.completion_tokens == 5


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_prompt_longer_than_the_context(llama: str, transport: str) -> None:
    out = run(transport, llama, cases.OVERFLOW, retries=2)
    failed = out.events[-1]
    assert isinstance(failed, RequestFailed)
    f = failed.failure
    assert (f.kind, f.status, f.code) == (
        FailureKind.CONTEXT_OVERFLOW,
        400,
        "exceed_context_size_error",
    )
    assert "exceeds the available context size (512 tokens)" in f.message
    assert not any(isinstance(e, Retrying) for e in out.events)
    assert plan_retry(cases.OVERFLOW, f) is None


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_image_to_a_text_only_model(llama: str, transport: str) -> None:
    out = run(transport, llama, cases.IMAGE, retries=2)
    failed = out.events[-1]
    assert isinstance(failed, RequestFailed)
    assert failed.failure.status == 500
    assert failed.failure.kind is FailureKind.REJECTED  # not transient: no retry
    assert "image input is not supported" in failed.failure.message
    assert not any(isinstance(e, Retrying) for e in out.events)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_model_listing(llama: str, transport: str) -> None:
    listed = models(transport, llama)
    assert [(m.id, m.kind.value) for m in listed] == [(cases.MODEL, "chat")]
    with urllib.request.urlopen(llama + "/models") as r:  # llama.cpp's own shape, both lists
        raw = json.load(r)
    assert raw["object"] == "list"
    assert raw["models"][0]["name"] == cases.MODEL


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_real_streamed_tool_call(llama: str, transport: str) -> None:
    out = run(transport, llama, cases.TOOL_CALL)
    r = out.result
    assert r.complete
    assert r.finish_reason is FinishReason.TOOL_CALLS
    (call,) = r.tool_calls
    assert isinstance(out.events[-2], ToolCall)
    assert call.name == "get_weather"
    assert call.declared
    assert call.id  # llama.cpp makes one up
    assert "city" in call.parse_arguments().value  # type: ignore[operator]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_llm_stream_falls_back_to_the_openai_dialect(llama: str, transport: str) -> None:
    out = run(transport, llama, cases.LLM_STREAM)
    kinds = [type(e).__name__ for e in out.events[:3]]
    assert kinds == ["ResponseStarted", "Retrying", "ResponseStarted"]  # the refusal not final
    refused = out.events[1]
    assert isinstance(refused, Retrying)
    assert refused.failure.code == "not_llm_stream"  # llama.cpp answered in OpenAI's dialect
    assert out.result.complete
    assert out.result.text


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_cancel_mid_stream_then_the_server_answers_again(llama: str, transport: str) -> None:
    out = run(transport, llama, cases.CANCEL, stop=lambda e: isinstance(e, TextDelta))
    assert out.error is None
    assert out.result.text
    assert not out.result.complete
    assert out.result.interrupted == "the caller left the stream"
    again = run(transport, llama, cases.STREAM)
    assert again.result.complete


def test_keep_alive(llama: str) -> None:
    """llama.cpp keeps the connection after a plain response and closes it after every
    stream while still advertising keep-alive: the client reuses the one and notices the
    other, and no request is lost."""
    with blocking.Client(llama, timeouts=Timeouts(read=60)) as client:
        client.list_models()
        with client.stream_chat(cases.NO_USAGE) as stream:
            events = list(stream)
        assert client.connections == 1  # the listing's connection served the stream
        assert isinstance(events[-1], StreamEnded)
        assert stream.result.complete
        client.list_models()
        client.list_models()
        assert client.connections == 2  # closed after the stream; kept after the listings


def test_through_the_gateway_with_the_openai_package_and_our_llm_stream_client(llama: str) -> None:
    """The gateway in front of llama.cpp: the openai package (sync and async) gets the answer
    and a real tool call intact; our LLM-Stream client gets the same tool call in its dialect,
    with bytes that follow the draft."""
    import anyio
    import openai

    from svir_proto import LLMMessage, LLMRequest, LLMTool
    from tests.gateway.draft_check import check
    from tests.gateway.test_gateway_server import gateway, raw_post

    messages = [
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "user", "content": "What is the weather in Rome?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_2", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}}]},
        {"role": "user", "content": "What is the weather in Vienna?"},
    ]  # fmt: skip
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Get the weather for a city",
                "parameters": cases.WEATHER.parameters,
            },
        }
    ]
    with gateway(llama) as (base, _):
        with openai.OpenAI(base_url=base, api_key="sk", max_retries=0) as client:
            stream = client.chat.completions.create(
                model=cases.MODEL, messages=messages, tools=tools, stream=True, temperature=0,  # type: ignore[arg-type]
                max_tokens=60,
            )  # fmt: skip
            calls = [
                c
                for chunk in stream
                for c in chunk.choices[0].delta.tool_calls or []
                if chunk.choices
            ]
        assert calls[0].function.name == "get_weather"
        assert '"city"' in "".join(c.function.arguments or "" for c in calls)

        async def plain() -> str:
            async with openai.AsyncOpenAI(base_url=base, api_key="sk", max_retries=0) as client:
                stream = await client.chat.completions.create(
                    model=cases.MODEL, messages=[{"role": "user", "content": "Say hello."}],
                    stream=True, max_tokens=12,
                )  # fmt: skip
                return "".join(
                    [c.choices[0].delta.content or "" async for c in stream if c.choices]
                )

        assert anyio.run(plain).strip()
        request = LLMRequest(
            model=cases.MODEL,
            messages=[LLMMessage(role="user", content="Say hello.")],
            tools=[
                LLMTool(name="get_weather", description="weather", parameters={"type": "object"})
            ],
            parameters={"max_tokens": 12},
        )
        out = run("blocking", base, request)
        assert out.result.complete
        assert out.result.text.strip()
        assert not any(type(e).__name__ == "Retrying" for e in out.events)  # LLM-Stream spoken
        status, _, raw = raw_post(
            base, request.body().read(), {"Content-Type": "application/llm-request+json"}
        )
        assert status == 200
        assert check(raw)[0] == []
