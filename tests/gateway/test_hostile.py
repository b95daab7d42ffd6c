"""The hostile battery (issue 16, "How it is tested"): the real ``svir gateway`` process, on both
backends, in front of a hostile upstream (`hostile_upstream`), attacked as an attacker would:
every case of the issue, RFC 9112's security considerations (section 11: response splitting,
request smuggling, message integrity), the request-smuggling literature (CL.TE, TE.CL, TE.TE
obfuscations), slowloris and its cousins (slow heads, slow bodies, readers that never read,
floods), and an upstream that does everything an upstream can do wrong.

After **each** attack `healthy` checks that the process lives, that the openai package (stream
and not) and an LLM-Stream client each get a whole answer, that no stream slot or byte of the
body budget is left held (``/metrics``), and that the log holds no traceback; then the case's
own expectation is checked (its status, its close, its deadline). Deadlines are small options
(`hostile_gateway.QUICK`: 2 s for a head or a body, 4 s without progress) and every wait is
generous (a 2-core machine shared by several engineers): no test asserts a tight time.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from svir_proto._json import MAX_VALUES
from tests.gateway.battery import (
    BACKENDS,
    anomaly_fixture,
    gateway_fixtures,
    tag,
    upstream_fixture,
)
from tests.gateway.hostile_gateway import (
    Gateway,
    Raw,
    gateway,
    healthy,
    llm_body,
    llm_result,
    nothing_held,
    openai_body,
    openai_result,
    post,
    request,
    responses,
    wait_until,
)
from tests.gateway.hostile_upstream import MODELS, OK_TEXT, HostileUpstream

pytestmark = pytest.mark.slow
LLM = "application/llm-request+json"


# -- the processes (`battery`) ---------------------------------------------------------------

up = upstream_fixture(HostileUpstream)
_gateways, gw = gateway_fixtures(
    lambda up, backend: Gateway(up.base, backend, max_connections="400", max_streams="64"),
    watch=True,
)
_no_smuggling = anomaly_fixture()


def one(
    gw: Gateway,
    data: bytes,
    *,
    seconds: float = 15.0,
    heads: tuple[bool, ...] = (),
    count: int = 1,
    close: bool = False,
) -> Any:
    """Send ``data`` on a new connection; the gateway's responses and whether it closed. Reads
    until ``count`` whole responses came (or, with ``close``, until the gateway closes), or
    ``seconds`` pass."""
    with Raw(gw) as r:
        r.send(data)
        r.read(seconds, until=None if close else enough(count, heads))
        return responses(r.got, heads), r.eof


def enough(count: int, heads: tuple[bool, ...] = ()) -> Any:
    """Whether ``count`` whole responses were read (parsed again only when the bytes read end
    where a response can end, or every 256 KiB)."""
    parsed = [0]

    def check(got: bytearray) -> bool:
        if not (got.endswith((b"\r\n", b"}", b"\n")) or len(got) - parsed[0] > 262144):
            return False
        parsed[0] = len(got)
        found = responses(got, heads)
        final = [r for r in found if r.status >= 200]
        return len(final) >= count and final[count - 1].complete

    return check


def get(path: str, host: str = "127.0.0.1", extra: str = "", method: str = "GET") -> bytes:
    return f"{method} {path} HTTP/1.1\r\nHost: {host}\r\n{extra}\r\n".encode()


def closes_with(gw: Gateway, data: bytes, *statuses: int) -> Any:
    """Send ``data``: the gateway answers one of ``statuses`` and closes the connection."""
    got, closed = one(gw, data, close=True)
    assert got, "no answer at all"
    assert got[0].status in statuses, got
    assert got[0].reason, "a status line without its reason phrase"
    assert closed, "the connection was left open after a refusal"
    return got[0]


# ================================================================================================
# 1. Crashes and wedges found first: one request that kills or wedges the process
# ================================================================================================

BAD_IDS = {
    "crlf": "a\r\nX-Injected: 1",
    "nul": "a\x00b",
    "non-ascii": "caf\u00e9",
    "leading-space": " lead",
    "line-separator": "a\u2028b",
}


@pytest.mark.parametrize("dialect", ["openai", "llm-stream"])
@pytest.mark.parametrize("bad", list(BAD_IDS))
def test_a_request_id_in_the_body_that_cannot_be_a_header_is_answered(
    gw: Gateway, dialect: str, bad: str
) -> None:
    """``metadata.request_id`` goes upstream as ``X-Request-Id`` and back in the response head;
    one that cannot be a header value must be dropped or refused, never break the connection
    (or, on trio, the process), and never be injected as a header (response splitting)."""
    rid = BAD_IDS[bad]
    if dialect == "openai":
        data = post(openai_body(rid))
    else:
        data = post(llm_body(rid), kind=LLM)
    got, _ = one(gw, data, seconds=10)
    assert gw.alive(), "one request with a bad request id killed the gateway"
    assert got, "no answer at all (the connection was wedged or dropped)"
    assert got[0].status in (200, 400), got
    assert all(k.lower() != "x-injected" for k, _ in got[0].headers)
    healthy(gw)


@pytest.mark.parametrize("value", [b"caf\xc3\xa9", b"\xff\xfe", b"a" * 127 + b"\xe9"])
def test_an_x_request_id_header_of_obs_text_bytes_is_answered(gw: Gateway, value: bytes) -> None:
    """RFC 9110 5.5 lets a field value carry obs-text (bytes 0x80-0xFF); h11 takes them. The
    gateway must not then fail to write the id as an ASCII header upstream."""
    body = openai_body()
    data = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
        b"\r\nX-Request-Id: " + value + b"\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    )
    got, _ = one(gw, data, seconds=10)
    assert gw.alive(), "one header killed the gateway"
    assert got, "no answer at all"
    assert got[0].status in (200, 400), got
    healthy(gw)


def test_an_overlong_request_id_in_the_body_is_not_sent_upstream_whole(
    gw: Gateway, up: HostileUpstream
) -> None:
    """An id over 128 characters is not taken (the gateway makes one), in the header or the
    body (a 100 KB header upstream is one the upstream refuses, or holds)."""
    rid = "ok~" + uuid.uuid4().hex + "x" * 100_000
    before = len(up.requests)
    got, _ = one(gw, post(openai_body(rid)), seconds=10)
    assert got, got
    assert got[0].status in (200, 400), got
    if got[0].status == 200:
        sent = up.requests[before:]
        assert sent
        assert all(len(s.rid) <= 1024 for s in sent), [len(s.rid) for s in sent]
        echoed = got[0].header("x-request-id") or ""
        assert len(echoed) <= 1024
    healthy(gw)


@pytest.mark.parametrize("depth", [100_000, 400_000])
def test_a_deeply_nested_llm_stream_request_is_a_400(gw: Gateway, depth: int) -> None:
    """JSON nested deeper than any parser's recursion (in place, and off the loop past
    256 KiB): a 400 naming the problem, not a RecursionError."""
    body = b'{"version":"1.0","stream":true,"model":"m","messages":' + b"[" * depth + b"]" * depth
    body += b"}"
    got, _ = one(gw, post(body, kind=LLM), seconds=20)
    assert got, got
    assert got[0].status == 400, got
    healthy(gw)


def test_a_deeply_nested_openai_request_is_relayed_or_refused(gw: Gateway) -> None:
    depth = 200_000
    body = b'{"model":"m","stream":true,"x":' + b"[" * depth + b"]" * depth + b',"messages":[]}'
    got, _ = one(gw, post(body), seconds=20)
    assert got, got
    assert got[0].status in (200, 400), got
    healthy(gw)


# ================================================================================================
# 2. HTTP/1.1 as RFC 9110 and 9112 say
# ================================================================================================

HEAD_PATHS = [
    "/", "/healthz", "/readyz", "/metrics", "/v1/models", "/v1/models/m",
    "/v1/chat/completions", "/nope", "/v1/nope", "*",
]  # fmt: skip


@pytest.mark.parametrize("backend", BACKENDS)
def test_model_listings_keep_their_upstream_connection(up: HostileUpstream, backend: str) -> None:
    """Attack 45 F5: every ``HEAD /v1/models`` opened an upstream connection, closed at the
    head, and so did every ``GET /v1/models`` (its empty body was never ended upstream, so the
    connection was never reusable). A listing whose Content-Length is within ``drain_limit``
    is read to its end now (a HEAD's dropped), and its connection goes to the pool: ten
    listings, one after another, on one upstream connection (or a few: the readiness probe's
    requests take from the pool too), where there were ten."""
    n = 10
    with gateway(up.base, backend) as g:
        before = len(up.requests)
        for i in range(n):
            method = "HEAD" if i % 2 else "GET"
            got, _ = one(g, get("/v1/models", method=method), heads=(method == "HEAD",))
            assert [r.status for r in got] == [200], got
            assert (got[0].body == MODELS) is (method == "GET"), got
        seens = [s for s in up.requests[before:] if s.rid]  # (not the readiness probe's)
    assert [s.method for s in seens] == ["GET"] * n, seens
    assert len({s.conn_no for s in seens}) <= 3, [s.conn_no for s in seens]  # (a probe may
    # hold the pooled one as a listing needs it)


@pytest.mark.parametrize("path", HEAD_PATHS)
def test_head_is_answered_with_the_head_alone(gw: Gateway, up: HostileUpstream, path: str) -> None:
    """Issue 16: one HEAD killed the process. RFC 9110 9.3.2: the head of a GET, no body. A
    GET pipelined after it proves no body bytes followed the head. What the upstream answers
    is asked of it with GET, and its body is not read on unless its length is short (attack
    44 F2: it was read to be dropped, 200 MB for 100 pipelined HEADs)."""
    before = len(up.requests)
    got, _ = one(gw, get(path, method="HEAD") + get("/healthz"), heads=(True, False), count=2)
    if path.startswith("/v1/models"):
        assert [s.method for s in up.requests[before:]] == ["GET"], up.requests[before:]
        assert got[0].status == 200, got
        assert got[0].header("content-length"), got[0].headers  # the upstream's, as a GET's
    assert gw.alive()
    assert got, got
    assert got[0].reason, got
    if path == "/v1/chat/completions":
        assert got[0].status == 405, got
        assert "POST" in (got[0].header("allow") or ""), got
    if len(got) == 2:  # the connection was kept: then the next answer must be whole and right
        assert got[1].status == 200, got
        assert got[1].body == b'{"status":"ok"}', got
    healthy(gw)


@pytest.mark.parametrize(
    ("name", "framing"),
    [
        ("cl-te-differ", "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n"),
        ("te-cl-differ", "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n"),
        ("cl-te-agree", "Content-Length: {n}\r\nTransfer-Encoding: chunked\r\n"),
        ("cl-te-identity", "Content-Length: {n}\r\nTransfer-Encoding: identity\r\n"),
        ("te-chunked-identity", "Transfer-Encoding: chunked, identity\r\n"),
        ("te-identity", "Transfer-Encoding: identity\r\nContent-Length: {n}\r\n"),
        ("te-gzip-chunked", "Transfer-Encoding: gzip, chunked\r\n"),
        ("te-xchunked", "Transfer-Encoding: xchunked\r\n"),
        ("te-twice", "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"),
        ("te-chunked-then-x", "Transfer-Encoding: chunked\r\nTransfer-Encoding: x\r\n"),
        ("te-space-colon", "Transfer-Encoding : chunked\r\n"),
        ("te-vtab", "Transfer-Encoding:\x0bchunked\r\n"),
        ("te-quoted", 'Transfer-Encoding: "chunked"\r\n'),
        ("te-obs-fold", "Transfer-Encoding:\r\n chunked\r\n"),
        ("cl-twice-differ", "Content-Length: {n}\r\nContent-Length: 3\r\n"),
        ("cl-list-differ", "Content-Length: {n}, 3\r\n"),
        ("cl-plus", "Content-Length: +{n}\r\n"),
        ("cl-negative", "Content-Length: -1\r\n"),
        ("cl-hex", "Content-Length: 0x10\r\n"),
        ("cl-space-inside", "Content-Length: 1 0\r\n"),
        ("cl-overflow", "Content-Length: 99999999999999999999999999999\r\n"),
        ("cl-obs-fold", "Content-Length:\r\n {n}\r\n"),
    ],
)
def test_framing_that_could_smuggle_a_request_is_refused_and_closes(
    gw: Gateway, up: HostileUpstream, name: str, framing: str
) -> None:
    """RFC 9112 6.1, 6.3 and 11.2: a request whose framing is ambiguous is refused with a 4xx
    (or 501 for a coding not understood) and its connection closed, so that nothing the client
    sent after it is read as another request. The canary request after it must never reach
    the upstream."""
    body = openai_body(tag("ok"))
    canary = tag("canary")
    smuggled = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: {canary}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    payload = chunked if "chunked" in framing or "te-" in name else body
    head = (
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Content-Type: application/json\r\n" + framing.format(n=len(payload)) + "\r\n"
    ).encode()
    got, closed = one(gw, head + payload + smuggled, seconds=10, close=True)
    assert got, "no answer"
    assert 400 <= got[0].status < 600, got
    assert got[0].reason
    assert closed, "the connection stayed open after an ambiguous framing"
    time.sleep(0.3)
    assert not up.seen(canary), "a request smuggled after a refused one reached the upstream"
    healthy(gw)


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("bare-cr-in-header", b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\rX: y\r\n\r\n"),
        ("nul-in-header", b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX: a\x00b\r\n\r\n"),
        ("space-in-name", b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX Y: z\r\n\r\n"),
        ("obs-fold", b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX: a\r\n b\r\n\r\n"),
        ("no-colon", b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nnonsense\r\n\r\n"),
        ("leading-whitespace-line", b"GET /healthz HTTP/1.1\r\n Host: 127.0.0.1\r\n\r\n"),
        ("no-host", b"GET /healthz HTTP/1.1\r\n\r\n"),
        ("two-hosts", b"GET /healthz HTTP/1.1\r\nHost: evil.example\r\nHost: 127.0.0.1\r\n\r\n"),
        (
            "two-hosts-allowed-first",
            b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n\r\n",
        ),
        ("host-list", b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1, evil.example\r\n\r\n"),
        ("http-2-preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
        ("http-1.2", b"GET /healthz HTTP/1.2\r\nHost: 127.0.0.1\r\n\r\n"),
        ("http-2.0", b"GET /healthz HTTP/2.0\r\nHost: 127.0.0.1\r\n\r\n"),
        ("http-0.9", b"GET /healthz\r\n\r\n"),
        ("lowercase-version", b"GET /healthz http/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
        ("two-spaces", b"GET  /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
        ("tab-separator", b"GET\t/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
        ("control-in-target", b"GET /heal\x01thz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
        ("space-in-target", b"GET /heal thz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
        ("empty-method", b" /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
        ("tls-client-hello", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 64),
        ("binary", bytes(range(256)) * 4),
    ],
)
def test_a_malformed_head_is_a_4xx_and_a_close(gw: Gateway, name: str, data: bytes) -> None:
    """RFC 9112 2.2, 3, 5 and RFC 9110 5.5: a head that is not HTTP/1.1 is a 400 (505 for a
    version, 421 for a Host not ours) with its reason phrase, and the connection closed. RFC
    9112 3.2: "A server MUST respond with a 400 (Bad Request) status code to any HTTP/1.1
    request message that lacks a Host header field and to any request message that contains
    more than one Host header field line or a Host header field with an invalid field value."
    """
    status = closes_with(gw, data, 400, 421, 505, 501, 431, 414, 404).status
    if name.startswith("two-hosts") or name == "no-host":
        assert status == 400, f"{name}: RFC 9112 3.2 says 400, got {status}"
    healthy(gw)


@pytest.mark.parametrize(
    ("name", "method", "target", "statuses"),
    [
        ("options", "OPTIONS", "/v1/chat/completions", (204, 405)),
        ("options-star", "OPTIONS", "*", (200, 204, 400, 404, 405)),
        ("connect", "CONNECT", "127.0.0.1:443", (400, 404, 405, 501)),
        ("trace", "TRACE", "/v1/chat/completions", (405,)),
        ("delete", "DELETE", "/v1/models", (405,)),
        ("put", "PUT", "/v1/chat/completions", (405,)),
        ("patch", "PATCH", "/healthz", (405,)),
        ("made-up", "BREW", "/v1/chat/completions", (405, 501)),
        ("get-chat", "GET", "/v1/chat/completions", (405,)),
        ("post-models", "POST", "/v1/models", (405,)),
        ("lower-case-get", "get", "/healthz", (400, 405, 501)),
        ("other-v1", "POST", "/v1/embeddings", (404,)),
        ("dot-segments", "GET", "/v1/../healthz", (200, 400, 404)),
        ("double-slash", "POST", "//v1/chat/completions", (400, 404)),
        ("encoded-slash", "POST", "/v1/chat%2Fcompletions", (400, 404)),
        ("query", "GET", "/healthz?x=1", (200,)),
        ("fragment", "GET", "/healthz#x", (200, 400, 404)),
    ],
)
def test_other_methods_and_targets_are_refused_in_shape(
    gw: Gateway, name: str, method: str, target: str, statuses: tuple[int, ...]
) -> None:
    """405 with ``Allow`` for a known path with another method (RFC 9110 15.5.6: "MUST
    generate an Allow header field"), 404 in OpenAI's shape for others."""
    got, _ = one(gw, get(target, method=method), heads=(method == "HEAD",))
    assert got, got
    assert got[0].status in statuses, got
    assert got[0].reason
    if got[0].status == 405:
        assert got[0].header("allow"), got[0].headers
    if got[0].status == 404 and target.startswith("/v1"):
        assert "error" in json.loads(got[0].body)
    healthy(gw)


def test_an_absolute_form_target_is_served(gw: Gateway) -> None:
    """RFC 9112 3.2.2: "a server MUST accept the absolute-form in requests" (and then uses its
    authority, not Host, for the host check)."""
    body = openai_body(tag("ok"))
    data = (
        f"POST http://{gw.host}/v1/chat/completions HTTP/1.1\r\nHost: {gw.host}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    got, _ = one(gw, data)
    assert got, got
    assert got[0].status == 200, got
    assert openai_result(got[0].body).text == OK_TEXT
    healthy(gw)


def test_an_absolute_form_target_for_another_host_is_not_served(gw: Gateway) -> None:
    """DNS rebinding through absolute-form: the authority names another host."""
    data = b"GET http://evil.example/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    got, _ = one(gw, data)
    assert got, got
    assert got[0].status in (400, 404, 421), got
    healthy(gw)


def test_http_1_0_gets_a_whole_answer_delimited_by_the_close(gw: Gateway) -> None:
    body = openai_body(tag("ok"))
    got, closed = one(gw, post(body, version="1.0"), close=True)
    assert got, got
    assert got[0].status == 200, got
    assert closed
    assert "chunked" not in (got[0].header("transfer-encoding") or "")
    assert openai_result(got[0].body).text == OK_TEXT
    healthy(gw)


def test_http_1_0_llm_stream_gets_a_whole_answer(gw: Gateway) -> None:
    got, closed = one(gw, post(llm_body(tag("ok")), kind=LLM, version="1.0"), close=True)
    assert got, got
    assert got[0].status == 200, got
    assert closed
    result = llm_result(got[0].body)
    assert result.complete
    assert result.text == OK_TEXT
    healthy(gw)


def test_http_1_0_keep_alive_is_honoured_or_closed(gw: Gateway) -> None:
    data = b"GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n"
    got, _ = one(gw, data + data, seconds=6, count=2)
    assert got, got
    assert all(r.status == 200 for r in got), got
    healthy(gw)


def test_http_1_0_without_host_is_refused_or_served(gw: Gateway) -> None:
    got, _ = one(gw, b"GET /healthz HTTP/1.0\r\n\r\n")
    assert got, got
    assert got[0].status in (200, 400, 421), got
    healthy(gw)


def test_connection_close_is_honoured(gw: Gateway) -> None:
    got, closed = one(
        gw, get("/healthz", extra="Connection: close\r\n") + get("/healthz"), close=True
    )
    assert [r.status for r in got] == [200]
    assert closed
    healthy(gw)


@pytest.mark.parametrize("dialect", ["openai", "llm-stream"])
@pytest.mark.parametrize("scenario", ["ok", "drip", "stall-head:1.5"])
def test_a_stream_asked_with_connection_close_arrives_whole(
    gw: Gateway, dialect: str, scenario: str
) -> None:
    """``Connection: close`` (curl with ``-H 'Connection: close'``, many scripts, HTTP/1.0
    proxies): the answer must still arrive whole before the close, however slowly the upstream
    streams it."""
    rid = tag(scenario)
    body = openai_body(rid) if dialect == "openai" else llm_body(rid)
    kind = "application/json" if dialect == "openai" else LLM
    got, closed = one(
        gw, post(body, kind=kind, extra="Connection: close\r\n"), seconds=30, close=True
    )
    assert got, got
    assert got[0].status == 200, got
    assert got[0].complete, f"the answer was cut before its end: {got[0].body[-300:]!r}"
    result = openai_result(got[0].body) if dialect == "openai" else llm_result(got[0].body)
    assert result.complete
    assert result.text == OK_TEXT
    assert closed
    healthy(gw)


def test_every_status_line_has_its_reason_phrase(gw: Gateway) -> None:
    cases = [
        get("/healthz"), get("/nope"), get("/v1/chat/completions"),
        post(b"{}", kind="text/plain"), get("/healthz", host="evil.example"),
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 99999999999\r\n"
        b"Content-Type: application/json\r\n\r\n",
        post(b"{", kind=LLM),
    ]  # fmt: skip
    for data in cases:
        got, _ = one(gw, data, seconds=10)
        assert got, (data, got)
        assert got[0].reason, (data, got)
        assert got[0].reason != "Unknown", (data, got)
    healthy(gw)


# -- pipelining --------------------------------------------------------------------------


def test_pipelined_requests_are_answered_in_order(gw: Gateway) -> None:
    a, b = tag("ok"), tag("replay:openai:wire-3.3-tool-calls")
    data = (
        post(openai_body(a))
        + get("/healthz")
        + post(llm_body(b), kind=LLM)
        + get("/v1/models")
        + post(openai_body(stream=False))
    )
    with Raw(gw) as r:
        r.send(data)
        r.read(20, until=lambda got: len(responses(got)) >= 5 and responses(got)[-1].complete)
        got = responses(r.got)
    assert [x.status for x in got] == [200] * 5, got
    assert openai_result(got[0].body).text == OK_TEXT
    assert got[1].body == b'{"status":"ok"}'
    assert llm_result(got[2].body).complete
    assert json.loads(got[3].body)["data"]
    assert json.loads(got[4].body)["choices"][0]["message"]["content"] == OK_TEXT
    healthy(gw)


def test_a_hundred_pipelined_health_checks(gw: Gateway) -> None:
    with Raw(gw) as r:
        r.send(get("/healthz") * 100)
        r.read(20, until=lambda got: got.count(b'{"status":"ok"}') >= 100)
    assert r.got.count(b'{"status":"ok"}') == 100
    healthy(gw)


def test_a_pipelined_head_while_the_answer_streams_waits_its_turn(gw: Gateway) -> None:
    with Raw(gw) as r:
        r.send(post(openai_body(tag("stall-head:1"))))
        time.sleep(0.2)
        r.send(get("/healthz"))
        r.read(20, until=lambda got: b'{"status":"ok"}' in got)
        got = responses(r.got)
    assert [x.status for x in got] == [200, 200], got
    assert openai_result(got[0].body).text == OK_TEXT
    healthy(gw)


def test_a_client_that_floods_while_its_answer_streams_is_cut_off(
    gw: Gateway, up: HostileUpstream
) -> None:
    """Issue 16: whatever a client sent while its answer streamed was buffered without bound.
    At most ``max_head_size`` may wait; more closes the connection, and its upstream request
    is cancelled."""
    rid = tag("stall-forever")
    before = gw.rss_mb()
    with Raw(gw) as r:
        r.send(post(openai_body(rid)))
        seen = up.find(rid)
        junk = b"x" * 65536
        sent = 0
        while sent < 200 * 1024 * 1024 and r.send(junk):
            sent += len(junk)
        assert sent < 200 * 1024 * 1024, "the gateway read 200 MiB of a client's junk"
        assert seen.gone.wait(30), "the flooding client's upstream request was not cancelled"
    assert gw.rss_mb() - before < 64, (before, gw.rss_mb())
    healthy(gw)


# -- Expect: 100-continue ----------------------------------------------------------------


@pytest.mark.parametrize("dialect", ["openai", "llm-stream"])
def test_expect_100_continue_is_answered_before_the_body(gw: Gateway, dialect: str) -> None:
    """Issue 16 and RFC 9110 10.1.1: curl sends ``Expect: 100-continue`` for bodies over 1 MB
    and waits; the gateway answers ``100 Continue`` once it admits the request."""
    body = openai_body(tag("ok")) if dialect == "openai" else llm_body(tag("ok"))
    kind = "application/json" if dialect == "openai" else LLM
    head = post(b"", kind=kind, extra="Expect: 100-continue\r\n").replace(
        b"Content-Length: 0", b"Content-Length: %d" % len(body)
    )
    with Raw(gw) as r:
        r.send(head)
        r.read(10, until=lambda got: b"\r\n\r\n" in got)
        assert r.got.startswith(b"HTTP/1.1 100 Continue\r\n"), r.got
        r.send(body)
        r.read(15, until=lambda got: len(responses(got)) > 1 and responses(got)[-1].complete)
        got = responses(r.got)
    assert [x.status for x in got] == [100, 200], got
    healthy(gw)


@pytest.mark.parametrize(
    ("name", "head", "status"),
    [
        (
            "too-large",
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
            b"application/json\r\nContent-Length: 999999999999\r\nExpect: 100-continue\r\n\r\n",
            413,
        ),
        (
            "bad-media",
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
            b"text/plain\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n",
            415,
        ),
        (
            "not-found",
            b"POST /nope HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n"
            b"Expect: 100-continue\r\n\r\n",
            404,
        ),
        (
            "bad-host",
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: evil.example\r\nContent-Type: "
            b"application/json\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n",
            421,
        ),
    ],
)
def test_expect_100_continue_on_a_refused_request_gets_the_refusal_instead(
    gw: Gateway, name: str, head: bytes, status: int
) -> None:
    with Raw(gw) as r:
        r.send(head)
        r.read(10, until=lambda got: b"\r\n\r\n" in got)
        got = responses(r.got)
    assert got, got
    assert got[0].status == status, got
    healthy(gw)


def test_an_unknown_expectation_does_not_wedge(gw: Gateway) -> None:
    got, _ = one(gw, post(openai_body(tag("ok")), extra="Expect: 200-ok\r\n"), seconds=10)
    assert got, got
    assert got[0].status in (200, 417), got
    healthy(gw)


# ================================================================================================
# 3. Chunked request bodies (RFC 9112 7.1)
# ================================================================================================


def chunked_post(body_chunks: bytes, *, kind: str = "application/json", extra: str = "") -> bytes:
    return (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {kind}\r\n"
        f"Transfer-Encoding: chunked\r\n{extra}\r\n"
    ).encode() + body_chunks


@pytest.mark.parametrize("dialect", ["openai", "llm-stream"])
@pytest.mark.parametrize(
    "shape", ["plain", "extensions", "trailers", "one-byte-chunks", "upper-hex", "leading-zeros"]
)
def test_a_valid_chunked_body_is_served(gw: Gateway, dialect: str, shape: str) -> None:
    body = openai_body(tag("ok")) if dialect == "openai" else llm_body(tag("ok"))
    kind = "application/json" if dialect == "openai" else LLM
    if shape == "one-byte-chunks":
        chunks = b"".join(b"1\r\n%s\r\n" % body[i : i + 1] for i in range(len(body)))
    elif shape == "extensions":
        chunks = b'%x;name=value;q="a b"\r\n%s\r\n' % (len(body), body)
    elif shape == "upper-hex":
        chunks = b"%X\r\n%s\r\n" % (len(body), body)
    elif shape == "leading-zeros":
        chunks = b"000%x\r\n%s\r\n" % (len(body), body)
    else:
        chunks = b"%x\r\n%s\r\n" % (len(body), body)
    end = b"0\r\nX-Trailer: 1\r\nX-Other: 2\r\n\r\n" if shape == "trailers" else b"0\r\n\r\n"
    got, _ = one(gw, chunked_post(chunks + end, kind=kind))
    assert got, got
    assert got[0].status == 200, got
    if dialect == "openai":
        assert openai_result(got[0].body).text == OK_TEXT
    else:
        assert llm_result(got[0].body).text == OK_TEXT
    healthy(gw)


@pytest.mark.parametrize(
    ("name", "chunks"),
    [
        ("size-overflow", b"ffffffffffffffffffffffff\r\n"),
        ("size-not-hex", b"zz\r\nhello\r\n0\r\n\r\n"),
        ("size-negative", b"-5\r\nhello\r\n0\r\n\r\n"),
        ("size-0x", b"0x5\r\nhello\r\n0\r\n\r\n"),
        ("size-space", b"5 \r\nhello\r\n0\r\n\r\n"),
        ("no-crlf-after-data", b"5\r\nhelloXX0\r\n\r\n"),
        ("data-longer", b"3\r\nhello\r\n0\r\n\r\n"),
        ("bare-lf", b"5\nhello\n0\n\n"),
        ("huge-extension", b"5;" + b"e" * 200_000 + b"\r\nhello\r\n0\r\n\r\n"),
        ("huge-trailer", b"0\r\nX: " + b"t" * 200_000 + b"\r\n\r\n"),
        ("many-trailers", b"0\r\n" + b"X: t\r\n" * 20_000 + b"\r\n"),
    ],
)
def test_bad_chunk_framing_is_a_4xx_and_a_close(gw: Gateway, name: str, chunks: bytes) -> None:
    """RFC 9112 7.1: a chunk size that is not 1*HEXDIG, data longer than its size, an
    extension or trailer past every bound: a 4xx (431 or 413 for sizes) and a close; the
    process lives."""
    got, closed = one(gw, chunked_post(chunks), seconds=10, close=True)
    if got:  # a client that sent a broken body may also just be closed on
        assert 400 <= got[0].status < 500, got
    assert closed or got, "neither answered nor closed"
    healthy(gw)


def test_a_chunked_body_past_max_body_is_a_413(up: HostileUpstream) -> None:
    for backend in BACKENDS:
        with gateway(up.base, backend, max_body="100000") as g:
            piece = b"a" * 50_000
            chunks = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for _ in range(4))
            got, closed = one(g, chunked_post(chunks + b"0\r\n\r\n"), seconds=10, close=True)
            assert got, got
            assert got[0].status == 413, got
            assert closed
            healthy(g)


# ================================================================================================
# 4. Who may use it (issue 16, item 5)
# ================================================================================================


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("evil.example", False),
        ("evil.example:{port}", False),
        ("127.0.0.1.evil.example", False),
        ("localhost.evil.example", False),
        ("127.0.0.2", False),
        ("0.0.0.0", False),
        ("localhost@evil.example", False),
        ("evil.example#@127.0.0.1", False),
        ("[::ffff:7f00:1]", False),
        ("2130706433", False),
        ("127.1", False),
        ("localhost", True),
        ("LOCALHOST:{port}", True),
        ("127.0.0.1:{port}", True),
        ("[::1]:{port}", True),
        ("a.localhost", True),
    ],
)
def test_without_a_token_only_our_hosts_are_answered(gw: Gateway, host: str, allowed: bool) -> None:
    """DNS rebinding: a web page reaches a loopback gateway under a name of its own. Only the
    address listened on and loopback names are answered; the rest is 421."""
    host = host.format(port=gw.port)
    got, _ = one(gw, post(openai_body(tag("ok")), host=host), seconds=10)
    assert got, "no answer"
    if allowed:
        assert got[0].status == 200, (host, got)
    else:
        assert got[0].status in (400, 421), (host, got)
    healthy(gw)


