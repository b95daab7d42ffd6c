"""ChatRequest: checked at construction, laid out as wire reference 2.2 says, exact length."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from svir_proto import Completion, ToolCall
from svir_proto.openai import (
    AZURE,
    LM_STUDIO,
    OPENAI,
    STRICT,
    AssistantMessage,
    ChatRequest,
    ImagePart,
    JSONObjectFormat,
    JSONSchemaFormat,
    NamedToolChoice,
    SystemMessage,
    TextFile,
    TextFormat,
    TextPart,
    Tool,
    ToolMessage,
    UserMessage,
)

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 100


def body_of(request: ChatRequest) -> dict[str, Any]:
    body = request.body(piece_size=300)
    raw = body.read()
    assert len(raw) == body.content_length
    doc: dict[str, Any] = json.loads(raw)
    return doc


def user(*parts: Any) -> ChatRequest:
    return ChatRequest(
        model="m",
        messages=[
            UserMessage(
                content=list(parts)
                if len(parts) != 1 or not isinstance(parts[0], str)
                else parts[0]
            )
        ],
    )


def test_text_only_is_a_plain_string() -> None:
    doc = body_of(user("hello"))
    assert doc == {"model": "m", "messages": [{"role": "user", "content": "hello"}], "stream": True}


def test_images_use_the_array_form_text_first(tmp_path: Path) -> None:
    f = tmp_path / "photo.png"
    f.write_bytes(PNG)
    doc = body_of(
        user(
            ImagePart.from_path(f),
            TextPart(text="what is"),
            TextPart(text="this?"),
            ImagePart.from_bytes(JPEG),
        )
    )
    content = doc["messages"][0]["content"]
    assert content[0] == {"type": "text", "text": "what is\nthis?"}
    assert (
        content[1]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()
    )
    assert content[2]["image_url"]["url"].startswith("data:image/jpeg;base64,")
    assert len(content) == 3


def test_no_empty_text_part() -> None:
    content = body_of(user(ImagePart.from_bytes(PNG), TextPart(text="")))["messages"][0]["content"]
    assert [p["type"] for p in content] == ["image_url"]


def test_text_files_are_wrapped_inside_the_text(tmp_path: Path) -> None:
    f = tmp_path / "notes.md"
    f.write_text('line "one"\n\ttwo ü', encoding="utf-8")
    doc = body_of(
        user(
            TextPart(text="Summarise:"),
            TextFile.from_path(f),
            TextFile.from_text("x", name='we"ird'),
        )
    )
    assert doc["messages"][0]["content"] == (
        'Summarise:\n<file name="notes.md">\nline "one"\n\ttwo ü\n</file>\n'
        '<file name="we&quot;ird">\nx\n</file>'
    )


def test_text_file_not_utf8_is_rejected_at_construction(tmp_path: Path) -> None:
    f = tmp_path / "latin1.txt"
    f.write_bytes(b"caf\xe9")
    with pytest.raises(ValueError, match="not UTF-8"):
        TextFile.from_path(f)


def test_image_media_type_is_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a PNG"):
        ImagePart.from_bytes(b"GIF8 nope")
    with pytest.raises(ValueError, match="declared 'image/png'"):
        ImagePart.from_bytes(JPEG, "image/png")
    with pytest.raises(ValueError, match="not one of"):
        ImagePart.from_bytes(PNG, "image/tiff")
    f = tmp_path / "lies.jpg"
    f.write_bytes(PNG)
    with pytest.raises(ValueError, match="name says 'image/jpeg'"):
        ImagePart.from_path(f)
    assert ImagePart.from_bytes(b"RIFF\x00\x00\x00\x00WEBPVP8 ").media_type == "image/webp"


def test_assistant_turn_with_tool_calls_reasoning_and_results() -> None:
    done = Completion(
        text="",
        reasoning="think",
        reasoning_carrier="reasoning_content",
        tool_calls=(ToolCall(index=0, id="c1", name="f", arguments='{"a":1}'),),
        complete=True,
    )
    req = ChatRequest(
        model="m",
        messages=[
            user("q").messages[0],
            AssistantMessage.from_completion(done),
            ToolMessage(tool_call_id="c1", content="42"),
        ],
        tools=[Tool(name="f")],
    )
    msgs = body_of(req)["messages"]
    assert msgs[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}
        ],
        "reasoning_content": "think",
    }
    assert msgs[2] == {"role": "tool", "tool_call_id": "c1", "content": "42"}


def test_think_reasoning_is_never_sent_back() -> None:
    msg = AssistantMessage(content="hi", reasoning="private", reasoning_carrier="think")
    doc = body_of(ChatRequest(model="m", messages=[msg]))
    assert doc["messages"][0] == {"role": "assistant", "content": "hi"}
    with pytest.raises(ValueError, match="reasoning_carrier"):
        AssistantMessage(content="x", reasoning="r")


def test_optional_fields_and_tool_choice_forms() -> None:
    req = ChatRequest(
        model="m",
        messages=[SystemMessage(content="s"), UserMessage(content="u")],
        tools=[Tool(name="get_weather", description="d", parameters={"type": "object"})],
        tool_choice=NamedToolChoice("get_weather"),
        max_tokens=5,
        temperature=0.5,
        response_format=JSONSchemaFormat(name="w", schema={"type": "object"}),
        include_usage=True,
        reasoning_effort="low",
    )
    doc = body_of(req)
    assert doc["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "d",
                "parameters": {"type": "object"},
            },
        }
    ]
    assert doc["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert doc["max_tokens"] == 5
    assert doc["temperature"] == 0.5
    assert doc["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "w", "schema": {"type": "object"}},
    }
    assert doc["stream_options"] == {"include_usage": True}
    assert doc["reasoning_effort"] == "low"
    assert req.tool_names == {"get_weather"}
    assert "tool_choice" not in body_of(user("x"))  # default: not sent
    assert body_of(
        ChatRequest(model="m", messages=[UserMessage(content="x")], response_format=TextFormat())
    )["response_format"] == {"type": "text"}
    assert body_of(
        ChatRequest(
            model="m", messages=[UserMessage(content="x")], response_format=JSONObjectFormat()
        )
    )["response_format"] == {"type": "json_object"}


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"model": ""}, "model"),
        ({"messages": []}, "messages"),
        ({"messages": ["hi"]}, r"messages\[0\]"),
        ({"temperature": 2.5}, "temperature"),
        ({"temperature": -0.1}, "temperature"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"n": 2}, "n must be 1"),
        ({"reasoning_effort": "max"}, "reasoning_effort"),
        ({"tool_choice": "sometimes"}, "tool_choice"),
        ({"tool_choice": NamedToolChoice("nope")}, "not in tools"),
        ({"tool_choice": "required"}, "needs tools"),
        ({"tools": [Tool(name="a"), Tool(name="a")]}, "unique"),
        ({"response_format": "json"}, "response_format"),
        ({"max_tokens": 5, "max_completion_tokens": 5}, "not both"),
        ({"max_completion_tokens": 0}, "max_completion_tokens"),
        ({"top_p": 1.5}, "top_p"),
        ({"top_p": True}, "top_p"),
        ({"stop": ["a", ""]}, r"stop\[1\]"),
        ({"seed": 1.5}, "seed"),
        ({"parallel_tool_calls": 1}, "parallel_tool_calls"),
        ({"user": 7}, "user"),
        ({"extra_body": [("top_k", 1)]}, "extra_body must be a mapping"),
        ({"extra_body": {1: 2}}, "keys must be str"),
        ({"extra_body": {"top_p": 0.5}}, r"extra_body\['top_p'\]: .*set the field"),
        ({"extra_body": {"x": float("nan")}}, "extra_body must be JSON"),
        ({"extra_body": {"x": object()}}, "extra_body must be JSON"),
    ],
)
def test_bad_values_name_the_field(kwargs: dict[str, Any], match: str) -> None:
    base: dict[str, Any] = {"model": "m", "messages": [UserMessage(content="x")]}
    with pytest.raises((ValueError, TypeError), match=match):
        ChatRequest(**{**base, **kwargs})


def test_part_and_tool_checks() -> None:
    with pytest.raises(TypeError, match=r"content\[1\]"):
        UserMessage(content=[TextPart(text="a"), 5])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="tool name"):
        Tool(name="has space")
    with pytest.raises(ValueError, match=r"json_schema\.name"):
        JSONSchemaFormat(name="x" * 65, schema={})
    with pytest.raises(ValueError, match="tool_call_id"):
        ToolMessage(tool_call_id="", content="x")


def test_strict_schema_rules() -> None:
    ok = {
        "type": "object",
        "properties": {
            "a": {
                "type": "object",
                "properties": {"b": {"type": "string"}},
                "required": ["b"],
                "additionalProperties": False,
            }
        },
        "required": ["a"],
        "additionalProperties": False,
    }
    JSONSchemaFormat(name="ok", schema=ok, strict=True)
    bad = json.loads(json.dumps(ok))
    bad["properties"]["a"]["required"] = []
    with pytest.raises(ValueError, match=r"properties\.a: strict needs every property required"):
        JSONSchemaFormat(name="bad", schema=bad, strict=True)
    with pytest.raises(ValueError, match="additionalProperties"):
        JSONSchemaFormat(name="bad", schema={"type": "object", "properties": {}}, strict=True)
    JSONSchemaFormat(name="loose", schema={"type": "object", "properties": {"a": {}}})  # not strict


def test_profiles_adapt_and_say_what_changed() -> None:
    req = ChatRequest(
        model="m",
        messages=[UserMessage(content="x")],
        tools=[Tool(name="f")],
        tool_choice=NamedToolChoice("f"),
        response_format=JSONObjectFormat(),
        include_usage=True,
        reasoning_effort="high",
    )
    assert OPENAI.adapt(req) == (req, ())
    lm, notes = LM_STUDIO.adapt(req)
    assert lm.tool_choice == "required"
    assert isinstance(lm.response_format, JSONSchemaFormat)
    assert len(notes) == 2
    strict, notes = STRICT.adapt(req)
    assert not strict.include_usage
    assert strict.reasoning_effort is None
    assert len(notes) == 2
    azure, notes = AZURE.adapt(
        ChatRequest(model="m", messages=[UserMessage(content="x")], tool_choice="none")
    )
    assert azure.tool_choice is None
    assert "without tools" in notes[0]
    assert LM_STUDIO.schema_holds_reasoning


TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)


@given(TEXT, st.lists(TEXT, max_size=3), st.binary(max_size=300), st.integers(3, 200))
def test_any_request_encodes_to_its_exact_length_and_json(
    system: str, texts: list[str], tail: bytes, piece: int
) -> None:
    parts: list[Any] = [TextPart(text=t) for t in texts] + [ImagePart.from_bytes(PNG + tail)]
    req = ChatRequest(
        model="m", messages=[SystemMessage(content=system), UserMessage(content=parts)]
    )
    body = req.body(piece_size=piece)
    raw = body.read()
    assert len(raw) == body.content_length
    doc = json.loads(raw)
    assert doc["messages"][0]["content"] == system
    joined = "\n".join(t for t in texts if t)
    content = doc["messages"][1]["content"]
    assert (
        content[-1]["image_url"]["url"]
        == "data:image/png;base64," + base64.b64encode(PNG + tail).decode()
    )
    assert (content[0]["text"] if joined else None) == (joined or None)


def test_placeholder_text_in_the_prompt_cannot_confuse_the_splice() -> None:
    req = user(TextPart(text="svir_part_0_0_ and svir_part_1_0_"), ImagePart.from_bytes(PNG))
    doc = body_of(req)
    assert doc["messages"][0]["content"][0]["text"] == "svir_part_0_0_ and svir_part_1_0_"


def test_large_image_from_disk_is_not_read_at_construction(tmp_path: Path) -> None:
    f = tmp_path / "big.png"
    with f.open("wb") as out:
        out.write(PNG)
        out.write(os.urandom(3 << 20))
    req = user(ImagePart.from_path(f))
    body = req.body()
    assert body.content_length > 4 << 20
    first = next(iter(body))
    assert len(first) < 64 * 1024


# -- each wrong type named --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: ImagePart.from_bytes("not bytes"), "image data must be bytes, not str"),
        (lambda: TextFile.from_text(b"bytes", name="a.txt"), "text must be a str, not bytes"),
        (lambda: AssistantMessage(content="x", tool_calls=("call",)), r"tool_calls\[0\]"),
        (lambda: Tool(name="f", parameters=["not", "a", "schema"]), "JSON Schema object"),
        (
            lambda: ChatRequest(model="m", messages=[UserMessage(content="hi")], tools=["f"]),
            r"tools\[0\] must be a Tool",
        ),
    ],
)
def test_a_value_of_the_wrong_type_is_named(build: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        build()


def test_strict_schemas_are_checked_inside_items_and_combinators() -> None:
    loose = {"type": "object", "properties": {"a": {"type": "string"}}}
    tight = {**loose, "required": ["a"], "additionalProperties": False}
    with pytest.raises(ValueError, match=r"schema\.properties\.xs\.items\[0\]: strict"):
        JSONSchemaFormat(
            name="s",
            schema={
                **tight,
                "properties": {"xs": {"type": "array", "items": loose}},
                "required": ["xs"],
            },
            strict=True,
        )
    with pytest.raises(ValueError, match=r"schema\.anyOf\[1\]: strict"):
        JSONSchemaFormat(name="s", schema={"anyOf": [tight, loose]}, strict=True)
    # booleans are schemas too ("not": true), with nothing to check inside
    JSONSchemaFormat(name="s", schema={"anyOf": [tight, {"not": True}]}, strict=True)


def test_the_common_fields_and_extra_body_go_out() -> None:
    doc = body_of(
        ChatRequest(
            model="m",
            messages=[SystemMessage(content="be", role="developer"), UserMessage(content="x")],
            tools=[Tool(name="f", strict=True)],
            max_completion_tokens=64,
            top_p=0.9,
            stop="END",
            seed=7,
            parallel_tool_calls=False,
            user="u-1",
            extra_body={"top_k": 40, "min_p": 0.05},
        )
    )
    assert doc["messages"][0] == {"role": "developer", "content": "be"}
    assert doc["tools"][0]["function"]["strict"] is True
    assert (doc["max_completion_tokens"], doc["top_p"], doc["seed"]) == (64, 0.9, 7)
    assert (doc["stop"], doc["parallel_tool_calls"], doc["user"]) == (["END"], False, "u-1")
    assert (doc["top_k"], doc["min_p"]) == (40, 0.05)
    assert "max_tokens" not in doc
    several = ChatRequest(model="m", messages=[UserMessage(content="x")], stop=["a", "b"])
    assert several.stop == ("a", "b")


def test_images_by_url_and_with_detail() -> None:
    doc = body_of(
        user(
            TextPart(text="see"),
            ImagePart.from_url("https://example.test/a.png", detail="low"),
            ImagePart.from_bytes(PNG, detail="high"),
            ImagePart.from_url("data:image/png;base64," + base64.b64encode(PNG).decode()),
        )
    )
    _, by_url, inline, data_url = doc["messages"][0]["content"]
    assert by_url["image_url"] == {"url": "https://example.test/a.png", "detail": "low"}
    assert inline["image_url"]["detail"] == "high"
    assert data_url["image_url"]["url"].startswith("data:image/png;base64,iVBOR")


@pytest.mark.parametrize(
    ("url", "match"),
    [
        ("ftp://x/a.png", "http, https or data"),
        ("https://x/a b.png", "http, https or data"),
        ("data:image/png,abc", "must be base64"),
        ("data:image/png;base64,@@@", "not base64"),
        ("data:image/png;base64," + base64.b64encode(b"text").decode(), "not a PNG"),
    ],
)
def test_bad_image_urls(url: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ImagePart.from_url(url)


def test_image_url_and_detail_types() -> None:
    with pytest.raises(TypeError, match="must be a str"):
        ImagePart.from_url(b"https://x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="detail must be one of"):
        ImagePart.from_bytes(PNG, detail="max")  # type: ignore[arg-type]


def test_profiles_send_the_new_fields_as_the_server_reads_them() -> None:
    request = ChatRequest(
        model="m",
        messages=[SystemMessage(content="be", role="developer"), UserMessage(content="x")],
        max_completion_tokens=9,
    )
    adapted, notes = STRICT.adapt(request)
    assert (adapted.max_tokens, adapted.max_completion_tokens) == (9, None)
    assert isinstance(adapted.messages[0], SystemMessage)
    assert adapted.messages[0].role == "system"
    assert adapted.messages[1] == request.messages[1]
    assert notes == (
        "a strict server reads max_tokens: max_completion_tokens sent under it",
        "a strict server knows no developer role: sent as system",
    )
    assert OPENAI.adapt(request) == (request, ())


OPENAI_HISTORY: dict[str, Any] = {
    "model": "gpt-4o-mini",
    "messages": [
        {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "https://x.test/p.png"}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "look it up",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"q":"p"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "a cat"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "A cat."}]},
        {"role": "user", "content": "Thanks."},
    ],
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "lookup",
                "description": "Look up.",
                "parameters": {"type": "object"},
                "strict": True,
            },
        }
    ],
    "tool_choice": {"type": "function", "function": {"name": "lookup"}},
    "response_format": {
        "type": "json_schema",
        "json_schema": {
            "name": "out",
            "schema": {"type": "object", "properties": {}, "additionalProperties": False},
            "strict": True,
        },
    },
    "stream": True,
    "stream_options": {"include_usage": True},
    "max_completion_tokens": 100,
    "temperature": 0.3,
    "top_p": 0.8,
    "stop": ["END"],
    "seed": 1,
    "parallel_tool_calls": True,
    "user": "u",
    "reasoning_effort": "low",
    "logit_bias": {"50256": -100},  # not typed: it goes as it came
    "metadata": {"k": "v"},
}


def test_from_openai_reads_a_stored_request_and_drops_nothing() -> None:
    request = ChatRequest.from_openai(OPENAI_HISTORY)
    assert request.extra_body == {"logit_bias": {"50256": -100}, "metadata": {"k": "v"}}
    assert request.include_usage
    assert request.tool_choice == NamedToolChoice("lookup")
    assert request.tools[0].strict
    doc = body_of(request)
    expected = {k: v for k, v in OPENAI_HISTORY.items() if k not in ("messages", "tools")}
    for key, value in expected.items():
        assert doc[key] == value, key
    messages = doc["messages"]
    assert messages[0] == {"role": "developer", "content": "Be brief."}
    assert messages[1] == OPENAI_HISTORY["messages"][1]
    assert messages[2]["reasoning_content"] == "look it up"
    assert messages[2]["tool_calls"] == OPENAI_HISTORY["messages"][2]["tool_calls"]
    assert messages[3] == {"role": "tool", "tool_call_id": "c1", "content": "a cat"}
    assert messages[4] == {"role": "assistant", "content": "A cat."}
    minimal = ChatRequest.from_openai(
        {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tool_choice": "auto"}
    )
    assert (minimal.tool_choice, minimal.extra_body) == ("auto", {})
    for kind, fmt in (("text", TextFormat()), ("json_object", JSONObjectFormat())):
        fmt_request = ChatRequest.from_openai({**minimal_dict(), "response_format": {"type": kind}})
        assert fmt_request.response_format == fmt


def minimal_dict() -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def with_message(message: object) -> dict[str, Any]:
    return {"model": "m", "messages": [message]}


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ([], "the request: an object is required"),
        ({**minimal_dict(), "stream": False}, "always streams"),
        ({"model": "m", "messages": "hi"}, "messages: an array"),
        ({"model": "m", "messages": ["hi"]}, r"messages\[0\]: an object"),
        (with_message({"role": "user", "content": "x", "name": "bob"}), "'name' cannot be carried"),
        (with_message({"role": "function", "content": "x"}), r"messages\[0\].role"),
        (with_message({"role": "user", "content": [{"type": "input_audio"}]}), "text or image_url"),
        (with_message({"role": "system", "content": [{"type": "image_url"}]}), "only text here"),
        (with_message({"role": "system", "content": [{"type": "text", "text": 1}]}), "a string"),
        (
            with_message(
                {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}
            ),
            r"content\[0\].image_url: an image URL",
        ),
        (with_message({"role": "tool", "content": "x"}), "tool_call_id: a non-empty string"),
        (with_message({"role": "assistant", "content": "x", "refusal": "no"}), "refusal"),
        (
            with_message(
                {"role": "assistant", "content": "x", "reasoning": "a", "reasoning_content": "b"}
            ),
            "one key only",
        ),
        (
            with_message(
                {"role": "assistant", "tool_calls": [{"id": "c", "type": "custom", "function": {}}]}
            ),
            "only function calls",
        ),
        (
            with_message(
                {
                    "role": "assistant",
                    "tool_calls": [{"id": "", "function": {"name": "f", "arguments": ""}}],
                }
            ),
            r"tool_calls\[0\].id",
        ),
        ({**minimal_dict(), "stream_options": {"include_usage": True, "x": 1}}, "'x' cannot"),
        ({**minimal_dict(), "tools": [{"type": "web_search"}]}, "only function tools"),
        (
            {**minimal_dict(), "tools": [{"type": "function", "function": {"name": "a b"}}]},
            r"tools\[0\]: tool name",
        ),
        ({**minimal_dict(), "tool_choice": {"type": "allowed_tools"}}, "only a function"),
        (
            {**minimal_dict(), "response_format": {"type": "grammar"}},
            "text, json_object or json_schema",
        ),
        ({**minimal_dict(), "n": 2}, "n must be 1"),
        (
            with_message({"role": "user", "content": "x", "name": "bob", "audio": None}),
            "'name' cannot be carried",  # (and only it: a null holds nothing)
        ),
        (with_message({"role": "assistant", "thinking_blocks": "x"}), "thinking_blocks: an array"),
        (
            with_message({"role": "assistant", "thinking_blocks": [{"type": "text"}]}),
            r"thinking_blocks\[0\].type: thinking or redacted_thinking, not 'text'",
        ),
        (
            with_message({"role": "assistant", "thinking_blocks": [{"type": "thinking"}]}),
            r"thinking_blocks\[0\].signature: a non-empty string",
        ),
        (
            with_message({"role": "assistant", "thinking_blocks": [{"type": "redacted_thinking"}]}),
            r"thinking_blocks\[0\].data: a non-empty string",
        ),
        (
            with_message(
                {
                    "role": "assistant",
                    "thinking_blocks": [{"type": "thinking", "signature": "s", "cache": 1}],
                }
            ),
            r"thinking_blocks\[0\]: 'cache' cannot be carried",
        ),
    ],
)
def test_from_openai_names_what_it_cannot_carry(params: Any, match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        ChatRequest.from_openai(params)


def test_from_openai_reads_an_answers_message_sent_back_as_it_came() -> None:
    """openai-python's message of an answer, sent back whole in the next turn: its null and
    empty keys hold nothing, and its signed reasoning (``thinking_blocks``, which the gateway
    writes) goes back to the vendor that signed it (`svir_proto._signatures`)."""
    from svir_proto.events import ReasoningBlock
    from svir_proto.hub import carried_signature

    gemini = carried_signature("GSIG", "thought", "fc-1")
    message = {
        "role": "assistant",
        "content": None,
        "refusal": None,
        "audio": None,
        "function_call": None,
        "annotations": [],
        "tool_calls": [
            {"id": "fc-1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
        "thinking_blocks": [
            {"index": 0, "type": "redacted_thinking", "data": "DATA"},
            {"index": 1, "type": "thinking", "thinking": "hm", "signature": "SIG"},
            {"type": "thinking", "signature": gemini},
        ],
    }
    (sent,) = ChatRequest.from_openai(with_message(message)).messages
    assert isinstance(sent, AssistantMessage)
    assert sent.thinking_blocks == (
        ReasoningBlock(text="", signature="DATA", carrier="thinking", redacted=True),
        ReasoningBlock(text="hm", signature="SIG", carrier="thinking"),
        ReasoningBlock(text="", signature="GSIG", carrier="thought", item_id="fc-1"),
    )
    doc = json.loads(ChatRequest(model="m", messages=[sent]).body().read())
    assert doc["messages"][0]["thinking_blocks"] == [
        {"type": "redacted_thinking", "data": "DATA"},
        {"type": "thinking", "thinking": "hm", "signature": "SIG"},
        {"type": "thinking", "thinking": "", "signature": gemini},
    ]
    with pytest.raises(TypeError, match=r"thinking_blocks\[0\] must be a ReasoningBlock"):
        AssistantMessage(thinking_blocks=["SIG"])  # type: ignore[list-item]
