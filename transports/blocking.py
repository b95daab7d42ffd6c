"""The blocking transport: `socket` and `ssl` under a `ClientConnection`, for threads and scripts.

It moves bytes only: writes what the connection gives it, reads when it needs data, applies the
timeouts (`Timeouts`) and closes the socket when the stream ends early. What the bytes mean,
whether to retry and what to send instead are the core's (`next_attempt`). TLS is verified by
default; pass an `ssl.SSLContext` for anything else.

    with Client("http://localhost:8080") as client:
        with client.stream_chat(request) as stream:
            for event in stream:
                ...
        print(stream.result)
"""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Callable, Iterator
from typing import Any

from ..connection import ClientConnection
from ..errors import SvirProtocolError
from ..exchange import ModelsRequest
from ..llmstream.request import LLMRequest
from ..openai.endpoint import Endpoint, ModelInfo
from ..openai.request import ChatRequest
from ._shared import (
    DEFAULT_TIMEOUTS,
    DRAIN_LIMIT,
    READ_SIZE,
    Batches,
    ChatStream,
    ConnectError,
    Phase,
    Stale,
    StreamTimeout,
    Timeouts,
    UploadProgress,
    attempts,
    dropped,
    limit,
    listed,
)

__all__ = ["Client", "list_models", "stream_chat"]


