"""to_hub and from_hub: a Messages request through the neutral request and back, and neutral
requests (from other dialects) to the Messages API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest

from svir_proto.anthropic import (
    ImageBlock,
    Message,
    MessagesRequest,
    TextBlock,
    Thinking,
    ThinkingBlock,
    Tool,
    ToolChoice,
    ToolResultBlock,
    ToolUseBlock,
    from_hub,
    to_hub,
)
from svir_proto.events import ReasoningBlock
from svir_proto.hub import hub_options, message_extensions, parallel_tool_calls, tool_choice
from svir_proto.llmstream import (
    LLMMediaPart,
    LLMMessage,
    LLMRequest,
    LLMTextPart,
    LLMTool,
    LLMToolCall,
)
from tests.live.cases import PNG
from tests.unit.test_anthropic_request import FULL

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}


def conversation(tmp_path: Path) -> MessagesRequest:
    path = tmp_path / "p.png"
    path.write_bytes(PNG)
    return MessagesRequest(
        model="m",
        max_tokens=64,
        system="be brief",
        messages=[
            Message(
                role="user", content=[TextBlock(text="what is it?"), ImageBlock.from_path(path)]
            ),
            Message(
                role="assistant",
                content=[
                    ThinkingBlock(thinking="hm", signature="s1"),
                    TextBlock(text="let me look"),
                    ToolUseBlock(id="t1", name="look", input={"city": "Wien"}),
                ],
            ),
            Message(
                role="user",
                content=[
                    ToolResultBlock(tool_use_id="t1", content="sunny", is_error=True),
                    TextBlock(text="and?"),
                ],
            ),
            Message(role="assistant", content="done"),
        ],
        tools=[Tool(name="look", description="Look", input_schema=SCHEMA)],
        tool_choice=ToolChoice(type="any", disable_parallel_tool_use=True),
        thinking=Thinking(type="enabled", budget_tokens=2048),
        stop_sequences=["END"],
        temperature=0.2,
        top_p=0.5,
    )


def test_a_conversation_goes_neutral_and_comes_back_unchanged(tmp_path: Path) -> None:
    request = conversation(tmp_path)
    hub = to_hub(request)
    assert "vendor:anthropic" not in hub.extensions  # everything has a neutral form
    assert [m.role for m in hub.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "user",
        "assistant",
    ]
    image = hub.messages[1].content[1]  # type: ignore[index]
    assert isinstance(image, LLMMediaPart)
    assert image.path is not None
    assistant = hub.messages[2]
    assert assistant.tool_calls == (LLMToolCall(id="t1", name="look", arguments='{"city":"Wien"}'),)
    assert assistant.extensions == message_extensions(
        reasoning=[ReasoningBlock(text="hm", signature="s1", carrier="thinking")]
    )
    assert hub.messages[3].extensions == message_extensions(is_error=True)
    assert tool_choice(hub) == "required"
    assert parallel_tool_calls(hub) is False
    assert hub.parameters == {
        "max_tokens": 64,
        "temperature": 0.2,
        "top_p": 0.5,
        "stop_sequences": ["END"],
    }
    assert from_hub(hub) == request


def test_what_has_no_neutral_form_travels_under_vendor_anthropic() -> None:
    request = MessagesRequest.parse(json.dumps(FULL))
    hub = to_hub(request)
    vendor = hub.extensions["vendor:anthropic"]
    assert set(vendor) == {"metadata", "extra", "tools", "messages"}
    assert hub.parameters["top_k"] == request.top_k  # the hub's, which Gemini has too
    assert from_hub(hub) == request
    other = MessagesRequest.parse(
        json.dumps({**FULL, "thinking": {"type": "adaptive"}, "stream": False})
    )
    assert from_hub(to_hub(other)) == other
    named = MessagesRequest.parse(json.dumps({**FULL, "tool_choice": {"type": "none"}}))
    assert from_hub(to_hub(named)) == named


def test_a_message_kept_whole_with_an_image_from_disk_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "p.png"
    path.write_bytes(PNG)
    odd = Message(
        role="user",
        content=[TextBlock(text="a", extra={"cache_control": {}}), ImageBlock.from_path(path)],
    )
    request = MessagesRequest(model="m", max_tokens=1, messages=[odd])
    with pytest.raises(ValueError, match=r"messages\[0\].content\[1\]"):
        to_hub(request)


def test_a_neutral_request_from_another_dialect() -> None:
    hub = LLMRequest(
        model="m",
        messages=[
            LLMMessage(role="system", content="one"),
            LLMMessage(
                role="user",
                content=[
                    LLMTextPart(text="hi"),
                    LLMMediaPart(type="image", media_type="image/png", raw=PNG),
                ],
            ),
            LLMMessage(
                role="assistant",
                content=None,
                tool_calls=[LLMToolCall(id="c1", name="f", arguments="")],
                extensions=message_extensions(
                    reasoning=[
                        ReasoningBlock(text="r", signature="enc", carrier="summary"),
                        ReasoningBlock(text="", signature="red", carrier="thinking", redacted=True),
                    ]
                ),
            ),
            LLMMessage(role="tool", content=[LLMTextPart(text="ok")], tool_call_id="c1"),
            LLMMessage(role="tool", content="two", tool_call_id="c1"),
            LLMMessage(role="user", content="next"),
            LLMMessage(role="system", content="two"),
            LLMMessage(
                role="user",
                content=[LLMMediaPart(type="document", media_type="application/pdf", data="JVBE")],
            ),
        ],
        tools=[LLMTool(name="f", description="", parameters=SCHEMA)],
        parameters={"seed": 1},
        extensions=hub_options(
            tool_choice=("name", "f"), parallel_tool_calls=True, reasoning={"effort": "high"}
        ),
    )
    request = from_hub(hub, default_max_tokens=77)
    # an effort is no thinking beside a forced tool choice, which the API refuses with it
    assert request.max_tokens == 77
    assert request.thinking is None
    assert request.system == (TextBlock(text="one"), TextBlock(text="two"))
    assert request.tool_choice == ToolChoice(type="tool", name="f", disable_parallel_tool_use=False)
    assistant = request.messages[1]
    assert [type(b).__name__ for b in assistant.content] == [
        "RedactedThinkingBlock",
        "ToolUseBlock",
    ]
    merged = request.messages[2].content
    assert [type(b).__name__ for b in merged] == ["ToolResultBlock", "ToolResultBlock", "TextBlock"]
    assert request.messages[3].content[0].value["type"] == "document"  # type: ignore[index,union-attr]
    assert request.tools == (Tool(name="f", input_schema=SCHEMA),)
    only = LLMRequest(
        model="m",
        messages=[
            LLMMessage(role="system", content=[LLMTextPart(text="s")]),
            LLMMessage(role="user", content="u"),
        ],
        extensions=hub_options(parallel_tool_calls=False),
    )
    plain = from_hub(only)
    assert plain.system == (TextBlock(text="s"),)
    assert plain.tool_choice == ToolChoice(type="auto", disable_parallel_tool_use=True)


@pytest.mark.parametrize(
    ("message", "where"),
    [
        (
            LLMMessage(
                role="user",
                content=[LLMMediaPart(type="audio", media_type="audio/wav", data="AA==")],
            ),
            "messages[0].content[0]",
        ),
        (
            LLMMessage(
                role="assistant",
                content="",
                tool_calls=[LLMToolCall(id="c", name="f", arguments="{")],
            ),
            r"messages\[0\].tool_calls\[0\].arguments",
        ),
        (
            LLMMessage(
                role="assistant",
                content="",
                tool_calls=[LLMToolCall(id="c", name="f", arguments="[1]")],
            ),
            r"messages\[0\].tool_calls\[0\].arguments",
        ),
    ],
)
def test_what_cannot_be_carried_is_a_value_error_naming_it(message: LLMMessage, where: str) -> None:
    with pytest.raises(
        ValueError,
        match=where.replace("[", r"\[").replace("]", r"\]") if "\\" not in where else where,
    ):
        from_hub(LLMRequest(model="m", messages=[message]))


def test_a_temperature_above_one_cannot_be_carried() -> None:
    hub = LLMRequest(
        model="m", messages=[LLMMessage(role="user", content="x")], parameters={"temperature": 1.5}
    )
    with pytest.raises(ValueError, match="temperature"):
        from_hub(hub)


def test_images_from_disk_and_reasoning_budgets_come_through(tmp_path: Path) -> None:
    path = tmp_path / "p.png"
    path.write_bytes(PNG)
    hub = LLMRequest(
        model="m",
        messages=[
            LLMMessage(
                role="user",
                content=[LLMMediaPart(type="image", media_type="image/png", path=str(path))],
            )
        ],
        extensions=hub_options(reasoning={"budget_tokens": 1500}),
    )
    request = from_hub(hub)
    image = request.messages[0].content[0]
    assert isinstance(image, ImageBlock)
    assert image.image is not None
    assert image.image.path == str(path)
    assert request.thinking == Thinking(type="enabled", budget_tokens=1500)


def test_plain_turns_and_a_system_with_cache_control() -> None:
    request = MessagesRequest(
        model="m",
        max_tokens=9,
        system=[TextBlock(text="s", extra={"cache_control": {"type": "ephemeral"}})],
        messages=[
            Message(role="user", content="hi"),
            Message(role="assistant", content=[TextBlock(text="a")]),
            Message(role="user", content=[ImageBlock.from_bytes(PNG)]),
        ],
        stream=False,
    )
    hub = to_hub(request)
    assert set(hub.extensions["vendor:anthropic"]) == {"system", "messages", "stream"}
    assert from_hub(hub).body().read() == request.body().read()  # the image as its base64
    raw = hub.messages[3].content[0]  # type: ignore[index]
    assert isinstance(raw, LLMMediaPart)
    assert raw.raw == PNG
    string = MessagesRequest(
        model="m", max_tokens=1, system="s", messages=[Message(role="user", content="x")]
    )
    hub = to_hub(string)
    assert "vendor:anthropic" not in hub.extensions
    assert from_hub(hub) == string


def test_a_document_from_memory() -> None:
    hub = LLMRequest(
        model="m",
        messages=[
            LLMMessage(
                role="user",
                content=[LLMMediaPart(type="document", media_type="application/pdf", raw=b"%PDF")],
            )
        ],
    )
    block = from_hub(hub).messages[0].content[0]
    assert block.value["source"]["data"] == "JVBERg=="  # type: ignore[union-attr]


def test_crash_a_turn_of_unknown_blocks_only() -> None:
    """fuzz/corpus/anthropic_request/crash-turn-of-unknown-blocks: a request whose every block
    has no neutral form gave the hub no message at all, which it refuses."""
    doc = {
        "model": "m",
        "max_tokens": 9,
        "messages": [{"role": "user", "content": [{"type": "tozol_use", "input": {}}]}],
    }
    request = MessagesRequest.parse(json.dumps(doc))
    hub = to_hub(request)
    assert [(m.role, m.content) for m in hub.messages] == [("user", "")]
    assert from_hub(hub) == request


def test_system_blocks_stay_apart_in_every_dialect() -> None:
    """Client round 32 (F4): two ``system`` blocks (a client that marks part of its prompt
    for caching sends two) reached a Chat upstream as "in French.Keep it short.", glued."""
    from svir_proto.dialects import translate_request

    body = {
        "model": "m", "max_tokens": 8, "stream": True,
        "system": [
            {"type": "text", "text": "Always answer in French."},
            {"type": "text", "text": "Keep it short.", "cache_control": {"type": "ephemeral"}},
        ],
        "messages": [{"role": "user", "content": "hi"}],
    }  # fmt: skip
    request = MessagesRequest.parse(json.dumps(body).encode())
    chat = translate_request(request, "chat")
    assert chat.messages[0].content == "Always answer in French.\nKeep it short."
    gemini = translate_request(request, "gemini")
    assert [p.text for p in gemini.system_instruction.parts] == [
        "Always answer in French.",
        "Keep it short.",
    ]
    responses = repr(translate_request(request, "responses"))
    assert "'Always answer in French.'" in responses  # (its own items: kept apart)
    assert "'Keep it short.'" in responses
    (system,) = [m for m in translate_request(request, "llm-stream").messages if m.role == "system"]
    assert system.texts == ("Always answer in French.", "Keep it short.")
    assert LLMMessage(role="system", content="one").texts == ("one",)
    # to a Messages upstream: a block for each text of each system message (the review)
    hub = LLMRequest(
        model="m",
        messages=[
            LLMMessage(role="system", content=[LLMTextPart(text="A."), LLMTextPart(text="B.")]),
            LLMMessage(role="system", content="C."),
            LLMMessage(role="user", content="hi"),
        ],
    )
    assert [b.text for b in translate_request(hub, "messages").system] == ["A.", "B.", "C."]


@pytest.mark.parametrize(
    ("effort", "parameters", "thinking", "max_tokens"),
    [
        ("low", {}, 1024, 4096 + 1024),  # no cap asked: the default answer on top
        ("medium", {"max_tokens": 10_000}, 2048, 10_000),
        ("xhigh", {"max_tokens": 10_000}, 5000, 10_000),  # at most half of the cap
        ("high", {"max_tokens": 2000}, None, 2000),  # half is under the API's least budget
        ("high", {"temperature": 0.5}, None, 4096),  # thinking takes no temperature but 1
        ("high", {"temperature": 1}, 4096, 4096 + 4096),
        ("high", {"top_p": 0.9}, None, 4096),  # nor a top_p under 0.95 (review 36)
        ("high", {"top_p": 0.95}, 4096, 4096 + 4096),
        ("high", {"top_k": 40}, None, 4096),  # nor any top_k
        ("none", {}, None, 4096),
        ("extreme", {}, None, 4096),  # no effort any dialect has
    ],
)
def test_an_effort_asks_anthropic_for_thinking_where_the_api_takes_it(
    effort: str, parameters: dict[str, Any], thinking: int | None, max_tokens: int
) -> None:
    """Audit 36: an OpenAI client's ``reasoning_effort`` went to Anthropic as nothing."""
    hub = LLMRequest(
        model="m",
        messages=[LLMMessage(role="user", content="hi")],
        parameters=parameters,
        extensions=hub_options(reasoning={"effort": effort}),
    )
    request = from_hub(hub)
    assert request.max_tokens == max_tokens
    assert request.thinking == (
        None if thinking is None else Thinking(type="enabled", budget_tokens=thinking)
    )
    for choice, on in (("required", False), ("auto", True)):
        chosen = attrs.evolve(  # a forced tool choice takes no thinking (review 36)
            hub, extensions=hub_options(reasoning={"effort": effort}, tool_choice=choice)
        )
        assert (from_hub(chosen).thinking is not None) == (on and thinking is not None)


