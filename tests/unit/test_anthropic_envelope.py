"""The Messages stream's delta envelope (svir_proto.anthropic._envelope): what is learned, what
matches, and each way a repeat goes back to the general path, on each lane (the express, a run
of typed events, events without an ``event:`` line), always giving what the general path
gives."""

from __future__ import annotations

from typing import Any

import pytest

from svir_proto import SvirProtocolError, _json
from svir_proto.anthropic import MessagesStreamDecoder
from svir_proto.anthropic._envelope import BUDGET, learn, written
from svir_proto.events import TextDelta

START = b'{"type":"message_start","message":{"id":"msg_1","model":"m"}}'
TEXT = b'{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}'
HEAD = b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"'
END = b'{"type":"message_stop"}'
LANES = ["express", "run", "untyped"]


def piece(body: bytes) -> bytes:
    return HEAD + body + b'"}}'


def pieces(payloads: list[bytes], lane: str) -> list[bytes]:
    """The events as the lane takes them: one per piece, or the first (which opens the lanes)
    and then the rest in one piece, typed or not."""
    events = [
        (b"" if lane == "untyped" else b"event: " + name + b"\n") + b"data: " + p + b"\n\n"
        for name, p in zip(_names(payloads), payloads, strict=True)
    ]
    return events if lane == "express" else [events[0], b"".join(events[1:])]


def _names(payloads: list[bytes]) -> list[bytes]:
    return [p.split(b'"type":"', 1)[1].split(b'"', 1)[0] for p in payloads]


def outcome(decoder: MessagesStreamDecoder, parts: list[bytes]) -> object:
    events: list[object] = []
    try:
        for part in parts:
            events += decoder.feed(part)
        events += decoder.close()
    except SvirProtocolError as exc:
        events += exc.pending_events
        return events, decoder.result, str(exc), getattr(exc, "offset", None)
    return events, decoder.result


def same(payloads: list[bytes], lane: str, **options: Any) -> MessagesStreamDecoder:
    """Decode with the envelope and without; the same outcome. The decoder that learned."""
    fast = MessagesStreamDecoder(**options)
    general = MessagesStreamDecoder(**options)
    general._budget = 0
    body = b"".join(pieces(payloads, lane))
    assert outcome(fast, pieces(payloads, lane)) == outcome(general, [body])
    return fast


def test_an_envelope_is_learned_from_a_plain_piece_and_read_without_a_parser() -> None:
    decoder = MessagesStreamDecoder()
    decoder.feed(b"".join(pieces([START, TEXT, piece(b"hi")], "run")))
    envelope = decoder._envelope
    assert envelope is not None
    assert (envelope.head, envelope.tail) == (HEAD, b'"}}')
    assert envelope.read(piece(b"there")) == "there"
    assert envelope.read(piece(b'say \\"hi\\"\\n')) == 'say "hi"\n'
    assert envelope.read(piece(b'a"b')) is None  # a quote ends the string: not a repeat
    assert envelope.read(HEAD + b"}}") is None  # head and tail overlap
    assert envelope.read(b'{"type":"ping"}') is None
    decoder.feed(b"".join(pieces([b'{"type":"content_block_stop","index":0}'], "run")))
    assert decoder._envelope is None  # its block is closed


def test_the_ways_a_piece_is_written() -> None:
    assert written("the") == (b'"the"',)
    assert written("é 東京") == ('"é 東京"'.encode(), b'"\\u00e9 \\u6771\\u4eac"')
    assert written("") == (b'""',)
    assert written('say "hi"\n\\') == (b'"say \\"hi\\"\\n\\\\"',)


@pytest.mark.parametrize("lane", LANES)
def test_an_envelope_is_learned_from_a_piece_with_escapes(lane: str) -> None:
    """A stream of long pieces of code, each with an escape, learns from its first (before, it
    learned only from a piece without one, and read every piece of such a stream the general
    way); a piece written with ``\\u`` escapes teaches it as well."""
    for first in (b'def f():\\n    return \\"a\\tb\\"', b"caf\\u00e9 \\u6771"):
        payloads = [START, TEXT, piece(first), piece(b"x = 1\\n"), piece(b"\\\\path"), END]
        decoder = MessagesStreamDecoder()
        decoder.feed(b"".join(pieces(payloads[:3], lane)))
        assert decoder._envelope is not None
        assert (decoder._envelope.head, decoder._envelope.tail) == (HEAD, b'"}}')
        same(payloads, lane)


@pytest.mark.parametrize("lane", LANES)
@pytest.mark.parametrize("errors", ["strict", "replace"])
def test_what_a_repeat_holds_that_the_general_way_must_read(lane: str, errors: str) -> None:
    odd = [b"\xff", b"\xed\xa0\x80", b"\\ud800", b"\\q", b'a\\\\"b', b"tab\there", b"\\u00e9"]
    for body in odd:
        payloads = [START, TEXT, piece(b"hi"), piece(b"x"), piece(body), piece(b"y"), END]
        same(payloads, lane, errors=errors)
    same([START, TEXT, piece(b"hi"), HEAD + b"}}", END], lane, errors=errors)


