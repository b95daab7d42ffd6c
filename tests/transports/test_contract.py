"""One contract, every transport: blocking sockets, anyio under asyncio and trio, httpcore's pools
(sync, asyncio, trio) and httpx (sync, asyncio), against our replay server on loopback.

Each case checks what a caller sees (the events, the `Completion`, the exception) against
decoding the same recording directly, so a transport that drops, adds, reorders or misreads
anything fails here, whatever the framing the server chose.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from svir_proto import (
    ChatStreamDecoder,
    FailureKind,
    LLMMessage,
    LLMRequest,
    LLMStreamDecoder,
    LLMTool,
    PeerProtocolError,
    ReasoningDelta,
    RequestFailed,
    ResponseStarted,
    Retrying,
    StreamEnded,
)
from svir_proto.openai import ChatRequest, Tool, UserMessage, body_outcome
from svir_proto.transports import ConnectionFailedError, StreamTimeout, Timeouts
from tests.conformance.openai_results import summary
from tests.helpers import CONFORMANCE
from tests.transports.drivers import TRANSPORTS, models, run
from tests.transports.server import ERROR_BODIES, ReplayServer, fixture

OPENAI = sorted(p.stem for p in (CONFORMANCE / "openai").glob("*.sse"))
RECORDED = sorted(p.stem for p in (CONFORMANCE / "llamacpp").glob("*.sse"))
LLM = sorted(p.stem for p in (CONFORMANCE / "llmstream").glob("*.sse"))
OWN_SOCKETS = ["blocking", "anyio-asyncio", "anyio-trio"]

# httpcore iterates its own async generators with a plain async for, so under trio leaving a
# response early leaves them unfinished and trio warns; the connection is closed all the same.
# Only httpcore's own generators are named: one of ours left unclosed still fails a test.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Exception ignored in. <async_generator object "
    "(PoolByteStream|HTTP11ConnectionByteStream|Response|AsyncHTTP11Connection)[.]"
    ":pytest.PytestUnraisableExceptionWarning"
)


@pytest.fixture(scope="module")
def server() -> Iterator[ReplayServer]:
    s = ReplayServer()
    yield s
    s.close()


def folder_of(name: str) -> str:
    return "llamacpp" if name in RECORDED else "openai"


def options_of(folder: str, name: str) -> dict[str, Any]:
    opts: dict[str, Any] = json.loads((CONFORMANCE / folder / f"{name}.json").read_text())[
        "options"
    ]
    return opts


def chat_request(name: str) -> tuple[ChatRequest, dict[str, Any]]:
    """A request whose decoder is the one the recording's expectations were made with."""
    opts = options_of(folder_of(name), name)
    request = ChatRequest(
        model="m",
        messages=[UserMessage(content="hi")],
        tools=[Tool(name=n) for n in opts.get("declared_tools", ())],
        include_usage=opts.get("expect_usage", False),
    )
    return request, {"think_opened": opts.get("think_opened", False)}


def direct(name: str) -> dict[str, Any]:
    d = ChatStreamDecoder(**options_of(folder_of(name), name))
    events = d.feed(fixture(name)) + d.close()
    return summary(events, d.result)


def seen(outcome_events: list[Any], result: Any) -> dict[str, Any]:
    return summary([e for e in outcome_events if not isinstance(e, ResponseStarted)], result)


@pytest.mark.parametrize("framing", ["length", "chunked", "close"])
@pytest.mark.parametrize("name", OPENAI + RECORDED)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_every_recording_arrives_as_decoded_directly(
    server: ReplayServer, transport: str, name: str, framing: str
) -> None:
    request, options = chat_request(name)
    out = run(transport, server.base("replay", name, framing), request, **options)
    assert out.error is None
    assert isinstance(out.events[0], ResponseStarted)
    assert seen(out.events, out.result) == direct(name)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_slow_drip_arrives_whole(server: ReplayServer, transport: str) -> None:
    name = "wire-3.3-tool-calls"
    request, options = chat_request(name)
    out = run(transport, server.base("replay", name, "drip"), request, **options)
    assert seen(out.events, out.result) == direct(name)


