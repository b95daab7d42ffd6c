"""The hub's neutral extension, signed reasoning, and the usage counts every dialect carries."""

from __future__ import annotations

import json

import pytest

from svir_proto import hub
from svir_proto.events import (
    Finished,
    FinishReason,
    ReasoningBlock,
    ReasoningDelta,
    ReasoningSignature,
    StreamEnded,
    StreamStarted,
    Usage,
)
from svir_proto.llmstream import (
    LLMMessage,
    LLMRequest,
    LLMStreamDecoder,
    LLMStreamEncoder,
    LLMToolCall,
)
from svir_proto.openai import ChatStreamDecoder, ChatStreamEncoder


def request(**ext: object) -> LLMRequest:
    return LLMRequest(model="m", messages=[LLMMessage(role="user", content="hi")], extensions=ext)


@pytest.mark.parametrize(
    ("choice", "wire"),
    [("auto", "auto"), ("none", "none"), ("required", "required"), (("name", "f"), {"name": "f"})],
)
def test_tool_choice_round_trips(choice: hub.HubToolChoice, wire: object) -> None:
    ext = hub.hub_options(
        tool_choice=choice, parallel_tool_calls=False, reasoning={"effort": "low"}
    )
    assert ext[hub.HUB_EXTENSION]["tool_choice"] == wire
    req = request(**ext)
    assert hub.tool_choice(req) == choice
    assert hub.parallel_tool_calls(req) is False
    assert hub.reasoning_options(req) == {"effort": "low"}
    again = LLMRequest.parse(req.body().read())
    assert hub.tool_choice(again) == choice


@pytest.mark.parametrize(
    "bad",
    [{"name": ""}, {"name": 3}, "sometimes", 7, [1], {"type": "json_schema"}, {"paths": []}],
)
def test_a_malformed_neutral_option_means_none(bad: object) -> None:
    options = {
        "tool_choice": bad,
        "parallel_tool_calls": "yes",
        "reasoning": [1],
        "response_format": bad,
        "stateful": bad,
    }
    req = request(**{hub.HUB_EXTENSION: options})
    assert hub.tool_choice(req) is None
    assert hub.parallel_tool_calls(req) is None
    assert hub.reasoning_options(req) == {}
    assert hub.response_format(req) is None
    assert hub.stateful(req) is None
    assert hub.hub_options() == {}
    assert hub.tool_choice(request(**{hub.HUB_EXTENSION: "not an object"})) is None


def test_signed_reasoning_travels_on_a_message_and_back() -> None:
    blocks = (
        ReasoningBlock(text="think", signature="sig", carrier="thinking"),
        ReasoningBlock(text="", signature="enc", carrier="thinking", redacted=True),
        ReasoningBlock(text="s", signature="e", carrier="summary", item_id="rs_1"),
    )
    m = LLMMessage(
        role="assistant", content="ok", extensions=hub.message_extensions(reasoning=blocks)
    )
    t = LLMMessage(
        role="tool", content="boom", tool_call_id="c1",
        extensions=hub.message_extensions(is_error=True),
    )  # fmt: skip
    req = LLMRequest(model="m", messages=[LLMMessage(role="user", content="q"), m, t])
    doc = json.loads(req.body().read())
    assert doc["messages"][1]["extensions"][hub.HUB_EXTENSION]["reasoning"][1]["redacted"]
    again = LLMRequest.parse(json.dumps(doc).encode())
    assert hub.message_reasoning(again.messages[1]) == blocks
    assert hub.message_is_error(again.messages[2])
    assert not hub.message_is_error(again.messages[1])
    assert hub.message_extensions() == {}


