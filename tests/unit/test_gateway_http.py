"""The HTTP/1.1 rules the gateway applies to a client's head (RFC 9110, RFC 9112; issue 16):
framing, HEAD, Expect, reason phrases, who may use it, the bounds it holds, its config."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest

from svir_proto.gateway import (
    Forward,
    GatewayConfig,
    GatewayConnection,
    GatewayState,
    Interim,
    LocalRequest,
    Reply,
)
from svir_proto.gateway._cost import BodyCost, parse_cost
from svir_proto.gateway._http import bearer, host_allowed, host_name, host_valid, reason
from svir_proto.gateway.connection import _prepare
from svir_proto.openai import Endpoint
from tests.helpers import bytewise
from tests.unit.test_gateway import response

UPSTREAM = Endpoint.parse("http://upstream.test")
BODY = json.dumps({"model": "m", "messages": [], "stream": True}).encode()


def raw(*lines: str, body: bytes = b"") -> bytes:
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def conn(**options: Any) -> GatewayConnection:
    config = GatewayConfig(upstream=UPSTREAM, **options)
    return GatewayConnection(config, GatewayState(config, new_id=lambda: "id"))


def answer(data: bytes, **options: Any) -> tuple[int, dict[str, str], bytes, Reply]:
    out = conn(**options).feed(data)
    reply = out[-1]
    assert isinstance(reply, Reply)
    status, headers, body = response(reply.data)
    return status, headers, body, reply


@pytest.mark.parametrize(
    "framing",
    [
        ("Content-Length: 4", "Transfer-Encoding: chunked"),
        ("Transfer-Encoding: chunked", "Content-Length: 9"),
    ],
)
def test_two_framings_are_refused_and_the_connection_closed(framing: tuple[str, str]) -> None:
    data = raw(
        "POST /v1/chat/completions HTTP/1.1", "Host: gw", "Content-Type: application/json",
        *framing, body=b"4\r\nabcd\r\n0\r\n\r\n",
    )  # fmt: skip
    status, headers, _, reply = answer(data)
    assert status == 400
    assert reply.close
    assert headers["connection"] == "close"


@pytest.mark.parametrize(
    "lines",
    [
        ("Transfer-Encoding:", " chunked"),  # the smuggler's form
        ("Content-Length:", "\t4"),
        ("X: a", " b"),
        ("X: a", "\t"),
    ],
)
@pytest.mark.parametrize("mode", ["whole", "bytewise", "pipelined"])
def test_a_folded_header_line_is_refused_and_the_connection_closed(
    lines: tuple[str, str], mode: str
) -> None:
    """Attack (hostile battery ``te-obs-fold``, ``cl-obs-fold``, ``obs-fold``): h11 unfolds
    obs-fold, so ``Transfer-Encoding:\\r\\n chunked`` was read as chunked, where a proxy in
    front may read it otherwise. RFC 9112 5.2: refuse it with 400, and close."""
    head = ["POST /v1/chat/completions HTTP/1.1", "Host: gw", "Content-Type: application/json"]
    data = raw(*head, *lines, body=b"4\r\nabcd\r\n0\r\n\r\n")
    c = conn()
    if mode == "pipelined":  # a good request first, the folded one after it
        c.feed(raw("GET /healthz HTTP/1.1", "Host: gw"))
        c.reply_local(200, "application/json", b"{}")
        c.finish_request()
        c.start_next_cycle()
    pieces = bytewise(data) if mode == "bytewise" else [data]
    events = [e for piece in pieces for e in c.feed(piece)]
    reply = events[-1]
    assert isinstance(reply, Reply)
    status, headers, _ = response(reply.data)
    assert status == 400
    assert reply.close
    assert headers["connection"] == "close"


def test_a_body_with_lines_that_begin_with_a_space_is_no_fold() -> None:
    body = b'{\n  "model": "m",\n  "messages": [],\n\t"stream": true\n}'
    events = conn().feed(raw(
        "POST /v1/chat/completions HTTP/1.1", "Host: gw", "Content-Type: application/json",
        f"Content-Length: {len(body)}", body=body,
    ))  # fmt: skip
    assert not any(isinstance(e, Reply) for e in events), events


@pytest.mark.parametrize(
    ("target", "host", "status"),
    [
        ("http://gw/healthz", "gw", 200),
        ("HTTP://gw:8080/healthz?x=1", "other.example", 200),  # its authority, not Host
        ("http://gw", "gw", 404),  # the path "/"
        ("http://evil.example/healthz", "gw", 421),  # DNS rebinding through absolute form
        ("https://user@gw/healthz", "gw", 400),  # userinfo: an error (RFC 9110 4.2.4)
        ("http://gw:8787@evil.example/healthz", "gw", 400),  # attack 67 F3: its host is evil's
        ("http://gw:+1/healthz", "gw", 400),
        ("ftp://gw/healthz", "gw", 404),
    ],
)
def test_an_absolute_form_target(target: str, host: str, status: int) -> None:
    """Attack (hostile battery ``test_an_absolute_form_target_is_served``): RFC 9112 3.2.2, "a
    server MUST accept the absolute-form in requests"; it was a 404. Its host is checked."""
    events = conn(allowed_hosts=frozenset({"gw"})).feed(
        raw(f"GET {target} HTTP/1.1", f"Host: {host}")
    )
    if status == 200:
        assert [type(e).__name__ for e in events] == ["LocalRequest"]
    else:
        reply = events[-1]
        assert isinstance(reply, Reply)
        assert response(reply.data)[0] == status


