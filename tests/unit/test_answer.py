"""`svir_proto.answer`: the fold of every conformance recording's events (every dialect, real
servers' bytes and the references' examples) is the result the dialect's own decoder keeps;
`replay` gives events that fold into the same result again; and each dialect's whole answer
(`DialectSpec.answer`) is read by the vendor's own SDK as that result."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from svir_proto import dialects
from svir_proto._weights import BLOCK, RUN
from svir_proto.answer import AnswerFold, replay, unsigned_reasoning
from svir_proto.errors import AnswerTooLarge, Failure, FailureKind
from svir_proto.events import (
    Completion,
    Finished,
    FinishReason,
    ReasoningDelta,
    ReasoningSignature,
    StreamEnded,
    StreamFailed,
    StreamStarted,
    TextDelta,
    ToolCall,
    Usage,
    text_run,
)
from tests.helpers import CONFORMANCE, untraced

FOLDERS = {
    "openai": "chat",
    "llamacpp": "chat",
    "anthropic": "messages",
    "responses": "responses",
    "gemini": "gemini",
    "llmstream": "llm-stream",
}
RECORDINGS = [
    (path, name)
    for folder, name in FOLDERS.items()
    for path in sorted((CONFORMANCE / folder).glob("*.sse"))
]
KEPT = (
    "text",
    "reasoning",
    "reasoning_blocks",
    "refusal",
    "tool_calls",
    "finish_reason",
    "finish_raw",
    "usage",
    "error",
    "done",
    "complete",
)
"""The `Completion` fields a whole answer is made of."""


def decoded(path: Path, name: str) -> tuple[list[Any], Completion]:
    meta = json.loads(path.with_suffix(".json").read_text("utf-8"))
    options = {k: v for k, v in meta.get("options", {}).items() if k == "declared_tools"}
    decoder = dialects.dialect(name).decoder(**options)
    try:
        events = decoder.feed(path.read_bytes()) + decoder.close()
    except Exception:  # a recording of a protocol error: what came before it
        events = []
    return events, decoder.result


def kept(result: Completion) -> dict[str, Any]:
    return {key: getattr(result, key) for key in KEPT}


@pytest.mark.parametrize(("path", "name"), RECORDINGS, ids=lambda v: getattr(v, "stem", v))
def test_the_fold_of_a_recordings_events_is_what_its_decoder_keeps(path: Path, name: str) -> None:
    events, result = decoded(path, name)
    if not events:
        pytest.skip("a protocol error before any event")
    fold = AnswerFold()
    fold.extend(events)
    assert kept(fold.result()) == kept(result)
    again = AnswerFold()
    again.extend(replay(fold.result()))
    assert kept(again.result()) == kept(result)


def test_enough_recordings_of_every_dialect() -> None:
    for folder in FOLDERS:
        assert sum(1 for path, _ in RECORDINGS if path.parent.name == folder) >= 4, folder


def test_the_identity_the_answer_and_the_bound() -> None:
    bound = BLOCK + 2 * RUN + 10  # a signed block and its place, the text's run that ended
    fold = AnswerFold(response_id="ours", model="m", created=5, max_size=bound)
    fold.add(StreamStarted(response_id="theirs", model="", created=None))
    fold.add(StreamStarted(response_id="later", model="x", created=9))  # the first one counts
    assert (fold.response_id, fold.model, fold.created) == ("theirs", "m", 5)
    fold.add(text_run(b"ab\nc\\u00e9", 2))  # a run is its deltas
    fold.add(ReasoningDelta(text="r1", carrier="thinking"))
    fold.add(ReasoningSignature(signature="s", carrier="thinking"))
    fold.add(ReasoningDelta(text="r2", carrier="thinking"))
    result = fold.result()
    assert result.text == "abcé"
    assert [b.text for b in result.reasoning_blocks] == ["r1"]
    assert unsigned_reasoning(result) == "r2"
    assert not result.closed
    assert not result.complete
    with pytest.raises(AnswerTooLarge, match=f"{bound} characters"):
        fold.add(TextDelta(text="0123"))
    assert fold.error is None
    fold.add(StreamEnded(complete=True, done=True))  # nothing after the bound is kept
    assert fold.ended is not None
    assert not fold.result().done
    assert fold.result().text == "abcé"


def test_nothing_after_the_end_is_read() -> None:
    fold = AnswerFold()
    failure = Failure(kind=FailureKind.OVERLOADED, message="busy")
    fold.extend(
        [
            StreamFailed(error=failure),
            StreamFailed(error=Failure(kind=FailureKind.UNEXPECTED, message="later")),
            TextDelta(text="a"),
            Finished(reason=FinishReason.STOP, raw="stop"),
            StreamEnded(complete=True, done=True),
            TextDelta(text="b"),
        ]
    )
    assert fold.result().text == "a"
    assert fold.error is failure  # the first failure
    assert not fold.result().complete


# -- each dialect's whole answer, read by the vendor's SDK ------------------------------------

openai_types = pytest.importorskip("openai.types")
anthropic_types = pytest.importorskip("anthropic.types")
responses_types = pytest.importorskip("openai.types.responses")

STOPS = ("end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal")
ANSWERED = [(p, n) for p, n in RECORDINGS if "cut" not in p.stem]


def whole(name: str, result: Completion) -> bytes | Failure:
    spec = dialects.dialect(name)
    assert spec.answer is not None
    return spec.answer(result, "m", "", 7)


@pytest.mark.parametrize(("path", "name"), ANSWERED, ids=lambda v: getattr(v, "stem", v))
def test_the_sdks_read_each_whole_answer_as_the_result(path: Path, name: str) -> None:
    _events, result = decoded(path, name)
    if result.error is not None or not result.done:
        pytest.skip("no answer: a failure or a cut is an error status")
    doc = json.loads(whole("chat", result))
    finish = doc["choices"][0]["finish_reason"]
    if finish not in ("stop", "length", "tool_calls", "content_filter"):  # the SDK's types
        # none, or another dialect's own reason (Gemini's MALFORMED_FUNCTION_CALL), as the
        # stream writes it: no OpenAI value would say the same
        assert result.finish_reason in (None, FinishReason.OTHER)
        assert finish == result.finish_raw
        doc["choices"][0]["finish_reason"] = "stop"
    chat = openai_types.chat.ChatCompletion.model_validate(doc)
    message = chat.choices[0].message
    assert (message.content or "") == result.text
    assert (message.refusal or "") == result.refusal
    calls = [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []]
    assert calls == [(c.id, c.name, c.arguments) for c in result.tool_calls]
    if result.reasoning:
        extra = message.model_extra or {}
        assert result.reasoning in (extra.get("reasoning_content"), extra.get("reasoning"))
    assert (chat.id, chat.model, chat.created) == ("chatcmpl-svir", "m", 7)
    if result.usage is not None:
        assert chat.usage is not None
        assert chat.usage.completion_tokens == (result.usage.completion_tokens or 0)
    body = whole("messages", result)
    if isinstance(body, Failure):  # a call whose arguments are no JSON object
        assert any(c.parse_arguments().error or not c.arguments.strip().startswith("{")
                   for c in result.tool_calls)  # fmt: skip
    else:
        doc = json.loads(body)
        if result.finish_reason is FinishReason.OTHER and doc["stop_reason"] not in STOPS:
            assert doc["stop_reason"] == result.finish_raw  # as the stream writes it
            doc["stop_reason"] = "end_turn"  # for the SDK's types
        msg = anthropic_types.Message.model_validate(doc)
        assert msg.id == "msg_svir"
        assert "".join(b.text for b in msg.content if b.type == "text") == (
            result.text + result.refusal
        )
        thinking = "".join(b.thinking for b in msg.content if b.type == "thinking")
        assert thinking == result.reasoning
        tools = [(b.id, b.name, b.input) for b in msg.content if b.type == "tool_use"]
        assert tools == [
            (c.id, c.name, c.parse_arguments().value if c.arguments.strip() else {})
            for c in result.tool_calls
        ]
        if result.usage is not None:
            assert msg.usage.output_tokens == (result.usage.completion_tokens or 0)
    doc = json.loads(whole("responses", result))
    reason = (doc["incomplete_details"] or {}).get("reason")
    if reason not in (None, "max_output_tokens", "content_filter"):  # the SDK's types
        # another dialect's own reason (Anthropic's pause_turn), as the stream writes it
        assert reason == result.finish_raw
        assert result.finish_reason is FinishReason.OTHER
        doc["incomplete_details"]["reason"] = "max_output_tokens"
    details = (doc["usage"] or {}).get("input_tokens_details", {})
    details.setdefault("cache_write_tokens", 0)  # written when known (`_wire.usage_out`)
    response = responses_types.Response.model_validate(doc)
    assert response.output_text == result.text
    functions = [
        (o.call_id, o.name, o.arguments) for o in response.output if o.type == "function_call"
    ]
    assert functions == [(c.id, c.name, c.arguments) for c in result.tool_calls]
    finish = result.finish_reason
    if result.filtered:  # (blocked after it finished: fidelity 43 F01)
        assert (response.status, reason) == ("incomplete", "content_filter")
        assert json.loads(whole("messages", result))["stop_reason"] == "refusal"
        return
    assert response.status == (
        "completed" if finish in (FinishReason.STOP, FinishReason.TOOL_CALLS) else "incomplete"
    )


def test_a_tool_use_whose_arguments_are_no_object_is_a_failure() -> None:
    result = Completion(
        tool_calls=(ToolCall(index=0, id="c", name="f", arguments="[1]"),),
        finish_reason=FinishReason.TOOL_CALLS,
        finish_raw="tool_calls",
        done=True,
        complete=True,
    )
    body = whole("messages", result)
    assert isinstance(body, Failure)
    assert body.kind is FailureKind.UNEXPECTED
    assert body.code == "invalid_tool_arguments"
    assert b'"arguments":"[1]"' in whole("chat", result)  # OpenAI's arguments are a string


def test_the_chat_answer_as_openai_writes_it() -> None:
    result = Completion(
        reasoning="hm",
        reasoning_carrier="reasoning",
        refusal="no",
        finish_reason=FinishReason.CONTENT_FILTER,
        finish_raw="end_turn",  # another dialect's raw value: written as OpenAI's
        usage=Usage(prompt_tokens=3, completion_tokens=2, total_tokens=5, cached_tokens=1),
        done=True,
        complete=True,
    )
    doc = json.loads(whole("chat", result))
    message = doc["choices"][0]["message"]
    assert message == {"role": "assistant", "content": None, "refusal": "no", "reasoning": "hm"}
    assert doc["choices"][0]["finish_reason"] == "content_filter"
    assert doc["usage"]["prompt_tokens_details"] == {"cached_tokens": 1}
    assert doc["object"] == "chat.completion"
    empty = json.loads(whole("chat", Completion(done=True)))
    assert empty["choices"][0]["message"]["content"] == ""  # no text, no calls: ""
    assert empty["choices"][0]["finish_reason"] is None
    assert "usage" not in empty


def test_an_answer_of_one_character_pieces_is_held_at_about_its_size() -> None:
    """A piece held alone costs some 50 bytes besides its characters: an upstream that cut
    its answer into one-character deltas made the fold (and the Responses encoder) hold 20
    times the answer's size (185 MB for 2 Mi characters). `Pieces` joins them as they come."""
    import tracemalloc

    from svir_proto.events import text_delta
    from svir_proto.responses.encoder import ResponsesStreamEncoder

    n = 100_000
    size = 4 * n  # one character past U+FFFF: 4 bytes each in a str

    def fill(fold: AnswerFold | ResponsesStreamEncoder) -> None:
        for i in range(n):
            piece = text_delta(chr(0x1F600 + i % 50))
            fold.add(piece) if isinstance(fold, AnswerFold) else fold.encode(piece)

    for make in (AnswerFold, ResponsesStreamEncoder):
        fill(make())  # first: a tracer (coverage) records the lines run in tables that grow
        fold = make()
        with untraced():
            tracemalloc.start()
            try:
                fill(fold)
                held = tracemalloc.get_traced_memory()[0]
            finally:
                tracemalloc.stop()
        assert held < 2 * size, (make.__name__, held)
    text = "".join(chr(0x1F600 + i % 50) for i in range(n))
    assert fold.response()["output"][0]["content"][0]["text"] == text