TOKEN = "s3cret-token-for-the-hostile-battery"


@pytest.fixture(params=BACKENDS)
def tgw(request: pytest.FixtureRequest, up: HostileUpstream) -> Iterator[Gateway]:
    """A gateway with a token (from the environment, as a user should give it)."""
    with gateway(up.base, request.param, env={"SVIR_GATEWAY_TOKEN": TOKEN}) as g:
        yield g


def test_the_token_rules(tgw: Gateway) -> None:
    body = openai_body(tag("ok"))

    def status(auth: list[str], path: str = "/v1/chat/completions", data: bytes = body) -> int:
        lines = "".join(f"Authorization: {a}\r\n" for a in auth)
        if path == "/v1/chat/completions":
            raw = post(data, extra=lines)
        else:
            raw = get(path, extra=lines)
        got, _ = one(tgw, raw, seconds=10)
        assert got, (auth, path)
        if got[0].status == 401:
            assert "bearer" in (got[0].header("www-authenticate") or "").lower()
        return got[0].status

    assert status([f"Bearer {TOKEN}"]) == 200
    assert status([f"bearer {TOKEN}"]) == 200
    assert status([f"BEARER {TOKEN}"]) == 200
    assert status([]) == 401
    assert status(["Bearer wrong"]) == 401
    assert status([f"Basic {TOKEN}"]) == 401
    assert status([f"Bearer {TOKEN}x"]) == 401
    assert status([f"Bearer {TOKEN[:-1]}"]) == 401
    assert status(["Bearer"]) == 401
    assert status([f"Bearer {TOKEN}", f"Bearer {TOKEN}"]) == 400
    assert status(["Bearer wrong", f"Bearer {TOKEN}"]) == 400
    assert status([f"Bearer {TOKEN}, Bearer x"]) in (400, 401)
    assert status([], "/metrics") == 401
    assert status([f"Bearer {TOKEN}"], "/metrics") == 200
    assert status([], "/healthz") == 200
    assert status([], "/v1/models") == 401
    healthy(tgw, TOKEN)


