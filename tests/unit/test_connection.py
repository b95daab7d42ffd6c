"""`ClientConnection`: h11 under an exchange, fed whole, a byte at a time, with trailing bytes."""

from __future__ import annotations

import json

import pytest

from svir_proto import (
    NEED_DATA,
    CallerProtocolError,
    ClientConnection,
    FailureKind,
    ModelsListed,
    ModelsRequest,
    PeerProtocolError,
    RequestFailed,
    ResponseStarted,
    StreamEnded,
)
from svir_proto.exchange import DEFAULT_MAX_HEAD_SIZE, ExchangeEvent
from svir_proto.openai import ChatRequest, Endpoint, UserMessage
from tests.helpers import CONFORMANCE, bytewise, run

EP = Endpoint.parse("http://example.test:8080/v1")
CHAT = ChatRequest(model="m", messages=[UserMessage(content="hi")])
BODY = (CONFORMANCE / "openai" / "wire-3.3-tool-calls.sse").read_bytes()


def sse_response(body: bytes = BODY, framing: str = "chunked") -> bytes:
    if framing == "length":
        head = f"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {len(body)}"
        return (head + "\r\n\r\n").encode() + body
    chunks = b"".join(
        b"%x\r\n%s\r\n" % (len(body[i : i + 50]), body[i : i + 50]) for i in range(0, len(body), 50)
    )
    head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked"
    return (head + "\r\n\r\n").encode() + chunks + b"0\r\n\r\n"


def sent(conn: ClientConnection, request: object = CHAT) -> bytes:
    return b"".join(conn.send(request))  # type: ignore[arg-type]


def test_the_request_on_the_wire() -> None:
    conn = ClientConnection(EP)
    pieces = list(conn.send(CHAT))
    assert all(type(p) is bytes for p in pieces)  # bytes, never a bytearray (STYLE.md 8)
    head, body = b"".join(pieces).split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /v1/chat/completions HTTP/1.1"
    headers = dict(line.split(": ", 1) for line in lines[1:])
    assert headers["Host"] == "example.test:8080"
    assert int(headers["Content-Length"]) == len(body)
    assert "Transfer-Encoding" not in headers
    assert json.loads(body)["messages"] == [{"role": "user", "content": "hi"}]


def test_a_body_made_beforehand_is_sent_as_made() -> None:
    """``send(body=...)``: the request's body, made in a worker thread, say; not made again."""
    from svir_proto.anthropic import Message, MessagesRequest

    hi = Message(role="user", content="hi")
    messages = MessagesRequest(model="m", max_tokens=9, messages=[hi])
    for request in (CHAT, messages):
        made = request.body()  # type: ignore[attr-defined]
        fresh = sent(ClientConnection(EP), request)
        conn = ClientConnection(EP)
        assert b"".join(conn.send(request, body=made)) == fresh  # type: ignore[arg-type]
        other = ChatRequest(model="other", messages=[UserMessage(content="hi")]).body()
        wire = b"".join(ClientConnection(EP).send(request, body=other))  # type: ignore[arg-type]
        assert wire.endswith(b"".join(other))  # as given: what it is for is the caller's to say
    with pytest.raises(TypeError, match="ModelsRequest takes no body"):
        ClientConnection(EP).send(ModelsRequest(), body=CHAT.body())


@pytest.mark.parametrize("framing", ["length", "chunked"])
@pytest.mark.parametrize("mode", ["whole", "bytewise"])
def test_a_stream_whole_and_bytewise(framing: str, mode: str) -> None:
    conn = ClientConnection(EP)
    sent(conn)
    data = sse_response(framing=framing)
    events = []
    for piece in [data] if mode == "whole" else bytewise(data):
        events += conn.feed(piece)
    assert isinstance(events[0], ResponseStarted)
    assert isinstance(events[-1], StreamEnded)
    assert events[-1].complete
    assert conn.terminal is events[-1]
    assert conn.result.complete
    assert conn.reusable
    assert not conn.finishing


