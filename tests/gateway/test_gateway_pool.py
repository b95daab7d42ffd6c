"""The gateway's pool of upstream connections on loopback (Rule 6 of the session): a client
that closes as soon as its answer's end marker came, before the upstream's last chunk, still
leaves its upstream connection for the next request, on either server. A client that reads to
its body's end waits for the upstream's (session Rule 1)."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator

import anyio.from_thread
import pytest

from svir_proto.openai import Endpoint
from svir_proto.transports.gateway import GatewayServer
from tests.sockets import wake

EVENT = b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\n'
EVENT += b"data: [DONE]\n\n"
HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
    b"Connection: keep-alive\r\n\r\n"
)
BODY = b'{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}'
REQUEST = (
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    b"Content-Length: %d\r\n\r\n%s" % (len(BODY), BODY)
)


class Listener:
    """An upstream on loopback: each connection it accepts is served (`_serve`, with its
    number) in a thread of its own; `close` ends it all."""

    def __init__(self, receive_buffer: int | None = None) -> None:
        self.listener = socket.socket()
        if receive_buffer is not None:  # (inherited by the connections it accepts)
            self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen()
        self.port = self.listener.getsockname()[1]
        self.socks: list[socket.socket] = []
        self.serving: list[threading.Thread] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            self.socks.append(sock)
            self._opened()
            serve = threading.Thread(target=self._serve, args=(sock, len(self.socks) - 1))
            serve.daemon = True
            self.serving.append(serve)
            serve.start()

    def _opened(self) -> None:
        """A connection was accepted (before it is served)."""

    def _serve(self, sock: socket.socket, i: int) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Wake every thread (`tests.sockets`), and close the sockets once none uses them (the
        tests read the served ones too: their threads leave them open)."""
        wake(self.listener)
        if self.thread.is_alive():
            self.thread.join(5)  # then no connection is added
        for sock in self.socks:
            wake(sock)
        for thread in self.serving:
            thread.join(5)
        self.listener.close()
        for sock in self.socks:
            sock.close()


class Upstream(Listener):
    """Answers each request with its whole stream, and the body's last chunk only once told
    (`release`); counts the connections that brought a request (the readiness probe's
    ``GET`` is not answered)."""

    def __init__(self) -> None:
        super().__init__()
        self.accepted = 0
        self.release = threading.Semaphore(0)
        self.served: list[socket.socket] = []  # those that brought a request
        self.thread.start()

    def _serve(self, sock: socket.socket, i: int) -> None:
        buf = b""
        counted = False
        try:
            while True:
                while not (b"\r\n\r\n" in buf and buf.endswith(b"}")):
                    data = sock.recv(65536)
                    if not data:
                        return
                    buf += data
                buf = b""
                if not counted:
                    counted = True
                    self.accepted += 1
                    self.served.append(sock)
                sock.sendall(HEAD + b"%x\r\n%s\r\n" % (len(EVENT), EVENT))
                self.release.acquire()
                sock.sendall(b"0\r\n\r\n")
        except OSError:
            return

    def close(self) -> None:
        for _ in range(8):
            self.release.release()
        super().close()


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    up = Upstream()
    try:
        yield up
    finally:
        up.close()


