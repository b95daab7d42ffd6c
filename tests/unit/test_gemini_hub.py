"""svir_proto.gemini.hub: what goes where between a Gemini request and the neutral one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest

from svir_proto import hub
from svir_proto.events import ReasoningBlock
from svir_proto.gemini import (
    VENDOR,
    GeminiContent,
    GeminiFileData,
    GeminiFunctionCall,
    GeminiFunctionDeclaration,
    GeminiFunctionResponse,
    GeminiGenerationConfig,
    GeminiInlineData,
    GeminiOtherPart,
    GeminiRequest,
    GeminiText,
    GeminiThinkingConfig,
    GeminiTool,
    GeminiToolConfig,
)
from svir_proto.gemini.endpoint import target
from svir_proto.gemini.hub import from_hub, to_hub
from svir_proto.llmstream import (
    LLMMediaPart,
    LLMMessage,
    LLMRequest,
    LLMTextPart,
    LLMTool,
    LLMToolCall,
)
from svir_proto.openai import ChatRequest, ToolMessage, UserMessage
from svir_proto.translate import llm_to_openai, openai_to_llm

PNG = b"\x89PNG\r\n\x1a\n" + bytes(20)
WEATHER = GeminiFunctionDeclaration(
    name="get_weather",
    description="Weather",
    parameters={
        "type": "OBJECT",
        "properties": {
            "city": {"type": "STRING"},
            "days": {"type": "ARRAY", "items": {"type": "INTEGER"}},
            "unit": {"anyOf": [{"type": "STRING"}, {"type": "NULL"}]},
            "more": {"type": "OBJECT", "additionalProperties": {"type": "NUMBER"}},
            "any": {"type": "ARRAY", "items": True, "not": {"type": "NULL"}},
        },
        "required": ["city"],
    },
)


def gemini(**fields: Any) -> GeminiRequest:
    return GeminiRequest(**{"model": "gemini-2.5-flash", **fields})


def test_a_conversation_to_the_hub_says_it_the_neutral_way() -> None:
    r = gemini(
        system_instruction=GeminiContent(role=None, parts=[GeminiText(text="Be brief.")]),
        contents=[
            GeminiContent(parts=[GeminiText(text="Weather?"), GeminiInlineData.from_bytes(PNG)]),
            GeminiContent(
                role="model",
                parts=[
                    GeminiText(text="Let me see.", thought=True),
                    GeminiFunctionCall(
                        name="get_weather", args={"city": "Paris"}, thought_signature="s1"
                    ),
                    GeminiFunctionCall(name="get_weather", args={"city": "Rome"}),
                ],
            ),
            GeminiContent(
                parts=[
                    GeminiFunctionResponse(name="get_weather", response={"output": "sunny"}),
                    GeminiFunctionResponse(name="get_weather", response={"error": "no data"}),
                    GeminiText(text="Thanks"),
                ]
            ),
        ],
        tools=[GeminiTool(function_declarations=[WEATHER])],
        tool_config=GeminiToolConfig(mode="ANY", allowed_function_names=["get_weather"]),
        generation_config=GeminiGenerationConfig(
            max_output_tokens=50,
            temperature=0.2,
            top_p=0.9,
            top_k=5,
            stop_sequences=["END"],
            thinking_config=GeminiThinkingConfig(
                thinking_budget=100, include_thoughts=True, thinking_level="LOW"
            ),
        ),
    )
    h = to_hub(r)
    roles = [m.role for m in h.messages]
    assert roles == ["system", "user", "assistant", "tool", "tool", "user"]
    assert h.messages[1].content == (
        LLMTextPart(text="Weather?"),
        LLMMediaPart(type="image", media_type="image/png", raw=PNG),
    )
    assistant = h.messages[2]
    assert [(c.id, c.arguments) for c in assistant.tool_calls] == [
        ("gemini-1-1", '{"city":"Paris"}'),
        ("gemini-1-2", '{"city":"Rome"}'),
    ]
    assert assistant.content is None
    assert hub.message_reasoning(assistant) == (
        ReasoningBlock(text="Let me see.", signature="s1", carrier="thought", item_id="gemini-1-1"),
    )
    tools = h.messages[3:5]
    assert [(m.tool_call_id, m.name, m.text, hub.message_is_error(m)) for m in tools] == [
        ("gemini-1-1", "get_weather", "sunny", False),
        ("gemini-1-2", "get_weather", "no data", True),
    ]
    assert h.parameters == {
        "max_tokens": 50,
        "temperature": 0.2,
        "top_p": 0.9,
        "stop_sequences": ["END"],
        "top_k": 5,  # the hub's (`SAMPLING`), which Anthropic has too
    }
    assert hub.tool_choice(h) == ("name", "get_weather")
    assert hub.reasoning_options(h) == {"budget_tokens": 100, "effort": "low", "summary": "auto"}
    schema = h.tools[0].parameters
    assert schema["type"] == "object"
    assert schema["properties"]["days"]["items"] == {"type": "integer"}
    assert schema["properties"]["unit"]["anyOf"][1] == {"type": "null"}
    assert schema["properties"]["more"]["additionalProperties"] == {"type": "number"}
    assert schema["properties"]["any"] == {"type": "array", "items": True, "not": {"type": "null"}}
    vendor = h.extensions[VENDOR]
    assert vendor["generationConfig"] == {}
    assert from_hub(h) == r
    # and on to OpenAI: what a chat upstream is sent
    chat = llm_to_openai(h)  # a reasoning request: its effort, and the cap reasoning
    assert (chat.max_completion_tokens, chat.reasoning_effort) == (50, "low")  # models take
    assert [type(m).__name__ for m in chat.messages] == [
        "SystemMessage",
        "UserMessage",
        "AssistantMessage",
        "ToolMessage",
        "ToolMessage",
        "UserMessage",
    ]


def test_an_edited_message_is_rebuilt_from_what_it_says_now() -> None:
    r = gemini(
        contents=[
            GeminiContent(
                parts=[
                    GeminiFileData(file_uri="gs://b/v.mp4", mime_type="video/mp4"),
                    GeminiText(text="What is this?"),
                ]
            ),
        ]
    )
    h = to_hub(r)
    assert VENDOR in h.messages[0].extensions
    assert from_hub(h) == r
    edited = attrs.evolve(h, messages=[attrs.evolve(h.messages[0], content="Something else?")])
    assert from_hub(edited).contents == (GeminiContent(role="user", parts="Something else?"),)


def test_a_model_turn_keeps_its_order_through_the_hub() -> None:
    """Attack 50b N1: the hub's ``order`` carries a model turn's thoughts, text and calls as
    they came (a call, its thought after it); a thought a text's signature closes goes before
    the text, where it came (review 50 r6: it went after it); two equal calls are two."""
    call = GeminiFunctionCall(name="f", args={}, id="c1")
    turn = GeminiContent(
        role="model",
        parts=[
            call,
            GeminiText(text="T", thought=True),
            GeminiText(text="X", thought_signature="S"),
            GeminiText(text="U", thought=True, thought_signature="S2"),
            GeminiFunctionCall(name="f", args={}, id="c1"),
        ],
    )
    neutral = to_hub(gemini(contents=[GeminiContent(parts="hi"), turn]))
    model = neutral.messages[1]
    pieces = hub.message_pieces(model)
    assert [type(p).__name__ for p in pieces] == [
        "LLMToolCall",
        "ReasoningBlock",
        "str",
        "ReasoningBlock",
        "LLMToolCall",
    ]
    rebuilt = from_hub(attrs.evolve(neutral, messages=[neutral.messages[0], attrs.evolve(
        model, extensions={hub.HUB_EXTENSION: model.extensions[hub.HUB_EXTENSION]})]))  # fmt: skip
    parts = rebuilt.contents[1].parts
    assert [(type(p).__name__, getattr(p, "text", None), p.thought_signature) for p in parts] == [
        ("GeminiFunctionCall", None, "skip_thought_signature_validator"),
        ("GeminiText", "T", "S"),
        ("GeminiText", "X", None),
        ("GeminiText", "U", "S2"),
        ("GeminiFunctionCall", None, None),
    ]


def test_a_foreign_request_becomes_a_gemini_one(tmp_path: Path) -> None:
    audio = tmp_path / "a.wav"
    audio.write_bytes(b"RIFF" + bytes(40))
    llm = LLMRequest(
        model="m",
        messages=[
            LLMMessage(role="system", content="One."),
            LLMMessage(
                role="user",
                content=[
                    LLMTextPart(text="Hear"),
                    LLMMediaPart(type="audio", media_type="audio/wav", path=str(audio)),
                ],
            ),
            LLMMessage(
                role="assistant",
                content=[
                    LLMTextPart(text="I hear."),
                    LLMMediaPart(type="image", media_type="image/png", data="iVBORw0KGgo="),
                ],
                tool_calls=[LLMToolCall(id="call_1", name="f", arguments='{"a":1}')],
                extensions=hub.message_extensions(
                    reasoning=[
                        ReasoningBlock(text="why", signature="ant", carrier="thinking"),
                        ReasoningBlock(
                            text="", signature="gem", carrier="thought", item_id="call_1"
                        ),
                    ]
                ),
            ),
            LLMMessage(role="tool", content='{"ok":true}', tool_call_id="call_1"),
            LLMMessage(
                role="tool",
                content="boom",
                tool_call_id="call_1",
                name="f",
                extensions=hub.message_extensions(is_error=True),
            ),
            LLMMessage(role="user", content="and?"),
            LLMMessage(role="system", content="Two."),
        ],
        tools=[LLMTool(name="f", description="", parameters={"type": "object"})],
        parameters={"max_tokens": 9, "stop_sequences": ["x"]},
        extensions=hub.hub_options(
            tool_choice="required", reasoning={"effort": "xhigh", "summary": "detailed"}
        ),
    )
    r = from_hub(llm)
    assert r.system_instruction == GeminiContent(
        role=None, parts=[GeminiText(text="One."), GeminiText(text="Two.")]
    )
    user, model, results, question = r.contents
    assert user.parts[1] == GeminiInlineData(mime_type="audio/wav", path=str(audio), size=44)
    assert model.parts == (
        GeminiText(text="I hear."),
        GeminiInlineData(mime_type="image/png", data="iVBORw0KGgo="),
        GeminiFunctionCall(name="f", args={"a": 1}, id="call_1", thought_signature="gem"),
    )
    assert results.parts == (
        GeminiFunctionResponse(name="f", response={"ok": True}, id="call_1"),
        GeminiFunctionResponse(name="f", response={"error": "boom"}, id="call_1"),
    )
    assert question == GeminiContent(role="user", parts="and?")
    assert r.tools == (
        GeminiTool(
            function_declarations=[
                GeminiFunctionDeclaration(name="f", parameters_json_schema={"type": "object"})
            ]
        ),
    )
    assert r.tool_config == GeminiToolConfig(mode="ANY")
    assert r.generation_config == GeminiGenerationConfig(
        max_output_tokens=9,
        stop_sequences=["x"],
        thinking_config=GeminiThinkingConfig(thinking_level="high", include_thoughts=True),
    )


@pytest.mark.parametrize(
    ("options", "thinking"),
    [
        ({"effort": "none"}, GeminiThinkingConfig(thinking_budget=0)),
        ({"effort": "low", "budget_tokens": 64}, GeminiThinkingConfig(thinking_budget=64)),
        ({"summary": "auto"}, GeminiThinkingConfig(include_thoughts=True)),
        ({"effort": 3}, None),
    ],
)
def test_reasoning_options_as_thinking(
    options: dict[str, Any], thinking: GeminiThinkingConfig | None
) -> None:
    llm = LLMRequest(
        model="m",
        messages=[LLMMessage(role="user", content="q")],
        extensions=hub.hub_options(reasoning=options),
    )
    config = from_hub(llm).generation_config
    assert (config.thinking_config if config else None) == thinking


@pytest.mark.parametrize("choice", ["auto", "none", ("name", "f")])
def test_tool_choices_both_ways(choice: hub.HubToolChoice) -> None:
    llm = LLMRequest(
        model="m",
        messages=[LLMMessage(role="user", content="q")],
        tools=[LLMTool(name="f", description="d", parameters={})],
        extensions=hub.hub_options(tool_choice=choice),
    )
    r = from_hub(llm)
    assert hub.tool_choice(to_hub(r)) == choice


@pytest.mark.parametrize(
    "config",
    [
        GeminiToolConfig(mode="VALIDATED"),
        GeminiToolConfig(mode="MODE_UNSPECIFIED"),
        GeminiToolConfig(mode="ANY", allowed_function_names=["get_weather", "other"]),
        GeminiToolConfig(extra={"retrievalConfig": {}}),
    ],
)
def test_tool_configs_the_neutral_choice_cannot_say_come_back_whole(
    config: GeminiToolConfig,
) -> None:
    other = GeminiFunctionDeclaration(name="other", parameters_json_schema=True)
    r = gemini(
        contents=[GeminiContent(parts="q")],
        tools=[GeminiTool(function_declarations=[WEATHER, other])],
        tool_config=config,
    )
    h = to_hub(r)
    assert from_hub(h) == r
    assert h.tools[1].parameters == {"type": "object", "properties": {}}
    changed = attrs.evolve(h, extensions={**h.extensions, **hub.hub_options(tool_choice="none")})
    assert from_hub(changed).tool_config == GeminiToolConfig(mode="NONE")


def test_what_has_no_gemini_form_raises_naming_it() -> None:
    def llm(*messages: LLMMessage) -> LLMRequest:
        return LLMRequest(model="m", messages=[LLMMessage(role="user", content="q"), *messages])

    with pytest.raises(ValueError, match="'c9' names no function"):
        from_hub(llm(LLMMessage(role="tool", content="x", tool_call_id="c9")))
    media = [LLMMediaPart(type="image", media_type="image/png", raw=PNG)]
    with pytest.raises(ValueError, match="has media"):
        from_hub(llm(LLMMessage(role="tool", content=media, tool_call_id="c9", name="f")))
    with pytest.raises(ValueError, match="systemInstruction: inline data"):
        to_hub(
            gemini(
                contents=[GeminiContent(parts="q")],
                system_instruction=GeminiContent(
                    role=None, parts=[GeminiInlineData.from_bytes(PNG)]
                ),
            )
        )


def test_a_system_instruction_the_messages_cannot_say_is_kept_and_used_while_they_agree() -> None:
    system = GeminiContent(
        role="user",
        parts=[GeminiText(text="a"), GeminiInlineData(mime_type="text/plain", data="YQ==")],
    )
    r = gemini(contents=[GeminiContent(parts="q")], system_instruction=system)
    h = to_hub(r)
    assert [m.text for m in h.messages if m.role == "system"] == ["a"]
    assert from_hub(h) == r
    edited = attrs.evolve(h, messages=[LLMMessage(role="system", content="b"), *h.messages[1:]])
    assert from_hub(edited).system_instruction == GeminiContent(role=None, parts="b")


def test_results_and_turns_without_ids_and_their_grouping() -> None:
    r = gemini(
        contents=[
            GeminiContent(role="model", parts=[GeminiFunctionCall(name="f", args={})]),
            GeminiContent(parts=[GeminiFunctionResponse(name="f", response={"output": "1"})]),
            GeminiContent(
                parts=[GeminiFunctionResponse(name="f", response={"output": '{"a": 1}'})]
            ),
            GeminiContent(parts=[GeminiFunctionResponse(name="g", response={"v": [1]}, id="x")]),
            GeminiContent(parts=[GeminiText(text="next")]),
            GeminiContent(role="model", parts=[GeminiText(text="a"), GeminiText(text="b")]),
            GeminiContent(parts=[GeminiInlineData(mime_type="application/pdf", data="JVBE")]),
        ]
    )
    h = to_hub(r)
    tools = [m for m in h.messages if m.role == "tool"]
    assert [(m.tool_call_id, m.text) for m in tools] == [
        ("gemini-0-0", "1"),
        ("gemini-2-0", '{"output":"{\\"a\\": 1}"}'),
        ("x", '{"v":[1]}'),
    ]
    assert from_hub(h) == r
    assert LLMRequest.parse(h.body().read()) == h
    assert from_hub(LLMRequest.parse(h.body().read())) == r


def test_the_first_call_of_a_turn_gemini_did_not_sign_carries_the_documented_signature() -> None:
    """Client round 32 (F1): a tool loop of another dialect's client through a Gemini upstream
    sent turn 2 with calls and no ``thoughtSignature``, which Gemini 3 refuses (400): the first
    call of each such turn carries the signature Google documents for calls it did not sign;
    a call Gemini signed keeps its own, and a later call of the turn none."""
    calls = [
        LLMToolCall(id="a", name="f", arguments="{}"),
        LLMToolCall(id="b", name="f", arguments="{}"),
    ]
    own = hub.message_extensions(
        reasoning=[ReasoningBlock(text="", signature="gem", carrier="thought", item_id="a")]
    )
    foreign = hub.message_extensions(
        reasoning=[ReasoningBlock(text="why", signature="ant", carrier="thinking")]
    )
    turns = [
        LLMMessage(role="user", content="q"),
        LLMMessage(role="assistant", content="", tool_calls=calls),
        LLMMessage(role="tool", content="1", tool_call_id="a", name="f"),
        LLMMessage(role="tool", content="2", tool_call_id="b", name="f"),
        LLMMessage(role="assistant", content="", tool_calls=calls[:1], extensions=foreign),
        LLMMessage(role="tool", content="1", tool_call_id="a", name="f"),
        LLMMessage(role="assistant", content="", tool_calls=calls, extensions=own),
        LLMMessage(role="tool", content="1", tool_call_id="a", name="f"),
    ]
    r = from_hub(LLMRequest(model="m", messages=turns))
    signed = [
        [p.thought_signature for p in c.parts if isinstance(p, GeminiFunctionCall)]
        for c in r.contents
        if c.role == "model"
    ]
    skip = "skip_thought_signature_validator"
    assert signed == [[skip, None], [skip], ["gem", None]]
    assert r.document()["contents"][1]["parts"][0]["thoughtSignature"] == skip


def test_an_openai_request_through_the_hub_to_gemini() -> None:
    chat = ChatRequest(
        model="gpt",
        messages=[UserMessage(content="hi"), ToolMessage(tool_call_id="t1", content="r")],
        max_tokens=5,
    )
    with pytest.raises(ValueError, match="names no function"):
        from_hub(openai_to_llm(chat))
    llm = openai_to_llm(
        ChatRequest(model="gpt", messages=[UserMessage(content="hi")], temperature=1.5)
    )
    assert from_hub(llm).generation_config == GeminiGenerationConfig(temperature=1.5)
    assert (
        from_hub(
            LLMRequest(model="m", messages=[LLMMessage(role="user", content="q")])
        ).generation_config
        is None
    )


def test_an_empty_generation_config_and_a_stream_false_come_back() -> None:
    r = gemini(
        contents=[GeminiContent(parts="q")],
        generation_config=GeminiGenerationConfig(
            thinking_config=GeminiThinkingConfig(include_thoughts=False)
        ),
        safety_settings=[{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "OFF"}],
        stream=False,
        extra={"cachedContent": "c"},
    )
    h = to_hub(r)
    assert json.loads(json.dumps(h.extensions))[VENDOR]["stream"] is False
    assert from_hub(h) == r
    assert (
        from_hub(
            to_hub(
                gemini(
                    contents=[GeminiContent(parts="q")], generation_config=GeminiGenerationConfig()
                )
            )
        ).generation_config
        == GeminiGenerationConfig()
    )


def test_media_in_a_kept_turn_is_taken_from_the_messages(tmp_path: Path) -> None:
    image = tmp_path / "i.png"
    image.write_bytes(PNG)
    r = gemini(
        contents=[
            GeminiContent(
                parts=[
                    GeminiFileData(file_uri="gs://b/v.mp4"),
                    GeminiInlineData.from_path(image),
                    GeminiInlineData(
                        mime_type="image/png",
                        data="iVBO",
                        inner_extra={"displayName": "d"},
                        thought_signature="s",
                    ),
                    GeminiText(text="compare"),
                ]
            ),
            GeminiContent(
                role="model",
                parts=[
                    GeminiText(text="here"),
                    GeminiInlineData(mime_type="image/png", data="iVBO"),
                ],
            ),
            GeminiContent(
                role="model", parts=[GeminiInlineData(mime_type="image/png", data="iVBO")]
            ),
            GeminiContent(role="model", parts=[GeminiOtherPart(value={"executableCode": {}})]),
        ]
    )
    h = to_hub(r)
    kept = h.messages[0].extensions[VENDOR]["content"]
    assert kept["parts"][1] == {"inlineData": {"svir:part": 0}}
    assert "iVBO" not in json.dumps(kept)  # no media twice
    assert isinstance(h.messages[1].content, tuple)
    assert from_hub(h) == r


def test_results_that_are_not_only_output_or_error_are_their_json() -> None:
    for response, text in [
        ({"result": "x"}, '{"result":"x"}'),
        ({"error": 1}, '{"error":1}'),
        ({"output": "a", "more": 1}, '{"output":"a","more":1}'),
    ]:
        r = gemini(
            contents=[
                GeminiContent(parts=[GeminiFunctionResponse(name="f", response=response, id="i")])
            ]
        )
        h = to_hub(r)
        assert (h.messages[0].text, hub.message_is_error(h.messages[0])) == (text, False)
        assert from_hub(h) == r


def test_a_foreign_assistant_turn_with_nothing_to_say() -> None:
    llm = LLMRequest(
        model="m",
        messages=[
            LLMMessage(role="user", content="q"),
            LLMMessage(role="assistant", content=""),
            LLMMessage(role="user", content="q2"),
        ],
    )
    assert [c.role for c in from_hub(llm).contents] == ["user", "user"]


@pytest.mark.parametrize(
    "model",
    [
        "x/../../../admin/secret",
        "models/../../team-b/v1beta/models/m",
        "a//b",
        "./m",
        "models/..",
        "tunedModels/a;b",
        "models/a\\..",
        "models/m%2F..",
        "models/m\x00",
        # attack 67 F2: a resource of a collection that does not generate, with our key
        "cachedContents/abc",
        "files/abc",
        "corpora/c/documents/d",
        "models/x/cachedContents/abc",
    ],
)
def test_a_model_whose_path_a_server_would_read_otherwise_is_refused(model: str) -> None:
    """Attack 27: a client's model became the Gemini upstream's path, dot segments and all,
    sent with the gateway's key; a server or a proxy that normalizes paths served another
    resource. A model is one id, of ``models/`` (the default) or ``tunedModels/``, that
    `parse_target` would take from a path; any other is a ValueError, which the gateway
    answers 400."""
    request = LLMRequest(model=model, messages=[LLMMessage(role="user", content="q")])
    said = "path segment|not a resource that generates|control character"
    with pytest.raises(ValueError, match=said):
        from_hub(request)
    with pytest.raises(ValueError, match=said):
        target(model)
    assert target("tunedModels/t-1") == "/v1beta/tunedModels/t-1:streamGenerateContent?alt=sse"
    assert from_hub(attrs.evolve(request, model="models/gemini-2.5-flash")).target() == (
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )


@pytest.mark.parametrize(
    "model",
    [
        "projects/p/locations/us-central1/publishers/google/models/gemini-2.0-flash",
        "projects/p/locations/l/endpoints/123",
        "tunedModels/my-model.v2",
        "models/gemini-1.5-flash-001",
    ],
)
def test_a_resource_that_generates_is_its_own_path(model: str) -> None:
    """Vertex AI's publisher models and endpoints generate too (review 68 #5: refused with
    the other collections): each of their ids is checked as a model's."""
    assert target(model, version="v1") == f"/v1/{model}:streamGenerateContent?alt=sse"
    with pytest.raises(ValueError, match="path segment"):
        target(model.rsplit("/", 1)[0] + "/..")