def test_an_assistants_pieces_keep_their_order_when_it_is_not_the_plain_one() -> None:
    """Attack 50b N1: the hub message kept no order between reasoning, text and calls, so an
    interleaved turn went back rebuilt (reasoning, text, calls), which Anthropic refuses.
    ``order`` says it, written only when it is not that; one that does not count what the
    message has is not read."""
    t1 = ReasoningBlock(text="t1", signature="s1", carrier="thinking")
    t2 = ReasoningBlock(text="t2", signature="s2", carrier="thinking")
    call = LLMToolCall(id="c", name="f", arguments="{}")
    pieces: list[hub.AssistantPiece] = [t1, "A", "B", t2, call, "C"]

    def message(order: object = None, **given: object) -> LLMMessage:
        ext = hub.message_extensions(reasoning=[t1, t2], pieces=given.get("pieces", pieces))  # type: ignore[arg-type]
        if order is not None:
            ext[hub.HUB_EXTENSION]["order"] = order
        return LLMMessage(role="assistant", content="ABC", tool_calls=[call], extensions=ext)

    m = message()
    assert m.extensions[hub.HUB_EXTENSION]["order"] == ["r", 2, "r", "c", 1]
    assert hub.message_pieces(m) == [t1, "AB", t2, call, "C"]
    again = LLMRequest.parse(LLMRequest(model="m", messages=[m]).body().read())
    assert hub.message_pieces(again.messages[0]) == [t1, "AB", t2, call, "C"]
    plain = message(pieces=[t1, t2, "AB", "C", call])
    assert "order" not in plain.extensions[hub.HUB_EXTENSION]  # reasoning, text, calls
    assert hub.message_pieces(plain) == [t1, t2, "ABC", call]
    for bad in (["r", 3, "r"], ["r", 2, "r", "c", 2], ["r", "r", "c", 0, 3], ["r", 3, "c"],
                ["r", "r", "c", True, 2], "rrc", ["r", 3, "r", "c", "x"]):  # fmt: skip
        assert hub.message_pieces(message(bad)) == [t1, t2, "ABC", call], bad


def test_a_messages_path_is_the_one_its_request_gave_it() -> None:
    """Attack 50b N7: what a target says lost named a message by its index in the hub, not
    the path the client's request gave it (a Messages request's ``system`` is message 0
    there). ``paths`` says them, written only when they are not the hub's own."""
    assert hub.hub_options(paths=["messages[0]", "messages[1]"]) == {}
    given = hub.hub_options(paths=["system", "messages[0]"])
    assert given == {hub.HUB_EXTENSION: {"paths": ["system", "messages[0]"]}}
    req = request(**given)
    assert [hub.message_path(req, i) for i in (0, 1, 2, -1)] == [
        "system",
        "messages[0]",
        "messages[2]",  # (past the list: the hub's)
        "messages[-1]",
    ]
    long = "x" * 25  # (review 50 r1: a path of any length began each of its notes)
    odd = request(**{hub.HUB_EXTENSION: {"paths": ["", 3, "a\nb", "ok", long, "a.b[1]"]}})
    assert [hub.message_path(odd, i) for i in range(6)] == [
        "messages[0]",
        "messages[1]",
        "messages[2]",
        "ok",
        "messages[4]",
        "a.b[1]",
    ]
    assert hub.message_path(request(**{hub.HUB_EXTENSION: {"paths": "system"}}), 0) == (
        "messages[0]"
    )


def test_malformed_message_extensions_are_ignored_as_the_draft_asks() -> None:
    doc = {
        "version": "1.0", "stream": True, "model": "m",
        "messages": [
            {"role": "user", "content": "q", "extensions": "nonsense"},
            {"role": "assistant", "content": "a", "extensions": {
                "not-namespaced": 1,
                hub.HUB_EXTENSION: {"reasoning": [
                    "x", {"text": "t", "signature": "s", "carrier": ["unhashable"]},
                    {"text": "t", "signature": "s", "carrier": "thinking", "item_id": 3},
                ]},
            }},
            {"role": "assistant", "content": "b", "extensions": {
                hub.HUB_EXTENSION: {"reasoning": "not a list"}}},
        ],
    }  # fmt: skip
    req = LLMRequest.parse(json.dumps(doc).encode())
    assert req.messages[0].extensions == {}
    assert set(req.messages[1].extensions) == {hub.HUB_EXTENSION}
    assert hub.message_reasoning(req.messages[1]) == (
        ReasoningBlock(text="t", signature="s", carrier="thinking"),
    )
    assert hub.message_reasoning(req.messages[2]) == ()


