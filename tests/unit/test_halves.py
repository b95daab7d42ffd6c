"""`svir_proto._halves`: a surrogate pair a server cut between two payloads (audit 36 r07), in
every dialect's decoder, with either JSON backend. Each body is the dialect's own encoder's,
its placeholder characters then written as the escapes a JavaScript server writes."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from svir_proto import dialects
from svir_proto._halves import MAX_HELD, MAX_MENDED
from svir_proto.errors import PeerProtocolError
from svir_proto.events import (
    Event,
    Finished,
    FinishReason,
    ReasoningDelta,
    StreamEnded,
    StreamStarted,
    TextDelta,
)
from svir_proto.openai import ChatStreamDecoder
from tests.helpers import run, split_at

HIGH, LOW = "\u24cd", "\u24ce"  # placeholders: written as \ud83d and \ude00
CUT = {HIGH: b"\\ud83d", LOW: b"\\ude00"}


def _cut(body: bytes) -> bytes:
    for char, escape in CUT.items():
        body = body.replace(char.encode(), escape)
        body = body.replace(char.encode("ascii", "backslashreplace"), escape)  # (escaped)
    return body


def _body(name: str, *texts: str) -> bytes:
    encoder = dialects.dialect(name).encoder("m", "r", 0)
    events: list[Event] = [StreamStarted(response_id="r", model="m")]
    events += [TextDelta(text=t) for t in texts]
    events += [
        Finished(reason=FinishReason.STOP, raw="stop"),
        StreamEnded(complete=True, done=True),
    ]
    return _cut(b"".join(encoder.encode(e) for e in events))


def _texts(events: list[Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, TextDelta)]


def _in_event(body: bytes, offset: int | None, escaped: bytes) -> bool:
    """Whether the event of ``body`` that the byte at ``offset`` is in holds ``escaped``."""
    assert offset is not None
    at = body.find(escaped)
    while at >= 0:
        between = body[min(at, offset) : max(at, offset)]
        if b"\n\n" not in between and b"\n\r\n" not in between:  # no blank line: LF or CRLF
            return True
        at = body.find(escaped, at + 1)
    return False


@pytest.mark.parametrize("name", dialects.DIALECTS)
@pytest.mark.parametrize("pieces", [1, 7])
def test_a_pair_cut_between_two_deltas_is_one_character(
    name: str, pieces: int, json_backend: str
) -> None:
    """What a JavaScript client shows: the two halves joined, in every dialect, fed whole or
    seven bytes at a time."""
    body = _body(name, "hi ", "A" + HIGH, LOW + "B", HIGH, LOW)
    assert b"\\ud83d" in body
    decoder = dialects.dialect(name).decoder()
    events = run(decoder, split_at(body, range(0, len(body), pieces)) if pieces > 1 else [body])
    assert _texts(events) == ["hi ", "A", "\U0001f600B", "\U0001f600"]
    assert decoder.result.text == "hi A\U0001f600B\U0001f600"
    assert decoder.result.complete


@pytest.mark.parametrize("name", dialects.DIALECTS)
def test_a_half_never_joined_is_the_error_it_was(name: str, json_backend: str) -> None:
    """A high half whose low half never comes fails the stream at its end, at the payload
    that held it (or at one that holds it in the middle of a string: the Responses API's
    whole text); what came before is delivered."""
    body = _body(name, "hi ", "A" + HIGH, "B")
    decoder = dialects.dialect(name).decoder()
    events = decoder.feed(body)
    with pytest.raises(PeerProtocolError, match="lone surrogate") as caught:
        decoder.close()
    events += list(caught.value.pending_events)
    assert _texts(events) == ["hi ", "A", "B"]
    assert not any(isinstance(e, StreamEnded) for e in events)
    assert _in_event(body, caught.value.offset, b"\\ud83d")


@pytest.mark.parametrize(
    ("texts", "where"),
    [
        (["A" + HIGH, "x" + LOW], "x" + LOW),  # the next string there begins otherwise
        (["A" + LOW], "A" + LOW),  # a low half alone
        (["A" + HIGH + "B"], "A" + HIGH + "B"),  # a high half inside a string
        ([HIGH + HIGH], HIGH + HIGH),  # two high halves
    ],
)
def test_a_lone_half_that_cannot_be_joined_is_an_error_at_once(
    texts: list[str], where: str, json_backend: str
) -> None:
    body = _body("chat", "hi", *texts)
    decoder = ChatStreamDecoder()
    with pytest.raises(PeerProtocolError, match="lone surrogate") as caught:
        run(decoder, [body])
    assert _in_event(body, caught.value.offset, _cut(where.encode()))


def _chunk(delta: dict[str, object]) -> bytes:
    text = json.dumps({"id": "c", "choices": [{"index": 0, "delta": delta}]}, ensure_ascii=False)
    return b"data: " + _cut(text.encode()) + b"\n\n"


def test_each_place_holds_its_own_half(json_backend: str) -> None:
    """Reasoning and content, each cut at once, each joined with its own half; a key that is
    a half is never text."""
    body = _chunk({"reasoning_content": "r" + HIGH, "content": "c" + HIGH})
    body += _chunk({"reasoning_content": LOW + "s", "content": LOW + "d"})
    body += b"data: [DONE]\n\n"
    decoder = ChatStreamDecoder()
    events = run(decoder, [body])
    reasoning = [e.text for e in events if isinstance(e, ReasoningDelta)]
    assert (reasoning, _texts(events)) == (["r", "\U0001f600s"], ["c", "\U0001f600d"])
    with pytest.raises(PeerProtocolError, match="lone surrogate"):
        run(ChatStreamDecoder(), [_chunk({"content": "a", HIGH: "b"})])
    with pytest.raises(PeerProtocolError, match="lone surrogate"):  # a payload that is text
        run(ChatStreamDecoder(), [b'data: "\\ud83d"\n\n'])


def _gemini(*parts: dict[str, object], finish: str | None = None) -> bytes:
    candidate: dict[str, object] = {"content": {"role": "model", "parts": list(parts)}}
    if finish is not None:
        candidate["finishReason"] = finish
    text = json.dumps({"candidates": [candidate]}, ensure_ascii=False)
    return b"data: " + _cut(text.encode()) + b"\n\n"


@pytest.mark.parametrize(
    "chunks",
    [
        [[{"text": "a"}, {"text": "A" + HIGH}], [{"text": LOW + "B"}]],  # the next index
        [[{"text": "a"}, {"text": "A" + HIGH}, {"text": LOW + "B"}]],  # the next part
        [[{"text": "A" + HIGH}], [{"text": "t", "thought": True}, {"text": LOW + "B"}]],
    ],
)
def test_a_gemini_pair_cut_between_two_parts_is_one_character(
    chunks: list[list[dict[str, object]]], json_backend: str
) -> None:
    """Attack 41 F6: Gemini's parts are a run, their indices no channel: the halves join
    whichever parts (of one chunk or the next) they are in; a thought stays its own channel."""
    body = b"".join(_gemini(*parts) for parts in chunks) + _gemini({"text": "."}, finish="STOP")
    decoder = dialects.dialect("gemini").decoder()
    run(decoder, [body])
    assert decoder.result.text.replace("a", "") == "A\U0001f600B."
    cross = _gemini({"text": "A" + HIGH}) + _gemini({"text": LOW, "thought": True})
    with pytest.raises(PeerProtocolError, match="lone surrogate"):
        run(dialects.dialect("gemini").decoder(), [cross])  # another channel: not joined
    swapped = _gemini({"text": LOW + "B"}, {"text": "A" + HIGH})  # in order only
    with pytest.raises(PeerProtocolError, match="lone surrogate"):
        run(dialects.dialect("gemini").decoder(), [swapped])
    plain = _gemini({"text": "A" + HIGH, "thought": False}) + _gemini({"text": LOW + "B"})
    decoder = dialects.dialect("gemini").decoder()
    run(decoder, [plain + _gemini({"text": "."}, finish="STOP")])  # false is no thought
    assert decoder.result.text == "A\U0001f600B."
    calls = _gemini(  # review 41: the runs are parts' own texts, not a call's arguments
        {"functionCall": {"name": "f", "args": {"text": "A" + HIGH}}},
        {"functionCall": {"name": "g", "args": {"text": LOW + "B"}}},
    )
    with pytest.raises(PeerProtocolError, match="lone surrogate"):
        run(dialects.dialect("gemini").decoder(), [calls])


def test_a_half_is_text_and_stays_in_its_channel(json_backend: str) -> None:
    """Review 40: a half is joined only in text (an id or a model that ends with one is
    refused at once, not cut short), and only with the text of its own channel: the place
    holds what tells channels apart (a block's index, a part's ``thought``)."""
    for field in ("model", "id"):
        body = b'data: {"' + field.encode() + b'":"m\\ud83d","choices":[]}\n\n'
        decoder = ChatStreamDecoder()
        with pytest.raises(PeerProtocolError, match="lone surrogate") as caught:
            decoder.feed(body)
        assert caught.value.offset == body.find(b"\\ud83d")
    messages = _body("messages", "X" + HIGH)
    second = b'{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"'
    messages = messages.replace(
        b"event: message_delta",
        b"event: content_block_start\ndata: "
        b'{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}'
        b"\n\nevent: content_block_delta\ndata: " + second + b'\\ude00Y"}}\n\nevent: message_delta',
    )
    gemini = (
        b'data: {"candidates":[{"content":{"parts":[{"text":"r\\ud83d","thought":true}]},'
        b'"index":0}]}\r\n\r\n'
        b'data: {"candidates":[{"content":{"parts":[{"text":"\\ude00B"}]},"finishReason":"STOP",'
        b'"index":0}]}\r\n\r\n'
    )
    for name, body in (("messages", messages), ("gemini", gemini)):
        decoder = dialects.dialect(name).decoder()
        with pytest.raises(PeerProtocolError, match="lone surrogate") as caught:
            run(decoder, [body])
        assert _in_event(body, caught.value.offset, b"\\ude00"), name


def test_a_text_nested_past_the_places_is_only_checked(json_backend: str) -> None:
    """Review 40: a payload nested hundreds of levels built a place for each of its strings
    (145 times the read). Past MAX_PLACE steps a container is only checked: a half there is
    refused, and what holds none goes on."""
    deep = {"content": "a" + HIGH, "x": json.loads("[" * 40 + '"t"' + "]" * 40)}
    body = _chunk(deep) + _chunk({"content": LOW + "b"}) + b"data: [DONE]\n\n"
    assert _texts(run(ChatStreamDecoder(), [body])) == ["a", "\U0001f600b"]
    deep["x"] = json.loads("[" * 40 + json.dumps("t" + HIGH) + "]" * 40)
    with pytest.raises(PeerProtocolError, match="lone surrogate"):
        run(ChatStreamDecoder(), [_chunk(deep)])


def test_a_mark_that_is_no_scalar_holds_no_place_by_it(json_backend: str) -> None:
    """A broken stream's mark (an index that is a list) is still a place, by its type."""
    body = _chunk({"content": "a" + HIGH, "x": {"index": [1], "text": "t"}})
    body += _chunk({"content": LOW}) + b"data: [DONE]\n\n"
    assert _texts(run(ChatStreamDecoder(), [body])) == ["a", "\U0001f600"]


