"""GeminiRequest and its parts: checked at construction, exact-length bodies with media from
disk, the parser's rules and paths; the endpoint's targets and headers."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest

from svir_proto import BodyChangedError, RequestError
from svir_proto.events import Completion, ReasoningBlock, ToolCall
from svir_proto.gemini import (
    API_KEY_HEADER,
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
    headers,
    is_target,
    parse_target,
    target,
)
from tests.helpers import ROOT

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(50))
HI = [GeminiContent(parts="hi")]


def request(**fields: Any) -> GeminiRequest:
    return GeminiRequest(**{"model": "gemini-2.5-flash", "contents": HI, **fields})


# -- construction ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "error", "message"),
    [
        ({"model": ""}, ValueError, "model must be a non-empty string"),
        ({"model": "//"}, ValueError, "model must be a non-empty string"),
        ({"stream": 1}, TypeError, "stream must be a bool"),
        ({"contents": ["hi"]}, TypeError, r"\$.contents\[0\] must be a GeminiContent"),
        ({"contents": [GeminiContent(parts=["hi"])]}, TypeError, r"\$.contents\[0\].parts\[0\]"),
        ({"system_instruction": "be brief"}, TypeError, r"\$.systemInstruction must be"),
        ({"tools": [{"name": "f"}]}, TypeError, r"\$.tools\[0\] must be a GeminiTool"),
        (
            {"tools": [GeminiTool(function_declarations=["f"])]},
            TypeError,
            r"functionDeclarations\[0\] must be a declaration",
        ),
        ({"tool_config": {"mode": "ANY"}}, TypeError, r"\$.toolConfig must be"),
        ({"generation_config": {"temperature": 1}}, TypeError, r"\$.generationConfig must be"),
        (
            {"generation_config": GeminiGenerationConfig(thinking_config={"thinking_budget": 1})},  # type: ignore[arg-type]
            TypeError,
            "thinkingConfig must be a GeminiThinkingConfig",
        ),
        ({"safety_settings": ["x"]}, TypeError, r"\$.safetySettings\[0\] must be a mapping"),
        ({"contents": []}, ValueError, r"\$.contents: a non-empty array is required"),
        (
            {"tool_config": GeminiToolConfig(mode="ANY", allowed_function_names=["nope"])},
            ValueError,
            r"allowedFunctionNames\[0\]: 'nope' is not a declared function",
        ),
        (
            {"generation_config": GeminiGenerationConfig(top_p=1.5)},
            ValueError,
            r"\$.generationConfig.topP: in 0..1",
        ),
        (
            {"generation_config": GeminiGenerationConfig(candidate_count=3)},
            ValueError,
            r"\$.generationConfig.candidateCount: must be 1: the stream decoder reads candidate 0",
        ),
    ],
)
def test_bad_values_name_their_field(fields: dict[str, Any], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        request(**fields)


def test_inline_data_needs_exactly_one_source_and_images_are_checked() -> None:
    with pytest.raises(ValueError, match="exactly one of data, raw or path"):
        GeminiInlineData(mime_type="image/png")
    with pytest.raises(TypeError, match="must be bytes"):
        GeminiInlineData.from_bytes("text")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="are 'image/png'"):
        GeminiInlineData.from_bytes(PNG, "image/jpeg")
    assert GeminiInlineData.from_bytes(PNG).mime_type == "image/png"
    pdf = GeminiInlineData.from_bytes(b"%PDF-1.7", "application/pdf")
    assert (pdf.mime_type, pdf.size, pdf.decoded()) == ("application/pdf", 8, b"%PDF-1.7")
    urlsafe = GeminiInlineData(mime_type="image/png", data=base64.urlsafe_b64encode(PNG).decode())
    assert urlsafe.decoded() == PNG


def test_media_from_disk_stream_with_an_exact_length(tmp_path: Path) -> None:
    image = tmp_path / "a.png"
    image.write_bytes(PNG * 1000)
    audio = tmp_path / "a.mp3"
    audio.write_bytes(b"ID3" + bytes(5000))
    parts = [GeminiInlineData.from_path(image), GeminiInlineData.from_path(audio, "audio/mpeg")]
    r = request(contents=[GeminiContent(parts=[*parts, GeminiText(text="what?")])])
    assert [p.size for p in parts] == [len(PNG) * 1000, 5003]
    assert parts[1].decoded()[:3] == b"ID3"
    body = r.body(piece_size=999)
    pieces = list(body)
    data = b"".join(pieces)
    assert body.content_length == len(data)
    assert max(len(p) for p in pieces) <= 4 * 999 // 3 + 4
    blobs = [p["inlineData"] for p in json.loads(data)["contents"][0]["parts"][:2]]
    assert [base64.b64decode(b["data"]) for b in blobs] == [PNG * 1000, b"ID3" + bytes(5000)]
    audio.write_bytes(b"shorter")
    with pytest.raises(BodyChangedError):
        r.body().read()
    with pytest.raises(ValueError, match="not a PNG"):
        GeminiInlineData.from_path(audio)


def test_the_document_writes_every_field_and_keeps_the_unknown() -> None:
    r = GeminiRequest(
        model="tunedModels/t",
        contents=[
            GeminiContent(
                role=None,
                parts=[
                    GeminiText(text="t", extra={"partMetadata": {"k": 1}}),
                    GeminiInlineData(
                        mime_type="video/mp4",
                        data="AAAA",
                        extra={"videoMetadata": {"fps": 2}},
                        inner_extra={"displayName": "v"},
                    ),
                    GeminiFileData(file_uri="gs://b/o", inner_extra={"displayName": "o"}),
                    GeminiOtherPart(value={"executableCode": {"code": "1"}}),
                ],
            ),
            GeminiContent(
                role="model",
                parts=[
                    GeminiFunctionCall(name="f", id="c1", inner_extra={"willContinue": False}),
                ],
            ),
            GeminiContent(
                parts=[
                    GeminiFunctionResponse(
                        name="f",
                        id="c1",
                        response={"output": 1},
                        inner_extra={"willContinue": True},
                    )
                ]
            ),
        ],
        tools=[
            GeminiTool(
                function_declarations=[
                    GeminiFunctionDeclaration(name="f", extra={"behavior": "NON_BLOCKING"}),
                ],
                extra={"googleSearch": {}},
            )
        ],
        tool_config=GeminiToolConfig(
            calling_extra={"streamFunctionCallArguments": True}, extra={"retrievalConfig": {}}
        ),
        generation_config=GeminiGenerationConfig(
            thinking_config=GeminiThinkingConfig(extra={"x": 1}), extra={"seed": 7}
        ),
        stream=False,
        extra={"labels": {"a": "b"}},
    )
    doc = r.document()
    assert doc["contents"][0] == {
        "parts": [
            {"text": "t", "partMetadata": {"k": 1}},
            {
                "inlineData": {"mimeType": "video/mp4", "data": "AAAA", "displayName": "v"},
                "videoMetadata": {"fps": 2},
            },
            {"fileData": {"fileUri": "gs://b/o", "displayName": "o"}},
            {"executableCode": {"code": "1"}},
        ]
    }
    assert doc["contents"][1]["parts"][0]["functionCall"] == {
        "name": "f",
        "args": {},
        "id": "c1",
        "willContinue": False,
    }
    assert doc["tools"] == [
        {"functionDeclarations": [{"name": "f", "behavior": "NON_BLOCKING"}], "googleSearch": {}}
    ]
    assert doc["toolConfig"] == {
        "functionCallingConfig": {"streamFunctionCallArguments": True},
        "retrievalConfig": {},
    }
    assert doc["generationConfig"] == {"thinkingConfig": {"x": 1}, "seed": 7}
    assert doc["labels"] == {"a": "b"}
    assert GeminiRequest.parse(json.dumps(doc), model="tunedModels/t", stream=False) == r
    assert r.target() == "/v1beta/tunedModels/t:generateContent"
    assert r.tool_names == frozenset({"f"})
    assert GeminiRequest.parse(
        json.dumps({"contents": doc["contents"], "toolConfig": {"retrievalConfig": {}}}), model="m"
    ).tool_config == GeminiToolConfig(extra={"retrievalConfig": {}})


# -- parts from what the stream said ------------------------------------------------------------


def test_a_model_turn_from_a_completion_puts_each_signature_back() -> None:
    completion = Completion(
        text="Paris it is.",
        tool_calls=(ToolCall(index=0, id="c1", name="f", arguments='{"city":"Paris"}'),),
        reasoning_blocks=(
            ReasoningBlock(text="think", signature="s1", carrier="thought"),
            ReasoningBlock(text="more", signature="s2", carrier="thought", item_id="c1"),
            ReasoningBlock(text="", signature="s3", carrier="thought"),
            ReasoningBlock(text="x", signature="anthropic", carrier="thinking"),
            ReasoningBlock(text="", signature="enc", carrier="thought", redacted=True),
        ),
    )
    turn = GeminiContent.from_completion(completion)
    assert turn.parts == (
        GeminiText(text="think", thought=True, thought_signature="s1"),
        GeminiText(text="more", thought=True),
        GeminiText(text="", thought_signature="s3"),
        GeminiText(text="Paris it is."),
        GeminiFunctionCall(name="f", args={"city": "Paris"}, id="c1", thought_signature="s2"),
    )
    assert turn.text == "Paris it is."
    assert turn.role == "model"
    calls_only = GeminiContent.from_completion(
        Completion(
            tool_calls=(ToolCall(index=0, id="c2", name="g", arguments="{}"),),
            reasoning_blocks=(
                ReasoningBlock(text="", signature="s4", carrier="thought", item_id="c2"),
            ),
        )
    )
    assert calls_only.parts == (GeminiFunctionCall(name="g", id="c2", thought_signature="s4"),)
    with pytest.raises(ValueError, match="not a JSON object"):
        GeminiFunctionCall.from_tool_call(ToolCall(index=0, id="c", name="f", arguments="[]"))
    call = GeminiFunctionCall.from_tool_call(
        ToolCall(index=0, id="c", name="f", arguments="{}"), with_id=False
    )
    assert call.id is None
    assert GeminiOtherPart(value={"x": {}, "thoughtSignature": "s"}).thought_signature == "s"
    assert GeminiOtherPart(value={"x": {}}).thought_signature is None


# -- parsing ------------------------------------------------------------------------------------


T = b'{"contents": [{"parts": [{"text": "a"}]}], '  # a request's start, then the field


def parts_body(*parts: Any) -> bytes:
    return json.dumps({"contents": [{"role": "user", "parts": list(parts)}]}).encode()


@pytest.mark.parametrize(
    ("body", "path"),
    [
        (b"{", "$"),
        (b"[]", "$"),
        (b'{"contents": [1]}', "$.contents[0]"),
        (parts_body(1), "$.contents[0].parts[0]"),
        (parts_body({"text": "a", "thought": "yes"}), "$.contents[0].parts[0].thought"),
        (
            parts_body({"text": "a", "thoughtSignature": 1}),
            "$.contents[0].parts[0].thoughtSignature",
        ),
        (parts_body({"inlineData": 1}), "$.contents[0].parts[0].inlineData"),
        (parts_body({"inlineData": {"data": ""}}), "$.contents[0].parts[0].inlineData.mimeType"),
        (
            parts_body({"inlineData": {"mimeType": "png", "data": ""}}),
            "$.contents[0].parts[0].inlineData.mimeType",
        ),
        (
            parts_body({"inlineData": {"mimeType": "image/png"}}),
            "$.contents[0].parts[0].inlineData.data",
        ),
        (parts_body({"fileData": []}), "$.contents[0].parts[0].fileData"),
        (parts_body({"fileData": {"mimeType": "a/b"}}), "$.contents[0].parts[0].fileData.fileUri"),
        (
            parts_body({"fileData": {"fileUri": "u", "mimeType": 1}}),
            "$.contents[0].parts[0].fileData.mimeType",
        ),
        (parts_body({"functionCall": 1}), "$.contents[0].parts[0].functionCall"),
        (parts_body({"functionCall": {"name": ""}}), "$.contents[0].parts[0].functionCall.name"),
        (
            parts_body({"functionCall": {"name": "f", "args": 1}}),
            "$.contents[0].parts[0].functionCall.args",
        ),
        (
            parts_body({"functionCall": {"name": "f", "id": 1}}),
            "$.contents[0].parts[0].functionCall.id",
        ),
        (parts_body({"functionResponse": 1}), "$.contents[0].parts[0].functionResponse"),
        (
            parts_body({"functionResponse": {"name": "", "response": {}}}),
            "$.contents[0].parts[0].functionResponse.name",
        ),
        (
            T + b'"systemInstruction": {"role": "system", "parts": [{"text": "a"}]}}',
            "$.systemInstruction.role",
        ),
        (T + b'"safetySettings": {}}', "$.safetySettings"),
        (
            T + b'"safetySettings": [1]}',
            "$.safetySettings[0]",
        ),
        (
            T + b'"safetySettings": [{"category": 1}]}',
            "$.safetySettings[0].category",
        ),
        (T + b'"tools": {}}', "$.tools"),
        (T + b'"tools": [1]}', "$.tools[0]"),
        (
            T + b'"tools": [{"functionDeclarations": {}}]}',
            "$.tools[0].functionDeclarations",
        ),
        (
            T + b'"tools": [{"functionDeclarations": [1]}]}',
            "$.tools[0].functionDeclarations[0]",
        ),
        (
            T + b'"tools": [{"functionDeclarations": [{"name": "f"}, {"name": "f"}]}]}',
            "$.tools[0].functionDeclarations[1].name",
        ),
        (
            T + b'"tools": [{"functionDeclarations": [{"name": "f", "parameters": 1}]}]}',
            "$.tools[0].functionDeclarations[0].parameters",
        ),
        (
            T + b'"tools": [{"functionDeclarations": [{"name": "f", "parameters": {}, '
            b'"parametersJsonSchema": {}}]}]}',
            "$.tools[0].functionDeclarations[0].parametersJsonSchema",
        ),
        (T + b'"toolConfig": 1}', "$.toolConfig"),
        (
            T + b'"toolConfig": {"functionCallingConfig": 1}}',
            "$.toolConfig.functionCallingConfig",
        ),
        (
            T + b'"toolConfig": {"functionCallingConfig": {"mode": "ANY", '
            b'"allowedFunctionNames": "f"}}}',
            "$.toolConfig.functionCallingConfig.allowedFunctionNames",
        ),
        (
            T + b'"generationConfig": 1}',
            "$.generationConfig",
        ),
        (
            T + b'"generationConfig": {"maxOutputTokens": 0}}',
            "$.generationConfig.maxOutputTokens",
        ),
        (
            T + b'"generationConfig": {"topK": 2.5}}',
            "$.generationConfig.topK",
        ),
        (  # not hashable: no TypeError (the review of stop 32)
            T + b'"tools": [{"functionDeclarations": [{"name": "f"}]}], "toolConfig": '
            b'{"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [[]]}}}',
            "$.toolConfig.functionCallingConfig.allowedFunctionNames[0]",
        ),
        (  # the decoder reads candidate 0 only: the other answers would be lost (attack F4)
            T + b'"generationConfig": {"candidateCount": 2}}',
            "$.generationConfig.candidateCount",
        ),
        (
            T + b'"generationConfig": {"temperature": "hot"}}',
            "$.generationConfig.temperature",
        ),
        (
            T + b'"generationConfig": {"responseMimeType": 1}}',
            "$.generationConfig.responseMimeType",
        ),
        (
            T + b'"generationConfig": {"responseSchema": []}}',
            "$.generationConfig.responseSchema",
        ),
        (
            T + b'"generationConfig": {"thinkingConfig": 1}}',
            "$.generationConfig.thinkingConfig",
        ),
        (
            T + b'"generationConfig": {"thinkingConfig": {"thinkingBudget": -2}}}',
            "$.generationConfig.thinkingConfig.thinkingBudget",
        ),
        (
            T + b'"generationConfig": {"thinkingConfig": {"includeThoughts": 1}}}',
            "$.generationConfig.thinkingConfig.includeThoughts",
        ),
        (
            T + b'"generationConfig": {"thinkingConfig": {"thinkingLevel": 1}}}',
            "$.generationConfig.thinkingConfig.thinkingLevel",
        ),
    ],
)
def test_the_parser_names_the_path_of_what_it_refuses(body: bytes, path: str) -> None:
    with pytest.raises(RequestError) as caught:
        GeminiRequest.parse(body, model="m")
    assert caught.value.path == path


def test_the_parser_reads_what_the_api_allows() -> None:
    body = {
        "contents": [
            {"parts": [{"thought": True, "thoughtSignature": "c2ln"}, {"text": "a"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "f"}}]},
        ],
        "systemInstruction": {"parts": [{"text": "s"}]},
        "tools": [{"codeExecution": {}}],
        "toolConfig": {},
        "generationConfig": {
            "topK": 4.0,
            "candidateCount": 1,
            "thinkingConfig": {"thinkingBudget": -1},
        },
    }
    r = GeminiRequest.parse(json.dumps(body), model="m")
    assert r.contents[0].parts[0] == GeminiOtherPart(
        value={"thought": True, "thoughtSignature": "c2ln"}
    )
    assert r.contents[0].role is None
    assert r.contents[1].parts[0] == GeminiFunctionCall(name="f")
    assert r.tool_config == GeminiToolConfig()
    assert r.generation_config is not None
    assert r.generation_config.top_k == 4.0
    deep = {"contents": [{"parts": [{"text": "a"}]}], "labels": {"a_b": 1}, "x_y": [[{"a_b": 1}]]}
    assert GeminiRequest.parse(json.dumps(deep), model="m").extra == {
        "labels": {"a_b": 1},
        "xY": [[{"aB": 1}]],
    }
    nested: Any = {"z": 1}
    for _ in range(12):
        nested = {"a_b": nested}
    far = GeminiRequest.parse(
        json.dumps({"contents": [{"parts": [{"text": "a"}]}], "x": nested}), model="m"
    ).extra["x"]
    for _ in range(8):
        far = far["aB"]
    assert "a_b" in far  # past the messages' own depth, the caller's own keys
    lists = "[" * 500 + '"a"' + "]" * 500  # (a list is a level: attack 69 F1, out of stack)
    doc = '{"contents": [{"parts": [{"text": "a"}]}], "deep": ' + lists + ', "x_y": ' + lists
    extra = GeminiRequest.parse(doc + "}", model="m").extra  # (the search for a snake_case key
    assert extra["deep"] == extra["xY"] == json.loads(lists)  # walks "deep" first, then _camel)


# -- the endpoint ---------------------------------------------------------------------------------


def test_targets_and_headers() -> None:
    assert target("gemini-2.5-flash") == (
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    assert target("models/x y", stream=False, version="v1") == "/v1/models/x%20y:generateContent"
    assert headers("k", content_length=3) == [
        ("content-type", "application/json"),
        ("content-length", "3"),
        (API_KEY_HEADER, "k"),
    ]
    assert headers(None) == [("content-type", "application/json")]


@pytest.mark.parametrize("version", ["", "beta", "v1/../v2", "v1?alt=x", "v1 ", 1])
def test_a_version_that_is_no_apis_is_refused(version: object) -> None:
    """A request keeps its path's version (``v1``, ``v1beta``, ``v1alpha``); one that would
    make another path, or none, is a `ValueError` naming it."""
    with pytest.raises(ValueError, match="version must be the API's"):
        target("m", version=version)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="version must be the API's"):
        GeminiRequest(model="m", contents=HI, version=version)  # type: ignore[arg-type]
    body = b'{"contents": [{"parts": [{"text": "hi"}]}]}'
    request = GeminiRequest.parse(body, model="m", stream=False, version="v1")
    assert request.target() == "/v1/models/m:generateContent"
    # a caller's own version still goes first (review 68 #2: the keyword was removed)
    assert request.target(version="v1alpha") == "/v1alpha/models/m:generateContent"


@pytest.mark.parametrize(
    ("path", "owned"),
    [
        ("/v1beta/models/gemini-2.5-flash:streamGenerateContent", True),
        ("/v1/tunedModels/t%20x:generateContent", True),
        ("/v1alpha/models/m:generateContent", True),
        ("/v1beta/models/m:countTokens", False),
        ("/v1beta/models/m", False),
        ("/v1beta/models/a/b:generateContent", False),
        ("/beta/models/m:generateContent", False),
        ("/v1/chat/completions", False),
    ],
)
def test_a_server_routes_on_the_generate_paths_grammar(path: str, owned: bool) -> None:
    """`is_target` is `parse_target`'s grammar (one place: the gateway routes on it)."""
    assert is_target(path) is owned
    if owned:
        assert parse_target(path).stream is path.endswith(":streamGenerateContent")


