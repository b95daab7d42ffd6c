"""What every transport shares: timeouts, the stream objects a caller holds, the retry loop, the
exchange's log line. No I/O here either: each transport module does its own.

A transport's errors are about moving bytes (could not connect, a timeout); what the server
*said* (an HTTP error, an error inside the stream) is an event carrying a `Failure`, raised only
where the caller asks for it (``raise_on_failure``, `ChatStream.raise_for_failure`); bytes that
break the protocol are a `PeerProtocolError`, as everywhere in svir-proto.

Rule 1 (retries): an attempt whose terminal event is a `RequestFailed` that `next_attempt` will
    send again gives a `Retrying` event (carrying the failure) in its place, so the one
    `RequestFailed` a caller sees is final.
Rule 2 (logging): one line per exchange on the ``svir.client`` logger at DEBUG (method, URL,
    status, request id, outcome); never a prompt, an answer or a key.
Rule 3 (timeouts): each wait is its phase's timeout, or what is left of ``total`` if less; a
    `StreamTimeout` reports the timeout that was configured (``total=0.5`` says 0.5 s, not what
    was left when the last wait began).
"""

from __future__ import annotations

import logging
import os
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
    Mapping,
)
from contextlib import aclosing, closing
from itertools import chain
from typing import Final, TypedDict, TypeVar, final

import attrs

from .._deprecated import renamed
from ..errors import ConnectionFailedError as ConnectionFailedError  # it lived here
from ..errors import (
    Failure,
    IncompleteStreamError,
    StreamTimeout,
    TimeoutPhase,
    failure_error,
)
from ..errors import RequestFailedError as RequestFailedError  # it lived here
from ..errors import SvirTransportError as SvirTransportError  # the new name of one that did
from ..events import Completion, Event, RequestFailed, Retrying
from ..exchange import Exchange, ExchangeEvent, ModelsListed, ModelsRequest, Request, next_attempt
from ..llmstream.request import LLMRequest
from ..openai.endpoint import Endpoint, HeaderItems, ModelInfo, ModelKind, merge_headers
from ..openai.request import ChatRequest

__all__ = [
    "DEFAULT_TIMEOUTS",
    "DRAIN_LIMIT",
    "LOGGER",
    "READ_SIZE",
    "AsyncChatStream",
    "ChatStream",
    "Timeouts",
    "UploadProgress",
]

READ_SIZE: Final = 64 * 1024
"""Bytes asked for per read: a socket buffer's worth."""
DRAIN_LIMIT: Final = 64 * 1024
"""Bytes read after a finished answer to reach the end of its body (and keep the connection):
the end of a chunked body is 5 bytes; a server that sends more is not worth waiting for."""
LOGGER: Final = logging.getLogger("svir.client")
"""One DEBUG line per exchange (Rule 2)."""

Phase = TimeoutPhase
UploadProgress = Callable[[int, int], None]
"""Called after each piece of a request body is written: (bytes sent, Content-Length)."""