@pytest.mark.parametrize("name", LLM)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_llm_stream_recordings(server: ReplayServer, transport: str, name: str) -> None:
    opts = options_of("llmstream", name)
    request = LLMRequest(
        model="m",
        messages=[LLMMessage(role="user", content="hi")],
        tools=[
            LLMTool(name=n, description="", parameters={"type": "object"})
            for n in opts.get("declared_tools", ())
        ],
    )
    d = LLMStreamDecoder(**opts)
    want = summary(d.feed(fixture(name)) + d.close(), d.result)
    out = run(transport, server.base("llm", name), request)
    assert out.error is None
    assert seen(out.events, out.result) == want


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_llm_stream_falls_back_on_415(server: ReplayServer, transport: str) -> None:
    name = "wire-3.3-tool-calls"
    before = len(server.requests)
    request = LLMRequest(model="m", messages=[LLMMessage(role="user", content="hi")])
    out = run(transport, server.base("openai-only", name), request)
    assert out.error is None
    kinds = [type(e).__name__ for e in out.events[:3]]
    assert kinds == ["ResponseStarted", "Retrying", "ResponseStarted"]  # the 415 is not final
    retrying = out.events[1]
    assert isinstance(retrying, Retrying)
    assert retrying.failure.status == 415
    sent = server.requests[before:]
    assert [r.headers["content-type"] for r in sent] == [
        "application/llm-request+json",
        "application/json",
    ]
    assert json.loads(sent[1].body)["messages"] == [{"role": "user", "content": "hi"}]
    assert out.result.text == direct(name)["result"]["text"]
    assert out.result.tool_calls
    assert out.result.complete


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_first_byte_timeout(server: ReplayServer, transport: str) -> None:
    request, _ = chat_request("wire-3.3-tool-calls")
    timeouts = Timeouts(first_byte=0.3)
    out = run(
        transport,
        server.base("stall-first", "3", "wire-3.3-tool-calls"),
        request,
        timeouts=timeouts,
    )
    assert isinstance(out.error, StreamTimeout)
    assert out.error.phase == "first_byte"
    assert out.result.interrupted is not None
    assert "first_byte timeout" in out.result.interrupted


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_stream_that_stalls_keeps_what_arrived(server: ReplayServer, transport: str) -> None:
    name = "vllm-reasoning-and-content"
    request, _ = chat_request(name)
    start = time.monotonic()
    out = run(transport, server.base("stall-mid", name), request, timeouts=Timeouts(read=0.4))
    assert time.monotonic() - start < 3
    assert isinstance(out.error, StreamTimeout)
    assert out.error.phase == "read"
    assert isinstance(out.events[-1], StreamEnded)
    assert not out.events[-1].complete
    assert out.result.reasoning  # what arrived is kept
    assert not out.result.complete
    assert "read timeout" in (out.result.interrupted or "")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_dropped_connection_ends_the_stream_partial(server: ReplayServer, transport: str) -> None:
    name = "vllm-reasoning-and-content"
    request, _ = chat_request(name)
    out = run(transport, server.base("drop-mid", name), request)
    assert out.error is None
    assert isinstance(out.events[-1], StreamEnded)
    assert not out.events[-1].complete
    assert out.result.reasoning
    assert not out.result.complete
    assert out.result.interrupted is not None


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_stalled_401_body_is_not_waited_for(server: ReplayServer, transport: str) -> None:
    request, _ = chat_request("wire-3.3-tool-calls")
    start = time.monotonic()
    out = run(transport, server.base("stall-401"), request, timeouts=Timeouts(read=5, first_byte=5))
    assert time.monotonic() - start < 2
    assert out.error is None
    assert isinstance(out.events[-1], RequestFailed)
    assert out.events[-1].failure.kind is FailureKind.AUTHENTICATION
    assert out.result.error == out.events[-1].failure


CASES = [
    (code, style)
    for code in (400, 401, 403, 408, 413, 422, 429, 500, 502, 503, 504)
    for style in ERROR_BODIES
]


@pytest.mark.parametrize(("code", "style"), CASES)
@pytest.mark.parametrize("transport", ["blocking", "anyio-trio", "httpcore", "httpx-asyncio"])
def test_every_status_in_every_style(
    server: ReplayServer, transport: str, code: int, style: str
) -> None:
    request, _ = chat_request("wire-3.3-tool-calls")
    out = run(transport, server.base("status", str(code), style), request)
    assert out.error is None
    assert isinstance(out.events[-1], RequestFailed)
    headers = [("Content-Type", "text/plain" if style in ("text", "empty") else "application/json")]
    if code in (429, 503):
        headers.append(("Retry-After", "0"))
    body = b"" if code in (401, 403) else ERROR_BODIES[style]
    if code in (401, 403):
        assert out.events[-1].failure.kind is FailureKind.AUTHENTICATION
    else:
        assert out.events[-1] == body_outcome(code, headers, body)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_json_success_is_not_a_stream(server: ReplayServer, transport: str) -> None:
    request, _ = chat_request("wire-3.3-tool-calls")
    out = run(transport, server.base("json-200"), request)
    assert isinstance(out.events[-1], RequestFailed)
    assert out.events[-1].failure.kind is FailureKind.NOT_A_STREAM
    assert "application/json" in out.events[-1].failure.message


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_oversized_head_is_an_error(server: ReplayServer, transport: str) -> None:
    request, _ = chat_request("wire-3.3-tool-calls")
    out = run(transport, server.base("huge-head"), request)
    assert isinstance(out.error, PeerProtocolError)
    if transport in OWN_SOCKETS:
        assert out.error.limit == "max_head_size"
        assert out.error.limit_value == 16 * 1024


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_retries_follow_the_plan(server: ReplayServer, transport: str) -> None:
    name = "wire-3.3-tool-calls"
    request, _ = chat_request(name)
    out = run(
        transport, server.base("flaky", f"t{transport}", "2", "429", name), request, retries=2
    )
    # the scenario counts per path: the transport's name makes the path its own
    retrying = [e for e in out.events if isinstance(e, Retrying)]
    assert [r.attempt for r in retrying] == [2, 3]
    assert all(r.failure.kind is FailureKind.RATE_LIMITED and r.delay == 0 for r in retrying)
    assert out.result.complete


