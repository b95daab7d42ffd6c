"""Hypothesis: a `GatewaySession` relaying an OpenAI upstream to an OpenAI client, the upstream's
answer chunked at any points and read in any pieces.

Whatever the upstream's chunks and reads, the client receives the same thing: the body's whole
events, as they came, then the end of the body (or, when the upstream broke the protocol, the
events before the one that broke it and the gateway's error); and every piece it is sent ends
where an event ends (session Rule 4), but for the tail of a body cut inside an event. Each
read is handed to the session as the server's loop would: the first with the head, each of the
others on its own.
"""

from __future__ import annotations

from pathlib import Path

import h11
from hypothesis import given
from hypothesis import strategies as st

from svir_proto.gateway import GatewayConfig, GatewaySession, GatewayState
from svir_proto.openai import ChatStreamDecoder, Endpoint
from tests.conformance.openai_results import summary
from tests.helpers import CONFORMANCE, run, split_at

AFTER_THE_END = "data-after-done"  # events after [DONE]: see the last test
FIXTURES = sorted((CONFORMANCE / "openai").glob("*.sse"))
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
BODY = b'{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}'
REQUEST = (
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
    b"Content-Length: %d\r\n\r\n%s" % (len(BODY), BODY)
)


def client_view(data: bytes) -> tuple[bytes, bool, list[bytes]]:
    """What the client read: the body, whether it ended, and the body's pieces as sent."""
    conn = h11.Connection(h11.CLIENT)
    conn.send(h11.Request(method="POST", target="/", headers=[("Host", "gw")]))
    conn.receive_data(data)
    pieces: list[bytes] = []
    while True:
        event = conn.next_event()
        if isinstance(event, h11.Data):
            pieces.append(bytes(event.data))
        elif isinstance(event, h11.EndOfMessage):
            return b"".join(pieces), True, pieces
        elif event is h11.NEED_DATA or isinstance(event, h11.ConnectionClosed):
            return b"".join(pieces), False, pieces


def served(request: bytes, reads: list[bytes], upstream_dialect: str = "chat") -> bytes:
    """What a session writes to the client of ``request`` while the upstream (of that
    dialect) answers in these reads (then closes, if the answer did not end)."""
    config = GatewayConfig(
        upstream=Endpoint.parse("http://upstream.test:8000"), upstream_dialect=upstream_dialect
    )
    state = GatewayState(config, new_id=lambda: "id-1", wall=lambda t: 1000)
    session = GatewaySession(state, 0.0)
    out = bytearray(session.client_data(request, 1.0))
    out += session.upstream_connected(1.0)
    for data in reads:
        out += session.upstream_data(data, 2.0)
    if not session.closed and session.conn.outcome is None:
        out += session.upstream_data(b"", 3.0)  # the upstream closes
    return bytes(out)


def relay(reads: list[bytes]) -> tuple[bytes, bool, list[bytes]]:
    return client_view(served(REQUEST, reads))


@st.composite
def answers(draw: st.DrawFn, body: bytes) -> list[bytes]:
    """The upstream's answer, chunked at any points, cut into reads at any points (the head
    arrives with the first read)."""
    chunks = split_at(body, draw(st.lists(st.integers(0, len(body)), max_size=30)))
    wire = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in chunks) + b"0\r\n\r\n"
    reads = split_at(wire, draw(st.lists(st.integers(0, len(wire)), max_size=30)))
    return [HEAD + reads[0], *reads[1:]]


def whole_events(pieces: list[bytes]) -> bool:
    """Every piece the client was sent ends where an event ends (a blank line), but the last:
    a body that ends inside an event (a cut upstream) is relayed to where it ended."""
    ends = (b"\n\n", b"\r\r", b"\r\n\r\n", b"\n\r\n")
    return all(p.endswith(ends) for p in pieces[:-1])


