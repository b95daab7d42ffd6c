"""Interop with the real anthropic package, over loopback.

A small HTTP server on 127.0.0.1 records what the anthropic client sends and answers with a
stream: one that our `MessagesStreamEncoder` wrote from our OpenAI, LLM-Stream and Messages
fixtures (through their decoders). What the SDK reports (final text, tool_use blocks and their
input, stop_reason, usage) must be what our decoders report; and our encoding of a request must
be the JSON the SDK sends, with its headers.
"""

from __future__ import annotations

import json
import threading
import typing
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from svir_proto.anthropic import (
    ImageBlock,
    Message,
    MessagesRequest,
    MessagesStreamDecoder,
    MessagesStreamEncoder,
    TextBlock,
    Thinking,
    Tool,
    ToolChoice,
    ToolResultBlock,
    ToolUseBlock,
    stop_reason_of,
)
from svir_proto.events import Completion
from svir_proto.llmstream import LLMStreamDecoder
from svir_proto.openai import ChatStreamDecoder
from tests.helpers import CONFORMANCE, run

anthropic = pytest.importorskip("anthropic")

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d4944415478da63f8ffff3f0005fe02fea7d6a4b000000000"
    "49454e44ae426082"
)


class Server(BaseHTTPRequestHandler):
    seen: typing.ClassVar[list[tuple[str, dict[str, str], bytes]]] = []
    answer: typing.ClassVar[bytes] = b""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Server.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(Server.answer)))
        self.end_headers()
        self.wfile.write(Server.answer)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Server)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def client(base: str) -> Any:
    return anthropic.Anthropic(base_url=base, api_key="sk-ant-test", max_retries=0)


def test_our_body_is_what_the_anthropic_client_sends(server: str) -> None:
    Server.seen.clear()
    Server.answer = (CONFORMANCE / "anthropic" / "anthropic-streaming-basic.sse").read_bytes()
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    with client(server).messages.stream(
        model="svir-test-model",
        max_tokens=2048,
        system=[{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is this?"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": _b64()},
                    },
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "a pixel", "signature": "sig=="},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "look",
                        "input": {"city": "Wien"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": "ok",
                        "is_error": True,
                    }
                ],
            },
        ],
        tools=[{"name": "look", "description": "Look", "input_schema": schema}],
        tool_choice={"type": "tool", "name": "look", "disable_parallel_tool_use": True},
        thinking={"type": "enabled", "budget_tokens": 1024},
        metadata={"user_id": "u-1"},
        stop_sequences=["END"],
        extra_body={"top_k": 5},  # not a keyword of this SDK's stream(), still the API's
    ) as stream:
        stream.get_final_message()
    path, headers, body = Server.seen[-1]
    assert path == "/v1/messages"
    # the SDK's 2.x releases send the key as a bearer token and their own version date; the
    # API takes x-api-key and 2023-06-01 as well (what `headers` writes by default)
    ours_auth = dict(headers_of(bearer="authorization" in headers))
    for name in ("x-api-key", "authorization"):
        assert headers.get(name) == ours_auth.get(name)
    assert headers["anthropic-version"][:2] == "20"
    sent = json.loads(body)
    ours = MessagesRequest(
        model="svir-test-model",
        max_tokens=2048,
        system=[TextBlock(text="Be brief.", extra={"cache_control": {"type": "ephemeral"}})],
        messages=[
            Message(
                role="user",
                content=[TextBlock(text="What is this?"), ImageBlock.from_bytes(PNG)],
            ),
            Message(
                role="assistant",
                content=[
                    _thinking(),
                    ToolUseBlock(id="toolu_1", name="look", input={"city": "Wien"}),
                ],
            ),
            Message(
                role="user",
                content=[ToolResultBlock(tool_use_id="toolu_1", content="ok", is_error=True)],
            ),
        ],
        tools=[Tool(name="look", description="Look", input_schema=schema)],
        tool_choice=ToolChoice(type="tool", name="look", disable_parallel_tool_use=True),
        thinking=Thinking(type="enabled", budget_tokens=1024),
        metadata={"user_id": "u-1"},
        stop_sequences=["END"],
        top_k=5,
    )
    raw = ours.body().read()
    assert json.loads(raw) == sent
    assert MessagesRequest.parse(body).to_document() == sent


