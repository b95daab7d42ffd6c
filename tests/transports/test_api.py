"""The API an embedding library builds on, the same in every transport: typed options checked
when a client is made, caller headers, per-request settings, response metadata, raising on
request, the error tree, keep-alive after the server closed, framing errors and content codings.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from svir_proto import (
    AuthenticationFailedError,
    ChatStreamDecoder,
    FailureKind,
    IncompleteStreamError,
    PeerProtocolError,
    RateLimitedError,
    RequestFailed,
    RequestFailedError,
    SvirError,
    TextDelta,
)
from svir_proto.openai import ChatRequest, UserMessage
from svir_proto.transports import (
    ChatStream,
    ConnectionFailedError,
    StreamTimeout,
    SvirTransportError,
    Timeouts,
    blocking,
)
from svir_proto.transports import anyio as anyio_transport
from svir_proto.transports import httpcore as httpcore_transport
from svir_proto.transports import httpx as httpx_transport
from tests.transports.drivers import TRANSPORTS, models, run
from tests.transports.server import ReplayServer, fixture

pytestmark = pytest.mark.filterwarnings(  # as in the contract suite: httpcore's own generators
    "ignore:Exception ignored in. <async_generator object "
    "(PoolByteStream|HTTP11ConnectionByteStream|Response|AsyncHTTP11Connection)[.]"
    ":pytest.PytestUnraisableExceptionWarning"
)

REQUEST = ChatRequest(model="m", messages=[UserMessage(content="hi")])
NAME = "wire-3.3-tool-calls"


@pytest.fixture(scope="module")
def server() -> Iterator[ReplayServer]:
    s = ReplayServer()
    yield s
    s.close()


# -- options: typed, and checked when the client is made ----------------------------------------

CLIENTS: list[Any] = [
    blocking.Client,
    anyio_transport.Client,
    httpcore_transport.Client,
    httpcore_transport.AsyncClient,
    httpx_transport.Client,
    httpx_transport.AsyncClient,
]


@pytest.mark.parametrize("cls", CLIENTS)
def test_an_unknown_option_fails_when_the_client_is_made(cls: Any) -> None:
    with pytest.raises(TypeError, match=r"'timeout'.*did you mean 'timeouts'"):
        cls("http://127.0.0.1:9", timeout=5.0)
    with pytest.raises(TypeError, match="max_retries"):
        cls("http://127.0.0.1:9", max_retries=3)
    with pytest.raises(ValueError, match="max_event_size must be a positive int"):
        cls("http://127.0.0.1:9", max_event_size=0)
    with pytest.raises(ValueError, match="retries must be an int >= 0"):
        cls("http://127.0.0.1:9", retries=-1)
    with pytest.raises(TypeError, match="timeouts must be a Timeouts"):
        cls("http://127.0.0.1:9", timeouts=5.0)
    with pytest.raises(ValueError, match="sets this header itself"):
        cls("http://127.0.0.1:9", headers={"Content-Length": "1"})
    with pytest.raises(TypeError, match="raise_on_failure must be a bool"):
        cls("http://127.0.0.1:9", raise_on_failure="yes")


def test_module_functions_check_their_options_too() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'timeout'"):
        blocking.stream_chat("http://127.0.0.1:9", REQUEST, timeout=5.0)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'think'"):
        anyio_transport.stream_chat("http://127.0.0.1:9", REQUEST, think=True)  # type: ignore[call-arg]


@pytest.mark.parametrize("cls", CLIENTS)
def test_from_env_reads_what_openai_python_reads(cls: Any) -> None:
    client = cls.from_env({"OPENAI_BASE_URL": "http://h:8080/v1", "OPENAI_API_KEY": "sk-e"})
    assert client.endpoint.authority == "h:8080"
    assert client.endpoint.api_key == "sk-e"


# -- what goes out: the caller's headers, per client and per request ----------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_caller_headers_go_out_and_per_request_ones_win(
    server: ReplayServer, transport: str
) -> None:
    before = len(server.requests)
    out = run(
        transport,
        server.base("replay", NAME, "length"),
        REQUEST,
        headers={"OpenAI-Organization": "org-1", "traceparent": "00-a-b-01", "User-Agent": "x/1"},
        per_request={"headers": {"traceparent": "00-c-d-01"}},
    )
    assert out.result.complete
    sent = server.requests[before].headers
    assert sent["openai-organization"] == "org-1"
    assert sent["traceparent"] == "00-c-d-01"  # the request's own replaces the client's
    assert sent["user-agent"] == "x/1"
    assert sent["accept-encoding"] == "identity"


# -- what comes back: status, headers, request id ----------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_response_metadata(server: ReplayServer, transport: str) -> None:
    out = run(
        transport,
        server.base("echo-id", NAME),
        REQUEST,
        headers={"X-Request-Id": "req-42"},
    )
    assert (out.status, out.request_id) == (200, "req-42")
    assert ("content-type", "text/event-stream") in out.headers


# -- failures: Retrying in place of a retried one, raising on request --------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_retried_failure_is_a_retrying_event_not_a_request_failed(
    server: ReplayServer, transport: str
) -> None:
    out = run(
        transport, server.base("flaky", f"r{transport}", "1", "503", NAME), REQUEST, retries=1
    )
    kinds = [type(e).__name__ for e in out.events]
    assert kinds[:3] == ["ResponseStarted", "Retrying", "ResponseStarted"]
    assert "RequestFailed" not in kinds
    failed = run(transport, server.base("status", "503", "openai"), REQUEST, retries=1)
    assert [type(e).__name__ for e in failed.events] == [
        "ResponseStarted",
        "Retrying",
        "ResponseStarted",
        "RequestFailed",  # the last attempt's: final
    ]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_raise_on_failure_raises_the_kinds_class_after_the_events(
    server: ReplayServer, transport: str
) -> None:
    out = run(transport, server.base("status", "401", "openai"), REQUEST, raise_on_failure=True)
    assert isinstance(out.error, AuthenticationFailedError)
    assert isinstance(out.events[-1], RequestFailed)  # the event first, then the raise
    assert out.error.failure == out.events[-1].failure
    limited = run(transport, server.base("status", "429", "openai"), REQUEST, raise_on_failure=True)
    assert isinstance(limited.error, RateLimitedError)
    assert limited.error.failure.retry_after == 0
    cut = run(transport, server.base("drop-mid", NAME), REQUEST, raise_on_failure=True)
    assert isinstance(cut.error, IncompleteStreamError)
    assert cut.error.result.interrupted is not None
    whole = run(transport, server.base("replay", NAME, "chunked"), REQUEST, raise_on_failure=True)
    assert whole.error is None


@pytest.mark.parametrize("transport", ["blocking", "anyio-trio", "httpx"])
def test_raise_for_failure_on_request(server: ReplayServer, transport: str) -> None:
    out = run(transport, server.base("status", "400", "overflow"), REQUEST, check=True)
    assert type(out.error).__name__ == "ContextOverflowError"
    assert isinstance(out.error, RequestFailedError)
    assert isinstance(out.error, SvirError)
    whole = run(transport, server.base("replay", NAME, "chunked"), REQUEST, check=True)
    assert whole.error is None


def test_the_error_tree() -> None:
    assert issubclass(ConnectionFailedError, SvirTransportError)
    assert issubclass(StreamTimeout, SvirTransportError)
    assert issubclass(StreamTimeout, TimeoutError)
    assert issubclass(SvirTransportError, SvirError)
    assert issubclass(PeerProtocolError, SvirError)
    assert not issubclass(ConnectionFailedError, httpx.ConnectError)  # and not the same name


def test_the_old_transport_error_names_warn() -> None:
    import svir_proto.transports
    import svir_proto.transports._shared as shared

    with pytest.warns(DeprecationWarning, match="ConnectionFailedError"):
        assert svir_proto.transports.ConnectError is ConnectionFailedError  # type: ignore[attr-defined]
    with pytest.warns(DeprecationWarning, match="SvirTransportError"):
        assert shared.TransportError is SvirTransportError  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        svir_proto.transports.Nothing  # type: ignore[attr-defined]  # noqa: B018


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_models_failures_raise_their_kinds_class(server: ReplayServer, transport: str) -> None:
    with pytest.raises(AuthenticationFailedError):
        models(transport, server.base("status", "401", "openai"))


# -- per-request settings, and the total timeout's message -----------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_per_request_timeouts_and_the_totals_own_seconds(
    server: ReplayServer, transport: str
) -> None:
    out = run(
        transport,
        server.base("stall-first", "3", NAME),
        REQUEST,
        timeouts=Timeouts(first_byte=30),
        per_request={"timeouts": Timeouts(total=0.4)},
    )
    assert isinstance(out.error, StreamTimeout)
    assert out.error.phase == "total"
    assert out.error.seconds == 0.4
    assert "waited 0.4 s for the whole exchange" in str(out.error)


# -- the wire: framing errors, content codings, a kept-alive connection closed ---------------


@pytest.mark.parametrize("fault", ["header", "footer"])
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_bad_chunk_framing_is_a_protocol_error_everywhere(
    server: ReplayServer, transport: str, fault: str
) -> None:
    out = run(transport, server.base("bad-chunk", fault), REQUEST, timeouts=Timeouts(read=20))
    assert isinstance(out.error, PeerProtocolError), out.error
    assert out.result.text == "ok"  # what came before it is kept
    assert not out.result.complete


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_body_in_a_coding_not_asked_for_is_a_named_failure(
    server: ReplayServer, transport: str
) -> None:
    out = run(transport, server.base("gzip"), REQUEST)
    assert out.error is None
    failed = out.events[-1]
    assert isinstance(failed, RequestFailed)
    assert failed.failure.code == "unexpected_content_encoding"
    assert failed.failure.kind is FailureKind.UNEXPECTED
    assert "gzip" in failed.failure.message


@pytest.mark.parametrize("transport", ["blocking", "anyio-asyncio", "anyio-trio"])
def test_a_kept_alive_connection_the_server_closed_is_opened_anew(
    server: ReplayServer, transport: str
) -> None:
    base = server.base("close-after", NAME)
    counts = run(transport, base, REQUEST, again=True)
    assert counts.result.complete  # the second request, on a second connection
    assert counts.connections == 2


def test_the_exchange_log_line(server: ReplayServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="svir.client")
    run("blocking", server.base("flaky", "log", "1", "429", NAME), REQUEST, retries=1)
    lines = [r.getMessage() for r in caplog.records if r.name == "svir.client"]
    assert lines[0].startswith("POST http://127.0.0.1:")
    assert lines[0].endswith("-> 429 request_id=- failed: rate_limited")
    assert lines[1].startswith("retry (attempt 2) in 0 s: rate_limited")
    assert lines[2].endswith("-> 200 request_id=- complete")
    assert "hi" not in " ".join(lines)  # never the prompt


def test_the_chat_stream_is_typed_as_events(server: ReplayServer) -> None:
    with blocking.Client(server.base("replay", NAME, "length")) as client:
        stream: ChatStream = client.stream_chat(REQUEST)
        with stream:
            text = "".join(e.text for e in stream if isinstance(e, TextDelta))
    d = ChatStreamDecoder()
    d.feed(fixture(NAME))
    d.close()
    assert text == d.result.text


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_the_callers_httpx_timeouts_stay_unless_ours_are_given(
    server: ReplayServer, kind: str
) -> None:
    import anyio

    base = server.base("stall-first", "3", NAME)

    def sync(timeouts: Timeouts | None) -> BaseException | None:
        with httpx.Client(timeout=httpx.Timeout(30.0, read=0.3)) as http:
            client = httpx_transport.Client(base, http, timeouts=timeouts)
            try:
                with client.stream_chat(REQUEST) as stream:
                    list(stream)
            except StreamTimeout as exc:
                return exc
        return None

    async def asynchronous(timeouts: Timeouts | None) -> BaseException | None:
        async with httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=0.3)) as http:
            client = httpx_transport.AsyncClient(base, http, timeouts=timeouts)
            try:
                async with client.stream_chat(REQUEST) as stream:
                    [e async for e in stream]
            except StreamTimeout as exc:
                return exc
        return None

    def attempt(timeouts: Timeouts | None) -> BaseException | None:
        if kind == "sync":
            return sync(timeouts)
        return anyio.run(asynchronous, timeouts)

    theirs = attempt(None)
    assert isinstance(theirs, StreamTimeout)
    assert (theirs.phase, theirs.seconds) == ("first_byte", 0.3)  # the client's read timeout
    ours = attempt(Timeouts(first_byte=0.5))
    assert isinstance(ours, StreamTimeout)
    assert (ours.phase, ours.seconds) == ("first_byte", 0.5)