class Client:
    """A connection to one server, kept alive between requests when the server allows it.

    Args:
        endpoint: an `Endpoint`, or a base URL (with ``api_key``).
        timeouts: see `Timeouts`.
        retries: how many times a failed request may be sent again (`next_attempt`); 0: never.
        ssl_context: for https; the default verifies the server's certificate.
        on_upload: called with (bytes sent, Content-Length) while a body is written.
        options: for each `ClientConnection` (decoder bounds, ``think_opened``...).
    """

    def __init__(
        self,
        endpoint: Endpoint | str,
        *,
        api_key: str | None = None,
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
        retries: int = 2,
        ssl_context: ssl.SSLContext | None = None,
        on_upload: UploadProgress | None = None,
        sleep: Callable[[float], None] = time.sleep,
        **options: Any,
    ) -> None:
        self.endpoint = (
            endpoint if isinstance(endpoint, Endpoint) else Endpoint.parse(endpoint, api_key)
        )
        self.timeouts = timeouts
        self.retries = retries
        self._ssl = ssl_context
        self._on_upload = on_upload
        self._sleep = sleep
        self._options = options
        self._sock: socket.socket | None = None
        self._conn: ClientConnection | None = None
        self.connections = 0
        """How many connections this client has opened (keep-alive shows in it)."""

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
        self._sock = self._conn = None

    def stream_chat(self, request: ChatRequest | LLMRequest) -> ChatStream:
        """Send ``request``; the returned `ChatStream` yields the answer's events."""
        return ChatStream(request, self._run)

    def list_models(self) -> tuple[ModelInfo, ...]:
        """``GET /v1/models``, chat models first. Raises `RequestFailedError` on a failure."""
        with ChatStream(ModelsRequest(), self._run) as stream:
            events = list(stream)
        return listed(events, stream.result.error)

    # -- the loop: attempts, then one exchange ------------------------------------------------

    def _run(self, stream: ChatStream) -> Batches:
        return attempts(
            stream,
            self._attempt,
            retries=self.retries,
            total=self.timeouts.total,
            sleep=self._sleep,
        )

    def _attempt(self, stream: ChatStream, deadline: float | None) -> Batches:
        for reopen in (False, True):  # a kept-alive connection found closed: once more, anew
            try:
                yield from self._exchange(stream, deadline, fresh=reopen)  # batches
                return
            except Stale:
                self.close()

    def _exchange(self, stream: ChatStream, deadline: float | None, *, fresh: bool) -> Batches:
        sock, conn, reused = self._ready(deadline, fresh)
        pieces = conn.send(stream.request)
        stream.exchange = conn.exchange
        heard = False
        try:
            self._write(sock, conn, pieces, deadline, reused)
            while conn.terminal is None:
                data = self._read(sock, "read" if heard else "first_byte", deadline)
                if not data and not heard and reused:
                    raise Stale
                heard = True
                yield conn.feed(data)
                if conn.error is not None:  # the events before it went out: now the error
                    raise conn.error
                if not data:
                    break
        except StreamTimeout as exc:
            yield conn.interrupt(str(exc))
            self.close()
            raise
        except BaseException as exc:  # a cancel, the caller leaving the stream, a bad stream
            why = (
                "the caller left the stream"
                if isinstance(exc, GeneratorExit)
                else f"cancelled ({type(exc).__name__})"
            )
            conn.interrupt(why)
            self.close()
            raise
        self._finish(sock, conn, deadline)

    def _finish(self, sock: socket.socket, conn: ClientConnection, deadline: float | None) -> None:
        """Read what is left of a finished response (a chunked body's last chunk), a little
        at most, so that the connection serves the next request; else close it."""
        left = DRAIN_LIMIT
        try:
            while conn.finishing and left > 0:
                data = self._read(sock, "read", deadline)
                left -= len(data) or left
                conn.feed(data)
        except (SvirProtocolError, StreamTimeout, OSError):
            pass
        if not conn.reusable:
            self.close()

    def _ready(
        self, deadline: float | None, fresh: bool
    ) -> tuple[socket.socket, ClientConnection, bool]:
        """An open connection: the kept-alive one if the server left it open, else a new one;
        and whether it was reused."""
        conn = self._conn
        if (
            not fresh
            and conn is not None
            and conn.reusable
            and self._sock is not None
            and not dropped(self._sock)
        ):
            conn.start_next_cycle()
            return self._sock, conn, True
        self.close()
        ep = self.endpoint
        timeout, phase = limit(self.timeouts.connect, "connect", deadline)
        try:
            sock = socket.create_connection((ep.host, ep.port), timeout=timeout)
            if ep.scheme == "https":
                context = self._ssl or ssl.create_default_context()
                sock = context.wrap_socket(sock, server_hostname=ep.host)
        except TimeoutError:
            raise StreamTimeout(phase, timeout or 0.0) from None
        except OSError as exc:  # refused, unknown host, TLS verification
            raise ConnectError(f"cannot connect to {ep.host}:{ep.port}: {exc}") from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock = sock
        self._conn = conn = ClientConnection(ep, **self._options)
        self.connections += 1
        return sock, conn, False

    def _write(
        self,
        sock: socket.socket,
        conn: ClientConnection,
        pieces: Iterator[bytes],
        deadline: float | None,
        reused: bool,
    ) -> None:
        exchange = conn.exchange
        total = exchange.body.content_length if exchange is not None and exchange.body else 0
        sent = 0
        try:
            for piece in pieces:
                timeout, phase = limit(self.timeouts.read, "write", deadline)
                sock.settimeout(timeout)
                try:
                    sock.sendall(piece)
                except TimeoutError:
                    raise StreamTimeout(phase, timeout or 0.0) from None
                sent += len(piece)
                if self._on_upload is not None and total:
                    self._on_upload(min(sent, total), total)
        except (BrokenPipeError, ConnectionResetError):
            if reused:
                raise Stale from None
            conn.send_failed()  # the server stopped reading: it may have answered already

    def _read(self, sock: socket.socket, phase: Phase, deadline: float | None) -> bytes:
        timeout, phase = limit(getattr(self.timeouts, phase), phase, deadline)
        sock.settimeout(timeout)
        try:
            return sock.recv(READ_SIZE)
        except TimeoutError:
            raise StreamTimeout(phase, timeout or 0.0) from None
        except (ConnectionResetError, ssl.SSLError):
            return b""  # the server dropped the connection: the end of what it sent


def stream_chat(
    endpoint: Endpoint | str, request: ChatRequest | LLMRequest, **options: Any
) -> ChatStream:
    """One streamed answer on a connection of its own, closed with the stream; ``options`` as
    for `Client` (``api_key``, ``timeouts``, ``retries``...)."""
    client = Client(endpoint, **options)

    def run(stream: ChatStream) -> Batches:
        try:
            yield from client._run(stream)
        finally:
            client.close()

    return ChatStream(request, run)


def list_models(endpoint: Endpoint | str, **options: Any) -> tuple[ModelInfo, ...]:
    """``GET /v1/models`` (chat models first); ``options`` as for `Client`."""
    with Client(endpoint, **options) as client:
        return client.list_models()