@pytest.mark.parametrize("coding", ["chunked", "CHUNKED"])
def test_an_http_1_0_request_with_transfer_encoding_is_400(coding: str) -> None:
    """RFC 9112 6.1 (attack 71 F3: it was read as chunked and served)."""
    status, _, body, reply = answer(
        raw("POST /v1/chat/completions HTTP/1.0", "Host: gw", f"Transfer-Encoding: {coding}")
    )
    assert status == 400
    assert reply.close
    assert "HTTP/1.0 request may not carry Transfer-Encoding" in body.decode()


@pytest.mark.parametrize("version", ["1.2", "2.0", "9.9", "0.9"])
def test_a_version_other_than_1_0_and_1_1_is_505(version: str) -> None:
    """Attack (hostile battery ``http-1.2``, ``http-2.0``): h11 reads any 1.x as 1.1."""
    status, _, _, reply = answer(raw(f"GET /healthz HTTP/{version}", "Host: gw"))
    assert status == 505
    assert reply.close
    assert reply.data.startswith(b"HTTP/1.1 505 HTTP Version Not Supported\r\n")
    # a HEAD's refusal has no body (h11 raised when the refusal came before HEAD was known)
    (head,) = conn().feed(raw(f"HEAD /healthz HTTP/{version}", "Host: gw"))
    assert isinstance(head, Reply)
    assert head.data.startswith(b"HTTP/1.1 505 ")
    assert head.data.endswith(b"\r\n\r\n")


@pytest.mark.parametrize(
    ("chunks", "status"),
    [
        (b"5 \r\nhello\r\n0\r\n\r\n", 400),  # a blank after the size, no extension
        (b"5\t\r\nhello\r\n0\r\n\r\n", 400),
        (b"0\r\n" + b"X: t\r\n" * 20_000 + b"\r\n", 431),  # a trailer past the head's bound
        (b"5;e=\r\rx\r\nhello\r\n0\r\n\r\n", 400),  # a CR inside an extension
    ],
)
@pytest.mark.parametrize("mode", ["whole", "bytewise"])
def test_chunked_framing_h11_lets_pass_is_refused(chunks: bytes, status: int, mode: str) -> None:
    """Attack (hostile battery ``size-space``, ``many-trailers``): h11 takes a blank after a
    chunk size, and bounds a trailer only while it is incomplete (one read of 120 KB passed).
    The body is checked beside h11, as RFC 9112 7.1 says: 400 (431 for the bound), and close."""
    data = raw(
        "POST /v1/chat/completions HTTP/1.1", "Host: gw", "Content-Type: application/json",
        "Transfer-Encoding: chunked", body=chunks,
    )  # fmt: skip
    c = conn(max_head_size=8192)
    pieces = bytewise(data) if mode == "bytewise" else [data]
    events = [e for piece in pieces for e in c.feed(piece)]
    reply = events[-1]
    assert isinstance(reply, Reply), events
    assert response(reply.data)[0] == status
    assert reply.close


