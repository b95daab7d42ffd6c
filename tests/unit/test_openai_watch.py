"""`ChatStreamWatcher` (svir_proto/openai/watch.py): a relay's view of a stream."""

from __future__ import annotations

import random

import pytest

from svir_proto.errors import PeerProtocolError
from svir_proto.openai import ChatStreamDecoder
from svir_proto.openai.watch import ChatStreamWatcher
from tests.helpers import carrying, seen_by_a_relay

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


def chunk(delta: bytes, choice: bytes = b"", finish: bytes = b"null", head: bytes = b"") -> bytes:
    return (
        b'data: {"id":"c1"' + head + b',"choices":[{"index":0,"delta":' + delta + choice
        + b',"finish_reason":' + finish + b"}]}\n\n"
    )  # fmt: skip


SAFE = b',"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}'
LOW = b',"content_filter_results":{"hate":{"filtered":false,"severity":"low"}}'
TEXT = chunk(b'{"content":"a"}')
END = chunk(b"{}", finish=b'"stop"') + b"data: [DONE]\n\n"


@pytest.mark.parametrize(
    "body",
    [
        TEXT * 4 + chunk(b'{"content":"b"}', finish=b'"stop"') + b"data: [DONE]\n\n",  # its end
        TEXT * 4 + chunk(b'{"content":"}') + END,  # the envelope's two ends overlap: not JSON
        TEXT * 2 + chunk(b'{"content":"\xff"}') + TEXT + END,  # not UTF-8
        chunk(b'{"content":"a"}', SAFE) * 5 + END,  # a quiet verdict on every chunk: repeats
        chunk(b'{"content":"a"}', LOW) * 5 + END,  # a verdict that found something: news
        chunk(b'{"content":"a"}', b',"content_filter_results":null') * 5 + END,
        chunk(b'{"content":"a"}', head=b',"obfuscation":"Ab3"') * 5 + END,  # padding
        TEXT * 3 + b"data: [DONE]\n\n" + TEXT * 3,  # after the end: ignored, not counted
        b"data: [DONE]\n\n" + TEXT * 3,
        TEXT
        + chunk(b'{"tool_calls":[{"index":0,"id":"x","function":{"name":"f"}}]}') * 3
        + TEXT * 3
        + END,
    ],
)
@pytest.mark.parametrize("size", [0, 1, 7, 100])
def test_a_relay_sees_what_the_decoder_does_but_the_text(body: bytes, size: int) -> None:
    """Each way a run stops skipping (Rule 1), in one read (one batch) and in pieces, and
    the watcher that cannot learn an envelope."""
    pieces = [body[i : i + size] for i in range(0, len(body), size)] if size else [body]
    expected = seen_by_a_relay(ChatStreamDecoder(keep_text=False), [body])
    for budget in (True, False):
        w = ChatStreamWatcher(keep_text=False)
        if not budget:
            w._budget = 0
        assert seen_by_a_relay(w, pieces) == expected
        if expected[2] is None:  # type: ignore[index]
            assert w.seen == carrying(body)


EMPTY = chunk(b'{"content":""}')
NO_CHOICE = b'data: {"id":"c1","choices":[]}\n\n'
PING = b"event: ping\ndata: {}\n\n"  # a type with no meaning here
LEGACY = chunk(b'{"function_call":{"arguments":"{}"}}')  # no event, but the client reads it
COUNTS = b'"usage":{"prompt_tokens":1,"completion_tokens":%d,"total_tokens":%d}}\n\n'
USAGE = b'data: {"id":"c1","choices":[],' + COUNTS % (1, 2)  # the same again: a keep-alive
USAGE_AGAIN = b'data: {"id":"c1","choices":[],' + COUNTS % (2, 3)
CALL = b'{"tool_calls":[{"index":0,"id":"t","type":"function","function":{"name":"f"%s}}]}'
EMPTY_PIECE = chunk(b'{"tool_calls":[{"index":0,"function":{"arguments":""}}]}')  # nothing
EMPTY_LEGACY = (  # nothing either (attack 50 F2: a relay's keep-alives past --timeout)
    chunk(b'{"function_call":{"arguments":""}}')
    + chunk(b'{"function_call":{"name":""}}')
    + chunk(b'{"audio":{"data":"","transcript":null}}')
    + chunk(b'{"audio":null}')
)
LISTED = chunk(b'{"annotations":[{"type":"url_citation"}]}')  # something the client reads
NESTED = chunk(b'{"audio":{"x":{"y":""}}}')  # something: an object is looked at one level down
HOLLOW = chunk(b'{"audio":{"x":{}}}')  # nothing: an empty object is nothing