@given(st.sampled_from(FIXTURES), st.data())
def test_any_chunks_and_reads_give_the_client_the_same_answer(
    path: Path, data: st.DataObject
) -> None:
    body = path.read_bytes()
    expected = relay([HEAD + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)])
    got = relay(data.draw(answers(body)))
    assert got[:2] == expected[:2]
    assert whole_events(got[2])
    direct = ChatStreamDecoder()
    events = run(direct, [got[0]])
    again = ChatStreamDecoder()
    assert summary(run(again, [body]), again.result) == summary(events, direct.result)


@given(st.data())
def test_an_upstream_that_breaks_the_protocol_midway_gives_the_same_error(
    data: st.DataObject,
) -> None:
    events = b"".join(
        b'data: {"choices":[{"index":0,"delta":{"content":"%d"}}]}\n\n' % i for i in range(8)
    )
    body = events + b"data: {bad\n\n" + events
    expected = relay([HEAD + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)])
    got = relay(data.draw(answers(body)))
    assert got[:2] == expected[:2]
    assert got[0].startswith(events)
    assert b"data: {bad" not in got[0]
    assert whole_events(got[2])


def test_what_follows_the_end_marker_reaches_the_client_whatever_the_reads() -> None:
    """The events after ``[DONE]`` (a late chunk, a line that is not JSON) go on as they came,
    in the marker's read or in later ones, and the client's body ends where the upstream's
    did: a client that reads past the marker (the AI SDK does) sees what it sees direct."""
    body = (CONFORMANCE / "openai" / f"{AFTER_THE_END}.sse").read_bytes()
    at = body.index(b"data: [DONE]\n\n") + len(b"data: [DONE]\n\n")
    whole = relay([HEAD + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)])
    first, rest = body[:at], body[at:]
    apart = relay(
        [HEAD + b"%x\r\n%s\r\n" % (len(first), first), b"%x\r\n%s\r\n0\r\n\r\n" % (len(rest), rest)]
    )
    later = relay(
        [HEAD + b"%x\r\n%s\r\n" % (len(first), first), b"%x\r\n%s\r\n" % (len(rest), rest),
         b"0\r\n\r\n"]
    )  # fmt: skip
    assert whole[:2] == (body, True)
    assert apart[:2] == whole[:2]
    assert later[:2] == whole[:2]


@given(st.sampled_from([b"\n\n", b"\r\n\r\n", b"\r\r", b"\n\r\n"]), st.data())
def test_long_events_in_many_reads_reach_the_client_whole(
    blank: bytes, data: st.DataObject
) -> None:
    """Events of kilobytes, each in many reads, their blank lines cut anywhere (a read may end
    inside one): only the new bytes of each read are looked at for an event's end (attack 27:
    the held event was joined and searched again on every read), and the client gets the same
    whole events."""
    text = b"x" * data.draw(st.integers(2_000, 6_000))
    line = blank[: len(blank) // 2]
    events = [
        b'data: {"choices":[{"index":0,"delta":{"content":"%s%d"}}]}%s' % (text, i, blank)
        for i in range(3)
    ]
    body = b"".join(events) + b"data: [DONE]" + line + line
    expected = relay([HEAD + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)])
    got = relay(data.draw(answers(body)))
    assert got[:2] == expected[:2] == (body, True)
    assert whole_events(got[2])


def test_a_read_of_whole_events_and_the_start_of_one_more() -> None:
    """Nothing held, a read brings whole events and the beginning of the next: the whole ones
    go out at once, the beginning is held for the next read."""
    events = [b'data: {"choices":[{"index":0,"delta":{"content":"%d"}}]}\n\n' % i for i in range(4)]
    body = b"".join(events) + b"data: [DONE]\n\n"
    second = events[1] + events[2][:10]
    third = events[2][10:] + events[3] + b"data: [DONE]\n\n"
    reads = [
        HEAD + b"%x\r\n%s\r\n" % (len(events[0]), events[0]),
        b"%x\r\n%s\r\n" % (len(second), second),
        b"%x\r\n%s\r\n0\r\n\r\n" % (len(third), third),
    ]
    got, ended, pieces = relay(reads)
    assert (got, ended) == (body, True)
    assert events[1] in pieces
    assert whole_events(pieces)