def test_a_chunked_body_with_extensions_and_a_pipelined_request_after_it() -> None:
    body = json.dumps({"model": "m", "messages": [], "stream": True}).encode()
    chunks = b"%x;name=value\r\n%s\r\n0\r\nX-T: 1\r\n\r\n" % (len(body), body)
    data = raw(
        "POST /v1/chat/completions HTTP/1.1", "Host: gw", "Content-Type: application/json",
        "Transfer-Encoding: chunked", body=chunks,
    ) + raw("GET /healthz HTTP/1.1", "Host: gw")  # fmt: skip
    events = conn().feed(data)
    assert [type(e).__name__ for e in events] == ["Forward"], events


def test_every_status_line_has_its_reason_phrase() -> None:
    _, _, _, reply = answer(raw("GET /nope HTTP/1.1", "Host: gw"))
    assert reply.data.startswith(b"HTTP/1.1 404 Not Found\r\n")
    assert reason(299) == b"Unknown"


@pytest.mark.parametrize("target", ["/healthz", "/readyz", "/metrics"])
def test_head_is_get_without_the_body(target: str) -> None:
    gw = conn()
    (local,) = gw.feed(raw(f"HEAD {target} HTTP/1.1", "Host: gw"))
    assert local == LocalRequest(name=target[1:])  # type: ignore[arg-type]
    out = gw.reply_local(200, "application/json", b'{"status":"ok"}')
    assert out.endswith(b"\r\n\r\n")
    assert b"Content-Length: 15" in out
    assert b'{"status"' not in out
    assert gw.reusable


@pytest.mark.parametrize("method", ["HEAD", "GET", "OPTIONS", "PUT"])
def test_other_methods_on_a_post_route_are_405_with_allow(method: str) -> None:
    status, headers, _, _ = answer(raw(f"{method} /v1/chat/completions HTTP/1.1", "Host: gw"))
    assert (status, headers["allow"]) == (405, "POST")


def test_expect_100_continue_is_answered_once_the_request_is_admitted() -> None:
    head = raw(
        "POST /v1/chat/completions HTTP/1.1", "Host: gw", "Content-Type: application/json",
        f"Content-Length: {len(BODY)}", "Expect: 100-continue",
    )  # fmt: skip
    gw = conn()
    (interim,) = gw.feed(head)
    assert isinstance(interim, Interim)
    assert interim.data == b"HTTP/1.1 100 Continue\r\n\r\n"
    (forward,) = gw.feed(BODY)
    assert isinstance(forward, Forward)
    # refused before its body: the final status instead of 100 Continue, then a close
    status, _, _, reply = answer(head, max_body=10)
    assert status == 413
    assert reply.close


def test_without_a_token_only_allowed_hosts_are_answered() -> None:
    allowed = frozenset({"localhost", "127.0.0.1", "[::1]"})
    for host, status in (
        ("localhost:8787", 200), ("127.0.0.1", 200), ("[::1]:8787", 200),
        ("app.localhost", 200), ("evil.example:8787", 421), ("LOCALHOST", 200),
        # attack 67 F3: read as loopback, what comes after the last colon unchecked
        ("127.0.0.1:1@evil.example", 400), ("localhost:x.evil.example", 400),
        ("127.0.0.1:+8787", 400), ("[::1]x", 400), ("[::1]:8787:1", 400), ("a b", 400),
    ):  # fmt: skip
        gw = conn(allowed_hosts=allowed)
        (event,) = gw.feed(raw("GET /healthz HTTP/1.1", f"Host: {host}"))
        got = 200 if isinstance(event, LocalRequest) else response(event.data)[0]  # type: ignore[union-attr]
        assert got == status, host
    # HTTP/1.0 may omit Host: then it names no allowed host
    gw = conn(allowed_hosts=allowed)
    (refused,) = gw.feed(raw("GET /healthz HTTP/1.0"))
    assert isinstance(refused, Reply)
    assert response(refused.data)[0] == 421


