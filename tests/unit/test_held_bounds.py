"""What a peer can make a decoder hold beyond text (attack 34): problem notes, reasoning blocks
and tool calls' ids and names are all bounded, whatever the dialect, and a stream of them costs
time linear in its length. The gateway builds its decoders and folds with ``--max-answer`` as
their ``max_result_size``; these are the bounds it relies on."""

from __future__ import annotations

import json
from typing import Any

import pytest

from svir_proto._notes import MAX_NOTE, MAX_NOTES, Notes
from svir_proto._weights import BLOCK, CALL, PART, RUN
from svir_proto.answer import AnswerFold
from svir_proto.anthropic import MessagesStreamDecoder
from svir_proto.errors import AnswerTooLarge, PeerProtocolError
from svir_proto.events import FilterVerdict, ReasoningSignature, ToolCall
from svir_proto.gemini import GeminiStreamDecoder
from svir_proto.llmstream import LLMStreamDecoder
from svir_proto.openai import ChatStreamDecoder
from tests.helpers import run


def test_notes_are_said_once_cut_and_counted_past_their_bound() -> None:
    notes = Notes()
    notes.append("a")
    notes.append("a")
    notes.append("x" * 10_000)
    assert notes == ["a", "x" * (MAX_NOTE - 3) + "..."]
    for i in range(MAX_NOTES + 10):
        notes.append(f"note {i}")
    assert len(notes) == MAX_NOTES + 1
    assert notes[MAX_NOTES - 1] == f"note {MAX_NOTES - 3}"  # the first 64, in order
    assert notes[-1] == f"12 more problems were not noted (at most {MAX_NOTES} notes are kept)"