def test_the_server_side_reads_the_target() -> None:
    t = parse_target("/v1beta/models/gemini%2D2.5:streamGenerateContent?alt=sse&key=K")
    assert (t.version, t.model, t.stream, t.alt, t.key) == (
        "v1beta",
        "gemini-2.5",
        True,
        "sse",
        "K",
    )
    assert parse_target("/v1/models/m:streamGenerateContent?alt=json").alt == "json"
    t = parse_target("/v1/tunedModels/mine:generateContent")
    assert (t.model, t.stream, t.alt, t.key) == ("tunedModels/mine", False, None, None)
    for bad in (
        "/v1beta/models/m:countTokens",
        "/v1/chat/completions",
        "/v1beta/models/a/b:generateContent",
    ):
        with pytest.raises(RequestError) as caught:
            parse_target(bad)
        assert caught.value.path == "target"
    # attack 62 F4: an id that is more than one segment once decoded named another resource
    # (cachedContents/abc, files/x), to which a gateway sent its key
    for bad in (
        "/v1beta/models/cachedContents%2Fabc:generateContent",
        "/v1beta/models/%252F%252e%252e:generateContent",
        "/v1beta/models/%5C..:generateContent",
        "/v1beta/models/..;x:generateContent",
        "/v1beta/models/%2E%2E:streamGenerateContent?alt=sse",
    ):
        with pytest.raises(RequestError, match="one path segment") as caught:
            parse_target(bad)
        assert caught.value.path == "target"
    # review 63: an absolute form whose host is no host raised urlsplit's ValueError
    for bad, says in (
        ("http://[::1/v1beta/models/m:generateContent", "not a request target"),
        ("/v1beta/models/a%FFb:generateContent", "not UTF-8"),
        ("/v1beta/models/a%7Fb:generateContent", "control character"),
        ("/v1beta/models/m:streamGenerateContent?alt=media", "alt=media is not served"),
    ):
        with pytest.raises(RequestError, match=says):
            parse_target(bad)


