"""An LLM-Stream answer in several content blocks (draft 4: "each content block is terminated
by content.stop"): the primary block's stop is the answer's `Finished`, another's a
`BlockStopped`; an LLM-Stream client of the gateway gets each block's stop as it came, a
client of a dialect with one text the primary's, and is told of the others (attack 69 F6: one
stop, block 0's with block 1's reason, reached the LLM-Stream client; two finish_reason chunks
the Chat client)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from svir_proto.errors import PeerProtocolError
from svir_proto.events import (
    BlockStopped,
    Finished,
    FinishReason,
    StreamEnded,
    StreamStarted,
    TextDelta,
)
from svir_proto.llmstream import LLMStreamDecoder, LLMStreamEncoder
from svir_proto.translate import OpenAIToLLMStream
from tests.unit.test_gateway_session import Driver, chunk, post, read

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def event(seq: int, type_: str, **fields: Any) -> bytes:
    data = json.dumps({"v": "1.0", "seq": seq, "type": type_, **fields})
    return f"event: {type_}\ndata: {data}\n\n".encode()


def stream(*stops: tuple[int, str]) -> bytes:
    """Blocks 0 and 1 interleaved ("a", "b", "c"), then ``stops`` (index, stop_reason)."""
    out = [event(0, "stream.start", model="m", created=1)]
    for i, text in ((0, "a"), (1, "b"), (0, "c")):
        out.append(
            event(len(out), "content.delta", index=i, role="assistant", delta={"text": text})
        )
    for index, reason in stops:
        out.append(event(len(out), "content.stop", index=index, stop_reason=reason))
    out.append(event(len(out), "stream.end"))
    return b"".join(out)


@pytest.mark.parametrize(
    ("stops", "ends", "finish"),
    [
        ([(0, "end_turn"), (1, "max_tokens")], ["Finished", "BlockStopped 1"], FinishReason.STOP),
        ([(1, "max_tokens"), (0, "end_turn")], ["BlockStopped 1", "Finished"], FinishReason.STOP),
        # no primary stop: the last block's is the finish, at the end (attack 73 F2)
        ([(1, "max_tokens")], ["BlockStopped 1", "Finished"], FinishReason.LENGTH),
        (
            [(1, "max_tokens"), (2, "tool_use")],
            ["BlockStopped 1", "BlockStopped 2", "Finished"],
            FinishReason.TOOL_CALLS,
        ),
        # a block's second stop is not read (attack 73 F2: two finish_reason chunks)
        ([(0, "end_turn"), (0, "max_tokens")], ["Finished"], FinishReason.STOP),
        ([(1, "end_turn"), (1, "max_tokens")], ["BlockStopped 1", "Finished"], FinishReason.STOP),
    ],
)
def test_the_primary_blocks_stop_is_the_answers_finish(
    stops: list[tuple[int, str]], ends: list[str], finish: FinishReason
) -> None:
    decoder = LLMStreamDecoder()
    events = [*decoder.feed(stream(*stops)), *decoder.close()]
    said = [
        "Finished" if type(e) is Finished else f"BlockStopped {e.index}"
        for e in events
        if isinstance(e, (Finished, BlockStopped))
    ]
    assert said == ends
    last = [e for e in events if type(e) is Finished][-1]
    assert last.reason is finish is decoder.result.finish_reason
    assert decoder.result.text == "abc"
    assert decoder.result.complete
    again = [p for p in decoder.result.problems if "came again" in p]
    assert len(again) == (len(stops) - len({i for i, _ in stops}))


def test_what_each_stop_carries_is_held_against_the_bound() -> None:
    """Attack 73 F1: 200 stops carrying 256 KiB each grew the gateway by 50 MB."""
    out = [event(0, "stream.start", model="m", created=1)]
    for i in range(1, 40):
        ext = {"finish": "x" * 1000, "reason": "other"}
        out.append(
            event(len(out), "content.stop", index=i, stop_reason="end_turn", **{"vendor:svir": ext})
        )
    decoder = LLMStreamDecoder(max_result_size=20_000)
    kept = decoder.feed(b"".join(out))  # (what came before the bound is given, then the error)
    assert 1 < len(kept) < 25
    with pytest.raises(PeerProtocolError, match="max_result_size"):
        decoder.close()


def test_the_encoder_writes_each_blocks_stop() -> None:
    encoder = LLMStreamEncoder()
    encoder.start(model="m", created=1)
    said = encoder.encode(BlockStopped(index=2, reason=FinishReason.OTHER, raw="recitation"))
    doc = json.loads(said.split(b"data: ", 1)[1])
    assert (doc["type"], doc["index"], doc["stop_reason"]) == ("content.stop", 2, "end_turn")
    assert doc["vendor:svir"] == {"finish": "recitation", "reason": "other"}
    assert encoder.lost  # (the draft has no such reason: said)


def test_each_blocks_stop_goes_out_at_the_end_in_the_order_it_came() -> None:
    out = OpenAIToLLMStream(model="m")
    events = [
        StreamStarted(response_id="", model="m"),
        TextDelta(text="a"),
        TextDelta(text="b", index=1),
        BlockStopped(index=1, reason=FinishReason.LENGTH, raw="length"),
        Finished(reason=FinishReason.STOP, raw="stop"),
        StreamEnded(complete=True, done=True),
    ]
    written = b"".join(out.feed(e) for e in events)
    lines = written.split(b"\n")
    stops = [json.loads(x[6:]) for x in lines if x.startswith(b"data: ") and b"content.stop" in x]
    assert [(s["index"], s["stop_reason"]) for s in stops] == [(1, "max_tokens"), (0, "end_turn")]


def through(body: bytes, *, whole: bool = False, media: str = "application/json") -> Driver:
    d = Driver(upstream_dialect="llm-stream")
    doc = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": not whole}
    if media != "application/json":
        doc = {"version": "1.0", "model": "m", "messages": doc["messages"], "stream": True}
    d.send(post(json.dumps(doc).encode(), media=media))
    d.connect()
    d.answer(HEAD + chunk(body) + b"0\r\n\r\n")
    return d


def test_an_llm_stream_client_gets_every_blocks_stop() -> None:
    d = through(stream((0, "end_turn"), (1, "max_tokens")), media="application/llm-request+json")
    ((status, _, got, _),) = read(d.client)
    assert status == 200
    events = [json.loads(line[6:]) for line in got.split(b"\n") if line.startswith(b"data: ")]
    assert [(e["type"], e.get("index")) for e in events if e["type"].startswith("content")] == [
        ("content.delta", 0),
        ("content.delta", 1),
        ("content.delta", 0),
        ("content.stop", 0),
        ("content.stop", 1),
    ]
    assert [e["stop_reason"] for e in events if e["type"] == "content.stop"] == [
        "end_turn",
        "max_tokens",
    ]
    assert b"svir-lost" not in got


def test_a_chat_client_gets_one_finish_and_is_told_of_the_other_block() -> None:
    d = through(stream((0, "end_turn"), (1, "max_tokens")))
    ((status, _, got, _),) = read(d.client)
    assert status == 200
    chunks = [json.loads(line[6:]) for line in got.split(b"\n") if line.startswith(b"data: {")]
    finishes = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
    assert [f for f in finishes if f] == ["stop"]
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == "abc"
    assert b": svir-lost" in got
    assert b"block 1 beside its primary one" in got


@pytest.mark.parametrize(
    ("stops", "finish"),
    [([(1, "max_tokens")], "length"), ([(0, "end_turn"), (0, "max_tokens")], "stop")],
)
def test_a_chat_client_gets_one_finish_whatever_the_stops(
    stops: list[tuple[int, str]], finish: str
) -> None:
    """Attack 73 F2: a block 0 stopped twice gave two finish_reason chunks; an answer whose
    block 0 never stopped gave none."""
    d = through(stream(*stops))
    ((status, _, got, _),) = read(d.client)
    assert status == 200
    chunks = [json.loads(x[6:]) for x in got.split(b"\n") if x.startswith(b"data: {")]
    finishes = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
    assert [f for f in finishes if f] == [finish]


def test_a_whole_answer_says_it_in_its_head() -> None:
    d = through(stream((0, "end_turn"), (1, "max_tokens")), whole=True)
    ((status, headers, got, _),) = read(d.client)
    assert status == 200
    answer = json.loads(got)
    assert answer["choices"][0]["finish_reason"] == "stop"
    assert answer["choices"][0]["message"]["content"] == "abc"
    assert "block 1 beside its primary one" in headers["svir-lost"]


def test_svir_decode_shows_each_blocks_stop() -> None:
    from tests.unit.test_cli import svir

    out = svir("decode", "-", stdin=stream((0, "end_turn"), (1, "max_tokens")))
    assert out.returncode == 0, out.stderr
    assert "finished  stop (raw 'stop')" in out.stdout
    assert "block #1 stopped length (raw 'length')" in out.stdout


def test_what_is_said_of_other_blocks_has_a_bound() -> None:
    """Attack 73 F1: a note for each block, each as long as its stop's raw reason."""
    out = [event(0, "stream.start", model="m", created=1)]
    for i in range(40):
        out.append(event(len(out), "content.stop", index=i, stop_reason="end_turn"))
    out.append(event(len(out), "stream.end"))
    d = through(b"".join(out))
    ((status, _, got, _),) = read(d.client)
    assert status == 200
    notes = [line for line in got.split(b"\n") if line.startswith(b": svir-lost")]
    assert 1 < len(notes) <= 16
    assert b"more" in notes[-1]
