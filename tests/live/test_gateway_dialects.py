"""The gateway between dialects, against the real thing: llama.cpp answers Chat Completions and
Messages itself, so each real client (the ``anthropic`` and ``openai`` packages, our LLM-Stream
client) is sent one request directly to llama.cpp's endpoint for its dialect and once through
the gateway to an upstream of each dialect (``upstream_dialect``). Through the gateway it must
report what it reports directly: the final text, the tool calls, the finish, the usage
(issue 19 item 5)."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest

from svir_proto import dialects
from svir_proto.anthropic import MessagesRequest
from svir_proto.llmstream import LLMRequest
from svir_proto.openai import ChatRequest
from svir_proto.transports.blocking import stream_chat
from tests.gateway.test_gateway_server import gateway
from tests.live import anthropic_cases as cases
from tests.live.test_anthropic import kwargs, sdk

anthropic = pytest.importorskip("anthropic")
openai = pytest.importorskip("openai")

UPSTREAMS = ("chat", "messages", "responses")
LLAMA_CUT = "length"
"""The case llama.cpp's own /v1/responses gets wrong: an answer cut by its token limit is
``completed`` there, with no ``incomplete_details`` (its chat and messages endpoints say
``length`` and ``max_tokens``). Through a Responses upstream a gateway can only pass that on;
from the others it says ``incomplete``, as OpenAI's API does."""


def _expected(direct: dict[str, Any], name: str, upstream: str, completed: object) -> Any:
    """What the client must see through the gateway: what it saw directly, but for
    llama.cpp's Responses quirk (`LLAMA_CUT`)."""
    if name == LLAMA_CUT and upstream == "responses":
        return {**direct, "stop": completed}
    return direct


def _message(message: Any) -> dict[str, Any]:
    """What an Anthropic client reads of a whole message. The input it was billed for is
    ``input_tokens`` plus the cache's: Anthropic counts cache reads apart, and a gateway that
    translates OpenAI's ``cached_tokens`` does so; llama.cpp's own /v1/messages puts them in
    ``input_tokens`` (its prompt cache holds the direct request's prefix when the gateway's
    comes)."""
    u = message.usage
    cache = (u.cache_read_input_tokens or 0) + (u.cache_creation_input_tokens or 0)
    return {
        "text": "".join(b.text for b in message.content if b.type == "text"),
        "calls": [(b.name, b.input) for b in message.content if b.type == "tool_use"],
        "stop": message.stop_reason,
        "usage": (u.input_tokens + cache, u.output_tokens),
    }


def _anthropic(base: str, request: MessagesRequest, *, whole: bool = False) -> dict[str, Any]:
    """What the SDK reads of the answer: streamed, or asked whole (``messages.create``)."""
    with sdk(base) as client:
        if whole:
            return _message(client.messages.create(**kwargs(request)))
        with client.messages.stream(**kwargs(request)) as s:
            return _message(s.get_final_message())


def _openai(base: str, request: ChatRequest, *, whole: bool = False) -> dict[str, Any]:
    doc = json.loads(request.body().read())
    for key in ("stream", "stream_options"):
        doc.pop(key, None)
    with openai.OpenAI(base_url=base, api_key="k", max_retries=0) as client:
        if whole:  # create() with no stream: one chat.completion
            answer = client.chat.completions.create(**doc)
            message = answer.choices[0].message
            assert answer.usage is not None
            return {
                "text": message.content or "",
                "calls": [
                    (c.function.name, json.loads(c.function.arguments))
                    for c in message.tool_calls or []
                    if c.type == "function"
                ],
                "stop": answer.choices[0].finish_reason,
                "usage": (answer.usage.prompt_tokens, answer.usage.completion_tokens),
            }
        chunks = list(
            client.chat.completions.create(
                **doc, stream=True, stream_options={"include_usage": True}
            )
        )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    pieces: dict[int, list[str]] = {}
    names: dict[int, str] = {}
    finish = None
    for c in chunks:
        for choice in c.choices:
            finish = choice.finish_reason or finish
            for call in choice.delta.tool_calls or []:
                if call.function and call.function.name:
                    names[call.index] = call.function.name
                pieces.setdefault(call.index, []).append(
                    (call.function.arguments if call.function else None) or ""
                )
    usage = next((c.usage for c in chunks if c.usage), None)
    assert usage is not None
    return {
        "text": text,
        "calls": [(names[i], json.loads("".join(pieces[i]))) for i in sorted(pieces)],
        "stop": finish,
        "usage": (usage.prompt_tokens, usage.completion_tokens),
    }


