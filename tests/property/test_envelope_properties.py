"""Hypothesis: the learned envelope (svir_proto.openai._envelope) changes speed, never what a
stream decodes to. Streams shaped like servers' (a repeating envelope, padding that changes,
filter verdicts, deltas of every kind, usage on every chunk) with now and then something that
must go the general way (an id that changes, text with escapes, quotes, control characters,
invalid UTF-8, a lone surrogate, a delta that is not an object, a chunk that is not JSON, a
count past 64 bits) decode, in any split and with either JSON backend and UTF-8 policy, exactly
as with no envelope at all."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from svir_proto import SvirProtocolError, _json
from svir_proto.openai import ChatStreamDecoder
from svir_proto.openai.watch import ChatStreamWatcher
from tests.conformance.openai_results import summary
from tests.helpers import carrying, seen_by_a_relay, splits

TEXT = st.text(
    st.characters(codec="utf-8", categories=["L", "N", "P", "S", "Zs", "Cc"]), max_size=8
) | st.sampled_from([" the", "\n", 'say "hi"', "a\\b", "<think>", "</think>", "é", ""])

RAW_TEXT = st.sampled_from(
    [
        b'"\\ud800"',  # a lone surrogate escape
        b'"\\ud83d\\ude00"',  # an escaped pair
        b'"\xff"',  # invalid UTF-8
        b'"tab\there"',  # a raw control character
        b'"nul\x00here"',  # a raw NUL
        b'"\\q"',  # an invalid escape
        b'"x\\"',  # unterminated
        b"null",
        b"7",
    ]
)

SAFE = {"filtered": False, "severity": "safe"}


@st.composite
def deltas(draw: st.DrawFn) -> bytes:
    """A delta's JSON, as a server writes it."""
    kind = draw(
        st.sampled_from(
            ["content"] * 6 + ["args"] * 3 + ["reasoning", "name", "mixed", "raw", "empty", "bad"]
        )
    )
    text = draw(TEXT)
    if kind == "content":
        return json.dumps({"content": text}, ensure_ascii=draw(st.booleans())).encode()
    if kind == "args":
        index = draw(st.sampled_from([0, 1, 0]))
        call = {"index": index, "function": {"arguments": text}}
        return json.dumps({"tool_calls": [call]}, separators=(",", ":")).encode()
    if kind == "reasoning":
        key = draw(st.sampled_from(["reasoning_content", "reasoning"]))
        return json.dumps({key: text}, separators=(",", ":")).encode()
    if kind == "name":
        call = {"index": 0, "id": "call_1", "function": {"name": "f", "arguments": ""}}
        return json.dumps({"tool_calls": [call]}, separators=(",", ":")).encode()
    if kind == "mixed":
        return json.dumps({"role": "assistant", "content": text}, separators=(",", ":")).encode()
    if kind == "raw":
        key = draw(st.sampled_from([b"content", b"reasoning", b"refusal"]))
        return b'{"' + key + b'":' + draw(RAW_TEXT) + b"}"
    if kind == "empty":
        return b"{}"
    return draw(st.sampled_from([b"null", b"[]", b'"x"', b'{"content":7}']))


COUNT = st.sampled_from([0, 1, 31, 7, 10**17, 10**18 - 1] * 8 + [10**18, 10**19, 2 * 10**19])


COUNTED = st.sampled_from([True] * 9 + [False])  # a chunk of a counted stream has a usage
USAGE_KINDS = st.sampled_from(
    ["vllm", "details", "digits", "nulls"] * 3 + ["odd", "twice", "null-twice"]
)


@st.composite
def usages(draw: st.DrawFn, kind: str) -> bytes:
    """A usage object on a delta chunk (vLLM's ``continuous_usage_stats``), of the stream's
    ``kind``, its counts any; now and then one a usage hole must not take."""
    if draw(st.integers(0, 7)) == 0:
        kind = draw(USAGE_KINDS)
    usage: dict[str, object] = {"prompt_tokens": draw(COUNT), "total_tokens": draw(COUNT)}
    usage["completion_tokens"] = draw(COUNT)
    if kind == "details":
        usage["completion_tokens_details"] = {"reasoning_tokens": draw(COUNT)}
        usage["prompt_tokens_details"] = {"cached_tokens": draw(COUNT)}
    elif kind == "nulls":  # vLLM's details when it has none; now and then some instead
        usage["prompt_tokens_details"] = draw(
            st.sampled_from([None] * 5 + [{"cached_tokens": 3}, {"cached_tokens": None}])
        )
    elif kind == "odd":
        usage["completion_tokens"] = draw(st.sampled_from([1.5, -1, None, "7", True, [1]]))
    elif kind == "digits":
        usage["tokens_v2"] = draw(COUNT)
    body = json.dumps(usage, separators=(",", ":")).encode()
    if kind == "twice":
        body = body[:-1] + b',"total_tokens":' + str(draw(COUNT)).encode() + b"}"
    elif kind == "null-twice":  # a key twice, its first value null (the review of round 32):
        count = draw(COUNT)  # learned when both numbers are alike, read wrong when not
        again = draw(st.sampled_from([count, count, count + 1]))
        body = b'{"prompt_tokens":null,"completion_tokens":%d,"prompt_tokens":%d}' % (count, again)
    return body


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    ids = draw(st.sampled_from([["c1"], ["c1", "c2"]]))
    counted = draw(st.booleans())
    usage_kind = draw(USAGE_KINDS)
    pad_where = None if counted else draw(st.sampled_from([None, "head", "tail"]))
    filters = draw(st.sampled_from([None, "same", "changing"]))
    spaced = draw(st.booleans())
    events = []
    for _ in range(draw(st.integers(1, 12))):
        delta = draw(deltas())
        head = (
            b'{"id":"' + draw(st.sampled_from(ids)).encode() + b'","object":"chat.completion.chunk"'
        )
        pad = b""
        if pad_where is not None:
            pad = b',"obfuscation":"' + draw(st.sampled_from([b"", b"Ab3", b"x", b"a-b"])) + b'"'
        choice = b'{"index":0,"delta":' + delta
        if filters == "same" or (filters == "changing" and draw(st.booleans())):
            verdict = dict.fromkeys(["hate", "violence"], SAFE)
            if filters == "changing" and draw(st.booleans()):
                verdict["hate"] = {"filtered": False, "severity": "low"}
            choice += b',"content_filter_results":' + json.dumps(verdict).encode()
        choice += b',"finish_reason":null}'
        chunk = (
            head
            + (pad if pad_where == "head" else b"")
            + b',"choices":['
            + choice
            + b"]"
            + (pad if pad_where == "tail" else b"")
            + (b',"usage":' + draw(usages(usage_kind)) if counted and draw(COUNTED) else b"")
            + b"}"
        )
        if spaced:
            chunk = chunk.replace(b'":', b'": ', 3)
        if draw(st.integers(0, 30)) == 0:
            chunk = chunk[: draw(st.integers(0, len(chunk)))]  # not JSON
        events.append(b"data: " + chunk + b"\n\n")
    finish = b'{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}'
    events += [b"data: " + finish + b"\n\n", b"data: [DONE]\n\n"]
    if draw(st.booleans()):
        cut = draw(st.integers(0, len(events) - 1))
        events = events[:cut]
    return b"".join(events)


