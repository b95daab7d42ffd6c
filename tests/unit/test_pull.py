"""The pull API (svir_proto._pull) as every decoder shares it: next_event and feed mixed,
events(), errors through next_event, and a bug that poisons."""

from __future__ import annotations

import pytest

from svir_proto import NEED_DATA, PeerProtocolError
from svir_proto.dialects import dialect
from svir_proto.sse import EndOfStream, ServerSentEvent, SSEDecoder


def ev(data: str) -> ServerSentEvent:
    return ServerSentEvent(data=data)


def test_events_iterates_what_is_ready() -> None:
    d = SSEDecoder()
    d.receive_data(b"data: a\n\ndata: b\n\ndata: c")
    assert list(d.events()) == [ev("a"), ev("b")]
    d.receive_data(b"")
    assert list(d.events()) == [EndOfStream(incomplete=True)]
    assert list(d.events()) == []  # after the terminal event


def test_next_event_and_feed_mixed_lose_nothing() -> None:
    d = SSEDecoder()
    d.receive_data(b"data: a\n\ndata: b\n\n")
    assert d.next_event() == ev("a")  # b waits in the queue
    assert d.feed(b"data: c\n\n") == [ev("b"), ev("c")]
    assert d.next_event() is NEED_DATA


def test_an_error_through_next_event_comes_after_the_events_before_it() -> None:
    d = SSEDecoder(max_event_size=10)
    d.receive_data(b"data: a\n\n" + b"data: " + b"x" * 20 + b"\n\n")
    assert d.next_event() == ev("a")
    with pytest.raises(PeerProtocolError) as first:
        d.next_event()
    with pytest.raises(PeerProtocolError) as again:
        d.feed(b"more")
    assert again.value is first.value


BROKEN = {
    "chat": b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{"content":"b"}}]}\n\ndata: {bad\n\n',
    "messages": b'event: message_start\ndata: {"type":"message_start","message":{"id":"m",'
    b'"type":"message","role":"assistant","model":"x","content":[],"usage":{}}}\n\n'
    b"event: ping\ndata: {bad\n\n",
    "responses": b'event: response.created\ndata: {"type":"response.created","sequence_number":0,'
    b'"response":{"id":"r","status":"in_progress","output":[]}}\n\ndata: {bad\n\n',
    "gemini": b'data: {"candidates":[{"content":{"parts":[{"text":"a"}]},"index":0}]}\n\n'
    b'data: {"candidates":[{"content":{"parts":[{"text":"b"}]},"index":0}]}\n\ndata: {bad\n\n',
    "llm-stream": b'event: stream.start\ndata: {"v":"1.0","seq":0,"type":"stream.start",'
    b'"model":"m","created":1}\n\ndata: {bad\n\n',
}
"""A body per dialect that breaks the protocol after an event or two."""


@pytest.mark.parametrize("name", BROKEN)
@pytest.mark.parametrize("after", [b"", b"data: {}\n\n"])
def test_bytes_after_an_error_do_not_take_its_place(name: str, after: bytes) -> None:
    """Found by a property test (review 68 #1's kind): bytes, or the body's end, given after
    an error was found but before the events ahead of it were taken, were decoded: the end
    made a cut of the body, whose terminal event took the error's place (and an array's run
    was read again). The error comes after the events before it, whatever follows."""
    decoder = dialect(name).decoder()
    decoder.receive_data(BROKEN[name])
    got = [decoder.next_event()]
    decoder.receive_data(after)

    def rest() -> None:
        while (event := decoder.next_event()) is not NEED_DATA:
            got.append(event)
            if event is decoder.terminal:  # (it would come again at every call)
                return

    with pytest.raises(PeerProtocolError):
        rest()
    assert all(type(e).__name__ != "StreamEnded" for e in got), got


def test_a_bug_poisons_the_decoder_too() -> None:
    class Broken(SSEDecoder):
        def _fill(self) -> None:
            raise ZeroDivisionError("a bug")

    d = Broken()
    with pytest.raises(ZeroDivisionError):
        d.feed(b"data: a\n\n")
    with pytest.raises(ZeroDivisionError):
        d.next_event()
    d2 = Broken()
    d2.receive_data(b"x")
    with pytest.raises(ZeroDivisionError):
        d2.next_event()