def test_a_host_that_is_no_host_and_port_is_400_whoever_is_allowed() -> None:
    """RFC 9112 3.2: "a server MUST respond with a 400 ... to any request message that
    contains ... a Host header field with an invalid field value", with a token too."""
    for host in ("gw@evil.example", "gw:80:80", "gw/x", "[::1"):
        (event,) = conn(token="t0k").feed(raw("GET /healthz HTTP/1.1", f"Host: {host}"))
        assert isinstance(event, Reply)
        assert response(event.data)[0] == 400, host
    for host in ("gw", "gw:", "GW.example:8080", "[::1]:80", "[v1.x]", "10.0.0.1", "", "a%41"):
        assert host_valid(host), host


def test_host_names() -> None:
    assert host_name("Example.COM:80") == "example.com"
    assert host_name("[::1]:8080") == "[::1]"
    assert host_name("[broken") == "[broken"
    assert host_name("::1") == "::1"
    assert host_allowed(None, None)
    assert not host_allowed(None, frozenset({"a"}))


def test_the_token_scheme_in_any_case_and_one_header_only() -> None:
    base = ("POST /v1/chat/completions HTTP/1.1", "Host: gw", "Content-Type: application/json")
    length = f"Content-Length: {len(BODY)}"
    for auth, expected in (
        ("Authorization: bearer t0k", Forward), ("Authorization: BEARER  t0k ", Forward),
        ("Authorization: Basic dDBr", Reply), ("Authorization: Bearer wrong", Reply),
    ):  # fmt: skip
        out = conn(token="t0k").feed(raw(*base, length, auth, body=BODY))
        assert isinstance(out[-1], expected), auth
    two = raw(*base, length, "Authorization: Bearer t0k", "Authorization: Bearer t0k", body=BODY)
    status, _, body, _ = answer(two, token="t0k")
    assert status == 400
    assert "one Authorization" in json.loads(body)["error"]["message"]
    assert bearer([]) is None


def test_metrics_need_the_token_unless_public_and_health_never_does() -> None:
    metrics = raw("GET /metrics HTTP/1.1", "Host: gw")
    assert answer(metrics, token="t")[0] == 401
    assert conn(token="t", public_metrics=True).feed(metrics) == [LocalRequest(name="metrics")]
    assert conn(token="t").feed(raw("GET /healthz HTTP/1.1", "Host: gw")) == [
        LocalRequest(name="healthz")
    ]


def test_a_held_body_takes_its_stream_slot_once_whole() -> None:
    """Attack 43 r4: a held body took a stream slot with its head, and sixteen bodies trickled
    a byte at a time held every slot until --body-timeout cut them. A held body is refused at
    its head only while no slot is free, and takes one once it is whole (refused then if the
    others took them meanwhile); a passed-through body takes one with its head."""
    config = GatewayConfig(upstream=UPSTREAM, max_streams=1)
    state = GatewayState(config, new_id=lambda: "id")
    request = raw(
        "POST /v1/chat/completions HTTP/1.1", "Host: gw", "Content-Type: application/json",
        f"Content-Length: {len(BODY)}",
    )  # fmt: skip
    first = GatewayConnection(config, state)
    assert first.feed(request) == []  # its body is awaited: no slot yet
    assert state.streams == 0
    second = GatewayConnection(config, state)
    assert second.feed(request) == []
    (forward,) = second.feed(BODY)  # whole first: it takes the slot
    assert isinstance(forward, Forward)
    assert state.streams == 1
    (busy,) = GatewayConnection(config, state).feed(request)  # none is free: refused at once
    assert isinstance(busy, Reply)
    status, headers, _ = response(busy.data)
    assert (status, headers["retry-after"]) == (503, "1")
    (late,) = first.feed(BODY)  # whole once the other took the slot
    assert isinstance(late, Reply)
    assert response(late.data)[0] == 503
    assert state.metrics.refused["streams"] == 2
    second.finish_request()
    second.finish_request()  # once only
    assert state.streams == 0
    passed = GatewayConfig(upstream=UPSTREAM, max_streams=1, hold_below=10)
    pstate = GatewayState(passed, new_id=lambda: "id")
    (forward,) = GatewayConnection(passed, pstate).feed(request)  # passed through: at once
    assert isinstance(forward, Forward)
    assert pstate.streams == 1
    state.stopping = True
    (stopping,) = GatewayConnection(config, state).feed(request)
    assert response(stopping.data)[0] == 503  # type: ignore[union-attr]


