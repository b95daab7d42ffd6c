"""Against the real thing, in the Messages dialect: llama.cpp's own ``POST /v1/messages`` with
SmolLM2-135M on loopback. Our decoder reads its answers (text, max_tokens, a tool call, an
overflow), and the real ``anthropic`` SDK, sent the same requests, reports what our decoder
reports: final text, tool_use input, stop_reason, usage."""

from __future__ import annotations

import http.client
import inspect
from typing import Any

import pytest

from svir_proto.anthropic import MessagesRequest, MessagesStreamDecoder, body_outcome
from svir_proto.errors import FailureKind
from svir_proto.events import Completion, FinishReason, StreamEnded, TextDelta
from tests.live import anthropic_cases as cases

anthropic = pytest.importorskip("anthropic")


def _root(base: str) -> tuple[str, int]:
    host, port = base.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    return host, int(port)


def stream(base: str, request: MessagesRequest) -> tuple[list[Any], Completion]:
    """Send ``request`` with http.client and feed our decoder each read as it comes."""
    host, port = _root(base)
    conn = http.client.HTTPConnection(host, port, timeout=120)
    try:
        conn.request(
            "POST", "/v1/messages", body=request.body().read(), headers=dict(request.headers("k"))
        )
        response = conn.getresponse()
        assert response.status == 200
        assert (response.getheader("Content-Type") or "").startswith("text/event-stream")
        decoder = MessagesStreamDecoder(declared_tools=request.tool_names or None)
        events: list[Any] = []
        while piece := response.read1(1460):
            events.extend(decoder.feed(piece))
        events.extend(decoder.close())
    finally:
        conn.close()
    return events, decoder.result


def sdk(base: str) -> Any:
    host, port = _root(base)
    return anthropic.Anthropic(base_url=f"http://{host}:{port}", api_key="k", max_retries=0)


def kwargs(request: MessagesRequest) -> dict[str, Any]:
    """The request as the SDK's keyword arguments; what its release takes no keyword for
    (2.14 has none for ``temperature`` or ``top_k``) goes in ``extra_body``, as the SDK says."""
    doc = request.to_document()
    doc.pop("stream")
    known = inspect.signature(anthropic.resources.Messages.create).parameters
    out = {k: v for k, v in doc.items() if k in known}
    extra = {k: v for k, v in doc.items() if k not in known}
    return {**out, "extra_body": extra} if extra else out


def test_a_streamed_text_answer(llama: str) -> None:
    events, r = stream(llama, cases.STREAM)
    assert r.complete
    assert r.usable
    assert r.text.strip()
    assert r.finish_reason in (FinishReason.STOP, FinishReason.LENGTH)
    assert r.usage is not None
    assert r.usage.prompt_tokens
    assert r.usage.completion_tokens
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
    assert not r.problems
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == r.text
    assert events[-1] == StreamEnded(complete=True, done=True)


def test_max_tokens_is_length(llama: str) -> None:
    _, r = stream(llama, cases.LENGTH)
    assert r.complete
    assert (r.finish_reason, r.finish_raw) == (FinishReason.LENGTH, "max_tokens")
    assert r.usage is not None
    assert r.usage.completion_tokens == 5


def test_a_tool_call(llama: str) -> None:
    _, r = stream(llama, cases.TOOL_CALL)
    assert r.complete
    assert (r.finish_reason, r.finish_raw) == (FinishReason.TOOL_CALLS, "tool_use")
    assert [(c.name, c.declared) for c in r.tool_calls] == [("get_weather", True)]
    args = r.tool_calls[0].parse_arguments().value
    assert isinstance(args, dict)
    assert isinstance(args.get("city"), str)


def test_an_overflow_is_typed(llama: str) -> None:
    host, port = _root(llama)
    conn = http.client.HTTPConnection(host, port, timeout=120)
    try:
        request = cases.OVERFLOW
        conn.request(
            "POST", "/v1/messages", body=request.body().read(), headers=dict(request.headers("k"))
        )
        response = conn.getresponse()
        body = response.read()
        headers = [("content-type", response.getheader("Content-Type") or "")]
    finally:
        conn.close()
    failure = body_outcome(response.status, headers, body).failure
    assert failure.kind is FailureKind.CONTEXT_OVERFLOW
    assert not failure.retryable


@pytest.mark.parametrize("name", sorted(cases.STREAMS))
def test_the_sdk_stream_reports_what_our_decoder_reports(llama: str, name: str) -> None:
    request = cases.STREAMS[name]
    _, ours = stream(llama, request)
    with sdk(llama).messages.stream(**kwargs(request)) as s:
        message = s.get_final_message()
    _same(message, ours)


@pytest.mark.parametrize("name", sorted(cases.STREAMS))
def test_the_sdk_without_streaming_gets_the_same_answer(llama: str, name: str) -> None:
    request = cases.STREAMS[name]
    _, ours = stream(llama, request)
    message = sdk(llama).messages.create(**kwargs(request))
    _same(message, ours)


def _same(message: Any, ours: Completion) -> None:
    text = "".join(b.text for b in message.content if b.type == "text")
    assert text == ours.text
    calls = [(b.name, b.input) for b in message.content if b.type == "tool_use"]
    assert calls == [(c.name, c.parse_arguments().value) for c in ours.tool_calls]
    assert message.stop_reason == ours.finish_raw
    u = message.usage
    assert ours.usage is not None
    prompt = (
        u.input_tokens + (u.cache_read_input_tokens or 0) + (u.cache_creation_input_tokens or 0)
    )
    assert prompt == ours.usage.prompt_tokens  # the cache may differ between two sends
    assert u.output_tokens == ours.usage.completion_tokens
