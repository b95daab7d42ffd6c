"""`ChatStreamWatcher` (svir_proto/openai/watch.py): a relay's view of a stream."""

from __future__ import annotations

import random

import pytest

from svir_proto.openai.watch import ChatStreamWatcher

EVENT = b'data: {"choices":[{"index":0,"delta":{"content":"ok"}}]}\n\n'
FINISH = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
STREAM = EVENT * 5 + FINISH + b"data: [DONE]\n\n"


@pytest.mark.parametrize("seed", range(20))
def test_a_stream_in_pieces_that_end_inside_events(seed: int) -> None:
    """Attack (hostile battery ``drip``: an upstream that sends a few bytes at a time): once
    the envelope was learned, a read that completed no event gave the fast path no payloads,
    and ``min`` of none raised a ValueError out of the relay, which cut the client's stream."""
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(STREAM)), rng.randint(1, 12)))
    w = ChatStreamWatcher()
    for start, end in zip([0, *cuts], [*cuts, len(STREAM)], strict=True):
        w.feed(STREAM[start:end])
    w.close()
    assert w.seen == 7
    assert w.result.complete
