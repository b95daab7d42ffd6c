"""The httpcore transport: httpcore's connection pools (HTTP/1.1 and HTTP/2, proxies, keep-alive
across requests) under the `Exchange`; the body bytes go to the dialect's decoder.

    with httpcore.ConnectionPool(http2=True) as pool:
        client = Client(endpoint, pool)
        with client.stream_chat(request) as stream:
            for event in stream:
                ...

`AsyncClient` takes an ``httpcore.AsyncConnectionPool`` and runs under asyncio or trio.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, Final

import httpcore

from ..exchange import Exchange
from ..openai.endpoint import Endpoint
from ._pooled import AsyncOpened, AsyncPooledClient, Errors, Opened, PooledClient

__all__ = ["AsyncClient", "Client", "ERRORS"]

ERRORS: Final = Errors(
    connect=(httpcore.ConnectError,),
    connect_timeout=(httpcore.ConnectTimeout, httpcore.PoolTimeout),
    write_timeout=(httpcore.WriteTimeout,),
    read_timeout=(httpcore.ReadTimeout,),
    broken=(httpcore.RemoteProtocolError, httpcore.ReadError, httpcore.WriteError),
)


def _url(exchange: Exchange) -> str:
    ep = exchange.endpoint
    return f"{ep.scheme}://{ep.authority}{exchange.target}"


class Client(PooledClient):
    """A blocking client on an ``httpcore.ConnectionPool`` (the caller's, or a new one that
    `close` closes). Other arguments as for the blocking transport's `Client`."""

    def __init__(
        self, endpoint: Endpoint | str, pool: httpcore.ConnectionPool | None = None, **options: Any
    ) -> None:
        self.pool = pool or httpcore.ConnectionPool()
        self._owned = pool is None
        super().__init__(endpoint, self._respond, ERRORS, **options)

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
            _url(exchange),
            headers=exchange.headers,
            content=None if exchange.body is None else iter(exchange.body),
            extensions=extensions,
        ) as response:
            yield response.status, response.headers, response.iter_stream()


class AsyncClient(AsyncPooledClient):
    """An async client on an ``httpcore.AsyncConnectionPool``; see `Client`."""

    def __init__(
        self,
        endpoint: Endpoint | str,
        pool: httpcore.AsyncConnectionPool | None = None,
        **options: Any,
    ) -> None:
        self.pool = pool or httpcore.AsyncConnectionPool()
        self._owned = pool is None
        super().__init__(endpoint, self._respond, ERRORS, **options)

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
        body = None if exchange.body is None else _aiter(exchange.body)
        async with self.pool.stream(
            exchange.method,
            _url(exchange),
            headers=exchange.headers,
            content=body,
            extensions=extensions,
        ) as response:
            yield response.status, response.headers, response.aiter_stream()


async def _aiter(pieces: Any) -> AsyncIterator[bytes]:
    """The body's pieces for an async pool (files are read between two writes)."""
    for piece in pieces:
        yield piece