def test_the_body_budget_across_clients() -> None:
    config = GatewayConfig(upstream=UPSTREAM, max_buffered=100, hold_below=1000)
    state = GatewayState(config, new_id=lambda: "id")

    def head(length: int | None) -> bytes:
        framing = "Transfer-Encoding: chunked" if length is None else f"Content-Length: {length}"
        return raw(
            "POST /v1/chat/completions HTTP/1.1", "Host: gw", "Content-Type: application/json",
            framing,
        )  # fmt: skip

    holder = GatewayConnection(config, state)
    assert holder.feed(head(80)) == []
    assert state.buffered == 0  # (its bytes take the budget, not its length: attack 43 F2)
    assert holder.feed(b"x" * 60) == []
    assert state.buffered == 60
    other = GatewayConnection(config, state)
    assert other.feed(head(41)) == []  # admitted: what it takes is what it sends
    (refused,) = other.feed(b"x" * 41)
    assert response(refused.data)[0] == 503  # type: ignore[union-attr]
    assert state.buffered == 60
    chunked = GatewayConnection(config, state)
    out = chunked.feed(head(None) + b"10\r\n" + b"x" * 16 + b"\r\n")
    assert out == []
    assert state.buffered == 76
    (refused,) = chunked.feed(b"20\r\n" + b"x" * 32 + b"\r\n")  # past the budget as it grows
    assert response(refused.data)[0] == 503  # type: ignore[union-attr]
    assert state.buffered == 60
    holder.feed(b"x" * 20)
    assert state.buffered == 0  # given back once the body went upstream
    big = GatewayConnection(
        GatewayConfig(upstream=UPSTREAM, max_body=20), GatewayState(config, new_id=lambda: "i")
    )
    (too_big,) = big.feed(head(None) + b"20\r\n" + b"x" * 32 + b"\r\n")
    assert response(too_big.data)[0] == 413  # type: ignore[union-attr]


def _messages(n: int, content: object = "x") -> bytes:
    doc = {"model": "m", "max_tokens": 5, "stream": True}
    doc["messages"] = [{"role": "user", "content": content}] * n
    return json.dumps(doc).encode()


def _post_messages(body: bytes, *, chunked: bool = False) -> bytes:
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {len(body)}"
    head = raw("POST /v1/messages HTTP/1.1", "Host: gw", "Content-Type: application/json", framing)
    if chunked:
        return head + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    return head + body


def cost_of(body: bytes) -> int:
    return BodyCost().add(body)


def test_parse_cost_counts_what_parsing_builds() -> None:
    assert parse_cost(b"") == 0
    assert parse_cost(b"   ") == 21  # seven a byte of ASCII
    assert parse_cost(b"   ", 4) == 48  # sixteen once a character is past U+FFFF
    assert parse_cost(b'{"a":[1,2]}') == 7 * 11 + 32 + 160 * (1 + 1 + 1)
    assert parse_cost(b'"a\\"b"') == 7 * 6 + 160  # an escaped quote is no string's end
    body = _messages(500, [{"type": "text", "text": "x"}])
    assert sum(map(parse_cost, bytewise(body))) >= parse_cost(body)  # Rule 2: by pieces
    assert parse_cost(body) > 20 * len(body)  # small messages build far more than their bytes
    prose = _messages(1, "a fine day, and then another " * 1000)
    assert parse_cost(prose) < 9 * len(prose)  # its commas count as numbers would


@pytest.mark.parametrize(
    ("text", "width"),
    [("plain", 1), ("caf\u00e9", 1), ("\u0101", 2), ("\u20ac", 2), ("\U0001f600", 4)],
)
def test_a_body_costs_what_its_widest_character_makes_of_its_text(text: str, width: int) -> None:
    """Rule 2: the width is the widest character's, raw or escaped, whatever the pieces, and
    the bytes before it count again at that width."""
    doc = {"model": "m", "max_tokens": 5, "stream": True}
    doc["messages"] = [{"role": "user", "content": "a" * 3000 + text}]
    for raw in (False, True):
        body = json.dumps(doc, ensure_ascii=not raw).encode()
        whole = BodyCost()
        whole.add(body)
        assert whole.width == width, (text, raw)
        assert whole.total == parse_cost(body, width)
        for pieces in (bytewise(body), [body[:3010], body[3010:]]):
            cost = BodyCost()
            assert sum(map(cost.add, pieces)) == cost.total >= whole.total
            assert cost.width == width


