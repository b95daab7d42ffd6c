"""An upstream that misbehaves after its end marker, for `test_hostile_tail`: the hostile
battery's upstream (`hostile_upstream.HostileUpstream`, whose every scenario it still serves),
plus tail scenarios chosen by a request id ``tail:FRAMING:SHAPE:ARG:ENDING~TAG``.

Each tail answer is the recorded llama.cpp stream up to and with its ``data: [DONE]``, then
the tail ``SHAPE`` makes, then the body's ``ENDING``:

- ``FRAMING``: ``chunked`` (one HTTP chunk a write), ``burst`` (chunked, the whole answer and
  its ending in one write, so that the gateway likely reads it at once), ``length``
  (Content-Length, the whole body's), ``late`` (chunked, its head 2.5 s late: the gateway's
  keep-alives sent the client's head first), ``close`` (delimited by the close, HTTP/1.1
  ``Connection: close``).
- ``SHAPE``: ``none`` (nothing after the marker), ``drip:N`` (``N`` small pieces, 0.2 s apart,
  cut across events), ``junk`` (more events, a bad JSON event, comments, an error event, bare
  lines, CR line ends, a partial event without its end), ``flood:BYTES`` (that many bytes of
  events, 4 KiB a write, as fast as the socket takes them), ``silent:S`` (nothing for ``S``
  seconds, then a last event), ``ext:N`` (chunked only: ``N`` chunks of one body byte, each
  with a 4000-byte chunk extension).
- ``ENDING``: ``end`` (the body ends as its framing says), ``rst`` (a reset instead),
  ``bad`` (a chunk size that is not hex; chunked only), ``short`` (the connection closed
  before the Content-Length's end or the last chunk).

`Seen.tail_body` (set on the `Seen` of the request) is the body the upstream sends, exactly:
what a client of a relay must get (all of it, or a prefix and a cut when the ending is not
``end``). `Seen.conn_no` numbers the upstream connection that served the request: a request
served on the number of an earlier one got a pooled connection.
"""

from __future__ import annotations

import socket
import time
from typing import Final

from tests.gateway.hostile_upstream import (
    OK_FIXTURE,
    HostileUpstream,
    Seen,
    _Conn,
    _Gone,
    chunk,
    events_of,
)

DONE: Final = b"data: [DONE]\n\n"
JUNK: Final = (
    b'data: {"id":"after","object":"chat.completion.chunk","choices":[]}\n\n',
    b"data: {not json\n\n",
    b": a comment after the end\n\n",
    b'event: error\ndata: {"error":{"message":"late"}}\n\n',
    b"a bare line with no field\n",
    b"\n",
    b"data: cr line ends\r\r",
    b"data: [DONE]\n\n",
    b"data: a partial event that never ends",
)


def head_events() -> list[bytes]:
    """The recorded stream, up to and with its end marker."""
    events = events_of(*OK_FIXTURE)
    at = next(i for i, e in enumerate(events) if e.startswith(DONE))
    return events[: at + 1]


def tail_pieces(shape: str, args: list[str]) -> list[tuple[float, bytes]]:
    """What follows the marker: (seconds to wait first, bytes to write)."""
    if shape == "none":
        return []
    if shape == "drip":
        n = int(args[0])
        text = b"".join(b'data: {"tail":%d}\n\n' % i for i in range(n))
        size = max(1, len(text) // n)
        return [(0.2, text[i : i + size]) for i in range(0, len(text), size)]
    if shape == "junk":
        return [(0.05, piece) for piece in JUNK]
    if shape == "flood":
        total = int(args[0])
        event = b'data: {"flood":"' + b"f" * 4000 + b'"}\n\n'
        pieces = []
        while total > 0:
            pieces.append((0.0, event[:total]))
            total -= len(event)
        return pieces
    if shape == "ext":  # chunked only: one body byte a chunk, with a 4000-byte extension
        return [(0.0, b"x")] * int(args[0])
    if shape == "silent":
        return [(float(args[0]), b'data: {"late":1}\n\n')]
    raise ValueError(shape)


class _TailConn(_Conn):
    def __init__(self, server: TailUpstream, sock: socket.socket) -> None:
        super().__init__(server, sock)
        self.tail_server = server

    def run(self) -> None:
        with self.tail_server._lock:
            self.tail_server.live.add(self.no)
        try:
            super().run()
        finally:
            with self.tail_server._lock:
                self.tail_server.live.discard(self.no)

    def serve(self, seen: Seen) -> bool:
        if not seen.rid.startswith("tail:"):
            return super().serve(seen)
        seen.body = self.read_body(seen)
        seen.body_size = len(seen.body)
        framing, shape, *rest = seen.rid.split("~", 1)[0].split(":")[1:]
        *args, ending = rest
        before = b"".join(head_events())
        pieces = tail_pieces(shape, args)
        whole = before + b"".join(p for _, p in pieces)
        seen.tail_body = whole  # type: ignore[attr-defined]
        declared = len(whole) + (0 if ending == "end" else 100)  # a cut: less than said
        if framing == "burst":  # chunked, the whole answer in one write: one read, likely
            data = b"".join(chunk(p) for p in (*head_events(), *(p for _, p in pieces)))
            ends = {"end": b"0\r\n\r\n", "bad": b"zz\r\nxx\r\n"}
            self.send(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n" + data + ends[ending]
            )
            if ending == "end":
                return True
            self.wait_gone(20)
            return False
        if framing == "late":  # chunked, after the gateway's keep-alives sent its own head
            self.wait_gone(2.5)
            framing = "chunked"
        if framing == "chunked":
            self.send(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n"
            )
            for e in head_events():
                self.send(chunk(e))
        elif framing == "length":
            self.send(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n"
                % declared
                + before
            )
        else:
            self.send(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                + before
            )
        for wait, piece in pieces:
            if wait:
                self.wait_gone(wait)  # a gateway that closes is seen at once
            if shape == "ext":
                self.send(b"1;e=" + b"e" * 4000 + b"\r\n" + piece + b"\r\n")
            else:
                self.send(chunk(piece) if framing == "chunked" else piece)
        if ending == "rst":
            time.sleep(0.2)  # what was sent is read before the reset
            self.reset()
            raise _Gone
        if ending == "bad":
            self.send(b"zz\r\nxx\r\n")
            self.wait_gone(20)
            return False
        if ending == "short":  # a FIN before the last chunk, or the Content-Length's end
            time.sleep(0.2)
            self.sock.shutdown(socket.SHUT_WR)
            self.wait_gone(20)
            return False
        if framing == "late":  # chunked, after the gateway's keep-alives sent its own head
            self.wait_gone(2.5)
            framing = "chunked"
        if framing == "chunked":
            self.send(b"0\r\n\r\n")
            return True
        if framing == "length":
            return True
        self.sock.shutdown(socket.SHUT_WR)
        self.wait_gone(20)
        return False


class TailUpstream(HostileUpstream):
    """`HostileUpstream` with the tail scenarios."""

    connection = _TailConn

    def __init__(self) -> None:
        self.live: set[int] = set()  # the numbers of the connections still open
        super().__init__()

    def open_connections(self) -> int:
        """Upstream connections still open (pooled, draining or in use by the gateway)."""
        with self._lock:
            return len(self.live)


def tail_id(framing: str, shape: str, *args: object, ending: str = "end") -> str:
    """The request id of a tail scenario (unique: a tag)."""
    import uuid

    middle = ":".join([framing, shape, *map(str, args), ending])
    return f"tail:{middle}~{uuid.uuid4().hex[:10]}"