def test_keep_alive_serves_a_second_exchange_and_leaves_trailing_bytes_alone() -> None:
    conn = ClientConnection(EP)
    sent(conn)
    first = sse_response()
    # [DONE] arrives before the chunked body's last chunk: the exchange is over, the body not
    done_at = first.index(b"[DONE]") + 8  # the event, not its chunk's CRLF nor the last chunk
    events = conn.feed(first[:done_at])
    assert isinstance(events[-1], StreamEnded)
    assert conn.finishing
    assert not conn.reusable
    assert conn.feed(first[done_at:]) == []
    assert conn.reusable
    assert not conn.finishing
    with pytest.raises(CallerProtocolError, match="one exchange at a time"):
        sent(conn)
    conn.start_next_cycle()
    raw = sent(conn, ModelsRequest())
    assert raw.startswith(b"GET /v1/models HTTP/1.1\r\n")
    listing = b'{"data":[{"id":"a"}]}'
    events = conn.feed(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
        % (len(listing), listing)
    )
    assert isinstance(events[-1], ModelsListed)
    assert conn.next_event() is events[-1]  # the terminal event repeats


def test_out_of_order() -> None:
    conn = ClientConnection(EP)
    with pytest.raises(CallerProtocolError, match="no request"):
        _ = conn.result
    with pytest.raises(CallerProtocolError, match="not reusable"):
        conn.start_next_cycle()
    assert conn.interrupt("nothing to interrupt") == []
    assert conn.exchange is None
    with pytest.raises(PeerProtocolError, match="response to no request"):
        ClientConnection(EP).feed(sse_response())


