"""What every transport shares: timeouts, the errors a transport raises, and the stream objects a
caller holds. No I/O here either: each transport module does its own.

A transport's errors are about moving bytes (could not connect, a timeout); what the server
*said* (an HTTP error, an error inside the stream) is an event carrying a `Failure`, and bytes
that break the protocol are a `PeerProtocolError`, as everywhere in svir-proto.
"""

from __future__ import annotations

import select
import socket
import time
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Iterator,
)
from contextlib import aclosing, closing
from itertools import chain
from typing import Final, Literal, final

import attrs

from ..errors import Failure
from ..events import Completion, RequestFailed, Retrying
from ..exchange import Exchange, ExchangeEvent, ModelsListed, Request, next_attempt
from ..openai.endpoint import ModelInfo, ModelKind

__all__ = [
    "DEFAULT_TIMEOUTS",
    "DRAIN_LIMIT",
    "READ_SIZE",
    "AsyncChatStream",
    "ChatStream",
    "ConnectError",
    "Phase",
    "RequestFailedError",
    "Stale",
    "StreamTimeout",
    "Timeouts",
    "TransportError",
    "aattempts",
    "attempts",
    "chat_first",
    "dropped",
    "limit",
    "listed",
]

READ_SIZE: Final = 64 * 1024
"""Bytes asked for per read: a socket buffer's worth."""
DRAIN_LIMIT: Final = 64 * 1024
"""Bytes read after a finished answer to reach the end of its body (and keep the connection):
the end of a chunked body is 5 bytes; a server that sends more is not worth waiting for."""

Phase = Literal["connect", "write", "first_byte", "read", "total"]
UploadProgress = Callable[[int, int], None]
"""Called after each piece of a request body is written: (bytes sent, Content-Length)."""


@final
@attrs.frozen(kw_only=True)
class Timeouts:
    """Seconds each wait may take; ``None`` waits for ever.

    Attributes:
        connect: to open the connection (TCP and TLS).
        first_byte: from the end of the request to the first byte of the response: the time a
            server spends reading the prompt, minutes for a long one on a CPU.
        read: silence between two reads once the response has begun (a stalled stream), and
            between two writes of the request body.
        total: the whole exchange, retries included.
    """

    connect: float | None = 10.0
    first_byte: float | None = 300.0
    read: float | None = 120.0
    total: float | None = None

    def __attrs_post_init__(self) -> None:
        for name in ("connect", "first_byte", "read", "total"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, (int, float)) or value <= 0):
                raise ValueError(f"timeouts.{name} must be a positive number or None: {value!r}")


DEFAULT_TIMEOUTS: Final = Timeouts()


class TransportError(Exception):
    """The bytes could not be moved. The stream's ``result`` keeps what arrived before."""


class ConnectError(TransportError):
    """The connection could not be opened: refused, unknown host, TLS verification failed."""


class StreamTimeout(TransportError, TimeoutError):
    """A wait took longer than its timeout; ``phase`` names which one, ``seconds`` its value."""

    def __init__(self, phase: Phase, seconds: float) -> None:
        what = {
            "connect": "to connect",
            "write": "to write the request (the server stopped reading)",
            "first_byte": "for the first byte of the response",
            "read": "for the next byte of the response (the stream stalled)",
            "total": "for the whole exchange",
        }[phase]
        super().__init__(f"{phase} timeout: waited {seconds:g} s {what}")
        self.phase: Final = phase
        self.seconds: Final = seconds