def _responses(base: str, request: Any, *, whole: bool = False) -> dict[str, Any]:
    doc = json.loads(request.body().read())
    doc.pop("stream", None)
    # create(stream=True), not responses.stream(): the latter's accumulator needs the
    # content_index that llama.cpp's own deltas leave out
    with openai.OpenAI(base_url=base, api_key="k", max_retries=0) as client:
        if whole:
            response = client.responses.create(**doc)
        else:
            events = list(client.responses.create(**doc, stream=True))
            (response,) = [
                e.response
                for e in events
                if e.type.startswith("response.")
                and e.type in ("response.completed", "response.incomplete", "response.failed")
            ]
    calls = [
        (item.name, json.loads(item.arguments))
        for item in response.output
        if item.type == "function_call"
    ]
    assert response.usage is not None
    return {
        "text": response.output_text,
        "calls": calls,
        "stop": (response.status, getattr(response.incomplete_details, "reason", None)),
        "usage": (response.usage.input_tokens, response.usage.output_tokens),
    }


@pytest.mark.parametrize("upstream", UPSTREAMS)
@pytest.mark.parametrize("name", sorted(cases.STREAMS))
def test_the_openai_responses_api_through_the_gateway(llama: str, upstream: str, name: str) -> None:
    request = dialects.translate_request(cases.STREAMS[name], "responses")
    direct = _responses(llama, request)
    with gateway(llama, upstream_dialect=upstream) as (base, _):
        through = _responses(base, request)
    if name == LLAMA_CUT and upstream != "responses":
        assert direct["stop"] == ("completed", None)  # llama.cpp's quirk, directly
        direct = {**direct, "stop": ("incomplete", "max_output_tokens")}
    assert through == direct
    assert direct["text"] or direct["calls"]


@pytest.mark.parametrize("upstream", UPSTREAMS)
@pytest.mark.parametrize("name", sorted(cases.STREAMS))
def test_the_anthropic_package_through_the_gateway(llama: str, upstream: str, name: str) -> None:
    request = cases.STREAMS[name]
    direct = _anthropic(llama, request)
    with gateway(llama, upstream_dialect=upstream) as (base, _):
        through = _anthropic(base, request)
    assert through == _expected(direct, name, upstream, "end_turn")
    assert direct["text"] or direct["calls"]


@pytest.mark.parametrize("upstream", UPSTREAMS)
@pytest.mark.parametrize("name", sorted(cases.STREAMS))
def test_the_openai_package_through_the_gateway(llama: str, upstream: str, name: str) -> None:
    request = dialects.translate_request(cases.STREAMS[name], "chat")
    assert isinstance(request, ChatRequest)
    direct = _openai(llama, request)
    with gateway(llama, upstream_dialect=upstream) as (base, _):
        through = _openai(base, request)
    assert through == _expected(direct, name, upstream, "stop")
    assert direct["text"] or direct["calls"]


@pytest.mark.parametrize("name", sorted(cases.STREAMS))
def test_our_clients_of_each_dialect_agree(llama: str, name: str) -> None:
    """`stream_chat` sends a request of any dialect where its API puts it: the Messages
    request to llama.cpp's /v1/messages, its translations to /v1/chat/completions, and the
    LLM-Stream request through a gateway to a Messages upstream."""
    request = cases.STREAMS[name]

    def seen(base: str, req: Any) -> tuple[Any, ...]:
        with stream_chat(base, req, api_key="k") as s:
            list(s)
        r = s.result
        calls = tuple((c.name, c.parse_arguments().value) for c in r.tool_calls)
        assert r.usage is not None
        return r.text, calls, r.finish_reason, r.usage.prompt_tokens, r.usage.completion_tokens

    messages = seen(llama, request)
    chat = seen(llama, dialects.translate_request(request, "chat"))
    assert chat == messages
    hub = dialects.translate_request(request, "llm-stream")
    assert isinstance(hub, LLMRequest)
    with gateway(llama, upstream_dialect="messages") as (base, _):
        assert seen(base, hub) == messages