def headers_of(*, bearer: bool) -> list[tuple[str, str]]:
    from svir_proto.anthropic import headers

    return headers("sk-ant-test", bearer=bearer)


def _b64() -> str:
    import base64

    return base64.b64encode(PNG).decode()


def _thinking() -> Any:
    from svir_proto.anthropic import ThinkingBlock

    return ThinkingBlock(thinking="a pixel", signature="sig==")


# -- the SDK reads what our encoder writes -------------------------------------------------------

SOURCES = (
    [(p, ChatStreamDecoder) for p in sorted((CONFORMANCE / "openai").glob("*.sse"))]
    + [(p, ChatStreamDecoder) for p in sorted((CONFORMANCE / "llamacpp").glob("*.sse"))]
    + [(p, LLMStreamDecoder) for p in sorted((CONFORMANCE / "llmstream").glob("*.sse"))]
    + [(p, MessagesStreamDecoder) for p in sorted((CONFORMANCE / "anthropic").glob("*.sse"))]
)


def _decoded(path: Path, decoder_class: Any) -> tuple[list[Any], Completion]:
    meta = json.loads(path.with_suffix(".json").read_text("utf-8"))
    decoder = decoder_class(**meta.get("options", {}))
    try:
        events = run(decoder, [path.read_bytes()])
    except Exception:  # a fixture of a stream that breaks the protocol: its events so far
        events = []
    return events, decoder.result


@pytest.mark.parametrize(("path", "decoder"), SOURCES, ids=lambda p: getattr(p, "stem", ""))
def test_the_sdk_reads_what_our_encoder_writes(server: str, path: Path, decoder: Any) -> None:
    events, result = _decoded(path, decoder)
    if not events:
        pytest.skip("a stream our decoder refuses")
    encoder = MessagesStreamEncoder(model="m")
    Server.answer = b"".join(encoder.encode(e) for e in events)
    if result.error is not None:
        with (
            pytest.raises(anthropic.APIStatusError) as caught,
            client(server).messages.stream(model="m", max_tokens=10, messages=[]) as s,
        ):
            s.get_final_message()
        assert result.error.message in str(caught.value)
        return
    with client(server).messages.stream(model="m", max_tokens=10, messages=[]) as stream:
        for _ in stream:
            pass
        message = stream.current_message_snapshot
    text = "".join(b.text for b in message.content if b.type == "text")
    if result.refusal:  # written as text, where it came among the text
        assert sorted(text) == sorted(result.text + result.refusal)
    else:
        assert text == result.text
    thinking = "".join(b.thinking for b in message.content if b.type == "thinking")
    assert thinking == result.reasoning
    if result.complete:
        calls = [(b.id, b.name, b.input) for b in message.content if b.type == "tool_use"]
        expected = [(c.id, c.name, c.parse_arguments().value) for c in result.tool_calls]
        if any("name continued" in n for n in encoder.lost):  # wire 3.3: "look", later "up"
            calls = [(i, a) for i, _, a in calls]  # type: ignore[misc]
            expected = [(i, a) for i, _, a in expected]  # type: ignore[misc]
        assert calls == expected
        refused = bool(result.refusal)  # a refusal ends its turn as one (client round 32)
        assert message.stop_reason == stop_reason_of(_finished(result), refused=refused)
    usage = result.usage
    if usage is not None and (result.complete or usage.prompt_tokens is not None):
        u = message.usage
        prompt = u.input_tokens + (u.cache_read_input_tokens or 0)
        prompt += u.cache_creation_input_tokens or 0
        assert prompt == (usage.prompt_tokens or 0)
        assert u.output_tokens == (usage.completion_tokens or 0)


def _finished(result: Completion) -> Any:
    from svir_proto.answer import finished_of

    assert result.finish_reason is not None
    assert result.finish_raw is not None
    return finished_of(result, verdicts=True)  # (blocked after it finished: fidelity 43 F01)