@pytest.mark.parametrize("lane", LANES)
def test_max_result_size_on_every_lane(lane: str) -> None:
    payloads = [START, TEXT, piece(b"ab"), piece(b"cd"), piece(b"ef"), END]
    decoder = same(payloads, lane, max_result_size=5)
    assert decoder.result.text == "abcd"


def test_the_express_respects_the_event_size_bound() -> None:
    payloads = [START, TEXT, piece(b"ab"), piece(b"c" * 200), END]
    same(payloads, "express", max_event_size=190)


@pytest.mark.parametrize("backend", ["orjson", "json"] if _json.orjson else ["json"])
def test_no_envelope_when_the_probe_does_not_hold(backend: str) -> None:
    before = _json.BACKEND
    _json.use(backend)  # type: ignore[arg-type]
    try:
        # the piece also stands elsewhere, last: the probe changes another value
        elsewhere = HEAD + b'hi"},"note":"hi"}'
        decoder = same([START, TEXT, elsewhere, elsewhere], "run")
        assert decoder._envelope is None
        assert decoder._budget == BUDGET - 2
        # the head holds what the parser refuses and the general way mended
        mended = HEAD.replace(b'"index"', b'"x":"\xff","index"') + b'hi"}}'
        decoder = same([START, TEXT, mended], "run", errors="replace")
        assert decoder._envelope is None
        assert decoder._budget == BUDGET - 1
        # written with escapes JSON does not write: nothing to find
        assert learn(piece(b"a\\/b"), {"delta": {"text": "a/b"}}, "text", _json.loads) is None
        assert learn(piece(b"\\u0061"), {"delta": {"text": "a"}}, "text", _json.loads) is None
    finally:
        _json.use(before)


def test_learning_stops_after_its_budget_and_starts_again_on_success() -> None:
    elsewhere = HEAD + b'hi"},"note":"hi"}'
    decoder = same([START, TEXT, *[elsewhere] * (BUDGET + 2)], "run")
    assert decoder._budget == 0
    assert decoder._envelope is None
    decoder = same([START, TEXT, elsewhere, piece(b"ok"), piece(b"then")], "run")
    assert decoder._budget == BUDGET
    assert decoder._envelope is not None


def test_an_error_and_the_end_forget_the_envelope() -> None:
    error = b'{"type":"error","error":{"type":"overloaded_error","message":"busy"}}'
    for last in (error, END):
        decoder = same([START, TEXT, piece(b"hi"), last, piece(b"late")], "express")
        assert decoder._envelope is None
        assert decoder.result.ignored_after_done == 1


def test_an_empty_piece_read_one_event_at_a_time_is_no_event() -> None:
    # the express path of feed: a read that is exactly one repeat of the envelope, empty
    payloads = [START, TEXT, piece(b"hi"), piece(b""), piece(b""), piece(b"there"), END]
    decoder = same(payloads, "express")
    assert decoder.result.text == "hithere"


def test_an_empty_piece_in_a_run_is_no_event() -> None:
    # the run path of _on_typed: a repeat of the envelope, empty, among others in one read
    payloads = [START, TEXT, piece(b"hi"), piece(b""), piece(b"there"), END]
    decoder = same(payloads, "run")
    assert decoder.result.text == "hithere"


@pytest.mark.parametrize("lane", LANES)
def test_a_piece_equal_to_the_probe_is_not_learned_from_another_string(lane: str) -> None:
    """Found by review: a piece ``Z`` (the probe's own value) with a later ``"Z"`` in the same
    payload taught an envelope around the later one, and the next pieces read as that field's
    value. The probe is now another value than the piece."""
    payloads = [
        START,
        TEXT,
        piece(b"Z")[:-1] + b',"foo":"Z"}',
        piece(b"Z")[:-1] + b',"foo":"hello"}',
        piece(b"Z")[:-1] + b',"foo":"world"}',
        END,
    ]
    decoder = same(payloads, lane)
    assert decoder.result.text == "ZZZ"


def test_an_empty_piece_read_the_general_way_is_no_event() -> None:
    """An event with an ``id`` line goes the general way (`_on_event`), which reads a repeat
    of the envelope too: an empty piece there is no event either."""
    payloads = [START, TEXT, piece(b"hi"), piece(b""), piece(b"there"), END]
    events = pieces(payloads, "express")
    events[3] = b"id: 3\n" + events[3]  # (a field the lanes do not take)
    decoder = MessagesStreamDecoder()
    out = [e for event in events for e in decoder.feed(event)]
    assert decoder.result.text == "hithere"
    assert [e.text for e in out if isinstance(e, TextDelta)] == ["hi", "there"]
