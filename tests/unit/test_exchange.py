"""`Exchange`: one request and its response above the HTTP framing, fed by hand."""

from __future__ import annotations

import json

import pytest

from svir_proto import (
    CallerProtocolError,
    Exchange,
    FailureKind,
    LLMMediaPart,
    LLMMessage,
    LLMRequest,
    ModelsListed,
    ModelsRequest,
    PeerProtocolError,
    RequestFailed,
    ResponseStarted,
    Retrying,
    StreamEnded,
    StreamStarted,
    TextDelta,
    next_attempt,
)
from svir_proto.errors import Failure
from svir_proto.openai import ChatRequest, Endpoint, Tool, UserMessage
from tests.helpers import CONFORMANCE

EP = Endpoint.parse("http://127.0.0.1:1234", api_key="sk-1")
SSE = [(b"content-type", b"text/event-stream")]
JSON = [(b"content-type", b"application/json")]
CHAT = ChatRequest(model="m", messages=[UserMessage(content="hi")], include_usage=True)
LLM = LLMRequest(model="m", messages=[LLMMessage(role="user", content="hi")])
OPENAI_BODY = (CONFORMANCE / "openai" / "wire-3.3-tool-calls.sse").read_bytes()
LLM_BODY = (CONFORMANCE / "llmstream" / "draft-5.5-complete-example.sse").read_bytes()


def test_what_to_send_for_each_request() -> None:
    chat = Exchange(EP, CHAT)
    assert (chat.method, chat.target) == ("POST", "/v1/chat/completions")
    headers = dict(chat.headers)
    assert headers["Content-Type"] == "application/json"
    assert headers["Accept"] == "text/event-stream"
    assert headers["Accept-Encoding"] == "identity"
    assert headers["Authorization"] == "Bearer sk-1"
    assert headers["User-Agent"].startswith("svir-proto/")
    assert chat.body is not None
    assert int(headers["Content-Length"]) == len(chat.body.read())
    llm = dict(Exchange(EP, LLM).headers)
    assert llm["Content-Type"] == "application/llm-request+json"
    assert llm["Accept"] == 'text/event-stream; profile="llm-stream-1.0"'
    models = Exchange(EP, ModelsRequest())
    assert (models.method, models.target, models.body) == ("GET", "/v1/models", None)
    assert "Content-Length" not in dict(models.headers)
    with pytest.raises(TypeError, match="ChatRequest, LLMRequest, ModelsRequest or PassThrough"):
        Exchange(EP, "hi")  # type: ignore[arg-type]


def test_a_stream_from_head_to_end() -> None:
    ex = Exchange(EP, CHAT)
    assert ex.result.text == ""
    assert not ex.finished
    out = ex.receive_head(200, SSE)
    assert out == [ResponseStarted(status=200, headers=(("content-type", "text/event-stream"),))]
    events = ex.receive_body(OPENAI_BODY) + ex.end_of_body()
    assert isinstance(events[-1], StreamEnded)
    assert ex.finished
    assert ex.terminal is events[-1]
    assert ex.result.complete
    assert len(ex.result.tool_calls) == 2


def test_out_of_order_calls() -> None:
    ex = Exchange(EP, CHAT)
    with pytest.raises(CallerProtocolError, match="before the response head"):
        ex.receive_body(b"x")
    with pytest.raises(CallerProtocolError, match="before the head"):
        ex.end_of_body()
    ex.receive_head(200, SSE)
    with pytest.raises(CallerProtocolError, match="twice"):
        ex.receive_head(200, SSE)


def test_authentication_is_decided_from_the_head() -> None:
    ex = Exchange(EP, CHAT)
    out = ex.receive_head(401, JSON)
    assert isinstance(out[-1], RequestFailed)
    assert out[-1].failure.kind is FailureKind.AUTHENTICATION
    assert ex.finished
    assert ex.result.error == out[-1].failure
    assert ex.receive_body(b"never read") == []  # the exchange is over


def test_an_error_body_is_read_up_to_its_bound() -> None:
    ex = Exchange(EP, CHAT, max_error_body=20)
    ex.receive_head(500, JSON)
    assert ex.receive_body(b'{"error":{"mess') == []
    out = ex.receive_body(b'age":"boom, a long message"}}')
    assert isinstance(out[-1], RequestFailed)  # decided at 20 bytes: not JSON any more
    assert out[-1].failure.kind is FailureKind.TRANSIENT
    assert out[-1].failure.message == '{"error":{"message":'
    whole = Exchange(EP, CHAT)
    whole.receive_head(429, [*JSON, (b"retry-after", b"7")])
    whole.receive_body(b'{"error":{"message":"slow down"}}')
    failed = whole.end_of_body()[-1]
    assert isinstance(failed, RequestFailed)
    assert (failed.failure.kind, failed.failure.retry_after) == (FailureKind.RATE_LIMITED, 7.0)