def anthropic(*events: dict[str, Any]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


START = {"type": "message_start", "message": {"id": "msg_1", "model": "m", "usage": {}}}


def test_distinct_unknown_events_keep_a_bounded_list_of_notes() -> None:
    """Fifty thousand unknown event types (a linear ``not in`` each took seconds) and a few of a
    megabyte each: the notes stay bounded in number and length, and every one is counted."""
    body = anthropic(START, *({"type": f"t{i}"} for i in range(20_000)))
    body += anthropic(*({"type": f"{i}" + "p" * 1_000_000} for i in range(3)))
    d = MessagesStreamDecoder()
    run(d, [body])
    problems = d.result.problems
    assert len(problems) == MAX_NOTES + 1
    assert max(map(len, problems)) <= MAX_NOTE
    assert problems[-1].endswith(
        f"more problems were not noted (at most {MAX_NOTES} notes are kept)"
    )
    assert int(problems[-1].split()[0]) >= 20_003 - MAX_NOTES  # (and the stream's end's)


def test_llm_stream_notes_are_bounded_too() -> None:
    def ev(seq: int, type_: str, **fields: Any) -> bytes:
        obj = {"v": "1.0", "seq": seq, "type": type_, **fields}
        return f"event: {type_}\ndata: {json.dumps(obj)}\n\n".encode()

    body = ev(0, "stream.start", model="m", created=1)
    body += b"".join(ev(i + 1, f"x.{i}") for i in range(5_000))
    d = LLMStreamDecoder()
    run(d, [body])
    assert len(d.result.problems) == MAX_NOTES + 1


def test_empty_redacted_blocks_weigh_against_the_bound() -> None:
    """An empty ``redacted_thinking`` block weighed nothing: a million of them held 170 MB under
    a bound of a thousand characters."""
    blocks = []
    for i in range(200):
        blocks.append({"type": "content_block_start", "index": i,
                       "content_block": {"type": "redacted_thinking", "data": ""}})  # fmt: skip
        blocks.append({"type": "content_block_stop", "index": i})
    d = MessagesStreamDecoder(keep_text=False, max_result_size=100 * BLOCK)
    with pytest.raises(PeerProtocolError) as caught:
        run(d, [anthropic(START, *blocks)])
    assert caught.value.limit == "max_result_size"
    assert len(d.result.reasoning_blocks) <= 100


def test_one_character_gemini_signatures_weigh_a_block_each() -> None:
    parts = [{"thoughtSignature": "a"}] * 500
    chunk = {"candidates": [{"content": {"parts": parts, "role": "model"}, "index": 0}]}
    body = b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n"
    d = GeminiStreamDecoder(keep_text=False, max_result_size=2_000)  # 500 characters in all
    with pytest.raises(PeerProtocolError) as caught:
        run(d, [body])
    assert caught.value.limit == "max_result_size"


def test_a_tool_calls_id_and_name_weigh_against_the_bound() -> None:
    """The ids and names of calls are held to the end, as their arguments are (a 3 MB id each
    made a 240 MB whole answer under a bound of a thousand characters)."""
    big = "i" * 5_000
    call = {"type": "tool_use", "id": big, "name": "f", "input": {}}
    messages = anthropic(START, {"type": "content_block_start", "index": 0, "content_block": call})
    with pytest.raises(PeerProtocolError) as caught:
        run(MessagesStreamDecoder(keep_text=False, max_result_size=4_000), [messages])
    assert caught.value.limit == "max_result_size"
    named = messages.replace(b'"name": "f"', b'"name": "' + b"n" * 5_000 + b'"').replace(
        big.encode(), b"t1"
    )
    with pytest.raises(PeerProtocolError):
        run(MessagesStreamDecoder(keep_text=False, max_result_size=4_000), [named])
    piece = {"index": 0, "id": big, "type": "function", "function": {"name": "f", "arguments": ""}}
    chunk = {"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [piece]}}]}
    chat = b"data: " + json.dumps(chunk).encode() + b"\n\n"
    with pytest.raises(PeerProtocolError) as caught:
        run(ChatStreamDecoder(keep_text=False, max_result_size=4_000), [chat])
    assert caught.value.limit == "max_result_size"
    assert run(ChatStreamDecoder(keep_text=False, max_result_size=6_000), [chat])


def test_a_whole_answer_weighs_blocks_ids_and_names() -> None:
    fold = AnswerFold(
        response_id="r", model="m", created=1, max_size=10 * (BLOCK + RUN)
    )  # each and its place
    for _ in range(10):
        fold.add(ReasoningSignature(signature="", carrier="redacted"))
    with pytest.raises(AnswerTooLarge):
        fold.add(ReasoningSignature(signature="", carrier="redacted"))
    fold = AnswerFold(response_id="r", model="m", created=1, max_size=1_000)
    with pytest.raises(AnswerTooLarge):
        fold.add(ToolCall(index=0, id="i" * 600, name="n" * 600, arguments="{}", declared=None))


def llm(seq: int, type_: str, **fields: Any) -> bytes:
    obj = {"v": "1.0", "seq": seq, "type": type_, **fields}
    return f"event: {type_}\ndata: {json.dumps(obj)}\n\n".encode()


def test_a_verdict_weighs_what_it_names() -> None:
    """A content-filter verdict weighed a fixed 256 however long its categories were (the
    review of stop 33: 30 verdicts held 5.3 MB under a bound of 10,000), and LLM-Stream's
    nothing at all: each now weighs its strings too, in every decoder and in a whole answer."""
    name = "c" * 5_000
    found = {name: {"filtered": False, "severity": "safe"}}
    choice = {"index": 0, "delta": {"content": "a"}, "content_filter_results": found}
    chunk = {"id": "c", "choices": [choice]}
    chat = b"data: " + json.dumps(chunk).encode() + b"\n\n"
    with pytest.raises(PeerProtocolError) as caught:
        run(ChatStreamDecoder(keep_text=False, max_result_size=4_000), [chat])
    assert caught.value.limit == "max_result_size"
    events = run(ChatStreamDecoder(keep_text=False), [chat])
    verdict = next(e for e in events if isinstance(e, FilterVerdict))
    fold = AnswerFold(response_id="r", model="m", created=1, max_size=4_000)
    with pytest.raises(AnswerTooLarge):
        fold.add(verdict)
    start = llm(0, "stream.start", model="m", created=1)
    filtered = {"vendor:svir": {"filter": {"scope": "completion", "results": [{"category": "h"}]}}}
    deltas = b"".join(
        llm(i + 1, "content.delta", index=0, role="assistant", delta={"text": ""}, **filtered)
        for i in range(100)
    )
    with pytest.raises(PeerProtocolError) as caught:
        run(LLMStreamDecoder(keep_text=False, max_result_size=10_000), [start + deltas])
    assert caught.value.limit == "max_result_size"


def test_llm_stream_calls_and_blocks_are_counted_and_weighed() -> None:
    """LLM-Stream kept every ``tool.call`` and every block stopped, at a few characters each
    (the review of stop 33: 178,316 calls, 43 MB, under a bound of a million)."""
    start = llm(0, "stream.start", model="m", created=1)
    calls = b"".join(
        llm(i + 1, "tool.call", index=i, id=f"c{i}", name="f", arguments="") for i in range(200)
    )
    with pytest.raises(PeerProtocolError) as caught:
        run(LLMStreamDecoder(), [start + calls])
    assert (caught.value.limit, caught.value.limit_value) == ("max_tool_calls", 128)
    with pytest.raises(PeerProtocolError) as caught:
        run(LLMStreamDecoder(max_result_size=100 * CALL), [start + calls])
    assert caught.value.limit == "max_result_size"
    stops = b"".join(
        llm(i + 1, "content.stop", index=i, stop_reason="end_turn") for i in range(200)
    )
    with pytest.raises(PeerProtocolError) as caught:
        run(LLMStreamDecoder(keep_text=False, max_result_size=10_000), [start + stops])
    assert caught.value.limit == "max_result_size"
    again = b"".join(llm(i + 1, "content.stop", index=0, stop_reason="end_turn") for i in range(5))
    # a block weighs once, with its raw reason ("stop"): a second stop is not read
    stopped = LLMStreamDecoder(keep_text=False, max_result_size=PART + len("stop"))
    run(stopped, [start + again + llm(6, "stream.end")])
    assert stopped.result.complete


def test_responses_parts_weigh_without_the_text() -> None:
    """Each new ``content_index`` opened a part a relay's decoder (``keep_text=False``) never
    charged (the review of stop 33: 21.8 MB held for 257 characters charged)."""
    from svir_proto.responses import ResponsesStreamDecoder

    def ev(seq: int, type_: str, **fields: Any) -> bytes:
        obj = {"type": type_, "sequence_number": seq, **fields}
        return f"event: {type_}\ndata: {json.dumps(obj)}\n\n".encode()

    item = {"id": "m", "type": "message", "role": "assistant", "content": []}
    body = ev(0, "response.created", response={"id": "r"})
    body += ev(1, "response.output_item.added", output_index=0, item=item)
    body += b"".join(
        ev(i + 2, "response.output_text.delta", item_id="m", output_index=0, content_index=i,
           delta="x")
        for i in range(300)
    )  # fmt: skip
    with pytest.raises(PeerProtocolError) as caught:
        run(ResponsesStreamDecoder(keep_text=False, max_result_size=10_000), [body])
    assert caught.value.limit == "max_result_size"
