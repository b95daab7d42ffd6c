"""Against the real thing: llama.cpp's own ``POST /v1/responses``, read by our decoder and by
openai-python's Responses client (``responses.create(stream=True)``, ``responses.stream`` and
a non-streamed ``create``); what the client reports must be what our decoder reports. The
answers are also recorded (tests/live/record_responses.py) and replayed offline."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from svir_proto import FailureKind, FinishReason, StreamStarted, TextDelta, ToolCallDelta
from svir_proto.openai import body_outcome
from svir_proto.responses import (
    ResponsesRequest,
    ResponsesStreamDecoder,
    ResponsesStreamEncoder,
)
from tests.helpers import run
from tests.live import cases
from tests.live.record_responses import fetch

openai = pytest.importorskip("openai")


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


def client(base: str) -> Any:
    return openai.OpenAI(base_url=base, api_key="sk-none", max_retries=0)


@pytest.mark.parametrize("name", ["stream", "tool-call"])
def test_the_client_streaming_reports_what_we_decode(llama: str, name: str) -> None:
    request = cases.RESPONSES_STREAMS[name]
    _, d = decoded(llama, request)
    ours = d.result
    text: list[str] = []
    final = None
    for event in client(llama).responses.create(**kwargs(request), stream=True):
        if event.type == "response.output_text.delta":
            text.append(event.delta)
        elif event.type == "response.completed":
            final = event.response
    assert final is not None
    assert "".join(text) == final.output_text == ours.text
    assert final.status == ours.finish_raw == "completed"
    calls = [(o.call_id, o.name, o.arguments) for o in final.output if o.type == "function_call"]
    assert [(c.name, c.arguments) for c in ours.tool_calls] == [(n, a) for _, n, a in calls]
    assert final.usage.input_tokens == ours.usage.prompt_tokens
    assert final.usage.output_tokens == ours.usage.completion_tokens


def test_a_whole_answer_is_the_streamed_one(llama: str) -> None:
    request = cases.RESPONSES_STREAM
    _, d = decoded(llama, request)
    response = client(llama).responses.create(**kwargs(request))
    assert response.status == "completed"
    assert response.output_text == d.result.text  # temperature 0: the same words
    assert response.usage.output_tokens == d.result.usage.completion_tokens


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
    if name == "stream":
        with (
            pytest.raises(TypeError, match="list indices"),
            client(llama).responses.stream(**kwargs(request)) as events,
        ):
            for _ in events:
                pass
    events_in, d = decoded(llama, request)
    encoder = ResponsesStreamEncoder(model=cases.MODEL, request=request)
    Replay.answer = b"".join(encoder.encode(e) for e in events_in)
    with client(replay).responses.stream(**kwargs(request)) as events:
        final = events.get_final_response()
    ours = d.result
    assert final.output_text == ours.text
    calls = [(o.call_id, o.name, o.arguments) for o in final.output if o.type == "function_call"]
    assert calls == [(c.id, c.name, c.arguments) for c in ours.tool_calls]
    assert final.usage.total_tokens == ours.usage.total_tokens
    assert final.max_output_tokens == request.max_output_tokens  # the request, repeated