def test_pieces_join_as_they_come_and_read_whole() -> None:
    from svir_proto._pieces import JOIN, Pieces

    held = Pieces()
    assert not held
    assert held.text() == ""
    for i in range(3 * JOIN + 5):
        held.append(str(i % 10))
    assert held
    want = "".join(str(i % 10) for i in range(3 * JOIN + 5))
    assert held.text() == want
    assert held.text() == want  # kept joined
    held.append("")
    assert held.text() == want
    held.set("x")
    assert held.text() == "x"
    held.set("")
    assert not held
    empty = Pieces()
    empty.append("")
    assert not empty


def test_signatures_and_verdicts_count_against_the_bound() -> None:
    """Attack round 30, F2: four 7 MiB redacted blocks (a signature and nothing else) made a
    whole answer of 29 MB under --max-answer 1000, where the stream ended with too_large."""
    from svir_proto.answer import VERDICT
    from svir_proto.events import FilterVerdict

    fold = AnswerFold(max_size=1000)
    fold.add(ReasoningSignature(signature="s" * 850, carrier="thinking", redacted=True))
    with pytest.raises(AnswerTooLarge):
        fold.add(ReasoningSignature(signature="s" * 200, carrier="thinking", redacted=True))
    verdicts = AnswerFold(max_size=3 * VERDICT)
    verdict = FilterVerdict(scope="completion", results=())
    verdicts.extend([verdict] * 3)
    with pytest.raises(AnswerTooLarge):
        verdicts.add(verdict)


