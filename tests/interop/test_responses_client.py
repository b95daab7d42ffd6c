"""Interop with the real openai package's Responses API, over loopback.

A small HTTP server on 127.0.0.1 records what the client sends and answers with the bytes of
our `ResponsesStreamEncoder`, made from our fixtures of every dialect (through their decoders,
then our encoder). What openai-python reports, through ``responses.create(stream=True)``,
``responses.stream(...)`` and a non-streamed ``create`` (our encoder's ``response()``), must be
what our decoders report: the text, the function calls and their arguments, the status, the
usage. The body the client sends for a request must be ours for the same request.
"""

from __future__ import annotations

import base64
import json
import threading
import typing
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from svir_proto import Completion, FinishReason
from svir_proto.llmstream import LLMStreamDecoder
from svir_proto.openai import ChatStreamDecoder, Endpoint, ImagePart
from svir_proto.responses import (
    FunctionCall,
    FunctionCallOutput,
    FunctionChoice,
    FunctionTool,
    InputImage,
    InputMessage,
    InputText,
    ReasoningConfig,
    ReasoningItem,
    ResponsesRequest,
    ResponsesStreamDecoder,
    ResponsesStreamEncoder,
    responses_target,
)
from tests.helpers import CONFORMANCE, run

openai = pytest.importorskip("openai")

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(200))


class Server(BaseHTTPRequestHandler):
    seen: typing.ClassVar[list[tuple[str, dict[str, str], bytes]]] = []
    answer: typing.ClassVar[bytes] = b""
    whole: typing.ClassVar[bytes] = b""  # the answer to a request that asks for no stream

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Server.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        streamed = json.loads(body).get("stream") is True
        out = Server.answer if streamed else Server.whole
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream" if streamed else "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Server)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


def sources() -> list[Path]:
    out = sorted((CONFORMANCE / "responses").glob("*.sse"))
    out += sorted((CONFORMANCE / "llamacpp").glob("*.sse"))
    out += sorted((CONFORMANCE / "llmstream").glob("*.sse"))
    out += [
        CONFORMANCE / "openai" / name
        for name in (
            "wire-3.3-tool-calls.sse",
            "openai-refusal.sse",
            "vllm-reasoning-and-content.sse",
            "lmstudio-reasoning-tools.sse",
            "vllm-error-chunk.sse",
            "azure-default.sse",
        )
    ]
    return out


def encoded(path: Path) -> tuple[bytes, bytes, Completion]:
    """The fixture through its own decoder, then our encoder: the stream, the non-streamed
    response, and what our Responses decoder reads in the stream."""
    meta = json.loads(path.with_suffix(".json").read_text("utf-8"))
    decoder: Any
    if path.parent.name == "responses":
        decoder = ResponsesStreamDecoder(**meta["options"])
    elif path.parent.name == "llmstream":
        decoder = LLMStreamDecoder(**meta["options"])
    else:
        decoder = ChatStreamDecoder(**meta["options"])
    events = run(decoder, [path.read_bytes()])
    encoder = ResponsesStreamEncoder(model="m", response_id="resp_loop", created=1764547200)
    stream = b"".join(encoder.encode(e) for e in events)
    ours = ResponsesStreamDecoder()
    run(ours, [stream])
    return stream, json.dumps(encoder.response()).encode(), ours.result


def status_of(r: Completion) -> str | None:
    if r.error is not None:
        return "failed"
    if not r.done:
        return None  # a cut: no final event
    if r.finish_reason in (FinishReason.LENGTH, FinishReason.CONTENT_FILTER) or (
        r.finish_raw == "incomplete"
    ):
        return "incomplete"
    return "completed"


def usage_of(r: Completion) -> tuple[int, int, int, int, int] | None:
    u = r.usage
    if u is None:
        return None
    return (
        u.prompt_tokens or 0,
        u.completion_tokens or 0,
        u.total_tokens or 0,
        u.cached_tokens or 0,
        u.reasoning_tokens or 0,
    )


def sdk_usage(usage: Any) -> tuple[int, int, int, int, int] | None:
    if usage is None:
        return None
    return (
        usage.input_tokens,
        usage.output_tokens,
        usage.total_tokens,
        usage.input_tokens_details.cached_tokens,
        usage.output_tokens_details.reasoning_tokens,
    )


def calls_of(r: Completion) -> list[tuple[str, str, str]]:
    return [(c.id, c.name, c.arguments) for c in r.tool_calls]


def sdk_calls(response: Any) -> list[tuple[str, str, str]]:
    return [(o.call_id, o.name, o.arguments) for o in response.output if o.type == "function_call"]


