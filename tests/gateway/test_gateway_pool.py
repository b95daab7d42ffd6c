"""The gateway's pool of upstream connections on loopback (Rule 6 of the session): a client
that closes as soon as its answer's end marker came, before the upstream's last chunk, still
leaves its upstream connection for the next request, on either server. A client that reads to
its body's end waits for the upstream's (session Rule 1)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import anyio.from_thread
import pytest

from svir_proto.openai import Endpoint
from svir_proto.transports.gateway import GatewayServer

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


class Upstream:
    """Answers each request with its whole stream, and the body's last chunk only once told
    (`release`); counts the connections that brought a request (the readiness probe's
    ``GET`` is not answered)."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.accepted = 0
        self.release = threading.Semaphore(0)
        self.socks: list[socket.socket] = []
        self.served: list[socket.socket] = []  # those that brought a request
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            self.socks.append(sock)
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
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
        self.listener.close()
        for _ in range(8):
            self.release.release()
        for sock in self.socks:
            sock.close()
        self.thread.join(5)


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