@pytest.mark.parametrize("chunked", [False, True])
def test_a_body_to_translate_holds_what_its_parse_builds(chunked: bool) -> None:
    """Attack 22: one 4 MiB body of small messages parses to about 120 MiB; the body budget
    holds that, as the body comes, and gives it all back once the request is answered (not
    when it is parsed: attack 39 F5)."""
    body = _messages(3000)  # about 100 KiB: under the budget's bytes, over it parsed
    cost = cost_of(body)
    assert len(body) < 1_000_000 < cost
    gw = conn(max_buffered=1_000_000)
    (refused,) = gw.feed(_post_messages(body, chunked=chunked))
    assert isinstance(refused, Reply)
    status, _, got = response(refused.data)
    assert status == 413
    assert refused.close
    message = json.loads(got)["error"]["message"]
    assert "1000000 bytes the gateway holds for request bodies" in message
    assert gw.state.buffered == 0
    fits = conn(max_buffered=cost + 2 * 1024)
    out = fits.feed(_post_messages(body, chunked=chunked))
    assert [type(e).__name__ for e in out] == ["Prepare"]  # over PREPARE_IN_PLACE: off the loop
    assert fits.state.buffered >= cost
    assert cost + 2 * 1024 >= fits.state.buffered
    second = GatewayConnection(fits.config, fits.state)  # the budget is held: come back later
    (busy,) = second.feed(_post_messages(body, chunked=chunked))
    assert response(busy.data)[0] == 503  # type: ignore[union-attr]
    fits.prepared(out[0].run())  # type: ignore[union-attr]
    assert fits.state.buffered >= cost  # attack 39 F5: the parsed requests live on
    (still,) = GatewayConnection(fits.config, fits.state).feed(_post_messages(body))
    assert response(still.data)[0] == 503  # type: ignore[union-attr]
    fits.finish_request()  # answered (or cut, or cancelled): the parsed requests go
    assert fits.state.buffered == 0


def test_a_body_longer_than_the_whole_budget_is_413_at_its_head() -> None:
    """A body that can never fit is no busy budget: 413 before a byte of it, not 503."""
    body = _messages(3)
    status, _, got, reply = answer(
        _post_messages(body)[: -len(body)], max_buffered=len(body) - 1, max_body=10**6
    )
    assert (status, reply.close) == (413, True)
    assert json.loads(got)["error"]["type"] == "request_too_large"  # Anthropic's, on its path


def test_a_small_body_that_parses_large_is_prepared_off_the_loop() -> None:
    """The loop parses a body only if what its parse builds is small: 70 KiB of small
    messages goes to a worker, 28 KiB of prose does not."""
    many = _messages(2000)
    assert len(many) < 70_000
    (prepare,) = conn().feed(_post_messages(many))
    assert type(prepare).__name__ == "Prepare"
    prose = _messages(1, "a fine day, and then another " * 1000)
    assert len(prose) > 25_000
    (forward,) = conn().feed(_post_messages(prose))
    assert isinstance(forward, Forward)


@pytest.mark.parametrize("after", [1, 2, 3])
def test_a_preparation_stops_between_its_steps_once_its_client_left(after: int) -> None:
    """A parse cannot be stopped inside, but the next step (the hub's request, the upstream's,
    its body) is not taken for a client that left."""

    class Job:
        reads = 0

        @property
        def wanted(self) -> bool:
            self.reads += 1
            return self.reads < after

    job = Job()
    assert _prepare(_messages(3), "messages", "chat", job=job) is None  # type: ignore[arg-type]
    assert job.reads == after
    done = _prepare(_messages(3), "messages", "chat")
    assert isinstance(done, tuple)