def test_a_success_that_is_not_a_stream() -> None:
    ex = Exchange(EP, CHAT)
    ex.receive_head(200, JSON)
    ex.receive_body(b'{"choices":[]}')
    failed = ex.end_of_body()[-1]
    assert isinstance(failed, RequestFailed)
    assert failed.failure.kind is FailureKind.NOT_A_STREAM


def test_the_head_is_bounded_exactly_or_by_its_headers() -> None:
    big = [(b"x-pad", b"a" * 200)]
    with pytest.raises(PeerProtocolError) as info:
        Exchange(EP, CHAT, max_head_size=100).receive_head(200, [*SSE, *big])
    assert (info.value.limit, info.value.limit_value) == ("max_head_size", 100)
    with pytest.raises(PeerProtocolError):
        Exchange(EP, CHAT, max_head_size=100).receive_head(200, SSE, size=101)
    assert Exchange(EP, CHAT, max_head_size=300).receive_head(200, [*SSE, *big], size=300)


def test_models() -> None:
    ex = Exchange(EP, ModelsRequest())
    ex.receive_head(200, JSON)
    ex.receive_body(b'{"data":[{"id":"a"},')
    ex.receive_body(b'{"id":"bge-m3"}]}')
    listed = ex.end_of_body()
    assert isinstance(listed[-1], ModelsListed)
    assert [m.id for m in listed[-1].models] == ["a", "bge-m3"]
    assert ex.finished
    big = Exchange(EP, ModelsRequest(), max_models_body=10)
    big.receive_head(200, JSON)
    with pytest.raises(PeerProtocolError) as info:
        big.receive_body(b"x" * 11)
    assert info.value.limit == "max_models_body"
    bad = Exchange(EP, ModelsRequest())
    bad.receive_head(200, JSON)
    bad.receive_body(b"<html>")
    with pytest.raises(PeerProtocolError, match="not JSON"):
        bad.end_of_body()
    failed = Exchange(EP, ModelsRequest())
    failed.receive_head(404, JSON)
    failed.receive_body(b'{"error":"no"}')
    assert isinstance(failed.end_of_body()[-1], RequestFailed)


def test_llm_stream_is_checked_by_its_first_event() -> None:
    ex = Exchange(EP, LLM)
    ex.receive_head(200, SSE)
    assert ex.receive_body(LLM_BODY[:20]) == []  # the first event is not whole yet
    events = ex.receive_body(LLM_BODY[20:]) + ex.end_of_body()
    assert isinstance(events[0], StreamStarted)
    assert ex.result.complete
    assert not ex.fall_back


def test_llm_stream_request_answered_in_the_openai_dialect_falls_back() -> None:
    ex = Exchange(EP, LLM)
    ex.receive_head(200, SSE)
    out = ex.receive_body(OPENAI_BODY[:400])
    assert isinstance(out[-1], RequestFailed)
    assert out[-1].failure.kind is FailureKind.NOT_A_STREAM
    assert out[-1].failure.code == "not_llm_stream"
    assert ex.fall_back
    assert ex.finished
    request, retrying = next_attempt(ex, out[-1].failure, retried=0, retries=0) or (None, None)
    assert isinstance(request, ChatRequest)
    assert isinstance(retrying, Retrying)
    assert retrying.attempt == 2
    assert retrying.delay == 0


def test_llm_stream_415_falls_back() -> None:
    ex = Exchange(EP, LLM)
    ex.receive_head(415, JSON)
    assert ex.fall_back
    ex.receive_body(b'{"error":"unsupported"}')
    failed = ex.end_of_body()[-1]
    assert isinstance(failed, RequestFailed)
    assert next_attempt(ex, failed.failure, retried=0, retries=0) is not None


def test_no_fall_back_for_parts_the_openai_dialect_cannot_carry() -> None:
    pdf = LLMMediaPart(type="audio", media_type="audio/wav", raw=b"RIFF0000WAVE")
    request = LLMRequest(model="m", messages=[LLMMessage(role="user", content=(pdf,))])
    ex = Exchange(EP, request)
    ex.receive_head(415, JSON)
    ex.end_of_body()
    assert ex.fall_back
    assert next_attempt(ex, ex.result.error, retried=0, retries=3) is None  # type: ignore[arg-type]


