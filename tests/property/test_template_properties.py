"""Hypothesis: runs of deltas a template reads (`svir_proto._template`), in the Responses and
LLM-Stream dialects, decode alike however they are split: in one piece, one event per read
(the express), in reads that end inside events (the read-ahead), byte by byte; with the
shapes an independent attack on the read-ahead tried (data in two lines, CR line ends, a
wrong number, escapes, an item that changes), the same events, error and result."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from svir_proto import PeerProtocolError
from svir_proto.llmstream import LLMStreamDecoder
from svir_proto.responses import ResponsesStreamDecoder
from tests.helpers import splits

MSG = {"id": "msg_1", "type": "message", "status": "in_progress", "content": [], "role": "m"}
TEXTS = st.sampled_from(["a", "", " b", 'q"', "é\\", "\u2028", "\ud7ff", "x" * 300, "{\\n}"])


def outcome(make: Any, pieces: list[bytes]) -> tuple[list[Any], Any, Any]:
    """The events up to the error (if any), the error's kind, offset and limit, the result."""
    decoder = make()
    events: list[Any] = []
    error = None
    try:
        for piece in pieces:
            events.extend(decoder.feed(piece))
        events.extend(decoder.close())
    except PeerProtocolError as exc:
        error = (type(exc).__name__, exc.offset, exc.limit)
    return events, error, decoder.result


def delta(obj: dict[str, Any], name: bytes, draw: st.DrawFn) -> bytes:
    """One delta event; its data perhaps in two lines (cut after a comma or a colon, the
    second perhaps without its ``data: ``), perhaps with CRLF line ends."""
    payload = json.dumps(obj, ensure_ascii=draw(st.booleans()), separators=(",", ":")).encode()
    how = draw(st.integers(0, 5))
    if how < 2:
        spots = [k + 1 for k in range(len(payload)) if payload[k : k + 1] in (b",", b":")]
        at = draw(st.sampled_from(spots))
        payload = payload[:at] + (b"\ndata: " if how == 0 else b"\n") + payload[at:]
    event = b"event: " + name + b"\ndata: " + payload + b"\n\n"
    return event.replace(b"\n", b"\r\n") if how == 2 else event


@st.composite
def responses(draw: st.DrawFn) -> bytes:
    numbered = draw(st.booleans())
    out = [b"event: response.created\ndata: " + json.dumps({"type": "response.created",
           "response": {"id": "r"}, **({"sequence_number": 0} if numbered else {})}).encode()
           + b"\n\n"]  # fmt: skip
    seq = 1
    added = {"type": "response.output_item.added", "item": MSG, "output_index": 0}
    if numbered:
        added["sequence_number"] = seq
        seq += 1
    out.append(b"event: response.output_item.added\ndata: " + json.dumps(added).encode() + b"\n\n")
    for _ in range(draw(st.integers(2, 9))):
        obj: dict[str, Any] = {"type": "response.output_text.delta"}
        if numbered:
            obj["sequence_number"] = seq + draw(st.sampled_from([0] * 12 + [1, -1]))
            seq += 1
        obj.update(item_id=draw(st.sampled_from(["msg_1"] * 6 + ["msg_2"])), output_index=0)
        obj.update(content_index=0, delta=draw(TEXTS))
        if draw(st.booleans()):
            obj["obfuscation"] = draw(st.sampled_from(["", "Zq9", "a-b"]))
        out.append(delta(obj, b"response.output_text.delta", draw))
    return b"".join(out)


@st.composite
def llmstream(draw: st.DrawFn) -> bytes:
    start = {"v": "1.0", "seq": 0, "type": "stream.start", "model": "m", "created": 1}
    out = [b"event: stream.start\ndata: " + json.dumps(start).encode() + b"\n\n"]
    for i in range(draw(st.integers(2, 9))):
        seq = 1 + i + draw(st.sampled_from([0] * 12 + [1]))
        obj = {"v": "1.0", "seq": seq, "type": "content.delta", "index": 0, "role": "assistant"}
        obj["delta"] = {"text": draw(TEXTS)}
        out.append(delta(obj, b"content.delta", draw))
    return b"".join(out)


USAGE_ODD = st.sampled_from(
    [None] * 12 + ["seq", "twice", "negative", "float", "big", "spaced", "extension", "string"]
)