@pytest.mark.parametrize(
    "body",
    [
        TEXT * 2 + EMPTY * 3 + TEXT + END,  # the learned envelope around content ""
        TEXT * 2 + NO_CHOICE * 3 + TEXT + END,  # a chunk of no choice: the decoder reads it
        TEXT + (EMPTY + NO_CHOICE) * 2 + END,
        TEXT + (PING + LEGACY) * 2 + END,
        TEXT + USAGE * 3 + TEXT + USAGE_AGAIN * 2 + chunk(CALL % b"") + EMPTY_PIECE * 3 + END,
        TEXT + EMPTY_LEGACY * 2 + LEGACY + LISTED + END,
        TEXT + NESTED * 2 + HOLLOW + END,  # (review 51 r4: the oracle is the rule)
    ],
)
@pytest.mark.parametrize("size", [0, 1, 7, 100])
def test_a_chunk_that_carries_nothing_is_not_counted(body: bytes, size: int) -> None:
    """Rule 2: ``seen`` is a relay's progress (attack round 31, F3), and a chunk of content "",
    of no choice, or an event of a type with no meaning is none, in one read (a run of them)
    and in pieces; a delta the decoder gives no event for but the client reads is some."""
    pieces = [body[i : i + size] for i in range(0, len(body), size)] if size else [body]
    w = ChatStreamWatcher(keep_text=False)
    for piece in pieces:
        w.feed(piece)
    w.close()
    nothing = body.count(EMPTY) + body.count(NO_CHOICE) + body.count(PING)
    nothing += max(body.count(USAGE) - 1, 0) + max(body.count(USAGE_AGAIN) - 1, 0)
    nothing += body.count(EMPTY_PIECE) + 4 * body.count(EMPTY_LEGACY) + body.count(HOLLOW)
    assert w.result.complete
    assert w.seen == body.count(b"\n\n") - nothing == carrying(body)


def test_a_delta_nested_deep_is_read_without_recursing_as_deep() -> None:
    """Review 50 r5: a ``function_call`` nested 500 deep (the parser takes 512) raised
    `RecursionError` out of ``feed``: an object is looked at one level down."""
    deep = b'{"function_call":' + b'{"a":' * 500 + b'""' + b"}" * 500 + b"}"
    w = ChatStreamWatcher(keep_text=False)
    w.feed(TEXT + chunk(deep) + chunk(b'{"function_call":{"arguments":""}}') + END)
    w.close()
    assert w.result.complete
    assert w.seen == 4  # the text, the nested object (something), the finish and [DONE]


ESCAPED = chunk(b'{"content":"a\\nb"}')
ACCENT = chunk('{"content":"caf\u00e9"}'.encode())


@pytest.mark.parametrize(
    "body",
    [
        TEXT * 3 + ESCAPED + ACCENT + TEXT + END,  # an escape: the decoder reads that chunk
        TEXT * 150 + ESCAPED + TEXT * 60 + ACCENT * 70 + END,  # more chunks than a block
        TEXT * 3 + chunk(b'{"content":"\\q"}') + TEXT + END,  # a bad escape: refused
        TEXT * 3 + chunk(b'{"content":"x"y"}') + TEXT + END,  # a raw quote: refused
    ],
)
@pytest.mark.parametrize("per_event", [False, True])
def test_plain_content_is_a_string_with_nothing_escaped(body: bytes, per_event: bool) -> None:
    """Rule 1 skips content that is its text as it is; an escape is the decoder's to read, a
    string that is not JSON the decoder's to refuse (the watcher skipped those too, before),
    in one read and one event per read (the express)."""
    pieces = [e + b"\n\n" for e in body.split(b"\n\n")[:-1]] if per_event else [body]
    expected = seen_by_a_relay(ChatStreamDecoder(keep_text=False), [body])
    assert seen_by_a_relay(ChatStreamWatcher(keep_text=False), pieces) == expected


OPENED = b'{"id":"c1","choices":[{"index":0,"delta":{"content":"'
CLOSED = b'"},"finish_reason":null}]}'  # the envelope TEXT teaches
NOT_PLAIN_RUNS = {
    "ends overlap": chunk(b'{"content":"}'),  # not JSON: an unterminated string
    "a seam inside": b"data: " + OPENED + b"a" + CLOSED + b"\0" + OPENED + b"b" + CLOSED + b"\n\n",
    "no closing end": b"data: " + OPENED + b"a" * 40 + b"\n\n",
    "no opening end": b"data: " + b"a" * len(OPENED) + b"b" + CLOSED + b"\n\n",
}


@pytest.mark.parametrize("kind", NOT_PLAIN_RUNS)
def test_a_block_of_plain_chunks_is_checked_at_once_and_exactly(kind: str) -> None:
    """A run's chunks are checked a block at a time: a chunk that only looks like the envelope
    around content from outside (its ends, or a NUL between two envelopes) is not plain,
    wherever it sits in the run (first, amid, last, alone in its block) and however the reads
    end."""
    bad = NOT_PLAIN_RUNS[kind]
    for reads in (
        [TEXT * 4 + bad, END],
        [TEXT * 4, bad, END],
        [TEXT * 4 + bad + TEXT, END],
        [bad, TEXT, END],
        [TEXT, bad + TEXT * 3, END],
        *([TEXT * k + bad, END] for k in range(62, 68)),  # alone in its block, once
        *([TEXT * k + bad + END] for k in range(62, 68)),
    ):
        expected = seen_by_a_relay(ChatStreamDecoder(keep_text=False), [b"".join(reads)])
        assert seen_by_a_relay(ChatStreamWatcher(keep_text=False), reads) == expected, reads
