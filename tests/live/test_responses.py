"""Against the real thing: llama.cpp's own ``POST /v1/responses``, read by our decoder and by
openai-python's Responses client (``responses.create(stream=True)``, ``responses.stream`` and
a non-streamed ``create``); what the client reports of the bytes it read must be what our
decoder reports of the same bytes. The answers are also recorded
(tests/live/record_responses.py) and replayed offline."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from svir_proto import (
    FailureKind,
    FinishReason,
    StreamEnded,
    StreamStarted,
    TextDelta,
    ToolCallDelta,
)
from svir_proto.openai import body_outcome
from svir_proto.responses import (
    ResponsesRequest,
    ResponsesStreamDecoder,
    ResponsesStreamEncoder,
    decode_response,
)
from tests.helpers import run
from tests.live import cases
from tests.live.record_responses import fetch

openai = pytest.importorskip("openai")
httpx2 = pytest.importorskip("httpx2")


def decoded(base: str, request: ResponsesRequest) -> tuple[list[Any], ResponsesStreamDecoder]:
    status, media, body = fetch(base, request)
    assert (status, media.split(";")[0]) == (200, "text/event-stream")
    d = ResponsesStreamDecoder(declared_tools=request.tool_names or None)
    return run(d, [body]), d


def kwargs(request: ResponsesRequest) -> dict[str, Any]:
    """The request as openai-python's keyword arguments."""
    doc = json.loads(request.body().read())
    doc.pop("stream")
    return dict(doc)


def test_a_streamed_answer(llama: str) -> None:
    events, d = decoded(llama, cases.RESPONSES_STREAM)
    r = d.result
    assert r.complete
    assert r.usable
    assert r.text.strip()
    assert (r.finish_reason, r.finish_raw) == (FinishReason.STOP, "completed")
    assert r.usage is not None
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
    assert r.usage.cached_tokens is not None
    assert not r.problems
    assert isinstance(events[0], StreamStarted)
    assert events[0].response_id.startswith("resp_")
    assert d.model == cases.MODEL  # llama.cpp names it only in response.completed
    assert len([e for e in events if isinstance(e, TextDelta)]) > 3


def test_max_output_tokens_is_reported_as_completed_by_this_build(llama: str) -> None:
    _, d = decoded(llama, cases.RESPONSES_LENGTH)
    r = d.result
    assert r.complete
    assert r.finish_reason is FinishReason.STOP  # what the stream says: not response.incomplete
    assert r.usage is not None
    assert r.usage.completion_tokens == cases.RESPONSES_LENGTH.max_output_tokens


def test_a_tool_call(llama: str) -> None:
    events, d = decoded(llama, cases.RESPONSES_TOOL_CALL)
    r = d.result
    assert r.complete
    assert r.finish_reason is FinishReason.TOOL_CALLS
    (call,) = r.tool_calls
    assert (call.name, call.declared) == ("get_weather", True)
    assert "city" in call.parse_arguments().value
    assert any(isinstance(e, ToolCallDelta) and e.arguments for e in events)  # as deltas


def test_an_overflow_is_typed_by_the_openai_status_reader(llama: str) -> None:
    status, media, body = fetch(llama, cases.RESPONSES_OVERFLOW)
    failure = body_outcome(status, [("content-type", media)], body).failure
    assert (status, failure.kind) == (400, FailureKind.CONTEXT_OVERFLOW)
    assert not failure.retryable


class Tee(httpx2.BaseTransport):
    """openai-python's own HTTP transport, keeping the bytes of each response it reads, so our
    decoder reads the very bytes the client read (two requests may get two answers: the
    prompt cache changes llama.cpp's arithmetic)."""

    def __init__(self) -> None:
        self.inner = httpx2.HTTPTransport()
        self.bodies: list[bytearray] = []

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        response = self.inner.handle_request(request)
        kept = bytearray()
        self.bodies.append(kept)
        inner = response.stream

        class Kept(httpx2.SyncByteStream):
            def __iter__(self) -> Iterator[bytes]:
                for piece in inner:  # type: ignore[union-attr]
                    kept.extend(piece)
                    yield piece

            def close(self) -> None:
                inner.close()  # type: ignore[union-attr]

        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            stream=Kept(),
            extensions=response.extensions,
        )

    def close(self) -> None:
        self.inner.close()


