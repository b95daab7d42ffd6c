"""The httpx transport, for a caller who already has a configured ``httpx.Client`` or
``httpx.AsyncClient`` (its auth, proxies, mounts, event hooks): the request goes through it,
and ``iter_raw()`` feeds the `Exchange`, so decoding is svir-proto's own.

    with httpx.Client(proxy="http://proxy:3128") as http:
        client = Client(endpoint, http)
        with client.stream_chat(request) as stream:
            ...

The optional extra ``httpx`` installs it. Our headers (``Accept-Encoding: identity``, the exact
``Content-Length``) override the client's defaults for these requests.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, Final

import httpx

from ..exchange import Exchange
from ..openai.endpoint import Endpoint
from ._pooled import AsyncOpened, AsyncPooledClient, Errors, Opened, PooledClient

__all__ = ["AsyncClient", "Client", "ERRORS"]

ERRORS: Final = Errors(
    connect=(httpx.ConnectError,),
    connect_timeout=(httpx.ConnectTimeout, httpx.PoolTimeout),
    write_timeout=(httpx.WriteTimeout,),
    read_timeout=(httpx.ReadTimeout,),
    broken=(httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError),
)


def _url(exchange: Exchange) -> str:
    ep = exchange.endpoint
    return f"{ep.scheme}://{ep.authority}{exchange.target}"


class Client(PooledClient):
    """A blocking client on the caller's ``httpx.Client`` (left open: it is theirs)."""

    def __init__(self, endpoint: Endpoint | str, http: httpx.Client, **options: Any) -> None:
        self.http = http
        super().__init__(endpoint, self._respond, ERRORS, **options)

    @contextmanager
    def _respond(self, exchange: Exchange, extensions: dict[str, Any]) -> Iterator[Opened]:
        with self.http.stream(
            exchange.method,
            _url(exchange),
            headers=exchange.headers,
            content=None if exchange.body is None else iter(exchange.body),
            extensions=extensions,
        ) as response:
            yield response.status_code, response.headers.raw, response.iter_raw()


class AsyncClient(AsyncPooledClient):
    """An async client on the caller's ``httpx.AsyncClient``; see `Client`."""

    def __init__(self, endpoint: Endpoint | str, http: httpx.AsyncClient, **options: Any) -> None:
        self.http = http
        super().__init__(endpoint, self._respond, ERRORS, **options)

    @asynccontextmanager
    async def _respond(
        self, exchange: Exchange, extensions: dict[str, Any]
    ) -> AsyncIterator[AsyncOpened]:
        async with self.http.stream(
            exchange.method,
            _url(exchange),
            headers=exchange.headers,
            content=None if exchange.body is None else _aiter(exchange.body),
            extensions=extensions,
        ) as response:
            yield response.status_code, response.headers.raw, response.aiter_raw()


async def _aiter(pieces: Any) -> AsyncIterator[bytes]:
    for piece in pieces:
        yield piece
