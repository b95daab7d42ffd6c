"""The driver of the transports whose library frames HTTP itself (httpcore's pools, httpx).

Such a library gives a response's status, headers and body pieces; the driver hands them to an
`Exchange` and maps the library's exceptions to ours.

Rule 1 (timeouts): ours go in the request's ``timeout`` extension (httpcore reads it per phase):
    connect, then ``first_byte`` for the head, then ``read`` for the body (set once the head
    has arrived: httpcore reads the value when the body begins). The total is checked before
    each phase; a read under way may overrun it by up to one read timeout, since these
    libraries cannot shorten a read once it has begun. A caller's own httpx client keeps its
    own timeouts unless the client or the request was given ours (``timeouts=``).
Rule 2 (errors): the library's connect errors are `ConnectionFailedError`, its timeouts
    `StreamTimeout`; a connection that closes or resets inside the body ends the stream, not
    with an exception (the result says why), as in the transports with sockets of their own;
    HTTP that does not parse (a bad chunk header, a bad footer) is a `PeerProtocolError`
    raised once the events before it are out, also as there. Before the head, a pooled
    connection the server had closed is retried once on a new one (`StaleConnection`).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, AbstractContextManager, aclosing
from typing import Any, TypeVar, final

import attrs

from ..errors import (
    ConnectionFailedError,
    PeerProtocolError,
    StaleConnection,
    StreamTimeout,
    TimeoutPhase,
)
from ..events import RequestFailed
from ..exchange import Exchange, ExchangeEvent, ExchangeOptions, check_options
from ..openai.endpoint import Endpoint, HeaderItems
from ._shared import (
    DEFAULT_TIMEOUTS,
    DRAIN_LIMIT,
    AsyncBatches,
    AsyncChatStream,
    AsyncClientBase,
    Batches,
    ChatStream,
    Settings,
    SyncClientBase,
    Timeouts,
    aattempts,
    attempts,
    limit,
)

__all__ = ["AsyncPooledClient", "Errors", "PooledClient"]

Opened = tuple[int, Any, Iterator[bytes]]  # status, headers as (name, value) pairs, the body
AsyncOpened = tuple[int, Any, AsyncIterator[bytes]]
C = TypeVar("C")

# what httpcore and httpx (which uses httpcore's words) say when the peer closed inside a body
_CLOSED: tuple[str, ...] = (
    "peer closed connection",
    "server disconnected",
    "connection closed",
)


@final
@attrs.frozen(kw_only=True)
class Errors:
    """A library's exceptions, by what they mean to us (Rule 2)."""

    connect: tuple[type[BaseException], ...]
    connect_timeout: tuple[type[BaseException], ...]
    write_timeout: tuple[type[BaseException], ...]
    read_timeout: tuple[type[BaseException], ...]
    dropped: tuple[type[BaseException], ...]
    """The connection broke (reset, a read or write that failed)."""
    protocol: tuple[type[BaseException], ...]
    """HTTP that does not parse, or a body that ended before its framing said (the message
    tells the two apart)."""

    @property
    def every(self) -> tuple[type[BaseException], ...]:
        return (
            self.connect
            + self.connect_timeout
            + self.write_timeout
            + self.read_timeout
            + self.dropped
            + self.protocol
        )


