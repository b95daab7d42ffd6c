"""The gateway benchmark's upstream: a model server stand-in in its own process, over loopback.

    python -m benchmarks._upstream

prints its port, then serves until its standard input closes. Every ``POST`` gets the same
seeded OpenAI stream (`benchmarks.streams.openai_stream`), one HTTP chunk per SSE event, with
keep-alive, except a request for the model `PROBE_MODEL`, which gets a short one of
`PROBE_CHUNKS` chunks (paced or not, as the others: a probe is for its time to first token);
``GET /v1/models`` lists one model (the gateway's readiness probe). A line on
standard input sets how the next requests are answered, and is acknowledged with ``ok``:

- ``paced CHUNKS SECONDS``: the head and the role chunk at once, then one event every
  ``SECONDS`` on a fixed schedule, each its own ``send`` (a model that flushes every token:
  every event is its own read downstream). Behind schedule (a busy machine) it catches up,
  still one ``send`` per event.
- ``unpaced CHUNKS``: the whole answer as fast as the reader takes it (a fast stream, full
  reads).
- ``late``: how late the paced events went out since the last ``late``, in ms: the median,
  the 99th percentile and the worst (``0`` for none). A machine too busy to keep the schedule
  shows here, and direct's wall time is then no longer chunks times pace.

One thread, one epoll loop, non-blocking sockets: a thousand paced streams cost it about what
their ``send`` calls cost, so it keeps the schedule where the contenders in front of it are
measured.
"""

from __future__ import annotations

import heapq
import itertools
import select
import socket
import sys
import time

from benchmarks._server import frames

HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    b"Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n"
)
MODELS = b'{"object":"list","data":[{"id":"m","object":"model","created":0,"owned_by":"bench"}]}'
MAX_HEAD = 64 * 1024
PROBE_MODEL = "probe"  # the model a probe asks for: its answer is short
PROBE_CHUNKS = 10  # a probe's answer: its first token is what it is for
PROBE_MARK = b'"%s"' % PROBE_MODEL.encode()


def reply(status: bytes, body: bytes, ctype: bytes = b"application/json") -> bytes:
    return b"HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s" % (
        status,
        ctype,
        len(body),
        body,
    )


class Conn:
    """One client connection: what it sent so far, what waits to go out, its paced stream."""

    __slots__ = ("close_after", "inbuf", "next", "out", "sock", "stream")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.inbuf = bytearray()
        self.out = bytearray()  # bytes the socket did not take yet
        self.stream: list[bytes] | None = None  # the paced frames being sent
        self.next = 0  # the index of the next paced frame
        self.close_after = False