def test_a_preparation_encodes_the_upstream_body_too() -> None:
    """Attack 39 F1: the upstream request's body is made in the worker with the rest, and sent
    as made: encoding 200,000 messages on the loop had stalled every client 0.6 s."""
    done = _prepare(_messages(3), "messages", "chat")
    assert isinstance(done, tuple)
    upstream, encoded = done[1], done[-1]
    assert b"".join(encoded) == b"".join(upstream.body())
    gw = conn()
    (prepare,) = gw.feed(_post_messages(_messages(2000)))  # off the loop
    gw.prepared(prepare.run())  # type: ignore[union-attr]
    (forward,) = [e for e in gw.feed(b"") if isinstance(e, Forward)]  # (then the client's end)
    assert forward.encoded is not None
    assert b"".join(forward.encoded) == b"".join(forward.request.body())
    (forward,) = conn().feed(_post_messages(_messages(3)))  # in place
    assert isinstance(forward, Forward)
    assert forward.encoded is not None
    assert b"".join(forward.encoded) == b"".join(forward.request.body())


def test_a_type_no_check_foresaw_is_a_refusal_not_a_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Attack round 32 (F1): a list where a checker tested membership in a set raised a
    TypeError out of the parse, and the client's connection was reset without an answer."""
    from svir_proto import dialects

    def unforeseen(body: bytes) -> tuple[object, bool]:
        raise TypeError("unhashable type: 'list'")

    spec = dialects.dialect("messages")
    monkeypatch.setitem(dialects._BUILT, "messages", attrs.evolve(spec, read=unforeseen))
    refusal = _prepare(_messages(1), "messages", "chat")
    assert isinstance(refusal, ValueError)
    assert str(refusal) == "the request is not valid: unhashable type: 'list'"
    gw = conn()
    (reply,) = gw.feed(_post_messages(_messages(1)))
    assert isinstance(reply, Reply)
    status, _, body = response(reply.data)
    assert status == 400
    assert json.loads(body)["error"]["message"].endswith("unhashable type: 'list'")


@pytest.mark.parametrize("n", [2, 0, 1.5, 10**30])
@pytest.mark.parametrize("size", ["held", "passed"])
def test_a_relayed_request_for_more_than_one_choice_is_refused(n: object, size: str) -> None:
    """Attack round 32 (F3): the relay's watcher follows one choice, and cut the answer of an
    OpenAI upstream at the first chunk of choice 1; it is refused at once, as a translated
    request is: before it goes upstream when the body is held, and before its end (the
    connection then closes, and the upstream's with it) when the body is passed through."""
    pad = "x" * (70_000 if size == "passed" else 0)
    body = json.dumps(
        {"model": "m", "messages": [{"role": "user", "content": "hi" + pad}], "stream": True,
         "n": n}
    ).encode()  # fmt: skip
    data = raw(
        "POST /v1/chat/completions HTTP/1.1", "Host: gw", "Content-Type: application/json",
        f"Content-Length: {len(body)}", body=body,
    )  # fmt: skip
    gw = conn()
    out = gw.feed(data)
    reply = out[-1]
    assert isinstance(reply, Reply)
    assert not any(type(e).__name__ == "ForwardEnd" for e in out)
    assert [type(e).__name__ for e in out[:1]] == (["Forward"] if size == "passed" else ["Reply"])
    assert reply.close is (size == "passed")
    status, _, got = response(reply.data)
    assert status == 400
    error = json.loads(got)["error"]
    assert error["param"] == "$.n"
    assert error["message"].startswith("n must be 1")
    one = raw(
        "POST /v1/chat/completions HTTP/1.1", "Host: gw", "Content-Type: application/json",
        f"Content-Length: {len(BODY) + 7}", body=BODY[:-1] + b', "n": 1}',
    )  # fmt: skip
    assert type(conn().feed(one)[0]).__name__ == "Forward"  # one choice: relayed