@final
@attrs.frozen(kw_only=True)
class Timeouts:
    """Seconds each wait may take; ``None`` waits for ever.

    Attributes:
        connect: to open the connection (TCP, a proxy's tunnel, TLS).
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
            if value is not None and (
                not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0
            ):
                raise ValueError(f"timeouts.{name} must be a positive number or None: {value!r}")


DEFAULT_TIMEOUTS: Final = Timeouts()


def check_client(
    *, timeouts: Timeouts | None, retries: int | None, where: str = "Client()"
) -> None:
    """The settings every client and every request takes, checked when they are given."""
    if timeouts is not None and not isinstance(timeouts, Timeouts):
        raise TypeError(f"{where}: timeouts must be a Timeouts, not {timeouts!r}")
    if retries is not None and (type(retries) is not int or retries < 0):
        raise ValueError(f"{where}: retries must be an int >= 0, not {retries!r}")


def limit(
    timeouts: Timeouts, phase: TimeoutPhase, deadline: float | None
) -> tuple[float | None, TimeoutPhase, float]:
    """The wait allowed now (Rule 3): the phase's own timeout, or what is left of the total if
    less (then the phase is ``total``); and the seconds a `StreamTimeout` reports."""
    own: float | None = getattr(timeouts, "read" if phase == "write" else phase)
    if deadline is None:
        return own, phase, own or 0.0
    left = max(deadline - time.monotonic(), 0.001)
    if own is None or left < own:
        return left, "total", timeouts.total or 0.0
    return own, phase, own


Batches = Generator[list[ExchangeEvent], None, None]
"""The events of a stream in batches, one per read: a stream object flattens them, in C for a
blocking caller, so an event costs no Python call between the decoder and the caller."""
AsyncBatches = AsyncGenerator[list[ExchangeEvent], None]
Attempt = Callable[["ChatStream", "float | None"], Batches]
AsyncAttempt = Callable[["AsyncChatStream", "float | None"], AsyncBatches]


def attempts(stream: ChatStream, attempt: Attempt, *, sleep: Callable[[float], None]) -> Batches:
    """Run ``attempt`` (one exchange) until the answer arrives or `next_attempt` says stop;
    between two attempts, the `Retrying` event in place of the failure, then its delay."""
    total = stream.timeouts.total
    deadline = None if total is None else time.monotonic() + total
    retried = 0
    while True:
        held: list[ExchangeEvent] | None = None  # the batch that ends with a RequestFailed
        with closing(attempt(stream, deadline)) as batches:
            try:
                for batch in batches:
                    if batch and type(batch[-1]) is RequestFailed:  # a terminal event comes last
                        held = batch
                        continue
                    yield batch
            finally:
                _log(stream)
        try:
            retrying = _plan(stream, held, retried, deadline)
        except StreamTimeout:  # no time left for the retry: the failure stands, then the timeout
            yield held  # type: ignore[misc]
            raise
        if retrying is None:
            if held is not None:
                yield held
            _raise_on_failure(stream)
            return
        retried += not stream.exchange.fall_back  # type: ignore[union-attr]
        yield [*held[:-1], retrying]  # type: ignore[index]
        sleep(retrying.delay)


async def aattempts(
    stream: AsyncChatStream,
    attempt: AsyncAttempt,
    *,
    sleep: Callable[[float], Awaitable[None]],
) -> AsyncBatches:
    """`attempts`, for the async transports."""
    total = stream.timeouts.total
    deadline = None if total is None else time.monotonic() + total
    retried = 0
    while True:
        held: list[ExchangeEvent] | None = None
        # aclosing: leaving early must close the attempt's generator (and its connection) now;
        # an async for does not pass a close on, as a sync yield from does
        async with aclosing(attempt(stream, deadline)) as batches:
            try:
                async for batch in batches:
                    if batch and type(batch[-1]) is RequestFailed:
                        held = batch
                        continue
                    yield batch
            finally:
                _log(stream)
        try:
            retrying = _plan(stream, held, retried, deadline)
        except StreamTimeout:
            yield held  # type: ignore[misc]
            raise
        if retrying is None:
            if held is not None:
                yield held
            _raise_on_failure(stream)
            return
        retried += not stream.exchange.fall_back  # type: ignore[union-attr]
        yield [*held[:-1], retrying]  # type: ignore[index]
        await sleep(retrying.delay)


def _plan(
    stream: _StreamBase,
    held: list[ExchangeEvent] | None,
    retried: int,
    deadline: float | None,
) -> Retrying | None:
    """The next attempt, set on ``stream``: its `Retrying` event, or ``None`` to stop."""
    if held is None or stream.exchange is None:
        return None
    failed = held[-1]
    assert isinstance(failed, RequestFailed)
    plan = next_attempt(stream.exchange, failed.failure, retried=retried, retries=stream.retries)
    if plan is None:
        return None
    stream.request, retrying = plan
    if deadline is not None and time.monotonic() + retrying.delay > deadline:
        raise StreamTimeout("total", stream.timeouts.total or 0.0)
    LOGGER.debug(
        "retry (attempt %d) in %g s: %s", retrying.attempt, retrying.delay, retrying.reason
    )
    return retrying


def _log(stream: _StreamBase) -> None:
    """Rule 2: the exchange's one line."""
    exchange = stream.exchange
    if exchange is None or not LOGGER.isEnabledFor(logging.DEBUG):
        return
    result = exchange.result
    if result.error is not None:
        outcome = f"failed: {result.error.kind.value}"
    elif result.interrupted is not None:
        outcome = f"interrupted: {result.interrupted}"
    elif exchange.error is not None:
        outcome = f"broke the protocol: {exchange.error}"
    elif isinstance(exchange.terminal, ModelsListed):
        outcome = f"{len(exchange.terminal.models)} models"
    else:
        outcome = "complete" if result.complete else "incomplete"
    LOGGER.debug(
        "%s %s -> %s request_id=%s %s",
        exchange.method,
        exchange.url,
        exchange.status if exchange.status is not None else "no response",
        exchange.request_id or "-",
        outcome,
    )


def _raise_on_failure(stream: _StreamBase) -> None:
    if stream.raise_on_failure:
        stream.raise_for_failure()


def chat_first(models: tuple[ModelInfo, ...]) -> tuple[ModelInfo, ...]:
    """Chat models first, the rest after them (each group in the server's order)."""
    return tuple(sorted(models, key=lambda m: m.kind is not ModelKind.CHAT))