def test_halves_held_are_bounded(json_backend: str) -> None:
    """At most MAX_HELD halves at once; and a payload past MAX_MENDED is not walked."""
    calls = [
        {"index": i, "id": f"c{i}", "function": {"name": "f", "arguments": "{" + HIGH}}
        for i in range(MAX_HELD)
    ]
    decoder = ChatStreamDecoder()
    decoder.feed(_chunk({"tool_calls": calls}))  # MAX_HELD places: held
    assert decoder.error is None
    assert len(decoder.result.pending_tool_calls) == MAX_HELD
    calls.append({"index": MAX_HELD, "function": {"arguments": HIGH}})
    with pytest.raises(PeerProtocolError, match="lone surrogate"):
        run(ChatStreamDecoder(), [_chunk({"tool_calls": calls})])
    long = _chunk({"content": "x" * MAX_MENDED + HIGH})
    with pytest.raises(PeerProtocolError, match="lone surrogate"):
        run(ChatStreamDecoder(), [long])


def test_a_relay_and_the_replace_policy_read_halves_as_before() -> None:
    """``errors="replace"`` and a relay's ``"surrogates"`` read each half as U+FFFD, as they
    did: only the strict policy, which refused them, joins them."""
    body = _body("chat", "A" + HIGH, LOW + "B")
    for errors in ("replace", "surrogates"):
        decoder = ChatStreamDecoder(errors=errors)  # type: ignore[arg-type]
        assert _texts(run(decoder, [body])) == ["A\ufffd", "\ufffdB"]


