"""eventsource-parser (npm) reading the gateway's LLM-Stream answers, as a browser or Node client
does (tests/interop/node/llm_stream.mjs): every event is one the parser sees whole, ``seq``
counts from 0 by one, ``event:`` names the ``type``, ``stream.start`` comes first and exactly one
``stream.end`` last, and the ``request_id`` is echoed (from ``metadata.request_id``, else from
``X-Request-Id``, else one the gateway makes) on both and in the response's ``X-Request-Id``,
also for an OpenAI request that asks for LLM-Stream with ``Accept``; what the events say is what
the upstream's stream said. An upstream error before the answer is an HTTP error with the
upstream's status (401 as 502) and the draft's error code.

Against the replay server (the recordings the gateway's own tests pass through) and llama.cpp.
"""

from __future__ import annotations

import json
from typing import Any, Final

import pytest

from svir_proto import ChatStreamDecoder
from tests.gateway.draft_check import ERROR_CODES
from tests.gateway.test_gateway_server import THROUGH, gateway, options_of
from tests.interop import nodejs
from tests.interop.upstream import STATUSES, InteropUpstream
from tests.live import cases
from tests.transports.server import fixture

LLM: Final = {"Content-Type": "application/llm-request+json"}
PROFILE: Final = {
    "Content-Type": "application/json",
    "Accept": 'text/event-stream; profile="llm-stream-1.0"',
}
OPENAI: Final = {"Content-Type": "application/json"}


def llm_request(model: str, *, request_id: str | None = None, **more: Any) -> str:
    doc: dict[str, Any] = {
        "version": "1.0", "stream": True, "model": model,
        "messages": [{"role": "user", "content": "hi"}], **more,
    }  # fmt: skip
    if request_id is not None:
        doc["metadata"] = {"request_id": request_id}
    return json.dumps(doc)


def openai_request(model: str, *, request_id: str | None = None, **more: Any) -> str:
    doc: dict[str, Any] = {
        "model": model, "stream": True, "messages": [{"role": "user", "content": "hi"}], **more,
    }  # fmt: skip
    if request_id is not None:
        doc["metadata"] = {"request_id": request_id}
    return json.dumps(doc)


def violations(result: dict[str, Any], *, ended: bool = True) -> list[str]:
    """What breaks the draft's stream rules in what the parser saw (section 5)."""
    bad = [f"parser: {e}" for e in result["errors"]]
    events = result["events"]
    for i, e in enumerate(events):
        data = e["data"]
        if not isinstance(data, dict):
            bad.append(f"event {i}: data is not a JSON object")
            continue
        if data.get("v") != "1.0":
            bad.append(f"event {i}: v is {data.get('v')!r}")
        if data.get("seq") != i:
            bad.append(f"event {i}: seq is {data.get('seq')!r}")
        if data.get("type") != e["event"]:
            bad.append(f"event {i}: type {data.get('type')!r} under event: {e['event']!r}")
    kinds = [e["event"] for e in events]
    if kinds[:1] != ["stream.start"] or kinds.count("stream.start") != 1:
        bad.append(f"not one stream.start first: {kinds}")
    if ended and (kinds[-1:] != ["stream.end"] or kinds.count("stream.end") != 1):
        bad.append(f"not exactly one stream.end, last: {kinds}")
    if not ended and "stream.end" in kinds:
        bad.append("a stream the upstream cut has a stream.end")
    return bad


def said(result: dict[str, Any]) -> dict[str, Any]:
    """What an LLM-Stream client reads from the events."""
    data = [e["data"] for e in result["events"]]
    return {
        "text": "".join(d["delta"]["text"] for d in data if d["type"] == "content.delta"),
        "tool_calls": [
            (d["id"], d["name"], d["arguments"]) for d in data if d["type"] == "tool.call"
        ],
        "usage": [
            (d["input_tokens"], d["output_tokens"]) for d in data if d["type"] == "usage"
        ][-1:],
        "error": any(d["type"] == "error" for d in data),
    }  # fmt: skip