def test_thoughts_and_bytes_in_a_body() -> None:
    r = request(
        contents=[
            GeminiContent(
                role="model", parts=[GeminiText(text="hm", thought=True, thought_signature="s")]
            ),
            GeminiContent(parts=[GeminiInlineData.from_bytes(PNG)]),
        ]
    )
    doc = json.loads(r.body().read())
    assert doc["contents"][0]["parts"] == [{"text": "hm", "thought": True, "thoughtSignature": "s"}]
    assert base64.b64decode(doc["contents"][1]["parts"][0]["inlineData"]["data"]) == PNG


def test_a_path_is_read_lazily_from_disk(tmp_path: Path) -> None:
    f = tmp_path / "doc.pdf"
    f.write_bytes(b"%PDF")
    part = GeminiInlineData.from_path(os.fspath(f), "application/pdf")
    assert part.path == os.fspath(f)
    assert part.decoded() == b"%PDF"


def test_fuzz_crash_base64_the_draft_refuses() -> None:
    """fuzz/corpus/gemini_request/crash-base64-the-draft-refuses: inline data of 97 base64
    characters (one too many: no byte ends there) parsed, and the hub's LLM-Stream request then
    refused it. Base64 is now read as proto3 reads bytes (standard or URL-safe, padded or not,
    and whole), so the parser refuses it; and what it takes, the hub carries in the standard,
    padded form the draft requires."""
    data = (ROOT / "fuzz/corpus/gemini_request/crash-base64-the-draft-refuses").read_bytes()
    with pytest.raises(RequestError) as caught:
        GeminiRequest.parse(data, model="m")
    assert caught.value.path == "$.contents[0].parts[0].inlineData.data"
    from svir_proto.gemini.hub import from_hub, to_hub

    unpadded = base64.urlsafe_b64encode(b"\xfb\xff\x01").decode() + "_w"
    r = GeminiRequest.parse(
        parts_body({"inlineData": {"mimeType": "a/b", "data": unpadded}}), model="m"
    )
    part = to_hub(r).messages[0].content[0]  # type: ignore[index]
    assert part.data == "+/8B/w=="  # type: ignore[union-attr]
    assert from_hub(to_hub(r)).contents[0].parts[0].decoded() == b"\xfb\xff\x01\xff"  # type: ignore[union-attr]


def test_a_key_with_a_line_break_is_refused() -> None:
    with pytest.raises(ValueError, match="line break"):
        headers("k\r\nx-evil: 1")
