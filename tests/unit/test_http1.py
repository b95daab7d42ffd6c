"""`_http1` (heads read and written) and `ServerSide` (the server role's framing), case by case;
tests/property/test_http1_properties.py holds both to h11's verdicts and bytes at random."""

from __future__ import annotations

import pytest

from svir_proto import CallerProtocolError, ClientConnection, PeerProtocolError, ResponseStarted
from svir_proto._http1 import (
    BadHead,
    has_token,
    head_end,
    read_request,
    read_response,
    request_head,
    response_head,
)
from svir_proto.gateway._serverside import CLOSED, END, ServerSide
from svir_proto.openai import ChatRequest, Endpoint, UserMessage
from tests.helpers import finishes_linearly

EP = Endpoint.parse("http://example.test/v1")
CHAT = ChatRequest(model="m", messages=[UserMessage(content="hi")])


def test_both_lanes_read_a_head_alike() -> None:
    fast = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-A:  a b \r\n\r\n"
    slow = fast.replace(b"\r\n", b"\n")
    assert read_response(fast) == read_response(slow)
    assert read_response(fast).fields == [("content-type", "text/event-stream"), ("x-a", "a b")]


@pytest.mark.parametrize(
    ("head", "status"),
    [
        (b"HTTP/1.1 099 Low\r\n\r\n", 400),
        (b"\r\n\r\n", 400),
        (b"HTTP/1.1 200 OK\r\n folded\r\n\r\n", 400),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 5,6\r\n\r\n", 400),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n", 400),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
            501,
        ),
        (b"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", 400),
    ],
)
def test_bad_response_heads(head: bytes, status: int) -> None:
    with pytest.raises(BadHead) as caught:
        read_response(head)
    assert caught.value.status == status


def test_framing_fields_read_as_h11_gives_them() -> None:
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\nX-A: 1\r\nContent-Length: 5\r\n"
        b"Transfer-Encoding: Chunked\r\nX-B: 2\r\n\r\n"
    )
    assert read_response(head).fields == [
        ("content-length", "5"),
        ("x-a", "1"),
        ("transfer-encoding", "chunked"),
        ("x-b", "2"),
    ]


