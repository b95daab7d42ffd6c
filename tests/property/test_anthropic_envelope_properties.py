"""Hypothesis: the learned delta envelope (svir_proto.anthropic._envelope) changes speed, never
what a Messages stream decodes to. Streams shaped like Anthropic's and llama.cpp's (blocks of
text, thinking and tool_use whose deltas repeat their bytes) with now and then something that
must go the general way (a piece with escapes, quotes, control characters, invalid UTF-8, a lone
surrogate, a piece that is not a string, another key order or spacing, an SSE name that is not
the JSON's type, no ``event:`` line, a delta for a closed block, an error, a bound exceeded)
decode, fed in any split (one event per piece among them: the express) and with either JSON
backend and UTF-8 policy, exactly as with no envelope at all: the same events, error, offset and
result."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from svir_proto import SvirProtocolError, _json
from svir_proto.anthropic import MessagesStreamDecoder
from tests.helpers import splits

TEXT = st.text(
    st.characters(codec="utf-8", categories=["L", "N", "P", "S", "Zs", "Cc"]), max_size=8
) | st.sampled_from([" the", "\n", 'say "hi"', "a\\b", '{"city": "', "é", "", "Z"])

RAW_PIECE = st.sampled_from(
    [
        b'"\\ud800"',  # a lone surrogate escape
        b'"\\ud83d\\ude00"',  # an escaped pair
        b'"\xff"',  # invalid UTF-8
        b'"\xed\xa0\x80"',  # an encoded surrogate
        b'"tab\there"',  # a raw control character
        b'"\\q"',  # an invalid escape
        b'"x\\"',  # unterminated
        b'"a"b"',  # a quote that ends the string early
        b'"a\\\\"b"',
        b"null",
        b"7",
    ]
)
KINDS = {"text": ("text_delta", "text"), "thinking": ("thinking_delta", "thinking")}
KINDS["tool_use"] = ("input_json_delta", "partial_json")


def event(name: str | None, payload: bytes, eol: bytes) -> bytes:
    head = b"" if name is None else b"event: " + name.encode() + eol
    return head + b"data: " + payload + eol + eol


@st.composite
def delta(draw: st.DrawFn, index: int, kind: str) -> bytes:
    """One content_block_delta payload, as a server writes it, or something near it."""
    dtype, key = KINDS[kind]
    how = draw(
        st.sampled_from(["plain"] * 24 + ["ascii", "spaced", "reordered"] * 2 + ["raw", "other"])
    )
    if how == "raw":
        return (
            b'{"type":"content_block_delta","index":%d,"delta":{"type":"%s","%s":'
            % (index, dtype.encode(), key.encode())
            + draw(RAW_PIECE)
            + b"}}"
        )
    if how == "other":  # a delta of another type, or for another block
        other = draw(st.sampled_from(["signature_delta", "text_delta", "citations_delta"]))
        field = "signature" if other == "signature_delta" else "text"
        index += draw(st.sampled_from([0, 1]))
        obj = {"type": "content_block_delta", "index": index, "delta": {"type": other}}
        obj["delta"][field] = draw(TEXT)  # type: ignore[index]
    else:
        obj = {"type": "content_block_delta", "index": index}
        obj["delta"] = {"type": dtype, key: draw(TEXT)}
        if how == "reordered":
            obj = {"delta": {key: obj["delta"][key], "type": dtype}, **obj}  # type: ignore[index]
    if how == "spaced":
        return json.dumps(obj).encode()
    return json.dumps(obj, ensure_ascii=how == "ascii", separators=(",", ":")).encode()


@st.composite
def streams(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    """A body and its events' bytes."""
    eol = draw(st.sampled_from([b"\n", b"\n", b"\r\n"]))
    named = draw(st.sampled_from(["always", "always", "never", "sometimes"]))

    def name(actual: str) -> str | None:
        if named == "never" or (named == "sometimes" and draw(st.booleans())):
            return None
        if draw(st.integers(0, 40)) == 0:
            return "ping"  # an SSE name that is not the JSON's type
        return actual

    start = {"type": "message_start", "message": {"id": "msg_1", "model": "m", "usage": {}}}
    events = [event(name("message_start"), json.dumps(start).encode(), eol)]
    for index in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(list(KINDS)))
        block: dict[str, object] = {"type": kind}
        if kind == "tool_use":
            block.update(id=f"toolu_{index}", name="f", input={})
        block = {"type": "content_block_start", "index": index, "content_block": block}
        events.append(event(name("content_block_start"), json.dumps(block).encode(), eol))
        for _ in range(draw(st.integers(0, 12))):
            if draw(st.integers(0, 20)) == 0:
                events.append(event(name("ping"), b'{"type":"ping"}', eol))
            events.append(event(name("content_block_delta"), draw(delta(index, kind)), eol))
        if draw(st.integers(0, 10)):
            stop = b'{"type":"content_block_stop","index":%d}' % index
            events.append(event(name("content_block_stop"), stop, eol))
    if draw(st.integers(0, 15)) == 0:
        error = b'{"type":"error","error":{"type":"overloaded_error","message":"busy"}}'
        events.append(event(name("error"), error, eol))
    finish = b'{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{}}'
    events.append(event(name("message_delta"), finish, eol))
    events.append(event(name("message_stop"), b'{"type":"message_stop"}', eol))
    if draw(st.integers(0, 10)) == 0:  # a delta after the end
        events.append(event(name("content_block_delta"), draw(delta(0, "text")), eol))
    if draw(st.booleans()):
        events = events[: draw(st.integers(0, len(events)))]
    return b"".join(events), events


