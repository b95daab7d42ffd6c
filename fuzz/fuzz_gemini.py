"""Atheris target for `GeminiStreamDecoder`:
``python fuzz/fuzz_gemini.py CORPUS fuzz/corpus/gemini``.

Seeds: the conformance fixtures (tests/conformance/gemini), one file each, and streams without
``alt=sse``, one JSON array (``array-*``: the decoder's Rule 10), two of them fixtures so
written and one Google's layout of chunks that repeat the learned envelope, which the decoder
reads where the framer holds them (``array-envelope-repeats``).

Invariants: the harness's (`_harness.check`: only `PeerProtocolError`, the same outcome whole
and cut); and for a body that decodes, `GeminiStreamEncoder` writes its events as bytes that
decode without error to the same text, reasoning and calls (up to a failure, the end of a
Gemini stream); and without ``alt=sse`` (``sse=False``) as one JSON array of the same chunks;
and a relay's array of the body (`ArrayWriter`) is JSON whose elements decode to the same events.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import check, fuzz

from svir_proto import PeerProtocolError, ReasoningDelta, StreamFailed, TextDelta, ToolCall
from svir_proto.events import StreamEnded
from svir_proto.gemini import ArrayWriter, GeminiStreamDecoder, GeminiStreamEncoder
from svir_proto.sse import EndOfStream


def make() -> GeminiStreamDecoder:
    return GeminiStreamDecoder(max_event_size=4096, max_tool_calls=8, max_result_size=4096)


def test_one_input(data: bytes) -> None:
    check(make, data)
    decoder = make()
    try:
        events = decoder.feed(data) + decoder.close()
    except PeerProtocolError:
        return
    encoder = GeminiStreamEncoder()
    again = GeminiStreamDecoder()
    again.feed(b"".join(encoder.encode(e) for e in events))
    again.close()
    failed = next((i for i, e in enumerate(events) if isinstance(e, StreamFailed)), len(events))
    before = events[:failed]  # nothing follows a failure (the encoder's Rule 6)
    text = "".join(e.text for e in before if isinstance(e, TextDelta))
    reasoning = "".join(e.text for e in before if isinstance(e, ReasoningDelta))
    calls = tuple(e for e in before if isinstance(e, ToolCall))
    after = again.result
    assert (after.text, after.reasoning, after.tool_calls) == (text, reasoning, calls), after
    sse, arrayed = GeminiStreamEncoder(), GeminiStreamEncoder(sse=False)
    framed = b"".join(map(sse.encode, events))
    chunks = [json.loads(c[6:]) for c in framed.split(b"\r\n\r\n") if c]
    array = b"".join(map(arrayed.encode, events))
    if not array.endswith(b"]"):  # (a stream that ended incomplete: its body is cut)
        array += b"]" if chunks else b"[]"
    assert json.loads(array) == chunks, array
    relayed(data, events)


def relayed(data: bytes, events: list[object]) -> None:
    """A relay's array (`ArrayWriter`, the gateway's for a client that asked for it of a
    Gemini upstream) of a body the decoder read: JSON, closed unless the body ended inside an
    event, whose elements the decoder reads as it read the body (review 76: an event the
    decoder skips went into it, and spoiled it)."""
    writer = ArrayWriter()
    array = writer.events(data)
    array += writer.end()
    if writer.cut:
        assert not array.endswith(b"]") or not writer.written, array
        array += b"\r\n]" if writer.written else b"[]"
    if array[:1] != b"[" or data.lstrip(b" \t\r\n")[:1] == b"[":
        return  # (nothing began, or the body was an array, no SSE: nothing of it is written)
    elements = json.loads(array)
    assert len(elements) == writer.written, array
    again = GeminiStreamDecoder(max_event_size=1 << 20, max_tool_calls=8, max_result_size=4096)
    body = b"".join(b"data: " + json.dumps(e).encode() + b"\r\n\r\n" for e in elements)
    if writer.cut:  # (the same cut: an event the end cuts)
        body += b"data: {"
    seen = again.feed(body) + again.close()
    ended = (StreamEnded, EndOfStream)
    assert [e for e in seen if not isinstance(e, ended)] == [
        e for e in events if not isinstance(e, ended)
    ], (data, array)


if __name__ == "__main__":
    fuzz(test_one_input)