def test_an_llm_stream_body_that_ends_before_its_first_event() -> None:
    ex = Exchange(EP, LLM)
    ex.receive_head(200, SSE)
    ex.receive_body(b": keep-alive\n\n")
    ended = ex.end_of_body()
    assert isinstance(ended[-1], StreamEnded)
    assert not ended[-1].complete
    assert "the body ended before stream.end" in ex.result.problems


def test_interruptions_in_every_phase() -> None:
    before_head = Exchange(EP, CHAT)
    assert before_head.interrupt("connect timeout") == []
    assert before_head.result.interrupted == "connect timeout"

    probing = Exchange(EP, LLM)
    probing.receive_head(200, SSE)
    probing.receive_body(LLM_BODY[:30])
    ended = probing.interrupt("read timeout")
    assert isinstance(ended[-1], StreamEnded)
    assert not ended[-1].complete
    assert probing.result.interrupted == "read timeout"
    assert probing.result.cut

    streaming = Exchange(EP, CHAT)
    streaming.receive_head(200, SSE)
    streaming.receive_body(OPENAI_BODY[:300])
    ended = streaming.interrupt("cancelled")
    assert isinstance(ended[-1], StreamEnded)
    assert streaming.result.interrupted == "cancelled"
    assert streaming.interrupt("again") == []  # over: the first reason stays
    assert streaming.result.interrupted == "cancelled"

    error_body = Exchange(EP, CHAT)
    error_body.receive_head(503, JSON)
    error_body.receive_body(b'{"error":{"message":"overloaded"')
    failed = error_body.interrupt("read timeout")
    assert isinstance(failed[-1], RequestFailed)
    assert error_body.result.interrupted == "read timeout"

    broken = Exchange(EP, CHAT)
    broken.receive_head(200, SSE)
    with pytest.raises(PeerProtocolError):
        broken.receive_body(b"data: {not json\n\n")
    assert broken.interrupt("gave up") == []  # what the body broke was raised already

    whole = Exchange(EP, CHAT)
    whole.receive_head(200, SSE)
    whole.receive_body(OPENAI_BODY)
    assert whole.interrupt("the caller left the stream") == []
    assert whole.result.interrupted is None
    assert whole.result.complete


def test_retries_by_kind_and_dialect() -> None:
    rate = Failure(kind=FailureKind.RATE_LIMITED, message="slow", status=429, retry_after=2.0)
    chat = Exchange(EP, CHAT)
    assert next_attempt(chat, rate, retried=0, retries=0) is None  # turned off
    request, retrying = next_attempt(chat, rate, retried=0, retries=1) or (None, None)
    assert request is CHAT
    assert isinstance(retrying, Retrying)
    assert retrying.delay == 2.0
    assert next_attempt(chat, rate, retried=1, retries=1) is None  # used up
    rejected = Failure(kind=FailureKind.REJECTED, message="no", status=404)
    assert next_attempt(chat, rejected, retried=0, retries=3) is None
    llm = Exchange(EP, LLM)
    request, retrying = next_attempt(llm, rate, retried=0, retries=1) or (None, None)
    assert request is LLM
    assert isinstance(retrying, Retrying)
    assert next_attempt(llm, rejected, retried=0, retries=1) is None
    models = Exchange(EP, ModelsRequest())
    assert next_attempt(models, rate, retried=0, retries=1) is not None


def test_declared_tools_reach_the_decoder() -> None:
    request = ChatRequest(
        model="m", messages=[UserMessage(content="hi")], tools=[Tool(name="lookup")]
    )
    ex = Exchange(EP, request)
    ex.receive_head(200, SSE)
    ex.receive_body(OPENAI_BODY)
    assert [c.declared for c in ex.result.tool_calls] == [True, True]
    assert json.loads(ex.body.read())["tools"][0]["function"]["name"] == "lookup"  # type: ignore[union-attr]


def test_think_options_reach_the_decoder() -> None:
    ex = Exchange(EP, CHAT, think_opened=True)
    ex.receive_head(200, SSE)
    out = ex.receive_body(
        b'data: {"id":"a","model":"m","choices":[{"index":0,"delta":{"content":"r</think>t"}}]}\n\n'
    )
    assert [type(e) for e in out] == [StreamStarted, type(out[1]), TextDelta]
    assert ex.result.reasoning == "r"
    assert ex.result.text == "t"