class RequestFailedError(TransportError):
    """A request whose answer is a value, not a stream (``list_models``) failed: ``failure``."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(f"{failure.kind.value}: {failure.message}")
        self.failure: Final = failure


class Stale(Exception):
    """A kept-alive connection the server had closed: nothing was sent or received on it, so
    the request goes again on a new connection (once)."""


def limit(
    timeout: float | None, phase: Phase, deadline: float | None
) -> tuple[float | None, Phase]:
    """The wait allowed now: the phase's own timeout, or what is left of the total if less
    (then the phase is ``total``)."""
    if deadline is None:
        return timeout, phase
    left = max(deadline - time.monotonic(), 0.001)
    if timeout is None or left < timeout:
        return left, "total"
    return timeout, phase


Batches = Generator[list[ExchangeEvent], None, None]
"""The events of a stream in batches, one per read: a stream object flattens them, in C for a
blocking caller, so an event costs no Python call between the decoder and the caller."""
AsyncBatches = AsyncGenerator[list[ExchangeEvent], None]
Attempt = Callable[["ChatStream", "float | None"], Batches]
AsyncAttempt = Callable[["AsyncChatStream", "float | None"], AsyncBatches]


def attempts(
    stream: ChatStream,
    attempt: Attempt,
    *,
    retries: int,
    total: float | None,
    sleep: Callable[[float], None],
) -> Batches:
    """Run ``attempt`` (one exchange) until the answer arrives or `next_attempt` says stop;
    between two attempts, yield the `Retrying` event and sleep its delay."""
    deadline = None if total is None else time.monotonic() + total
    retried = 0
    while True:
        failed: RequestFailed | None = None
        with closing(attempt(stream, deadline)) as batches:
            for batch in batches:
                yield batch
                if batch and type(batch[-1]) is RequestFailed:  # a terminal event comes last
                    failed = batch[-1]
        retrying = _plan(stream, failed, retried, retries, deadline, total)
        if retrying is None:
            return
        retried += not stream.exchange.fall_back  # type: ignore[union-attr]
        yield [retrying]
        sleep(retrying.delay)


async def aattempts(
    stream: AsyncChatStream,
    attempt: AsyncAttempt,
    *,
    retries: int,
    total: float | None,
    sleep: Callable[[float], Awaitable[None]],
) -> AsyncBatches:
    """`attempts`, for the async transports."""
    deadline = None if total is None else time.monotonic() + total
    retried = 0
    while True:
        failed: RequestFailed | None = None
        # aclosing: leaving early must close the attempt's generator (and its connection) now;
        # an async for does not pass a close on, as a sync yield from does
        async with aclosing(attempt(stream, deadline)) as batches:
            async for batch in batches:
                yield batch
                if batch and type(batch[-1]) is RequestFailed:
                    failed = batch[-1]
        retrying = _plan(stream, failed, retried, retries, deadline, total)
        if retrying is None:
            return
        retried += not stream.exchange.fall_back  # type: ignore[union-attr]
        yield [retrying]
        await sleep(retrying.delay)


def _plan(
    stream: _StreamBase,
    failed: RequestFailed | None,
    retried: int,
    retries: int,
    deadline: float | None,
    total: float | None,
) -> Retrying | None:
    """The next attempt, set on ``stream``: its `Retrying` event, or ``None`` to stop."""
    if failed is None or stream.exchange is None:
        return None
    plan = next_attempt(stream.exchange, failed.failure, retried=retried, retries=retries)
    if plan is None:
        return None
    stream.request, retrying = plan
    if deadline is not None and time.monotonic() + retrying.delay > deadline:
        raise StreamTimeout("total", total or 0.0)
    return retrying


def chat_first(models: tuple[ModelInfo, ...]) -> tuple[ModelInfo, ...]:
    """Chat models first, the rest after them (each group in the server's order)."""
    return tuple(sorted(models, key=lambda m: m.kind is not ModelKind.CHAT))


def listed(events: list[ExchangeEvent], failure: Failure | None) -> tuple[ModelInfo, ...]:
    """The models of a finished listing, or the error its failure is."""
    for event in events:
        if isinstance(event, ModelsListed):
            return chat_first(event.models)
    assert failure is not None
    raise RequestFailedError(failure)


def dropped(sock: socket.socket) -> bool:
    """An idle kept-alive socket the server has closed (or sent something unasked on).

    llama.cpp closes the connection after every streamed response while advertising
    keep-alive; reusing it would lose the next request. A readable idle socket is never
    usable."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


class _StreamBase:
    """What both stream objects hold: the exchange under way, for ``result``."""

    def __init__(self, request: Request) -> None:
        self.request: Request = request
        """The request of the current attempt (after a fall-back, the translated one)."""
        self.exchange: Exchange | None = None

    @property
    def result(self) -> Completion:
        """The answer so far: whole, partial, failed or interrupted (see `Completion`)."""
        exchange = self.exchange
        return Completion() if exchange is None else exchange.result


@final
class ChatStream(_StreamBase):
    """A streamed answer, for a blocking caller: iterate for the events as they arrive
    (`Retrying` ones included), read ``result`` at any time. Leaving the ``with`` block, or
    `close`, ends it at once: the connection is closed unless the answer was whole."""

    def __init__(self, request: Request, run: Callable[[ChatStream], Batches]):
        super().__init__(request)
        self._batches = run(self)
        self._events = chain.from_iterable(self._batches)

    def __enter__(self) -> ChatStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[ExchangeEvent]:
        return self._events

    def close(self) -> None:
        self._batches.close()


@final
class AsyncChatStream(_StreamBase):
    """A streamed answer, for asyncio or trio: ``async with`` and ``async for``; see
    `ChatStream`."""

    def __init__(self, request: Request, run: Callable[[AsyncChatStream], AsyncBatches]) -> None:
        super().__init__(request)
        self._batches = run(self)
        self._events = self._flat()

    async def __aenter__(self) -> AsyncChatStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __aiter__(self) -> AsyncIterator[ExchangeEvent]:
        return self._events

    async def _flat(self) -> AsyncGenerator[ExchangeEvent, None]:
        # an async generator's yield costs half an __anext__ call (124 against 235 ns here)
        async with aclosing(self._batches) as batches:
            async for batch in batches:
                for event in batch:
                    yield event

    async def aclose(self) -> None:
        await self._events.aclose()
        await self._batches.aclose()  # if the stream was never iterated
