"""Translation between the dialects: requests both ways, and the stream rules of translate.py."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from svir_proto import ToolCall
from svir_proto.hub import LinkedImage, message_extensions, message_linked
from svir_proto.llmstream import (
    LLMMediaPart,
    LLMMessage,
    LLMRequest,
    LLMStreamDecoder,
    LLMTextPart,
    LLMToolCall,
)
from svir_proto.openai import (
    AssistantMessage,
    ChatRequest,
    ChatStreamDecoder,
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
from svir_proto.translate import OpenAIToLLMStream, llm_to_openai, openai_to_llm
from tests.helpers import CONFORMANCE, ROOT, run

PNG = b"\x89PNG\r\n\x1a\n" + b"\x01" * 50


def test_requests_both_ways(tmp_path: Path) -> None:
    f = tmp_path / "notes.txt"
    f.write_text("plain notes", encoding="utf-8")
    chat = ChatRequest(
        model="m",
        messages=[
            SystemMessage(content="sys"),
            UserMessage(
                content=[TextPart(text="look"), ImagePart.from_bytes(PNG), TextFile.from_path(f)]
            ),
            AssistantMessage(
                content=None, tool_calls=[ToolCall(index=0, id="c1", name="f", arguments="{}")]
            ),
            ToolMessage(tool_call_id="c1", content="42"),
        ],
        tools=[Tool(name="f", description="d")],
        tool_choice=NamedToolChoice("f"),
        max_tokens=9,
        temperature=0.3,
        response_format=JSONSchemaFormat(name="s", schema={"type": "object"}),
        reasoning_effort="low",
    )
    llm = openai_to_llm(chat, request_id="r-9")
    parsed = LLMRequest.parse(llm.body().read())
    assert parsed.request_id == "r-9"
    assert parsed.parameters == {"max_tokens": 9, "temperature": 0.3}
    user = parsed.messages[1].content
    assert isinstance(user, tuple)
    assert [p.type if isinstance(p, LLMMediaPart) else "text" for p in user] == [
        "text",
        "image",
        "document",
    ]
    assert parsed.messages[2].tool_calls[0].name == "f"
    back = llm_to_openai(parsed)
    assert back.tool_choice == NamedToolChoice("f")
    assert back.response_format == JSONSchemaFormat(name="s", schema={"type": "object"})
    assert back.reasoning_effort == "low"
    assert back.include_usage
    doc = json.loads(back.body().read())
    assert (
        doc["messages"][1]["content"][0]["text"]
        == 'look\n<file name="document-2">\nplain notes\n</file>'
    )
    assert doc["messages"][1]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")


def test_parts_the_openai_dialect_cannot_carry() -> None:
    audio = LLMRequest(
        model="m",
        messages=[
            LLMMessage(
                role="user",
                content=(
                    LLMTextPart(text="x"),
                    LLMMediaPart(type="audio", media_type="audio/wav", raw=b"RIFF"),
                ),
            )
        ],
    )
    with pytest.raises(
        ValueError, match=r"content\[1\]: the OpenAI dialect cannot carry an audio part"
    ):
        llm_to_openai(audio)
    from svir_proto.gemini import GeminiRequest
    from svir_proto.gemini.hub import to_hub

    gemini = GeminiRequest.parse(  # a path of its own: the hub's index of a part is not its
        b'{"contents": [{"role": "user", "parts": [{"text": "x"}, {"text": "y"}, '
        b'{"inlineData": {"mimeType": "audio/wav", "data": "AAAA"}}]}]}',
        model="m",
    )
    with pytest.raises(ValueError, match="an audio part") as caught:
        llm_to_openai(to_hub(gemini))
    assert str(caught.value) == (
        "contents[0]: the OpenAI dialect cannot carry an audio part (audio/wav)"
    )
    shot = LLMMediaPart(type="image", media_type="image/png", raw=b"\x89PNG")
    tool = LLMRequest(
        model="m",
        messages=[
            LLMMessage(role="user", content="take a screenshot"),
            LLMMessage(
                role="assistant",
                content=None,
                tool_calls=(LLMToolCall(id="t1", name="shot", arguments="{}"),),
            ),
            LLMMessage(role="tool", tool_call_id="t1", content=(LLMTextPart(text="see"), shot)),
        ],
    )
    with pytest.raises(  # audit 36: only the text went, the image nowhere, and 200
        ValueError, match=r"messages\[2\]\.content\[1\]: an OpenAI tool message carries text only"
    ):
        llm_to_openai(tool)
    said = attrs.evolve(
        tool,
        messages=[
            *tool.messages[:2],
            attrs.evolve(tool.messages[2], content=(LLMTextPart(text="see"),)),
        ],
    )
    (*_, result) = llm_to_openai(said).messages
    assert (result.tool_call_id, result.content) == ("t1", "see")
    failed = attrs.evolve(  # audit 36: a failure was read as what the tool returned
        said,
        messages=[
            *said.messages[:2],
            attrs.evolve(said.messages[2], extensions=message_extensions(is_error=True)),
        ],
    )
    (*_, result) = llm_to_openai(failed).messages
    assert json.loads(result.content) == {"error": "see"}


def translate(name: str) -> tuple[bytes, ChatStreamDecoder]:
    d = ChatStreamDecoder()
    events = run(d, [(CONFORMANCE / "openai" / f"{name}.sse").read_bytes()])
    t = OpenAIToLLMStream(model="fallback", request_id="r-1")
    return b"".join(t.feed(e) for e in events), d


def types(body: bytes) -> list[str]:
    return [line[7:].decode() for line in body.split(b"\n") if line.startswith(b"event: ")]


def test_tool_calls_come_whole_and_before_content_stop() -> None:
    body, _ = translate("wire-3.3-tool-calls")
    assert types(body) == [
        "stream.start",
        "content.delta",
        "tool.call",
        "tool.call",
        "content.stop",
        "usage",
        "stream.end",
    ]
    assert b'"stop_reason":"tool_use"' in body
    assert b'"request_id":"r-1"' in body


def test_errors_map_to_codes_then_stream_end() -> None:
    body, _ = translate("llamacpp-exceed-context")
    assert types(body) == ["stream.start", "error", "stream.end"]
    assert b'"code":"context_length_exceeded"' in body
    assert b'"model":"fallback"' in body  # the upstream never said who it was


def test_a_cut_stays_a_cut() -> None:
    body, _ = translate("cut-after-finish")
    assert types(body) == ["stream.start", "content.delta", "content.stop"]
    d = LLMStreamDecoder()
    run(d, [body])
    assert not d.result.complete


def test_azure_prompt_verdict_waits_for_stream_start() -> None:
    body, _ = translate("azure-default")
    assert types(body)[:2] == ["stream.start", "content.delta"]
    assert b'"model":"gpt-6-luna-2026-09-22"' in body


def test_llm_to_openai_maps_every_kind_of_part_and_option(tmp_path: Path) -> None:
    notes = tmp_path / "n.txt"
    notes.write_text("from disk", encoding="utf-8")
    req = LLMRequest(
        model="m",
        messages=[
            LLMMessage(role="system", content=(LLMTextPart(text="sys"),)),
            LLMMessage(
                role="user",
                content=(
                    LLMMediaPart.from_path("document", notes, "text/plain"),
                    LLMMediaPart(type="document", media_type="text/markdown", raw=b"# inline"),
                ),
            ),
            LLMMessage(role="assistant", content="plain answer"),
        ],
        extensions={"vendor:openai": {"tool_choice": "auto", "response_format": {"type": "text"}}},
    )
    chat = llm_to_openai(req)
    assert chat.tool_choice == "auto"
    doc = json.loads(chat.body().read())
    assert doc["response_format"] == {"type": "text"}
    assert doc["messages"][0] == {"role": "system", "content": "sys"}
    assert (
        doc["messages"][1]["content"]
        == '<file name="n.txt">\nfrom disk\n</file>\n<file name="document-1">\n# inline\n</file>'
    )
    assert doc["messages"][2] == {"role": "assistant", "content": "plain answer"}
    json_object = LLMRequest(
        model="m",
        messages=[LLMMessage(role="user", content="x")],
        extensions={"vendor:openai": {"response_format": {"type": "json_object"}}},
    )
    assert json.loads(llm_to_openai(json_object).body().read())["response_format"] == {
        "type": "json_object"
    }


def test_stream_translation_edge_cases() -> None:
    from svir_proto import StreamEnded, StreamFailed, StreamStarted, TextDelta
    from svir_proto.errors import Failure, FailureKind

    t = OpenAIToLLMStream(model="m")
    out = t.feed(StreamStarted(response_id="a", model="x", created=5))
    assert t.feed(StreamStarted(response_id="b", model="y")) == b""  # only one stream.start
    out += t.feed(StreamFailed(error=Failure(kind=FailureKind.OVERLOADED, message="busy")))
    assert t.feed(TextDelta(text="late")) == b""  # nothing but stream.end after an error
    out += t.feed(StreamEnded(complete=False))
    assert types(out) == ["stream.start", "error", "stream.end"]
    assert b'"code":"overloaded"' in out


@pytest.mark.parametrize("fmt", [None, TextFormat(), JSONObjectFormat()])
def test_a_plain_request_both_ways(tmp_path: Path, fmt: object) -> None:
    photo = tmp_path / "p.png"
    photo.write_bytes(PNG)
    chat = ChatRequest(
        model="m",
        messages=[
            UserMessage(
                content=[
                    TextFile.from_text("inline notes", name="n.txt"),
                    ImagePart.from_path(photo),
                ]
            )
        ],
        response_format=fmt,
    )
    llm = openai_to_llm(chat)
    parsed = LLMRequest.parse(llm.body().read())
    assert parsed.parameters == {}
    assert [type(p).__name__ for p in parsed.messages[0].content] == [  # type: ignore[union-attr]
        "LLMTextPart",
        "LLMMediaPart",
    ]
    back = llm_to_openai(parsed)
    assert (back.response_format, back.tool_choice, back.max_tokens) == (fmt, None, None)
    assert back.messages[0].content[1].data == PNG  # type: ignore[union-attr]


@pytest.mark.parametrize("fmt", ["json", {"type": "grammar"}])
def test_a_response_format_the_openai_dialect_lacks_is_dropped(fmt: object) -> None:
    req = LLMRequest(
        model="m",
        messages=[LLMMessage(role="user", content="hi")],
        extensions={"vendor:openai": {"response_format": fmt}},
    )
    assert llm_to_openai(req).response_format is None


def test_a_second_failure_is_not_a_second_error_event() -> None:
    """An upstream that sends two error chunks: the draft allows one error, then stream.end."""
    from svir_proto import (
        Failure,
        FailureKind,
        LLMStreamDecoder,
        StreamEnded,
        StreamFailed,
        StreamStarted,
    )
    from svir_proto.translate import OpenAIToLLMStream

    t = OpenAIToLLMStream(model="m")
    first = Failure(kind=FailureKind.SERVER_ERROR, message="one")
    out = t.feed(StreamStarted(response_id="r", model="m"))
    out += t.feed(StreamFailed(error=first))
    out += t.feed(StreamFailed(error=Failure(kind=FailureKind.SERVER_ERROR, message="two")))
    out += t.feed(StreamEnded(complete=False))
    d = LLMStreamDecoder()
    d.feed(out)
    d.close()
    assert d.result.error is not None
    assert d.result.error.message == "one"
    assert d.result.done


def test_llm_stream_events_back_to_openai_bytes() -> None:
    """`LLMStreamToOpenAI`: an LLM-Stream recording's events, encoded in OpenAI's dialect and
    decoded by ours, give the same answer."""
    from svir_proto.openai import ChatStreamDecoder
    from svir_proto.translate import LLMStreamToOpenAI

    body = (ROOT / "examples" / "llm-stream.sse").read_bytes()
    source = LLMStreamDecoder()
    events = source.feed(body) + source.close()
    back = LLMStreamToOpenAI(response_id="chatcmpl-x", model="m")
    openai = ChatStreamDecoder()
    openai.feed(b"".join(back.feed(e) for e in events))
    openai.close()
    assert openai.result.text == source.result.text
    assert openai.result.finish_reason == source.result.finish_reason
    assert openai.result.complete


def test_the_new_request_fields_travel_to_llm_stream_and_back() -> None:
    from svir_proto.hub import hub_options, parallel_tool_calls
    from svir_proto.openai import ImagePart, SystemMessage

    request = ChatRequest(
        model="m",
        messages=[SystemMessage(content="be", role="developer"), UserMessage(content="x")],
        max_completion_tokens=50,
        top_p=0.5,
        stop=["END", "STOP"],
        seed=3,
        user="u",
        parallel_tool_calls=False,
        extra_body={"top_k": 20},
    )
    hub = openai_to_llm(request)
    assert hub.parameters == {
        "max_tokens": 50,
        "top_p": 0.5,
        "stop_sequences": ["END", "STOP"],
        "seed": 3,  # the hub's sampling parameters (`SAMPLING`), which Gemini has too
        "top_k": 20,
    }
    assert parallel_tool_calls(hub) is False
    assert hub.extensions["vendor:openai"] == {
        "max_completion_tokens": True,
        "user": "u",
        "extra_body": {"top_k": 20},
    }
    assert hub.messages[0].extensions == {"vendor:openai": {"role": "developer"}}
    back = llm_to_openai(hub)
    assert back == attrs_evolve(request, include_usage=True)
    capped = llm_to_openai(
        openai_to_llm(attrs_evolve(request, max_completion_tokens=None, max_tokens=7))
    )
    assert (capped.max_tokens, capped.max_completion_tokens) == (7, None)
    thinking = LLMRequest(  # another dialect's request for reasoning: OpenAI's reasoning
        model="o4-mini",  # models refuse max_tokens (audit 36)
        messages=[LLMMessage(role="user", content="x")],
        parameters={"max_tokens": 500},
        extensions=hub_options(reasoning={"effort": "high"}),
    )
    sent = llm_to_openai(thinking)
    assert (sent.max_tokens, sent.max_completion_tokens, sent.reasoning_effort) == (
        None,
        500,
        "high",
    )
    linked = ChatRequest(  # an image by URL: the hub's linked, and back in its place
        model="m",
        messages=[
            UserMessage(
                content=[
                    ImagePart.from_url("https://x/y.png", detail="low"),
                    TextPart(text="and"),
                    ImagePart.from_url("https://x/z.png"),
                ]
            )
        ],
    )
    neutral = openai_to_llm(linked)
    assert neutral.messages[0].content == "and"
    assert message_linked(neutral.messages[0]) == (
        LinkedImage(at=0, url="https://x/y.png", detail="low"),
        LinkedImage(at=1, url="https://x/z.png"),
    )
    assert llm_to_openai(neutral) == attrs_evolve(linked, include_usage=True)


def attrs_evolve(request: ChatRequest, **changes: object) -> ChatRequest:
    import attrs

    return attrs.evolve(request, **changes)  # type: ignore[misc]


def test_an_image_url_no_dialect_would_send_is_refused() -> None:
    """Review 42 F2: an image URL the Chat request takes (a tab in it) but the hub's
    ``linked`` does not went nowhere, unsaid: it is refused, naming the part."""
    odd = ChatRequest(
        model="m",
        messages=[UserMessage(content=[TextPart(text="a"), ImagePart.from_url("https://x/\ty")])],
    )
    with pytest.raises(ValueError, match=r"messages\[0\]\.content\[1\]: an image URL with"):
        openai_to_llm(odd)
