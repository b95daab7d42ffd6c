"""The gateway in front of an https upstream that resets its connection (attack 71 F1: on
asyncio the client got no answer at all, where an http upstream's reset is a 502: reading
what the kernel held of the connection asked a TLS transport for the socket it had let go).
The upstream is a TLS server of ours on loopback, with a certificate made for the test."""

from __future__ import annotations

import json
import socket
import ssl
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from svir_proto.openai import Endpoint
from tests.gateway.test_gateway_server import backend, gateway  # noqa: F401  (both servers)
from tests.sockets import wake

MESSAGES = b'{"model": "claude", "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}]'
EVENT = (
    b'event: message_start\ndata: {"type": "message_start", "message": {"id": "msg_1", "type": '
    b'"message", "role": "assistant", "model": "claude", "content": [], "stop_reason": null, '
    b'"usage": {"input_tokens": 5, "output_tokens": 1}}}\n\n'
    b'event: content_block_start\ndata: {"type": "content_block_start", "index": 0, '
    b'"content_block": {"type": "text", "text": ""}}\n\n'
    b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, '
    b'"delta": {"type": "text_delta", "text": "Hello"}}\n\n'
)


class Resetting:
    """An https upstream that reads a request's head and body, then resets the connection:
    at once (``before``), or after the head and first events of a stream."""

    def __init__(self, certificate: tuple[Path, Path], when: str) -> None:
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(*map(str, certificate))
        self.when = when
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.served = 0
        self.go = threading.Event()  # a stream's client has its first events: reset now
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                raw, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        with raw:
            raw.settimeout(30)
            try:
                with self.context.wrap_socket(raw, server_side=True) as tls:  # (raw's fd, now)
                    self._answer(tls)
            except (OSError, ssl.SSLError):
                pass

    def _answer(self, tls: ssl.SSLSocket) -> None:
        got = b""
        while b"\r\n\r\n" not in got or not (got.startswith(b"GET") or got.endswith(b"}")):
            data = tls.recv(65536)  # (a head, and a POST's JSON body, which ends so)
            if not data:
                return
            got += data
        self.served += got.startswith(b"POST")
        if self.when == "stream":
            head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            tls.sendall(
                head + b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n" % (len(EVENT), EVENT)
            )
            self.go.wait(30)
        # a reset (SO_LINGER 0) at the close, under the TLS layer: no close_notify
        tls.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    def close(self) -> None:
        wake(self.listener)
        self.listener.close()
        self._thread.join(30)


@pytest.fixture
def upstream(certificate: tuple[Path, Path], request: pytest.FixtureRequest) -> Iterator[Resetting]:
    server = Resetting(certificate, request.param)
    try:
        yield server
    finally:
        server.close()


def post(root: str, body: bytes, seen: threading.Event | None = None) -> tuple[int, bytes]:
    """The gateway's whole answer (``seen`` is set once it has the text "Hello")."""
    host, port = root.removeprefix("http://").split("/")[0].split(":")
    with socket.create_connection((host, int(port)), timeout=60) as s:
        s.sendall(
            b"POST /v1/messages HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
            b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        got = b""
        while data := s.recv(65536):
            got += data
            if seen is not None and b"Hello" in got:
                seen.set()
    status = int(got.split(b" ", 2)[1]) if got else 0
    return status, got


def https_gateway(upstream: Resetting, certificate: tuple[Path, Path]) -> object:
    context = ssl.create_default_context(cafile=str(certificate[0]))
    endpoint = Endpoint.parse(f"https://127.0.0.1:{upstream.port}/v1", api_key="k")
    return gateway(endpoint, upstream_dialect="messages", ssl_context=context)


@pytest.mark.parametrize("upstream", ["before"], indirect=True)
@pytest.mark.parametrize("stream", [False, True])
def test_a_reset_before_the_answer_is_a_502(
    upstream: Resetting, certificate: tuple[Path, Path], stream: bool
) -> None:
    body = MESSAGES + (b', "stream": true}' if stream else b"}")
    with https_gateway(upstream, certificate) as (root, _):  # type: ignore[attr-defined]
        status, got = post(root, body)
    assert status == 502, got
    error = json.loads(got.split(b"\r\n\r\n", 1)[1])
    assert error["type"] == "error"
    assert "upstream" in error["error"]["message"]
    assert upstream.served >= 1


@pytest.mark.parametrize("upstream", ["stream"], indirect=True)
def test_a_reset_in_a_stream_stays_a_cut(
    upstream: Resetting, certificate: tuple[Path, Path]
) -> None:
    """Rule 5: a cut upstream stays a cut, its events that came before it relayed."""
    with https_gateway(upstream, certificate) as (root, _):  # type: ignore[attr-defined]
        status, got = post(root, MESSAGES + b', "stream": true}', upstream.go)
    assert status == 200, got
    assert b'"text": "Hello"' in got or b'"text":"Hello"' in got
    assert not got.endswith(b"0\r\n\r\n")  # the chunked body is not ended: a cut