def ask(port: int) -> bytes:
    """One request on a new connection, read to its end marker, then closed (as openai-python's
    and the AI SDK's streams may be, once the caller stops reading)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(REQUEST)
        got = b""
        while not got.endswith(b"data: [DONE]\n\n\r\n"):
            data = sock.recv(65536)
            assert data, got
            got += data
    return got


def wait(check: object, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "the gateway never got there"
        time.sleep(0.01)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_client_that_leaves_before_the_upstreams_last_chunk(
    upstream: Upstream, backend: str
) -> None:
    server = GatewayServer(Endpoint.parse(f"http://127.0.0.1:{upstream.port}"))
    with anyio.from_thread.start_blocking_portal(backend=backend) as portal:
        future, port = portal.start_task(server.serve, "127.0.0.1", 0)
        try:
            for _ in range(3):
                got = ask(port)  # its end marker came
                assert got.startswith(b"HTTP/1.1 200 "), got
                assert EVENT in got, got
                wait(lambda: server.state.connections == 0)  # the client's close was seen
                upstream.release.release()  # now the upstream's last chunk
                wait(lambda: server.state.streams == 0)
                wait(lambda: len(server._impl.pool) == 1)  # back once that chunk is read
                wait(lambda: not server._impl.clients)
            assert upstream.accepted == 1
        finally:
            future.cancel()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_pool_of_size_zero_keeps_no_connection(upstream: Upstream, backend: str) -> None:
    """``--pool-size 0``, for an upstream not trusted to answer only what it is asked (attack
    33, F4): every request gets a connection of its own, closed after its answer."""
    server = GatewayServer(Endpoint.parse(f"http://127.0.0.1:{upstream.port}"), pool_size=0)
    with anyio.from_thread.start_blocking_portal(backend=backend) as portal:
        future, port = portal.start_task(server.serve, "127.0.0.1", 0)
        try:
            for i in range(3):
                assert EVENT in ask(port)
                upstream.release.release()
                wait(lambda: not server._impl.clients and server.state.streams == 0)
                assert not server._impl.pool
                sock = upstream.served[i]
                sock.settimeout(10)
                assert sock.recv(1) == b""  # the gateway closed it
            assert upstream.accepted == 3
        finally:
            future.cancel()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_drain_whose_last_chunk_never_comes_is_closed_at_its_deadline(
    upstream: Upstream, backend: str
) -> None:
    server = GatewayServer(Endpoint.parse(f"http://127.0.0.1:{upstream.port}"), connect_timeout=0.5)
    with anyio.from_thread.start_blocking_portal(backend=backend) as portal:
        future, port = portal.start_task(server.serve, "127.0.0.1", 0)
        try:
            ask(port)  # the client leaves after [DONE]; the upstream's last chunk never comes
            wait(lambda: not server._impl.clients)  # the drain's deadline passed
            assert not server._impl.pool
            (sock,) = upstream.served
            sock.settimeout(10)
            assert sock.recv(1) == b""  # the gateway closed that connection
        finally:
            future.cancel()


class EarlyUpstream(Listener):
    """Answers each request as soon as its head came, before reading its body (which HTTP
    allows, RFC 9112 9.3), and reads the body only once told (`read_bodies`); then serves the
    next request on the same connection. Its sockets take little at a time (a small receive
    buffer), so that a large body is still being written while its answer is read. Records
    each connection's request lines, and whether the gateway closed it."""

    def __init__(self) -> None:
        super().__init__(receive_buffer=65536)
        self.read_bodies = threading.Event()
        self.lines: list[list[bytes]] = []  # per connection
        self.closed: list[bool] = []  # per connection: the gateway closed it
        self.thread.start()

    def _opened(self) -> None:
        self.lines.append([])
        self.closed.append(False)

    def _serve(self, sock: socket.socket, i: int) -> None:
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = sock.recv(65536)
                    if not data:
                        self.closed[i] = True
                        return
                    buf += data
                head, buf = buf.split(b"\r\n\r\n", 1)
                self.lines[i].append(head.split(b"\r\n", 1)[0])
                length = next(
                    (int(h.split(b":", 1)[1]) for h in head.split(b"\r\n")
                     if h.lower().startswith(b"content-length:")), 0,
                )  # fmt: skip
                sock.sendall(HEAD + b"%x\r\n%s\r\n0\r\n\r\n" % (len(EVENT), EVENT))
                if length > 65536:
                    self.read_bodies.wait(30)
                while len(buf) < length:
                    data = sock.recv(65536)
                    if not data:
                        self.closed[i] = True
                        return
                    buf += data
                buf = buf[length:]
        except OSError:
            return

    def close(self) -> None:
        self.read_bodies.set()
        super().close()


@pytest.fixture
def early() -> Iterator[EarlyUpstream]:
    up = EarlyUpstream()
    try:
        yield up
    finally:
        up.close()


