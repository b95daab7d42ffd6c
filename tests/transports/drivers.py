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


def _sync(
    make: Callable[[], Any], request: Request, stop: Callable[[ExchangeEvent], bool] | None
) -> Outcome:
    events: list[ExchangeEvent] = []
    error = None
    client = make()
    stream = client.stream_chat(request)
    try:
        with stream:
            for event in stream:
                events.append(event)
                if stop is not None and stop(event):
                    break
    except Exception as exc:
        error = exc
    finally:
        getattr(client, "close", lambda: None)()
    return Outcome(events, stream.result, error)


async def _async(
    make: Callable[[], Any], request: Request, stop: Callable[[ExchangeEvent], bool] | None
) -> Outcome:
    events: list[ExchangeEvent] = []
    error = None
    client = make()
    stream = client.stream_chat(request)
    try:
        async with stream:
            async for event in stream:
                events.append(event)
                if stop is not None and stop(event):
                    break
    except Exception as exc:
        error = exc
    finally:
        close = getattr(client, "aclose", None)
        if close is not None:
            await close()
    return Outcome(events, stream.result, error)


def run(
    transport: str,
    base: str,
    request: Request,
    *,
    stop: Callable[[ExchangeEvent], bool] | None = None,
    **options: Any,
) -> Outcome:
    """``request`` to ``base`` through ``transport``; ``stop`` leaves the stream early."""
    options.setdefault("retries", 0)
    if transport == "blocking":
        return _sync(lambda: blocking.Client(base, **options), request, stop)
    if transport == "httpcore":
        return _sync(lambda: httpcore_transport.Client(base, **options), request, stop)
    if transport == "httpx":
        with httpx.Client() as http:
            return _sync(lambda: httpx_transport.Client(base, http, **options), request, stop)
    kind, backend = transport.split("-")

    async def main() -> Outcome:
        if kind == "anyio":
            return await _async(lambda: anyio_transport.Client(base, **options), request, stop)
        if kind == "httpcore":
            return await _async(
                lambda: httpcore_transport.AsyncClient(base, **options), request, stop
            )
        async with httpx.AsyncClient() as http:
            return await _async(
                lambda: httpx_transport.AsyncClient(base, http, **options), request, stop
            )

    return anyio.run(main, backend=backend)


def models(transport: str, base: str, **options: Any) -> tuple[ModelInfo, ...]:
    if transport == "blocking":
        return blocking.list_models(base, **options)
    if transport == "httpcore":
        with httpcore_transport.Client(base, **options) as client:
            return client.list_models()
    if transport == "httpx":
        with httpx.Client() as http:
            return httpx_transport.Client(base, http, **options).list_models()
    kind, backend = transport.split("-")

    async def main() -> tuple[ModelInfo, ...]:
        if kind == "anyio":
            return await anyio_transport.list_models(base, **options)
        if kind == "httpcore":
            async with httpcore_transport.AsyncClient(base, **options) as client:
                return await client.list_models()
        async with httpx.AsyncClient() as http:
            return await httpx_transport.AsyncClient(base, http, **options).list_models()

    return anyio.run(main, backend=backend)