def test_request_heads_need_one_host_in_http_1_1() -> None:
    assert read_request(b"GET / HTTP/1.0\r\n\r\n").version == "1.0"
    folded = read_request(b"GET / HTTP/1.1\r\nHost: a\r\nX: b\r\n c\r\n\r\n")
    assert folded.folded
    assert folded.fields[-1] == ("x", "b c")
    for head in (b"GET / HTTP/1.1\r\n\r\n", b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"):
        with pytest.raises(BadHead, match="Host"):
            read_request(head)
    with pytest.raises(BadHead, match="request line"):
        read_request(b"GET /\r\nHost: a\r\n\r\n")


def test_the_blank_line_ends_the_head_however_the_lines_end() -> None:
    assert head_end(b"HTTP/1.1 200 OK\r\n\r\nbody") == 19
    assert head_end(b"HTTP/1.1 200 OK\n\nbody") == 17
    assert head_end(b"HTTP/1.1 200 OK\r\nX: y\r\n") == -1
    two = [("connection", "keep-alive"), ("connection", "Close")]
    assert has_token(two, dict(two), "connection", "close")
    one = [("connection", "keep-alive, Close")]
    assert has_token(one, dict(one), "connection", "close")
    assert not has_token(
        [("connection", "closed")], {"connection": "closed"}, "connection", "close"
    )


def test_written_heads_are_checked() -> None:
    assert request_head("GET", "/x", [("X-A", "b"), ("Host", "h")]) == (
        b"GET /x HTTP/1.1\r\nHost: h\r\nX-A: b\r\n\r\n"
    )
    for method, target, fields in [
        ("GET", "/a b", [("Host", "h")]),
        ("G T", "/", [("Host", "h")]),
        ("GET", "/", []),
        ("GET", "/", [("Host", "h"), ("X", " lead")]),
        ("GET", "/", [("Host", "h"), ("X", "caf\xe9")]),
        ("GET", "/", [("Host", "h"), ("Bad Name", "x")]),
    ]:
        with pytest.raises(ValueError, match=r"request line|Host|header"):
            request_head(method, target, fields)
    assert response_head(200, "OK", [("X", "caf\xe9")]) == b"HTTP/1.1 200 OK\r\nX: caf\xe9\r\n\r\n"
    with pytest.raises(ValueError, match="'X'"):
        response_head(200, "OK", [("X", "\u20ac")])


# -- ClientConnection on the edges of its own framing -------------------------------------------


def sent(conn: ClientConnection, **headers: str) -> None:
    b"".join(conn.send(CHAT, headers=headers or None))


def test_a_request_that_says_close_leaves_a_connection_that_is_not_reused() -> None:
    conn = ClientConnection(EP)
    sent(conn, Connection="close")
    conn.feed(b"HTTP/1.1 204 No Content\r\n\r\n")
    assert conn.body_ended
    assert not conn.reusable


def test_a_response_with_no_body_and_bytes_after_it_is_not_reused() -> None:
    conn = ClientConnection(EP)
    sent(conn)
    events = conn.feed(b"HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\nHTTP/1.1 2")
    assert isinstance(events[0], ResponseStarted)
    assert conn.body_ended
    assert not conn.reusable  # Rule 5: what follows is nobody's answer


def test_bytes_on_a_reused_connection_before_its_request_are_a_response_to_no_request() -> None:
    conn = ClientConnection(EP)
    sent(conn)
    conn.feed(b"HTTP/1.1 204 No Content\r\n\r\n")
    conn.start_next_cycle()
    with pytest.raises(PeerProtocolError, match="response to no request"):
        conn.feed(b"HTTP/1.1 2")


def test_a_101_nobody_asked_for_is_bad_http() -> None:
    conn = ClientConnection(EP)
    sent(conn)
    with pytest.raises(PeerProtocolError, match="101"):
        conn.feed(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n")


@pytest.mark.parametrize("version", [b"2.0", b"0.9", b"3.1"])
def test_a_status_line_of_another_major_version_is_bad_http(version: bytes) -> None:
    """Attack 49: ``HTTP/2.0 200 OK`` on an HTTP/1.1 connection was read as HTTP/1.1 and the
    connection kept (RFC 9112 2.3: HTTP/1.1 answers are 1.x; 0.9 had no status line)."""
    conn = ClientConnection(EP)
    sent(conn)
    with pytest.raises(PeerProtocolError, match=f"an HTTP/{version.decode()} status line"):
        conn.feed(b"HTTP/%s 200 OK\r\nContent-Length: 0\r\n\r\n" % version)
    conn = ClientConnection(EP)
    sent(conn)
    conn.feed(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n")  # (1.0 is one)
    assert conn.body_ended
    assert not conn.reusable


def test_body_data_out_of_turn_is_the_callers_error() -> None:
    conn = ClientConnection(EP)
    with pytest.raises(CallerProtocolError, match="body data"):
        conn.send_data(b"x")
    with pytest.raises(CallerProtocolError, match="end the body"):
        conn.send_end()


def test_an_interrupt_after_an_error_adds_nothing() -> None:
    conn = ClientConnection(EP)
    sent(conn)
    conn.receive_data(b"NOT HTTP\r\n\r\n")
    with pytest.raises(PeerProtocolError):
        conn.next_event()
    assert conn.interrupt("gave up") == []


# -- ServerSide -----------------------------------------------------------------------------------


def test_a_client_closing_inside_a_request() -> None:
    for data in (b"GET / HT", b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nab"):
        side = ServerSide(1024)
        side.receive_data(data)
        side.receive_data(b"")
        if data.startswith(b"POST"):
            assert side.next_event() is not None
            assert side.next_event() == b"ab"
        with pytest.raises(BadHead, match="closed inside"):
            side.next_event()
    chunked = ServerSide(1024)
    chunked.receive_data(b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n")
    assert chunked.next_event() is not None
    assert chunked.next_event() is None
    chunked.receive_data(b"")
    with pytest.raises(BadHead, match="closed inside"):
        chunked.next_event()
    idle = ServerSide(1024)
    idle.receive_data(b"")
    assert idle.next_event() is CLOSED


def test_a_chunked_request_body_and_what_follows_it() -> None:
    side = ServerSide(1024)
    side.receive_data(
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.1\r\n"
    )
    assert side.next_event() is not None
    assert side.next_event() == b"abc"
    assert side.next_event() is END
    assert side.held == len(b"GET / HTTP/1.1\r\n")
    empty = ServerSide(1024)
    empty.receive_data(b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
    assert empty.next_event() is not None
    assert empty.next_event() is END


def test_an_answer_is_held_to_its_framing() -> None:
    side = ServerSide(1024)
    side.receive_data(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
    assert side.next_event() is not None
    assert side.next_event() is END
    side.head(200, b"OK", [("Content-Length", "2")])
    with pytest.raises(CallerProtocolError, match="left of the Content-Length"):
        side.data(b"abc")
    with pytest.raises(CallerProtocolError, match="short"):
        side.end()
    assert side.data(b"ab") == b"ab"
    assert side.end() == b""
    with pytest.raises(CallerProtocolError, match="cannot end"):
        side.end()
    assert side.reusable
    # Rule 4 (a review of this round): no body bytes after the end, and no second head; a
    # chunked answer wrote ``4\r\nlate\r\n`` after its last chunk
    for framing in ([("Content-Length", "2")], []):
        side = ServerSide(1024)
        side.receive_data(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        assert side.next_event() is not None
        assert side.next_event() is END
        side.head(200, b"OK", framing)
        with pytest.raises(CallerProtocolError, match="head when the answer is 'body'"):
            side.head(200, b"OK", framing)
        side.data(b"ab")
        side.end()
        with pytest.raises(CallerProtocolError, match="body bytes when the answer is 'done'"):
            side.data(b"late")
        assert side.reusable


def test_a_body_with_its_length_and_the_next_request_in_one_read() -> None:
    side = ServerSide(1024)
    side.receive_data(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nabGET")
    assert side.next_event() is not None
    assert side.next_event() == b"ab"
    assert side.next_event() is END
    assert side.held == 3


@pytest.mark.parametrize(("version", "framed"), [(b"1.1", b"3\r\nabc\r\n"), (b"1.0", b"abc")])
def test_an_answer_without_a_length(version: bytes, framed: bytes) -> None:
    """Chunked to an HTTP/1.1 client; to an HTTP/1.0 one, delimited by the close it says."""
    side = ServerSide(1024)
    side.receive_data(b"GET / HTTP/%s\r\nHost: a\r\n\r\n" % version)
    assert side.next_event() is not None
    assert side.next_event() is END
    head = side.head(200, b"OK", [("Content-Type", "text/event-stream")])
    assert (b"Transfer-Encoding: chunked" in head) == (version == b"1.1")
    assert (b"Connection: close" in head) == (version == b"1.0")
    assert side.data(b"abc") == framed
    assert side.data(b"") == b""
    assert side.end() == (b"0\r\n\r\n" if version == b"1.1" else b"")
    assert side.reusable == (version == b"1.1")


def test_empty_lines_before_a_request_line_are_ignored() -> None:
    """RFC 9112 2.2 (attack 26: an empty line between pipelined requests was a 400)."""
    side = ServerSide(64)
    for piece in (b"\r\n\n\r", b"\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"):
        side.receive_data(piece)
    assert side.next_event() is not None
    assert side.next_event() is END
    many = ServerSide(64)
    many.receive_data(b"\r\n" * 40)
    with pytest.raises(BadHead) as caught:
        many.next_event()
    assert caught.value.status == 431
    bare = ServerSide(64)
    bare.receive_data(b"\r")
    assert bare.next_event() is None  # its LF may follow
    bare.receive_data(b"")
    with pytest.raises(BadHead, match="first byte"):
        bare.next_event()


def test_a_content_length_of_zeros_is_an_empty_body() -> None:
    """Attack 26: ``Content-Length: 00`` (legal) was taken as a body still to come."""
    conn = ClientConnection(EP)
    sent(conn)
    events = conn.feed(
        b"HTTP/1.1 400 Bad\r\nContent-Type: application/json\r\nContent-Length: 00\r\n\r\n"
    )
    assert events[-1] is conn.terminal
    assert conn.reusable


def test_a_reused_connection_closed_after_an_informational_answer_is_not_stale() -> None:
    """Attack 26: the server answered 100, then closed: something of an answer came, so the
    request may have been processed; not `StaleConnection` (which says: send it again)."""
    from svir_proto import StaleConnection

    conn = ClientConnection(EP)
    sent(conn)
    conn.feed(b"HTTP/1.1 204 No Content\r\n\r\n")
    conn.start_next_cycle()
    sent(conn)
    conn.feed(b"HTTP/1.1 100 Continue\r\n\r\n")
    with pytest.raises(PeerProtocolError) as caught:
        conn.feed(b"")
    assert not isinstance(caught.value, StaleConnection)


def test_a_model_id_that_could_leave_the_listing_is_no_route() -> None:
    """Attack 26: dot segments and encoded separators in ``/v1/models/{id}`` went upstream
    as they came, with the gateway's key."""
    from svir_proto.gateway.connection import _route

    assert _route("/v1/models/org/name-1.5")[0] == "model"
    assert _route("/v1/models/gpt-4o%3Amini")[0] == "model"
    assert _route("/v1/models/org%2Fname")[0] == "model"
    assert _route("/v1/models/a%252541")[0] == "model"  # decoded three times: "aA"
    for target in (
        "/v1/models/../../admin",
        "/v1/models/%2e%2e/x",
        "/v1/models/a/..%2Fb",
        "/v1/models/a%2f..%2fb",
        "/v1/models/a%5C..",
        "/v1/models/%252e%252e/x",
        "/v1/models/a%2F",
        "/v1/models/a//b",
        "/v1/models/.",
        "/v1/models/a\\..\\b",
        "/v1/models/a%25252541",  # still encoded after three decodings
    ):
        assert _route(target)[0] is None, target


BACKTRACKING = r"""
import sys
from svir_proto import _http1
from svir_proto._chunked import ChunkedReader

blanks = b"".join(b"X:" + b" " * 30 + b"\r\n" for _ in range(40))
for head, read in (
    (b"GET / HTTP/1.1\r\nHost: a\r\n" + blanks + b"Y: \x00\r\n\r\n", _http1.read_request),
    (b"GET / HTTP/1.1\r\nHost: a\r\n" + blanks + b"Y: a\n\r\n", _http1.read_request),
    (b"HTTP/1.1 200 OK\r\n" + blanks + b"Y: a\n\r\n", _http1.read_response),
    (b"GET / HTTP/1.1\r\nHost: a\r\nA:" + b" " * 200_000 + b"\x01\r\n\r\n", _http1.read_request),
):
    for _ in range(20):
        try:
            read(head)
        except ValueError:
            pass
for piece in (b"1;" + b" " * 200_000 + b"\nX", b"0\r\nA:" + b" " * 200_000 + b"\x01\r\n\r\n"):
    for _ in range(20):
        ChunkedReader(max_line=1 << 20).feed(piece)
"""


def test_no_head_makes_the_field_pattern_backtrack() -> None:
    """Attack 27: blanks that could go before or after an empty value were split every way on
    every line when a later line failed (exponential: 250 bytes took hours), and one long run
    of blanks before a bad byte was quadratic, in a head, a trailer and a chunk extension. In
    a process of its own, with a deadline a thousand times what it takes: a pattern that
    backtracks again would take far beyond it."""
    finishes_linearly(BACKTRACKING, "a head, a trailer or a chunk header")