def post(port: int, path: bytes, body: bytes, until: bytes, timeout: float = 30) -> bytes:
    """One request on a new connection, read until ``until`` comes or the gateway closes."""
    head = b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" % path
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        got = b""
        while until not in got:
            data = sock.recv(65536)
            if not data:
                break
            got += data
    return got


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_connection_whose_request_is_still_being_written_is_not_pooled(
    early: EarlyUpstream, backend: str
) -> None:
    """Attack round 32 (F2): on trio, a connection went to the pool while the translated
    request's 8 MiB were still being written (the upstream had answered first); the pooling
    cancelled the write, and the next request was read by the upstream as the rest of that
    body. A connection is pooled only once all its request's bytes are written."""
    server = GatewayServer(Endpoint.parse(f"http://127.0.0.1:{early.port}"))
    big = {"model": "m", "max_tokens": 8, "stream": True,
           "messages": [{"role": "user", "content": "x" * (8 << 20)}]}  # fmt: skip
    with anyio.from_thread.start_blocking_portal(backend=backend) as portal:
        future, port = portal.start_task(server.serve, "127.0.0.1", 0)
        try:
            got = post(port, b"/v1/messages", json.dumps(big).encode(), b"message_stop")
            assert got.startswith(b"HTTP/1.1 200 "), got[:300]
            assert b"message_stop" in got, got[-300:]
            wait(lambda: not server._impl.clients and server.state.streams == 0)
            assert not server._impl.pool  # its body was still being written: closed
            wait(lambda: True in early.closed)
            early.read_bodies.set()
            again = post(port, b"/v1/chat/completions", BODY, b"data: [DONE]\n\n", timeout=10)
            assert again.startswith(b"HTTP/1.1 200 "), again[:300]
            assert EVENT[:40] in again, again[:300]
            served = [lines for lines in early.lines if any(b"POST" in x for x in lines)]
            assert [len(x) for x in served] == [1, 1]  # each request on its own connection
        finally:
            future.cancel()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_passed_through_request_for_two_choices_is_refused_and_its_upstream_closed(
    upstream: Upstream, backend: str
) -> None:
    """Attack round 32 (F3): a relayed request for ``n`` choices past the bound of a body held
    whole goes upstream as it comes; its ``n``, found at its end, refuses it (the upstream
    answers once it has the whole body: after the refusal), and the connection is closed,
    never given to the next request."""
    server = GatewayServer(Endpoint.parse(f"http://127.0.0.1:{upstream.port}"))
    body = json.dumps(
        {"model": "m", "messages": [{"role": "user", "content": "x" * 100_000}], "stream": True,
         "n": 2}
    ).encode()  # fmt: skip
    with anyio.from_thread.start_blocking_portal(backend=backend) as portal:
        future, port = portal.start_task(server.serve, "127.0.0.1", 0)
        try:
            got = post(port, b"/v1/chat/completions", body, b"}}")
            assert got.startswith(b"HTTP/1.1 400 "), got[:300]
            assert b'"param": "$.n"' in got, got
            wait(lambda: not server._impl.clients and server.state.streams == 0)
            assert not server._impl.pool
            again = post(port, b"/v1/chat/completions", BODY, b"data: [DONE]\n\n", timeout=10)
            assert again.startswith(b"HTTP/1.1 200 "), again[:300]
            assert EVENT[:40] in again, again[:300]
            assert server.state.connections <= 1
        finally:
            future.cancel()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_an_unreachable_upstream_is_a_502_that_says_why(backend: str) -> None:
    """Attack 35, F2: trio said only anyio's "All connection attempts failed" where asyncio
    said "Too many open files": both say the error that failed the connection."""
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port_of_nothing = closed.getsockname()[1]
    closed.close()  # nothing listens there: refused
    server = GatewayServer(Endpoint.parse(f"http://127.0.0.1:{port_of_nothing}"))
    with anyio.from_thread.start_blocking_portal(backend=backend) as portal:
        future, port = portal.start_task(server.serve, "127.0.0.1", 0)
        try:
            got = post(port, b"/v1/chat/completions", BODY, b"}}", timeout=30)
            assert got.startswith(b"HTTP/1.1 502 "), got[:300]
            assert b"the gateway cannot reach its upstream: [Errno 111] " in got, got
        finally:
            future.cancel()


REFUSAL = b'{"error":{"message":"too long","type":"invalid_request_error"}}'


class EarlyRefusal(Listener):
    """An upstream that answers at the head of each request, its body unread (a front proxy's
    413, a context too long), and closes: the unread body makes the kernel reset it."""

    def _serve(self, sock: socket.socket, i: int) -> None:
        head = b""
        while b"\r\n\r\n" not in head and (data := sock.recv(65536)):
            head += data
        sock.sendall(
            b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nConnection: close"
            b"\r\nContent-Length: %d\r\n\r\n%s" % (len(REFUSAL), REFUSAL)
        )
        sock.close()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_an_answer_the_upstream_sent_before_it_reset_is_the_clients(backend: str) -> None:
    """Attack 69 F5: an upstream that refused a large body at its head, then closed (a reset,
    the body unread), was a 502 "connection reset" on asyncio 6 to 8 times in 10: its transport
    closes at the write that fails without reading what came. The client gets the upstream's
    answer, every time, on both servers."""
    upstream = EarlyRefusal()
    upstream.thread.start()
    server = GatewayServer(Endpoint.parse(f"http://127.0.0.1:{upstream.port}"))
    body = json.dumps({"model": "m", "stream": True, "messages": [
        {"role": "user", "content": "x" * 3_000_000}]}).encode()  # fmt: skip
    request = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
    ) + body
    try:
        with anyio.from_thread.start_blocking_portal(backend=backend) as portal:
            future, port = portal.start_task(server.serve, "127.0.0.1", 0)
            try:
                for _ in range(8):
                    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
                        with contextlib.suppress(OSError):  # (it may stop reading the body)
                            s.sendall(request)
                        got = b""
                        with contextlib.suppress(OSError):
                            while data := s.recv(65536):
                                got += data
                    assert got.startswith(b"HTTP/1.1 400 "), got[:200]
                    assert got.endswith(REFUSAL), got[-200:]
            finally:
                future.cancel()
    finally:
        upstream.close()