@pytest.mark.parametrize("path", sources(), ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_the_client_reads_our_stream_as_we_do(server: str, path: Path) -> None:
    stream, whole, ours = encoded(path)
    Server.answer, Server.whole = stream, whole
    client = openai.OpenAI(base_url=server, api_key="sk-test", max_retries=0)
    text: list[str] = []
    final = None
    # our error events are the reference's flat ones, which the client yields: no APIError
    for event in client.responses.create(model="m", input="hi", stream=True):
        if event.type == "response.output_text.delta":
            text.append(event.delta)
        elif event.type in ("response.completed", "response.incomplete", "response.failed"):
            final = event.response
    assert "".join(text) == ours.text
    if final is None:
        assert status_of(ours) is None
        return
    assert final.status == status_of(ours)
    assert final.output_text == ours.text
    assert sdk_calls(final) == calls_of(ours)
    assert sdk_usage(final.usage) == usage_of(ours)
    if ours.error is not None:
        assert final.error.message == ours.error.message


@pytest.mark.parametrize("path", sources(), ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_the_stream_helper_and_a_whole_response(server: str, path: Path) -> None:
    stream, whole, ours = encoded(path)
    Server.answer, Server.whole = stream, whole
    client = openai.OpenAI(base_url=server, api_key="sk-test", max_retries=0)
    if ours.done and ours.error is None:
        with client.responses.stream(model="m", input="hi") as events:
            deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
            if status_of(ours) == "completed":
                final = events.get_final_response()
                assert final.output_text == ours.text
                assert sdk_calls(final) == calls_of(ours)
                assert sdk_usage(final.usage) == usage_of(ours)
        assert "".join(deltas) == ours.text
    if ours.done:  # not streamed: the encoder's response(), once the stream has ended
        response = client.responses.create(model="m", input="hi")
        assert response.output_text == ours.text
        assert sdk_calls(response) == calls_of(ours)
        assert response.status == status_of(ours)
        assert sdk_usage(response.usage) == usage_of(ours)


def test_our_body_is_what_the_client_sends(server: str) -> None:
    Server.answer, Server.whole = encoded(CONFORMANCE / "responses" / "openai-text.sse")[:2]
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    client = openai.OpenAI(base_url=server, api_key="sk-test", max_retries=0)
    image = "data:image/png;base64," + base64.b64encode(PNG).decode()
    for _ in client.responses.create(
        model="gpt-5-mini",
        instructions="Be brief.",
        input=[
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": 'Where? "ü"\n'},
                    {"type": "input_image", "image_url": image, "detail": "low"},
                ],
            },
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "s"}],
                "encrypted_content": "enc",
            },
            {"type": "function_call", "call_id": "c1", "name": "locate", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "Vienna"},
        ],
        tools=[
            {
                "type": "function",
                "name": "locate",
                "description": "Find.",
                "parameters": schema,
                "strict": True,
            }
        ],
        tool_choice={"type": "function", "name": "locate"},
        max_output_tokens=64,
        temperature=0.2,
        reasoning={"effort": "low", "summary": "auto"},
        parallel_tool_calls=False,
        store=False,
        include=["reasoning.encrypted_content"],
        metadata={"k": "v"},
        stream=True,
    ):
        pass
    path, headers, theirs = Server.seen[-1]
    ours = ResponsesRequest(
        model="gpt-5-mini",
        instructions="Be brief.",
        input=[
            InputMessage(
                role="user",
                content=[
                    InputText(text='Where? "ü"\n'),
                    InputImage(image=ImagePart.from_bytes(PNG), detail="low"),
                ],
            ),
            ReasoningItem(id="rs_1", summary=["s"], encrypted_content="enc"),
            FunctionCall(call_id="c1", name="locate", arguments="{}"),
            FunctionCallOutput(call_id="c1", output="Vienna"),
        ],
        tools=[FunctionTool(name="locate", description="Find.", parameters=schema, strict=True)],
        tool_choice=FunctionChoice("locate"),
        max_output_tokens=64,
        temperature=0.2,
        reasoning=ReasoningConfig(effort="low", summary="auto"),
        parallel_tool_calls=False,
        store=False,
        include=["reasoning.encrypted_content"],
        metadata={"k": "v"},
    )
    endpoint = Endpoint.parse(server, api_key="sk-test")
    assert path == responses_target(endpoint)
    mine = json.loads(ours.body().read())
    theirs_doc = json.loads(theirs)
    # the client sends an "easy" message without its type; ours names it: the same item
    theirs_doc["input"][0] = {"type": "message", **theirs_doc["input"][0]}
    assert mine == theirs_doc
    assert ResponsesRequest.parse(theirs).body().read() != b""
    assert headers["authorization"] == "Bearer sk-test"