class _Driver:
    """What the sync and async drivers share: settings, and the mapping of errors."""

    errors: Errors
    """The library's exceptions (set by each transport's class)."""

    def __init__(
        self,
        endpoint: Endpoint | str,
        *,
        api_key: str | None,
        headers: HeaderItems | None,
        timeouts: Timeouts | None,
        retries: int,
        raise_on_failure: bool,
        options: ExchangeOptions,
    ) -> None:
        self.endpoint = (
            endpoint if isinstance(endpoint, Endpoint) else Endpoint.parse(endpoint, api_key)
        )
        theirs = self._library_timeouts()
        self._impose = timeouts is not None or theirs is None  # Rule 1
        self.settings = Settings(
            timeouts=timeouts or theirs or DEFAULT_TIMEOUTS,
            retries=retries,
            headers=headers,
            raise_on_failure=raise_on_failure,
            where=f"{type(self).__name__}()",
        )
        self._options = check_options(options, where=f"{type(self).__name__}()")

    def _library_timeouts(self) -> Timeouts | None:
        """The library's own timeouts, which stay in force when the caller gave none (an
        httpx client's); ``None``: it has none (httpcore's pools), ours apply."""
        return None

    def _start(
        self, stream: ChatStream | AsyncChatStream, deadline: float | None
    ) -> tuple[Exchange, dict[str, Any]]:
        exchange = Exchange(
            self.endpoint, stream.request, headers=stream.headers_sent, **self._options
        )
        stream.exchange = exchange
        if not self._impose and stream.timeouts is self.settings.timeouts:
            return exchange, {}  # the library's own (Rule 1)
        t = stream.timeouts
        connect, _, _ = limit(t, "connect", deadline)
        first, _, _ = limit(t, "first_byte", deadline)
        write, _, _ = limit(t, "write", deadline)
        timeouts = {"connect": connect, "read": first, "write": write, "pool": connect}
        return exchange, {"timeout": timeouts}

    @staticmethod
    def _body_timeout(
        stream: ChatStream | AsyncChatStream, extensions: dict[str, Any], deadline: float | None
    ) -> None:
        if extensions:
            extensions["timeout"]["read"], _, _ = limit(stream.timeouts, "read", deadline)

    def _mapped(
        self,
        exc: BaseException,
        stream: ChatStream | AsyncChatStream,
        exchange: Exchange,
        deadline: float | None,
        again: bool,
    ) -> Exception:
        """Our exception for the library's ``exc`` (Rule 2)."""
        e = self.errors
        ep = self.endpoint
        if isinstance(exc, e.connect):
            return ConnectionFailedError(f"cannot connect to {ep.host}:{ep.port}: {exc}")
        phase: TimeoutPhase | None = None
        if isinstance(exc, e.connect_timeout):
            phase = "connect"
        elif isinstance(exc, e.write_timeout):
            phase = "write"
        elif isinstance(exc, e.read_timeout):
            phase = "first_byte" if exchange.status is None else "read"
        if phase is not None:
            seconds: float = getattr(stream.timeouts, "read" if phase == "write" else phase) or 0.0
            if deadline is not None and time.monotonic() >= deadline - 0.01:
                phase, seconds = "total", stream.timeouts.total or 0.0
            return StreamTimeout(phase, seconds)
        if exchange.status is None and not again:
            return StaleConnection(f"the server broke the connection before a response: {exc}")
        return PeerProtocolError(f"bad HTTP from the server: {exc}")

    def _ends_body(self, exc: BaseException, exchange: Exchange) -> bool:
        """Rule 2: the connection closed or reset inside a body (not HTTP that is wrong)."""
        if exchange.status is None:
            return False
        if isinstance(exc, self.errors.dropped):
            return True
        return isinstance(exc, self.errors.protocol) and any(
            words in str(exc).lower() for words in _CLOSED
        )

    @staticmethod
    def _ending(exchange: Exchange, chunk_size: int, drained: int) -> int | None:
        """After the terminal event: the bytes drained so far (to keep the connection), or
        ``None`` to stop reading (a failure's body, or more than `DRAIN_LIMIT`)."""
        drained += chunk_size
        if isinstance(exchange.terminal, RequestFailed) or drained > DRAIN_LIMIT:
            return None
        return drained

    def _failed(
        self,
        exc: BaseException,
        stream: ChatStream | AsyncChatStream,
        exchange: Exchange,
        deadline: float | None,
        again: bool,
    ) -> tuple[list[ExchangeEvent], Exception | None]:
        """What a library error ends the attempt with: the events that close the exchange,
        and the exception to raise after them (``None``: the body just ended early)."""
        if self._ends_body(exc, exchange):
            return exchange.interrupt(f"the connection closed before the body ended ({exc})"), None
        error = self._mapped(exc, stream, exchange, deadline, again)
        if isinstance(error, (ConnectionFailedError, StaleConnection)):
            return [], error
        return exchange.interrupt(str(error)), error


async def _empty() -> AsyncIterator[bytes]:
    return
    yield  # pragma: no cover - an async generator that yields nothing


def _why(exc: BaseException) -> str:
    if isinstance(exc, GeneratorExit):
        return "the caller left the stream"
    return f"cancelled ({type(exc).__name__})"


