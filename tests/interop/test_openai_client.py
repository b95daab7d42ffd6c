"""Interop with the real openai package, over loopback.

A small HTTP server on 127.0.0.1 records what the openai client sends and answers with a
recorded stream. Our encoding of the same request must be the same JSON, with the same
Authorization, and our decoder must read the answer as the openai client does.
"""

from __future__ import annotations

import base64
import json
import threading
import typing
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from svir_proto.openai import (
    ChatRequest,
    ChatStreamDecoder,
    Endpoint,
    ImagePart,
    JSONSchemaFormat,
    NamedToolChoice,
    SystemMessage,
    TextPart,
    Tool,
    UserMessage,
)
from tests.helpers import CONFORMANCE

openai = pytest.importorskip("openai")

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(200))
ANSWER = (CONFORMANCE / "openai" / "vllm-reasoning-and-content.sse").read_bytes()


class Recorder(BaseHTTPRequestHandler):
    seen: typing.ClassVar[list[tuple[str, dict[str, str], bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Recorder.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(ANSWER)))
        self.end_headers()
        self.wfile.write(ANSWER)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    Recorder.seen.clear()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_our_body_is_what_the_openai_client_sends(server: str) -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    }
    client = openai.OpenAI(base_url=server, api_key="sk-test", max_retries=0)
    stream = client.chat.completions.create(
        model="qwen3-8b",
        messages=[
            {"role": "system", "content": "Be brief."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": 'Where is this? "quotes" \u00fc\n\ttab'},
                    {
                        "type": "image_url",
                        "image_url": {
                            "url": "data:image/png;base64," + base64.b64encode(PNG).decode()
                        },
                    },
                ],
            },
        ],
        tools=[
            {
                "type": "function",
                "function": {
                    "name": "locate",
                    "description": "Find a place.",
                    "parameters": schema,
                },
            }
        ],
        tool_choice={"type": "function", "function": {"name": "locate"}},
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "place", "schema": schema, "strict": True},
        },
        max_tokens=64,
        temperature=0.2,
        stream=True,
        stream_options={"include_usage": True},
        reasoning_effort="low",
    )
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    (path, headers, theirs) = Recorder.seen[0]

    ours = ChatRequest(
        model="qwen3-8b",
        messages=[
            SystemMessage(content="Be brief."),
            UserMessage(
                content=[
                    TextPart(text='Where is this? "quotes" \u00fc\n\ttab'),
                    ImagePart.from_bytes(PNG),
                ]
            ),
        ],
        tools=[Tool(name="locate", description="Find a place.", parameters=schema)],
        tool_choice=NamedToolChoice("locate"),
        response_format=JSONSchemaFormat(name="place", schema=schema, strict=True),
        max_tokens=64,
        temperature=0.2,
        include_usage=True,
        reasoning_effort="low",
    )
    body = ours.body()
    endpoint = Endpoint.parse(server, api_key="sk-test")
    assert path == endpoint.chat_completions_path
    assert json.loads(body.read()) == json.loads(theirs)
    our_headers = dict(endpoint.headers(content_length=body.content_length))
    assert headers["authorization"] == our_headers["Authorization"]
    assert headers["content-type"] == our_headers["Content-Type"]

    decoder = ChatStreamDecoder()
    decoder.feed(ANSWER)
    decoder.close()
    assert decoder.result.text == text == "Answer."


def test_our_transport_sends_what_the_openai_client_sends(server: str) -> None:
    """The same request, once from openai-python and once from our blocking transport, to the
    same recording server: the JSON is equal field for field, and so are the headers that
    matter; ours adds an exact Content-Length and no chunking."""
    from svir_proto.transports.blocking import stream_chat

    client = openai.OpenAI(base_url=server, api_key="sk-test", max_retries=0)
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": 'Where is "x"? \u00fc\n'},
    ]
    for _ in client.chat.completions.create(
        model="m",
        messages=messages,
        stream=True,
        max_tokens=9,
        temperature=0,  # type: ignore[arg-type]
    ):
        pass
    ours = ChatRequest(
        model="m",
        messages=[
            SystemMessage(content="Be brief."),
            UserMessage(content='Where is "x"? \u00fc\n'),
        ],
        max_tokens=9,
        temperature=0,
    )
    with stream_chat(Endpoint.parse(server, api_key="sk-test"), ours) as stream:
        events = list(stream)
    assert stream.result.text == "Answer."
    assert events
    (path_a, theirs_headers, theirs), (path_b, our_headers, our_body) = Recorder.seen[-2:]
    assert path_a == path_b == "/v1/chat/completions"
    assert json.loads(our_body) == json.loads(theirs)
    for name in ("authorization", "content-type", "host"):
        assert our_headers[name] == theirs_headers[name], name
    assert int(our_headers["content-length"]) == len(our_body)
    assert "transfer-encoding" not in our_headers
    assert our_headers["accept"] == "text/event-stream"
