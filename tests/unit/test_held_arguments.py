"""A tool call's arguments are held at about their size, however finely the upstream cut them.

A string held alone costs some 50 bytes besides its characters: arguments that came one
character per piece, held as their pieces, cost 20 to 80 times their size (176 MB for the
2 Mi characters `--max-answer` allows, in every stream a gateway relays: its decoders keep no
text, but assemble every call). The decoders' `ToolCallAssembler`, the Messages encoder's
waiting calls and Gemini's streamed arguments hold them in `Pieces`."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from svir_proto.anthropic import MessagesStreamDecoder, MessagesStreamEncoder
from svir_proto.events import (
    Event,
    Finished,
    FinishReason,
    StreamEnded,
    ToolCall,
    ToolCallDelta,
)
from svir_proto.gemini import GeminiStreamDecoder
from svir_proto.openai import ChatStreamDecoder
from svir_proto.responses import ResponsesStreamDecoder
from tests.helpers import untraced

N = 50_000
SIZE = 4 * N  # one character past U+FFFF a piece: 4 bytes each in a str


def piece(i: int) -> str:
    return chr(0x1F600 + i % 50)


def sse(doc: Any, event: str | None = None, separators: tuple[str, str] = (",", ":")) -> bytes:
    head = b"" if event is None else b"event: " + event.encode() + b"\n"
    data = json.dumps(doc, ensure_ascii=False, separators=separators)
    return head + b"data: " + data.encode() + b"\n\n"


def chat(delta: dict[str, Any], finish: str | None = None, spaced: bool = False) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    doc = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
           "choices": [choice]}  # fmt: skip
    return sse(doc, separators=(", ", ": ") if spaced else (",", ":"))


def chat_stream(spaced: bool = False) -> Iterator[bytes]:
    """Compact, each piece is read on the envelope's lane; spaced (Python's separators), the
    general way."""
    yield chat({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                "function": {"name": "get", "arguments": ""}}]},
               spaced=spaced)  # fmt: skip
    for i in range(N):
        yield chat({"tool_calls": [{"index": 0, "function": {"arguments": piece(i)}}]},
                   spaced=spaced)  # fmt: skip
    yield chat({}, "tool_calls") + b"data: [DONE]\n\n"


def messages_stream() -> Iterator[bytes]:
    message = {"id": "msg_1", "type": "message", "role": "assistant", "content": [],
               "model": "claude", "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip
    yield sse({"type": "message_start", "message": message}, "message_start")
    block = {"type": "tool_use", "id": "toolu_1", "name": "get", "input": {}}
    yield sse({"type": "content_block_start", "index": 0, "content_block": block},
              "content_block_start")  # fmt: skip
    for i in range(N):
        delta = {"type": "input_json_delta", "partial_json": piece(i)}
        yield sse({"type": "content_block_delta", "index": 0, "delta": delta},
                  "content_block_delta")  # fmt: skip
    yield sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
    yield sse({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
               "usage": {"output_tokens": 5}}, "message_delta")  # fmt: skip
    yield sse({"type": "message_stop"}, "message_stop")


def responses_stream() -> Iterator[bytes]:
    seq = iter(range(N + 10))
    resp = {"id": "resp_1", "object": "response", "status": "in_progress", "model": "m",
            "output": []}  # fmt: skip
    yield sse({"type": "response.created", "sequence_number": next(seq), "response": resp},
              "response.created")  # fmt: skip
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get",
            "arguments": "", "status": "in_progress"}  # fmt: skip
    yield sse({"type": "response.output_item.added", "sequence_number": next(seq),
               "output_index": 0, "item": item}, "response.output_item.added")  # fmt: skip
    for i in range(N):
        yield sse({"type": "response.function_call_arguments.delta",
                   "sequence_number": next(seq), "item_id": "fc_1", "output_index": 0,
                   "delta": piece(i)}, "response.function_call_arguments.delta")  # fmt: skip
    whole = "".join(piece(i) for i in range(N))
    yield sse({"type": "response.output_item.done", "sequence_number": next(seq),
               "output_index": 0, "item": {**item, "arguments": whole, "status": "completed"}},
              "response.output_item.done")  # fmt: skip
    done = {**resp, "status": "completed", "output": [{**item, "arguments": whole}]}
    yield sse({"type": "response.completed", "sequence_number": next(seq), "response": done},
              "response.completed")  # fmt: skip


def gemini(part: dict[str, Any], finish: str | None = None) -> bytes:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": [part]}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return sse({"candidates": [candidate], "modelVersion": "g"})


def gemini_stream() -> Iterator[bytes]:
    """Vertex AI's streamed arguments (`svir_proto.gemini._partial`): a string's pieces."""
    opening = {
        "name": "get",
        "willContinue": True,
        "partialArgs": [{"jsonPath": "$.s", "stringValue": "", "willContinue": True}],
    }
    yield gemini({"functionCall": opening})
    for i in range(N):
        more = [{"jsonPath": "$.s", "stringValue": piece(i), "willContinue": True}]
        yield gemini({"functionCall": {"partialArgs": more, "willContinue": True}})
    yield gemini({"functionCall": {}}) + gemini({"text": ""}, "STOP")


DECODERS: dict[str, tuple[Callable[[], Any], Callable[[], Iterator[bytes]]]] = {
    "chat": (lambda: ChatStreamDecoder(keep_text=False), chat_stream),
    "chat-spaced": (lambda: ChatStreamDecoder(keep_text=False), lambda: chat_stream(spaced=True)),
    "messages": (lambda: MessagesStreamDecoder(keep_text=False), messages_stream),
    "responses": (lambda: ResponsesStreamDecoder(keep_text=False), responses_stream),
    "gemini": (lambda: GeminiStreamDecoder(keep_text=False), gemini_stream),
}


def batched(events: Iterator[bytes], size: int) -> Iterator[bytes]:
    """``size`` events a read (runs of deltas: the framer's lanes, a template's runs)."""
    batch: list[bytes] = []
    for data in events:
        batch.append(data)
        if len(batch) == size:
            yield b"".join(batch)
            batch.clear()
    yield b"".join(batch)


@pytest.mark.parametrize("per_read", [1, 64])
@pytest.mark.parametrize("dialect", list(DECODERS))
def test_a_decoder_holds_one_character_argument_pieces_at_about_their_size(
    dialect: str, per_read: int
) -> None:
    """Measured on the second stream of its kind: under coverage, the first run through a line
    records it in the tracer's tables, and a table that grows then (some 230 KB at once) would
    count as held."""
    make, stream = DECODERS[dialect]
    warm = make()  # (a tracer's own tables, below: fed as the measured one is, every arc)
    warming = stream()
    for data in [next(warming), next(warming), *batched(warming, per_read)]:
        warm.feed(data)
    decoder = make()
    events = stream()
    pieces = [next(events), next(events)]  # the call's start (and, for chat, its first piece)
    reads = batched(events, per_read)
    deltas = 0
    with untraced():
        tracemalloc.start()
        try:
            for data in pieces:
                decoder.feed(data)
            for i, data in enumerate(reads):
                for event in decoder.feed(data):
                    deltas += isinstance(event, ToolCallDelta) and bool(event.arguments)
                if i == (N - 64) // per_read:
                    held = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
    assert held < 2 * SIZE, f"{held / SIZE:.1f} times the arguments' size held"
    decoder.close()
    whole = "".join(piece(i) for i in range(N))
    if dialect == "gemini":  # built into the arguments object, given whole at the end
        got = [(c.name, json.loads(c.arguments)) for c in decoder.result.tool_calls]
        assert got == [("get", {"s": whole})]
        return
    assert [(c.name, c.arguments) for c in decoder.result.tool_calls] == [("get", whole)]
    assert deltas >= N - 1  # each piece was passed on as it came


def test_the_messages_encoder_holds_a_waiting_call_at_about_its_size() -> None:
    """Calls interleave in a Chat stream; a Messages client gets one block at a time, so the
    second call's arguments wait for the first call's block to close."""
    encoder = MessagesStreamEncoder(model="m")
    first = ToolCallDelta(index=0, id="call_0", name="look", arguments="{")
    written = encoder.encode(first) + encoder.encode(
        ToolCallDelta(index=1, id="call_1", name="get")
    )
    with untraced():
        tracemalloc.start()
        try:
            for i in range(N):
                written += encoder.encode(ToolCallDelta(index=1, arguments=piece(i)))
            held = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
    assert held < 2 * SIZE, f"{held / SIZE:.1f} times the arguments' size held"
    assert b"call_1" not in written  # still waiting: not written yet
    end: list[Event] = [
        ToolCall(index=0, id="call_0", name="look", arguments="{"),
        Finished(reason=FinishReason.TOOL_CALLS, raw="tool_calls"),
        StreamEnded(complete=True, done=True),
    ]
    for event in end:
        written += encoder.encode(event)
    blocks: dict[int, str] = {}
    for line in written.split(b"\n"):
        if line.startswith(b"data: "):
            doc = json.loads(line[6:])
            if doc["type"] == "content_block_delta":
                blocks[doc["index"]] = blocks.get(doc["index"], "") + doc["delta"]["partial_json"]
    assert blocks == {0: "{", 1: "".join(piece(i) for i in range(N))}
