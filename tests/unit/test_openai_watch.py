"""`ChatStreamWatcher` (svir_proto/openai/watch.py): a relay's view of a stream."""

from __future__ import annotations

import random

import pytest

from svir_proto.errors import PeerProtocolError
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


@pytest.mark.parametrize("text", [b"\xff\xfe", "caf\u00e9".encode()])
def test_a_run_of_envelopes_is_checked_for_utf_8(text: bytes) -> None:
    """Attack (hostile battery ``invalid-utf8``): the fast path skipped the chunks it knew the
    envelope of without reading them, so a relay passed invalid UTF-8 on as a whole stream;
    the decoder refuses it (RFC 8259 8.1). Valid UTF-8 that is not ASCII still passes."""
    bad = EVENT.replace(b'"ok"', b'"' + text + b'"')
    w = ChatStreamWatcher()
    w.feed(EVENT * 3)  # the envelope is learned
    if text == b"\xff\xfe":
        with pytest.raises(PeerProtocolError):
            w.feed(bad * 3)
    else:
        w.feed(bad * 3 + FINISH + b"data: [DONE]\n\n")
        w.close()
        assert w.result.complete