def test_a_schema_as_deep_as_a_request_may_nest_goes_through_the_hub() -> None:
    """Attack 69 F1: a tool's schema 250 levels deep (about 500 of JSON, under the parser's
    512) ran the tools' fingerprint out of Python's stack, and the gateway answered nothing;
    it goes to another dialect and back, the fingerprint found again."""
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(250):
        schema = {"type": "object", "properties": {"a": schema}}
    tool = {"functionDeclarations": [{"name": "f", "parameters": schema, "behavior": "BLOCKING"}]}
    doc = {"contents": [{"parts": [{"text": "x"}]}], "tools": [tool]}
    request = GeminiRequest.parse(json.dumps(doc), model="m")
    neutral = to_hub(request)
    assert neutral.tools[0].parameters == schema
    assert from_hub(neutral).tools == request.tools  # (its `behavior` kept by the fingerprint)


def test_a_fingerprint_reads_a_frozen_mapping_as_its_dict() -> None:
    """The fingerprint of kept tools and turns (`_hash`): a mapping a caller froze is the
    object it holds, a tuple the list; what JSON has no form for is a TypeError."""
    from types import MappingProxyType

    from svir_proto.gemini.hub import _hash

    assert _hash(MappingProxyType({"a": (1, 2)})) == _hash({"a": [1, 2]})
    with pytest.raises(TypeError, match="object has no JSON"):
        _hash({"a": object()})