class Upstream:
    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=4096)
        self.listener.setblocking(False)
        self.ep = select.epoll()
        self.ep.register(self.listener.fileno(), select.EPOLLIN)
        self.ep.register(sys.stdin.fileno(), select.EPOLLIN)
        self.conns: dict[int, Conn] = {}
        self.timers: list[tuple[float, int, Conn]] = []
        self.seq = itertools.count()
        self.mode = ("unpaced", 0.0)
        self.late: list[float] = []  # seconds each paced event went out after its time
        self.frames = frames(20)
        self.whole = HEAD + b"".join(self.frames)
        self.probe_frames = frames(PROBE_CHUNKS)
        self.probe_whole = HEAD + b"".join(self.probe_frames)

    # -- control ------------------------------------------------------------------------------

    def control(self) -> bool:
        line = sys.stdin.readline()
        if not line:
            return False
        words = line.split()
        if words[0] == "late":
            late = sorted(self.late)
            self.late = []
            at = lambda q: late[int(q * (len(late) - 1))] * 1000 if late else 0.0  # noqa: E731
            reply = f"{at(0.5):.3f} {at(0.99):.3f} {at(1):.3f}"
        else:
            chunks = int(words[1])
            self.frames = frames(chunks)
            self.whole = HEAD + b"".join(self.frames)
            self.mode = (words[0], float(words[2]) if words[0] == "paced" else 0.0)
            reply = "ok"
        sys.stdout.write(reply + "\n")
        sys.stdout.flush()
        return True

    # -- connections --------------------------------------------------------------------------

    def accept(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except BlockingIOError:
                return
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.conns[sock.fileno()] = Conn(sock)
            self.ep.register(sock.fileno(), select.EPOLLIN)

    def drop(self, conn: Conn) -> None:
        fd = conn.sock.fileno()
        if self.conns.pop(fd, None) is not None:
            self.ep.unregister(fd)
            conn.sock.close()
        conn.stream = None

    def readable(self, conn: Conn) -> None:
        try:
            data = conn.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.drop(conn)
            return
        conn.inbuf += data
        self.requests(conn)

    def requests(self, conn: Conn) -> None:
        while conn.stream is None and not conn.out:
            end = conn.inbuf.find(b"\r\n\r\n")
            if end < 0:
                if len(conn.inbuf) > MAX_HEAD:
                    self.drop(conn)
                return
            head = bytes(conn.inbuf[:end]).lower()
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip() == b"content-length":
                    length = int(value)
                elif name.strip() == b"connection" and b"close" in value:
                    conn.close_after = True
            if len(conn.inbuf) < end + 4 + length:
                return
            probe = PROBE_MARK in conn.inbuf[end + 4 : end + 4 + length]
            del conn.inbuf[: end + 4 + length]
            method, _, rest = head.partition(b" ")
            path = rest.partition(b" ")[0]
            if method == b"get" and path.endswith(b"/models"):
                self.write(conn, reply(b"200 OK", MODELS))
            elif method != b"post":
                self.write(conn, reply(b"404 Not Found", b'{"error":"not found"}'))
            elif self.mode[0] == "unpaced":
                self.write(conn, self.probe_whole if probe else self.whole)
            else:
                conn.stream = self.probe_frames if probe else self.frames
                conn.next = 1
                self.write(conn, HEAD + conn.stream[0])
                self.schedule(conn, time.monotonic() + self.mode[1])
            if conn.close_after and conn.stream is None and not conn.out:
                self.drop(conn)
                return

    def schedule(self, conn: Conn, due: float) -> None:
        heapq.heappush(self.timers, (due, next(self.seq), conn))

    def write(self, conn: Conn, data: bytes) -> None:
        if conn.out:
            conn.out += data
            return
        try:
            sent = conn.sock.send(data)
        except BlockingIOError:
            sent = 0
        except OSError:
            self.drop(conn)
            return
        if sent < len(data):
            conn.out += data[sent:]
            self.ep.modify(conn.sock.fileno(), select.EPOLLIN | select.EPOLLOUT)

    def writable(self, conn: Conn) -> None:
        try:
            sent = conn.sock.send(conn.out)
        except BlockingIOError:
            return
        except OSError:
            self.drop(conn)
            return
        del conn.out[:sent]
        if not conn.out:
            self.ep.modify(conn.sock.fileno(), select.EPOLLIN)
            if conn.stream is None:
                if conn.close_after:
                    self.drop(conn)
                else:
                    self.requests(conn)

    def tick(self, now: float) -> None:
        """Send every paced event that is due."""
        timers, pace = self.timers, self.mode[1]
        while timers and timers[0][0] <= now:
            due, _, conn = heapq.heappop(timers)
            stream = conn.stream
            if stream is None:  # the connection was dropped
                continue
            self.late.append(now - due)
            self.write(conn, stream[conn.next])
            conn.next += 1
            if conn.next < len(stream):
                self.schedule(conn, due + pace)
            else:
                conn.stream = None
                if not conn.out:
                    if conn.close_after:
                        self.drop(conn)
                    else:
                        self.requests(conn)

    # -- the loop -----------------------------------------------------------------------------

    def run(self) -> None:
        print(self.listener.getsockname()[1], flush=True)
        lfd, cfd = self.listener.fileno(), sys.stdin.fileno()
        while True:
            wait = -1.0
            if self.timers:
                wait = max(0.0, self.timers[0][0] - time.monotonic())
            for fd, mask in self.ep.poll(wait):
                if fd == lfd:
                    self.accept()
                elif fd == cfd:
                    if not self.control():
                        return
                else:
                    conn = self.conns.get(fd)
                    if conn is None:
                        continue
                    if mask & select.EPOLLOUT and conn.out:
                        self.writable(conn)
                    if mask & (select.EPOLLIN | select.EPOLLHUP | select.EPOLLERR) and (
                        fd in self.conns
                    ):
                        self.readable(conn)
            if self.timers:
                self.tick(time.monotonic())


def main() -> None:
    Upstream().run()


if __name__ == "__main__":
    main()