def listed(events: list[ExchangeEvent], failure: Failure | None) -> tuple[ModelInfo, ...]:
    """The models of a finished listing, or the error its failure is."""
    for event in events:
        if isinstance(event, ModelsListed):
            return chat_first(event.models)
    assert failure is not None
    raise failure_error(failure)


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
    """What both stream objects hold: the settings of this request, and the exchange under
    way, for ``result`` and the response's metadata."""

    def __init__(
        self,
        request: Request,
        *,
        timeouts: Timeouts,
        retries: int,
        headers: tuple[tuple[str, str], ...],
        raise_on_failure: bool,
    ) -> None:
        self.request: Request = request
        """The request of the current attempt (after a fall-back, the translated one)."""
        self.exchange: Exchange | None = None
        """The current attempt's `Exchange` (``None`` until it begins)."""
        self.timeouts: Final = timeouts
        self.retries: Final = retries
        self.headers_sent: Final = headers
        """The caller's own headers sent with this request (the client's and its own)."""
        self.raise_on_failure: Final = raise_on_failure

    @property
    def result(self) -> Completion:
        """The answer so far: whole, partial, failed or interrupted (see `Completion`)."""
        exchange = self.exchange
        return Completion() if exchange is None else exchange.result

    @property
    def status(self) -> int | None:
        """The response's HTTP status, once its head came (of the last attempt)."""
        return None if self.exchange is None else self.exchange.status

    @property
    def headers(self) -> tuple[tuple[str, str], ...]:
        """The response's headers, once its head came: names lower-cased, in order."""
        return () if self.exchange is None else self.exchange.response_headers

    @property
    def request_id(self) -> str | None:
        """The server's id for this request (``x-request-id`` and the like), if it sent one."""
        return None if self.exchange is None else self.exchange.request_id

    def raise_for_failure(self) -> None:
        """Raise what went wrong with the answer, if anything (call it once the stream ended):
        the failure the server reported, as its kind's `RequestFailedError` subclass
        (`failure_error`); else `IncompleteStreamError` if the stream ended before its end
        marker (a cut, a dropped connection). A whole stream raises nothing, whatever its
        finish (check ``result.finish_reason`` for ``length``)."""
        result = self.result
        if result.error is not None:
            raise failure_error(result.error)
        if not result.done:
            why = result.interrupted or "the stream ended before its end marker"
            raise IncompleteStreamError(f"incomplete stream: {why}", result)


@final
class ChatStream(_StreamBase):
    """A streamed answer, for a blocking caller: iterate for the events as they arrive
    (`Retrying` ones included), read ``result`` at any time. Leaving the ``with`` block, or
    `close`, ends it at once: the connection is closed unless the answer was whole."""

    def __init__(
        self,
        request: Request,
        run: Callable[[ChatStream], Batches],
        *,
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
        retries: int = 2,
        headers: tuple[tuple[str, str], ...] = (),
        raise_on_failure: bool = False,
    ):
        super().__init__(
            request,
            timeouts=timeouts,
            retries=retries,
            headers=headers,
            raise_on_failure=raise_on_failure,
        )
        self._batches = run(self)
        self._events = chain.from_iterable(self._batches)

    def __enter__(self) -> ChatStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[Event]:
        return self._events  # type: ignore[return-value]  # a chat request lists no models

    def close(self) -> None:
        self._batches.close()


@final
class AsyncChatStream(_StreamBase):
    """A streamed answer, for asyncio or trio: ``async with`` and ``async for``; see
    `ChatStream`."""

    def __init__(
        self,
        request: Request,
        run: Callable[[AsyncChatStream], AsyncBatches],
        *,
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
        retries: int = 2,
        headers: tuple[tuple[str, str], ...] = (),
        raise_on_failure: bool = False,
    ) -> None:
        super().__init__(
            request,
            timeouts=timeouts,
            retries=retries,
            headers=headers,
            raise_on_failure=raise_on_failure,
        )
        self._batches = run(self)
        self._events = self._flat()

    async def __aenter__(self) -> AsyncChatStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._events  # type: ignore[return-value]  # a chat request lists no models

    async def _flat(self) -> AsyncGenerator[ExchangeEvent, None]:
        # an async generator's yield costs half an __anext__ call (124 against 235 ns here)
        async with aclosing(self._batches) as batches:
            async for batch in batches:
                for event in batch:
                    yield event

    async def aclose(self) -> None:
        await self._events.aclose()
        await self._batches.aclose()  # if the stream was never iterated


class StreamSettings(TypedDict):
    """One request's settings, as `ChatStream` and `AsyncChatStream` take them."""

    timeouts: Timeouts
    retries: int
    headers: tuple[tuple[str, str], ...]
    raise_on_failure: bool


