"""MessagesRequest: built and checked, encoded with an exact length, parsed with paths."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import pytest

from svir_proto.anthropic import (
    API_VERSION,
    PATH,
    ImageBlock,
    Message,
    MessagesRequest,
    OtherBlock,
    RedactedThinkingBlock,
    TextBlock,
    Thinking,
    ThinkingBlock,
    Tool,
    ToolChoice,
    ToolResultBlock,
    ToolUseBlock,
    headers,
)
from svir_proto.llmstream import RequestError
from tests.live.cases import PNG

B64 = base64.b64encode(PNG).decode()
SCHEMA = {"type": "object", "properties": {}}
FULL: dict[str, Any] = {
    "model": "claude",
    "max_tokens": 100,
    "messages": [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look", "cache_control": {"type": "ephemeral"}},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": B64},
                },
                {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}},
                {"type": "image", "source": {"type": "file", "file_id": "file_1"}},
                {
                    "type": "document",
                    "source": {"type": "text", "media_type": "text/plain", "data": "d"},
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hm", "signature": "sig"},
                {"type": "redacted_thinking", "data": "enc"},
                {"type": "text", "text": "calling"},
                {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [
                        {"type": "text", "text": "r"},
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": B64},
                        },
                    ],
                    "is_error": False,
                },
                {"type": "tool_result", "tool_use_id": "t1", "content": "plain"},
                {"type": "tool_result", "tool_use_id": "t1"},
            ],
        },
        {"role": "assistant", "content": "ok"},
    ],
    "system": [{"type": "text", "text": "be brief"}],
    "tools": [
        {
            "name": "f",
            "description": "F",
            "input_schema": SCHEMA,
            "cache_control": {"type": "ephemeral"},
        },
        {"name": "web_search", "type": "web_search_20250305", "max_uses": 2},
    ],
    "tool_choice": {"type": "tool", "name": "f", "disable_parallel_tool_use": True},
    "stop_sequences": ["END"],
    "temperature": 0.5,
    "top_p": 0.9,
    "top_k": 3,
    "metadata": {"user_id": "u"},
    "thinking": {"type": "enabled", "budget_tokens": 2048},
    "stream": True,
    "service_tier": "auto",
}


def test_a_full_request_parses_and_encodes_back_exactly() -> None:
    request = MessagesRequest.parse(json.dumps(FULL).encode())
    body = request.body()
    raw = body.read()
    assert len(raw) == body.content_length
    assert json.loads(raw) == FULL
    assert body.content_type == "application/json"
    assert request.extra == {"service_tier": "auto"}
    assert request.tool_names == {"f", "web_search"}
    assert isinstance(request.messages[0].content[4], OtherBlock)  # type: ignore[index]
    assert MessagesRequest.parse(raw) == request


def test_a_plain_request() -> None:
    doc = {"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]}
    request = MessagesRequest.parse(json.dumps(doc))
    assert request.stream is False  # not given: the API's default, kept
    assert json.loads(request.body().read()) == {**doc, "stream": False}
    doc["system"] = "s"
    doc["thinking"] = {"type": "disabled"}
    assert MessagesRequest.parse(json.dumps(doc)).to_document()["thinking"] == {"type": "disabled"}


def mutate(path: list[Any], value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(FULL)
    target: Any = doc
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return doc


BAD = [
    ([], None, "$"),
    (["model"], "", "$.model"),
    (["max_tokens"], 0, "$.max_tokens"),
    (["messages"], [], "$.messages"),
    (["messages", 0], "hi", "$.messages[0]"),
    (["messages", 0, "role"], "system", "$.messages[0].role"),
    (["messages", 0, "content"], 1, "$.messages[0].content"),
    (["messages", 0, "content"], [], "$.messages[0].content"),
    (["messages", 0, "content", 0], "text", "$.messages[0].content[0]"),
    (["messages", 0, "content", 0, "type"], "", "$.messages[0].content[0].type"),
    (["messages", 0, "content", 0, "text"], 1, "$.messages[0].content[0].text"),
    (["messages", 0, "content", 1, "source"], None, "$.messages[0].content[1].source"),
    (
        ["messages", 0, "content", 1, "source", "type"],
        "ftp",
        "$.messages[0].content[1].source.type",
    ),
    (
        ["messages", 0, "content", 1, "source", "media_type"],
        "image/bmp",
        "$.messages[0].content[1].source.media_type",
    ),
    (  # not hashable: no TypeError (attack round 32, F1)
        ["messages", 0, "content", 1, "source", "media_type"],
        ["image/png"],
        "$.messages[0].content[1].source.media_type",
    ),
    (["messages", 0, "content", 1, "source", "data"], None, "$.messages[0].content[1].source.data"),
    (
        ["messages", 0, "content", 1, "source", "data"],
        "***",
        "$.messages[0].content[1].source.data",
    ),
    (["messages", 0, "content", 2, "source", "url"], "", "$.messages[0].content[2].source.url"),
    (
        ["messages", 0, "content", 3, "source", "file_id"],
        1,
        "$.messages[0].content[3].source.file_id",
    ),
    (["messages", 0, "content", 0, "type"], "tool_use", "$.messages[0].content[0].id"),
    (["messages", 1, "content", 3, "input"], "{}", "$.messages[1].content[3].input"),
    (["messages", 1, "content", 3, "id"], "", "$.messages[1].content[3].id"),
    (["messages", 1, "content", 0, "signature"], None, "$.messages[1].content[0].signature"),
    (["messages", 1, "content", 1, "data"], 1, "$.messages[1].content[1].data"),
    (["messages", 1, "content", 2, "type"], "tool_result", "$.messages[1].content[2].tool_use_id"),
    (["messages", 2, "content", 0, "tool_use_id"], "", "$.messages[2].content[0].tool_use_id"),
    (["messages", 2, "content", 0, "content"], 1, "$.messages[2].content[0].content"),
    (
        ["messages", 2, "content", 0, "content", 0, "type"],
        "tool_use",
        "$.messages[2].content[0].content[0].type",
    ),
    (["messages", 2, "content", 0, "is_error"], "no", "$.messages[2].content[0].is_error"),
    (["messages", 1, "content", 0, "type"], "image", "$.messages[1].content[0].source"),
    (
        ["messages", 1, "content", 3],
        {"type": "tool_result", "tool_use_id": "x"},
        "$.messages[1].content[3].type",
    ),
    (
        ["messages", 2, "content", 1],
        {"type": "thinking", "thinking": "", "signature": ""},
        "$.messages[2].content[1].type",
    ),
    (["system"], 1, "$.system"),
    (["system", 0], {"type": "image"}, "$.system[0]"),
    (["tools"], {}, "$.tools"),
    (["tools", 0], 1, "$.tools[0]"),
    (["tools", 1, "name"], "f", "$.tools[1].name"),
    (["tools", 0, "description"], 1, "$.tools[0].description"),
    (["tools", 0, "input_schema"], KeyError, "$.tools[0].input_schema"),
    (["tools", 1, "type"], 1, "$.tools[1].type"),
    (["tool_choice"], "auto", "$.tool_choice"),
    (["tool_choice", "type"], "required", "$.tool_choice.type"),
    (["tool_choice", "name"], "g", "$.tool_choice.name"),
    (["tool_choice", "disable_parallel_tool_use"], 1, "$.tool_choice.disable_parallel_tool_use"),
    (["stop_sequences"], "END", "$.stop_sequences"),
    (["temperature"], 1.5, "$.temperature"),
    (["top_p"], True, "$.top_p"),
    (["top_k"], -1, "$.top_k"),
    (["metadata"], [], "$.metadata"),
    (["metadata", "user_id"], 1, "$.metadata.user_id"),
    (["thinking"], 1, "$.thinking"),
    (["thinking", "type"], "on", "$.thinking.type"),
    (["thinking", "budget_tokens"], 100, "$.thinking.budget_tokens"),
    (["stream"], "yes", "$.stream"),
]


@pytest.mark.parametrize(("where", "value", "path"), BAD, ids=[b[2] + repr(b[1])[:20] for b in BAD])
def test_what_the_api_does_not_allow_is_refused_with_its_path(
    where: list[Any], value: Any, path: str
) -> None:
    doc: Any = value if not where else mutate(where, value)
    with pytest.raises(RequestError) as caught:
        MessagesRequest.parse(json.dumps(doc))
    assert caught.value.path == path


def test_not_json() -> None:
    with pytest.raises(RequestError) as caught:
        MessagesRequest.parse(b"{")
    assert caught.value.path == "$"


def test_construction_checks_values_and_types(tmp_path: Path) -> None:
    user = Message(role="user", content="hi")
    with pytest.raises(ValueError, match=r"^max_tokens"):
        MessagesRequest(model="m", max_tokens=0, messages=[user])
    with pytest.raises(ValueError, match=r"messages\[0\].content\[0\].source.media_type"):
        MessagesRequest(
            model="m", max_tokens=1, messages=[Message(role="user", content=[ImageBlock(data=B64)])]
        )
    with pytest.raises(TypeError, match=r"messages\[0\] must be a Message"):
        MessagesRequest(model="m", max_tokens=1, messages=["hi"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"messages\[0\].content\[0\] must be a block"):
        MessagesRequest(model="m", max_tokens=1, messages=[Message(role="user", content=["x"])])  # type: ignore[list-item]
    bad_result = ToolResultBlock(
        tool_use_id="t", content=[ToolUseBlock(id="a", name="b", input={})]
    )  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"content\[0\].content\[0\]"):
        MessagesRequest(
            model="m", max_tokens=1, messages=[Message(role="user", content=[bad_result])]
        )
    with pytest.raises(TypeError, match=r"system\[0\]"):
        MessagesRequest(model="m", max_tokens=1, messages=[user], system=["s"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"tools\[0\]"):
        MessagesRequest(model="m", max_tokens=1, messages=[user], tools=["f"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="tool_choice"):
        MessagesRequest(model="m", max_tokens=1, messages=[user], tool_choice="auto")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="exactly one"):
        ImageBlock(media_type="image/png")
    with pytest.raises(TypeError, match="ImagePart"):
        ImageBlock(image=b"x")  # type: ignore[arg-type]


def test_images_from_disk_are_streamed_with_an_exact_length(tmp_path: Path) -> None:
    path = tmp_path / "pixel.png"
    path.write_bytes(PNG * 1)
    request = MessagesRequest(
        model="m",
        max_tokens=5,
        messages=[
            Message(role="user", content=[TextBlock(text="what?"), ImageBlock.from_path(path)]),
            Message(
                role="assistant",
                content=[
                    ThinkingBlock(thinking="t", signature="s"),
                    RedactedThinkingBlock(data="r"),
                ],
            ),
            Message(
                role="user",
                content=[
                    ToolResultBlock(
                        tool_use_id="x", content=[ImageBlock.from_bytes(PNG)], is_error=True
                    )
                ],
            ),
        ],
        system="sys",
        tools=[Tool(name="f", input_schema=SCHEMA)],
        tool_choice=ToolChoice(type="auto"),
        thinking=Thinking(type="enabled", budget_tokens=1024),
        top_k=1,
        extra={"container": "c"},
    )
    body = request.body(piece_size=16)
    pieces = list(body)
    assert max(len(p) for p in pieces) <= 16 + 8
    raw = b"".join(pieces)
    assert len(raw) == body.content_length
    doc = json.loads(raw)
    assert doc["messages"][0]["content"][1]["source"] == {
        "type": "base64",
        "media_type": "image/png",
        "data": B64,
    }
    assert doc["messages"][2]["content"][0]["content"][0]["source"]["data"] == B64
    assert doc["container"] == "c"
    assert MessagesRequest.parse(raw).messages[0].content[1].data == B64  # type: ignore[union-attr,index]


def test_headers() -> None:
    assert PATH == "/v1/messages"
    assert headers("k") == [
        ("x-api-key", "k"),
        ("anthropic-version", API_VERSION),
        ("content-type", "application/json"),
        ("accept", "text/event-stream"),
    ]
    assert headers("k", beta="b1,b2", stream=False, bearer=True) == [
        ("authorization", "Bearer k"),
        ("anthropic-version", "2023-06-01"),
        ("content-type", "application/json"),
        ("anthropic-beta", "b1,b2"),
    ]
    with pytest.raises(ValueError, match="line break"):
        headers("k\r\nx: y")
    request = MessagesRequest(
        model="m", max_tokens=1, messages=[Message(role="user", content="x")], stream=False
    )
    assert ("accept", "text/event-stream") not in request.headers("k")


def test_crash_stream_null() -> None:
    """fuzz/corpus/anthropic_request/crash-stream-null: ``"stream": null`` was kept as None,
    which the hub gave back as false. Null is the API's default, false, from the start."""
    doc = {"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "i"}]}
    assert MessagesRequest.parse(json.dumps({**doc, "stream": None})).stream is False
    with pytest.raises(TypeError, match="stream"):
        MessagesRequest(
            model="m", max_tokens=1, messages=[Message(role="user", content="i")], stream=None
        )  # type: ignore[arg-type]
