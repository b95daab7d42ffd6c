"""A scripted upstream for `test_hostile_http1`: the hostile battery's upstream
(`hostile_upstream.HostileUpstream`, whose every scenario it still serves), plus answers a test
writes itself, byte for byte, registered under a request id (`ScriptedUpstream.on`).

A handler is called with the connection (`_ScriptedConn`: ``send``, ``send_slowly``,
``reset``, ``wait_gone``, ``body``) and the request as the upstream saw it (`Seen`, with
``conn_no``, the number of the upstream connection, and ``index``, how many requests that
connection served before this one: a request with ``index`` above 0 came on a pooled,
kept-alive connection). It returns whether the connection may serve another request. A request
whose id has no handler gets the hostile upstream's scenarios (``ok`` by default: the recorded
llama.cpp stream, or its JSON answer, or the model listing).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Final

from tests.gateway.hostile_upstream import (
    JSON_ANSWER,
    MODELS,
    OK_FIXTURE,
    SSE_HEAD,
    HostileUpstream,
    Seen,
    _Conn,
    _Gone,
    chunk,
    events_of,
)

SMUGGLED: Final = "SMUGGLED-ANSWER"
"""The text of a stream an upstream sends to no request: no client may ever read it."""


def fake_stream(text: str = SMUGGLED) -> bytes:
    """A whole chunked SSE answer with ``text``: what an upstream slips onto a kept-alive
    connection, hoping the next request takes it for its answer."""
    event = (
        b'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m",'
        b'"choices":[{"index":0,"delta":{"content":"%s"},"finish_reason":"stop"}]}\n\n'
        % text.encode()
    )
    return SSE_HEAD + chunk(event) + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n"


def fake_json(text: str = SMUGGLED) -> bytes:
    body = JSON_ANSWER.replace(b"I'm so glad", text.encode())
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
        % len(body)
        + body
    )


def ok_stream() -> bytes:
    """The hostile upstream's ``ok`` answer, whole, as bytes."""
    return SSE_HEAD + b"".join(chunk(e) for e in events_of(*OK_FIXTURE)) + b"0\r\n\r\n"


def ok_json() -> bytes:
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
        % len(JSON_ANSWER)
        + JSON_ANSWER
    )


def ok_models() -> bytes:
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
        % len(MODELS)
        + MODELS
    )


Handler = Callable[["_ScriptedConn", Seen], bool]


class _ScriptedConn(_Conn):
    def __init__(self, server: ScriptedUpstream, sock: socket.socket) -> None:
        super().__init__(server, sock)
        self.served = 0
        self.scripted = server

    def serve(self, seen: Seen) -> bool:
        seen.index = self.served  # type: ignore[attr-defined]
        self.served += 1
        handler = self.scripted.handler(seen.rid)
        if handler is None:
            return super().serve(seen)
        return handler(self, seen)

    def body(self, seen: Seen) -> bytes:
        """Read the request's body (a handler that answers before it need not)."""
        seen.body = self.read_body(seen)
        seen.body_size = len(seen.body)
        return seen.body

    def send_slowly(self, data: bytes, size: int = 1, pause: float = 0.002) -> None:
        """``data`` a few bytes a write, so that the gateway reads it in many pieces."""
        for i in range(0, len(data), size):
            self.send(data[i : i + size])
            time.sleep(pause)


class ScriptedUpstream(HostileUpstream):
    """`HostileUpstream`, plus handlers registered by request id (see the module docstring)."""

    def __init__(self) -> None:
        self._handlers: dict[str, Handler] = {}
        super().__init__()

    connection = _ScriptedConn

    def on(self, rid: str, handler: Handler) -> str:
        """Answer requests whose id is ``rid`` with ``handler``; returns ``rid``."""
        with self._lock:
            self._handlers[rid] = handler
        return rid

    def handler(self, rid: str) -> Handler | None:
        with self._lock:
            return self._handlers.get(rid)


__all__ = [
    "SMUGGLED",
    "ScriptedUpstream",
    "Seen",
    "_Gone",
    "_ScriptedConn",
    "fake_json",
    "fake_stream",
    "ok_json",
    "ok_models",
    "ok_stream",
]