class PooledClient(_Driver, SyncClientBase):
    """A blocking client over a pooling library (see `svir_proto.transports.httpcore`); each
    transport gives ``_respond``: open one response."""

    def __init__(
        self,
        endpoint: Endpoint | str,
        *,
        api_key: str | None = None,
        headers: HeaderItems | None = None,
        timeouts: Timeouts | None = None,
        retries: int = 2,
        raise_on_failure: bool = False,
        sleep: Callable[[float], None] = time.sleep,
        options: ExchangeOptions,
    ) -> None:
        super().__init__(
            endpoint,
            api_key=api_key,
            headers=headers,
            timeouts=timeouts,
            retries=retries,
            raise_on_failure=raise_on_failure,
            options=options,
        )
        self._sleep = sleep

    def _respond(
        self, exchange: Exchange, extensions: dict[str, Any]
    ) -> AbstractContextManager[Opened]:  # pragma: no cover - each transport's own
        raise NotImplementedError

    def _run(self, stream: ChatStream) -> Batches:
        return attempts(stream, self._attempt, sleep=self._sleep)

    def _attempt(self, stream: ChatStream, deadline: float | None) -> Batches:
        try:
            yield from self._exchange(stream, deadline, again=False)
            return
        except StaleConnection:  # a pooled connection the server had closed: once more
            pass
        yield from self._exchange(stream, deadline, again=True)

    def _exchange(self, stream: ChatStream, deadline: float | None, again: bool) -> Batches:
        exchange, extensions = self._start(stream, deadline)
        try:
            with self._respond(exchange, extensions) as (status, headers, chunks):
                yield exchange.receive_head(status, headers, now=time.time())
                self._body_timeout(stream, extensions, deadline)
                drained: int | None = 0
                for chunk in () if exchange.finished else chunks:  # Rule 1: no wait for a body
                    if exchange.finished:
                        drained = self._ending(exchange, len(chunk), drained or 0)
                        if drained is None:
                            break
                    yield exchange.receive_body(chunk)
                    if exchange.error is not None:  # the events before it went out
                        raise exchange.error
                else:  # the body ended: the decoder hears so (``closed``), even after [DONE]
                    yield exchange.end_of_body()
        except self.errors.every as exc:
            events, error = self._failed(exc, stream, exchange, deadline, again)
            yield events
            if error is not None:
                raise error from exc
        except BaseException as exc:
            exchange.interrupt(_why(exc))
            raise


class AsyncPooledClient(_Driver, AsyncClientBase):
    """An async client over a pooling library (asyncio or trio); see `PooledClient`."""

    def __init__(
        self,
        endpoint: Endpoint | str,
        *,
        api_key: str | None = None,
        headers: HeaderItems | None = None,
        timeouts: Timeouts | None = None,
        retries: int = 2,
        raise_on_failure: bool = False,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        options: ExchangeOptions,
    ) -> None:
        super().__init__(
            endpoint,
            api_key=api_key,
            headers=headers,
            timeouts=timeouts,
            retries=retries,
            raise_on_failure=raise_on_failure,
            options=options,
        )
        if sleep is None:
            import anyio  # the async pools run on anyio's backends already

            sleep = anyio.sleep
        self._sleep = sleep

    def _respond(
        self, exchange: Exchange, extensions: dict[str, Any]
    ) -> AbstractAsyncContextManager[AsyncOpened]:  # pragma: no cover - each transport's own
        raise NotImplementedError

    def _run(self, stream: AsyncChatStream) -> AsyncBatches:
        return aattempts(stream, self._attempt, sleep=self._sleep)

    async def _attempt(self, stream: AsyncChatStream, deadline: float | None) -> AsyncBatches:
        try:
            async with aclosing(self._exchange(stream, deadline, again=False)) as batches:
                async for batch in batches:
                    yield batch
            return
        except StaleConnection:  # a pooled connection the server had closed: once more
            pass
        async with aclosing(self._exchange(stream, deadline, again=True)) as batches:
            async for batch in batches:
                yield batch

    async def _exchange(
        self, stream: AsyncChatStream, deadline: float | None, again: bool
    ) -> AsyncBatches:
        exchange, extensions = self._start(stream, deadline)
        try:
            opened = self._respond(exchange, extensions)
            # the libraries' body iterators are async generators, typed as iterators
            async with opened as (status, headers, chunks), aclosing(chunks):  # type: ignore[type-var]
                yield exchange.receive_head(status, headers, now=time.time())
                self._body_timeout(stream, extensions, deadline)
                drained: int | None = 0
                async for chunk in _empty() if exchange.finished else chunks:
                    if exchange.finished:
                        drained = self._ending(exchange, len(chunk), drained or 0)
                        if drained is None:
                            break
                    yield exchange.receive_body(chunk)
                    if exchange.error is not None:
                        raise exchange.error
                else:
                    yield exchange.end_of_body()
        except self.errors.every as exc:
            events, error = self._failed(exc, stream, exchange, deadline, again)
            yield events
            if error is not None:
                raise error from exc
        except BaseException as exc:
            exchange.interrupt(_why(exc))
            raise
