"""The httpx transport, for a caller who already has a configured ``httpx.Client`` or
``httpx.AsyncClient`` (its auth, proxies, mounts, event hooks, timeouts): the request goes
through it, and ``iter_raw()`` feeds the `Exchange`, so decoding is svir-proto's own.

    with httpx.Client(proxy="http://proxy:3128", timeout=30) as http:
        client = Client(endpoint, http)
        with client.stream_chat(request) as stream:
            ...

The optional extra ``httpx`` installs it. Our headers (``Accept-Encoding: identity``, the exact
``Content-Length``) override the client's defaults for these requests. The client's timeouts
stay in force unless ours are given (``timeouts=`` to the `Client` or to one request); given
none, `Client` makes an ``httpx.Client`` of its own, with our `Timeouts`, closed by `close`.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any, Final

try:
    import httpx
except ModuleNotFoundError as exc:  # pragma: no cover - the test environment has the extra
    raise ModuleNotFoundError(
        "svir_proto.transports.httpx needs httpx: pip install 'svir-proto[httpx]'",
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
    connect=(httpx.ConnectError, httpx.ProxyError, httpx.UnsupportedProtocol),
    connect_timeout=(httpx.ConnectTimeout, httpx.PoolTimeout),
    write_timeout=(httpx.WriteTimeout,),
    read_timeout=(httpx.ReadTimeout,),
    dropped=(httpx.ReadError, httpx.WriteError),
    protocol=(httpx.RemoteProtocolError,),
)


def _theirs(http: httpx.Client | httpx.AsyncClient | None) -> Timeouts | None:
    """An httpx client's own timeouts, as `Timeouts` (its read timeout bounds the wait for
    the first byte too); ``None`` for no client."""
    if http is None:
        return None
    t = http.timeout
    return Timeouts(connect=t.connect, first_byte=t.read, read=t.read)


class Client(PooledClient):
    """A blocking client on the caller's ``httpx.Client`` (left open: it is theirs), or on one
    of its own. The other arguments are the blocking transport's `Client`'s."""

    errors = ERRORS

    def __init__(
        self,
        endpoint: Endpoint | str,
        http: httpx.Client | None = None,
        *,
        api_key: str | None = None,
        headers: HeaderItems | None = None,
        timeouts: Timeouts | None = None,
        retries: int = 2,
        raise_on_failure: bool = False,
        sleep: Callable[[float], None] = time.sleep,
        **options: Unpack[ExchangeOptions],
    ) -> None:
        self.http = http or httpx.Client()
        self._owned = http is None
        self._given = http
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

    def _library_timeouts(self) -> Timeouts | None:
        return _theirs(self._given)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self._owned:
            self.http.close()

    @contextmanager
    def _respond(self, exchange: Exchange, extensions: dict[str, Any]) -> Iterator[Opened]:
        with self.http.stream(
            exchange.method,
            exchange.url,
            headers=exchange.headers,
            content=None if exchange.body is None else iter(exchange.body),
            extensions=extensions,
        ) as response:
            yield response.status_code, response.headers.raw, response.iter_raw()


class AsyncClient(AsyncPooledClient):
    """An async client on the caller's ``httpx.AsyncClient``, or on one of its own; see
    `Client`."""

    errors = ERRORS

    def __init__(
        self,
        endpoint: Endpoint | str,
        http: httpx.AsyncClient | None = None,
        *,
        api_key: str | None = None,
        headers: HeaderItems | None = None,
        timeouts: Timeouts | None = None,
        retries: int = 2,
        raise_on_failure: bool = False,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        **options: Unpack[ExchangeOptions],
    ) -> None:
        self.http = http or httpx.AsyncClient()
        self._owned = http is None
        self._given = http
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

    def _library_timeouts(self) -> Timeouts | None:
        return _theirs(self._given)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._owned:
            await self.http.aclose()

    @asynccontextmanager
    async def _respond(
        self, exchange: Exchange, extensions: dict[str, Any]
    ) -> AsyncIterator[AsyncOpened]:
        async with self.http.stream(
            exchange.method,
            exchange.url,
            headers=exchange.headers,
            content=None if exchange.body is None else aiter(exchange.body),
            extensions=extensions,
        ) as response:
            yield response.status_code, response.headers.raw, response.aiter_raw()