@pytest.mark.parametrize("client", ["chat", "messages", "responses"])
@pytest.mark.parametrize("name", sorted(cases.STREAMS))
def test_a_whole_answer_through_a_translating_gateway(llama: str, client: str, name: str) -> None:
    """Each SDK asks for no stream (``create()``) through a gateway to an upstream of another
    dialect, which it asks for a stream: the client reads what it reads of the stream
    directly from llama.cpp's endpoint for its dialect."""
    upstream = "messages" if client != "messages" else "chat"
    with gateway(llama, upstream_dialect=upstream) as (base, _):
        if client == "messages":
            direct = _anthropic(llama, cases.STREAMS[name])
            through = _anthropic(base, cases.STREAMS[name], whole=True)
            want = _expected(direct, name, upstream, "end_turn")
        elif client == "chat":
            request = dialects.translate_request(cases.STREAMS[name], "chat")
            direct = _openai(llama, request)
            through = _openai(base, request, whole=True)
            want = _expected(direct, name, upstream, "stop")
        else:  # llama.cpp's own /v1/responses gets the cut wrong (LLAMA_CUT): its chat's
            request = dialects.translate_request(cases.STREAMS[name], "responses")
            with gateway(llama, upstream_dialect="chat") as (chat, _):
                direct = _responses(chat, request)
            through = _responses(base, request, whole=True)
            want = direct
    assert through == want
    assert want["text"] or want["calls"]


def test_the_model_listing_through_the_gateway_by_get_and_head(llama: str) -> None:
    """``GET /v1/models`` relays llama.cpp's listing; ``HEAD`` goes up as a HEAD (attack 44
    F2) and gets the head llama.cpp gives its GET: the same status, type and length."""
    import http.client

    with gateway(llama) as (base, _):
        host, port = base.split("//")[1].split("/")[0].split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        try:
            conn.request("GET", "/v1/models")
            got = conn.getresponse()
            listing = got.read()
            assert got.status == 200
            assert json.loads(listing)["data"]
            conn.request("HEAD", "/v1/models")
            head = conn.getresponse()
            assert head.read() == b""
            assert head.status == 200
            assert head.getheader("content-length") == str(len(listing))
            assert head.getheader("content-type") == got.getheader("content-type")
        finally:
            conn.close()


def _gemini(base: str, request: Any, *, whole: bool = False) -> dict[str, Any]:
    """What google-genai reads through the gateway on Gemini's own path (at ``base``'s root):
    streamed (``generate_content_stream``) or whole (``generate_content``)."""
    from tests.interop.gemini_sdk import through

    doc = json.loads(request.body().read())
    config = {
        **doc.get("generationConfig", {}),
        **{k: doc[k] for k in ("systemInstruction", "tools", "toolConfig") if k in doc},
    }
    seen = through(
        base.removesuffix("/v1"), model=request.model, contents=doc["contents"], config=config,
        whole=whole,
    )  # fmt: skip
    assert seen.error is None
    assert seen.usage is not None
    return {"text": seen.text, "calls": list(seen.calls), "stop": seen.finish,
            "usage": seen.usage[:2]}  # fmt: skip


@pytest.mark.parametrize("whole", [False, True], ids=["stream", "whole"])
@pytest.mark.parametrize("upstream", UPSTREAMS)
@pytest.mark.parametrize("name", sorted(cases.STREAMS))
def test_the_gemini_sdk_through_the_gateway(
    llama: str, upstream: str, name: str, whole: bool
) -> None:
    """google-genai (llama.cpp serves no Gemini) through the gateway to an upstream of each
    dialect: it reads what the openai package reads from llama.cpp's Chat endpoint for the
    Chat translation of the same Gemini request, in Gemini's words (the finish: a call ends
    with ``STOP``, as Gemini's do)."""
    request = dialects.translate_request(cases.STREAMS[name], "gemini")
    direct = _openai(llama, dialects.translate_request(request, "chat"))
    with gateway(llama, upstream_dialect=upstream) as (base, _):
        through = _gemini(base, request, whole=whole)
    stop = {"stop": "STOP", "tool_calls": "STOP", "length": "MAX_TOKENS"}[direct["stop"]]
    if name == LLAMA_CUT and upstream == "responses":
        stop = "STOP"  # (llama.cpp's quirk: `LLAMA_CUT`)
    assert through == {**direct, "stop": stop}
    assert direct["text"] or direct["calls"]