def ids(result: dict[str, Any]) -> set[str | None]:
    """Every request id the client got: the header, and on stream.start and stream.end."""
    echoed = {
        e["data"].get("request_id")
        for e in result["events"]
        if e["event"] in ("stream.start", "stream.end")
    }
    return {result["requestId"], *echoed}


@pytest.fixture(scope="module")
def replayed(upstream: InteropUpstream) -> dict[str, Any]:
    """Every spec of the replay tests in one Node process: by id."""
    nodejs.require()
    direct = upstream.interop("by-model", "by-model")
    with gateway(direct) as (base, _):
        url = base + "/chat/completions"
        specs: list[dict[str, Any]] = []
        for name in THROUGH:
            tools = [
                {"name": t, "description": "", "parameters": {"type": "object"}}
                for t in options_of(name).get("declared_tools", ())
            ]
            body = llm_request(name, request_id=f"req-{name}", tools=tools)
            specs.append({"id": f"stream/{name}", "url": url, "headers": LLM, "body": body})
        for key, (headers, body, _) in VARIANTS.items():
            specs.append({"id": key, "url": url, "headers": headers, "body": body})
            specs.append({"id": key + "/again", "url": url, "headers": headers, "body": body})
        results = nodejs.run("llm_stream.mjs", specs)
    for status, style in STATUSES:
        up = upstream.base("status", str(status), style)
        with gateway(up) as (base, _):
            url = base + "/chat/completions"
            specs = [
                {"id": "llm", "url": url, "headers": LLM, "body": llm_request("m")},
                {"id": "profile", "url": url, "headers": PROFILE, "body": openai_request("m")},
                {"id": "openai", "url": url, "headers": OPENAI, "body": openai_request("m")},
                {"id": "direct", "url": up + "/chat/completions", "headers": OPENAI,
                 "body": openai_request("m")},
            ]  # fmt: skip
            for key, result in nodejs.run("llm_stream.mjs", specs).items():
                results[f"status/{status}-{style}/{key}"] = result
    return results


VARIANTS: Final = {
    "llm/metadata": (LLM, llm_request("openai-text", request_id="r-llm-meta"), "r-llm-meta"),
    "llm/header": (
        {**LLM, "X-Request-Id": "r-llm-header"}, llm_request("openai-text"), "r-llm-header",
    ),
    "llm/both": (
        {**LLM, "X-Request-Id": "r-llm-no"}, llm_request("openai-text", request_id="r-llm-both"),
        "r-llm-both",
    ),
    "llm/made": (LLM, llm_request("openai-text"), None),
    "profile/metadata": (PROFILE, openai_request("openai-text", request_id="r-p-meta"), "r-p-meta"),
    "profile/header": (
        {**PROFILE, "X-Request-Id": "r-p-header"}, openai_request("openai-text"), "r-p-header",
    ),
    "profile/made": (PROFILE, openai_request("openai-tool-only"), None),
}  # fmt: skip
"""Requests for LLM-Stream answers, and the request id each must get back (``None``: one the
gateway makes): ``metadata.request_id`` first, then ``X-Request-Id``."""


@pytest.mark.parametrize("name", THROUGH)
def test_eventsource_parser_reads_every_event_of_the_gateways_llm_stream(
    replayed: dict[str, Any], name: str
) -> None:
    result = replayed[f"stream/{name}"]
    direct = ChatStreamDecoder(**options_of(name))
    direct.feed(fixture(name))
    direct.close()
    r = direct.result
    assert result["status"] == 200
    assert result["contentType"] == "text/event-stream"
    ended = r.done or r.error is not None
    assert violations(result, ended=ended) == []
    assert ("cut" in result) is not ended  # a cut upstream stays a cut, seen as one
    assert ids(result) == {f"req-{name}"}
    assert said(result) == {
        "text": r.text,
        "tool_calls": [(c.id, c.name, c.arguments) for c in r.tool_calls],
        "usage": [] if r.usage is None else [(r.usage.prompt_tokens, r.usage.completion_tokens)],
        "error": r.error is not None,
    }


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_request_id_is_echoed(replayed: dict[str, Any], variant: str) -> None:
    result, again = replayed[variant], replayed[variant + "/again"]
    assert violations(result) == []
    assert said(result)["text"] or said(result)["tool_calls"]
    (rid,) = ids(result)
    (other,) = ids(again)
    want = VARIANTS[variant][2]
    if want is None:
        assert rid
        assert other
        assert rid != other  # one of its own for each request
    else:
        assert rid == other == want


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_request_id_goes_upstream_as_x_request_id(
    replayed: dict[str, Any], upstream: InteropUpstream, variant: str
) -> None:
    (rid,) = ids(replayed[variant])
    sent = [q.headers.get("x-request-id") for q in upstream.requests]
    assert rid in sent