def client(base: str, tee: Tee | None = None) -> Any:
    http = httpx2.Client(transport=tee) if tee is not None else None
    return openai.OpenAI(base_url=base, api_key="sk-none", max_retries=0, http_client=http)


def sdk_calls(response: Any) -> list[tuple[str, str, str]]:
    return [(o.call_id, o.name, o.arguments) for o in response.output if o.type == "function_call"]


def same_answer(response: Any, ours: Any) -> None:
    """What openai-python reports of a response is what our decoder reports."""
    assert response.output_text == ours.text
    assert sdk_calls(response) == [(c.id, c.name, c.arguments) for c in ours.tool_calls]
    assert response.status == ours.finish_raw == "completed"
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (
        ours.usage.prompt_tokens,
        ours.usage.completion_tokens,
        ours.usage.total_tokens,
    )
    assert usage.input_tokens_details.cached_tokens == ours.usage.cached_tokens


@pytest.mark.parametrize("name", ["stream", "tool-call"])
def test_the_client_streaming_reports_what_we_decode(llama: str, name: str) -> None:
    request = cases.RESPONSES_STREAMS[name]
    tee = Tee()
    text: list[str] = []
    final = None
    with client(llama, tee) as c:
        for event in c.responses.create(**kwargs(request), stream=True):
            if event.type == "response.output_text.delta":
                text.append(event.delta)
            elif event.type == "response.completed":
                final = event.response
    d = ResponsesStreamDecoder(declared_tools=request.tool_names or None)
    run(d, [bytes(tee.bodies[-1])])
    assert final is not None
    assert "".join(text) == d.result.text
    same_answer(final, d.result)
    assert d.result.complete


@pytest.mark.parametrize("name", ["whole", "whole-tool-call"])
def test_a_whole_answer_reads_as_the_client_reads_it(llama: str, name: str) -> None:
    request = cases.RESPONSES_WHOLES[name]
    tee = Tee()
    with client(llama, tee) as c:
        response = c.responses.create(**kwargs(request), stream=False)
    events, ours = decode_response(bytes(tee.bodies[-1]), declared_tools=request.tool_names)
    same_answer(response, ours)
    assert ours.complete
    assert isinstance(events[-1], StreamEnded)


class Replay(BaseHTTPRequestHandler):
    answer: bytes = b""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(Replay.answer)))
        self.end_headers()
        self.wfile.write(Replay.answer)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def replay() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Replay)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.parametrize("name", ["stream", "tool-call"])
def test_the_stream_helper_needs_what_llamacpp_leaves_out_and_our_encoder_writes(
    llama: str, replay: str, name: str
) -> None:
    """openai-python's ``responses.stream`` finds a text part by ``content_index``, which
    llama.cpp's events do not carry: on llama.cpp's own text stream it fails (a function call,
    found by an ``output_index`` that is missing alike, works by chance). The same answer,
    decoded by us and written by our encoder, is read by it as we read it."""
    request = cases.RESPONSES_STREAMS[name]
    tee = Tee()
    with client(llama, tee) as c:
        if name == "stream":
            with (
                pytest.raises(TypeError, match="list indices"),
                c.responses.stream(**kwargs(request)) as events,
            ):
                for _ in events:
                    pass
            body = fetch(llama, request)[2]  # the client stopped reading: the answer, again
        else:
            with c.responses.stream(**kwargs(request)) as events:
                theirs = events.get_final_response()
            body = bytes(tee.bodies[-1])
    d = ResponsesStreamDecoder(declared_tools=request.tool_names or None)
    events_in = run(d, [body])
    if name != "stream":
        same_answer(theirs, d.result)
    encoder = ResponsesStreamEncoder(model=cases.MODEL, request=request)
    Replay.answer = b"".join(encoder.encode(e) for e in events_in)
    with client(replay) as c, c.responses.stream(**kwargs(request)) as events:
        final = events.get_final_response()
    ours = d.result
    assert final.output_text == ours.text
    calls = [(o.call_id, o.name, o.arguments) for o in final.output if o.type == "function_call"]
    assert calls == [(c.id, c.name, c.arguments) for c in ours.tool_calls]
    assert final.usage.total_tokens == ours.usage.total_tokens
    assert final.max_output_tokens == request.max_output_tokens  # the request, repeated
