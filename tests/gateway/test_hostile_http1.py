"""The hostile battery of the gateway's own HTTP/1.1 (attack 26): the gateway stopped using h11
(commits bf1dcb6, 19a5f2f, 9363b60). New and attacked here: `svir_proto._http1` (the heads),
`svir_proto.gateway._serverside.ServerSide` (the server role: bodies, keep-alive, pipelining,
``Expect``, HTTP/1.0, HEAD), `svir_proto.connection.ClientConnection` (the client role toward
the upstream: 1xx, 101, 204/304, the three framings, pooled connections and what follows an
answer on them) and, on plain asyncio, `transports._asyncio_socket` (the gateway's own
listener and socket transport).

The real ``svir gateway`` process on both backends, attacked as a hostile client and from
behind as a hostile upstream (`http1_upstream.ScriptedUpstream`: answers written byte for byte
by the test). After each attack `healthy`: the process lives, the openai package and an
LLM-Stream client get whole answers, nothing stays held in ``/metrics``, no traceback in the
log. A few finds are shown sans-IO too (`GatewaySession` fed the same bytes cut differently).

The nine finds were fixed in the stop that found them; each find's test says, in its docstring,
what was sent and what the gateway did then. `hostile_gateway.QUICK` deadlines; every wait is
generous (a shared 2-core machine) and nothing asserts a tight time.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import time
from typing import Any

import pytest

from svir_proto.gateway.config import GatewayConfig, GatewayState
from svir_proto.gateway.session import Close, GatewaySession, More
from svir_proto.openai.endpoint import Endpoint
from tests.gateway import battery
from tests.gateway.battery import BACKENDS, anomaly_fixture, gateway_fixtures, upstream_fixture
from tests.gateway.hostile_gateway import (
    BAD_LOG,
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
    responses,
    wait_until,
)
from tests.gateway.hostile_upstream import OK_TEXT, SSE_HEAD, chunk
from tests.gateway.http1_upstream import (
    SMUGGLED,
    ScriptedUpstream,
    Seen,
    _ScriptedConn,
    fake_json,
    fake_stream,
    ok_json,
    ok_models,
    ok_stream,
)

pytestmark = pytest.mark.slow
LLM = "application/llm-request+json"
MAX_HEAD = 16 * 1024  # GatewayConfig.max_head_size's default, and ClientConnection's
G = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
HEALTHY = b'{"status":"ok"}'


def tag(name: str = "h1") -> str:
    return battery.tag(name)


# -- the processes (`battery`) ---------------------------------------------------------------

up = upstream_fixture(ScriptedUpstream)
_gateways, gw = gateway_fixtures(
    lambda up, backend: Gateway(up.base, backend, max_connections="400", max_streams="64"),
    watch=True,
)
_no_anomaly = anomaly_fixture()


def one(
    gw: Gateway | int,
    data: bytes | list[bytes],
    *,
    seconds: float = 15.0,
    count: int = 1,
    close: bool = False,
    heads: tuple[bool, ...] = (),
    pause: float = 0.0,
) -> tuple[list[Any], bool, bytes]:
    """Send ``data`` (a list: in pieces, ``pause`` seconds apart) on a new connection: the
    responses, whether the gateway closed, the raw bytes. Reads until ``count`` whole responses
    came (or, with ``close``, until the close), or ``seconds``."""
    pieces = data if isinstance(data, list) else [data]
    with Raw(gw) as r:
        for i, piece in enumerate(pieces):
            if i and pause:
                time.sleep(pause)
            r.send(piece)
        r.read(seconds, until=None if close else _enough(count, heads))
        return responses(r.got, heads), r.eof, r.got


def _enough(count: int, heads: tuple[bool, ...] = ()) -> Any:
    def check(got: bytearray) -> bool:
        found = [x for x in responses(got, heads) if x.status >= 200]
        return len(found) >= count and found[count - 1].complete

    return check


def get(
    path: str = "/healthz", *, extra: str = "", method: str = "GET", version: str = "1.1"
) -> bytes:
    return f"{method} {path} HTTP/{version}\r\nHost: 127.0.0.1\r\n{extra}\r\n".encode()


def chunked(body: bytes, *, extra: bytes = b"", head: str = "") -> bytes:
    """A chunked POST of ``body`` (one chunk), ``extra`` between the last chunk and the end."""
    return (
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n{head}\r\n"
    ).encode() + b"%x\r\n%s\r\n0\r\n%s\r\n" % (len(body), body, extra)


def padded_get(total: int, *, lf: bool = False) -> bytes:
    """A ``GET /healthz`` whose head (its blank line included) is ``total`` bytes long."""
    end = b"\n" if lf else b"\r\n"
    start = b"GET /healthz HTTP/1.1" + end + b"Host: 127.0.0.1" + end + b"X-Pad: "
    pad = total - len(start) - 2 * len(end)
    head = start + b"a" * pad + end + end
    assert len(head) == total
    return head


def canary_post(rid: str) -> bytes:
    body = openai_body(rid)
    return post(body, extra=f"X-Request-Id: {rid}\r\n")


def session(**config: Any) -> GatewaySession:
    cfg = GatewayConfig(upstream=Endpoint.parse("http://127.0.0.1:9"), **config)
    return GatewaySession(GatewayState(cfg, new_id=lambda: "id"), 0.0)


def feed(pieces: list[bytes], **config: Any) -> tuple[bytes, bool]:
    """``pieces`` to a new `GatewaySession`, one `client_data` each: what it wrote, whether it
    asked to close."""
    s = session(**config)
    out = b""
    closed = False
    for piece in pieces:
        out += s.client_data(piece, 1.0)
        while True:  # pipelined requests answered a few at a time: the loop's next turns
            closed = closed or any(isinstance(a, Close) for a in s.actions)
            more = any(isinstance(a, More) for a in s.actions)
            s.actions.clear()
            if not more:
                break
            out += s.client_more(1.0)
    return out, closed


# ================================================================================================
# 1. Request heads: the 16 KiB bound in every split, line ends
# ================================================================================================


SPLITS = ["whole", "at-the-bound", "last-byte-apart", "dribble-2k"]


def _split(data: bytes, how: str) -> list[bytes]:
    if how == "whole":
        return [data]
    if how == "at-the-bound":
        return [data[:MAX_HEAD], data[MAX_HEAD:]] if len(data) > MAX_HEAD else [data]
    if how == "last-byte-apart":
        return [data[:-1], data[-1:]]
    return [data[i : i + 2048] for i in range(0, len(data), 2048)]


@pytest.mark.parametrize("lf", [False, True], ids=["crlf", "lf"])
@pytest.mark.parametrize("total", [MAX_HEAD - 1, MAX_HEAD, MAX_HEAD + 1, MAX_HEAD + 2])
def test_a_head_at_the_bound_has_one_verdict_however_it_is_split(
    gw: Gateway, total: int, lf: bool
) -> None:
    """A head of up to 16 KiB (its blank line included) is served, one byte more is 431 and a
    close, whether it comes whole, cut at the bound, with its last byte apart, or 2 KiB a
    write: the verdict never depends on how the bytes were split."""
    data = padded_get(total, lf=lf)
    for how in SPLITS:
        got, closed, raw = one(gw, _split(data, how), pause=0.05, close=total > MAX_HEAD)
        assert got, (how, raw[:200])
        if total <= MAX_HEAD:
            assert got[0].status == 200, (how, got)
            assert got[0].body == HEALTHY
        else:
            assert got[0].status == 431, (how, got)
            assert closed, how
    healthy(gw)


def test_sans_io_a_head_at_the_bound_has_one_verdict_in_every_split() -> None:
    """The same, fed to `GatewaySession` cut at every byte around the bound."""
    for total in (MAX_HEAD - 1, MAX_HEAD, MAX_HEAD + 1):
        for lf in (False, True):
            data = padded_get(total, lf=lf) + G
            whole = feed([data])
            for at in list(range(1, 40)) + list(range(MAX_HEAD - 40, len(data))):
                assert feed([data[:at], data[at:]]) == whole, (total, lf, at)


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("lf-only", G.replace(b"\r\n", b"\n")),
        ("mixed-ends", b"GET /healthz HTTP/1.1\nHost: 127.0.0.1\r\n\n"),
        ("blank-cr-lf-lf", b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\n\r\n"),
        ("tabs-around-value", b"GET /healthz HTTP/1.1\r\nHost:\t127.0.0.1\t\r\n\r\n"),
        ("no-space-after-colon", b"GET /healthz HTTP/1.1\r\nHost:127.0.0.1\r\n\r\n"),
        ("obs-text-value", b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX: caf\xe9\xff\r\n\r\n"),
        ("query", b"GET /healthz?a=%00&b=~ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
    ],
)  # fmt: skip
def test_odd_but_valid_heads_are_served_and_keep_the_connection(
    gw: Gateway, name: str, data: bytes
) -> None:
    """h11's grammar, as RFC 9112 allows it: LF line ends, tabs, no blank after the colon,
    obs-text in a value. Served, and the connection kept (a GET pipelined behind is answered)."""
    got, _, raw = one(gw, data + G, count=2)
    assert [x.status for x in got] == [200, 200], (got, raw[:300])
    healthy(gw)


@pytest.mark.parametrize(
    ("name", "data", "statuses"),
    [
        ("nul-in-target", b"GET /heal\x00thz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", (400,)),
        ("high-byte-in-target", b"GET /heal\xffthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", (400,)),
        ("nul-in-method", b"G\x00T /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", (400,)),
        ("bare-cr-line-end", b"GET /healthz HTTP/1.1\rHost: 127.0.0.1\r\r\n\r\n", (400,)),
        ("cr-cr-lf", b"GET /healthz HTTP/1.1\r\r\nHost: 127.0.0.1\r\n\r\n", (400,)),
        ("tab-before-colon", b"GET /healthz HTTP/1.1\r\nHost\t: 127.0.0.1\r\n\r\n", (400,)),
        ("empty-name", b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n: x\r\n\r\n", (400,)),
        ("vt-in-value", b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX: a\x0bb\r\n\r\n", (400,)),
        ("ff-in-value", b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX: a\x0cb\r\n\r\n", (400,)),
        ("folded-host", b"GET /healthz HTTP/1.1\r\nHost:\r\n 127.0.0.1\r\n\r\n", (400,)),
        ("lf-fold", b"GET /healthz HTTP/1.1\nHost: 127.0.0.1\nX: a\n\tb\n\n", (400,)),
        ("version-9.9", b"GET /healthz HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n", (505,)),
        ("version-0.9", b"GET /healthz HTTP/0.9\r\nHost: 127.0.0.1\r\n\r\n", (505,)),
        ("long-request-line", b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\n\r\n", (414, 431)),
        ("many-fields", b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X:\r\n" * 5000
         + b"\r\n", (431,)),
    ],
)  # fmt: skip
def test_a_bad_head_is_refused_and_closes(
    gw: Gateway, name: str, data: bytes, statuses: tuple[int, ...]
) -> None:
    """What h11 refused our reader refuses too, with a status, its reason and a close; a GET
    pipelined behind it is never answered (nothing after a bad head is read)."""
    got, closed, raw = one(gw, data + G, close=True)
    assert got, raw[:200]
    assert got[0].status in statuses, got
    assert got[0].reason
    assert closed
    assert len(got) == 1, got
    healthy(gw)


# ================================================================================================
# 2. Request framing: smuggling beyond the battery's list
# ================================================================================================


BODY = openai_body()


def _framed(framing: str, payload: bytes, version: str = "1.1") -> bytes:
    return (
        (
            f"POST /v1/chat/completions HTTP/{version}\r\nHost: 127.0.0.1\r\n"
            "Content-Type: application/json\r\n"
        ).encode()
        + framing.encode("latin-1")
        + b"\r\n"
        + payload
    )


_CHUNKED = b"%x\r\n%s\r\n0\r\n\r\n" % (len(BODY), BODY)
N = len(BODY)
REFUSED = [
    ("te-trailing-comma", "Transfer-Encoding: chunked,\r\n", _CHUNKED, (400, 501)),
    ("te-leading-comma", "Transfer-Encoding: ,chunked\r\n", _CHUNKED, (400, 501)),
    ("te-two-fields-cases", "Transfer-Encoding: chunked\r\ntransfer-encoding: CHUNKED\r\n",
     _CHUNKED, (400, 501)),
    ("te-nul", "Transfer-Encoding: chunked\x00\r\n", _CHUNKED, (400, 501)),
    ("te-tab-before-colon", "Transfer-Encoding\t: chunked\r\n", _CHUNKED, (400,)),
    ("te-cr-before-crlf", "Transfer-Encoding: chunked\r\r\n", _CHUNKED, (400,)),
    ("te-after-bare-cr", "X: y\rTransfer-Encoding: chunked\r\n", _CHUNKED, (400,)),
    ("te-nbsp", "Transfer-Encoding: chunked\xa0\r\n", _CHUNKED, (400, 501)),
    ("te-lf-fold", "Transfer-Encoding:\n chunked\n", _CHUNKED, (400,)),
    ("te-and-cl-http10", f"Content-Length: {N}\r\nTransfer-Encoding: chunked\r\n", _CHUNKED,
     (400,)),
    ("cl-nul", f"Content-Length: {N}\x00\r\n", BODY, (400,)),
    ("cl-fullwidth-digit", "Content-Length: \xef\xbc\x95\r\n", BODY, (400,)),
    ("cl-underscore", "Content-Length: 1_0\r\n", BODY, (400,)),
    ("cl-21-digits", f"Content-Length: {N:021d}\r\n", BODY, (400,)),
    ("cl-empty", "Content-Length: \r\n", BODY, (400,)),
    ("cl-trailing-comma", f"Content-Length: {N},\r\n", BODY, (400,)),
    ("cl-folded-twice", f"Content-Length: {N}\r\n {N}\r\n", BODY, (400,)),
    ("chunk-size-21-hex", "Transfer-Encoding: chunked\r\n",
     b"%021x\r\n%s\r\n0\r\n\r\n" % (N, BODY), (400,)),
    ("chunk-size-0x", "Transfer-Encoding: chunked\r\n", b"0x%x\r\n%s\r\n0\r\n\r\n" % (N, BODY),
     (400,)),
    ("chunk-size-negative", "Transfer-Encoding: chunked\r\n", b"-5\r\nhello\r\n0\r\n\r\n", (400,)),
    ("chunk-size-plus", "Transfer-Encoding: chunked\r\n", b"+5\r\nhello\r\n0\r\n\r\n", (400,)),
    ("chunk-size-space-first", "Transfer-Encoding: chunked\r\n", b" 5\r\nhello\r\n0\r\n\r\n",
     (400,)),
    ("chunk-blank-no-ext", "Transfer-Encoding: chunked\r\n", b"5 \r\nhello\r\n0\r\n\r\n", (400,)),
    ("chunk-ext-bare-lf", "Transfer-Encoding: chunked\r\n", b"5;a=b\nhello\r\n0\r\n\r\n", (400,)),
    ("chunk-ext-bare-cr", "Transfer-Encoding: chunked\r\n", b"5;a=\rb\r\nhello\r\n0\r\n\r\n",
     (400,)),
    ("chunk-lf-lines", "Transfer-Encoding: chunked\r\n", b"5\nhello\n0\n\n", (400,)),
    ("chunk-data-lf-footer", "Transfer-Encoding: chunked\r\n", b"5\r\nhello\n0\r\n\r\n", (400,)),
    ("chunk-data-longer", "Transfer-Encoding: chunked\r\n", b"3\r\nhello\r\n0\r\n\r\n", (400,)),
    ("chunk-trailer-bad-line", "Transfer-Encoding: chunked\r\n",
     b"%x\r\n%s\r\n0\r\nnonsense\r\n\r\n" % (N, BODY), (400,)),
    ("chunk-trailer-nul", "Transfer-Encoding: chunked\r\n",
     b"%x\r\n%s\r\n0\r\nX: a\x00b\r\n\r\n" % (N, BODY), (400,)),
    ("chunk-trailer-too-long", "Transfer-Encoding: chunked\r\n",
     b"%x\r\n%s\r\n0\r\nX: %s\r\n\r\n" % (N, BODY, b"t" * (MAX_HEAD + 10)), (400, 413, 431)),
    ("chunk-ext-too-long", "Transfer-Encoding: chunked\r\n",
     b"%x;%s\r\n%s\r\n0\r\n\r\n" % (N, b"e" * (MAX_HEAD + 10), BODY), (400, 413, 431)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "framing", "payload", "statuses"), REFUSED, ids=[c[0] for c in REFUSED]
)
def test_framing_a_proxy_could_read_otherwise_is_refused_and_closes(
    gw: Gateway, up: ScriptedUpstream, name: str, framing: str, payload: bytes,
    statuses: tuple[int, ...],
) -> None:  # fmt: skip
    """RFC 9112 6.1, 6.3, 7.1 and 11.2, the cases the battery did not list: commas, NUL, NBSP,
    CR and LF where CRLF belongs, folding, digits ``int`` takes and the grammar does not, chunk
    lines a lenient proxy reads otherwise, trailers and extensions past the bound. Each is
    refused with its status and a close, and the request pipelined behind it (smuggled) never
    reaches the upstream."""
    version = "1.0" if name.endswith("http10") else "1.1"
    canary = tag("canary")
    got, closed, raw = one(gw, _framed(framing, payload, version) + canary_post(canary), close=True)
    assert got, raw[:300]
    assert got[0].status in statuses, got
    assert got[0].reason
    assert closed
    time.sleep(0.3)
    assert not up.seen(canary), "a request smuggled behind a refused one reached the upstream"
    healthy(gw)


ACCEPTED = [
    ("cl-twice-agree", f"Content-Length: {N}\r\nContent-Length: {N}\r\n", BODY),
    ("cl-list-agree", f"Content-Length: {N}, {N}\r\n", BODY),
    ("cl-20-digits", f"Content-Length: {N:020d}\r\n", BODY),
    ("te-upper", "Transfer-Encoding: CHUNKED\r\n", _CHUNKED),
    ("te-tabs", "Transfer-Encoding:\tchunked\t\r\n", _CHUNKED),
    ("chunk-size-upper-20", "Transfer-Encoding: chunked\r\n",
     b"%020X\r\n%s\r\n0\r\n\r\n" % (N, BODY)),
    ("chunk-ext-blank-before-semicolon", "Transfer-Encoding: chunked\r\n",
     b"%x \t;a=b\r\n%s\r\n0\r\n\r\n" % (N, BODY)),
    ("trailer-with-framing-fields", "Transfer-Encoding: chunked\r\n",
     b"%x\r\n%s\r\n0\r\nContent-Length: 999\r\nTransfer-Encoding: gzip\r\n\r\n" % (N, BODY)),
    ("trailer-lf-lines", "Transfer-Encoding: chunked\r\n",
     b"%x\r\n%s\r\n0\r\nX: a\nY: b\n\n" % (N, BODY)),
]  # fmt: skip


@pytest.mark.parametrize(("name", "framing", "payload"), ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_framing_that_reads_one_way_only_is_served_and_the_next_request_too(
    gw: Gateway, up: ScriptedUpstream, name: str, framing: str, payload: bytes
) -> None:
    """What RFC 9112 allows and reads one way only (equal lengths, the coding in any case, a
    trailer that names framing fields, which mean nothing there) is served; the request
    pipelined behind it is read where the body ended: answered, and seen upstream once."""
    canary = tag("canary")
    got, _, raw = one(gw, _framed(framing, payload) + canary_post(canary), count=2, seconds=20)
    assert [x.status for x in got] == [200, 200], (got, raw[:300])
    assert openai_result(got[0].body).text == OK_TEXT
    assert openai_result(got[1].body).text == OK_TEXT
    assert len(up.seen(canary)) == 1
    healthy(gw)


def test_a_chunk_of_2_to_the_80_is_refused_and_what_follows_is_never_a_request(
    gw: Gateway, up: ScriptedUpstream
) -> None:
    """A chunk size of 20 hex digits is legal and means more than ``--max-body``: the body is
    refused (413, or 408 when the client stops sending), and the bytes after it, a request to a
    lenient reader, are body to the gateway: never seen upstream."""
    canary = tag("canary")
    data = _framed("Transfer-Encoding: chunked\r\n", b"ffffffffffffffffffff\r\n" + BODY)
    got, closed, raw = one(gw, data + canary_post(canary), close=True, seconds=20)
    assert got, raw[:300]
    assert got[0].status in (408, 413), got
    assert closed
    assert not up.seen(canary)
    healthy(gw)


# ================================================================================================
# 3. HTTP/1.0, Expect: 100-continue, HEAD, Upgrade
# ================================================================================================


def test_http_1_0_with_transfer_encoding_closes_after_its_answer(
    gw: Gateway, up: ScriptedUpstream
) -> None:
    """RFC 9112 6.1: an HTTP/1.0 message with Transfer-Encoding "MUST be treated as if the
    framing is faulty ... and close the connection after processing the message": a 400
    (attack 71 F3: it was read as chunked and served), and nothing of it goes upstream."""
    canary = tag("canary")
    data = _framed("Transfer-Encoding: chunked\r\n", _CHUNKED, "1.0") + canary_post(canary)
    got, closed, raw = one(gw, data, close=True)
    assert got, raw[:300]
    assert got[0].status == 400, got
    assert b"HTTP/1.0 request may not carry Transfer-Encoding" in got[0].body
    assert closed
    assert len([x for x in got if x.status >= 200]) == 1, got
    time.sleep(0.3)
    assert not up.seen(canary)
    healthy(gw)


def test_http_1_0_expect_100_continue_is_ignored(gw: Gateway) -> None:
    """RFC 9110 10.1.1: "A server that receives a 100-continue expectation in an HTTP/1.0
    request MUST ignore that expectation": no ``100 Continue`` to an HTTP/1.0 client, and its
    body, sent after a wait, is served."""
    body = openai_body(tag())
    head = post(b"", version="1.0", extra="Expect: 100-continue\r\n").replace(
        b"Content-Length: 0", b"Content-Length: %d" % len(body)
    )
    with Raw(gw) as r:
        r.send(head)
        r.read(1.0)
        assert not r.got.startswith(b"HTTP/1.1 100"), r.got[:100]
        r.send(body)
        r.read(15)
        got = responses(r.got)
    assert [x.status for x in got] == [200], got
    assert openai_result(got[0].body).text == OK_TEXT
    healthy(gw)


def test_http_1_0_head_is_a_head_alone_and_a_close(gw: Gateway) -> None:
    got, closed, raw = one(gw, get(method="HEAD", version="1.0"), close=True, heads=(True,))
    assert [x.status for x in got] == [200], raw[:300]
    assert closed
    assert raw.endswith(b"\r\n\r\n"), raw  # no body after the head
    healthy(gw)


def test_expect_100_continue_then_no_body_is_a_408_and_gives_everything_back(
    gw: Gateway,
) -> None:
    """A client that asks ``100 Continue`` and then sends nothing: ``100``, then 408 within
    ``--body-timeout`` (2 s), the close, and no slot or budget left held."""
    head = post(b"", extra="Expect: 100-continue\r\n").replace(
        b"Content-Length: 0", b"Content-Length: 5000"
    )
    got, closed, raw = one(gw, head, close=True, seconds=20)
    assert [x.status for x in got] == [100, 408], raw[:300]
    assert closed
    healthy(gw)


@pytest.mark.parametrize("how", ["chunked", "twice", "body-at-once"])
def test_expect_100_continue_in_other_shapes(gw: Gateway, how: str) -> None:
    """A chunked body after ``100``, the expectation in two fields, a body sent without
    waiting: each served whole (a ``100`` first or not)."""
    body = openai_body(tag())
    if how == "chunked":
        data = [chunked(body, head="Expect: 100-continue\r\n")]
        head_end = data[0].index(b"\r\n\r\n") + 4
        data = [data[0][:head_end], data[0][head_end:]]
    elif how == "twice":
        head = post(b"", extra="Expect: 100-continue\r\nExpect: 100-continue\r\n")
        data = [head.replace(b"Content-Length: 0", b"Content-Length: %d" % len(body)), body]
    else:
        data = [post(body, extra="Expect: 100-continue\r\n")]
    got, _, raw = one(gw, data, pause=0.5, seconds=20)
    final = [x for x in got if x.status >= 200]
    assert [x.status for x in final] == [200], raw[:300]
    assert all(x.status == 100 for x in got if x.status < 200)
    assert openai_result(final[0].body).text == OK_TEXT
    healthy(gw)


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("h2c-on-post", post(openai_body(), extra="Connection: Upgrade, HTTP2-Settings\r\n"
         "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n")),
        ("websocket-on-get", get(extra="Connection: Upgrade\r\nUpgrade: websocket\r\n"
         "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n")),
    ],
)  # fmt: skip
def test_an_upgrade_is_never_switched_to(gw: Gateway, name: str, data: bytes) -> None:
    """h2c and WebSocket upgrades (the way to tunnel past a proxy's rules): the gateway never
    answers 101; it serves the request as HTTP/1.1, and what follows is read as HTTP/1.1."""
    got, _, raw = one(gw, data + G, count=2)
    assert [x.status for x in got] == [200, 200], raw[:300]
    assert b" 101 " not in raw
    healthy(gw)


# ================================================================================================
# 4. Pipelining and keep-alive
# ================================================================================================


def test_pipelined_requests_of_every_framing_are_answered_in_order(gw: Gateway) -> None:
    """A HEAD, a chunked POST with a trailer, a POST with a 10 KiB body (a pipelined request
    with its body stays within what may wait while an answer streams), an LLM-Stream POST, a
    GET: in one write, answered in order."""
    big = openai_body(tag(), padding="p" * 10000)
    data = (
        get(method="HEAD")
        + chunked(openai_body(tag()), extra=b"X-Trailer: 1\r\n")
        + post(big)
        + post(llm_body(tag()), kind=LLM)
        + get("/v1/models")
    )
    got, _, raw = one(gw, data, count=5, heads=(True,), seconds=30)
    assert [x.status for x in got] == [200] * 5, (got, raw[:300])
    assert got[0].body == b""
    assert openai_result(got[1].body).text == OK_TEXT
    assert openai_result(got[2].body).text == OK_TEXT
    assert llm_result(got[3].body).complete
    assert json.loads(got[4].body)["data"]
    healthy(gw)


def test_thousands_of_pipelined_health_checks_in_one_write(gw: Gateway) -> None:
    """Attack 26's find, fixed this stop: 3,000 pipelined `GET /healthz` in one write (126 KB):
    `GatewaySession._pump` answers a local request and calls `_next_cycle`, which calls
    `_pump` for the next pipelined one: one recursion per request read at once. Past about
    490 in one read, RecursionError: the session raises, `_Client.fail` logs 'client
    connection failed' with a traceback (trio: in an ExceptionGroup) and aborts the
    connection; the client gets not one of its answers. Both backends. It should answer them
    all in order (a loop, not a recursion), or bound how many it takes at once. Since attack
    36 (F1), a connection makes at most ``--max-requests`` (100): the last answer closes it,
    and what was pipelined after it is not read."""
    limit = GatewayConfig(upstream=Endpoint.parse("http://127.0.0.1:1")).max_requests
    with Raw(gw) as r:
        r.send(G * 3000)
        r.read(30, until=lambda got: got.count(HEALTHY) >= limit)
        answered = r.got.count(HEALTHY)
        closing = r.got.count(b"Connection: close\r\n")
        assert r.closed_by_peer()
    bad = [line for line in gw.log_since_mark().splitlines() if BAD_LOG.search(line)]
    assert (answered, closing) == (limit, 1), (answered, bad[:3])
    assert not bad, bad[:3]
    healthy(gw)


def test_pipelined_health_checks_then_a_half_close_end_the_connection(gw: Gateway) -> None:
    """Attack 36, F1: the gateway answers pipelined requests a few at a time (`PIPELINED`),
    not reading the client while they wait; a client that closes its side while some still
    wait (or is gone: a server cannot tell) is answered no more, and its connection ends
    (review 36: a gone client's session answered on and was never closed, holding its
    connection slot). Both servers."""
    import socket

    with Raw(gw) as r:
        r.send(G * 400)
        r.sock.shutdown(socket.SHUT_WR)
        assert r.closed_by_peer()
        assert 1 <= r.got.count(HEALTHY) <= 100, r.got.count(HEALTHY)  # (reads wait too)
    healthy(gw)  # (its own connection is the one the metrics count)
    assert wait_until(lambda: gw.metrics()["svir_gateway_connections"] <= 1, 20), gw.metrics()


def test_sans_io_a_thousand_pipelined_health_checks_do_not_recurse() -> None:
    """Attack 26's find, fixed this stop: Sans-IO: 1,000 pipelined `GET /healthz` in one
    `client_data` raise RecursionError out of `GatewaySession` (its Rule 2: it raises only
    for its own bugs; this is one)."""
    out, _ = feed([G * 1000], max_requests=1000)
    assert out.count(HEALTHY) == 1000


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_client_that_pipelines_and_never_reads_is_bounded(
    up: ScriptedUpstream, backend: str
) -> None:
    """Attack 26's find, fixed this stop: A client that pipelines `GET /metrics` (36 of them a
    write, each padded to 740 bytes so that no read recurses) and never reads: every answer
    (1.4 KB) is written to its socket buffer, and the gateway keeps reading the next
    requests while the client is full (`client_paused` pauses the upstream, never the
    client's reads). The buffer grows until --send-timeout: here the client sends its 64 MiB
    without ever blocking and RSS grows +111 MB (asyncio), +131 MB (trio); over 20 s at the
    default --send-timeout 30, 110 MB sent and RSS +190 MB (asyncio), 215 MB and +400 MB
    (trio). Several such clients exhaust memory. It should stop reading a client whose
    answers it cannot write (nginx does not read the next request before the last answer is
    sent), so that what it holds is bounded."""
    req = (b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"a" * 700 + b"\r\n\r\n") * 36
    with gateway(up.base, backend, send_timeout="120") as g:
        before = g.rss_mb()
        peak = before
        sent = 0
        with Raw(g, rcvbuf=4096) as r:
            r.sock.settimeout(5)
            deadline = time.monotonic() + 90
            while sent < 64 * 1024 * 1024 and time.monotonic() < deadline:
                try:
                    r.sock.sendall(req)
                except TimeoutError:  # the gateway stopped reading: bounded
                    break
                except OSError:
                    break
                sent += len(req)
                if sent % (1024 * 1024) < len(req):
                    peak = max(peak, g.rss_mb())
            peak = max(peak, g.rss_mb())
        assert g.alive()
        grew = peak - before
    said = f"sent {sent / 1e6:.0f} MB, RSS +{grew:.0f} MB"
    assert sent < 24 * 1024 * 1024, said  # the kernel's buffers hold a few MB at most
    assert grew < 64, said


def _split_backlog_case() -> tuple[bytes, int]:
    first = post(openai_body(tag()))
    second = post(openai_body(tag(), padding="p" * 20000))  # a pipelined POST over 16 KiB
    return first + second, len(first)


def test_sans_io_a_pipelined_request_over_the_backlog_bound_has_one_verdict() -> None:
    """Attack 26's find, fixed this stop: Sans-IO, Rule 5's backlog bound: a POST, then a
    pipelined POST of 20 KiB. In one `client_data` the second waits in the buffer (no
    close); the same bytes cut after the first request's head and body (the second arriving
    while the first is upstream) make `client_data` see a backlog over max_head_size and
    cancel: Close, and the first request's upstream request is cancelled with no answer. The
    verdict depends on how the bytes were split; it should not (check the backlog after
    `_pump` too, or let a pipelined request's body wait as its head does)."""
    data, cut = _split_backlog_case()
    assert feed([data]) == feed([data[:cut], data[cut:]])


def test_a_pipelined_post_over_16_kib_does_not_cut_the_answer_before_it(
    gw: Gateway, up: ScriptedUpstream
) -> None:
    """Attack 26's find, fixed this stop: The same on the real process: a stream asked
    (upstream answers after 1 s), then 0.3 s later a pipelined POST with a 20 KiB body on
    the same connection: the gateway closes the connection and cancels the first request,
    which gets no answer at all; the same two requests in one write (one read) are both
    answered. The first request's answer should come whole either way (and the second be
    answered or refused with a status)."""

    def late(conn: _ScriptedConn, seen: Seen) -> bool:
        conn.body(seen)
        conn.wait_gone(1.0)
        conn.send(ok_stream())
        return True

    rid = up.on(tag("late"), late)
    first = post(openai_body(rid))
    second = post(openai_body(tag(), padding="p" * 20000))
    got, _, raw = one(gw, [first, second], pause=0.3, count=2, seconds=20)
    assert got, f"no answer at all to the first request: {raw[:200]!r}"
    assert got[0].status == 200, got
    assert got[0].complete, got
    assert openai_result(got[0].body).text == OK_TEXT
    healthy(gw)


@pytest.mark.parametrize("blank", [b"\r\n", b"\n"], ids=["crlf", "lf"])
def test_an_empty_line_between_pipelined_requests_is_ignored(gw: Gateway, blank: bytes) -> None:
    """Attack 26's find, fixed this stop: RFC 9112 2.2: a server "SHOULD ignore at least one
    empty line (CRLF) received prior to the request-line" (RFC 2616 4.1: clients that add a
    CRLF after a POST body). A GET, a CRLF, a GET on one connection: the second GET is never
    answered; the gateway answers the CRLF itself, an unasked `400 no request line` and a
    close, which a keep-alive client reads as the answer to its next request. (h11 refused
    it too.)"""
    got, _, raw = one(gw, G + blank + G, count=2, seconds=6)
    assert [x.status for x in got] == [200, 200], raw[-300:]


GET_WITH_BODY = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 3\r\n\r\n"


def test_sans_io_a_get_with_a_body_has_one_verdict_however_split() -> None:
    """Attack 26's find, fixed this stop: A `GET /healthz` with a 3-byte body, then a pipelined
    `GET /healthz`. In one read both are answered and the connection kept. With the body in
    a later read, the local answer goes out at once, before the body was read (with no
    `Connection: close` in it), then `_next_cycle` finds the connection not reusable (the
    body is still to come) and closes: the second request is never answered, and a keep-
    alive client's next request races a close nothing announced. The verdict depends on the
    split; it should read (and drop) the body, then go on, or say `Connection: close` in the
    answer it closes after."""
    data = GET_WITH_BODY + b"abc" + G
    assert feed([data[: len(GET_WITH_BODY)], data[len(GET_WITH_BODY) :]]) == feed([data])


def test_a_get_whose_body_comes_later_keeps_the_connection(gw: Gateway) -> None:
    """Attack 26's find, fixed this stop: A `GET /healthz` with a 3-byte body, then a pipelined
    `GET /healthz`. In one read both are answered and the connection kept. With the body in
    a later read, the local answer goes out at once, before the body was read (with no
    `Connection: close` in it), then `_next_cycle` finds the connection not reusable (the
    body is still to come) and closes: the second request is never answered, and a keep-
    alive client's next request races a close nothing announced. The verdict depends on the
    split; it should read (and drop) the body, then go on, or say `Connection: close` in the
    answer it closes after."""
    got, _, raw = one(gw, [GET_WITH_BODY, b"abc" + G], pause=0.3, count=2, seconds=6)
    assert [x.status for x in got] == [200, 200], raw[-300:]


# ================================================================================================
# 5. Half-close, resets at every point, clients that do not read
# ================================================================================================


def test_a_client_that_half_closes_after_a_get_gets_its_answer(gw: Gateway) -> None:
    with Raw(gw) as r:
        r.send(G)
        r.sock.shutdown(socket.SHUT_WR)
        r.read(10)
        got = responses(r.got)
        assert r.eof
    assert [x.status for x in got] == [200], got
    healthy(gw)


@pytest.mark.parametrize(
    "data",
    [b"GET /healthz HTTP/1.1\r\nHost: 12", post(b"{" * 500)[:-490]],
    ids=["mid-head", "mid-body"],
)
def test_a_client_that_half_closes_mid_request_gets_a_400(gw: Gateway, data: bytes) -> None:
    """The client's FIN inside a head or a body: 400 (the request cannot be whole), the close,
    nothing held."""
    with Raw(gw) as r:
        r.send(data)
        r.sock.shutdown(socket.SHUT_WR)
        r.read(10)
        got = responses(r.got)
        assert r.eof
    assert [x.status for x in got] == [400], got
    healthy(gw)


def _reset(sock: socket.socket) -> None:
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


@pytest.mark.parametrize(
    "point",
    ["mid-head", "after-head", "mid-held-body", "mid-passed-body", "mid-chunk", "mid-trailer",
     "after-expect", "mid-pipelined-head"],
)  # fmt: skip
def test_a_reset_at_every_point_of_a_request_gives_everything_back(
    gw: Gateway, up: ScriptedUpstream, point: str
) -> None:
    """A client resets (RST) at each point of its request, twenty times: nothing stays held,
    an upstream request already under way is cancelled, the process serves on."""
    rids = []
    for _ in range(20):
        rid = tag("stall-forever" if point == "mid-pipelined-head" else "h1")
        body = openai_body(rid)
        big = openai_body(rid, padding="p" * 200_000)  # passed through, not held
        data = {
            "mid-head": post(body)[:40],
            "after-head": post(body)[: -len(body)],
            "mid-held-body": post(body)[:-10],
            "mid-passed-body": post(big)[:-1000],
            "mid-chunk": chunked(body)[:-20],
            "mid-trailer": chunked(body, extra=b"X-Long: " + b"t" * 500)[:-100],
            "after-expect": post(body, extra="Expect: 100-continue\r\n")[: -len(body)],
            "mid-pipelined-head": post(body) + G[:20],
        }[point]
        with Raw(gw) as r:
            r.send(data)
            r.read(0.1)
            _reset(r.sock)
        if point in ("mid-passed-body", "mid-pipelined-head"):
            rids.append(rid)
    for rid in rids:
        for seen in up.seen(rid):
            assert seen.gone.wait(20), "an upstream request outlived its client's reset"
    nothing_held(gw)
    healthy(gw)


def test_a_reset_while_the_answer_waits_for_a_full_socket(
    gw: Gateway, up: ScriptedUpstream
) -> None:
    """A client with a 4 KiB receive buffer asks for a flood and reads nothing: the gateway's
    writes fill its socket (asyncio: ``pause_writing``; trio: a send that does not finish); then
    the client resets. The upstream request is cancelled, nothing is held, and the write that
    was waiting fails quietly (no traceback)."""
    for _ in range(3):
        rid = tag("flood:1000000")
        with Raw(gw, rcvbuf=4096) as r:
            r.send(post(openai_body(rid)))
            seen = up.find(rid)
            time.sleep(1.5)  # the gateway's side fills up
            _reset(r.sock)
        assert seen.gone.wait(20), "the upstream request outlived its client"
    nothing_held(gw)
    healthy(gw)


def test_a_client_that_reads_nothing_of_a_large_relayed_listing(
    gw: Gateway, up: ScriptedUpstream
) -> None:
    """`GET /v1/models` answered with 8 MB (relayed as it comes) to a client that reads
    nothing: ``--send-timeout`` (3 s) ends it, the upstream connection is closed, the gateway's
    memory does not hold the listing."""
    listing = json.dumps({"object": "list", "data": [{"id": "m" * 1000}] * 8000}).encode()

    def big(conn: _ScriptedConn, seen: Seen) -> bool:
        conn.send(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
            % len(listing)
        )
        for i in range(0, len(listing), 65536):
            conn.send(listing[i : i + 65536])
        return True

    rid = up.on(tag("big-listing"), big)
    before = gw.rss_mb()
    with Raw(gw, rcvbuf=4096) as r:
        r.send(get("/v1/models", extra=f"X-Request-Id: {rid}\r\n"))
        seen = up.find(rid)
        assert seen.gone.wait(30), "the upstream connection of a client that reads nothing stayed"
    assert gw.rss_mb() - before < 32, (before, gw.rss_mb())
    healthy(gw)


# ================================================================================================
# 6. The listener: descriptors, connect floods
# ================================================================================================


@pytest.mark.parametrize("backend", BACKENDS)
def test_out_of_descriptors_with_resets_waiting_in_the_backlog(
    up: ScriptedUpstream, backend: str
) -> None:
    """``ulimit -n`` 64: idle connections take every descriptor (accepting pauses), then 100
    more connect, each sends a request and resets while it waits in the backlog. When the idle
    ones close, the listener resumes, accepts connections already reset (a read that fails at
    once, an accept that fails), and serves on."""
    with gateway(up.base, backend, nofile=64, head_timeout="30", idle_timeout="30") as g:
        idle = []
        try:
            for _ in range(80):
                try:
                    idle.append(socket.create_connection(("127.0.0.1", g.port), timeout=5))
                except OSError:
                    break
            time.sleep(1.0)
            for _ in range(100):
                try:
                    s = socket.create_connection(("127.0.0.1", g.port), timeout=5)
                except OSError:
                    continue
                try:
                    s.sendall(post(openai_body(tag())))
                finally:
                    _reset(s)
            assert g.alive()
        finally:
            for s in idle:
                s.close()
        assert wait_until(lambda: _health(g) == 200, 30, every=0.5), "never served again"
        assert wait_until(lambda: g.metrics()["svir_gateway_connections"] <= 1, 30)
        healthy(g)


def _health(g: Gateway) -> int:
    try:
        got, _, _ = one(g, G, seconds=5)
    except OSError:
        return 0
    return got[0].status if got else 0


def test_a_connect_flood_of_connections_that_leave_at_once(gw: Gateway) -> None:
    """2,000 connections that connect and close (half with a FIN, half with a reset, some after
    a byte of a head): none is held afterwards (nor its descriptor), and the process serves
    on."""
    fds = gw.fds()
    for i in range(2000):
        try:
            s = socket.create_connection(("127.0.0.1", gw.port), timeout=5)
        except OSError:
            time.sleep(0.05)
            continue
        if i % 3 == 0:
            s.sendall(b"P")
        if i % 2:
            _reset(s)
        else:
            s.close()
    assert wait_until(lambda: gw.metrics()["svir_gateway_connections"] <= 2, 30), gw.metrics()
    assert wait_until(lambda: gw.fds() <= fds + 4, 30), (fds, gw.fds())
    healthy(gw)


def test_a_request_read_in_the_turn_that_accepts_it_then_reset(gw: Gateway) -> None:
    """The asyncio listener reads a connection's first bytes in the turn that accepts it. A
    client that sends a whole request and resets before the gateway accepts (a busy accept
    queue: 200 at once): accepted reset, read fails, nothing held, no descriptor left."""
    fds = gw.fds()
    socks = []
    for _ in range(200):
        s = socket.socket()
        s.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            s.connect(("127.0.0.1", gw.port))
        socks.append(s)
    time.sleep(0.2)
    for s in socks:
        try:
            s.setblocking(True)
            s.settimeout(2)
            s.sendall(G)
        except OSError:
            pass
        _reset(s)
    assert wait_until(lambda: gw.metrics()["svir_gateway_connections"] <= 2, 30), gw.metrics()
    assert wait_until(lambda: gw.fds() <= fds + 4, 30), (fds, gw.fds())
    healthy(gw)


# ================================================================================================
# 7. The upstream's answer: status lines, heads, 1xx, the bound
# ================================================================================================


def ask(
    gw: Gateway, rid: str, *, stream: bool = False, llm: bool = False, seconds: float = 30.0
) -> tuple[Any, bytes]:
    """One chat request on a new connection (non-stream OpenAI unless said): its answer and
    the raw bytes."""
    if llm:
        data = post(llm_body(rid), kind=LLM)
    else:
        data = post(openai_body(rid, stream=stream))
    got, _, raw = one(gw, data, seconds=seconds)
    assert got, raw[:300]
    return got[-1], raw


def models(gw: Gateway, rid: str, *, method: str = "GET") -> tuple[Any, bytes]:
    got, _, raw = one(
        gw, get("/v1/models", method=method, extra=f"X-Request-Id: {rid}\r\n"),
        heads=(method == "HEAD",), seconds=20,
    )  # fmt: skip
    assert got, raw[:300]
    return got[-1], raw


def failed_in_openai_shape(r: Any, status: int = 502) -> None:
    assert r.status == status, r
    assert r.complete, r
    error = json.loads(r.body)["error"]
    assert error["message"], error


def answers(data: bytes, *, slowly: bool = False, keep: bool = True) -> Any:
    """A handler: read the body, then ``data`` (whole, or a byte a write with ``slowly``)."""

    def handler(conn: _ScriptedConn, seen: Seen) -> bool:
        conn.body(seen)
        if slowly:  # a byte a write (64 for a long head: within the 4 s of --timeout)
            conn.send_slowly(data, size=1 if len(data) < 1000 else 64, pause=0.001)
        else:
            conn.send(data)
        if not keep:
            conn.wait_gone(10)
        return keep

    return handler


BAD_HEADS = [
    ("no-space-before-reason", b"HTTP/1.1 200OK\r\n\r\n"),
    ("two-digit-status", b"HTTP/1.1 20 OK\r\n\r\n"),
    ("four-digit-status", b"HTTP/1.1 2000 OK\r\n\r\n"),
    ("two-spaces", b"HTTP/1.1  200 OK\r\n\r\n"),
    ("lower-case-version", b"http/1.1 200 OK\r\n\r\n"),
    ("nul-in-reason", b"HTTP/1.1 200 O\x00K\r\n\r\n"),
    ("icy", b"ICY 200 OK\r\n\r\n"),
    ("http2-version", b"HTTP/2 200\r\n\r\n"),
    ("status-below-100", b"HTTP/1.1 099 Low\r\n\r\n"),
    ("space-first", b" HTTP/1.1 200 OK\r\n\r\n"),
    ("blank-line-first", b"\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"),
    ("space-in-name", b"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n"),
    ("bare-cr-in-value", b"HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n"),
    ("empty-name", b"HTTP/1.1 200 OK\r\n: x\r\n\r\n"),
    ("folded-first-line", b"HTTP/1.1 200 OK\r\n folded\r\n\r\n"),
    ("lengths-differ", b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello"),
    ("length-negative", b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"),
    ("coding-gzip", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n"),
    ("coding-twice", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
     b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
    ("both-framings", b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
     b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"),
    ("head-over-the-bound", b"HTTP/1.1 200 OK\r\nX-Pad: " + b"a" * MAX_HEAD + b"\r\n\r\n"),
    ("head-never-ends", b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"),
    ("101", b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n"
     b"\x00\x00\x12\x04\x00\x00\x00\x00\x00"),
]  # fmt: skip


@pytest.mark.parametrize("slowly", [False, True], ids=["whole", "a-byte-a-write"])
@pytest.mark.parametrize(("name", "head"), BAD_HEADS, ids=[c[0] for c in BAD_HEADS])
def test_an_upstream_head_that_breaks_http_is_a_502_however_it_arrives(
    gw: Gateway, up: ScriptedUpstream, name: str, head: bytes, slowly: bool
) -> None:
    """What h11 refused from a server, ours refuses: a 502 in OpenAI's error shape for a
    non-stream request, the same whether the upstream wrote the head at once or a byte a
    write (the verdict does not depend on the split), then a close of that connection. A head
    that never ends is a stall: 504 at ``--timeout``."""
    rid = up.on(tag(name), answers(head, slowly=slowly, keep=False))
    r, raw = ask(gw, rid)
    failed_in_openai_shape(r, 504 if name == "head-never-ends" else 502)
    assert SMUGGLED.encode() not in raw
    healthy(gw)


ONE_XX = [
    ("100", b"HTTP/1.1 100 Continue\r\n\r\n"),
    ("102-then-103", b"HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 103 Early Hints\r\n"
     b"Link: </style.css>; rel=preload\r\n\r\n"),
    ("lf-only", b"HTTP/1.1 100 Continue\n\n"),
    ("ten", b"HTTP/1.1 103 Early Hints\r\nLink: <x>\r\n\r\n" * 10),
    ("1xx-with-length", b"HTTP/1.1 100 Continue\r\nContent-Length: 5\r\n\r\n"),
    ("big-1xx", b"HTTP/1.1 103 Early Hints\r\nX-Pad: " + b"a" * (MAX_HEAD - 60) + b"\r\n\r\n"),
]  # fmt: skip


@pytest.mark.parametrize("slowly", [False, True], ids=["whole", "a-byte-a-write"])
@pytest.mark.parametrize(("name", "interim"), ONE_XX, ids=[c[0] for c in ONE_XX])
def test_informational_answers_then_the_answer(
    gw: Gateway, up: ScriptedUpstream, name: str, interim: bytes, slowly: bool
) -> None:
    """RFC 9110 15.2: 1xx answers before the final one are skipped (a 1xx's Content-Length
    means nothing); the client gets the stream whole, in its dialect, and nothing of the 1xx."""
    if slowly and name == "big-1xx":
        pytest.skip("16 KiB a byte a write takes too long")
    rid = up.on(tag(name), answers(interim + ok_stream(), slowly=slowly))
    r, raw = ask(gw, rid, stream=True, seconds=40)
    assert r.status == 200, r
    assert openai_result(r.body).text == OK_TEXT
    assert b" 10" not in raw.split(b"\r\n", 1)[0], raw[:100]
    healthy(gw)


def test_informational_answers_forever_are_no_progress(gw: Gateway, up: ScriptedUpstream) -> None:
    """An upstream that sends ``102 Processing`` every 0.3 s and nothing else: 1xx are not
    progress, so ``--timeout`` (4 s) ends the request with a 504, and the connection is
    closed."""

    def forever(conn: _ScriptedConn, seen: Seen) -> bool:
        conn.body(seen)
        while True:
            conn.send(b"HTTP/1.1 102 Processing\r\n\r\n")
            conn.wait_gone(0.3)

    rid = up.on(tag("1xx-forever"), forever)
    r, _ = ask(gw, rid, seconds=40)
    failed_in_openai_shape(r, 504)
    assert up.find(rid).gone.wait(20)
    healthy(gw)


@pytest.mark.parametrize("slowly", [False, True], ids=["whole", "1k-a-write"])
@pytest.mark.parametrize("total", [MAX_HEAD - 1, MAX_HEAD, MAX_HEAD + 1])
def test_an_upstream_head_at_the_bound_has_one_verdict_however_it_arrives(
    gw: Gateway, up: ScriptedUpstream, total: int, slowly: bool
) -> None:
    """The upstream's head may take 16 KiB (its blank line included): one byte more is a 502,
    whole or 1 KiB a write."""
    start = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nX-Pad: "
        % (len(ok_json().split(b"\r\n\r\n", 1)[1]))
    )
    head = start + b"a" * (total - len(start) - 4) + b"\r\n\r\n"
    assert len(head) == total
    data = head + ok_json().split(b"\r\n\r\n", 1)[1]

    def handler(conn: _ScriptedConn, seen: Seen) -> bool:
        conn.body(seen)
        if slowly:
            conn.send_slowly(data, size=1024, pause=0.005)
        else:
            conn.send(data)
        return True

    rid = up.on(tag("head-bound"), handler)
    r, _ = ask(gw, rid)
    if total <= MAX_HEAD:
        assert r.status == 200, r
        assert json.loads(r.body)["choices"][0]["message"]["content"] == OK_TEXT
    else:
        failed_in_openai_shape(r)
    healthy(gw)


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("lf-only-head", ok_stream().split(b"\r\n\r\n", 1)[0].replace(b"\r\n", b"\n") + b"\n\n"
         + ok_stream().split(b"\r\n\r\n", 1)[1]),
        ("obs-fold-in-a-field", ok_stream().replace(b"Cache-Control: no-cache\r\n",
                                                    b"X-Folded: a\r\n b\r\n", 1)),
        ("chunk-extensions", b""),
        ("trailer", ok_stream()[: -len(b"\r\n")] + b"X-Trailer: 1\r\n\r\n"),
        ("close-delimited", ok_stream().replace(b"Transfer-Encoding: chunked",
                                                b"Connection: close")),
        ("http-1.0", b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"),
    ],
)  # fmt: skip
def test_an_odd_but_valid_upstream_answer_is_relayed_whole(
    gw: Gateway, up: ScriptedUpstream, name: str, data: bytes
) -> None:
    """LF line ends and a folded field (h11 took them from a server), chunk extensions and a
    trailer, a body delimited by the close (HTTP/1.1 and HTTP/1.0): the stream arrives whole."""
    from tests.gateway.hostile_upstream import OK_FIXTURE, events_of

    if name == "close-delimited" or name == "http-1.0":
        head = data.split(b"\r\n\r\n", 1)[0] + b"\r\n\r\n"
        data = head + b"".join(events_of(*OK_FIXTURE))
    if name == "chunk-extensions":
        events = events_of(*OK_FIXTURE)
        data = (
            ok_stream().split(b"\r\n\r\n", 1)[0]
            + b"\r\n\r\n"
            + b"".join(
                b'%x;ext=%d;q="a b"\r\n%s\r\n' % (len(e), i, e) for i, e in enumerate(events)
            )
            + b"0;last\r\n\r\n"
        )
    keep = name not in ("close-delimited", "http-1.0")

    def handler(conn: _ScriptedConn, seen: Seen) -> bool:
        conn.body(seen)
        conn.send(data)
        if not keep:
            conn.sock.shutdown(socket.SHUT_WR)
            conn.wait_gone(10)
        return keep

    rid = up.on(tag(name), handler)
    r, _ = ask(gw, rid, stream=True)
    assert r.status == 200, r
    assert r.complete, r
    result = openai_result(r.body)
    assert result.text == OK_TEXT
    assert result.complete
    healthy(gw)


@pytest.mark.parametrize("fault", ["no-id", "same-id", "no-name"])
def test_a_relay_ends_where_the_upstream_ended_when_its_calls_fail_the_checks(
    gw: Gateway, up: ScriptedUpstream, fault: str
) -> None:
    """Attack 29: a relayed stream whose tool calls fail the checks made at ``[DONE]`` (a call
    with no id, two with one, a call with no name) got the gateway's error chunk and a second
    ``[DONE]`` after the upstream's own. A relay is the upstream's answer as it came: nothing
    of the gateway's follows its marker."""
    ids = {"no-id": ("", "b"), "same-id": ("a", "a"), "no-name": ("a", "b")}[fault]
    names = ("f", "" if fault == "no-name" else "g")
    calls = [
        {
            "index": i,
            "id": ids[i],
            "type": "function",
            "function": {"name": names[i], "arguments": "{}"},
        }
        for i in (0, 1)
    ]
    events = [
        b"data: %s\n\n" % json.dumps(
            {"id": "c", "object": "chat.completion.chunk", "choices": [
                {"index": 0, "delta": delta, "finish_reason": finish}]}
        ).encode()
        for delta, finish in (({"tool_calls": calls}, None), ({}, "tool_calls"))
    ] + [b"data: [DONE]\n\n"]  # fmt: skip
    stream = SSE_HEAD + b"".join(chunk(e) for e in events) + b"0\r\n\r\n"
    rid = up.on(tag(fault), answers(stream))
    r, raw = ask(gw, rid, stream=True)
    assert r.status == 200, r
    assert r.complete, r
    assert r.body == b"".join(events), raw[-400:]
    healthy(gw)


@pytest.mark.parametrize("status", [400, 404, 429, 500, 503])
@pytest.mark.parametrize("stream", [False, True])
def test_an_error_whose_body_comes_after_its_head_is_relayed_whole(
    gw: Gateway, up: ScriptedUpstream, status: int, stream: bool
) -> None:
    """An error's head and its body in two writes (Python's http.server writes them so): the
    client gets the body its Content-Length promised, and the connection goes on. (Before,
    the exchange ended at the head: the SDKs saw a RemoteProtocolError, not the error.)"""
    body = b'{"error":{"message":"no such model","type":"invalid_request_error","code":null}}'
    head = b"HTTP/1.1 %d Nope\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (
        status,
        len(body),
    )

    def handler(conn: _ScriptedConn, seen: Seen) -> bool:
        conn.body(seen)
        conn.send(head)
        time.sleep(0.3)  # the gateway has read and relayed the head alone by now
        conn.send(body)
        return True

    rid = up.on(tag(f"error-{status}"), handler)
    data = post(openai_body(rid, stream=stream)) + get("/healthz")
    got, _, raw = one(gw, data, count=2)
    assert len(got) == 2, raw[:500]
    assert got[0].status == status, got[0]
    assert got[0].body == body, raw[:500]
    assert got[1].status == 200  # the connection went on
    healthy(gw)


def test_a_close_delimited_json_answer_is_relayed_whole(gw: Gateway, up: ScriptedUpstream) -> None:
    body = ok_json().split(b"\r\n\r\n", 1)[1]
    data = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n" + body

    def handler(conn: _ScriptedConn, seen: Seen) -> bool:
        conn.body(seen)
        conn.send(data)
        conn.sock.shutdown(socket.SHUT_WR)
        conn.wait_gone(10)
        return False

    rid = up.on(tag("close-json"), handler)
    r, _ = ask(gw, rid)
    assert r.status == 200, r
    assert json.loads(r.body)["choices"][0]["message"]["content"] == OK_TEXT
    healthy(gw)


@pytest.mark.parametrize("path", ["stream", "models"])
def test_obs_text_in_an_upstream_field_is_relayed_byte_for_byte(
    gw: Gateway, up: ScriptedUpstream, path: str
) -> None:
    """RFC 9110 5.5: a field value may carry obs-text (0x80-0xFF); a relayed field keeps its
    bytes as they came (not re-encoded to UTF-8, not dropped, not a failure)."""
    value = b"caf\xe9 \x80\xff\xa0end"
    base = ok_stream() if path == "stream" else ok_models()
    data = base.replace(b"\r\n", b"\r\nX-Vendor: " + value + b"\r\n", 1)
    rid = up.on(tag("obs-text"), answers(data))
    if path == "stream":
        r, raw = ask(gw, rid, stream=True)
    else:
        r, raw = models(gw, rid)
    assert r.status == 200, r
    head = raw.split(b"\r\n\r\n", 1)[0]
    assert b"\r\nx-vendor: " + value + b"\r\n" in head.lower() + b"\r\n", head
    healthy(gw)


# ================================================================================================
# 8. Kept-alive upstream connections: what follows an answer, 204/304, Rule 6
# ================================================================================================


def then_ok(gw: Gateway, *, kind: str) -> bytes:
    """The next request, of ``kind``, a plain one: it must get its own answer. Its body."""
    rid = tag("next")
    if kind == "stream":
        r, _ = ask(gw, rid, stream=True)
        assert r.status == 200, r
        assert openai_result(r.body).text == OK_TEXT, r.body[:300]
    elif kind == "json":
        r, _ = ask(gw, rid)
        assert r.status == 200, r
        assert json.loads(r.body)["choices"][0]["message"]["content"] == OK_TEXT
    else:
        r, _ = models(gw, rid)
        assert r.status == 200, r
        assert json.loads(r.body)["data"][0]["id"] == "smollm2-135m", r.body
    assert SMUGGLED.encode() not in r.body
    return r.body


SHORT_JSON = ok_json().replace(
    b"Content-Length: %d" % len(ok_json().split(b"\r\n\r\n", 1)[1]),
    b"Content-Length: %d" % (len(ok_json().split(b"\r\n\r\n", 1)[1]) - 10),
)
AFTER = [
    ("stream-then-fake-stream", "stream", ok_stream(), fake_stream()),
    ("stream-then-fake-json", "json", ok_stream(), fake_json()),
    ("json-then-fake", "json", ok_json(), fake_json()),
    ("json-longer-than-its-length", "json", SHORT_JSON, fake_json()),
    ("models-then-fake", "models", ok_models(), fake_json()),
    ("stream-then-crlf", "stream", ok_stream(), b"\r\n"),
    ("stream-then-half-a-head", "stream", ok_stream(), b"HTTP/1.1 200 OK\r\nContent-"),
]  # fmt: skip


@pytest.mark.parametrize("when", ["same-write", "while-pooled"])
@pytest.mark.parametrize(("name", "kind", "first", "extra"), AFTER, ids=[c[0] for c in AFTER])
def test_bytes_after_an_answer_never_reach_the_next_request(
    gw: Gateway, up: ScriptedUpstream, name: str, kind: str, first: bytes, extra: bytes,
    when: str,
) -> None:  # fmt: skip
    """An upstream writes a whole answer and then, on the kept-alive connection, a second
    answer nobody asked for (in the same write, or 0.3 s later while the connection waits in
    the pool), or junk, or a Content-Length 10 bytes short of its body: the requests that
    follow (which may take that connection) get their own answers, never the one slipped in
    (Rule 6: such a connection is treated as closed)."""

    def handler(conn: _ScriptedConn, seen: Seen) -> bool:
        conn.body(seen)
        if when == "same-write":
            conn.send(first + extra)
        else:
            conn.send(first)
            time.sleep(0.3)
            conn.send(extra)
        return True

    rid = up.on(tag(name), handler)
    if kind == "models":
        r, _ = models(gw, rid)
    else:
        r, _ = ask(gw, rid, stream=kind == "stream")
    assert r.status == 200, r  # (a length short of the body: its bytes, as the upstream framed)
    assert SMUGGLED.encode() not in r.body
    if when == "while-pooled":
        time.sleep(0.6)
    for _ in range(3):
        then_ok(gw, kind=kind)
    healthy(gw)


@pytest.mark.parametrize("status", [204, 304])
def test_a_204_or_304_with_a_body_leaves_nothing_for_the_next_request(
    gw: Gateway, up: ScriptedUpstream, status: int
) -> None:
    """RFC 9112 6.3: a 204 or 304 ends at its head, whatever its fields say; the bytes an
    upstream sends after it (a body it announced, a whole answer) are no answer to the next
    request. The client of the 204/304 gets its head alone."""
    fake = fake_json()
    data = b"HTTP/1.1 %d X\r\nContent-Length: %d\r\n\r\n" % (status, len(fake)) + fake
    rid = up.on(tag(f"s{status}"), answers(data))
    got, _, raw = one(gw, get("/v1/models", extra=f"X-Request-Id: {rid}\r\n") + G, count=2)
    assert [x.status for x in got] == [status, 200], raw[:500]
    assert got[0].body == b"", got
    assert got[1].body == HEALTHY
    for _ in range(3):
        then_ok(gw, kind="models")
    healthy(gw)


def test_a_relayed_204_carries_no_content_length(gw: Gateway, up: ScriptedUpstream) -> None:
    """Attack 26's find, fixed this stop: An upstream 204 with `Content-Length: 226` (a body it
    announced) is relayed to the client with that Content-Length. RFC 9110 8.6: "A server
    MUST NOT send a Content-Length header field in any response with a status code of ...
    204"; a client or proxy that trusts it reads the next 226 bytes (the next answer on the
    connection) as this one's body. It should drop Content-Length (and Transfer-Encoding)
    from a 1xx/204 answer it relays (a 304's may stay: it describes the selected
    representation)."""
    data = b"HTTP/1.1 204 No Content\r\nContent-Length: 226\r\n\r\n"
    rid = up.on(tag("s204"), answers(data))
    r, raw = models(gw, rid)
    assert r.status == 204, r
    assert r.header("content-length") is None, raw.split(b"\r\n\r\n")[0]


def test_answers_sent_before_the_request_are_the_answer_and_no_more(
    gw: Gateway, up: ScriptedUpstream
) -> None:
    """An upstream that writes two whole answers as soon as the request's head comes, before
    reading its body: the first is the answer; the second reaches nobody."""

    def eager(conn: _ScriptedConn, seen: Seen) -> bool:
        conn.send(ok_json() + fake_json())
        conn.body(seen)
        return True

    rid = up.on(tag("eager"), eager)
    r, _ = ask(gw, rid)
    assert r.status == 200, r
    assert json.loads(r.body)["choices"][0]["message"]["content"] == OK_TEXT
    for _ in range(3):
        then_ok(gw, kind="json")
    healthy(gw)


def _on_a_pooled_connection(
    gw: Gateway, up: ScriptedUpstream, handler: Any, *, llm: bool = False
) -> tuple[Any, list[Seen]]:
    """A plain request (its connection goes to the pool), then at once one answered by
    ``handler``, until that one came on a pooled connection (its first `Seen` has ``index``
    above 0): its answer and every `Seen` of it."""
    for _ in range(5):
        ask(gw, tag("warm"), stream=True)
        rid = up.on(tag("pooled"), handler)
        r, _ = ask(gw, rid, stream=True, llm=llm)
        seen = up.seen(rid)
        if seen and seen[0].index > 0:  # type: ignore[attr-defined]
            return r, seen
    raise AssertionError("the request never took a pooled connection")


def _closes_when_pooled(how: str) -> Any:
    def handler(conn: _ScriptedConn, seen: Seen) -> bool:
        conn.body(seen)
        if seen.index == 0 and how != "always":  # type: ignore[attr-defined]
            conn.send(ok_stream())
            return True
        if how == "rst":
            conn.reset()
            return False
        if how == "interim":
            conn.send(b"HTTP/1.1 100 Continue\r\n\r\n")
            time.sleep(0.1)
        conn.sock.shutdown(socket.SHUT_WR)
        conn.wait_gone(10)
        return False

    return handler


@pytest.mark.parametrize("llm", [False, True], ids=["openai", "llm-stream"])
@pytest.mark.parametrize("how", ["fin", "rst"])
def test_a_pooled_connection_closed_as_the_request_arrives_is_retried_once(
    gw: Gateway, up: ScriptedUpstream, how: str, llm: bool
) -> None:
    """Rule 6: the upstream reads the request on a kept-alive connection and closes it (FIN or
    reset) without a byte of answer: the request goes again, once, on a new connection, and
    the client gets its whole answer."""
    r, seen = _on_a_pooled_connection(gw, up, _closes_when_pooled(how), llm=llm)
    assert r.status == 200, r
    if llm:
        assert llm_result(r.body).text == OK_TEXT
    else:
        assert openai_result(r.body).text == OK_TEXT
    assert [s.index for s in seen] == [seen[0].index, 0], seen  # type: ignore[attr-defined]
    healthy(gw)


def test_a_retried_request_whose_new_connection_closes_too_is_a_failure(
    gw: Gateway, up: ScriptedUpstream
) -> None:
    """Once only: when the new connection closes without an answer too, the client gets a 502
    in its dialect; the upstream saw the request twice, never a third time."""
    r, seen = _on_a_pooled_connection(gw, up, _closes_when_pooled("always"))
    failed_in_openai_shape(r)
    time.sleep(0.5)
    assert len(up.seen(seen[0].rid)) == 2, up.seen(seen[0].rid)
    healthy(gw)


def test_a_pooled_connection_that_answered_100_then_closed_is_not_retried(
    gw: Gateway, up: ScriptedUpstream
) -> None:
    """A ``100 Continue`` is a byte of the answer: the upstream had the request. A close after
    it is a failure (502), and the request is not sent again."""
    r, seen = _on_a_pooled_connection(gw, up, _closes_when_pooled("interim"))
    failed_in_openai_shape(r)
    time.sleep(0.5)
    assert len(up.seen(seen[0].rid)) == 1
    healthy(gw)


def test_a_body_passed_through_never_takes_a_pooled_connection(
    gw: Gateway, up: ScriptedUpstream
) -> None:
    """Rule 6: a body streamed from its client cannot be sent again, so it always goes on a new
    connection (however many wait in the pool)."""
    for _ in range(3):
        ask(gw, tag("warm"), stream=True)
        rid = tag("big")
        got, _, raw = one(gw, post(openai_body(rid, padding="p" * 200_000)), seconds=30)
        assert got, raw[:300]
        assert got[0].status == 200, raw[:300]
        assert [s.index for s in up.seen(rid)] == [0]  # type: ignore[attr-defined]
    healthy(gw)


# ================================================================================================
# 9. Request targets relayed upstream
# ================================================================================================


TRAVERSALS = [
    "/v1/models/../../admin/keys",
    "/v1/models/x/../../../internal",
    "/v1/models/%2e%2e/%2e%2e/admin/keys",
    "/v1/models/..%2F..%2Fadmin%2Fkeys",
    "http://127.0.0.1/v1/models/../files",
    "/v1/models/..;/..;/admin",  # a servlet container drops ;params, then normalises
    "/v1/models/.;/x",
    "/v1/models/%2e%2e;x/admin",
]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_model_id_with_dot_segments_never_reaches_the_upstream(
    up: ScriptedUpstream, backend: str
) -> None:
    """Attack 26's find, fixed this stop: `GET /v1/models/{id}` is relayed with the id as it
    came, dot segments included: `GET /v1/models/../../admin/keys` reaches the upstream as
    that target (and `%2e%2e`, `..%2F`, and in absolute form), with the gateway's own
    upstream key in Authorization. An upstream (or a proxy before it) that normalizes the
    path (RFC 3986 5.2.4; nginx, most frameworks) serves /admin/keys, /files... with the
    gateway's credentials: any client of the gateway reaches every GET of the upstream's
    API, not just the model listing the gateway means to expose. It should refuse (404/400)
    an id with a `.`/`..` segment, a `/`, or a percent-encoded `.` or `/`, and never send it
    upstream."""
    with gateway(up.base, backend, upstream_key="sk-gateway-secret") as g:
        sent = []
        for target in TRAVERSALS:
            rid = tag("traversal")
            got, _, _ = one(g, get(target, extra=f"X-Request-Id: {rid}\r\n"), seconds=10)
            assert got, target
            sent += [(s.target, s.header("authorization")) for s in up.seen(rid)]
        assert sent == [], f"relayed upstream with the gateway's key: {sent}"


@pytest.mark.parametrize(
    "length",
    [
        "0",
        "00",
        "0000000000",
    ],
)
def test_a_content_length_of_zero_written_with_zeros_ends_the_answer_at_once(
    gw: Gateway, up: ScriptedUpstream, length: str
) -> None:
    """An upstream answer whose Content-Length is zero, in any number of digits: an empty body,
    ended at its head; the connection serves the next request at once."""
    data = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %s\r\n\r\n" % (
        length.encode()
    )
    rid = up.on(tag("zeros"), answers(data))
    got, _, raw = one(gw, get("/v1/models", extra=f"X-Request-Id: {rid}\r\n") + G, count=2)
    assert [x.status for x in got] == [200, 200], raw[:400]
    assert got[1].body == HEALTHY
    healthy(gw)


def test_sans_io_a_content_length_of_00_ends_the_body_at_its_head() -> None:
    """The same, on `ClientConnection` alone: ``0`` ends the body at the head; ``00`` did not
    (it waits for a byte of a body of none).

    Attack 26's find, fixed this stop: An upstream answer with `Content-Length: 00` (a zero
    of several digits: legal, 1*DIGIT) is not an empty body: `ClientConnection._read_head`
    compares the value's text with "0", takes the body as `length` framing with 0 bytes
    left, and `_read_body` then waits for a byte of it: the answer ends only when more bytes
    come (in the same read or not: the verdict depends on the split), the upstream closes
    (then an interruption: '0 bytes of its Content-Length missing'), or --timeout (300 s by
    default) passes. Until then the stream slot and the upstream connection are held; then
    the client connection is closed and the `GET /healthz` pipelined behind the listing is
    never answered. h11 read int(value). It should end the body at once, as for `0`.
    """
    from svir_proto.connection import ClientConnection
    from svir_proto.exchange import PassThrough

    ended = {}
    for length in (b"0", b"00"):
        conn = ClientConnection(Endpoint.parse("http://127.0.0.1:9"), keep_text=False)
        list(conn.send(PassThrough(content_length=0, method="GET", target="/models", relay=True)))
        conn.feed(b"HTTP/1.1 200 OK\r\nContent-Length: " + length + b"\r\n\r\n")
        ended[length] = conn.body_ended
    assert ended == {b"0": True, b"00": True}


def test_fields_the_upstreams_connection_field_names_are_not_relayed(
    gw: Gateway, up: ScriptedUpstream
) -> None:
    """Attack 26's find, fixed this stop: An upstream answer with `Connection: X-Hop, keep-
    alive` and `X-Hop: secret` is relayed with `x-hop: secret`: the gateway drops the fixed
    hop-by-hop names (Connection, Keep-Alive, TE...) but not the ones the upstream's
    Connection field names. RFC 9110 7.6.1: intermediaries "MUST ... remove any header or
    trailer field(s) from the message with the same name as the connection-option" (what an
    upstream meant for the hop to the gateway reaches the client). It should drop every
    field the Connection field names."""
    data = ok_models().replace(
        b"\r\n",
        b"\r\nConnection: X-Hop, keep-alive\r\nX-Hop: secret\r\nKeep-Alive: timeout=5\r\n",
        1,
    )
    rid = up.on(tag("hop"), answers(data))
    r, raw = models(gw, rid)
    assert r.status == 200, r
    head = raw.split(b"\r\n\r\n", 1)[0].lower()
    assert b"keep-alive:" not in head, head
    assert b"x-hop" not in head, head
