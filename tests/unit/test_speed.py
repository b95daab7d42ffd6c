"""SpeedMeter: visible tokens only, from the first to the last, no rate without a window."""

from __future__ import annotations

import json

import pytest

from svir_proto import (
    Finished,
    FinishReason,
    ReasoningDelta,
    StreamStarted,
    TextDelta,
    ToolCallDelta,
)
from svir_proto.openai import ChatStreamDecoder
from svir_proto.speed import SpeedMeter


def test_rate_counts_intervals_between_first_and_last() -> None:
    m = SpeedMeter()
    m.observe(StreamStarted(response_id="a", model="m"), 0.0)  # the wait does not count
    for i in range(11):
        m.observe(TextDelta(text="x"), 2.0 + i * 0.1)
    assert m.tokens == 11
    assert m.window == pytest.approx(1.0)
    assert m.rate == pytest.approx(10.0)


def test_no_rate_with_one_token_or_a_short_window() -> None:
    m = SpeedMeter()
    assert (m.rate, m.window) == (None, 0.0)
    m.observe(TextDelta(text="x"), 1.0)
    assert (m.rate, m.window) == (None, 0.0)
    m.observe(TextDelta(text="y"), 1.04)
    assert m.rate is None  # 40 ms < 50 ms
    m.observe(TextDelta(text="z"), 1.06)
    assert m.rate == pytest.approx(2 / 0.06)


def test_what_counts_as_visible() -> None:
    m = SpeedMeter()
    for e in [
        TextDelta(text=""),
        Finished(reason=FinishReason.STOP, raw="stop"),
        ToolCallDelta(index=0),
        ReasoningDelta(text="r", carrier="think"),
        ToolCallDelta(index=0, arguments="{"),
    ]:
        m.observe(e, 1.0)
    assert m.tokens == 2


def test_a_marker_only_chunk_counts_nothing() -> None:
    head = {"id": "c", "model": "m"}
    contents = ["<think>", "plan", "</think>", "\n\nHi", "<thi", "nk>"]
    body = b"".join(
        b"data: " + json.dumps({**head, "choices": [{"delta": {"content": c}}]}).encode() + b"\n\n"
        for c in contents
    )
    d = ChatStreamDecoder()
    m = SpeedMeter()
    for t, byte_piece in enumerate(body.split(b"\n\n")):
        for event in d.feed(byte_piece + b"\n\n"):
            m.observe(event, float(t))
    for event in d.close():
        m.observe(event, 99.0)
    # "plan" and "\n\nHi" are visible; "<think>", "</think>" and "<thi" + "nk>" are markers.
    assert m.tokens == 2


def test_an_unfinished_marker_at_the_end_is_text_and_counts() -> None:
    body = b'data: {"choices":[{"delta":{"content":"done<thi"}}]}\n\n'
    d = ChatStreamDecoder()
    m = SpeedMeter()
    for event in d.feed(body) + d.close():
        m.observe(event, 1.0)
    assert d.result.text == "done<thi"
    assert m.tokens == 2  # "done" in its chunk, "<thi" given back at the end


def test_timestamps_must_not_go_backwards() -> None:
    m = SpeedMeter()
    m.observe(TextDelta(text="a"), 5.0)
    with pytest.raises(ValueError, match="backwards"):
        m.observe(TextDelta(text="b"), 4.0)
    with pytest.raises(ValueError, match="min_window"):
        SpeedMeter(min_window=-1)
