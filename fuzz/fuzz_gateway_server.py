"""Atheris target for the gateway server itself (`GatewayServer` on asyncio, in this process, on
loopback): ``python fuzz/fuzz_gateway_server.py CORPUS fuzz/corpus/gateway_server``.

One server runs for the whole run, in front of the hostile upstream of the test suite
(tests/gateway/hostile_upstream.py). For each input, three clients:

- A sends the input's bytes (from its third byte on) in the pieces the input's own bytes choose
  (`_harness.cuts`), then resets its connection or closes it (the second byte's bit 0);
- B, at the same time, makes a valid request (either dialect, bit 1) to the upstream scenario
  the first byte picks, reads a little of its answer, then resets or closes (bit 2);
- C, afterwards, is a normal client: ``/healthz``, then an OpenAI stream that must be whole.

Invariant: the server survives (its task has not ended, the event loop reported no exception,
it logged no error), C gets whole answers, and once A and B are gone every stream slot and
byte of the body budget is given back.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import logging
import socket
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.gateway's upstream

from _harness import cuts, fuzz

from svir_proto.gateway import GatewayConfig
from svir_proto.openai import ChatStreamDecoder, Endpoint
from svir_proto.transports.gateway import GatewayServer
from tests.gateway.hostile_upstream import OK_TEXT, HostileUpstream

SCENARIOS = (
    "ok", "stall-mid", "rst-mid", "rst-head", "fin-head", "gzip", "bad-chunk", "keepalive-only:0.1",
    "flood:20000", "status:429", "status:401", "status:500", "json", "continue", "switch",
    "both-framing", "trailing-garbage", "invalid-utf8", "endless-event", "huge-head:64",
    "head-only-close", "stall-head:0.3", "early:413", "close", "http10", "drip",
)  # fmt: skip


class _Errors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append(record.getMessage())


class _Running:
    """The one server (and upstream) of this process, on a loop in a thread of its own."""

    def __init__(self) -> None:
        self.upstream = HostileUpstream()
        config = GatewayConfig(
            upstream=Endpoint.parse(self.upstream.base),
            allowed_hosts=frozenset({"127.0.0.1", "localhost"}),
            max_head_size=4096,
            max_body=256 * 1024,
            max_buffered=1024 * 1024,
            max_streams=32,
            max_connections=64,
            head_timeout=2.0,
            body_timeout=2.0,
            idle_timeout=2.0,
            send_timeout=2.0,
            connect_timeout=2.0,
            progress_timeout=2.0,
            keepalive=0.5,
        )
        self.server = GatewayServer(config, probe_interval=60.0)
        self.errors = _Errors()
        logging.getLogger("svir.gateway").addHandler(self.errors)
        logging.getLogger("asyncio").addHandler(self.errors)
        self.loop = asyncio.new_event_loop()
        self.loop.set_exception_handler(self._exception)
        self.task: asyncio.Future[Any] | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.port:
            if time.monotonic() > deadline:
                raise RuntimeError("the gateway did not start")
            time.sleep(0.01)
        self.port = self.server.port
        atexit.register(self.close)

    def _exception(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        self.errors.seen.append(f"{context.get('message')}: {exc!r}")

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.task = self.loop.create_task(self.server.serve("127.0.0.1", 0))
        with contextlib.suppress(BaseException):
            self.loop.run_until_complete(self.task)

    def alive(self, since: int = 0) -> str | None:
        """Why the server is not fine (errors after the ``since``-th), or ``None``."""
        if self.task is not None and self.task.done():
            return f"serve() ended: {self.task!r}"
        if self.errors.seen[since:]:
            return f"errors: {self.errors.seen[since:]}"
        return None

    def close(self) -> None:
        if self.task is not None and not self.task.done():
            self.loop.call_soon_threadsafe(self.task.cancel)
        self.thread.join(10)
        if not self.loop.is_running():
            self.loop.close()
        self.upstream.close()


_server: _Running | None = None


def server() -> _Running:
    global _server
    if _server is None:
        _server = _Running()
    return _server


def _connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def _leave(s: socket.socket, reset: bool) -> None:
    with contextlib.suppress(OSError):
        if reset:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def _glance(s: socket.socket, seconds: float) -> None:
    s.settimeout(seconds)
    with contextlib.suppress(OSError):
        s.recv(65536)


def _request(scenario: str, llm: bool) -> bytes:
    rid = f"{scenario}~fuzz"
    if llm:
        body = json.dumps(
            {
                "version": "1.0",
                "stream": True,
                "model": "m",
                "metadata": {"request_id": rid},
                "messages": [{"role": "user", "content": "hi"}],
            }
        ).encode()
        kind = "application/llm-request+json"
    else:
        body = json.dumps(
            {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        ).encode()
        kind = "application/json"
    return (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {kind}\r\n"
        f"X-Request-Id: {rid}\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body


def _read_all(s: socket.socket, done: bytes, seconds: float = 20.0) -> bytes:
    s.settimeout(seconds)
    got = b""
    while done not in got:
        data = s.recv(65536)
        if not data:
            break
        got += data
    return got


def _normal_client(port: int) -> None:
    with _connect(port) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        got = _read_all(s, b'{"status":"ok"}')
        assert got.startswith(b"HTTP/1.1 200 OK\r\n"), got
        s.sendall(_request("ok", llm=False))
        got = _read_all(s, b"0\r\n\r\n")
    head, _, body = got.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n"), got[:300]
    decoder = ChatStreamDecoder()
    decoder.feed(_dechunk(body))
    decoder.close()
    assert decoder.result.text == OK_TEXT, got[-300:]


def _dechunk(body: bytes) -> bytes:
    out = []
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out.append(rest[:size])
        body = rest[size + 2 :]
    return b"".join(out)


def test_one_input(data: bytes) -> None:
    running = server()
    state = running.server.state
    errors = len(running.errors.seen)
    scenario = SCENARIOS[data[0] % len(SCENARIOS)] if data else "ok"
    flags = data[1] if len(data) > 1 else 0
    a = _connect(running.port)
    b = _connect(running.port)
    try:
        b.sendall(_request(scenario, llm=bool(flags & 2)))
        for piece in cuts(data[2:]):
            try:
                a.sendall(piece)
            except OSError:  # the gateway closed on it: what it sent is enough
                break
        _glance(b, 0.02)
        _glance(a, 0.005)
    finally:
        _leave(a, reset=bool(flags & 1))
        _leave(b, reset=bool(flags & 4))
    _normal_client(running.port)
    deadline = time.monotonic() + 15
    while (state.streams or state.buffered) and time.monotonic() < deadline:
        time.sleep(0.01)
    problem = running.alive(errors)
    assert problem is None, f"after {data!r}: {problem}"
    assert state.streams == 0, f"after {data!r}: {state.streams} stream slots left held"
    assert state.buffered == 0, f"after {data!r}: {state.buffered} bytes of budget left held"


if __name__ == "__main__":
    fuzz(test_one_input)
