"""`GatewayConnection` on Gemini's own path (``/v1beta/models/M:streamGenerateContent?alt=sse``
and ``:generateContent``), sans-IO: the model and the method come from the path, the answer is
in Gemini's dialect, and so are the gateway's refusals; the gateway's token may come as
google-genai sends its key (``x-goog-api-key``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from svir_proto import (
    ChatStreamDecoder,
    Exchange,
    Forward,
    PassThrough,
    Reply,
    ServerSentEvent,
    SSEDecoder,
)
from svir_proto.anthropic import MessagesRequest
from svir_proto.errors import FailureKind
from svir_proto.gemini import GeminiRequest, GeminiStreamDecoder
from svir_proto.openai import ChatRequest, Endpoint
from tests.helpers import CONFORMANCE
from tests.unit.test_gateway import (
    ANTHROPIC_TOOLS,
    MESSAGES,
    TOOLS,
    UPSTREAM,
    config,
    events_of,
    request,
    response,
)

GEMINI = json.dumps(
    {
        "contents": [{"role": "user", "parts": [{"text": "What is the weather?"}]}],
        "tools": [{"functionDeclarations": [{"name": "get_weather", "parameters": {}}]}],
        "generationConfig": {"maxOutputTokens": 64},
    }
).encode()
STREAM = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
WHOLE = "/v1beta/models/gemini-2.5-flash:generateContent"
JSON = {"Content-Type": "application/json"}
CALLS = (CONFORMANCE / "gemini" / "function-call-2.5.sse").read_bytes()


def gemini(target: str = STREAM, body: bytes = GEMINI, **headers: str) -> bytes:
    return request(body, target=target, headers={**JSON, **headers})


def refusal(data: bytes, **options: Any) -> tuple[int, dict[str, Any], dict[str, str]]:
    """The gateway's own answer to ``data``: its status, Gemini's error object, its head."""
    _, (reply,) = events_of(data, **options)
    assert isinstance(reply, Reply)
    status, headers, body = response(reply.data)
    error = json.loads(body)["error"]
    assert error["code"] == status  # Gemini's object: the status in it, and its RPC name
    return status, error, headers


def decoded(decoder: Any, body: bytes) -> Any:
    decoder.feed(body)
    decoder.close()
    return decoder.result


def test_a_gemini_client_of_a_chat_upstream_is_translated_with_its_paths_model() -> None:
    gw, (forward,) = events_of(gemini(), config=config())
    assert isinstance(forward, Forward)
    assert isinstance(forward.request, ChatRequest)
    assert forward.request.model == "gemini-2.5-flash"  # from the path
    assert forward.request.max_tokens == 64
    assert forward.dialect == gw.dialect == "gemini"
    assert gw.streaming_request
    exchange = Exchange(UPSTREAM, forward.request)
    out = gw.upstream(exchange.receive_head(200, [("content-type", "text/event-stream")]))
    out += gw.upstream(exchange.receive_body(TOOLS) + exchange.end_of_body())
    status, headers, body = response(out)
    assert (status, headers["content-type"]) == (200, "text/event-stream")
    got = decoded(GeminiStreamDecoder(declared_tools={"get_weather"}), body)
    want = decoded(ChatStreamDecoder(declared_tools={"get_weather"}), TOOLS)
    assert got.complete
    assert want.complete
    assert got.text == want.text
    calls = [(c.name, json.loads(c.arguments)) for c in got.tool_calls]
    assert calls == [(c.name, json.loads(c.arguments)) for c in want.tool_calls]
    assert calls
    assert got.usage is not None
    assert want.usage is not None
    assert got.usage.completion_tokens == want.usage.completion_tokens
    assert b"\n:" not in b"\n" + body  # no SSE comment: google-genai reads any line as JSON
    assert gw.outcome == "ok"


@pytest.mark.parametrize("model", ["cachedContents/abc", "files/f", "models/..;x/..;x/a"])
def test_a_translated_clients_model_names_only_a_model_upstream(model: str) -> None:
    """Attack 67 F2: a Chat client's model went into the Gemini upstream's path as it was,
    naming any resource of the API (``cachedContents/abc``), sent with the gateway's key, where
    the Gemini path refuses the same. It is a 400 that names it, and nothing goes upstream."""
    body = json.dumps(
        {"model": model, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    ).encode()
    _, (reply,) = events_of(request(body, headers=JSON), config=config(upstream_dialect="gemini"))
    assert isinstance(reply, Reply)
    status, _, answer = response(reply.data)
    assert status == 400
    assert model in json.loads(answer)["error"]["message"]


def test_a_tuned_model_and_an_encoded_name_are_read_from_the_path() -> None:
    target = "/v1beta/tunedModels/my%20model:streamGenerateContent?alt=sse&key=abc"
    _, (forward,) = events_of(gemini(target), config=config(upstream_dialect="messages"))
    assert isinstance(forward, Forward)
    assert isinstance(forward.request, MessagesRequest)
    assert forward.request.model == "tunedModels/my model"


def test_a_gemini_client_of_a_gemini_upstream_is_relayed_with_the_gateways_key() -> None:
    target = "/v1/models/gemini-2.5-flash:streamGenerateContent?alt=sse&key=the-clients"
    gw, (forward,) = events_of(gemini(target), config=config(upstream_dialect="gemini"))
    assert isinstance(forward, Forward)
    relay = forward.request
    assert isinstance(relay, PassThrough)
    assert (relay.relay, relay.dialect) == (True, "gemini")
    # the canonical target, from the root: the client's query (its key) does not go
    assert relay.target == "/v1/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert forward.body == GEMINI  # as the client sent it
    keyed = Endpoint.parse("https://gl.test/v1beta", "gateway-key")
    exchange = Exchange(keyed, relay)
    assert exchange.target == relay.target  # the endpoint's version is the target's
    sent = {k.lower(): v for k, v in exchange.headers}
    assert sent["x-goog-api-key"] == "gateway-key"  # where Gemini's API expects it
    assert "authorization" not in sent
    out = gw.relay_head(200, (("content-type", "text/event-stream"),))
    exchange.receive_head(200, [("content-type", "text/event-stream")])
    exchange.receive_body(CALLS)
    out += gw.relay_data(b"".join(exchange.relayed)) + gw.relay_end(complete=True)
    status, _, body = response(out)
    assert (status, body) == (200, CALLS)  # as the upstream said it
    assert gw.outcome == "ok"


def test_a_relayed_messages_request_sends_the_key_as_anthropics_api_expects() -> None:
    data = request(MESSAGES, target="/v1/messages", headers=JSON)
    _, (forward,) = events_of(data, config=config(upstream_dialect="messages"))
    exchange = Exchange(Endpoint.parse("https://api.test/v1", "sk-ant"), forward.request)
    sent = {k.lower(): v for k, v in exchange.headers}
    assert sent["x-api-key"] == "sk-ant"
    assert "anthropic-version" in sent
    assert "authorization" not in sent
    assert exchange.target == "/v1/messages"


def test_a_big_body_passed_through_to_a_gemini_upstream_keeps_the_paths_facts() -> None:
    body = GEMINI.replace(b"What is the weather?", b"w" * 5000)
    gw, events = events_of(
        gemini(WHOLE, body), config=config(upstream_dialect="gemini", hold_below=1024)
    )
    forward = events[0]
    assert isinstance(forward, Forward)
    assert isinstance(forward.request, PassThrough)
    assert forward.request.target == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert not gw.streaming_request  # generateContent: a whole answer
    assert gw._model == "gemini-2.5-flash"


@pytest.mark.parametrize(
    ("target", "headers", "status", "rpc", "says"),
    [
        (STREAM.replace("alt=sse", "alt=proto"), JSON, 400, "INVALID_ARGUMENT", "alt=proto"),
        (
            "/v1beta/models/a%2F..%2Fb:streamGenerateContent?alt=sse",
            JSON, 400, "INVALID_ARGUMENT", "'..'",
        ),
        (STREAM, {"Content-Type": "text/plain"}, 415, None, "application/json"),
        ("/v1beta/models/a%FFb:generateContent", JSON, 400, "INVALID_ARGUMENT", "UTF-8"),
        ("/v1beta/models/a%0Db:generateContent", JSON, 400, "INVALID_ARGUMENT", "control"),
    ],
)  # fmt: skip
def test_what_the_gemini_path_refuses_is_said_in_geminis_error_object(
    target: str, headers: dict[str, str], status: int, rpc: str | None, says: str
) -> None:
    got, error, head = refusal(request(GEMINI, target=target, headers=headers), config=config())
    assert got == status
    assert says in error["message"]
    if rpc is not None:
        assert error["status"] == rpc
    assert head["x-request-id"] if status == 400 else True


def test_an_absolute_form_target_is_read_as_its_origin_form() -> None:
    """Review 63: the Gemini path's read took the raw target, and an absolute form's host
    that is no host (``[::1``) raised a ValueError out of `feed`; the origin form, with its
    query, is what is read, and an authority that is no host is a 400 (attack 67 F3)."""
    target = "http://[::1]:8787/v1beta/models/m:streamGenerateContent?alt=sse"
    gw, (forward,) = events_of(gemini(target), config=config())
    assert isinstance(forward, Forward)
    assert forward.request.model == "m"
    assert gw.streaming_request
    status, error, _ = refusal(gemini(target.replace("]", "")), config=config())
    assert status == 400
    assert "is not a host and a port" in error["message"]


def test_a_gemini_body_that_breaks_the_rules_names_where() -> None:
    status, error, _ = refusal(gemini(body=b'{"contents": 3}'), config=config())
    assert status == 400
    assert error["message"].startswith("$.contents")
    status, error, _ = refusal(gemini(body=b"not json"), config=config())
    assert (status, error["status"]) == (400, "INVALID_ARGUMENT")


@pytest.mark.parametrize(
    ("method", "target"),
    [
        ("POST", "/v1beta/models/g:countTokens"),
        ("GET", "/v1beta/models/g:countTokens"),
        ("GET", "/v1beta/tunedModels"),
        ("GET", "/v1alpha/x"),
    ],
)
def test_another_path_of_geminis_versions_is_refused_in_geminis_shape(
    method: str, target: str
) -> None:
    """Attack 62 F6: google-genai's ``countTokens`` and model listing got OpenAI's 404."""
    status, error, _ = refusal(request(GEMINI, method=method, target=target), config=config())
    assert (status, error["status"]) == (404, "NOT_FOUND")
    assert target in error["message"]


def test_the_gemini_path_takes_post_only() -> None:
    status, error, head = refusal(request(method="GET", target=STREAM), config=config())
    assert (status, head["allow"]) == (405, "POST")
    assert "POST" in error["message"]


@pytest.mark.parametrize(
    ("target", "header"), [(STREAM, "x-goog-api-key"), ("/v1/messages", "x-api-key")]
)
def test_the_gateways_token_may_come_where_the_vendors_sdk_sends_its_key(
    target: str, header: str
) -> None:
    body = GEMINI if target == STREAM else MESSAGES
    _, events = events_of(
        request(body, target=target, headers={**JSON, header: "t0k"}), config=config(token="t0k")
    )
    assert isinstance(events[0], Forward)
    _, (reply,) = events_of(
        request(body, target=target, headers={**JSON, header: "wrong"}),
        config=config(token="t0k"),
    )
    assert isinstance(reply, Reply)
    assert response(reply.data)[0] == 401
    two = request(body, target=target, headers=JSON).replace(
        b"\r\n\r\n", f"\r\n{header}: t0k\r\n{header}: t0k\r\n\r\n".encode(), 1
    )
    _, (reply,) = events_of(two, config=config(token="t0k"))
    assert isinstance(reply, Reply)
    status, _, answer = response(reply.data)
    assert status == 400
    assert header.encode() in answer
    # another path's vendor header is no token: OpenAI's takes Authorization only
    _, (reply,) = events_of(
        request(b"{}", headers={**JSON, header: "t0k"}), config=config(token="t0k")
    )
    assert isinstance(reply, Reply)
    assert response(reply.data)[0] == 401


def test_a_gemini_stream_keeps_alive_with_empty_lines_and_says_no_comment() -> None:
    refusals = (CONFORMANCE / "openai" / "openai-refusal.sse").read_bytes()
    gw, (forward,) = events_of(gemini(), config=config())
    exchange = Exchange(UPSTREAM, forward.request)
    out = gw.keepalive()  # the stream's head, and an empty line
    out += gw.upstream(exchange.receive_head(200, [("content-type", "text/event-stream")]))
    out += gw.keepalive()
    out += gw.upstream(exchange.receive_body(refusals) + exchange.end_of_body())
    status, _, body = response(out)
    assert status == 200
    assert body.startswith(b"\r\n")
    assert b"\n:" not in b"\n" + body
    assert gw.noted >= 1  # the refusal written as text: counted, not written (no comment)
    got = decoded(GeminiStreamDecoder(), body)
    want = decoded(ChatStreamDecoder(), refusals)
    assert got.text == want.text + want.refusal
    assert got.complete


def test_a_gemini_request_of_a_messages_upstream_round_trips_its_answer() -> None:
    gw, (forward,) = events_of(gemini(), config=config(upstream_dialect="messages"))
    assert isinstance(forward.request, MessagesRequest)
    exchange = Exchange(UPSTREAM, forward.request)
    out = gw.upstream(exchange.receive_head(200, [("content-type", "text/event-stream")]))
    out += gw.upstream(exchange.receive_body(ANTHROPIC_TOOLS) + exchange.end_of_body())
    _, _, body = response(out)
    got = decoded(GeminiStreamDecoder(), body)
    from svir_proto.anthropic import MessagesStreamDecoder

    want = decoded(MessagesStreamDecoder(), ANTHROPIC_TOOLS)
    assert [(c.name, json.loads(c.arguments)) for c in got.tool_calls] == [
        (c.name, json.loads(c.arguments)) for c in want.tool_calls
    ]
    assert got.text == want.text


def test_a_gemini_request_parses_as_the_dialect_reads_it() -> None:
    """What the gateway translated is what `GeminiRequest.parse` reads of the body."""
    gw, (forward,) = events_of(gemini(), config=config(upstream_dialect="responses"))
    parsed = GeminiRequest.parse(GEMINI, model="gemini-2.5-flash")
    assert parsed.tool_names == {"get_weather"}
    assert forward.request.tool_names == parsed.tool_names
    assert gw.dialect == "gemini"


@pytest.mark.parametrize(
    ("target", "said"),
    [
        (STREAM, b"data: [DONE]\n\n"),
        (WHOLE, b"data: [DONE]\n\n"),
        (WHOLE, b'data: {"id":"c","choices":[]}\n\n'),  # (streamed: begun, then cut)
    ],
)
def test_an_upstream_that_said_nothing_is_a_status_streamed_or_whole(
    target: str, said: bytes
) -> None:
    """Attack 62: a Chat upstream that sent only its end marker was a 502 to a stream, and a
    200 with no part and no finish to ``:generateContent``: both are the cut's 502 now."""
    gw, (forward,) = events_of(gemini(target), config=config())
    exchange = Exchange(UPSTREAM, forward.request)
    out = gw.upstream(exchange.receive_head(200, [("content-type", "text/event-stream")]))
    out += gw.upstream(exchange.receive_body(said) + exchange.end_of_body())
    status, _, body = response(out)
    assert status == 502
    assert json.loads(body)["error"]["code"] == 502


ARRAY = STREAM.removesuffix("?alt=sse")


def array_elements(body: bytes) -> list[dict[str, Any]]:
    """An array stream's elements, as a client that parses the whole body reads them."""
    doc = json.loads(body)
    assert isinstance(doc, list)
    return doc


def as_sse(elements: list[dict[str, Any]]) -> bytes:
    """The same chunks framed as SSE, for `GeminiStreamDecoder` (which reads SSE only)."""
    return b"".join(b"data: " + json.dumps(e).encode() + b"\r\n\r\n" for e in elements)


@pytest.mark.parametrize(
    "target", [ARRAY, ARRAY + "?alt=json&key=k", ARRAY.replace("/v1beta/", "/v1/")]
)
def test_a_stream_without_alt_sse_is_one_json_array(target: str) -> None:
    """Gemini's stream without ``alt=sse`` is one JSON array (it was a 400): the gateway's
    encoder writes it from another dialect's upstream, asked for a stream; blank keep-alives
    are JSON's blanks."""
    gw, (forward,) = events_of(gemini(target), config=config())
    assert isinstance(forward, Forward)
    assert not isinstance(forward.request, PassThrough)  # translated
    assert gw.streaming_request
    exchange = Exchange(UPSTREAM, forward.request)
    out = gw.keepalive()  # the head, as JSON, and blanks before the array
    out += gw.upstream(exchange.receive_head(200, [("content-type", "text/event-stream")]))
    out += gw.upstream(exchange.receive_body(TOOLS[:40]))
    out += gw.keepalive()
    out += gw.upstream(exchange.receive_body(TOOLS[40:]) + exchange.end_of_body())
    status, headers, body = response(out)
    assert (status, headers["content-type"]) == (200, "application/json")
    assert body.startswith(b"\r\n")
    assert body.lstrip().startswith(b"[")
    got = decoded(GeminiStreamDecoder(), as_sse(array_elements(body)))
    want = decoded(ChatStreamDecoder(), TOOLS)
    assert got.complete
    assert got.text == want.text
    calls = [(c.name, json.loads(c.arguments)) for c in got.tool_calls]
    assert calls == [(c.name, json.loads(c.arguments)) for c in want.tool_calls]
    assert calls
    assert gw.outcome == "ok"


@pytest.mark.parametrize(
    "target", [ARRAY, ARRAY + "?alt=json&key=k", ARRAY.replace("/v1beta/", "/v1/")]
)
def test_a_gemini_upstreams_stream_is_relayed_as_the_array_asked_for(target: str) -> None:
    """Attack 69 F4: an array stream of a Gemini upstream was decoded and encoded again, and
    lost what no event carries. The request goes as it came, asking for SSE, to the API version
    the client's path named (review 64 F2); each whole event's data is an element, its bytes as
    they came (comments and other fields are SSE's framing); a keep-alive before the upstream's
    head sends the array's head, and blanks."""
    gw, (forward,) = events_of(gemini(target), config=config(upstream_dialect="gemini"))
    assert isinstance(forward, Forward)
    assert isinstance(forward.request, PassThrough)
    version = target.split("/")[1]
    exchange = Exchange(UPSTREAM, forward.request)
    where = f"/{version}/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert exchange.target.endswith(where)
    elements = [json.loads(d[6:]) for d in CALLS.split(b"\r\n\r\n") if d]
    noisy = b": ping\r\n\r\n" + CALLS.replace(b"data: ", b"id: 1\r\n:c\r\ndata:", 1)
    out = gw.keepalive()
    out += gw.relay_head(200, (("content-type", "text/event-stream"), ("x-goog-id", "g")))
    out += gw.relay_events(noisy[:10]) + gw.keepalive() + gw.relay_events(noisy[10:])
    out += gw.relay_end(complete=True)
    status, headers, body = response(out)
    assert (status, headers["content-type"]) == (200, "application/json")
    assert "svir-lost" not in headers
    assert json.loads(body) == elements
    assert CALLS.split(b"\r\n\r\n")[0][6:] in body  # (its bytes)
    assert gw.outcome == "ok"
    gw, _ = events_of(gemini(target), config=config(upstream_dialect="gemini"))
    out = gw.relay_head(200, (("content-type", "text/event-stream"), ("x-goog-id", "g")))
    out += gw.relay_events(b": nothing\r\n\r\ndata: \r\n\r\n")  # (no element)
    _, headers, body = response(out + gw.relay_end(complete=True))
    assert (headers["content-type"], headers["x-goog-id"]) == ("application/json", "g")
    assert body == b"[]"  # (an empty stream is an empty array)
    assert gw.relay_end(complete=True) == b""
    gw, _ = events_of(gemini(target), config=config(upstream_dialect="gemini"))
    out = gw.relay_head(200, (("content-type", "text/event-stream"),))
    out += gw.relay_events(CALLS) + gw.relay_end(complete=False)  # a cut stays a cut
    assert not out.endswith(b"]\r\n0\r\n\r\n")
    assert out.endswith((b"}", b"}\r\n"))
    assert gw.outcome == "cut"


@pytest.mark.parametrize("elements", [0, 2])
def test_a_relayed_array_that_broke_ends_with_the_gateways_error_element(elements: int) -> None:
    """The gateway's error follows the elements the relay wrote (or opens the array, when none
    went), the array's last: a client that reads the whole body reads it."""
    gw, _ = events_of(gemini(ARRAY), config=config(upstream_dialect="gemini"))
    out = gw.relay_head(200, (("content-type", "text/event-stream"),))
    events = CALLS.split(b"\r\n\r\n")[0] + b"\r\n\r\n"
    for _ in range(elements):
        out += gw.relay_events(events)
    out += gw.upstream_broken("the upstream stalled", kind=FailureKind.TIMEOUT)
    _, _, body = response(out)
    got = array_elements(body)
    assert len(got) == elements + 1
    assert got[-1]["error"]["message"] == "the upstream stalled"
    assert got[-1]["error"]["code"] == 504
    assert gw.outcome == "failed"


def test_an_array_stream_that_broke_ends_with_its_error_element() -> None:
    gw, (forward,) = events_of(gemini(ARRAY), config=config())
    exchange = Exchange(UPSTREAM, forward.request)
    out = gw.upstream(exchange.receive_head(200, [("content-type", "text/event-stream")]))
    out += gw.upstream(exchange.receive_body(TOOLS[: TOOLS.index(b"\n\n") + 2]))
    out += gw.upstream_broken("the upstream stalled", kind=FailureKind.TIMEOUT)
    status, _, body = response(out)
    assert status == 200  # (the head went with the first chunk)
    elements = array_elements(body)  # closed: the error is its last element
    assert elements[-1]["error"]["message"] == "the upstream stalled"
    assert gw.outcome == "failed"


def test_a_relayed_whole_answer_asks_the_upstream_for_json() -> None:
    """Review 63: a Gemini body passed through piece by piece asked ``:generateContent`` for
    ``text/event-stream``."""
    body = GEMINI.replace(b"What is the weather?", b"w" * 5000)
    for target, accept in ((WHOLE, "application/json"), (STREAM, "text/event-stream")):
        _, events = events_of(
            gemini(target, body), config=config(upstream_dialect="gemini", hold_below=1024)
        )
        assert isinstance(events[0], Forward)
        assert isinstance(events[0].request, PassThrough)
        assert events[0].request.accept == accept


@pytest.mark.parametrize("target", [STREAM, ARRAY])
def test_an_upstreams_error_ends_a_gemini_streams_body(target: str) -> None:
    """Review 64 F1: after the upstream's own error (a vLLM error chunk), the Gemini stream's
    error chunk was written, the array closed, and the body cut: a client that reads the
    whole body (urllib, curl) failed on the missing last chunk and never read the error. The
    error chunk is the stream's end (encoder Rule 6): the body ends, the outcome is failed."""
    said = (CONFORMANCE / "openai" / "vllm-error-chunk.sse").read_bytes()
    gw, (forward,) = events_of(gemini(target), config=config())
    exchange = Exchange(UPSTREAM, forward.request)
    out = gw.upstream(exchange.receive_head(200, [("content-type", "text/event-stream")]))
    out += gw.upstream(exchange.receive_body(said) + exchange.end_of_body())
    assert out.endswith(b"\r\n0\r\n\r\n")  # the chunked body's end
    _, _, body = response(out)
    chunks = array_elements(body) if target == ARRAY else json_chunks(body)
    assert "error" in chunks[-1]
    assert gw.outcome == "failed"


def json_chunks(body: bytes) -> list[dict[str, Any]]:
    return [json.loads(c[6:]) for c in body.split(b"\r\n\r\n") if c.strip()]


def test_a_relayed_gemini_stream_goes_without_its_comments_and_others_keep_theirs() -> None:
    """Attack 62 F5: only a dialect whose clients read no comment loses them (any line end);
    a Chat client's relay keeps the upstream's bytes whole."""
    target = "/v1beta/models/g:streamGenerateContent?alt=sse"
    gw, _ = events_of(gemini(target), config=config(upstream_dialect="gemini"))
    gw.relay_head(200, (("content-type", "text/event-stream"),))
    events = b': a\rdata: {"x": 1}\r: b\r\rdata: {"y": 2}\n:c\n\n'
    assert gw.relay_events(events).endswith(b'\r\ndata: {"x": 1}\r\rdata: {"y": 2}\n\n\r\n')
    chat, _ = events_of(request(b'{"model": "m", "stream": true}', headers=JSON), config=config())
    chat.relay_head(200, (("content-type", "text/event-stream"),))
    assert chat.relay_events(events) == b"%x\r\n%b\r\n" % (len(events), events)


@pytest.mark.parametrize(
    "events",
    [
        b'data: {"x": 1}\r:c\n\ndata: {"y": 2}\n\n',
        b'data: {"x": 1}\r:c\n: d\r\n\ndata: {"y": 2}\r\r',
        b'data: {"x": 1}\r\r:c\n\ndata: {"y": 2}\r:c\r\n\n',
    ],
)
def test_a_comment_taken_out_joins_no_line_ends(events: bytes) -> None:
    """Attack 80 F2: a CR ending a line, a comment, then a blank line's LF: without the
    comment, the CR and the LF read as one line end, and the client got the two events as one
    whose data was no JSON. The client reads the events the upstream sent."""
    gw, _ = events_of(gemini(STREAM), config=config(upstream_dialect="gemini"))
    out = gw.relay_head(200, (("content-type", "text/event-stream"),))
    out += gw.relay_events(events) + gw.relay_end(complete=True)
    _, _, body = response(out)
    assert not any(line.startswith(b":") for line in body.splitlines())
    assert [e.data for e in SSEDecoder().feed(body) if isinstance(e, ServerSentEvent)] == [
        e.data for e in SSEDecoder().feed(events) if isinstance(e, ServerSentEvent)
    ]
    assert len([e for e in SSEDecoder().feed(body) if isinstance(e, ServerSentEvent)]) == 2


@pytest.mark.parametrize("tail", [b": unfini", b":", b": a\r\n: unfini"])
def test_a_body_that_ended_inside_a_comment_not_passed_on_stays_cut(tail: bytes) -> None:
    """Attack 77: after its last event, an upstream's body ended inside a comment line; the
    array client's body was cut, as the decoder judges, but the SSE client's, without the
    comment, looked whole. Both are cut; a comment that ended ends nothing."""
    event = CALLS.split(b"\r\n\r\n")[0] + b"\r\n\r\n"
    for target in (STREAM, ARRAY):
        gw, _ = events_of(gemini(target), config=config(upstream_dialect="gemini"))
        out = gw.relay_head(200, (("content-type", "text/event-stream"),))
        out += gw.relay_events(event) + gw.relay_events(tail) + gw.relay_end(complete=True)
        assert not out.endswith(b"0\r\n\r\n")
        assert b"unfini" not in out
        assert gw.outcome == "cut"
    gw, _ = events_of(gemini(STREAM), config=config(upstream_dialect="gemini"))
    out = gw.relay_head(200, (("content-type", "text/event-stream"),))
    out += gw.relay_events(event + tail + b"\n") + gw.relay_end(complete=True)
    assert out.endswith(b"0\r\n\r\n")
    assert gw.outcome == "ok"


def test_a_relayed_streams_byte_order_mark_does_not_follow_a_keep_alive() -> None:
    """Attack 77 F2: a keep-alive of ours went before an upstream whose body began with a byte
    order mark, which a reader then took for the first line's: its first event was lost. The
    mark is no content: it is not passed on."""
    event = CALLS.split(b"\r\n\r\n")[0] + b"\r\n\r\n"
    gw, _ = events_of(gemini(STREAM), config=config(upstream_dialect="gemini"))
    out = gw.keepalive()
    out += gw.relay_head(200, (("content-type", "text/event-stream"),))
    out += gw.relay_events(b"\xef\xbb\xbf" + event) + gw.relay_events(b"\xef\xbb\xbf" + event)
    _, _, body = response(out + gw.relay_end(complete=True))
    assert body == b"\r\n" + event + b"\xef\xbb\xbf" + event  # (the first only: the body's)


def test_an_array_body_named_sse_is_no_stream_to_relay_as_an_array() -> None:
    """Attack 77 F1: an upstream that ignored ``alt=sse`` and named its array SSE was passed
    as it came: a truncated array ended whole, and the gateway's error began a second array.
    Nothing of it is written: its end is a cut, and an error the gateway ends it with is the
    array's one element."""
    array = b'[{"candidates": [{"content": {"parts": [{"text": "a"}]}}]}]'
    gw, _ = events_of(gemini(ARRAY), config=config(upstream_dialect="gemini"))
    out = gw.relay_head(200, (("content-type", "text/event-stream"),))
    out += gw.relay_events(array) + gw.relay_end(complete=True)
    assert not out.endswith(b"0\r\n\r\n")
    assert gw.outcome == "cut"
    gw, _ = events_of(gemini(ARRAY), config=config(upstream_dialect="gemini"))
    out = gw.relay_head(200, (("content-type", "text/event-stream"),))
    out += gw.relay_events(array[:20]) + gw.upstream_broken("the upstream broke the protocol")
    _, _, body = response(out)
    assert [e["error"]["code"] for e in json.loads(body)] == [502]