def test_message_extension_keys_are_checked_when_built() -> None:
    with pytest.raises(ValueError, match="vendor:name"):
        LLMMessage(role="user", content="q", extensions={"plain": 1})


def test_a_message_takes_any_iterable_of_parts() -> None:
    from svir_proto.llmstream import LLMTextPart

    m = LLMMessage(role="user", content=[LLMTextPart(text="a")])
    assert m.content == (LLMTextPart(text="a"),)


def test_signatures_and_cache_counts_round_trip_through_llm_stream() -> None:
    enc = LLMStreamEncoder(request_id="r")
    usage = Usage(
        prompt_tokens=10, completion_tokens=5, total_tokens=15, reasoning_tokens=2,
        cached_tokens=4, cache_creation_tokens=3,
    )  # fmt: skip
    events = [
        StreamStarted(response_id="x", model="m"),
        ReasoningDelta(text="hm", carrier="thinking"),
        ReasoningSignature(signature="sig1", carrier="thinking"),
        ReasoningSignature(signature="blob", carrier="thinking", redacted=True),
        ReasoningDelta(text="more", carrier="summary"),
        ReasoningSignature(signature="enc", carrier="summary", item_id="rs_9"),
        Finished(reason=FinishReason.STOP, raw="stop"),
        usage,
    ]
    body = b"".join(enc.encode(e) for e in events) + enc.end()
    d = LLMStreamDecoder()
    out = d.feed(body) + d.close()
    assert [e for e in out if isinstance(e, (ReasoningSignature, Usage))] == [
        events[2],
        events[3],
        events[5],
        usage,
    ]
    assert d.result.reasoning_blocks == (
        ReasoningBlock(text="hm", signature="sig1", carrier="thinking"),
        ReasoningBlock(text="", signature="blob", carrier="thinking", redacted=True),
        ReasoningBlock(text="more", signature="enc", carrier="summary", item_id="rs_9"),
    )
    assert d.result.reasoning == "hmmore"
    assert isinstance(out[-1], StreamEnded)


def test_cached_tokens_round_trip_through_openai() -> None:
    enc = ChatStreamEncoder()
    usage = Usage(prompt_tokens=10, completion_tokens=5, total_tokens=15, cached_tokens=4)
    body = (
        enc.encode(StreamStarted(response_id="x", model="m"))
        + enc.encode(Finished(reason=FinishReason.STOP, raw="stop"))
        + enc.encode(usage)
        + enc.encode(StreamEnded(complete=True, done=True))
    )
    assert b'"prompt_tokens_details":{"cached_tokens":4}' in body.replace(b" ", b"")
    d = ChatStreamDecoder()
    d.feed(body)
    d.close()
    assert d.result.usage == usage


@pytest.mark.parametrize("target", ["messages", "responses", "gemini"])
def test_an_openai_requests_tool_choice_and_effort_reach_every_dialect(target: str) -> None:
    """Attack 28: ``tool_choice`` and ``reasoning_effort`` travelled under ``vendor:openai``
    only, which no other dialect reads: a client that forbade tools could get tool calls.
    They are the hub's neutral options too, and come back from another dialect's request."""
    from svir_proto.dialects import dialect, translate_request
    from svir_proto.openai import ChatRequest, NamedToolChoice, Tool, UserMessage
    from svir_proto.translate import llm_to_openai, openai_to_llm

    tool = Tool(name="f", description="d", parameters={"type": "object", "properties": {}})
    for choice, neutral in (("none", "none"), ("required", "required"), ("auto", "auto")):
        chat = ChatRequest(
            model="m",
            messages=[UserMessage(content="hi")],
            tools=[tool],
            tool_choice=choice,
            reasoning_effort="high",
        )
        hubbed = openai_to_llm(chat)
        assert hub.tool_choice(hubbed) == neutral
        assert hub.reasoning_options(hubbed) == {"effort": "high"}
        other = translate_request(hubbed, target)  # type: ignore[arg-type]
        again = dialect(target).to_hub(other)  # type: ignore[arg-type]
        back = llm_to_openai(again)
        assert back.tool_choice == choice, (target, other)
    named = openai_to_llm(
        ChatRequest(model="m", messages=[UserMessage(content="hi")], tools=[tool],
                    tool_choice=NamedToolChoice("f"))
    )  # fmt: skip
    assert hub.tool_choice(named) == ("name", "f")
    again = dialect(target).to_hub(translate_request(named, target))  # type: ignore[arg-type]
    assert llm_to_openai(again).tool_choice == NamedToolChoice("f")


SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}


@pytest.mark.parametrize(
    "fmt",
    [{"type": "json_object"}, {"type": "json_schema", "name": "response", "schema": SCHEMA}],
)
def test_json_output_reaches_every_dialect_that_has_it_and_is_refused_by_the_others(
    fmt: dict[str, object],
) -> None:
    """Attack 28: ``response_format`` travelled under ``vendor:openai`` only; Responses'
    ``text.format`` and Gemini's ``responseMimeType`` were lost the other way. JSON output is
    the hub's ``response_format``: the Responses API and Gemini carry it; the Messages API
    carries a schema (``output_config.format``, fidelity 42 F14) and refuses JSON without
    one, naming it."""
    from svir_proto.dialects import dialect, translate_request
    from svir_proto.openai import ChatRequest, JSONObjectFormat, JSONSchemaFormat, UserMessage
    from svir_proto.translate import llm_to_openai, openai_to_llm

    wanted = (
        JSONObjectFormat()
        if fmt["type"] == "json_object"
        else JSONSchemaFormat(name="response", schema=SCHEMA, strict=False)
    )
    chat = ChatRequest(model="m", messages=[UserMessage(content="hi")], response_format=wanted)
    neutral = openai_to_llm(chat)
    assert hub.response_format(neutral) == {**fmt, **({"strict": False} if "schema" in fmt else {})}
    responses = translate_request(neutral, "responses")
    assert responses.text["format"]["type"] == fmt["type"]
    gemini = translate_request(neutral, "gemini")
    wire = gemini.document()["generationConfig"]
    assert wire["responseMimeType"] == "application/json"
    assert ("responseJsonSchema" in wire) == (fmt["type"] == "json_schema")
    for target, request in (("responses", responses), ("gemini", gemini)):
        back = llm_to_openai(dialect(target).to_hub(request))
        assert type(back.response_format) is type(wanted), target
    if fmt["type"] == "json_object":
        with pytest.raises(ValueError, match="response_format"):
            translate_request(neutral, "messages")
    else:
        messages = translate_request(neutral, "messages")
        assert messages.to_document()["output_config"] == {
            "format": {"type": "json_schema", "schema": SCHEMA}
        }
        back = llm_to_openai(dialect("messages").to_hub(messages))
        assert back.response_format == JSONSchemaFormat(name="response", schema=SCHEMA)
    assert (
        hub.response_format(openai_to_llm(ChatRequest(model="m", messages=chat.messages))) is None
    )


def test_sampling_parameters_reach_every_dialect_that_has_them() -> None:
    """Audit 36: a Chat client's seed and penalties went to Gemini as nothing, and Anthropic's
    ``top_k`` to Gemini. They are the hub's (`SAMPLING`): each dialect with a field for one
    writes it, and OpenAI is never sent ``top_k``, which it refuses."""
    from svir_proto.dialects import dialect, translate_request
    from svir_proto.openai import ChatRequest, UserMessage

    chat = ChatRequest(
        model="m",
        messages=[UserMessage(content="hi")],
        seed=7,
        extra_body={"presence_penalty": 0.5, "frequency_penalty": -1, "top_k": 40, "min_p": 0.1},
    )
    gemini = translate_request(chat, "gemini")
    config = json.loads(gemini.body().read())["generationConfig"]
    assert config == {"seed": 7, "presencePenalty": 0.5, "frequencyPenalty": -1, "topK": 40}
    assert translate_request(chat, "messages").top_k == 40
    back = translate_request(dialect("gemini").to_hub(gemini), "chat")
    assert (back.seed, back.extra_body) == (7, {"presence_penalty": 0.5, "frequency_penalty": -1})
    odd = LLMRequest(  # an LLM-Stream client's, of the wrong types: not sent
        model="m",
        messages=[LLMMessage(role="user", content="hi")],
        parameters={"seed": "7", "top_k": 1.5, "presence_penalty": True, "frequency_penalty": 1},
    )
    assert hub.sampling(odd) == {"frequency_penalty": 1}
    written = LLMRequest(  # Gemini's topK as JSON may write it: 40.0
        model="m", messages=[LLMMessage(role="user", content="hi")], parameters={"top_k": 40.0}
    )
    assert hub.sampling(written) == {"top_k": 40}
    assert translate_request(odd, "chat").extra_body == {"frequency_penalty": 1}
    assert translate_request(odd, "messages").top_k is None


