"""The httpcore transport: httpcore's connection pools (HTTP/1.1 and HTTP/2, proxies, keep-alive
across requests) under the `Exchange`; the body bytes go to the dialect's decoder.

    with httpcore.ConnectionPool(http2=True) as pool:
        client = Client(endpoint, pool)
        with client.stream_chat(request) as stream:
            for event in stream:
                ...

`AsyncClient` takes an ``httpcore.AsyncConnectionPool`` and runs under asyncio or trio. The
extra ``httpcore`` installs httpcore with what asyncio and HTTP/2 need (``h2``); trio needs the
``trio`` extra beside it. A pool has no timeouts of its own: ours (`Timeouts`) always apply.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any, Final

try:
    import httpcore
except ModuleNotFoundError as exc:  # pragma: no cover - the test environment has the extra
    raise ModuleNotFoundError(
        "svir_proto.transports.httpcore needs httpcore: pip install 'svir-proto[httpcore]'",
        name=exc.name,
    ) from exc

from ..exchange import Exchange, ExchangeOptions
from ..openai.endpoint import Endpoint, HeaderItems
from ._pooled import AsyncOpened, AsyncPooledClient, Errors, Opened, PooledClient
from ._shared import Timeouts

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["ERRORS", "AsyncClient", "Client"]

ERRORS: Final = Errors(
    connect=(httpcore.ConnectError, httpcore.ProxyError, httpcore.UnsupportedProtocol),
    connect_timeout=(httpcore.ConnectTimeout, httpcore.PoolTimeout),
    write_timeout=(httpcore.WriteTimeout,),
    read_timeout=(httpcore.ReadTimeout,),
    dropped=(httpcore.ReadError, httpcore.WriteError),
    protocol=(httpcore.RemoteProtocolError,),
)


class Client(PooledClient):
    """A blocking client on an ``httpcore.ConnectionPool`` (the caller's, or a new one that
    `close` closes). The other arguments are the blocking transport's `Client`'s."""

    errors = ERRORS

    def __init__(
        self,
        endpoint: Endpoint | str,
        pool: httpcore.ConnectionPool | None = None,
        *,
        api_key: str | None = None,
        headers: HeaderItems | None = None,
        timeouts: Timeouts | None = None,
        retries: int = 2,
        raise_on_failure: bool = False,
        sleep: Callable[[float], None] = time.sleep,
        **options: Unpack[ExchangeOptions],
    ) -> None:
        super().__init__(
            endpoint,
            api_key=api_key,
            headers=headers,
            timeouts=timeouts,
            retries=retries,
            raise_on_failure=raise_on_failure,
            sleep=sleep,
            options=options,
        )
        self.pool = pool or httpcore.ConnectionPool()
        self._owned = pool is None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self._owned:
            self.pool.close()

    @contextmanager
    def _respond(self, exchange: Exchange, extensions: dict[str, Any]) -> Iterator[Opened]:
        with self.pool.stream(
            exchange.method,
            exchange.url,
            headers=exchange.headers,
            content=None if exchange.body is None else iter(exchange.body),
            extensions=extensions,
        ) as response:
            yield response.status, response.headers, response.iter_stream()


class AsyncClient(AsyncPooledClient):
    """An async client on an ``httpcore.AsyncConnectionPool``; see `Client`."""

    errors = ERRORS

    def __init__(
        self,
        endpoint: Endpoint | str,
        pool: httpcore.AsyncConnectionPool | None = None,
        *,
        api_key: str | None = None,
        headers: HeaderItems | None = None,
        timeouts: Timeouts | None = None,
        retries: int = 2,
        raise_on_failure: bool = False,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        **options: Unpack[ExchangeOptions],
    ) -> None:
        super().__init__(
            endpoint,
            api_key=api_key,
            headers=headers,
            timeouts=timeouts,
            retries=retries,
            raise_on_failure=raise_on_failure,
            sleep=sleep,
            options=options,
        )
        self.pool = pool or httpcore.AsyncConnectionPool()
        self._owned = pool is None

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._owned:
            await self.pool.aclose()

    @asynccontextmanager
    async def _respond(
        self, exchange: Exchange, extensions: dict[str, Any]
    ) -> AsyncIterator[AsyncOpened]:
        async with self.pool.stream(
            exchange.method,
            exchange.url,
            headers=exchange.headers,
            content=None if exchange.body is None else aiter(exchange.body),
            extensions=extensions,
        ) as response:
            yield response.status, response.headers, response.aiter_stream()