@pytest.mark.parametrize(("status", "style"), STATUSES)
def test_an_upstream_error_status_is_an_http_error_for_an_llm_stream_client(
    replayed: dict[str, Any], status: int, style: str
) -> None:
    direct = replayed[f"status/{status}-{style}/direct"]
    assert direct["status"] == status
    want = 502 if status == 401 else status
    for key in ("llm", "profile", "openai"):
        result = replayed[f"status/{status}-{style}/{key}"]
        assert result["status"] == want, key
        assert result["events"] == [], key  # an HTTP error, not a 200 with an error event
        assert result["requestId"], key
        if key == "openai":
            if status != 401:  # the upstream's very answer
                assert (result["contentType"], result["body"]) == (
                    direct["contentType"], direct["body"],
                )  # fmt: skip
            continue
        assert result["contentType"] == "application/json", key
        assert result["body"]["error"]["code"] in ERROR_CODES, key  # the draft's code
    if status == 401:
        openai_body = replayed[f"status/{status}-{style}/openai"]["body"]
        assert openai_body["error"]["code"] == "upstream_authentication"


def test_eventsource_parser_reads_llamacpp_through_the_gateway(llama: str) -> None:
    """The same prompt direct (llama.cpp's OpenAI stream, read by the same parser) and through
    the gateway as LLM-Stream, after a first request (see test_openai_gateway.twice)."""
    nodejs.require()
    more = {"max_tokens": 6, "temperature": 0}
    words = [{"role": "user", "content": "word " * 700}]  # past the 512 tokens of -c
    with gateway(llama) as (base, _):
        llm = json.loads(llm_request(cases.MODEL, request_id="r-llama"))
        llm["parameters"] = more
        stream_options = {"include_usage": True}
        body = openai_request(cases.MODEL, stream_options=stream_options, **more)
        direct = {"url": llama + "/chat/completions", "headers": OPENAI, "body": body}
        specs = [
            {**direct, "id": "warm"},
            {"id": "llm", "url": base + "/chat/completions", "headers": LLM,
             "body": json.dumps(llm)},
            {"id": "profile", "url": base + "/chat/completions", "headers": PROFILE,
             "body": openai_request(cases.MODEL, request_id="r-profile",
                                    stream_options=stream_options, **more)},
            {**direct, "id": "direct"},
            {"id": "overflow", "url": base + "/chat/completions", "headers": LLM,
             "body": llm_request(cases.MODEL, messages=words)},
            {"id": "overflow-direct", "url": llama + "/chat/completions", "headers": OPENAI,
             "body": openai_request(cases.MODEL, messages=words)},
        ]  # fmt: skip
        results = nodejs.run("llm_stream.mjs", specs)
    chunks = [e["data"] for e in results["direct"]["events"] if e["data"] != "[DONE]"]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    usage = chunks[-1]["usage"]
    for key, rid in (("llm", "r-llama"), ("profile", "r-profile")):
        result = results[key]
        assert violations(result) == [], key
        assert ids(result) == {rid}
        assert said(result) == {
            "text": text,
            "tool_calls": [],
            "usage": [(usage["prompt_tokens"], usage["completion_tokens"])],
            "error": False,
        }, key
        stops = [e["data"]["stop_reason"] for e in result["events"] if e["event"] == "content.stop"]
        assert stops == ["max_tokens"]
    overflow, direct_overflow = results["overflow"], results["overflow-direct"]
    assert overflow["status"] == direct_overflow["status"] == 400  # llama.cpp's, kept
    assert overflow["events"] == []
    assert overflow["body"]["error"]["code"] == "context_length_exceeded"
