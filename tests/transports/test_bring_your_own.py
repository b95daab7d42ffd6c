"""Bring your own client: the `Exchange` under httpx and aiohttp, as the README shows it (the
raw socket is examples/sans_io_socket.py). What goes out equals what our transports send, what
comes back decodes the same."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import httpx
import pytest

from svir_proto import Completion, Exchange, ExchangeEvent
from svir_proto.openai import ChatRequest, Endpoint, UserMessage
from tests.transports.server import ReplayServer

REQUEST = ChatRequest(model="m", messages=[UserMessage(content="hi")], include_usage=True)


@pytest.fixture(scope="module")
def server() -> Iterator[ReplayServer]:
    s = ReplayServer()
    yield s
    s.close()


def with_httpx(base: str) -> tuple[list[ExchangeEvent], Completion]:
    # -- the README's httpx example, as it stands there --
    exchange = Exchange(Endpoint.parse(base), REQUEST)
    with (
        httpx.Client() as http,
        http.stream(
            exchange.method, exchange.url, headers=exchange.headers, content=exchange.body
        ) as response,
    ):
        events = exchange.receive_head(response.status_code, response.headers.raw)
        for piece in () if exchange.finished else response.iter_raw():
            events += exchange.receive_body(piece)
            if exchange.error is not None:  # the events before it are in `events`
                raise exchange.error
            if exchange.finished:
                break
        else:
            events += exchange.end_of_body()
    return events, exchange.result


async def with_aiohttp(base: str) -> tuple[list[ExchangeEvent], Completion]:
    import aiohttp

    # -- the README's aiohttp example, as it stands there --
    exchange = Exchange(Endpoint.parse(base), REQUEST)
    async with (
        aiohttp.ClientSession(auto_decompress=False) as session,
        session.request(
            exchange.method, exchange.url, headers=exchange.headers, data=exchange.body
        ) as response,
    ):
        events = exchange.receive_head(response.status, response.raw_headers)
        if not exchange.finished:
            async for piece in response.content.iter_any():
                events += exchange.receive_body(piece)
                if exchange.error is not None:
                    raise exchange.error
                if exchange.finished:
                    break
            else:
                events += exchange.end_of_body()
    return events, exchange.result


@pytest.mark.parametrize("client", ["httpx", "aiohttp"])
@pytest.mark.parametrize("framing", ["length", "chunked"])
def test_a_client_of_your_own_sends_ours_and_decodes_alike(
    server: ReplayServer, client: str, framing: str
) -> None:
    base = server.base("replay", "wire-3.3-tool-calls", framing)
    before = len(server.requests)
    if client == "httpx":
        _, result = with_httpx(base)
    else:
        pytest.importorskip("aiohttp")
        _, result = anyio.run(with_aiohttp, base)
    assert result.complete
    assert [c.name for c in result.tool_calls] == ["lookup", "lookup"]
    sent = server.requests[before]
    assert sent.headers["accept-encoding"] == "identity"  # not the client's gzip
    assert sent.headers["user-agent"].startswith("svir-proto/")
    assert "transfer-encoding" not in sent.headers  # the exact length, not chunks
    assert int(sent.headers["content-length"]) == len(sent.body)


def test_a_failure_is_decided_from_the_head(server: ReplayServer) -> None:
    events, result = with_httpx(server.base("stall-401"))  # its body never comes
    assert result.error is not None
    assert result.error.status == 401
    assert type(events[-1]).__name__ == "RequestFailed"
