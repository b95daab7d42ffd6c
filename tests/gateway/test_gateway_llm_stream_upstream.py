"""`--upstream-dialect llm-stream`: a gateway in front of an LLM-Stream server. The server here
is a real one of ours, another gateway (itself in front of a replayed recording: OpenAI's API,
vLLM, LM Studio, mlx-lm, llama.cpp), so the upstream's bytes are what an LLM-Stream server
writes, not hand-made: an OpenAI client of the outer gateway reads what it reads through the
inner one alone; an LLM-Stream client's request is parsed and its answer checked (draft 8.2),
not relayed as it came."""

from __future__ import annotations

import json
from typing import Any

import pytest

from svir_proto import ChatStreamDecoder
from svir_proto.llmstream import MEDIA_TYPE, LLMMessage, LLMRequest, LLMTool
from tests.gateway.draft_check import check
from tests.gateway.test_gateway_server import THROUGH, gateway, options_of, projection, raw_post
from tests.transports.server import ReplayServer


def chat_body(tools: tuple[str, ...]) -> bytes:
    doc: dict[str, Any] = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if tools:
        doc["tools"] = [{"type": "function", "function": {"name": t}} for t in tools]
    return json.dumps(doc).encode()


def read(raw: bytes, **options: Any) -> dict[str, Any]:
    decoder = ChatStreamDecoder(**options)
    decoder.feed(raw)
    decoder.close()
    return projection(decoder.result)


@pytest.mark.parametrize("name", THROUGH)
def test_an_openai_client_through_two_gateways_reads_what_one_gives(
    replay: ReplayServer, name: str
) -> None:
    opts = options_of(name)
    body = chat_body(tuple(opts.get("declared_tools", ())))
    json_ = {"Content-Type": "application/json"}
    with gateway(replay.base("replay", name, "chunked")) as (inner, _):
        status, _, one = raw_post(inner, body, json_)
        with gateway(inner.removesuffix("/v1"), upstream_dialect="llm-stream") as (outer, _):
            status2, headers, two = raw_post(outer, body, json_)
    assert (status2, headers.get("content-type")) == (status, "text/event-stream")
    got, want = read(two, **opts), read(one, **opts)
    assert got == want
    assert want["text"] or want["tool_calls"] or want["error"] or want["refusal"]


def test_the_outer_gateway_asks_in_llm_streams_media_types(replay: ReplayServer) -> None:
    """Draft 7.2: the request goes as ``application/llm-request+json``, with the profile in
    ``Accept``; it is the hub's translation of the OpenAI client's."""
    recording = replay.base("replay", "draft-5.5-complete-example", "chunked")
    with gateway(recording, upstream_dialect="llm-stream") as (base, _):
        status, _, raw = raw_post(base, chat_body(()), {"Content-Type": "application/json"})
    assert status == 200
    sent = [r for r in replay.requests if r.method == "POST"][-1]  # (not a readiness probe)
    assert sent.target.endswith("/v1/chat/completions")
    assert sent.headers["content-type"] == MEDIA_TYPE
    assert 'profile="llm-stream-1.0"' in sent.headers["accept"]
    parsed = LLMRequest.parse(sent.body)
    assert (parsed.model, parsed.messages) == ("m", (LLMMessage(role="user", content="hi"),))
    assert read(raw)["text"] == "The weather in Vienna is 24C and sunny."


def test_an_llm_stream_clients_undeclared_call_is_stopped_though_the_upstream_speaks_it(
    replay: ReplayServer,
) -> None:
    """An LLM-Stream client of an LLM-Stream upstream: relayed as it came, the upstream's call
    of a tool the request did not declare reached the client (draft 8.2 says the gateway
    stops it); the request is parsed, and the answer's events checked and numbered."""
    recording = replay.base("replay", "draft-4.8-tool-flow-response-1", "chunked")  # get_weather
    request = LLMRequest(
        model="m",
        messages=[LLMMessage(role="user", content="hi")],
        tools=[LLMTool(name="other", description="", parameters={"type": "object"})],
    )
    with gateway(recording, upstream_dialect="llm-stream") as (base, _):
        status, _, raw = raw_post(base, request.body().read(), {"Content-Type": MEDIA_TYPE})
    assert status == 200
    violations, events = check(raw)
    assert violations == []
    assert [e["type"] for e in events] == ["stream.start", "error", "stream.end"]
    assert events[1]["vendor:svir"]["code"] == "undeclared_tool"
    assert [e["seq"] for e in events] == [0, 1, 2]


def test_an_llm_stream_request_reaches_an_llm_stream_upstream_as_it_came(
    replay: ReplayServer,
) -> None:
    """Review 64 F3: parsed (to check its answer) and written again, an LLM-Stream request
    lost what its type does not keep (a message's, a part's, a tool's unknown fields, its own)
    without a word; it goes as its client sent it."""
    doc = {
        "version": "1.0", "stream": True, "model": "m", "acme:top": {"x": 1},
        "messages": [
            {"role": "system", "content": "be brief", "acme:message": True},
            {"role": "user", "content": [{"type": "text", "text": "hi", "acme:part": 2}]},
        ],
        "tools": [{"name": "get_weather", "description": "", "parameters": {"type": "object"},
                   "strict": True}],
        "parameters": {"max_tokens": 9, "acme:p": "q"},
    }  # fmt: skip
    body = json.dumps(doc).encode()
    recording = replay.base("replay", "draft-4.8-tool-flow-response-1", "chunked")
    with gateway(recording, upstream_dialect="llm-stream") as (base, _):
        status, _, raw = raw_post(base, body, {"Content-Type": MEDIA_TYPE})
    assert status == 200
    sent = [r for r in replay.requests if r.method == "POST"][-1]
    assert sent.body == body
    assert sent.headers["content-type"] == MEDIA_TYPE
    violations, events = check(raw)
    assert violations == []
    assert [e["type"] for e in events if e["type"] == "tool.call"] == ["tool.call"]


@pytest.mark.parametrize(
    "scenario", [("status", "429", "openai"), ("status", "400", "overflow")], ids="/".join
)
def test_an_upstream_failure_keeps_its_code_through_two_gateways(
    replay: ReplayServer, scenario: tuple[str, ...]
) -> None:
    """Review 64: the inner gateway's error body for its LLM-Stream client (the outer) has the
    draft's code, and the failure's own went nowhere: an OpenAI client of the outer read
    ``rate_limited`` where one of the inner reads ``rate_limit_exceeded``. It travels under
    ``vendor:svir``, as on an ``error`` event, and the outer reads it back."""
    body = chat_body(())
    json_ = {"Content-Type": "application/json"}
    with gateway(replay.base(*scenario)) as (inner, _):
        status, _, one = raw_post(inner, body, json_)
        with gateway(inner.removesuffix("/v1"), upstream_dialect="llm-stream") as (outer, _):
            status2, _, two = raw_post(outer, body, json_)
    assert status2 == status >= 400
    direct, through = json.loads(one)["error"], json.loads(two)["error"]
    assert through["code"] == direct["code"]
    assert through["code"] in ("rate_limit_exceeded", "context_length_exceeded")