def test_an_effort_does_not_turn_thinking_on_after_tools_called_without_it() -> None:
    """The Messages API refuses thinking after an assistant turn that called tools without a
    thinking block first: a Chat client never has one to send back. An explicit budget is the
    client's to give; an effort only turns thinking on where the turn can go on."""
    from svir_proto.events import ReasoningBlock

    call = LLMToolCall(id="t1", name="f", arguments="{}")
    turns = [
        LLMMessage(role="user", content="weather?"),
        LLMMessage(role="assistant", content=None, tool_calls=[call]),
        LLMMessage(role="tool", content="sunny", tool_call_id="t1"),
    ]
    effort = hub_options(reasoning={"effort": "high"})
    hub = LLMRequest(model="m", messages=turns, extensions=effort)
    assert from_hub(hub).thinking is None
    signed = message_extensions(
        reasoning=[ReasoningBlock(text="hm", signature="s", carrier="thinking")]
    )
    turns[1] = LLMMessage(role="assistant", content=None, tool_calls=[call], extensions=signed)
    hub = LLMRequest(model="m", messages=turns, extensions=effort)
    assert from_hub(hub).thinking == Thinking(type="enabled", budget_tokens=4096)
    said = LLMRequest(
        model="m",
        messages=[
            *turns[:1],
            LLMMessage(role="assistant", content="hi"),
            LLMMessage(role="user", content="more"),
        ],
        extensions=effort,
    )
    assert from_hub(said).thinking == Thinking(type="enabled", budget_tokens=4096)