def test_an_early_answer_after_a_failed_send() -> None:
    conn = ClientConnection(EP)
    pieces = conn.send(CHAT)
    next(pieces)  # the head went out, then the write failed
    conn.send_failed()
    events = conn.feed(b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\n\r\n")
    assert isinstance(events[-1], RequestFailed)
    assert events[-1].failure.kind is FailureKind.REJECTED
    assert not conn.reusable


def test_informational_responses_are_skipped() -> None:
    conn = ClientConnection(EP)
    sent(conn)
    events = conn.feed(b"HTTP/1.1 100 Continue\r\n\r\n" + sse_response())
    assert isinstance(events[0], ResponseStarted)
    assert events[0].status == 200
    assert conn.result.complete


def _fed(conn: ClientConnection, data: bytes, piece: int) -> list[ExchangeEvent]:
    return [e for at in range(0, len(data), piece) for e in conn.feed(data[at : at + piece])]


@pytest.mark.parametrize("piece", [1, 4096, 1 << 20])
def test_informational_responses_are_bounded_in_all(piece: int) -> None:
    """Attack 46: an upstream that sent informational responses without end kept a core busy
    till the request's deadline. They may take ``max_head_size`` bytes together, however the
    bytes are split; the answer after them is read as usual."""
    interim = b"HTTP/1.1 100 Continue\r\n\r\n"
    fits = DEFAULT_MAX_HEAD_SIZE // len(interim)
    conn = ClientConnection(EP)
    sent(conn)
    events = _fed(conn, interim * fits + sse_response(), piece)
    assert isinstance(events[0], ResponseStarted)
    assert conn.result.complete
    flood = ClientConnection(EP)
    sent(flood)
    with pytest.raises(PeerProtocolError, match="informational") as caught:
        _fed(flood, interim * (fits + 1), piece)
    assert caught.value.limit == "max_head_size"


def test_the_server_closes_without_a_response() -> None:
    conn = ClientConnection(EP)
    sent(conn)
    with pytest.raises(PeerProtocolError, match="without a response"):
        conn.feed(b"")
    half = ClientConnection(EP)
    sent(half)
    assert half.feed(b"HTTP/1.1 200 OK\r\nContent-Ty") == []
    with pytest.raises(PeerProtocolError, match="without a whole response head"):
        half.feed(b"")


@pytest.mark.parametrize("mode", ["whole", "bytewise"])
def test_an_oversized_head_is_the_same_error_however_split(mode: str) -> None:
    conn = ClientConnection(EP, max_head_size=200)
    sent(conn)
    data = b"HTTP/1.1 200 OK\r\nX-Pad: " + b"a" * 300 + b"\r\nContent-Length: 0\r\n\r\n"
    with pytest.raises(PeerProtocolError) as info:
        run(conn, [data] if mode == "whole" else bytewise(data))
    assert (info.value.limit, info.value.limit_value, info.value.offset) == (
        "max_head_size",
        200,
        0,
    )


@pytest.mark.parametrize("mode", ["whole", "bytewise"])
def test_an_oversized_invalid_head_is_too_large_unless_its_first_byte_is_bad(mode: str) -> None:
    """fuzz/corpus/connection/crash-oversized-invalid-head: read whole, h11 saw the whole head
    and refused it as invalid; in pieces its buffer filled first. A head past the bound is too
    large either way, unless its first byte is a space or a control character, which h11
    refuses at once, before any size is known. After an informational response, the next
    head's first byte counts the same way."""
    pad = b"X-Pad: " + b"a" * 300 + b"\r\n"
    cases = [
        (b"HTTP/1.1 200 OK\r\n" + pad + b"Bad Header\r\n\r\n", "max_head_size"),
        (b"\x00HTTP/1.1 200 OK\r\n" + pad + b"\r\n", None),
        (b"HTTP/1.1 100 Continue\r\n\r\n\x00HTTP/1.1 200 OK\r\n" + pad + b"\r\n", None),
        (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n" + pad + b"B\r\n\r\n", "max_head_size"),
    ]
    for data, limit in cases:
        conn = ClientConnection(EP, max_head_size=200)
        sent(conn)
        with pytest.raises(PeerProtocolError) as info:
            run(conn, [data] if mode == "whole" else bytewise(data))
        assert info.value.limit == limit, data[:30]


def test_a_body_cut_by_the_server_keeps_what_arrived() -> None:
    conn = ClientConnection(EP)
    sent(conn)
    data = sse_response(framing="length")
    events = conn.feed(data[: len(data) // 2]) + conn.feed(b"")
    assert isinstance(events[-1], StreamEnded)
    assert not events[-1].complete
    assert conn.result.interrupted
    assert "closed before the body ended" in conn.result.interrupted
    assert not conn.reusable


def test_a_cut_after_the_end_marker_changes_nothing() -> None:
    conn = ClientConnection(EP)
    sent(conn)
    data = sse_response()
    events = conn.feed(data[: data.index(b"[DONE]") + 10])
    assert isinstance(events[-1], StreamEnded)
    assert events[-1].complete
    assert conn.feed(b"") == []
    assert conn.result.complete
    assert conn.result.interrupted is None
    assert not conn.reusable


def test_bad_http_is_a_remote_protocol_error() -> None:
    conn = ClientConnection(EP)
    sent(conn)
    with pytest.raises(PeerProtocolError, match="bad HTTP"):
        conn.feed(b"NOT HTTP AT ALL\r\n\r\n")
    with pytest.raises(PeerProtocolError):  # poisoned: the same error again
        conn.feed(b"more")
    assert not conn.reusable


def test_bad_stream_bytes_keep_the_events_before_them() -> None:
    conn = ClientConnection(EP)
    sent(conn)
    body = b'data: {"id":"a","model":"m","choices":[{"index":0,"delta":{"content":"x"}}]}\n\n'
    body += b"data: {oops\n\n"
    events = conn.feed(sse_response(body, "length"))
    assert [type(e).__name__ for e in events][:3] == [
        "ResponseStarted",
        "StreamStarted",
        "TextDelta",
    ]
    with pytest.raises(PeerProtocolError, match="not JSON"):
        conn.next_event()
    assert conn.result.text == "x"


def test_interrupt_mid_stream_and_after() -> None:
    conn = ClientConnection(EP)
    sent(conn)
    data = sse_response()
    events = conn.feed(data[:700])
    assert events
    assert conn.next_event() is NEED_DATA
    ended = conn.interrupt("read timeout")
    assert isinstance(ended[-1], StreamEnded)
    assert not ended[-1].complete
    assert conn.result.interrupted == "read timeout"
    assert conn.interrupt("again") == []
    assert not conn.reusable
    queued = ClientConnection(EP)
    sent(queued)
    queued.receive_data(data[:700])
    assert isinstance(queued.next_event(), ResponseStarted)
    rest = queued.interrupt("cancelled")  # the events not taken yet come first
    assert isinstance(rest[-1], StreamEnded)
    assert len(rest) > 1


def test_malformed_chunk_framing_is_rejected_not_repaired() -> None:
    conn = ClientConnection(EP)
    sent(conn)
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    events = conn.feed(head)
    assert isinstance(events[0], ResponseStarted)
    with pytest.raises(PeerProtocolError, match="bad HTTP"):
        conn.feed(b"zz\r\ndata: x\r\n")
    assert not conn.reusable


def test_a_response_followed_by_bytes_nobody_asked_for_leaves_the_connection_unusable() -> None:
    """Rule 5 (a review of this round): a server that sends more than the answer it was asked
    for (here a second, whole answer in the same read) is no connection to reuse: a pool would
    hand those bytes to the next request as its answer. Bytes arriving after the response, in a
    later read, do the same."""
    listing = b'{"data":[{"id":"a"}]}'
    second = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(listing), listing)
    for reads in ([sse_response() + second], [sse_response(), second], [sse_response(), b"\r"]):
        conn = ClientConnection(EP)
        sent(conn)
        events = [e for data in reads for e in conn.feed(data)]
        assert isinstance(events[-1], StreamEnded)
        assert conn.body_ended
        assert not conn.reusable
        with pytest.raises(CallerProtocolError, match="not reusable"):
            conn.start_next_cycle()
    conn = ClientConnection(EP)
    sent(conn)
    conn.feed(sse_response())
    assert conn.reusable  # the same answer alone


def test_bad_chunk_framing_after_events_raises_once_they_are_out() -> None:
    conn = ClientConnection(EP)
    sent(conn)
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked"
    event = BODY[: BODY.index(b"\n\n") + 2]
    events = conn.feed(head + b"\r\n\r\n" + b"%x\r\n%s" % (len(event), event) + b"XY")
    assert [type(e).__name__ for e in events][:2] == ["ResponseStarted", "StreamStarted"]
    assert conn.error is not None
    with pytest.raises(PeerProtocolError, match="malformed chunk footer"):
        conn.next_event()


def test_a_chunked_body_cut_by_the_server() -> None:
    conn = ClientConnection(EP)
    sent(conn)
    data = sse_response()
    events = conn.feed(data[:400]) + conn.feed(b"")
    assert isinstance(events[-1], StreamEnded)
    assert not events[-1].complete
    assert "incomplete chunked read" in (conn.result.interrupted or "")
    assert not conn.reusable


def test_a_pass_through_body_is_sent_by_the_caller_and_held_to_its_length() -> None:
    from svir_proto import PassThrough

    conn = ClientConnection(EP)
    (head,) = list(conn.send(PassThrough(content_length=4)))
    assert b"Content-Length: 4\r\n" in head
    assert conn.send_data(b"ab") == b"ab"
    with pytest.raises(CallerProtocolError, match="cannot end the body"):
        conn.send_end()  # two bytes short
    other = ClientConnection(EP)
    list(other.send(PassThrough(content_length=1)))
    with pytest.raises(CallerProtocolError, match="cannot send body data"):
        other.send_data(b"too long")


def test_the_answer_to_a_head_has_no_body_whatever_its_length_says() -> None:
    """RFC 9110 9.3.2, RFC 9112 6.3: a HEAD's answer ends with its head (the gateway sends a
    client's ``HEAD /v1/models`` up as a HEAD: attack 44 F2); the next answer on the
    connection is read as the next request's."""
    from svir_proto import PassThrough

    conn = ClientConnection(EP)
    head = PassThrough(content_length=0, method="HEAD", target="/models", relay=True)
    (sent_head,) = list(conn.send(head))
    conn.send_end()  # (no body)
    assert sent_head.startswith(b"HEAD /v1/models HTTP/1.1\r\n")
    assert b"Content-Length" not in sent_head
    events = conn.feed(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 9999\r\n\r\n"
    )
    assert isinstance(events[-1], StreamEnded)
    assert events[-1].complete
    assert conn.reusable
    conn.start_next_cycle()
    list(conn.send(PassThrough(content_length=0, method="GET", target="/models", relay=True)))
    conn.send_end()
    body = b'{"data":[]}'
    events = conn.feed(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    assert isinstance(events[-1], StreamEnded)
    assert b"".join(conn.exchange.relayed) == body  # type: ignore[union-attr]


def test_a_reused_connection_the_server_had_closed_is_stale() -> None:
    from svir_proto import StaleConnection

    conn = ClientConnection(EP)
    sent(conn)
    conn.feed(sse_response(framing="length"))
    assert conn.reusable
    conn.start_next_cycle()
    sent(conn)
    with pytest.raises(StaleConnection, match="send it again on a new connection") as caught:
        conn.feed(b"")  # closed before a byte of the next response
    assert isinstance(caught.value, PeerProtocolError)  # what it was before it had a name
    fresh = ClientConnection(EP)
    sent(fresh)
    with pytest.raises(PeerProtocolError) as plain:
        fresh.feed(b"")
    assert not isinstance(plain.value, StaleConnection)  # a fresh one: the server refused


def test_headers_per_connection_and_per_request_and_the_absolute_form() -> None:
    conn = ClientConnection(
        EP, headers={"X-App": "a", "X-Trace": "1"}, target_form="absolute", think_opened=True
    )
    head = b"".join(conn.send(CHAT, headers={"x-trace": "2"})).split(b"\r\n\r\n")[0].decode()
    lines = head.split("\r\n")
    assert lines[0] == "POST http://example.test:8080/v1/chat/completions HTTP/1.1"
    assert "X-App: a" in lines
    assert "x-trace: 2" in lines
    assert "X-Trace: 1" not in lines
    with pytest.raises(TypeError, match=r"ClientConnection\(\) got an unexpected keyword"):
        ClientConnection(EP, max_head=10)  # type: ignore[call-arg]


def test_a_live_stream_read_by_read_and_broken_in_a_read_that_brings_an_event() -> None:
    """The lane of a chunked body under way (one read per chunk): the events of a read come
    out, then the framing error after them, as on the general way."""
    conn = ClientConnection(EP)
    sent(conn)
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked"
    events = [e + b"\n\n" for e in BODY.split(b"\n\n") if e]
    chunks = [b"%x\r\n%s\r\n" % (len(e), e) for e in events]
    got = conn.feed(head + b"\r\n\r\n" + chunks[0])
    for chunk in chunks[1:3]:
        got += conn.feed(chunk)
    assert [type(e).__name__ for e in got][:2] == ["ResponseStarted", "StreamStarted"]
    more = conn.feed(chunks[3][:-2] + b"XY")  # its data whole, then no CRLF
    assert more  # what came before the break
    with pytest.raises(PeerProtocolError, match="malformed chunk footer"):
        conn.feed(chunks[4])
    assert not conn.reusable
