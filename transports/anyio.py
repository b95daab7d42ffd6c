"""The anyio transport: one implementation that runs under asyncio and under trio.

It mirrors `svir_proto.transports.blocking` line for line (one contract suite holds the two to
the same behaviour): it writes what the `ClientConnection` gives it, reads when it needs data,
applies the timeouts with anyio's cancel scopes, and on a cancel (a cancel scope,
``KeyboardInterrupt``, leaving the ``async with`` early) closes the connection at once and keeps
the partial result. Proxies as the blocking transport's.

    async with Client("http://localhost:8080") as client:
        async with client.stream_chat(request) as stream:
            async for event in stream:
                ...

The extra ``async`` (or ``trio``) installs anyio.
"""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable, Iterator
from contextlib import aclosing
from typing import TYPE_CHECKING

try:
    import anyio
    import anyio.abc
    from anyio.streams.tls import TLSStream
except ModuleNotFoundError as exc:  # pragma: no cover - the test environment has the extra
    raise ModuleNotFoundError(
        "svir_proto.transports.anyio needs anyio: pip install 'svir-proto[async]' "
        "(or 'svir-proto[trio]' for trio)",
        name=exc.name,
    ) from exc

from ..connection import ClientConnection
from ..errors import ConnectionFailedError, StaleConnection, StreamTimeout, SvirProtocolError
from ..exchange import ExchangeOptions, check_options
from ..llmstream.request import LLMRequest
from ..openai.endpoint import Endpoint, HeaderItems, ModelInfo
from ..openai.request import ChatRequest
from ._proxy import Proxy, Tunnel, proxy_for
from ._shared import (
    DEFAULT_TIMEOUTS,
    DRAIN_LIMIT,
    READ_SIZE,
    AsyncBatches,
    AsyncChatStream,
    AsyncClientBase,
    Phase,
    Settings,
    Timeouts,
    UploadProgress,
    aattempts,
    dropped,
    limit,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["Client", "list_models", "stream_chat"]

_EOF = (anyio.EndOfStream, anyio.BrokenResourceError, ssl.SSLError, ConnectionResetError)


class Client(AsyncClientBase):
    """A connection to one server, kept alive between requests; the arguments are the
    blocking `Client`'s (``sleep`` an async one)."""

    def __init__(
        self,
        endpoint: Endpoint | str,
        *,
        api_key: str | None = None,
        headers: HeaderItems | None = None,
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
        retries: int = 2,
        raise_on_failure: bool = False,
        ssl_context: ssl.SSLContext | None = None,
        proxy: str | None = None,
        trust_env: bool = True,
        on_upload: UploadProgress | None = None,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
        **options: Unpack[ExchangeOptions],
    ) -> None:
        self.endpoint = (
            endpoint if isinstance(endpoint, Endpoint) else Endpoint.parse(endpoint, api_key)
        )
        self.settings = Settings(
            timeouts=timeouts,
            retries=retries,
            headers=headers,
            raise_on_failure=raise_on_failure,
            where="Client()",
        )
        self._options = check_options(options, where="Client()")
        self._ssl = ssl_context
        self._proxy = None if proxy is None else Proxy.parse(proxy)
        self._trust_env = trust_env
        self._on_upload = on_upload
        self._sleep = sleep
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

    # -- the loop: attempts, then one exchange ------------------------------------------------

    def _run(self, stream: AsyncChatStream) -> AsyncBatches:
        return aattempts(stream, self._attempt, sleep=self._sleep)

    async def _attempt(self, stream: AsyncChatStream, deadline: float | None) -> AsyncBatches:
        try:
            async with aclosing(self._exchange(stream, deadline, fresh=False)) as batches:
                async for batch in batches:
                    yield batch
            return
        except StaleConnection:  # a kept-alive connection found closed: once more, anew
            await self.aclose()
        async with aclosing(self._exchange(stream, deadline, fresh=True)) as batches:
            async for batch in batches:
                yield batch

    async def _exchange(
        self, stream: AsyncChatStream, deadline: float | None, *, fresh: bool
    ) -> AsyncBatches:
        byte_stream, conn, reused = await self._ready(stream, deadline, fresh)
        pieces = conn.send(stream.request, headers=stream.headers_sent)
        stream.exchange = conn.exchange
        heard = False
        try:
            await self._write(stream, byte_stream, conn, pieces, deadline, reused)
            while conn.terminal is None:
                phase: Phase = "read" if heard else "first_byte"
                data = await self._read(stream, byte_stream, phase, deadline)
                heard = True
                yield conn.feed(data)  # StaleConnection for a kept-alive connection closed
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
        await self._finish(stream, byte_stream, conn, deadline)

    async def _finish(
        self,
        stream: AsyncChatStream,
        byte_stream: anyio.abc.ByteStream,
        conn: ClientConnection,
        deadline: float | None,
    ) -> None:
        """Read what is left of a finished response, a little at most, to keep the connection."""
        left = DRAIN_LIMIT
        try:
            while conn.finishing and left > 0:
                data = await self._read(stream, byte_stream, "read", deadline)
                left -= len(data) or left
                conn.feed(data)
        except (SvirProtocolError, StreamTimeout, OSError):
            pass
        if not conn.reusable:
            await self.aclose()

    async def _ready(
        self, stream: AsyncChatStream, deadline: float | None, fresh: bool
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
        proxy = proxy_for(ep, proxy=self._proxy, trust_env=self._trust_env)
        host, port = (ep.host, ep.port) if proxy is None else (proxy.host, proxy.port)
        timeout, phase, seconds = limit(stream.timeouts, "connect", deadline)
        opened: anyio.abc.ByteStream
        try:
            with anyio.fail_after(timeout):
                opened = await anyio.connect_tcp(host, port)
                try:
                    if proxy is not None and ep.scheme == "https":
                        await self._tunnel(opened, Tunnel(ep, proxy))
                    if ep.scheme == "https":
                        opened = await TLSStream.wrap(
                            opened,
                            hostname=ep.host,
                            ssl_context=self._ssl or ssl.create_default_context(),
                            standard_compatible=False,  # HTTP frames its own end (RFC 9110 9.8)
                        )
                except BaseException:
                    await anyio.aclose_forcefully(opened)
                    raise
        except TimeoutError:
            raise StreamTimeout(phase, seconds) from None
        except OSError as exc:
            raise ConnectionFailedError(f"cannot connect to {host}:{port}: {exc}") from exc
        self._stream = opened
        if proxy is None or ep.scheme == "https":
            conn = ClientConnection(ep, **self._options)
        else:  # an http server through the proxy: the whole URL as the target
            conn = ClientConnection(
                ep, headers=proxy.headers, target_form="absolute", **self._options
            )
        self._conn = conn
        self.connections += 1
        return opened, conn, False

    @staticmethod
    async def _tunnel(byte_stream: anyio.abc.ByteStream, tunnel: Tunnel) -> None:
        """A proxy's CONNECT tunnel, within the connect timeout's cancel scope."""
        await byte_stream.send(tunnel.request)
        while True:
            try:
                data = await byte_stream.receive(READ_SIZE)
            except _EOF:
                data = b""
            if tunnel.receive(data):
                return

    async def _write(
        self,
        stream: AsyncChatStream,
        byte_stream: anyio.abc.ByteStream,
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
                timeout, phase, seconds = limit(stream.timeouts, "write", deadline)
                try:
                    with anyio.fail_after(timeout):
                        await byte_stream.send(piece)
                except TimeoutError:
                    raise StreamTimeout(phase, seconds) from None
                sent += len(piece)
                if self._on_upload is not None and total:
                    self._on_upload(min(sent, total), total)
        except (
            anyio.BrokenResourceError,
            anyio.ClosedResourceError,
            BrokenPipeError,
            ConnectionResetError,
        ):
            if reused and not sent:
                raise StaleConnection("the server had closed the kept-alive connection") from None
            conn.send_failed()

    async def _read(
        self,
        stream: AsyncChatStream,
        byte_stream: anyio.abc.ByteStream,
        phase: Phase,
        deadline: float | None,
    ) -> bytes:
        timeout, phase, seconds = limit(stream.timeouts, phase, deadline)
        try:
            with anyio.fail_after(timeout):
                return await byte_stream.receive(READ_SIZE)
        except TimeoutError:
            raise StreamTimeout(phase, seconds) from None
        except _EOF:
            return b""


def stream_chat(
    endpoint: Endpoint | str,
    request: ChatRequest | LLMRequest,
    *,
    api_key: str | None = None,
    headers: HeaderItems | None = None,
    timeouts: Timeouts = DEFAULT_TIMEOUTS,
    retries: int = 2,
    raise_on_failure: bool = False,
    ssl_context: ssl.SSLContext | None = None,
    proxy: str | None = None,
    trust_env: bool = True,
    on_upload: UploadProgress | None = None,
    **options: Unpack[ExchangeOptions],
) -> AsyncChatStream:
    """One streamed answer on a connection of its own, closed with the stream; the arguments
    are `Client`'s."""
    client = Client(
        endpoint,
        api_key=api_key,
        headers=headers,
        timeouts=timeouts,
        retries=retries,
        raise_on_failure=raise_on_failure,
        ssl_context=ssl_context,
        proxy=proxy,
        trust_env=trust_env,
        on_upload=on_upload,
        **options,
    )

    async def run(stream: AsyncChatStream) -> AsyncBatches:
        try:
            async with aclosing(client._run(stream)) as batches:
                async for batch in batches:
                    yield batch
        finally:
            await client.aclose()

    settings = client.settings.for_request(timeouts=None, retries=None, headers=None)
    return AsyncChatStream(request, run, **settings)


async def list_models(
    endpoint: Endpoint | str,
    *,
    api_key: str | None = None,
    headers: HeaderItems | None = None,
    timeouts: Timeouts = DEFAULT_TIMEOUTS,
    retries: int = 2,
    ssl_context: ssl.SSLContext | None = None,
    proxy: str | None = None,
    trust_env: bool = True,
    **options: Unpack[ExchangeOptions],
) -> tuple[ModelInfo, ...]:
    """``GET /v1/models`` (chat models first); the arguments are `Client`'s."""
    async with Client(
        endpoint,
        api_key=api_key,
        headers=headers,
        timeouts=timeouts,
        retries=retries,
        ssl_context=ssl_context,
        proxy=proxy,
        trust_env=trust_env,
        **options,
    ) as client:
        return await client.list_models()