def test_a_call_left_open_at_the_end_is_a_cut_not_a_whole_answer() -> None:
    """Attack round 30, F3: a Messages upstream sent ``message_stop`` with its ``tool_use``
    block still open, and a whole answer was a 200 with ``finish_reason: tool_calls`` and
    arguments ``{"path": "/et``. Its input never ended: the stream is a cut (as Gemini's
    decoder reads a body that ends inside a streamed call), and the gateway answers 502."""
    from svir_proto.anthropic import MessagesStreamDecoder

    def ev(name: str, obj: dict[str, Any]) -> bytes:
        return f"event: {name}\ndata: {json.dumps({'type': name, **obj})}\n\n".encode()

    message = {"id": "m", "type": "message", "role": "assistant", "content": [], "model": "x",
               "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip
    body = (
        ev("message_start", {"message": message})
        + ev(
            "content_block_start",
            {
                "index": 0,
                "content_block": {"type": "tool_use", "id": "t", "name": "read", "input": {}},
            },
        )
        + ev(
            "content_block_delta",
            {"index": 0, "delta": {"type": "input_json_delta", "partial_json": '{"path": "/et'}},
        )
        + ev("message_delta", {"delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}})
        + ev("message_stop", {})
    )
    decoder = MessagesStreamDecoder()
    fold = AnswerFold()
    fold.extend(decoder.feed(body) + decoder.close())
    result = fold.result()
    assert not result.done
    assert result.tool_calls == ()
    assert decoder.result.pending_tool_calls[0].arguments == '{"path": "/et'
    closed = body.replace(
        ev("message_delta", {"delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}}),
        ev("content_block_stop", {"index": 0}).replace(b"/et", b"")
        + ev(
            "message_delta", {"delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}}
        ),
    )
    decoder = MessagesStreamDecoder()
    decoder.feed(closed)
    decoder.close()
    assert decoder.result.complete  # closed, the same call is whole (if not valid JSON)
    assert decoder.result.tool_calls[0].arguments == '{"path": "/et'
