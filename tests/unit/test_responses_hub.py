"""The Responses adapters of the hub: the neutral fields, the records beside them, and what
does not carry."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import attrs
import pytest

from svir_proto import hub
from svir_proto.events import ReasoningBlock
from svir_proto.llmstream import (
    LLMMediaPart,
    LLMMessage,
    LLMRequest,
    LLMTextPart,
    LLMTool,
    LLMToolCall,
)
from svir_proto.responses import (
    FunctionCall,
    FunctionCallOutput,
    FunctionChoice,
    FunctionTool,
    InputFile,
    InputImage,
    InputMessage,
    InputText,
    OtherChoice,
    OtherItem,
    OtherPart,
    OtherTool,
    OutputRefusal,
    OutputText,
    ReasoningConfig,
    ReasoningItem,
    ResponsesRequest,
)
from svir_proto.responses.hub import RESPONSES_EXTENSION, from_hub, to_hub

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d4944415478da63f8ffff3f0005fe02fea7d6a4b000000000"
    "49454e44ae426082"
)
B64 = base64.b64encode(PNG).decode()


def round_trip(r: ResponsesRequest) -> LLMRequest:
    h = to_hub(r)
    lost: list[str] = []
    assert from_hub(h, lost=lost) == r
    assert lost == []
    again = LLMRequest.parse(h.body().read())  # through the wire too: the records are JSON
    assert from_hub(again).body().read() == r.body().read()
    return h


def test_a_plain_conversation_is_neutral_with_no_records() -> None:
    r = ResponsesRequest(
        model="m",
        instructions="Be brief.",
        input=[
            InputMessage(role="user", content="Weather in Vienna?"),
            FunctionCall(call_id="c1", name="get_weather", arguments='{"city":"Vienna"}'),
            FunctionCallOutput(call_id="c1", output="24C"),
        ],
        tools=[FunctionTool(name="get_weather", description="", parameters={"type": "object"})],
        tool_choice="required",
        max_output_tokens=64,
        temperature=0.0,
        top_p=1.0,
        parallel_tool_calls=True,
        reasoning=ReasoningConfig(effort="low", summary="concise"),
        metadata={"user": "u"},
    )
    h = round_trip(r)
    system, user, assistant, tool = h.messages
    assert (system.role, system.content) == ("system", "Be brief.")
    assert (user.role, user.content, user.extensions) == ("user", "Weather in Vienna?", {})
    assert assistant.content is None
    assert assistant.tool_calls == (
        LLMToolCall(id="c1", name="get_weather", arguments='{"city":"Vienna"}'),
    )
    assert (tool.role, tool.tool_call_id, tool.content) == ("tool", "c1", "24C")
    assert h.tools == (LLMTool(name="get_weather", description="", parameters={"type": "object"}),)
    assert h.parameters == {"max_tokens": 64, "temperature": 0.0, "top_p": 1.0}
    assert hub.tool_choice(h) == "required"
    assert hub.parallel_tool_calls(h) is True
    assert hub.reasoning_options(h) == {"effort": "low", "summary": "concise"}
    assert h.metadata == {"user": "u"}
    # a tool that does not say is strict (the API's default), which no other dialect's is
    assert h.extensions[RESPONSES_EXTENSION] == {"strict_unsaid": ["get_weather"], "store": None}


def test_what_has_no_neutral_form_travels_in_records(tmp_path: Path) -> None:
    image = tmp_path / "dot.png"
    image.write_bytes(PNG)
    r = ResponsesRequest(
        model="m",
        input=[
            InputMessage(role="developer", content="Answer in German.", id="msg_d"),
            InputMessage(
                role="user",
                content=[
                    InputText(text="Look:", extra={"cache": 1}),
                    InputImage.from_path(image, detail="high"),
                    InputImage.from_bytes(PNG),
                    InputImage(file_id="file-1"),
                    InputImage(image_url=f"data:image/png;base64,{B64}"),
                    InputFile.from_path(image, "application/pdf", filename="x.pdf"),
                    InputFile(file_data=f"data:application/pdf;base64,{B64}", filename="y.pdf"),
                    OtherPart(data={"type": "input_audio", "x": 1}),
                ],
            ),
            InputMessage(role="user", content=[]),
            ReasoningItem(id="rs_1", summary=["one", "two"], encrypted_content="enc"),
            InputMessage(
                role="assistant",
                content=[
                    OutputText(text="Hallo", annotations=[{"type": "url_citation"}]),
                    OutputRefusal(refusal="no"),
                ],
                id="msg_1",
                status="completed",
                phase="final_answer",
            ),
            FunctionCall(call_id="c1", name="f", arguments="{}", id="fc_1", status="completed"),
            OtherItem(data={"type": "web_search_call", "id": "ws_1", "status": "completed"}),
            FunctionCallOutput(call_id="c1", output=[InputText(text="ok")], id="fco_1"),
            FunctionCallOutput(call_id="c2", output=[OtherPart(data={"type": "input_audio"})]),
            OtherItem(data={"type": "item_reference", "id": "msg_0"}),
        ],
        tools=[FunctionTool(name="f", strict=True), OtherTool(data={"type": "web_search"})],
        tool_choice=OtherChoice(data={"type": "allowed_tools", "mode": "auto", "tools": []}),
        reasoning=ReasoningConfig(extra={"generate_summary": "auto"}),
        store=False,
        include=["reasoning.encrypted_content"],
        previous_response_id="resp_0",
        text={"format": {"type": "text"}},
        stream=False,
        extra={"truncation": "auto"},
    )
    h = round_trip(r)
    developer, user, empty, turn, _, out2, ref = h.messages
    assert developer.role == "system"
    assert [type(p).__name__ for p in user.content] == [
        "LLMTextPart",
        "LLMMediaPart",
        "LLMMediaPart",
        "LLMMediaPart",
        "LLMMediaPart",
        "LLMMediaPart",
    ]
    assert user.content[1].path == str(image)  # still read from disk
    assert empty.content == ""
    assert turn.content == "Hallo\nno"  # (fidelity 51 N6: a refusal goes as text)
    (block,) = hub.message_reasoning(turn)
    assert block == ReasoningBlock(
        text="one\n\ntwo", signature="enc", carrier="summary", item_id="rs_1"
    )
    assert out2.content == ""
    assert ref.content == ""
    record = h.extensions[RESPONSES_EXTENSION]
    assert (record["store"], record["previous_response_id"], record["stream"]) == (
        False,
        "resp_0",
        False,
    )
    assert record["reasoning_extra"] == {"generate_summary": "auto"}
    assert hub.tool_choice(h) is None


def test_an_empty_reasoning_object_and_a_request_id() -> None:
    r = ResponsesRequest(model="m", input="hi", reasoning=ReasoningConfig())
    round_trip(r)
    h = to_hub(r, request_id="rid-1")
    assert h.request_id == "rid-1"
    assert from_hub(h) == r
    with_id = ResponsesRequest(model="m", input="hi", metadata={"request_id": "mine"})
    assert to_hub(with_id, request_id="other").request_id == "mine"
    assert from_hub(to_hub(with_id, request_id="other")) == with_id


def test_a_request_with_nothing_to_say_has_no_neutral_form() -> None:
    with pytest.raises(ValueError, match="no input and no instructions"):
        to_hub(ResponsesRequest(model="m"))
    assert from_hub(to_hub(ResponsesRequest(model="m", instructions="x"))).input == ()


def test_a_changed_message_is_read_from_its_neutral_fields() -> None:
    r = ResponsesRequest(
        model="m",
        input=[
            InputMessage(role="user", content=[InputText(text="a"), InputImage(file_id="f")]),
            InputMessage(role="assistant", content=[OutputText(text="old")], id="msg_1"),
        ],
    )
    h = to_hub(r)
    user, turn = h.messages
    edited = attrs.evolve(
        h,
        messages=[
            attrs.evolve(user, content=(LLMTextPart(text="a"), LLMTextPart(text="b"))),
            attrs.evolve(turn, content="new"),
        ],
    )
    back = from_hub(edited)
    assert back.input[0].content == (InputText(text="a"), InputText(text="b"))
    assert back.input[1] == InputMessage(role="assistant", content=[OutputText(text="new")])
    replaced = attrs.evolve(h, messages=[attrs.evolve(user, content="plain"), turn])
    assert from_hub(replaced).input[0].content == "plain"


def test_malformed_records_are_not_trusted() -> None:
    ours = RESPONSES_EXTENSION
    h = LLMRequest(
        model="m",
        messages=[
            LLMMessage(
                role="user",
                content=(LLMTextPart(text="a"),),
                extensions={ours: {"parts": [{"raw": {"type": "input_image"}}, {"at": 0}]}},
            ),
            LLMMessage(
                role="user", content=(LLMTextPart(text="b"),), extensions={ours: {"parts": [7]}}
            ),
            LLMMessage(
                role="assistant",
                content="c",
                extensions={ours: {"items": [{"type": "function_call"}]}},
            ),
        ],
        tools=[LLMTool(name="f", description="", parameters={})],
        extensions={
            ours: {
                "tools": [{"type": "function", "name": "a b"}],
                "tool_choice": 7,
                "include": ["x", 1],
                "text": "no",
                "store": "no",
            }
        },
    )
    back = from_hub(h)
    assert [i.content for i in back.input] == [
        (InputText(text="a"),),
        (InputText(text="b"),),
        (OutputText(text="c"),),
    ]
    assert back.tools == (FunctionTool(name="f", description="", parameters={}, strict=False),)
    assert (back.tool_choice, back.include, back.text, back.store) == (None, ("x",), None, None)


def test_another_dialects_request_and_what_it_cannot_carry(tmp_path: Path) -> None:
    doc = tmp_path / "notes.txt"
    doc.write_text("notes")
    thinking = ReasoningBlock(text="hm", signature="sig", carrier="thinking")
    mine = ReasoningBlock(text="a\n\nb", signature="enc", carrier="summary", item_id="rs_9")
    h = LLMRequest(
        model="claude",
        messages=[
            LLMMessage(role="system", content="sys"),
            LLMMessage(
                role="user",
                content=(
                    LLMMediaPart(type="image", media_type="image/png", raw=PNG),
                    LLMMediaPart(type="image", media_type="image/png", data=B64),
                    LLMMediaPart(type="document", media_type="text/plain", path=str(doc)),
                    LLMMediaPart(type="document", media_type="application/pdf", raw=b"%PDF"),
                    LLMMediaPart(type="audio", media_type="audio/wav", data="AAAA"),
                ),
            ),
            LLMMessage(
                role="assistant",
                content="",
                tool_calls=[LLMToolCall(id="t1", name="f", arguments="{}")],
                extensions=hub.message_extensions(reasoning=[thinking, mine]),
            ),
            LLMMessage(
                role="tool",
                content="boom",
                tool_call_id="t1",
                extensions=hub.message_extensions(is_error=True),
            ),
            LLMMessage(role="assistant", content="done"),
        ],
        tools=[LLMTool(name="f", description="d", parameters={"type": "object"})],
        parameters={"max_tokens": 10, "stop_sequences": [], "top_k": 5},
        metadata={"user_id": 7, "ok": "yes"},
        extensions=hub.hub_options(
            tool_choice=("name", "f"),
            reasoning={"effort": "max", "summary": "always", "budget_tokens": 1024},
        ),
    )
    lost: list[str] = []
    r = from_hub(h, lost=lost)
    system, user, reasoning, call, output, answer = r.input
    assert system == InputMessage(role="system", content="sys")
    assert [type(p).__name__ for p in user.content] == [
        "InputImage",
        "InputImage",
        "InputFile",
        "InputFile",
    ]
    assert user.content[0].image is not None
    assert user.content[1].image_url == f"data:image/png;base64,{B64}"
    assert (user.content[2].path, user.content[2].filename) == (str(doc), "notes.txt")
    assert user.content[3].file_data == "data:application/pdf;base64,JVBERg=="
    assert reasoning == ReasoningItem(id="rs_9", summary=["a", "b"], encrypted_content="enc")
    assert call == FunctionCall(call_id="t1", name="f", arguments="{}")
    assert output == FunctionCallOutput(call_id="t1", output='{"error": "boom"}')  # (audit 36)
    assert answer == InputMessage(role="assistant", content=[OutputText(text="done")])
    assert r.tool_choice == FunctionChoice("f")
    assert (r.max_output_tokens, r.reasoning, r.metadata) == (10, None, {"ok": "yes"})
    assert lost == [
        "messages[1].content[4]: a audio part (audio/wav) has no form in the Responses API",
        "messages[2]: reasoning another vendor signed: not sent",
        "parameters.stop_sequences has no field in the Responses API: not sent",
        "parameters.top_k has no field in the Responses API: not sent",
        "reasoning effort 'max' is not one the Responses API takes: not sent",
        "reasoning summary 'always' is not one the Responses API takes: not sent",
        "metadata['user_id'] is not a short string pair: not sent",
    ]
    r.body().read()  # a request the API takes
    budget = attrs.evolve(h, extensions=hub.hub_options(reasoning={"budget_tokens": 3000}))
    assert from_hub(budget).reasoning == ReasoningConfig(effort="high")  # (audit 36: lost)
    stops = attrs.evolve(h, parameters={"max_tokens": 10, "stop_sequences": ["\n"]})
    with pytest.raises(ValueError, match=r"parameters\.stop_sequences"):
        from_hub(stops)  # the answer would go on past them: refused, not dropped


def test_a_reasoning_text_block_and_a_named_choice_that_is_not_declared() -> None:
    block = ReasoningBlock(text="raw", signature="", carrier="reasoning_text")
    h = LLMRequest(
        model="m",
        messages=[
            LLMMessage(
                role="assistant", content="x", extensions=hub.message_extensions(reasoning=[block])
            )
        ],
        extensions=hub.hub_options(tool_choice=("name", "ghost")),
    )
    with pytest.raises(ValueError, match="ghost"):
        from_hub(h)
    r = from_hub(attrs.evolve(h, extensions={}))
    assert r.input[0] == ReasoningItem(content=["raw"])


def test_a_failed_tool_result_that_is_not_text_is_said_lost() -> None:
    shot = LLMMediaPart(type="image", media_type="image/png", raw=PNG)
    h = LLMRequest(
        model="m",
        messages=[
            LLMMessage(
                role="tool",
                content=(LLMTextPart(text="crashed"), shot),
                tool_call_id="t1",
                extensions=hub.message_extensions(is_error=True),
            )
        ],
    )
    lost: list[str] = []
    (output,) = from_hub(h, lost=lost).input
    assert [type(p).__name__ for p in output.output] == ["InputText", "InputImage"]
    assert lost == [
        "messages[0]: a tool result's is_error mark has no field in the Responses API, "
        "and its result is not text"
    ]


def test_the_rarer_records_and_a_sidecar_that_lies() -> None:
    r = ResponsesRequest(
        model="m",
        input=[
            InputMessage(role="user", content="x", phase="commentary", extra={"k": 1}),
            InputMessage(
                role="user", content=[InputFile(path="/dev/null", media_type="text/plain")]
            ),
            InputMessage(
                role="user",
                content=[
                    InputFile(file_id="file-3"),
                    InputFile(file_data="JVBERg==", filename="raw.pdf"),
                ],
            ),
        ],
        tools=[FunctionTool(name="f", description="", parameters={})],
        tool_choice=FunctionChoice("f"),
    )
    h = round_trip(r)
    assert hub.tool_choice(h) == ("name", "f")
    ours = RESPONSES_EXTENSION
    audio = LLMMediaPart(type="audio", media_type="audio/wav", data="AAAA")
    lying = LLMRequest(
        model="m",
        messages=[
            LLMMessage(role="user", content=(audio,), extensions={ours: {"parts": [{"at": 0}]}}),
            LLMMessage(
                role="user",
                content=(LLMTextPart(text="t"),),
                extensions={ours: {"parts": [{"at": 0}, 7]}},
            ),
        ],
    )
    lost: list[str] = []
    back = from_hub(lying, lost=lost)
    assert [m.content for m in back.input] == [(), (InputText(text="t"),)]
    assert lost == [
        "messages[0].content[0]: a audio part (audio/wav) has no form in the Responses API"
    ]


@pytest.mark.parametrize(
    ("doc", "where"),
    [
        ({"input": "and the second one?", "previous_response_id": "resp_1"},
         "$.previous_response_id"),
        ({"input": [{"role": "user", "content": [
            {"type": "input_text", "text": "what is in it?"},
            {"type": "input_image", "file_id": "file-1"}]}]},
         "$.input[0].content[1].file_id"),
        ({"input": [{"role": "user", "content": [{"type": "input_file", "file_id": "file-2"}]}]},
         "$.input[0].content[0].file_id"),
        ({"input": [{"role": "user", "content": "hi"}, {"type": "item_reference", "id": "msg_1"}]},
         "$.input[1]"),
        # an item only the Responses API has went on as an empty assistant turn (client
        # round 30, F1): a built-in tool's call, and a type nobody knows
        ({"input": [{"type": "web_search_call", "id": "ws_1", "status": "completed"},
                    {"role": "user", "content": "and?"}]},
         "$.input[0]"),
        ({"input": [{"role": "user", "content": "hi"}, {"type": "bogus_item"}]},
         "$.input[1]"),
    ],
)  # fmt: skip
def test_a_reference_to_the_servers_state_cannot_go_to_another_dialect(
    doc: dict[str, object], where: str
) -> None:
    """Attack 28: these went to a chat, Messages or Gemini upstream without what they refer
    to (the model answered without the history, or described an image it never got)."""
    from svir_proto.dialects import translate_request

    request = ResponsesRequest.parse(json.dumps({"model": "m", **doc}))
    assert hub.stateful(to_hub(request)) == ("responses", (where,))
    for target in ("chat", "messages", "gemini", "llm-stream"):
        with pytest.raises(ValueError, match=re.escape(where)) as refused:
            translate_request(request, target)
        # client round 32 (F2): the AI SDK refers to its stored items unless told otherwise
        assert "providerOptions.openai.store" in str(refused.value)
    assert translate_request(request, "responses") is request
    assert hub.stateful(to_hub(ResponsesRequest.parse(b'{"model":"m","input":"hi"}'))) is None