def test_a_pass_through_request() -> None:
    from svir_proto import PassThrough

    with pytest.raises(ValueError, match="content_length"):
        PassThrough(content_length=-1)
    request = PassThrough(content_length=10, declared_tools=frozenset({"lookup"}))
    ex = Exchange(EP, request)
    assert ex.body is None
    assert dict(ex.headers)["Content-Length"] == "10"
    ex.receive_head(200, SSE)
    ex.receive_body(OPENAI_BODY)
    assert [c.declared for c in ex.result.tool_calls] == [True, True]


def test_options_are_checked_when_the_exchange_is_made() -> None:
    from svir_proto import check_options

    with pytest.raises(ValueError, match="max_event_size must be a positive int"):
        Exchange(EP, CHAT, max_event_size=True)  # bool is not an int here
    with pytest.raises(TypeError, match="think_opened must be a bool"):
        Exchange(EP, CHAT, think_opened=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="errors must be 'strict' or 'replace'"):
        Exchange(EP, CHAT, errors="ignore")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="user_agent must be a non-empty line"):
        Exchange(EP, CHAT, user_agent="a\r\nb")
    with pytest.raises(ValueError, match="target_form"):
        Exchange(EP, CHAT, target_form="authority")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"'max_event' .*did you mean 'max_event_size'"):
        check_options({"max_event": 1})
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'zzz'$"):
        check_options({"zzz": 1})


def test_the_caller_headers_and_the_url() -> None:
    ex = Exchange(EP, CHAT, headers={"OpenAI-Project": "p"}, user_agent="agent/2")
    headers = dict(ex.headers)
    assert (headers["OpenAI-Project"], headers["User-Agent"]) == ("p", "agent/2")
    assert ex.url == "http://127.0.0.1:1234/v1/chat/completions"
    absolute = Exchange(EP, ModelsRequest(), target_form="absolute")
    assert absolute.target == absolute.url == "http://127.0.0.1:1234/v1/models"


def test_the_request_id_and_the_response_headers() -> None:
    ex = Exchange(EP, CHAT)
    assert ex.request_id is None
    ex.receive_head(200, [*SSE, (b"apim-request-id", b"az-1"), (b"X-Request-Id", b"r-1")])
    assert ex.request_id == "r-1"  # x-request-id first, wherever it stands
    assert ("x-request-id", "r-1") in ex.response_headers
    azure = Exchange(EP, CHAT)
    azure.receive_head(200, [*SSE, (b"x-request-id", b""), (b"apim-request-id", b"az-2")])
    assert azure.request_id == "az-2"  # an empty one is none


@pytest.mark.parametrize(
    ("status", "kind"),
    [(200, FailureKind.UNEXPECTED), (429, FailureKind.RATE_LIMITED), (418, FailureKind.UNEXPECTED)],
)
def test_a_body_in_a_coding_not_asked_for_is_a_failure_from_the_head(
    status: int, kind: FailureKind
) -> None:
    ex = Exchange(EP, CHAT)
    head = [*SSE, (b"Content-Encoding", b"gzip"), (b"Retry-After", b"2")]
    (_, failed) = ex.receive_head(status, head)
    assert isinstance(failed, RequestFailed)
    assert failed.failure.kind is kind
    assert failed.failure.code == "unexpected_content_encoding"
    assert failed.failure.retry_after == 2
    assert ex.finished
    models = Exchange(EP, ModelsRequest())
    assert isinstance(
        models.receive_head(200, [*JSON, (b"content-encoding", b"br")])[-1], RequestFailed
    )
    plain = Exchange(EP, CHAT)
    assert plain.receive_head(200, [*SSE, (b"content-encoding", b"identity")]) == [
        ResponseStarted(
            status=200,
            headers=(("content-type", "text/event-stream"), ("content-encoding", "identity")),
        )
    ]
    refused = Exchange(EP, CHAT)
    (_, auth) = refused.receive_head(401, [(b"content-encoding", b"gzip")])
    assert isinstance(auth, RequestFailed)
    assert auth.failure.kind is FailureKind.AUTHENTICATION  # decided first


def test_a_relayed_request_names_a_path_below_v1() -> None:
    from svir_proto.exchange import PassThrough as Relay

    with pytest.raises(ValueError, match="below /v1"):
        Relay(content_length=0, method="GET", target="models", relay=True)