def test_thinking_is_a_budget_and_a_summary_to_the_other_dialects() -> None:
    """Anthropic shows its thinking: in the hub, its budget with a summary, so that Gemini is
    asked for its thoughts (``includeThoughts``; audit 36: none came back) and OpenAI for the
    budget's effort."""
    from svir_proto.gemini.hub import from_hub as to_gemini
    from svir_proto.hub import effort_for, reasoning_options
    from svir_proto.translate import llm_to_openai

    request = MessagesRequest(
        model="m",
        max_tokens=4000,
        messages=[Message(role="user", content="hi")],
        thinking=Thinking(type="enabled", budget_tokens=2048),
    )
    hub = to_hub(request)
    assert reasoning_options(hub) == {"budget_tokens": 2048, "summary": "auto"}
    config = to_gemini(hub).generation_config
    assert config is not None
    assert config.thinking_config is not None
    assert (config.thinking_config.thinking_budget, config.thinking_config.include_thoughts) == (
        2048,
        True,
    )
    assert llm_to_openai(hub).reasoning_effort == "medium"
    assert [effort_for({"budget_tokens": n}) for n in (-1, 0, 1024, 1025, 2048, 2049)] == [
        None,
        None,  # no thinking: no effort (one sent to a model that does not reason is refused)
        "low",
        "medium",
        "medium",
        "high",
    ]
    assert effort_for({"budget_tokens": True}) is None  # not a count
    assert effort_for({"effort": "low", "budget_tokens": 9000}) == "low"  # said, not guessed
    assert effort_for({}) is None