ASTRAL = st.text(
    st.sampled_from(["a", " ", "\u00e9", "\U0001f600", "\U0001f680", "\u6771", "\\", '"']),
    max_size=20,
)


@given(ASTRAL, st.lists(st.integers(0, 40), max_size=6), st.lists(st.integers(1, 400)))
def test_text_cut_anywhere_in_utf16_units_reads_whole(
    text: str, units: list[int], cuts: list[int]
) -> None:
    """A JavaScript server's deltas: the text cut at any UTF-16 unit, each piece written with
    its halves escaped, the body fed in any pieces: the text, whole."""
    utf16 = text.encode("utf-16-le", "surrogatepass")
    bounds = sorted({2 * u for u in units if 2 * u < len(utf16)} | {0, len(utf16)})
    body = b""
    for start, end in itertools.pairwise(bounds):
        piece = utf16[start:end].decode("utf-16-le", "surrogatepass")
        escaped = json.dumps(piece).encode()  # halves as \\uXXXX, as JSON.stringify writes
        body += b'data: {"id":"c","choices":[{"index":0,"delta":{"content":' + escaped + b"}}]}\n\n"
    body += b"data: [DONE]\n\n"
    decoder = ChatStreamDecoder()
    run(decoder, split_at(body, cuts))
    assert decoder.result.text == text