class Settings:
    """What a client keeps for its requests, and makes each request's settings from (the
    client's, with the request's own overrides)."""

    def __init__(
        self,
        *,
        timeouts: Timeouts,
        retries: int,
        headers: HeaderItems | None,
        raise_on_failure: bool,
        where: str,
    ) -> None:
        check_client(timeouts=timeouts, retries=retries, where=where)
        if type(raise_on_failure) is not bool:
            raise TypeError(f"{where}: raise_on_failure must be a bool, not {raise_on_failure!r}")
        self.timeouts = timeouts
        self.retries = retries
        self.headers = merge_headers(headers)
        self.raise_on_failure = raise_on_failure

    def for_request(
        self,
        *,
        timeouts: Timeouts | None,
        retries: int | None,
        headers: HeaderItems | None,
    ) -> StreamSettings:
        """The stream's keyword arguments for one request (checked now)."""
        check_client(timeouts=timeouts, retries=retries, where="stream_chat()")
        return {
            "timeouts": self.timeouts if timeouts is None else timeouts,
            "retries": self.retries if retries is None else retries,
            "headers": merge_headers(self.headers, headers),
            "raise_on_failure": self.raise_on_failure,
        }


C = TypeVar("C", bound="_ClientBase")


class _ClientBase:
    """What every client has: its endpoint and settings, and ``from_env``."""

    endpoint: Endpoint
    settings: Settings

    @classmethod
    def from_env(cls: type[C], environ: Mapping[str, str] | None = None) -> C:
        """A client for the server openai-python would use: ``OPENAI_BASE_URL`` and
        ``OPENAI_API_KEY`` (`Endpoint.from_env`), from ``os.environ`` unless given."""
        return cls(Endpoint.from_env(os.environ if environ is None else environ))  # type: ignore[call-arg]

    @property
    def timeouts(self) -> Timeouts:
        return self.settings.timeouts

    @property
    def retries(self) -> int:
        return self.settings.retries


class SyncClientBase(_ClientBase):
    """The blocking clients' requests: each transport gives ``_run`` (the attempts)."""

    def _run(self, stream: ChatStream) -> Batches:  # pragma: no cover - each transport's own
        raise NotImplementedError

    def stream_chat(
        self,
        request: ChatRequest | LLMRequest,
        *,
        timeouts: Timeouts | None = None,
        retries: int | None = None,
        headers: HeaderItems | None = None,
    ) -> ChatStream:
        """Send ``request``; the returned `ChatStream` yields the answer's events.

        Args:
            timeouts, retries: this request's own, instead of the client's.
            headers: this request's own, replacing the client's of the same name.
        """
        settings = self.settings.for_request(timeouts=timeouts, retries=retries, headers=headers)
        return ChatStream(request, self._run, **settings)

    def list_models(self) -> tuple[ModelInfo, ...]:
        """``GET /v1/models``, chat models first.

        Raises:
            RequestFailedError: its kind's subclass, for a failure the server reported.
        """
        settings = self.settings.for_request(timeouts=None, retries=None, headers=None)
        settings["raise_on_failure"] = False  # listed() raises, with the failure's own class
        with ChatStream(ModelsRequest(), self._run, **settings) as stream:
            events = [event for batch in stream._batches for event in batch]
        return listed(events, stream.result.error)


class AsyncClientBase(_ClientBase):
    """The async clients' requests (asyncio or trio); see `SyncClientBase`."""

    def _run(self, stream: AsyncChatStream) -> AsyncBatches:  # pragma: no cover - each its own
        raise NotImplementedError

    def stream_chat(
        self,
        request: ChatRequest | LLMRequest,
        *,
        timeouts: Timeouts | None = None,
        retries: int | None = None,
        headers: HeaderItems | None = None,
    ) -> AsyncChatStream:
        """Send ``request``; the returned `AsyncChatStream` yields the answer's events (the
        arguments as for the blocking ``stream_chat``)."""
        settings = self.settings.for_request(timeouts=timeouts, retries=retries, headers=headers)
        return AsyncChatStream(request, self._run, **settings)

    async def list_models(self) -> tuple[ModelInfo, ...]:
        """``GET /v1/models``, chat models first.

        Raises:
            RequestFailedError: its kind's subclass, for a failure the server reported.
        """
        settings = self.settings.for_request(timeouts=None, retries=None, headers=None)
        settings["raise_on_failure"] = False  # listed() raises, with the failure's own class
        async with AsyncChatStream(ModelsRequest(), self._run, **settings) as stream:
            events = [event async for batch in stream._batches for event in batch]
        return listed(events, stream.result.error)


RENAMED: Final = {"TransportError": "SvirTransportError", "ConnectError": "ConnectionFailedError"}
__getattr__ = renamed(__name__, RENAMED, globals())