def outcome(decoder: ChatStreamDecoder, pieces: list[bytes], pull: list[bool]) -> object:
    """What a decoder gives for the pieces, each fed with ``feed`` or, where ``pull`` says so,
    with ``receive_data`` and ``next_event`` (which close the fast lanes)."""
    events = []
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
        return summary(events, decoder.result), str(exc), getattr(exc, "offset", None)
    return summary(events, decoder.result)


BACKENDS = ["orjson", "json"] if _json.orjson is not None else ["json"]


@given(streams(), st.data(), st.sampled_from(["strict", "replace"]), st.sampled_from(BACKENDS))
def test_the_envelope_never_changes_what_a_stream_decodes_to(
    body: bytes, data: st.DataObject, errors: str, backend: str
) -> None:
    before = _json.BACKEND
    _json.use(backend)  # type: ignore[arg-type]
    try:
        pieces = data.draw(splits(body))
        fast = ChatStreamDecoder(errors=errors)  # type: ignore[arg-type]
        general = ChatStreamDecoder(errors=errors)  # type: ignore[arg-type]
        general._budget = 0  # never learns an envelope
        pull = data.draw(st.lists(st.sampled_from([False] * 3 + [True]), min_size=len(pieces)))
        assert outcome(fast, pieces, pull[: len(pieces)]) == outcome(general, [body], [False])
    finally:
        _json.use(before)


@given(streams(), st.data(), st.sampled_from(["strict", "replace"]))
def test_the_watcher_sees_what_the_decoder_does_but_the_text(
    body: bytes, data: st.DataObject, errors: str
) -> None:
    """`ChatStreamWatcher` skips the runs of plain content (Rule 1), whatever their split:
    what a relay watches (every other event, the result, the errors and their offsets) is
    the decoder's, and every event that carries something is counted (Rule 2). (Before,
    content that was not a valid JSON string, the "raw" deltas, was skipped as plain: the
    decoder refused the stream, the watcher passed it on.)"""
    pieces = data.draw(splits(body))
    watcher = ChatStreamWatcher(errors=errors, keep_text=False)  # type: ignore[arg-type]
    decoder = ChatStreamDecoder(errors=errors, keep_text=False)  # type: ignore[arg-type]
    got = seen_by_a_relay(watcher, pieces)
    assert got == seen_by_a_relay(decoder, [body])
    if got[2] is None:  # type: ignore[index]
        assert watcher.seen == carrying(body, errors=errors)


@st.composite
def counted_streams(draw: st.DrawFn) -> bytes:
    """vLLM with ``continuous_usage_stats``: one envelope, a usage object on every chunk."""
    kind = draw(USAGE_KINDS)
    events = []
    for _ in range(draw(st.integers(1, 12))):
        delta = draw(deltas())
        chunk = (
            b'{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":'
            + delta
            + b',"logprobs":null,"finish_reason":null}],"usage":'
            + draw(usages(kind))
            + b"}"
        )
        events.append(b"data: " + chunk + b"\n\n")
    return b"".join([*events, b"data: [DONE]\n\n"])


@given(counted_streams(), st.data(), st.sampled_from(BACKENDS))
def test_a_usage_hole_reads_the_counts_the_parser_reads(
    body: bytes, data: st.DataObject, backend: str
) -> None:
    """Each count as `_on_usage` finds it: in its field, ``None`` past 18 digits (a float to
    the parser), a key with digits of its own kept as it was learned."""
    before = _json.BACKEND
    _json.use(backend)  # type: ignore[arg-type]
    try:
        pieces = data.draw(splits(body))
        general = ChatStreamDecoder()
        general._budget = 0
        assert outcome(ChatStreamDecoder(), pieces, [False] * len(pieces)) == outcome(
            general, [body], [False]
        )
    finally:
        _json.use(before)