@pytest.mark.parametrize("before", ["members", "depth"])
def test_n_after_what_the_scan_cannot_read_is_refused_from_a_parse(before: str) -> None:
    """Attack round 33 (F3): a thousand members, or a value nested deeper than the scan
    follows, before ``n`` stopped the scan, and the request went up with its two choices. A
    held body the scan cannot read is parsed for its ``n``."""
    doc: dict[str, object] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    if before == "members":
        doc.update({f"x{i}": i for i in range(1100)})
    else:
        doc["x"] = json.loads("[" * 80 + "]" * 80)
    doc.update({"stream": True, "n": 2})
    body = json.dumps(doc).encode()
    assert len(body) < 64 * 1024  # held whole
    data = raw(
        "POST /v1/chat/completions HTTP/1.1", "Host: gw", "Content-Type: application/json",
        f"Content-Length: {len(body)}", body=body,
    )  # fmt: skip
    (reply,) = conn().feed(data)
    assert isinstance(reply, Reply)
    status, _, got = response(reply.data)
    assert status == 400
    assert json.loads(got)["error"]["param"] == "$.n"
    doc["n"] = 1
    one = json.dumps(doc).encode()
    data = raw(
        "POST /v1/chat/completions HTTP/1.1", "Host: gw", "Content-Type: application/json",
        f"Content-Length: {len(one)}", body=one,
    )  # fmt: skip
    assert isinstance(conn().feed(data)[0], Forward)


def test_n_is_refused_of_chat_clients_only() -> None:
    """The review of stop 32: ``n`` is no field of the Messages API, whose relayed requests
    were refused for it too."""
    body = json.dumps(
        {"model": "m", "max_tokens": 8, "stream": True, "n": 2,
         "messages": [{"role": "user", "content": "hi"}]}
    ).encode()  # fmt: skip
    data = raw(
        "POST /v1/messages HTTP/1.1", "Host: gw", "Content-Type: application/json",
        f"Content-Length: {len(body)}", body=body,
    )  # fmt: skip
    (forward,) = conn(upstream_dialect="messages").feed(data)
    assert isinstance(forward, Forward)


@pytest.mark.parametrize("mode", ["whole", "bytewise"])
def test_a_request_id_from_the_header(mode: str) -> None:
    gw = conn()
    data = raw(
        "POST /v1/chat/completions HTTP/1.1", "Host: gw", "Content-Type: application/json",
        f"Content-Length: {len(BODY)}", "X-Request-Id: abc-1", body=BODY,
    )  # fmt: skip
    out: list[Any] = []
    for piece in [data] if mode == "whole" else bytewise(data):
        out += gw.feed(piece)
    (forward,) = out
    assert gw.request_id == "abc-1"
    assert ("X-Request-Id", "abc-1") in forward.request.headers


def test_an_llm_stream_request_that_does_not_stream_names_the_field() -> None:
    doc = {"version": "1.0", "stream": False, "model": "m", "messages": [{"role": "user",
           "content": "hi"}]}  # fmt: skip
    body = json.dumps(doc).encode()
    data = raw(
        "POST /v1/chat/completions HTTP/1.1", "Host: gw",
        "Content-Type: application/llm-request+json", f"Content-Length: {len(body)}", body=body,
    )  # fmt: skip
    status, _, got, _ = answer(data)
    assert status == 400
    assert json.loads(got)["error"]["param"] == "$.stream"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_streams", 0), ("max_body", -1), ("hold_below", -1), ("head_timeout", 0),
        ("progress_timeout", "soon"), ("keepalive", -1), ("body_rate", 0), ("body_rate", "x"),
    ],
)  # fmt: skip
def test_the_config_is_checked(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        GatewayConfig(upstream=UPSTREAM, **{field: value})


def test_a_walk_of_the_request_past_pythons_stack_is_a_400_not_a_silence(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Attack 69 F1: a RecursionError in any walk of a request (there: a Gemini tool schema 250
    levels deep, the tools' fingerprint) closed the client's connection with no answer and
    logged a traceback of a thousand frames; it is the request's nesting, refused."""

    def deep(*args: object, **kwargs: object) -> object:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr("svir_proto.gateway.connection.translate_request", deep)
    refused = _prepare(_messages(1), "messages", "chat")
    assert isinstance(refused, ValueError)
    assert "nests too deep" in str(refused)
    (reply,) = conn().feed(_post_messages(_messages(1)))
    assert isinstance(reply, Reply)
    status, _, body = response(reply.data)
    assert status == 400
    assert "nests too deep" in json.loads(body)["error"]["message"]