def usage(seq: int, output: int, draw: st.DrawFn) -> bytes:
    """A usage event (the draft's fields alone, nearly always), perhaps one a pattern learned
    from another must not read: a wrong number, a key twice, a number JSON or the draft does
    not allow, other bytes, an extension."""
    odd = draw(USAGE_ODD)
    obj: dict[str, Any] = {"v": "1.0", "seq": seq + (odd == "seq"), "type": "usage"}
    obj.update(input_tokens=draw(st.sampled_from([7, 0, 123456789])), output_tokens=output)
    if odd in ("negative", "float", "big", "string"):
        bad: object = {"negative": -3, "float": 2.0, "big": 10**19, "string": "3"}[odd]
        obj["output_tokens"] = bad
    if odd == "extension":
        obj["vendor:svir"] = {"total_tokens": 9}
    payload = json.dumps(obj, separators=(", ", ": ") if odd == "spaced" else (",", ":"))
    if odd == "twice":
        payload = payload[:-1] + ',"output_tokens":5}'
    return b"event: usage\ndata: " + payload.encode() + b"\n\n"


@st.composite
def counted(draw: st.DrawFn) -> bytes:
    """LLM-Stream with a usage after deltas (section 5.3: it may come mid-stream), then the
    block's stop (or an error, after which no usage may come), a usage, and the end, now and
    then one event out of place."""
    start = {"v": "1.0", "seq": 0, "type": "stream.start", "model": "m", "created": 1}
    out = [b"event: stream.start\ndata: " + json.dumps(start).encode() + b"\n\n"]
    seq = 1
    for i in range(draw(st.integers(1, 9))):
        obj = {"v": "1.0", "seq": seq, "type": "content.delta", "index": 0, "role": "assistant"}
        obj["delta"] = {"text": draw(TEXTS)}
        out.append(delta(obj, b"content.delta", draw))
        seq += 1
        if draw(st.integers(0, 3)):
            out.append(usage(seq, i + 1, draw))
            seq += 1
    stop = {"v": "1.0", "seq": seq, "type": "content.stop", "index": 0, "stop_reason": "end_turn"}
    if draw(st.integers(0, 4)) == 0:  # an error: no usage may follow it
        stop = {"v": "1.0", "seq": seq, "type": "error", "code": "overloaded", "message": "x"}
    name = str(stop["type"]).encode()
    out.append(b"event: " + name + b"\ndata: " + json.dumps(stop).encode() + b"\n\n")
    out.append(usage(seq + 1, 99, draw))
    end = {"v": "1.0", "seq": seq + 2, "type": "stream.end"}
    out.append(b"event: stream.end\ndata: " + json.dumps(end).encode() + b"\n\n")
    if draw(st.integers(0, 5)) == 0:
        out.insert(1, usage(1, 1, draw))  # before the first delta, its number wrong after
    return b"".join(out)


def reads(body: bytes, draw: st.DrawFn) -> list[bytes]:
    how = draw(st.integers(0, 2))
    if how == 0:
        *events, rest = body.split(b"\n\n")
        return [e + b"\n\n" for e in events] + ([rest] if rest else [])
    if how == 1:
        size = draw(st.integers(1, 700))
        return [body[i : i + size] for i in range(0, len(body), size)]
    pieces: list[bytes] = draw(splits(body))
    return pieces


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_template_runs_decode_alike_however_read(data: st.DataObject) -> None:
    llm = data.draw(st.booleans())
    body = data.draw(llmstream() if llm else responses())
    make = LLMStreamDecoder if llm else ResponsesStreamDecoder
    assert outcome(make, reads(body, data.draw)) == outcome(make, [body])


def never_counting() -> LLMStreamDecoder:
    decoder = LLMStreamDecoder()
    decoder._counts_budget = 0  # every usage the general way
    return decoder


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_usage_read_by_its_pattern_is_read_as_the_parser_reads_it(data: st.DataObject) -> None:
    """`LLMStreamDecoder`'s usage pattern (the numbers of the last usage's bytes as holes)
    changes speed, never the events, the error or the result, however the stream is read."""
    body = data.draw(counted())
    pieces = reads(body, data.draw)
    assert outcome(LLMStreamDecoder, pieces) == outcome(never_counting, [body])
