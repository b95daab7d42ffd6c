"""Responses requests: checked at construction, exact bodies, files from disk, parsing."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from svir_proto.body import BodyChangedError
from svir_proto.llmstream import RequestError
from svir_proto.openai import Endpoint, ImagePart
from svir_proto.responses import (
    RESPONSES_PATH,
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
    responses_headers,
    responses_target,
)
from tests.helpers import finishes_linearly

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d4944415478da63f8ffff3f0005fe02fea7d6a4b000000000"
    "49454e44ae426082"
)


def sent(request: ResponsesRequest, piece_size: int = 7) -> dict[str, Any]:
    body = request.body(piece_size=piece_size)
    raw = b"".join(body)
    assert len(raw) == body.content_length
    assert body.content_type == "application/json"
    doc: dict[str, Any] = json.loads(raw)
    return doc


def every_field(tmp_path: Path) -> ResponsesRequest:
    image = tmp_path / "dot.png"
    image.write_bytes(PNG)
    pdf = tmp_path / "notes.pdf"
    pdf.write_bytes(b"%PDF-1.4 tiny")
    return ResponsesRequest(
        model="gpt-5-mini",
        instructions="Be brief.",
        input=[
            InputMessage(role="developer", content="Answer in German."),
            InputMessage(
                role="user",
                content=[
                    InputText(text="What is this?"),
                    InputImage.from_path(image, detail="low"),
                    InputImage.from_bytes(PNG),
                    InputImage(file_id="file-1"),
                    InputImage(image_url="https://example.org/a.png"),
                    InputFile.from_path(pdf, "application/pdf"),
                    InputFile(file_id="file-2"),
                    OtherPart(data={"type": "input_audio", "input_audio": {"data": "AAAA"}}),
                ],
            ),
            ReasoningItem(id="rs_1", summary=["thought"], encrypted_content="enc", content=["raw"]),
            InputMessage(
                role="assistant",
                content=[OutputText(text="Ein Punkt."), OutputRefusal(refusal="no")],
                id="msg_1",
                status="completed",
                phase="final_answer",
            ),
            FunctionCall(call_id="c1", name="look", arguments="{}", id="fc_1", status="completed"),
            FunctionCallOutput(call_id="c1", output=[InputText(text="42")]),
            OtherItem(data={"type": "item_reference", "id": "msg_0"}),
        ],
        tools=[
            FunctionTool(name="look", description="d", parameters={"type": "object"}, strict=True),
            OtherTool(data={"type": "web_search"}),
        ],
        tool_choice=FunctionChoice("look"),
        max_output_tokens=100,
        temperature=0.2,
        top_p=0.9,
        reasoning=ReasoningConfig(effort="low", summary="auto"),
        parallel_tool_calls=False,
        store=False,
        include=["reasoning.encrypted_content"],
        previous_response_id="resp_0",
        metadata={"user": "u1"},
        text={"format": {"type": "json_schema", "name": "x", "schema": {"type": "object"}}},
        extra={"truncation": "auto", "service_tier": "flex"},
    )


def test_every_field_is_sent_with_an_exact_length(tmp_path: Path) -> None:
    r = every_field(tmp_path)
    doc = sent(r)
    assert doc["input"][1]["content"][1] == {
        "type": "input_image",
        "image_url": "data:image/png;base64," + base64.b64encode(PNG).decode(),
        "detail": "low",
    }
    assert doc["input"][1]["content"][5]["file_data"].startswith(
        "data:application/pdf;base64,JVBERi"
    )
    assert doc["input"][1]["content"][5]["filename"] == "notes.pdf"
    assert doc["tool_choice"] == {"type": "function", "name": "look"}
    assert (doc["truncation"], doc["stream"], doc["store"]) == ("auto", True, False)
    assert r.tool_names == frozenset({"look"})
    assert r.path == RESPONSES_PATH == "/v1/responses"
    again = ResponsesRequest.parse(json.dumps(doc))
    assert sent(again) == doc
    assert again.input[1].content[1].image is None  # a data URL now


def test_a_parsed_request_is_the_request(tmp_path: Path) -> None:
    r = every_field(tmp_path)
    raw = r.body().read()
    parsed = ResponsesRequest.parse(raw)
    assert parsed.body().read() == raw
    assert parsed.model == r.model
    assert parsed.input[2] == r.input[2]
    assert parsed.tool_choice == r.tool_choice
    assert parsed.extra == r.extra


def test_a_file_that_changes_while_sending_is_refused(tmp_path: Path) -> None:
    image = tmp_path / "dot.png"
    image.write_bytes(PNG)
    body = ResponsesRequest(
        model="m", input=[InputMessage(role="user", content=[InputImage.from_path(image)])]
    ).body()
    image.write_bytes(PNG + b"more")
    with pytest.raises(BodyChangedError):
        body.read()


def test_easy_messages_and_unknown_keys_are_kept() -> None:
    raw = {
        "model": "m",
        "input": [{"role": "user", "content": "hi", "x-trace": 1}],
        "stream": False,
        "user": "abc",
        "tool_choice": {"type": "allowed_tools", "mode": "auto", "tools": []},
        "reasoning": {"effort": "high", "generate_summary": "auto"},
        "tools": [{"type": "function", "name": "f", "x": 1}],
    }
    r = ResponsesRequest.parse(json.dumps(raw))
    assert r.stream is False
    assert r.input[0].extra == {"x-trace": 1}
    assert isinstance(r.tool_choice, OtherChoice)
    assert r.reasoning.extra == {"generate_summary": "auto"}
    assert r.tools[0].extra == {"x": 1}
    doc = sent(r)
    assert doc["user"] == "abc"
    assert doc["input"][0] == {"type": "message", "role": "user", "content": "hi", "x-trace": 1}
    assert ResponsesRequest.parse(b'{"model":"m"}').input == ()
    assert ResponsesRequest.parse(b'{"model":"m","input":"hi","stream":true}').stream


@pytest.mark.parametrize(
    ("doc", "path"),
    [
        ("[]", "$"),
        ('{"model":""}', "$.model"),
        ('{"model":"m","input":7}', "$.input"),
        ('{"model":"m","input":[7]}', "$.input[0]"),
        ('{"model":"m","input":[{"type":3}]}', "$.input[0].type"),
        ('{"model":"m","input":[{"role":"boss","content":"x"}]}', "$.input[0].role"),
        ('{"model":"m","input":[{"role":"user","content":7}]}', "$.input[0].content"),
        (
            '{"model":"m","input":[{"role":"user","content":[{"type":"output_text","text":"x"}]}]}',
            "$.input[0].content[0].type",
        ),
        ('{"model":"m","input":[{"role":"user","content":[7]}]}', "$.input[0].content[0]"),
        (
            '{"model":"m","input":[{"role":"user","content":[{"type":"input_text"}]}]}',
            "$.input[0].content[0].text",
        ),
        (
            '{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"x","annotations":1}]}]}',
            "$.input[0].content[0].annotations",
        ),
        (
            '{"model":"m","input":[{"role":"assistant","content":[{"type":"refusal"}]}]}',
            "$.input[0].content[0].refusal",
        ),
        (
            '{"model":"m","input":[{"role":"user","content":[{"type":"input_image"}]}]}',
            "$.input[0].content[0]",
        ),
        (
            '{"model":"m","input":[{"role":"user","content":[{"type":"input_image","file_id":""}]}]}',
            "$.input[0].content[0].file_id",
        ),
        (
            '{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"ftp://x"}]}]}',
            "$.input[0].content[0].image_url",
        ),
        (
            '{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:text/plain;base64,AA=="}]}]}',
            "$.input[0].content[0].image_url",
        ),
        (
            '{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,@"}]}]}',
            "$.input[0].content[0].image_url",
        ),
        (
            '{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":7}]}]}',
            "$.input[0].content[0].image_url",
        ),
        (
            '{"model":"m","input":[{"role":"user","content":[{"type":"input_file"}]}]}',
            "$.input[0].content[0]",
        ),
        (
            '{"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_data":7}]}]}',
            "$.input[0].content[0].file_data",
        ),
        (
            '{"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_data":"data:x"}]}]}',
            "$.input[0].content[0].file_data",
        ),
        (
            '{"model":"m","input":[{"role":"user","content":"x","status":"done"}]}',
            "$.input[0].status",
        ),
        ('{"model":"m","input":[{"role":"user","content":"x","id":7}]}', "$.input[0].id"),
        (
            '{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f"}]}',
            "$.input[0].arguments",
        ),
        (
            '{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":7}]}',
            "$.input[0].output",
        ),
        (
            '{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"refusal","refusal":"x"}]}]}',
            "$.input[0].output[0].type",
        ),
        ('{"model":"m","input":[{"type":"reasoning","summary":{}}]}', "$.input[0].summary"),
        ('{"model":"m","input":[{"type":"reasoning","summary":[7]}]}', "$.input[0].summary[0]"),
        (
            '{"model":"m","input":[{"type":"reasoning","content":[{"type":"summary_text","text":"x"}]}]}',
            "$.input[0].content[0].type",
        ),
        (
            '{"model":"m","input":[{"type":"reasoning","encrypted_content":7}]}',
            "$.input[0].encrypted_content",
        ),
        ('{"model":"m","instructions":7}', "$.instructions"),
        ('{"model":"m","tools":{}}', "$.tools"),
        ('{"model":"m","tools":[7]}', "$.tools[0]"),
        ('{"model":"m","tools":[{"name":"f"}]}', "$.tools[0].type"),
        ('{"model":"m","tools":[{"type":"function","name":"a b"}]}', "$.tools[0].name"),
        (
            '{"model":"m","tools":[{"type":"function","name":"f"},{"type":"function","name":"f"}]}',
            "$.tools[1].name",
        ),
        ('{"model":"m","tools":[{"type":"function","name":"f","strict":1}]}', "$.tools[0].strict"),
        (
            '{"model":"m","tools":[{"type":"function","name":"f","parameters":[]}]}',
            "$.tools[0].parameters",
        ),
        ('{"model":"m","tool_choice":"always"}', "$.tool_choice"),
        ('{"model":"m","tool_choice":{"name":"f"}}', "$.tool_choice.type"),
        ('{"model":"m","tool_choice":{"type":"function"}}', "$.tool_choice.name"),
        ('{"model":"m","max_output_tokens":0}', "$.max_output_tokens"),
        ('{"model":"m","temperature":2.5}', "$.temperature"),
        ('{"model":"m","top_p":true}', "$.top_p"),
        ('{"model":"m","reasoning":[]}', "$.reasoning"),
        ('{"model":"m","reasoning":{"effort":"max"}}', "$.reasoning.effort"),
        ('{"model":"m","reasoning":{"summary":"long"}}', "$.reasoning.summary"),
        ('{"model":"m","store":"yes"}', "$.store"),
        ('{"model":"m","include":[1]}', "$.include"),
        ('{"model":"m","previous_response_id":1}', "$.previous_response_id"),
        ('{"model":"m","metadata":[]}', "$.metadata"),
        ('{"model":"m","metadata":{"k":1}}', "$.metadata['k']"),
        ('{"model":"m","text":1}', "$.text"),
        ('{"model":"m","text":{"format":1}}', "$.text.format"),
        ('{"model":"m","text":{"format":{"type":"yaml"}}}', "$.text.format.type"),
        (
            '{"model":"m","text":{"format":{"type":"json_schema","name":"x"}}}',
            "$.text.format.schema",
        ),
        (
            '{"model":"m","input":[{"type":"message","role":"user","content":"x","phase":1}]}',
            "$.input[0].phase",
        ),
    ],
)
def test_parse_names_the_path(doc: str, path: str) -> None:
    with pytest.raises(RequestError) as info:
        ResponsesRequest.parse(doc)
    assert info.value.path == path


def test_parse_refuses_what_is_not_json_and_long_metadata() -> None:
    with pytest.raises(RequestError, match="not JSON"):
        ResponsesRequest.parse(b"{")
    many = {str(i): "v" for i in range(17)}
    with pytest.raises(RequestError, match="at most 16 pairs"):
        ResponsesRequest.parse(json.dumps({"model": "m", "metadata": many}))
    with pytest.raises(RequestError, match="at most 64"):
        ResponsesRequest.parse(json.dumps({"model": "m", "metadata": {"k" * 65: "v"}}))


def test_construction_names_the_field() -> None:
    with pytest.raises(ValueError, match=r"^input\[0\]\.content\[0\]\.image_url: must be an http"):
        ResponsesRequest(
            model="m", input=[InputMessage(role="user", content=[InputImage(image_url="x")])]
        )
    with pytest.raises(ValueError, match=r"^model: a non-empty string"):
        ResponsesRequest(model="", input="hi")
    with pytest.raises(ValueError, match=r"^tool_choice.name: 'g' is not a function in tools"):
        ResponsesRequest(model="m", tools=[FunctionTool(name="f")], tool_choice=FunctionChoice("g"))
    with pytest.raises(ValueError, match=r"extra: \['model'\]"):
        ResponsesRequest(model="m", extra={"model": "x"})
    with pytest.raises(TypeError, match=r"input\[0\] must be an item"):
        ResponsesRequest(model="m", input=["hi"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"input\[0\]\.content\[0\] must be a part"):
        ResponsesRequest(model="m", input=[InputMessage(role="user", content=["hi"])])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"input\[0\]\.output\[0\] must be a part"):
        ResponsesRequest(model="m", input=[FunctionCallOutput(call_id="c", output=[1])])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"tools\[0\]"):
        ResponsesRequest(model="m", tools=["f"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="reasoning must be"):
        ResponsesRequest(model="m", reasoning={"effort": "low"})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="exactly one of image_url, file_id and image"):
        InputImage()
    with pytest.raises(TypeError, match="ImagePart"):
        InputImage(image=b"png")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="exactly one of file_id"):
        InputFile(file_id="a", file_url="b")
    with pytest.raises(ValueError, match="needs its media_type"):
        InputFile(path="x.pdf")
    with pytest.raises(ValueError, match="max_output_tokens"):
        ResponsesRequest(model="m", max_output_tokens=-1)


def test_message_text_and_the_endpoint() -> None:
    m = InputMessage(
        role="assistant",
        content=[OutputText(text="a"), OutputRefusal(refusal="x"), OutputText(text="b")],
    )
    assert m.text == "ab"
    assert InputMessage(role="user", content="s").text == "s"
    ep = Endpoint.parse("http://127.0.0.1:8080", api_key="sk-1")
    assert responses_target(ep) == "/v1/responses"
    assert responses_headers("sk-1") == [
        ("Accept", "text/event-stream"),
        ("Authorization", "Bearer sk-1"),
    ]
    assert responses_headers(stream=False) == [("Accept", "application/json")]
    with pytest.raises(ValueError, match="single line"):
        responses_headers("a\nb")
    image = ImagePart.from_bytes(PNG)
    assert InputImage(image=image).image is image


def test_the_least_forms_of_each_item() -> None:
    r = ResponsesRequest(
        model="m",
        input=[
            FunctionCall(call_id="c", name="f", arguments="{}"),
            FunctionCallOutput(call_id="c", output="done", id="fco_1", status="completed"),
            ReasoningItem(status="completed"),
            InputMessage(role="user", content=[InputFile(file_data="JVBERi0=", filename="a.pdf")]),
        ],
        tools=[FunctionTool(name="f")],
        tool_choice="auto",
        text={"verbosity": "low"},
    )
    doc = sent(r)
    assert doc["input"][0] == {
        "type": "function_call",
        "call_id": "c",
        "name": "f",
        "arguments": "{}",
    }
    assert doc["input"][1]["status"] == "completed"
    assert doc["input"][2] == {"type": "reasoning", "summary": [], "status": "completed"}
    assert doc["tool_choice"] == "auto"
    assert ResponsesRequest.parse(json.dumps(doc)).text == {"verbosity": "low"}
    fmt = {"model": "m", "text": {"format": {"type": "text"}}}
    assert ResponsesRequest.parse(json.dumps(fmt)).text == fmt["text"]


def test_an_image_part_of_chat_completions_keeps_its_url_and_detail() -> None:
    r = ResponsesRequest(
        model="m",
        input=[
            InputMessage(
                role="user",
                content=[
                    InputImage(image=ImagePart.from_bytes(PNG, detail="high")),
                    InputImage(image=ImagePart.from_url("https://example.org/a.png"), detail="low"),
                ],
            )
        ],
    )
    first, second = sent(r)["input"][0]["content"]
    assert first["detail"] == "high"
    assert first["image_url"].startswith("data:image/png;base64,iVBOR")
    assert second == {
        "type": "input_image",
        "image_url": "https://example.org/a.png",
        "detail": "low",
    }


DATA_URLS = r"""
import json
from svir_proto.llmstream import RequestError
from svir_proto.responses import ResponsesRequest

for url in (
    "data:a/b" + (";a=" + "a=" * 6) * 40 + "X",  # parameters whose names could end anywhere
    "data:" + "a/" * 20_000,  # a type whose "/" could be any of them
):
    part = {"type": "input_image", "image_url": url}
    doc = {"model": "m", "input": [{"role": "user", "content": [part]}]}
    try:
        ResponsesRequest.parse(json.dumps(doc))
    except RequestError:
        pass
    else:
        raise AssertionError("a data URL that is not base64 data was taken")
"""


def test_a_data_url_is_refused_without_backtracking() -> None:
    """Attack 27: ``;a=a=a=...`` parameters (``=`` could end each name at any of them) took
    minutes for 300 bytes; a type of repeated ``a/`` was quadratic."""
    finishes_linearly(DATA_URLS, "a data URL")