def test_with_a_token_any_host_is_answered(tgw: Gateway) -> None:
    got, _ = one(
        tgw,
        post(openai_body(tag("ok")), host="gw.example", extra=f"Authorization: Bearer {TOKEN}\r\n"),
    )
    assert got, got
    assert got[0].status == 200, got
    healthy(tgw, TOKEN)


def test_a_token_from_a_file(up: HostileUpstream, tmp_path: Any) -> None:
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    for backend in BACKENDS:
        with gateway(up.base, backend, token_file=str(path)) as g:
            got, _ = one(g, get("/v1/models"))
            assert got, got
            assert got[0].status == 401, got
            healthy(g, TOKEN)


# ================================================================================================
# 5. Slow clients: slowloris and its cousins (issue 16 item 3)
# ================================================================================================


def test_a_head_a_byte_at_a_time_is_served(gw: Gateway) -> None:
    data = post(openai_body(tag("ok")))
    with Raw(gw) as r:
        for i in range(len(data)):
            r.send(data[i : i + 1])
            if i % 64 == 0:
                time.sleep(0.001)
        r.read(15, until=lambda got: bool(responses(got)) and responses(got)[0].complete)
        got = responses(r.got)
    assert got, got
    assert got[0].status == 200, got
    healthy(gw)


def test_a_head_that_takes_longer_than_head_timeout_is_a_408(gw: Gateway) -> None:
    """Slowloris: a byte of a head every half second holds a connection for ever unless the
    whole head has a deadline (``--head-timeout`` 2 s here)."""
    data = post(openai_body(tag("ok")))
    start = time.monotonic()
    with Raw(gw) as r:
        for i in range(len(data)):
            if not r.send(data[i : i + 1]):
                break
            r.read(0.5)
            if r.eof or time.monotonic() - start > 60:
                break
        r.read(5)
        got = responses(r.got)
    assert r.eof, "a head trickled a byte every 0.5 s was never cut off"
    assert time.monotonic() - start < 60
    assert got, got
    assert got[0].status == 408, got
    healthy(gw)


