"""The driver of the transports whose library frames HTTP itself (httpcore's pools, httpx).

Such a library gives a response's status, headers and body pieces; the driver hands them to an
`Exchange` and maps the library's exceptions to ours. Timeouts go in the request's ``timeout``
extension (httpcore reads it per phase): connect, then ``first_byte`` for the head, then
``read`` for the body (set once the head has arrived: httpcore reads the value when the body
begins). The total is checked before each phase; a read under way may overrun it by up to one
read timeout, since these libraries cannot shorten a read once it has begun.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, AbstractContextManager, aclosing
from typing import Any, final

import attrs

from ..errors import PeerProtocolError
from ..events import RequestFailed
from ..exchange import Exchange, ModelsRequest
from ..llmstream.request import LLMRequest
from ..openai.endpoint import Endpoint, ModelInfo
from ..openai.request import ChatRequest
from ._shared import (
    DEFAULT_TIMEOUTS,
    DRAIN_LIMIT,
    AsyncBatches,
    AsyncChatStream,
    Batches,
    ChatStream,
    ConnectError,
    Phase,
    Stale,
    StreamTimeout,
    Timeouts,
    aattempts,
    attempts,
    limit,
    listed,
)

__all__ = ["AsyncPooledClient", "Errors", "PooledClient"]

Head = tuple[int, Any]  # status, and the headers as the library gives them (name, value pairs)
Opened = tuple[int, Any, Iterator[bytes]]
AsyncOpened = tuple[int, Any, AsyncIterator[bytes]]
Open = Callable[[Exchange, dict[str, Any]], AbstractContextManager[Opened]]
AsyncOpen = Callable[[Exchange, dict[str, Any]], AbstractAsyncContextManager[AsyncOpened]]


@final
@attrs.frozen(kw_only=True)
class Errors:
    """A library's exceptions, by what they mean to us."""

    connect: tuple[type[BaseException], ...]
    connect_timeout: tuple[type[BaseException], ...]
    write_timeout: tuple[type[BaseException], ...]
    read_timeout: tuple[type[BaseException], ...]
    broken: tuple[type[BaseException], ...]
    """The server closed the connection, or sent HTTP that does not parse."""


class _Driver:
    """What the sync and async drivers share: settings, and the mapping of errors."""

    def __init__(
        self,
        endpoint: Endpoint | str,
        errors: Errors,
        *,
        api_key: str | None,
        timeouts: Timeouts,
        retries: int,
        options: dict[str, Any],
    ) -> None:
        self.endpoint = (
            endpoint if isinstance(endpoint, Endpoint) else Endpoint.parse(endpoint, api_key)
        )
        self.timeouts = timeouts
        self.retries = retries
        self._errors = errors
        self._options = options

    def _start(self, request: Any, deadline: float | None) -> tuple[Exchange, dict[str, Any]]:
        exchange = Exchange(self.endpoint, request, **self._options)
        t = self.timeouts
        connect, _ = limit(t.connect, "connect", deadline)
        first, _ = limit(t.first_byte, "first_byte", deadline)
        write, _ = limit(t.read, "write", deadline)
        return exchange, {"connect": connect, "read": first, "write": write, "pool": connect}

    def _body_timeout(self, timeouts: dict[str, Any], deadline: float | None) -> None:
        timeouts["read"], _ = limit(self.timeouts.read, "read", deadline)

    def _mapped(self, exc: BaseException, exchange: Exchange, deadline: float | None) -> Exception:
        """Our exception for the library's ``exc`` (the result marked when it ends the body)."""
        e = self._errors
        ep = self.endpoint
        if isinstance(exc, e.connect):
            return ConnectError(f"cannot connect to {ep.host}:{ep.port}: {exc}")
        phase: Phase | None = None
        if isinstance(exc, e.connect_timeout):
            phase = "connect"
        elif isinstance(exc, e.write_timeout):
            phase = "write"
        elif isinstance(exc, e.read_timeout):
            phase = "first_byte" if exchange.status is None else "read"
        if phase is not None:
            seconds = getattr(self.timeouts, "read" if phase == "write" else phase) or 0.0
            if deadline is not None and time.monotonic() >= deadline - 0.01:
                phase, seconds = "total", self.timeouts.total or 0.0
            return StreamTimeout(phase, seconds)
        return PeerProtocolError(f"the server broke the connection: {exc}")

    @staticmethod
    def _ending(exchange: Exchange, chunk_size: int, drained: int) -> int | None:
        """After the terminal event: the bytes drained so far (to keep the connection), or
        ``None`` to stop reading (a failure's body, or more than `DRAIN_LIMIT`)."""
        drained += chunk_size
        if isinstance(exchange.terminal, RequestFailed) or drained > DRAIN_LIMIT:
            return None
        return drained


async def _empty() -> AsyncIterator[bytes]:
    return
    yield  # pragma: no cover - an async generator that yields nothing


def _why(exc: BaseException) -> str:
    if isinstance(exc, GeneratorExit):
        return "the caller left the stream"
    return f"cancelled ({type(exc).__name__})"


