"""The pull API (svir_proto._pull) as every decoder shares it: next_event and feed mixed,
events(), errors through next_event, and a bug that poisons."""

from __future__ import annotations

import pytest

from svir_proto import NEED_DATA, PeerProtocolError
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
