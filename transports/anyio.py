"""The anyio transport: one implementation that runs under asyncio and under trio.

It mirrors `svir_proto.transports.blocking` line for line (one contract suite holds the two to
the same behaviour, STYLE.md 1): it writes what the `ClientConnection` gives it, reads when it
needs data, applies the timeouts with anyio's cancel scopes, and on a cancel (a cancel scope,
``KeyboardInterrupt``, leaving the ``async with`` early) closes the connection at once and keeps
the partial result.

    async with Client("http://localhost:8080") as client:
        async with client.stream_chat(request) as stream:
            async for event in stream:
                ...
"""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from typing import Any

import anyio
import anyio.abc

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
    AsyncBatches,
    AsyncChatStream,
    ConnectError,
    Phase,
    Stale,
    StreamTimeout,
    Timeouts,
    UploadProgress,
    aattempts,
    dropped,
    limit,
    listed,
)

__all__ = ["Client", "list_models", "stream_chat"]

_EOF = (anyio.EndOfStream, anyio.BrokenResourceError, ssl.SSLError, ConnectionResetError)


class Client:
    """A connection to one server, kept alive between requests; see the blocking `Client`."""

    def __init__(
        self,
        endpoint: Endpoint | str,
        *,
        api_key: str | None = None,
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
        retries: int = 2,
        ssl_context: ssl.SSLContext | None = None,
        on_upload: UploadProgress | None = None,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
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
        self._stream: anyio.abc.ByteStream | None = None
        self._conn: ClientConnection | None = None
        self.connections = 0

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._stream is not None:
            await anyio.aclose_forcefully(self._stream)
        self._stream = self._conn = None

    def stream_chat(self, request: ChatRequest | LLMRequest) -> AsyncChatStream:
        """Send ``request``; the returned `AsyncChatStream` yields the answer's events."""
        return AsyncChatStream(request, self._run)

    async def list_models(self) -> tuple[ModelInfo, ...]:
        """``GET /v1/models``, chat models first. Raises `RequestFailedError` on a failure."""
        async with AsyncChatStream(ModelsRequest(), self._run) as stream:
            events = [event async for event in stream]
        return listed(events, stream.result.error)

    # -- the loop: attempts, then one exchange ------------------------------------------------

    def _run(self, stream: AsyncChatStream) -> AsyncBatches:
        return aattempts(
            stream,
            self._attempt,
            retries=self.retries,
            total=self.timeouts.total,
            sleep=self._sleep,
        )

    async def _attempt(self, stream: AsyncChatStream, deadline: float | None) -> AsyncBatches:
        for reopen in (False, True):  # a kept-alive connection found closed: once more, anew
            try:
                async with aclosing(self._exchange(stream, deadline, fresh=reopen)) as batches:
                    async for batch in batches:
                        yield batch
                return
            except Stale:
                await self.aclose()

    async def _exchange(
        self, stream: AsyncChatStream, deadline: float | None, *, fresh: bool
    ) -> AsyncBatches:
        byte_stream, conn, reused = await self._ready(deadline, fresh)
        pieces = conn.send(stream.request)
        stream.exchange = conn.exchange
        heard = False
        try:
            await self._write(byte_stream, conn, pieces, deadline, reused)
            while conn.terminal is None:
                data = await self._read(byte_stream, "read" if heard else "first_byte", deadline)
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
            await self.aclose()
            raise
        except BaseException as exc:  # a cancel, the caller leaving the stream, a bad stream
            why = (
                "the caller left the stream"
                if isinstance(exc, GeneratorExit)
                else f"cancelled ({type(exc).__name__})"
            )
            conn.interrupt(why)
            await self.aclose()
            raise
        await self._finish(byte_stream, conn, deadline)

    async def _finish(
        self, byte_stream: anyio.abc.ByteStream, conn: ClientConnection, deadline: float | None
    ) -> None:
        """Read what is left of a finished response, a little at most, to keep the connection."""
        left = DRAIN_LIMIT
        try:
            while conn.finishing and left > 0:
                data = await self._read(byte_stream, "read", deadline)
                left -= len(data) or left
                conn.feed(data)
        except (SvirProtocolError, StreamTimeout, OSError):
            pass
        if not conn.reusable:
            await self.aclose()

    async def _ready(
        self, deadline: float | None, fresh: bool
    ) -> tuple[anyio.abc.ByteStream, ClientConnection, bool]:
        """An open connection (see the blocking transport's), and whether it was reused."""
        conn, byte_stream = self._conn, self._stream
        if not fresh and conn is not None and conn.reusable and byte_stream is not None:
            raw = byte_stream.extra(anyio.abc.SocketAttribute.raw_socket, None)
            if raw is not None and not dropped(raw):
                conn.start_next_cycle()
                return byte_stream, conn, True
        await self.aclose()
        ep = self.endpoint
        timeout, phase = limit(self.timeouts.connect, "connect", deadline)
        opened: anyio.abc.ByteStream
        try:
            with anyio.fail_after(timeout):
                if ep.scheme == "https":
                    opened = await anyio.connect_tcp(
                        ep.host,
                        ep.port,
                        tls=True,
                        ssl_context=self._ssl or ssl.create_default_context(),
                        tls_hostname=ep.host,
                        tls_standard_compatible=False,  # HTTP frames its own end (RFC 9110 9.8)
                    )
                else:
                    opened = await anyio.connect_tcp(ep.host, ep.port)
        except TimeoutError:
            raise StreamTimeout(phase, timeout or 0.0) from None
        except OSError as exc:
            raise ConnectError(f"cannot connect to {ep.host}:{ep.port}: {exc}") from exc
        self._stream = opened
        self._conn = conn = ClientConnection(ep, **self._options)
        self.connections += 1
        return opened, conn, False

    async def _write(
        self,
        byte_stream: anyio.abc.ByteStream,
        conn: ClientConnection,
        pieces: Any,
        deadline: float | None,
        reused: bool,
    ) -> None:
        exchange = conn.exchange
        total = exchange.body.content_length if exchange is not None and exchange.body else 0
        sent = 0
        try:
            for piece in pieces:
                timeout, phase = limit(self.timeouts.read, "write", deadline)
                try:
                    with anyio.fail_after(timeout):
                        await byte_stream.send(piece)
                except TimeoutError:
                    raise StreamTimeout(phase, timeout or 0.0) from None
                sent += len(piece)
                if self._on_upload is not None and total:
                    self._on_upload(min(sent, total), total)
        except (
            anyio.BrokenResourceError,
            anyio.ClosedResourceError,
            BrokenPipeError,
            ConnectionResetError,
        ):
            if reused:
                raise Stale from None
            conn.send_failed()

    async def _read(
        self, byte_stream: anyio.abc.ByteStream, phase: Phase, deadline: float | None
    ) -> bytes:
        timeout, phase = limit(getattr(self.timeouts, phase), phase, deadline)
        try:
            with anyio.fail_after(timeout):
                return await byte_stream.receive(READ_SIZE)
        except TimeoutError:
            raise StreamTimeout(phase, timeout or 0.0) from None
        except _EOF:
            return b""


def stream_chat(
    endpoint: Endpoint | str, request: ChatRequest | LLMRequest, **options: Any
) -> AsyncChatStream:
    """One streamed answer on a connection of its own, closed with the stream."""
    client = Client(endpoint, **options)

    async def run(stream: AsyncChatStream) -> AsyncBatches:
        try:
            async with aclosing(client._run(stream)) as batches:
                async for batch in batches:
                    yield batch
        finally:
            await client.aclose()

    return AsyncChatStream(request, run)


async def list_models(endpoint: Endpoint | str, **options: Any) -> tuple[ModelInfo, ...]:
    """``GET /v1/models`` (chat models first); ``options`` as for `Client`."""
    async with Client(endpoint, **options) as client:
        return await client.list_models()