def test_flaky_paths_count_apart(server: ReplayServer) -> None:
    # the flaky scenario counts per path; the test above puts the transport in the path
    base = server.base("flaky", "a", "1", "503", "wire-3.3-tool-calls")
    request, _ = chat_request("wire-3.3-tool-calls")
    first = run("blocking", base, request, retries=0)
    second = run("blocking", base, request, retries=0)
    assert isinstance(first.events[-1], RequestFailed)
    assert second.result.complete


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_no_retry_when_turned_off_or_filtered(server: ReplayServer, transport: str) -> None:
    request, _ = chat_request("wire-3.3-tool-calls")
    off = run(
        transport,
        server.base("flaky", f"off{transport}", "1", "429", "wire-3.3-tool-calls"),
        request,
    )
    assert not any(isinstance(e, Retrying) for e in off.events)
    filtered = run(transport, server.base("status", "400", "azure-filter"), request, retries=3)
    assert not any(isinstance(e, Retrying) for e in filtered.events)
    assert filtered.result.error is not None
    assert filtered.result.error.kind is FailureKind.CONTENT_FILTER


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_strict_server_gets_the_request_without_optional_fields(
    server: ReplayServer, transport: str
) -> None:
    name = "wire-3.3-tool-calls"
    request = ChatRequest(model="m", messages=[UserMessage(content="hi")], include_usage=True)
    before = len(server.requests)
    out = run(transport, server.base("strict", name), request, retries=1)
    assert [type(e).__name__ for e in out.events[:3]] == [
        "ResponseStarted",
        "Retrying",  # in place of the 400 that is sent again: one RequestFailed is final
        "ResponseStarted",
    ]
    assert not any(isinstance(e, RequestFailed) for e in out.events)
    assert "stream_options" in json.loads(server.requests[before].body)
    assert "stream_options" not in json.loads(server.requests[before + 1].body)
    assert out.result.complete


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_leaving_early_keeps_the_partial_answer(server: ReplayServer, transport: str) -> None:
    # the server sends half the answer and waits: the caller leaves at the first text
    name = "vllm-reasoning-and-content"
    request, _ = chat_request(name)
    stop = lambda e: isinstance(e, ReasoningDelta)  # noqa: E731
    start = time.monotonic()
    out = run(transport, server.base("stall-mid", name), request, stop=stop)
    assert time.monotonic() - start < 2  # at once, not after a timeout
    assert out.error is None
    assert out.result.reasoning  # what arrived is in the result
    assert not out.result.complete
    assert out.result.interrupted == "the caller left the stream"
    again = run(transport, server.base("replay", name, "chunked"), request)  # the server goes on
    assert again.result.complete


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_models_chat_first(server: ReplayServer, transport: str) -> None:
    listed = models(transport, server.base("replay", "x", "length"))
    assert [m.id for m in listed] == [
        "qwen3-8b",
        "text-embedding-nomic-embed-text-v1.5",
        "whisper-large-v3",
    ]
    assert [m.kind.value for m in listed] == ["chat", "embedding", "speech"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_connection_refused(transport: str) -> None:
    request, _ = chat_request("wire-3.3-tool-calls")
    out = run(transport, "http://127.0.0.1:9/v1", request)
    assert isinstance(out.error, ConnectionFailedError)
    assert out.events == []


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_bad_event_is_raised_at_once_not_after_a_timeout(
    server: ReplayServer, transport: str
) -> None:
    # the server sends a good event, a bad one, and then keeps the connection open
    request, _ = chat_request("wire-3.3-tool-calls")
    start = time.monotonic()
    out = run(transport, server.base("garbage"), request, timeouts=Timeouts(read=20))
    assert time.monotonic() - start < 5
    assert isinstance(out.error, PeerProtocolError)
    assert out.result.text == "ok"
