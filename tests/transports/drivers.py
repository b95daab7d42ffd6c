"""Run one request through any transport and keep what the caller saw: the events, the result,
and the exception if one ended it. The contract suite compares these across transports."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import anyio
import httpx

from svir_proto.events import Completion
from svir_proto.exchange import ExchangeEvent, Request
from svir_proto.openai.endpoint import ModelInfo
from svir_proto.transports import anyio as anyio_transport
from svir_proto.transports import blocking
from svir_proto.transports import httpcore as httpcore_transport
from svir_proto.transports import httpx as httpx_transport

# The caller's own httpx client keeps its timeouts (httpx's default is 5 s, too short for a
# model on a loaded CPU): the tests give theirs a minute, our transports' own default bound.
HTTPX_TIMEOUT = httpx.Timeout(60.0)

TRANSPORTS = [
    "blocking",
    "anyio-asyncio",
    "anyio-trio",
    "httpcore",
    "httpcore-asyncio",
    "httpcore-trio",
    "httpx",
    "httpx-asyncio",
]


class Outcome(NamedTuple):
    events: list[ExchangeEvent]
    result: Completion
    error: BaseException | None
    status: int | None = None
    headers: tuple[tuple[str, str], ...] = ()
    request_id: str | None = None
    connections: int | None = None


class Options(NamedTuple):
    """How `run` drives one request beyond the client's options."""

    stop: Callable[[ExchangeEvent], bool] | None
    per_request: dict[str, Any]
    check: bool  # call raise_for_failure() after the stream
    again: bool  # send the request twice on one client: the outcome is the second's


def _outcome(
    events: list[ExchangeEvent], stream: Any, error: BaseException | None, client: Any
) -> Outcome:
    return Outcome(
        events,
        stream.result,
        error,
        stream.status,
        stream.headers,
        stream.request_id,
        getattr(client, "connections", None),
    )


def _sync(make: Callable[[], Any], request: Request, how: Options) -> Outcome:
    client = make()
    try:
        for _ in range(2 if how.again else 1):
            events: list[ExchangeEvent] = []
            error = None
            stream = client.stream_chat(request, **how.per_request)
            try:
                with stream:
                    for event in stream:
                        events.append(event)
                        if how.stop is not None and how.stop(event):
                            break
                if how.check:
                    stream.raise_for_failure()
            except Exception as exc:
                error = exc
        return _outcome(events, stream, error, client)
    finally:
        getattr(client, "close", lambda: None)()


async def _async(make: Callable[[], Any], request: Request, how: Options) -> Outcome:
    client = make()
    try:
        for _ in range(2 if how.again else 1):
            events: list[ExchangeEvent] = []
            error = None
            stream = client.stream_chat(request, **how.per_request)
            try:
                async with stream:
                    async for event in stream:
                        events.append(event)
                        if how.stop is not None and how.stop(event):
                            break
                if how.check:
                    stream.raise_for_failure()
            except Exception as exc:
                error = exc
        return _outcome(events, stream, error, client)
    finally:
        close = getattr(client, "aclose", None)
        if close is not None:
            await close()


def run(
    transport: str,
    base: str,
    request: Request,
    *,
    stop: Callable[[ExchangeEvent], bool] | None = None,
    per_request: dict[str, Any] | None = None,
    check: bool = False,
    again: bool = False,
    **options: Any,
) -> Outcome:
    """``request`` to ``base`` through ``transport``; ``stop`` leaves the stream early;
    ``per_request`` goes to ``stream_chat``; ``check`` calls ``raise_for_failure``; ``again``
    sends the request a second time on the same client."""
    options.setdefault("retries", 0)
    how = Options(stop, per_request or {}, check, again)
    if transport == "blocking":
        return _sync(lambda: blocking.Client(base, **options), request, how)
    if transport == "httpcore":
        return _sync(lambda: httpcore_transport.Client(base, **options), request, how)
    if transport == "httpx":
        with httpx.Client(timeout=HTTPX_TIMEOUT) as http:
            return _sync(lambda: httpx_transport.Client(base, http, **options), request, how)
    kind, backend = transport.split("-")

    async def main() -> Outcome:
        if kind == "anyio":
            return await _async(lambda: anyio_transport.Client(base, **options), request, how)
        if kind == "httpcore":
            return await _async(
                lambda: httpcore_transport.AsyncClient(base, **options), request, how
            )
        async with httpx.AsyncClient(timeout=HTTPX_TIMEOUT) as http:
            return await _async(
                lambda: httpx_transport.AsyncClient(base, http, **options), request, how
            )

    return anyio.run(main, backend=backend)


def models(transport: str, base: str, **options: Any) -> tuple[ModelInfo, ...]:
    if transport == "blocking":
        return blocking.list_models(base, **options)
    if transport == "httpcore":
        with httpcore_transport.Client(base, **options) as client:
            return client.list_models()
    if transport == "httpx":
        with httpx.Client(timeout=HTTPX_TIMEOUT) as http:
            return httpx_transport.Client(base, http, **options).list_models()
    kind, backend = transport.split("-")

    async def main() -> tuple[ModelInfo, ...]:
        if kind == "anyio":
            return await anyio_transport.list_models(base, **options)
        if kind == "httpcore":
            async with httpcore_transport.AsyncClient(base, **options) as client:
                return await client.list_models()
        async with httpx.AsyncClient(timeout=HTTPX_TIMEOUT) as http:
            return await httpx_transport.AsyncClient(base, http, **options).list_models()

    return anyio.run(main, backend=backend)