def outcome(decoder: MessagesStreamDecoder, pieces: list[bytes], pull: list[bool]) -> object:
    """What a decoder gives for the pieces, each fed with ``feed`` or, where ``pull`` says so,
    with ``receive_data`` and ``next_event`` (which close the fast lanes)."""
    events: list[object] = []
    try:
        for piece, by_pull in zip(pieces, pull, strict=True):
            if by_pull:
                decoder.receive_data(piece)
                events += decoder.events()
            else:
                events += decoder.feed(piece)
        events += decoder.close()
    except SvirProtocolError as exc:
        events += exc.pending_events
        return events, decoder.result, str(exc), getattr(exc, "offset", None)
    return events, decoder.result


BACKENDS = ["orjson", "json"] if _json.orjson is not None else ["json"]


@st.composite
def pieces(draw: st.DrawFn, body: bytes, events: list[bytes]) -> list[bytes]:
    """Any split of the body, or its events one per piece (the express), some run together."""
    if draw(st.booleans()):
        return draw(splits(body))
    out: list[bytes] = []
    for one in events:
        if out and draw(st.integers(0, 4)) == 0:
            out[-1] += one
        else:
            out.append(one)
    return out


@given(
    streams(),
    st.data(),
    st.sampled_from(["strict", "replace"]),
    st.sampled_from(BACKENDS),
    st.sampled_from([None, None, 40, 200]),
    st.sampled_from([None, None, 90, 200]),
)
def test_the_envelope_never_changes_what_a_stream_decodes_to(
    stream: tuple[bytes, list[bytes]],
    data: st.DataObject,
    errors: str,
    backend: str,
    max_result_size: int | None,
    max_event_size: int | None,
) -> None:
    body, events = stream
    limits: dict[str, object] = {"errors": errors}
    if max_result_size is not None:
        limits["max_result_size"] = max_result_size
    if max_event_size is not None:
        limits["max_event_size"] = max_event_size
    before = _json.BACKEND
    _json.use(backend)  # type: ignore[arg-type]
    try:
        cut = data.draw(pieces(body, events))
        fast = MessagesStreamDecoder(**limits)  # type: ignore[arg-type]
        general = MessagesStreamDecoder(**limits)  # type: ignore[arg-type]
        general._budget = 0  # never learns an envelope
        pull = data.draw(st.lists(st.sampled_from([False] * 3 + [True]), min_size=len(cut)))
        assert outcome(fast, cut, pull[: len(cut)]) == outcome(general, [body], [False])
    finally:
        _json.use(before)