def _array_read(elements: list[dict[str, Any]]) -> dict[str, Any]:
    """What a client that parses Gemini's JSON-array stream whole reads of it, by the API
    reference's fields alone (not our decoder): the text of candidate 0's parts (no
    thoughts), its function calls, its last finishReason, the last usageMetadata."""
    text, calls, stop, usage = [], [], None, None
    for element in elements:
        assert "error" not in element, element
        for candidate in element.get("candidates", ()):
            for part in candidate.get("content", {}).get("parts", ()):
                if "text" in part and not part.get("thought"):
                    text.append(part["text"])
                if "functionCall" in part:
                    calls.append((part["functionCall"]["name"], part["functionCall"]["args"]))
            stop = candidate.get("finishReason", stop)
        if "usageMetadata" in element:
            u = element["usageMetadata"]
            usage = (u["promptTokenCount"], u.get("candidatesTokenCount", 0))
    return {"text": "".join(text), "calls": calls, "stop": stop, "usage": usage}


@pytest.mark.parametrize("upstream", UPSTREAMS)
@pytest.mark.parametrize("name", sorted(cases.STREAMS))
def test_curl_reads_a_gemini_stream_without_alt_sse_as_one_json_array(
    llama: str, upstream: str, name: str
) -> None:
    """Gemini's stream without ``alt=sse`` is one JSON array (the API's default form; the
    gateway refused it with a 400): curl reads it through the gateway to an upstream of each
    dialect, and it says what the openai package reads from llama.cpp directly for the Chat
    translation of the same request."""
    curl = shutil.which("curl")
    if curl is None:
        pytest.skip("no curl on this machine")
    request = dialects.translate_request(cases.STREAMS[name], "gemini")
    direct = _openai(llama, dialects.translate_request(request, "chat"))
    with gateway(llama, upstream_dialect=upstream) as (base, _):
        url = f"{base.removesuffix('/v1')}/v1beta/models/{request.model}:streamGenerateContent"
        done = subprocess.run(
            [curl, "-sS", "-N", "-H", "Content-Type: application/json", "--data-binary", "@-",
             "-D", "-", url],
            input=request.body().read(), capture_output=True, timeout=600, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    head, _, body = done.stdout.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    assert b"\r\ncontent-type: application/json" in head.lower()
    through = _array_read(json.loads(body))
    stop = {"stop": "STOP", "tool_calls": "STOP", "length": "MAX_TOKENS"}[direct["stop"]]
    if name == LLAMA_CUT and upstream == "responses":
        stop = "STOP"  # (llama.cpp's quirk: `LLAMA_CUT`)
    assert through == {**direct, "stop": stop}
    assert direct["text"] or direct["calls"]


@pytest.mark.parametrize("client", ["openai", "anthropic"])
@pytest.mark.parametrize("name", sorted(cases.STREAMS))
def test_a_gateway_in_front_of_another_gateways_llm_stream(
    llama: str, client: str, name: str
) -> None:
    """``--upstream-dialect llm-stream``: a gateway whose upstream is an LLM-Stream server,
    another gateway in front of llama.cpp's Chat endpoint. Each SDK reads through both what
    it reads from llama.cpp directly."""
    if client == "openai":
        request: Any = dialects.translate_request(cases.STREAMS[name], "chat")
        ask: Any = _openai
    else:
        request, ask = cases.STREAMS[name], _anthropic
    direct = ask(llama, request)
    with (
        gateway(llama) as (inner, _),
        gateway(inner.removesuffix("/v1"), upstream_dialect="llm-stream") as (outer, _),
    ):
        through = ask(outer, request)
    assert through == direct
    assert direct["text"] or direct["calls"]