def test_linked_images_are_read_as_they_may_be_sent() -> None:
    """The ``linked`` extension: what is malformed, or no web URL of visible ASCII (which no
    dialect would send on), is skipped; the rest in the order of their places, at one place
    in their order; a place past the parts is the end."""
    raw = [
        {"at": 2, "url": "https://x.test/2.png"},
        {"at": 0, "url": "https://x.test/0.png", "detail": "high"},
        {"at": 0, "url": "http://x.test/0b.png", "detail": 3},
        {"at": 9, "url": "https://x.test/end.png"},
        {"at": -1, "url": "https://x.test/a.png"},
        {"at": True, "url": "https://x.test/b.png"},
        {"at": 1, "url": "javascript:alert(1)"},
        {"at": 1, "url": "https://x.test/a b.png"},
        {"at": 1, "url": "https://x.test/\t.png"},
        {"at": 1, "url": "https://x.test/\n.png"},
        {"at": 1},
        "https://x.test/c.png",
    ]
    message = LLMMessage(role="user", content="a", extensions={hub.HUB_EXTENSION: {"linked": raw}})
    linked = hub.message_linked(message)
    assert linked == (
        hub.LinkedImage(0, "https://x.test/0.png", "high"),
        hub.LinkedImage(0, "http://x.test/0b.png"),
        hub.LinkedImage(2, "https://x.test/2.png"),
        hub.LinkedImage(9, "https://x.test/end.png"),
    )
    assert hub.with_linked(["p0", "p1", "p2"], linked, lambda i: i.url.rsplit("/", 1)[1]) == [
        "0.png", "0b.png", "p0", "p1", "2.png", "p2", "end.png"
    ]  # fmt: skip
    assert hub.message_extensions(linked=linked)[hub.HUB_EXTENSION]["linked"][:2] == [
        {"at": 0, "url": "https://x.test/0.png", "detail": "high"},
        {"at": 0, "url": "http://x.test/0b.png"},
    ]
    for odd in ({"linked": {"at": 0}}, {"linked": None}, {}):
        other = LLMMessage(role="user", content="a", extensions={hub.HUB_EXTENSION: odd})
        assert hub.message_linked(other) == ()
    for role in ("system", "assistant"):  # (review 42 F8: a user's images only, everywhere)
        other = LLMMessage(role=role, content="a", extensions={hub.HUB_EXTENSION: {"linked": raw}})
        assert hub.message_linked(other) == ()


def test_an_image_by_url_with_a_detail_chat_does_not_take() -> None:
    """A linked image's detail the Chat API does not take (the Responses API's ``original``)
    is said lost and not sent; the image goes."""
    from svir_proto.translate import llm_to_openai

    ext = hub.message_extensions(linked=[hub.LinkedImage(1, "https://x.test/a.png", "original")])
    neutral = LLMRequest(
        model="m", messages=[LLMMessage(role="user", content="look", extensions=ext)]
    )
    lost: list[str] = []
    sent = json.loads(b"".join(llm_to_openai(neutral, lost=lost).body()))
    assert sent["messages"][0]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "https://x.test/a.png"},
    }
    assert lost == [
        "messages[0].content: an image's detail ('original') is not one the Chat API takes: "
        "not sent"
    ]