def test_a_connection_that_sends_nothing_is_closed(gw: Gateway) -> None:
    with Raw(gw) as r:
        assert r.closed_by_peer(30), "a silent connection was kept for 30 s"
    healthy(gw)


def test_a_connection_that_sends_only_blank_lines_is_closed(gw: Gateway) -> None:
    """RFC 9112 2.2 lets a server ignore CRLFs before a request line: not for ever."""
    with Raw(gw) as r:
        for _ in range(60):
            if not r.send(b"\r\n") or r.eof:
                break
            r.read(0.5)
        assert r.eof, "blank lines every 0.5 s kept a connection for 30 s"
    healthy(gw)


def test_a_kept_alive_connection_left_idle_is_closed(gw: Gateway) -> None:
    with Raw(gw) as r:
        r.send(get("/healthz"))
        assert r.closed_by_peer(30), "an idle kept-alive connection was kept for 30 s"
        assert responses(r.got)[0].status == 200
    healthy(gw)


@pytest.mark.parametrize("dialect", ["openai", "llm-stream"])
def test_a_body_that_stops_coming_is_a_408_and_frees_its_slot(gw: Gateway, dialect: str) -> None:
    body = openai_body(tag("ok")) if dialect == "openai" else llm_body(tag("ok"))
    kind = "application/json" if dialect == "openai" else LLM
    with Raw(gw) as r:
        r.send(post(body, kind=kind)[: -len(body) // 2])
        assert r.closed_by_peer(30), "a body that stopped coming held its connection"
        got = responses(r.got)
    assert got, got
    assert got[0].status == 408, got
    healthy(gw)


def test_a_large_body_that_stops_coming_upstream_frees_its_slot(
    gw: Gateway, up: HostileUpstream
) -> None:
    """A body over ``hold_below`` streams upstream as it comes; when it stops, the upstream
    request must be cancelled too."""
    rid = tag("ok")
    body = openai_body(rid, padding="p" * 300_000)
    with Raw(gw) as r:  # the id in the head: the upstream never reads the body's
        r.send(post(body, extra=f"X-Request-Id: {rid}\r\n")[:-1000])
        assert r.closed_by_peer(30)
    seen = up.find(rid)
    assert seen.gone.wait(20), "the upstream request of a stalled body was not cancelled"
    healthy(gw)


def test_a_body_a_byte_a_second_within_body_timeout_is_served(gw: Gateway) -> None:
    body = openai_body(tag("ok"))
    data = post(body)
    with Raw(gw) as r:
        r.send(data[:-5])
        for i in range(5, 0, -1):
            time.sleep(0.5)
            r.send(data[-i : len(data) - i + 1])
        r.read(15, until=lambda got: bool(responses(got)) and responses(got)[0].complete)
        got = responses(r.got)
    assert got, got
    assert got[0].status == 200, got
    healthy(gw)


def test_three_hundred_idle_connections_do_not_stop_the_others(gw: Gateway) -> None:
    """Idle connections under ``--max-connections``: the others are served meanwhile, and every
    idle one is closed by its deadline."""
    socks = []
    try:
        for _ in range(300):
            s = socket.create_connection(("127.0.0.1", gw.port), timeout=10)
            socks.append(s)
        healthy(gw)
        for s in socks:
            s.settimeout(30)
        for s in socks:
            with contextlib.suppress(ConnectionResetError):
                assert s.recv(1) in (b"", b"H"), "an idle connection got something else"
    finally:
        for s in socks:
            s.close()
    assert wait_until(lambda: gw.metrics()["svir_gateway_connections"] <= 1, 20), gw.metrics()
    healthy(gw)


@pytest.mark.parametrize("backend", BACKENDS)
def test_past_max_connections_new_ones_are_refused_at_once(
    up: HostileUpstream, backend: str
) -> None:
    with gateway(up.base, backend, max_connections="20", head_timeout="30") as g:
        socks = [socket.create_connection(("127.0.0.1", g.port), timeout=10) for _ in range(20)]
        try:
            time.sleep(0.5)
            got, closed = one(g, get("/healthz"), seconds=10, close=True)
            assert got, got
            assert got[0].status == 503, got
            assert closed
        finally:
            for s in socks:
                s.close()
        assert wait_until(lambda: one(g, get("/healthz"))[0][0].status == 200, 20)
        healthy(g)


@pytest.mark.parametrize("backend", BACKENDS)
def test_running_out_of_descriptors_is_survived(up: HostileUpstream, backend: str) -> None:
    """Issue 16: about 1,000 idle connections at systemd's limit ended ``serve()`` on asyncio;
    on trio the process lived on with no listener. With ``ulimit -n`` 96, 300 connections:
    accept fails with EMFILE for a while; once they close the gateway serves again."""
    with gateway(up.base, backend, nofile=96, head_timeout="30", idle_timeout="30") as g:
        socks = []
        try:
            for _ in range(300):
                try:
                    socks.append(socket.create_connection(("127.0.0.1", g.port), timeout=5))
                except OSError:
                    break
            time.sleep(1.5)
            assert g.alive()
        finally:
            for s in socks:
                s.close()
        assert g.alive(), "running out of descriptors killed the gateway"
        ok = wait_until(lambda: _health_status(g) == 200, 30, every=0.5)
        assert ok, "the gateway never served again after running out of descriptors"
        healthy(g)


@pytest.mark.parametrize("backend", BACKENDS)
def test_running_out_of_descriptors_mid_stream_is_survived(
    up: HostileUpstream, backend: str
) -> None:
    """Descriptors run out while streams need upstream connections: the streams that cannot
    reach the upstream fail in their dialect, with 503 and ``Retry-After`` (attack 71 F2: a
    502 that blamed the upstream for what the gateway lacked); none wedges; afterwards all is
    well."""
    with gateway(up.base, backend, nofile=80, head_timeout="30") as g:
        clients = []
        try:
            for _ in range(60):
                try:
                    r = Raw(g)
                except OSError:
                    break
                r.send(post(openai_body(tag("stall-head:2"))))
                clients.append(r)
            for r in clients:
                r.read(20, until=lambda got: b"0\r\n\r\n" in got)
        finally:
            for r in clients:
                r.close()
        answers = [r.got for r in clients]
        assert not [a for a in answers if b"cannot reach its upstream" in a]
        short = [a for a in answers if b"short of its own resources" in a]
        assert short  # (80 descriptors: 60 clients and their upstreams cannot all have one)
        assert all(a.startswith(b"HTTP/1.1 503 ") and b"\r\nRetry-After: 1\r\n" in a for a in short)
        assert g.alive()
        assert wait_until(lambda: _health_status(g) == 200, 30, every=0.5)
        healthy(g)


def _health_status(g: Gateway) -> int:
    try:
        got, _ = one(g, get("/healthz"), seconds=5)
    except OSError:
        return 0
    return got[0].status if got else 0


# ================================================================================================
# 6. Clients that do not read, reset, or leave
# ================================================================================================


@pytest.mark.parametrize("dialect", ["openai", "llm-stream"])
def test_a_client_that_never_reads_loses_its_stream_and_the_upstream_is_cancelled(
    gw: Gateway, up: HostileUpstream, dialect: str
) -> None:
    """Issue 16: no deadline on writing to a client that never reads. ``--send-timeout`` 3 s:
    the stream ends, its upstream request is cancelled, its slot freed."""
    rid = tag("flood:2000000")
    body = openai_body(rid) if dialect == "openai" else llm_body(rid)
    kind = "application/json" if dialect == "openai" else LLM
    before = gw.rss_mb()
    with Raw(gw, rcvbuf=4096) as r:
        r.send(post(body, kind=kind))
        seen = up.find(rid)
        assert seen.gone.wait(60), "a client that never reads kept its upstream request"
        assert not seen.finished.is_set() or seen.bytes_sent < 200_000_000
    assert gw.rss_mb() - before < 64, (before, gw.rss_mb())
    healthy(gw)


@pytest.mark.parametrize("scenario", ["stall-forever", "stall-head:3", "flood:1000000", "ok"])
def test_a_client_that_resets_right_after_its_request_cancels_it(
    gw: Gateway, up: HostileUpstream, scenario: str
) -> None:
    rid = tag(scenario)
    r = Raw(gw)
    r.send(post(openai_body(rid)))
    if scenario != "ok":
        up.find(rid)
    r.reset()
    if scenario != "ok":
        assert up.find(rid).gone.wait(20), "the upstream request outlived its client"
    healthy(gw)


@pytest.mark.parametrize(
    "data",
    [get("/nope"), get("/healthz"), get("/v1/chat/completions"), b"garbage\r\n\r\n",
     post(b"{", kind=LLM), get("/healthz", host="evil.example")],
)  # fmt: skip
def test_a_client_that_resets_right_after_a_refused_request(gw: Gateway, data: bytes) -> None:
    """Issue 16: a client resetting right after a request the gateway refuses killed it."""
    for _ in range(20):
        r = Raw(gw)
        r.send(data)
        r.reset()
    healthy(gw)


def test_a_client_that_half_closes_after_its_request(gw: Gateway, up: HostileUpstream) -> None:
    """A client that shuts its sending side (as ``nc -N`` does): the gateway either answers it
    whole or cancels; it never wedges and never leaks the slot."""
    rid = tag("stall-head:1")
    with Raw(gw) as r:
        r.send(post(openai_body(rid)))
        r.sock.shutdown(socket.SHUT_WR)
        r.read(15)
        got = responses(r.got)
    if got:
        assert got[0].status == 200
    healthy(gw)


def test_a_client_that_resets_mid_stream_cancels_the_upstream(
    gw: Gateway, up: HostileUpstream
) -> None:
    rid = tag("flood:1000000")
    r = Raw(gw)
    r.send(post(llm_body(rid), kind=LLM))
    r.read(5, until=lambda got: len(got) > 100_000)
    r.reset()
    assert up.find(rid).gone.wait(20)
    healthy(gw)


def test_a_slow_reader_gets_the_whole_answer(gw: Gateway) -> None:
    """Backpressure is not a stall: a client reading 4 KiB every 20 ms of a 2 MB answer makes
    progress, so it keeps its stream."""
    rid = tag("flood:10000")
    with Raw(gw, rcvbuf=8192) as r:
        r.send(post(openai_body(rid)))
        deadline = time.monotonic() + 120
        while not r.eof and time.monotonic() < deadline:
            try:
                r.sock.settimeout(10)
                data = r.sock.recv(4096)
            except OSError:
                break
            if not data:
                r.eof = True
            r.add(data)
            if r.tail(5) == b"0\r\n\r\n":
                break
            time.sleep(0.02)
        got = responses(r.got)
    assert got, got[:1]
    assert got[0].status == 200, got[:1]
    assert got[0].complete, got[:1]
    assert openai_result(got[0].body).complete
    healthy(gw)


def test_many_clients_that_leave_mid_stream(gw: Gateway, up: HostileUpstream) -> None:
    rids = [
        tag(random.choice(["stall-mid", "flood:100000", "keepalive-only:0.3"])) for _ in range(40)
    ]
    clients = []
    for rid in rids:
        r = Raw(gw)
        r.send(post(openai_body(rid) if len(clients) % 2 else llm_body(rid),
                    kind="application/json" if len(clients) % 2 else LLM))  # fmt: skip
        clients.append(r)
    for r in clients:
        r.read(0.2)
    for i, r in enumerate(clients):
        r.reset() if i % 2 else r.close()
    for rid in rids:
        assert up.find(rid).gone.wait(30), rid
    healthy(gw)


# ================================================================================================
# 7. Bounds: bodies, budgets, streams
# ================================================================================================


@pytest.mark.parametrize("dialect", ["openai", "llm-stream"])
def test_a_body_past_max_body_is_a_413_before_it_is_read(up: HostileUpstream, dialect: str) -> None:
    kind = "application/json" if dialect == "openai" else LLM
    for backend in BACKENDS:
        with gateway(up.base, backend, max_body="100000") as g, Raw(g) as r:
            r.send(
                f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {kind}"
                f"\r\nContent-Length: 100001\r\n\r\n".encode()
            )
            r.read(10, until=lambda got: b"\r\n\r\n" in got)
            got = responses(r.got)
            assert got, got
            assert got[0].status == 413, got
            assert r.closed_by_peer(10)
            healthy(g)


def test_the_body_budget_is_shared_and_given_back(up: HostileUpstream) -> None:
    """Issue 16: bytes of request bodies held at once across all clients have a budget
    (``--max-buffered``): a second held body past it is 503 with Retry-After, and what a
    client held is given back when it leaves. (A body to translate holds what its parse
    builds: about seven times its bytes for these, one long string each.)"""
    for backend in BACKENDS:
        with gateway(up.base, backend, max_buffered="1000000", body_timeout="30") as g:
            body = llm_body(tag("ok"), padding="p" * 120_000)
            first = Raw(g)
            try:
                data = post(body, kind=LLM)
                first.send(data[: len(data) // 2])
                time.sleep(0.5)
                got, _ = one(g, post(llm_body(tag("ok"), padding="q" * 120_000), kind=LLM))
                assert got, got
                assert got[0].status == 503, got
                assert got[0].header("retry-after"), got
                m = g.metrics()
                assert m["svir_gateway_buffered_bytes"] >= 300_000, m
            finally:
                first.reset()
            nothing_held(g)
            got, _ = one(g, post(llm_body(tag("ok"), padding="r" * 120_000), kind=LLM))
            assert got, got
            assert got[0].status == 200, got
            healthy(g)


def _given_back(g: Gateway) -> None:
    """Once the clients left: every slot and byte of the budgets they held came back."""
    nothing_held(g)
    assert wait_until(lambda: g.metrics()["svir_gateway_partial_bytes"] == 0, 10)
    healthy(g)


def test_upstream_events_that_never_end_hold_the_budget_not_more(up: HostileUpstream) -> None:
    """Attack 36, F2: an upstream event that never ends was held twice a relayed stream (16
    MiB), by no option: 30 such streams took 490 MB. Now it holds ``--max-partial``: eight
    streams that each begin a 3 MiB event and go quiet hold at most that, the rest end at once
    with an error (not at ``--timeout``), and all of it is given back when they leave."""
    for backend in BACKENDS:
        with gateway(up.base, backend, max_partial=str(8 * 1024 * 1024)) as g:
            before = g.rss_mb()
            clients = [Raw(g) for _ in range(8)]
            try:
                for r in clients:
                    r.send(post(openai_body(tag("partial-event:3072"))))
                refused = 0
                for r in clients:  # (the one or two that fit, 6 MiB each, end when they stall)
                    r.read(30, until=lambda got: b"data: [DONE]" in got)
                    assert b"data: [DONE]" in r.got, r.tail(400)
                    refused += b"no room now for the rest of the upstream" in r.got
                    assert b"a" * 100 not in r.got  # nothing of the event that never ended
                    assert g.metrics()["svir_gateway_partial_bytes"] <= 8 * 1024 * 1024
                assert refused >= 6, refused
                assert g.rss_mb() - before < 64
                assert _health_status(g) == 200
            finally:
                for r in clients:
                    r.close()
            _given_back(g)


def test_answers_waiting_for_clients_that_do_not_read_hold_the_budget_not_more(
    up: HostileUpstream,
) -> None:
    """Attack 43 F4: what the gateway wrote to clients that read nothing waited in their
    sockets outside every bound, about ``--max-streams`` x ``--max-event`` in all. It is held
    against ``--max-partial`` now. Twelve Responses clients that read nothing each ask for 1
    MiB of text (64 KiB events, none held long, whose last events carry the whole text, some
    4 MiB written at once): past a 4 MiB budget a client loses its connection at once
    (counted ``unread``; not kept for ``--send-timeout``), what is held stays within the
    budget, a client that reads gets its answer meanwhile, and all of it is given back when
    they leave. (Before, the twelve held some 3 MiB each for the minute of their send
    timeout.)"""
    budget = 4 * 1024 * 1024
    unread = 'svir_gateway_refused_total{reason="unread"}'
    for backend in BACKENDS:
        with gateway(
            up.base, backend, max_partial=str(budget), send_timeout="60", timeout="60"
        ) as g:
            clients = [Raw(g, rcvbuf=4096) for _ in range(12)]
            try:
                for r in clients:
                    body = json.dumps(
                        {"model": tag("big-text:1"), "input": "hi", "stream": True}
                    ).encode()
                    r.send(post(body).replace(b"/v1/chat/completions", b"/v1/responses", 1))
                assert wait_until(lambda: g.metrics().get(unread, 0) >= 9, 30), g.metrics()
                for _ in range(8):
                    m = g.metrics()
                    assert m["svir_gateway_partial_bytes"] <= budget, m
                    assert m["svir_gateway_active_streams"] <= 3, m
                    time.sleep(0.25)
                got, _ = one(g, post(openai_body(tag("ok"))))
                assert got, "the reading client got nothing"
                assert got[0].status == 200, got
                assert got[0].body.rstrip().endswith(b"data: [DONE]"), got[0].body[-200:]
            finally:
                for r in clients:
                    r.close()
            _given_back(g)


def test_a_client_that_reads_is_not_aborted_for_those_that_do_not(up: HostileUpstream) -> None:
    """Review 44 M2: with the budget full of what clients that read nothing let wait in their
    sockets, a client that read at line rate was aborted as soon as an answer of some
    megabytes was written to it at once. The client that has held its bytes longest (a second
    at least) loses its connection instead, and the reader gets its answer whole. (Each asks
    for a whole Responses answer of 16 MiB of text, written at once: the budget has room for
    one of them, whatever the kernel takes of it.)"""
    mib = 1024 * 1024
    unread = 'svir_gateway_refused_total{reason="unread"}'
    body = json.dumps({"model": tag("big-text:16"), "input": "hi", "stream": False}).encode()
    request = post(body).replace(b"/v1/chat/completions", b"/v1/responses", 1)
    for backend in BACKENDS:
        with gateway(
            up.base,
            backend,
            max_partial=str(20 * mib),
            max_answer=str(17 * mib),
            send_timeout="60",
            timeout="60",
        ) as g:
            idle, reader = Raw(g, rcvbuf=4096), None
            try:
                idle.send(request)
                assert wait_until(
                    lambda: g.metrics()["svir_gateway_partial_bytes"] >= 12 * mib, 60
                ), g.metrics()
                time.sleep(1.5)  # it has held them past the grace
                assert g.metrics().get(unread, 0) == 0
                # connected now, not with the other: a connection silent past --head-timeout
                # (2 s here) is closed, which a busy machine made it (CI, stop 51)
                reader = Raw(g, rcvbuf=4096)
                reader.send(request)
                reader.read(60, until=lambda got: got.endswith(b"}") and responses(got)[0].complete)
                (got,) = responses(reader.got)
                assert (got.status, got.complete) == (200, True), got
                answer = json.loads(got.body)
                assert answer["status"] == "completed", answer["status"]
                assert idle.closed_by_peer(10)  # (at the sweep after, within a second)
                assert g.metrics().get(unread, 0) == 1, g.metrics()
            finally:
                idle.close()
                if reader is not None:
                    reader.close()
            _given_back(g)


def test_a_client_reading_an_event_slower_than_the_send_timeout_keeps_its_stream(
    up: HostileUpstream,
) -> None:
    """Attack 45 F3: a client's send deadline ran from when its socket filled until it took
    everything: one that read steadily, but an event longer than ``--send-timeout`` takes to
    go at its pace, lost its stream. The deadline begins again each time it takes 64 KiB:
    three events of 2 MiB, read at about 600 KB/s with a send timeout of 1 s, come whole (the
    first two each wait some seconds in the socket, the upstream's end not read yet)."""
    for backend in BACKENDS:
        with gateway(up.base, backend, send_timeout="1") as g, Raw(g, rcvbuf=65536) as r:
            r.send(post(openai_body(tag("big-events:2048:3"))))
            deadline = time.monotonic() + 60
            while not r.got.endswith(b"0\r\n\r\n") and time.monotonic() < deadline:
                try:
                    data = r.sock.recv(65536)
                except TimeoutError:
                    continue
                if not data:
                    break
                r.add(data)
                time.sleep(0.1)
            ((got,),) = [responses(r.got)]
            assert (got.status, got.complete) == (200, True), r.tail(300)
            assert got.body.count(b"t" * 1000) >= 6000, r.tail(300)
            assert got.body.rstrip().endswith(b"data: [DONE]"), r.tail(300)
            healthy(g)


def test_closing_connections_count_until_they_are_gone(up: HostileUpstream) -> None:
    """Attack 45 F1: a connection counted against ``--max-connections`` until its session
    closed, not until it was gone: one whose client took its answer's last bytes slowly kept
    its descriptor (and the kernel's buffers of it) uncounted, and such connections took the
    process's descriptors to their limit. Three clients that read nothing of their streams
    lose them at the send timeout, and their connections linger for the close's deadline:
    counted until they are gone."""
    streams = "svir_gateway_active_streams"
    for backend in BACKENDS:
        with gateway(up.base, backend, send_timeout="2") as g:
            before = g.metrics()["svir_gateway_connections"]  # (this one's, the watch's)
            clients = [Raw(g, rcvbuf=4096) for _ in range(3)]
            try:
                for r in clients:
                    r.send(post(openai_body(tag("big-events:1024:8"))))
                assert wait_until(lambda: g.metrics()[streams] == 3, 10), g.metrics()
                assert wait_until(lambda: g.metrics()[streams] == 0, 10), g.metrics()
                # their sessions closed; their connections are still counted
                assert g.metrics()["svir_gateway_connections"] >= before + 3, g.metrics()
            finally:
                for r in clients:
                    r.reset()
            gone = lambda b=before: g.metrics()["svir_gateway_connections"] <= b  # noqa: E731
            assert wait_until(gone, 10), g.metrics()
            healthy(g)


def _kernel_queued(port: int, peers: set[int]) -> int:
    """Bytes the kernel holds to send on the sockets of local ``port`` to the local ``peers``
    (``/proc/net/tcp``'s tx_queue), whoever owns them: an orphaned socket's too."""
    total = 0
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(name) as f:
            for line in f.read().splitlines()[1:]:
                fields = line.split()
                local, remote = fields[1].rsplit(":", 1)[1], fields[2].rsplit(":", 1)[1]
                if int(local, 16) == port and int(remote, 16) in peers:
                    total += int(fields[4].split(":")[0], 16)
    return total


@pytest.mark.skipif(sys.platform != "linux", reason="SIOCOUTQ and /proc/net/tcp are Linux's")
def test_a_connection_given_up_leaves_nothing_queued_in_the_kernel(up: HostileUpstream) -> None:
    """Attack 46 G1: a client connection the gateway gave up on (the send deadline, then the
    close's) was closed, not reset: what the kernel held for it stayed in an orphaned socket,
    up to the socket's buffer, for minutes while the client answered the kernel's probes and
    took nothing (52 such sockets held 146 MB under ``--max-connections 24``). Three clients
    that read nothing, one of them after its end of the connection was shut (review 46 H1: on
    asyncio, its socket was closed at once): once the gateway counts them gone, the kernel
    holds nothing for them; an answer it dropped with a connection that closed after it is
    logged cut (review 46 L2: it was ok when it had all gone to the kernel)."""
    for backend in BACKENDS:
        with gateway(up.base, backend, send_timeout="2") as g:
            before = g.metrics()["svir_gateway_connections"]  # (this one's, the watch's)
            clients = [Raw(g, rcvbuf=4096) for _ in range(3)]
            try:
                rids = [tag(f"big-events:{size}") for size in ("64:4", "64:4", "1024:8")]
                close = ("", "Connection: close\r\n", "")
                for r, rid, extra in zip(clients, rids, close, strict=True):
                    r.send(post(openai_body(rid), extra=extra))  # (the first two fit
                    # in the kernel's buffers: nothing waits in the server's)
                peers = {r.sock.getsockname()[1] for r in clients}
                first = {clients[0].sock.getsockname()[1]}
                full = lambda p=first: _kernel_queued(g.port, p) > 200_000  # noqa: E731
                assert wait_until(full, 10), _kernel_queued(g.port, first)  # (its answer went)
                clients[0].sock.shutdown(socket.SHUT_WR)
                gone = lambda b=before: g.metrics()["svir_gateway_connections"] <= b  # noqa: E731
                assert wait_until(gone, 30), g.metrics()
                empty = lambda p=peers: _kernel_queued(g.port, p) == 0  # noqa: E731
                assert wait_until(empty, 10), _kernel_queued(g.port, peers)
                (line,) = [x for x in g.log.read_text().splitlines() if f"id={rids[1]}" in x]
                assert "outcome=cut " in line, line
            finally:
                for r in clients:
                    r.reset()
            healthy(g)


def test_a_client_that_closed_is_not_waited_for_to_take_its_answer(up: HostileUpstream) -> None:
    """Attack 48 F4: a client that closed with its head half sent was answered 400, which its
    kernel refused with a reset; on anyio the connection waited for it to take those bytes,
    still counted by the kernel, for ``--send-timeout``, holding its descriptor: under a small
    descriptor limit a flood of such clients kept ``/healthz`` away for 40 s after it ended.
    Such connections go at once, on both backends."""
    for backend in BACKENDS:
        with gateway(up.base, backend, send_timeout="60", head_timeout="60") as g:
            before = g.metrics()["svir_gateway_connections"]  # (this one's, the watch's)
            clients = [Raw(g) for _ in range(5)]
            try:
                for r in clients:
                    r.send(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
                counted = lambda b=before: g.metrics()["svir_gateway_connections"] >= b + 5  # noqa: E731
                assert wait_until(counted, 10), g.metrics()
            finally:
                for r in clients:
                    r.close()
            gone = lambda b=before: g.metrics()["svir_gateway_connections"] <= b  # noqa: E731
            assert wait_until(gone, 20), g.metrics()  # (not the 60 s of the send timeout)
            healthy(g)


@contextlib.contextmanager
def _sink() -> Iterator[int]:
    """An upstream that accepts and never reads (its receive buffer small), for as long as the
    block runs: its port."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # (the accepted ones' too)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    kept: list[socket.socket] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                kept.append(listener.accept()[0])

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield listener.getsockname()[1]
    finally:
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)  # (wakes the accept)
        listener.close()
        for sock in kept:
            sock.close()


def _queued_to(port: int) -> int:
    """Bytes the kernel holds to send on the sockets whose peer is local ``port``, whoever owns
    them (an orphaned socket's too)."""
    total = 0
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(name) as f:
            for line in f.read().splitlines()[1:]:
                fields = line.split()
                if int(fields[2].rsplit(":", 1)[1], 16) == port:
                    total += int(fields[4].split(":")[0], 16)
    return total


@pytest.mark.skipif(sys.platform != "linux", reason="SIOCOUTQ and /proc/net/tcp are Linux's")
def test_an_upstream_connection_given_up_leaves_nothing_queued_in_the_kernel() -> None:
    """Attack 47 H1, the upstream's side of 46 G1: a request whose body goes upstream as it
    comes, given up (its client left; the upstream took none of it in time) while it read
    none of it, was closed, not reset: the body the kernel held stayed in an orphaned socket,
    up to its buffer, for as long as the upstream lived (33 held 84 MB under
    ``--max-connections 12``). Once the gateway counts those connections gone, the kernel
    holds nothing for the upstream."""
    body = openai_body(messages=[{"role": "user", "content": "x" * (4 << 20)}])
    with _sink() as port:
        for backend in BACKENDS:
            with gateway(f"http://127.0.0.1:{port}", backend) as g:
                before = g.metrics()["svir_gateway_connections"]
                clients = [Raw(g), Raw(g)]
                try:
                    for r in clients:
                        r.sock.settimeout(3)
                        with contextlib.suppress(TimeoutError):  # (it stops taking them)
                            r.sock.sendall(post(body))
                    assert wait_until(lambda p=port: _queued_to(p) > 100_000, 10)
                    clients[0].reset()  # one leaves; the other's body the upstream does not
                    # take: the upstream's timeout (attack 47 H4: the client's 408 said its
                    # body did not arrive in time)
                    answer = clients[1].read(30, until=lambda got: b"took less" in got)
                    assert answer.startswith(b"HTTP/1.1 504 "), answer[:300]
                    assert b"the upstream took less than 64 KiB of the request" in answer, answer
                finally:
                    for r in clients:
                        r.reset()
                gone = lambda b=before: g.metrics()["svir_gateway_connections"] <= b  # noqa: E731
                assert wait_until(gone, 30), g.metrics()
                empty = lambda p=port: _queued_to(p) == 0  # noqa: E731
                assert wait_until(empty, 10), _queued_to(port)


def test_a_chunked_body_growing_past_the_budget_is_refused(up: HostileUpstream) -> None:
    for backend in BACKENDS:
        with gateway(up.base, backend, max_buffered="500000", body_timeout="30") as g:
            piece = b"a" * 100_000
            with Raw(g) as r:
                r.send(chunked_post(b"", kind=LLM))
                for _ in range(10):
                    if not r.send(b"%x\r\n%s\r\n" % (len(piece), piece)):
                        break
                r.read(10, until=lambda got: b"\r\n\r\n" in got)
                got = responses(r.got)
            assert got, got
            assert got[0].status in (413, 503), got
            healthy(g)


def test_past_max_streams_a_request_is_503_with_retry_after(up: HostileUpstream) -> None:
    for backend in BACKENDS:
        with gateway(up.base, backend, max_streams="2") as g:
            held = [Raw(g), Raw(g)]
            try:
                for r in held:
                    r.send(post(openai_body(tag("stall-forever"))))
                assert wait_until(lambda: g.metrics()["svir_gateway_active_streams"] == 2, 10)
                got, _ = one(g, post(openai_body(tag("ok"))))
                assert got, got
                assert got[0].status == 503, got
                assert got[0].header("retry-after"), got
                got, _ = one(g, post(llm_body(tag("ok")), kind=LLM))
                assert got, got
                assert got[0].status == 503, got
                assert _health_status(g) == 200, "health checks need no stream slot"
            finally:
                for r in held:
                    r.close()
            healthy(g)


def test_bodies_that_trickle_hold_no_stream_slot(up: HostileUpstream) -> None:
    """Attack 43 r4: bodies trickled a byte at a time held every stream slot, their heads
    took them, until --body-timeout cut them; victims were refused 15/20 in 40 s. A held
    body takes its slot once whole: beside eight such bodies and two slots, each victim's
    request is answered; one that comes while both slots are in use is refused as before."""
    for backend in BACKENDS:
        with gateway(up.base, backend, max_streams="2", body_timeout="30") as g:
            body = openai_body(tag("ok"))
            squatters = [Raw(g) for _ in range(8)]
            try:
                for r in squatters:
                    r.send(post(body)[: -len(body) // 2])  # the head and half the body
                time.sleep(0.3)
                assert g.metrics()["svir_gateway_active_streams"] == 0
                for _ in range(3):
                    got, _ = one(g, post(openai_body(tag("ok"))))
                    assert got, got
                    assert got[0].status == 200, got
                held = [Raw(g), Raw(g)]
                for r in held:
                    r.send(post(openai_body(tag("stall-forever"))))
                assert wait_until(lambda: g.metrics()["svir_gateway_active_streams"] == 2, 10)
                got, _ = one(g, post(openai_body(tag("ok"))))
                assert got, got
                assert got[0].status == 503, got
                for r in held:
                    r.close()
            finally:
                for r in squatters:
                    r.close()
            nothing_held(g)
            healthy(g)


def test_many_large_llm_stream_bodies_at_once(gw: Gateway) -> None:
    """Eight 3 MiB LLM-Stream requests at once, each parsed off the event loop: every one is
    answered, health checks go on, and memory comes back down."""
    big = llm_body(tag("ok"), messages=[{"role": "user", "content": "x" * 3_000_000}])
    clients = [Raw(gw) for _ in range(8)]
    try:
        for r in clients:
            r.send(post(big, kind=LLM))
        assert _health_status(gw) == 200
        for r in clients:
            r.read(60, until=lambda got: b"stream.end" in got)
            got = responses(r.got)
            assert got, got[:1]
            assert got[0].status == 200, got[:1]
    finally:
        for r in clients:
            r.close()
    healthy(gw)


def test_an_llm_stream_request_with_a_hundred_thousand_messages(gw: Gateway) -> None:
    msgs = [{"role": "user", "content": "hi"}] * 100_000
    got, _ = one(gw, post(llm_body(tag("ok"), messages=msgs), kind=LLM), seconds=60)
    assert got, got
    assert got[0].status in (200, 400, 413), got
    healthy(gw)


def test_a_large_openai_body_streams_upstream_whole(gw: Gateway, up: HostileUpstream) -> None:
    rid = tag("ok")
    body = openai_body(rid, padding="p" * 5_000_000)
    got, _ = one(gw, post(body), seconds=60)
    assert got, got
    assert got[0].status == 200, got
    assert up.find(rid).body == body, "the body reached the upstream changed"
    healthy(gw)


# ================================================================================================
# 8. The upstream misbehaves
# ================================================================================================


def ask(
    gw: Gateway, scenario: str, dialect: str, *, stream: bool = True, seconds: float = 20
) -> Any:
    """One request of ``dialect`` to the upstream's ``scenario``; (response, the upstream's)."""
    rid = tag(scenario)
    if dialect == "openai":
        data = post(openai_body(rid, stream=stream))
    else:
        data = post(llm_body(rid), kind=LLM)
    got, _ = one(gw, data, seconds=seconds)
    assert got, f"{scenario}: no answer at all"
    return got[0], rid


def failed_in_dialect(r: Any, dialect: str) -> None:
    """The answer is a failure the client can read: an HTTP error status with an error object,
    or a stream that carries an error and then its end marker."""
    if r.status >= 400:
        assert "error" in json.loads(r.body), r
        return
    assert r.status == 200, r
    if dialect == "openai":
        result = openai_result(r.body)
        assert result.error is not None, r.body[-600:]
        assert b"data: [DONE]" in r.body, r.body[-600:]
    else:
        result = llm_result(r.body)
        assert result.error is not None, r.body[-600:]
        assert r.body.count(b'"type":"stream.end"') == 1, r.body[-600:]  # one event: once


@pytest.mark.parametrize("dialect", ["openai", "llm-stream"])
@pytest.mark.parametrize("scenario", ["keepalive-only:0.2", "stall-mid", "stall-head"])
def test_an_upstream_without_progress_ends_with_an_error_and_the_end_marker(
    gw: Gateway, up: HostileUpstream, dialect: str, scenario: str
) -> None:
    """Issue 16 item 4: no progress for ``--timeout`` (4 s here) ends the stream with an error
    and the end marker, however many keep-alive comments arrive; meanwhile the gateway sends
    its own keep-alive (``--keepalive`` 1 s); the upstream request is cancelled."""
    r, rid = ask(gw, scenario, dialect)
    failed_in_dialect(r, dialect)
    if r.status == 200:
        assert r.complete, "the stream did not end properly"
    assert up.find(rid).gone.wait(20)
    healthy(gw)


@pytest.mark.parametrize("dialect", ["openai", "llm-stream"])
def test_an_upstream_event_of_too_many_containers_ends_its_stream(
    gw: Gateway, dialect: str
) -> None:
    """Attack 80 F1: events of hundreds of thousands of empty arrays (1.4 to 2.7 s of parsing
    each at 8 MiB, on the loop every stream shares) are refused unparsed past
    `_json.MAX_VALUES` (each array a value, each comma between them another), the stream
    ending with an error and its end marker; events of fewer are read."""
    few, many = MAX_VALUES // 4, MAX_VALUES // 2 + 1
    r, _ = ask(gw, f"many-containers:2:{few}", dialect, seconds=60)
    assert (r.status, r.complete) == (200, True)
    result = openai_result(r.body) if dialect == "openai" else llm_result(r.body)
    assert result.error is None, r.body[-600:]
    r, _ = ask(gw, f"many-containers:40:{many}", dialect, seconds=60)
    failed_in_dialect(r, dialect)
    assert f"more than {MAX_VALUES} values".encode() in r.body, r.body[-600:]
    healthy(gw)


def test_keepalive_comments_reach_a_waiting_sse_client(gw: Gateway) -> None:
    r, _ = ask(gw, "stall-head:3", "openai")
    assert r.status == 200
    assert b": keep-alive" in r.body or b":" in r.body.split(b"data:")[0], r.body[:200]
    assert openai_result(r.body).text == OK_TEXT
    healthy(gw)


def test_a_non_stream_request_to_a_stalled_upstream_is_a_504(gw: Gateway) -> None:
    r, _ = ask(gw, "stall-forever", "openai", stream=False)
    assert r.status == 504, r
    healthy(gw)


@pytest.mark.parametrize("dialect", ["openai", "llm-stream"])
@pytest.mark.parametrize(
    "scenario",
    [
        "rst-head", "fin-head", "gzip", "bad-chunk", "chunk-overflow", "huge-head:256",
        "many-headers:5000", "switch", "both-framing", "html", "head-only-close", "rst-mid",
        "endless-event", "invalid-utf8",
    ],
)  # fmt: skip
def test_an_upstream_that_breaks_http_is_a_failure_in_the_clients_dialect(
    gw: Gateway, up: HostileUpstream, dialect: str, scenario: str
) -> None:
    """Issue 16 item 6: a reset, a close before the answer, a coding not asked for, bad chunk
    framing, a head past every bound, a protocol switch, two framings: each a failure the
    client reads in its own dialect (an HTTP error before the answer began, an error and
    its end marker after; a cut stays a cut), the upstream connection closed."""
    before = gw.rss_mb()
    r, rid = ask(gw, scenario, dialect, seconds=30)
    assert r.reason
    if scenario in ("rst-mid", "head-only-close") and r.status == 200:
        pass  # a cut stays a cut: no end marker, and nothing more to ask
    else:
        failed_in_dialect(r, dialect)
    if scenario == "gzip":
        text = r.body.decode("utf-8", "replace").lower()
        assert "gzip" in text or "encod" in text or "coding" in text, r.body[:400]
    assert up.find(rid).gone.wait(30), "the broken upstream connection was kept"
    assert gw.rss_mb() - before < 64
    healthy(gw)


@pytest.mark.parametrize("dialect", ["openai", "llm-stream"])
@pytest.mark.parametrize(
    ("code", "statuses"),
    [(400, (400,)), (401, (502,)), (403, (502,)), (404, (404, 502)), (413, (413, 502)),
     (429, (429,)), (500, (500, 502)), (502, (502,)), (503, (503,))],
)  # fmt: skip
def test_an_upstream_error_status_keeps_its_meaning(
    gw: Gateway, dialect: str, code: int, statuses: tuple[int, ...]
) -> None:
    r, _ = ask(gw, f"status:{code}", dialect)
    assert r.status in statuses, r
    assert "error" in json.loads(r.body)
    if code in (429, 503):
        assert r.header("retry-after") == "7", r.headers
    if code in (401, 403):
        assert r.header("www-authenticate") is None
    healthy(gw)


@pytest.mark.parametrize(
    "scenario",
    ["continue", "length", "close", "http10", "drip", "no-done", "done-then-more",
     "trailing-garbage", "replay:openai:keepalive-and-ping"],
)  # fmt: skip
@pytest.mark.parametrize("dialect", ["openai", "llm-stream"])
def test_an_upstream_odd_but_valid_answer_is_relayed_whole(
    gw: Gateway, dialect: str, scenario: str
) -> None:
    r, _ = ask(gw, scenario, dialect)
    assert r.status == 200, r
    if dialect == "openai":
        result = openai_result(r.body)
    else:
        result = llm_result(r.body)
    if scenario != "replay:openai:keepalive-and-ping":
        assert result.text == OK_TEXT, r.body[-400:]
    assert result.error is None
    healthy(gw)


@pytest.mark.parametrize("scenario", ["both-framing-json", "short-json", "gzip", "rst-head",
                                      "switch", "huge-head:256", "bad-chunk"])  # fmt: skip
def test_a_non_stream_answer_that_breaks_http_is_a_failure(gw: Gateway, scenario: str) -> None:
    """A relayed answer (not a stream) whose framing is broken: a 502, or a cut. RFC 9112 6.3:
    with both framings, chunked wins and "an intermediary that chooses to forward the message
    MUST first remove the received Content-Length field" (relayed, the body overruns it and
    h11 refuses to write it)."""
    r, _ = ask(gw, scenario, "openai", stream=False)
    assert r.status in (200, 502), r
    if r.status == 200 and scenario == "both-framing-json":
        assert r.complete, r
        assert json.loads(r.body)["choices"], r
    elif r.status == 200 and scenario == "gzip":  # relayed as it came: the client can decode it
        assert r.header("content-encoding") == "gzip", r.headers
    elif r.status == 200:
        assert not r.complete, "a broken answer was relayed as if whole"
    healthy(gw)


def test_the_upstream_answers_json_to_a_non_stream_request(gw: Gateway) -> None:
    r, _ = ask(gw, "json", "openai", stream=False)
    assert r.status == 200
    assert json.loads(r.body)["choices"][0]["message"]["content"] == OK_TEXT
    healthy(gw)


def test_a_large_non_stream_answer_is_relayed_without_holding_it(gw: Gateway) -> None:
    before = gw.rss_mb()
    r, _ = ask(gw, "big-json:32", "openai", stream=False, seconds=60)
    assert r.status == 200, r
    assert r.complete, r
    assert len(r.body) > 32 * 1024 * 1024
    assert gw.rss_mb() - before < 64, (before, gw.rss_mb())
    healthy(gw)


@pytest.mark.parametrize("dialect", ["openai", "llm-stream"])
def test_memory_does_not_grow_with_the_answer(gw: Gateway, dialect: str) -> None:
    """Issue 16 item 3: "Memory per stream must not grow with the answer: the gateway relays,
    it need not keep the whole text of every answer". 80 MiB of text in one stream: it
    arrives whole (no result bound of the gateway's own cuts it) and the gateway's resident
    memory grows by far less than the answer."""
    rid = tag("big-text:80")
    body = openai_body(rid) if dialect == "openai" else llm_body(rid)
    kind = "application/json" if dialect == "openai" else LLM
    before = gw.rss_mb()
    peak = before
    with Raw(gw) as r:
        r.send(post(body, kind=kind))
        deadline = time.monotonic() + 180
        while not r.eof and time.monotonic() < deadline:
            r.read(1, until=lambda got: got.endswith(b"0\r\n\r\n"))
            peak = max(peak, gw.rss_mb())
            if r.tail(5) == b"0\r\n\r\n":
                break
        got = responses(r.got)
    assert got, got[:1]
    assert got[0].status == 200, got[:1]
    assert got[0].complete, got[:1]
    text = b"t" * 65536
    assert got[0].body.count(text) == 80 * 16, "the answer did not arrive whole"
    if dialect == "llm-stream":
        assert b"event: error" not in got[0].body, got[0].body[-600:]
    assert peak - before < 40, f"RSS grew from {before:.0f} MB to {peak:.0f} MB for one stream"
    healthy(gw)


def test_a_kept_alive_upstream_connection_that_closes_is_not_a_failure(gw: Gateway) -> None:
    """Rule 6 of the session: an upstream that closes its kept-alive connections soon after
    each answer (a short keep-alive timeout): the next request on a pooled, closed connection
    is sent again on a new one; no client sees the failure."""
    for i in range(12):
        if i % 2:
            got, _ = one(gw, post(openai_body(tag("fin-after"))))
        else:
            got, _ = one(gw, post(llm_body(tag("fin-after")), kind=LLM))
        assert got, (i, got)
        assert got[0].status == 200, (i, got)
        assert got[0].complete, (i, got)
        time.sleep(0.1)
    healthy(gw)


@pytest.mark.parametrize(
    "first",
    [post(b"{", kind=LLM), get("/nope"), get("/v1/chat/completions"), post(b"{}", kind="text/x"),
     post(llm_body(stream=False), kind=LLM), post(openai_body(tag("status:400")))],
)  # fmt: skip
def test_after_a_refused_request_the_connection_is_reusable_or_closed(
    gw: Gateway, first: bytes
) -> None:
    """A refused request either closes its connection or leaves it ready for the next one;
    never half-way (the next request unanswered on an open connection)."""
    with Raw(gw) as r:
        r.send(first + get("/healthz"))
        r.read(10, until=lambda got: b'{"status":"ok"}' in got)
        got = responses(r.got)
        assert got, "no answer"
        if len(got) < 2:
            assert r.eof, f"the next request was neither answered nor the connection closed: {got}"
        else:
            assert got[1].status == 200
    healthy(gw)


@pytest.mark.parametrize("dialect", ["openai", "llm-stream"])
def test_the_upstream_closes_early_while_the_body_is_sent(
    gw: Gateway, up: HostileUpstream, dialect: str
) -> None:
    """Issue 16: nginx's 413 answers and closes while the request body is still being sent:
    the client gets that answer (or a 502 naming the failure), not an empty reply."""
    rid = tag("early:413")
    pad = "p" * 2_000_000
    body = openai_body(rid, padding=pad) if dialect == "openai" else llm_body(rid, padding=pad)
    got, _ = one(
        gw, post(body, kind="application/json" if dialect == "openai" else LLM), seconds=30
    )
    assert got, "no answer at all: the upstream's early answer was lost"
    assert got[0].status in (413, 502), got
    healthy(gw)


def test_an_upstream_that_is_not_there(up: HostileUpstream) -> None:
    """Issue 16: a non-streaming request to a gateway whose upstream is down got an empty
    reply. Every dialect gets an HTTP error with an error object."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    for backend in BACKENDS:
        with gateway(f"http://127.0.0.1:{dead}", backend) as g:
            for data in (post(openai_body(stream=False)), post(openai_body()),
                         post(llm_body(), kind=LLM), get("/v1/models")):  # fmt: skip
                got, _ = one(g, data)
                assert got, got
                assert got[0].status == 502, got
                assert "error" in json.loads(got[0].body)
            assert _health_status(g) == 200
            status, _, body = request(g, "GET", "/readyz")
            assert status == 503, body


def test_an_upstream_that_accepts_and_never_answers_the_connect(up: HostileUpstream) -> None:
    """A listener whose backlog is full (or a black hole): the connect deadline ends it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(0)
        port = s.getsockname()[1]
        fillers = []
        try:
            for _ in range(8):  # fill the backlog: later connects hang in SYN_SENT
                f = socket.socket()
                f.setblocking(False)
                with contextlib.suppress(BlockingIOError):
                    f.connect(("127.0.0.1", port))
                fillers.append(f)
            for backend in BACKENDS:
                with gateway(f"http://127.0.0.1:{port}", backend) as g:
                    got, _ = one(g, post(openai_body(stream=False)), seconds=40)
                    assert got, got
                    assert got[0].status in (502, 504), got
                    assert _health_status(g) == 200
        finally:
            for f in fillers:
                f.close()


def test_models_pass_through_hostile_upstreams(gw: Gateway) -> None:
    got, _ = one(gw, get("/v1/models") + get("/v1/models/a%2Fb") + get("/v1/models/x?y=1"), count=3)
    assert [r.status for r in got] == [200, 200, 200], got
    healthy(gw)


@pytest.mark.parametrize("dialect", ["openai", "llm-stream"])
def test_the_request_id_goes_upstream_in_both_dialects(
    gw: Gateway, up: HostileUpstream, dialect: str
) -> None:
    """Issue 17 item 4: ``metadata.request_id`` "is also sent upstream as X-Request-Id ...
    so one id follows a request through every hop"; the gateway's own id when none is given."""
    rid = tag("ok")
    body = openai_body(rid) if dialect == "openai" else llm_body(rid)
    got, _ = one(gw, post(body, kind="application/json" if dialect == "openai" else LLM))
    assert got, got
    assert got[0].status == 200, got
    assert got[0].header("x-request-id") == rid, got
    seen = up.find(rid)
    assert seen.rid == rid, f"the upstream got X-Request-Id {seen.rid!r}, not {rid!r}"
    healthy(gw)


# ================================================================================================
# 9. Random bytes, many connections at once
# ================================================================================================


def test_random_bytes_on_many_connections(gw: Gateway) -> None:
    rng = random.Random(16)
    seeds = [get("/healthz"), post(openai_body()), post(llm_body(), kind=LLM),
             chunked_post(b"5\r\nhello\r\n0\r\n\r\n")]  # fmt: skip
    for _ in range(150):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randrange(1, 6)):
            i = rng.randrange(len(data))
            what = rng.randrange(4)
            if what == 0:
                data[i] = rng.randrange(256)
            elif what == 1:
                del data[i : i + rng.randrange(1, 20)]
            elif what == 2:
                data[i:i] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 20)))
            else:
                data[i:i] = rng.choice([b"\r\n", b"\n", b"\r", b":", b" ", b"\x00", b"0\r\n"])
        r = Raw(gw)
        r.send(bytes(data))
        if rng.random() < 0.3:
            r.reset()
        else:
            r.read(0.05)
            r.close()
    assert gw.alive()
    healthy(gw)


def test_a_storm_of_short_connections(gw: Gateway) -> None:
    for i in range(300):
        with socket.create_connection(("127.0.0.1", gw.port), timeout=10) as s:
            if i % 3 == 0:
                s.sendall(get("/healthz"))
    healthy(gw)


def test_stopping_with_streams_open_ends_them_in_their_dialect(up: HostileUpstream) -> None:
    """SIGTERM: streams that do not finish within ``--grace`` end with an error and their end
    marker; the process exits."""
    import signal

    for backend in BACKENDS:
        with gateway(up.base, backend, timeout="60") as g:
            a, b = Raw(g), Raw(g)
            try:
                a.send(post(openai_body(tag("stall-mid"))))
                b.send(post(llm_body(tag("stall-mid")), kind=LLM))
                a.read(5, until=lambda got: b"data:" in got)
                b.read(5, until=lambda got: b"data:" in got)
                os.kill(g.proc.pid, signal.SIGTERM)
                a.read(20)
                b.read(20)
                ra, rb = responses(a.got)[0], responses(b.got)[0]
                failed_in_dialect(ra, "openai")
                failed_in_dialect(rb, "llm-stream")
                assert g.proc.wait(30) == 0
            finally:
                a.close()
                b.close()