class PooledClient(_Driver):
    """A blocking client over a pooling library (see `svir_proto.transports.httpcore`)."""

    def __init__(
        self,
        endpoint: Endpoint | str,
        open: Open,
        errors: Errors,
        *,
        api_key: str | None = None,
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
        retries: int = 2,
        sleep: Callable[[float], None] = time.sleep,
        **options: Any,
    ) -> None:
        super().__init__(
            endpoint, errors, api_key=api_key, timeouts=timeouts, retries=retries, options=options
        )
        self._open = open
        self._sleep = sleep

    def stream_chat(self, request: ChatRequest | LLMRequest) -> ChatStream:
        """Send ``request``; the returned `ChatStream` yields the answer's events."""
        return ChatStream(request, self._run)

    def list_models(self) -> tuple[ModelInfo, ...]:
        """``GET /v1/models``, chat models first. Raises `RequestFailedError` on a failure."""
        with ChatStream(ModelsRequest(), self._run) as stream:
            events = list(stream)
        return listed(events, stream.result.error)

    def _run(self, stream: ChatStream) -> Batches:
        return attempts(
            stream,
            self._attempt,
            retries=self.retries,
            total=self.timeouts.total,
            sleep=self._sleep,
        )

    def _attempt(self, stream: ChatStream, deadline: float | None) -> Batches:
        for again in (False, True):
            try:
                yield from self._exchange(stream, deadline, again)
                return
            except Stale:
                continue

    def _exchange(self, stream: ChatStream, deadline: float | None, again: bool) -> Batches:
        exchange, timeouts = self._start(stream.request, deadline)
        stream.exchange = exchange
        try:
            with self._open(exchange, {"timeout": timeouts}) as (status, headers, chunks):
                yield exchange.receive_head(status, headers, now=time.time())
                self._body_timeout(timeouts, deadline)
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
        except (
            self._errors.broken
            + self._errors.read_timeout
            + self._errors.write_timeout
            + (self._errors.connect + self._errors.connect_timeout)
        ) as exc:
            if isinstance(exc, self._errors.broken) and exchange.status is None and not again:
                raise Stale from exc  # a pooled connection the server had closed: once more
            error = self._mapped(exc, exchange, deadline)
            if not isinstance(error, ConnectError):
                yield exchange.interrupt(str(error))
                if isinstance(error, PeerProtocolError) and exchange.status is not None:
                    return  # a dropped connection ends the body: the result says so
            raise error from exc
        except BaseException as exc:
            exchange.interrupt(_why(exc))
            raise


class AsyncPooledClient(_Driver):
    """An async client over a pooling library (asyncio or trio); see `PooledClient`."""

    def __init__(
        self,
        endpoint: Endpoint | str,
        open: AsyncOpen,
        errors: Errors,
        *,
        api_key: str | None = None,
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
        retries: int = 2,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(
            endpoint, errors, api_key=api_key, timeouts=timeouts, retries=retries, options=options
        )
        self._open = open
        if sleep is None:
            import anyio  # the async pools run on anyio's backends already

            sleep = anyio.sleep
        self._sleep = sleep

    def stream_chat(self, request: ChatRequest | LLMRequest) -> AsyncChatStream:
        """Send ``request``; the returned `AsyncChatStream` yields the answer's events."""
        return AsyncChatStream(request, self._run)

    async def list_models(self) -> tuple[ModelInfo, ...]:
        """``GET /v1/models``, chat models first. Raises `RequestFailedError` on a failure."""
        async with AsyncChatStream(ModelsRequest(), self._run) as stream:
            events = [event async for event in stream]
        return listed(events, stream.result.error)

    def _run(self, stream: AsyncChatStream) -> AsyncBatches:
        return aattempts(
            stream,
            self._attempt,
            retries=self.retries,
            total=self.timeouts.total,
            sleep=self._sleep,
        )

    async def _attempt(self, stream: AsyncChatStream, deadline: float | None) -> AsyncBatches:
        for again in (False, True):
            try:
                async with aclosing(self._exchange(stream, deadline, again)) as batches:
                    async for batch in batches:
                        yield batch
                return
            except Stale:
                continue

    async def _exchange(
        self, stream: AsyncChatStream, deadline: float | None, again: bool
    ) -> AsyncBatches:
        exchange, timeouts = self._start(stream.request, deadline)
        stream.exchange = exchange
        try:
            opened = self._open(exchange, {"timeout": timeouts})
            # the libraries' body iterators are async generators, typed as iterators
            async with opened as (status, headers, chunks), aclosing(chunks):  # type: ignore[type-var]
                yield exchange.receive_head(status, headers, now=time.time())
                self._body_timeout(timeouts, deadline)
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
        except (
            self._errors.broken
            + self._errors.read_timeout
            + self._errors.write_timeout
            + (self._errors.connect + self._errors.connect_timeout)
        ) as exc:
            if isinstance(exc, self._errors.broken) and exchange.status is None and not again:
                raise Stale from exc  # a pooled connection the server had closed: once more
            error = self._mapped(exc, exchange, deadline)
            if not isinstance(error, ConnectError):
                yield exchange.interrupt(str(error))
                if isinstance(error, PeerProtocolError) and exchange.status is not None:
                    return
            raise error from exc
        except BaseException as exc:
            exchange.interrupt(_why(exc))
            raise
