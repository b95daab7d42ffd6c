"""The Gemini envelope (svir_proto.gemini._envelope), case by case.

Each stream here repeats one envelope, so that what a test checks happens on the parser-free
path; each is also decoded a byte at a time (the general way), and the two must agree.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from svir_proto import PeerProtocolError, ReasoningDelta, TextDelta, Usage
from svir_proto.gemini import GeminiStreamDecoder
from svir_proto.gemini._envelope import BUDGET, USAGE, Envelope
from tests.helpers import bytewise, run

SEP = b"\r\n\r\n"


def google(obj: object) -> bytes:
    """One event as Google writes it: ``": "`` after keys, ``","`` between members."""
    return b"data: " + json.dumps(obj, separators=(",", ": ")).encode() + SEP


def chunk(part: dict[str, Any], tokens: int = 1, **candidate: Any) -> dict[str, Any]:
    c = {"content": {"parts": [part], "role": "model"}, **candidate, "index": 0}
    return {
        "candidates": [c],
        "usageMetadata": {
            "promptTokenCount": 3,
            "candidatesTokenCount": tokens,
            "totalTokenCount": 3 + tokens,
        },
        "modelVersion": "gemini-2.5-flash",
        "responseId": "r1",
    }


def finish() -> bytes:
    return google(chunk({"text": ""}, 99, finishReason="STOP"))


def texts(*pieces: str) -> list[bytes]:
    return [google(chunk({"text": t}, n + 1)) for n, t in enumerate(pieces)]


def learned(events: list[bytes], **options: Any) -> GeminiStreamDecoder:
    """A decoder that has read the first two events, the second on the hot loop: it holds the
    envelope learned from it."""
    d = GeminiStreamDecoder(**options)
    d.feed(events[0])
    d.feed(events[1])
    assert d._envelope is not None
    return d


def same_as_general(events: list[bytes], **options: Any) -> GeminiStreamDecoder:
    """Decode one event per read (the hot loop) and a byte at a time (the general way): the
    same events and result."""
    body = b"".join(events)
    general = GeminiStreamDecoder(**options)
    expected = run(general, bytewise(body))
    d = GeminiStreamDecoder(**options)
    assert run(d, events) == expected
    assert d.result == general.result
    return d


def test_text_that_repeats_the_envelope_is_read_without_a_parser() -> None:
    events = texts("a", "b", "c", "", 'say "hi"\n', "\u00e9\u4e2d\U0001f600")
    d = learned(events)
    loads = d._loads
    d._loads = None  # type: ignore[assignment]  # any parse would fail now
    got = [d.feed(e) for e in events[2:]]
    assert got == [
        [TextDelta(text="c")],
        [],  # an empty text: nothing to say
        [TextDelta(text='say "hi"\n')],
        [TextDelta(text="\u00e9\u4e2d\U0001f600")],
    ]
    assert d._envelope is not None
    assert d._envelope.hits == 4
    d._loads = loads
    assert d.result.usage == Usage(prompt_tokens=3, completion_tokens=6, total_tokens=9)
    d.feed(finish())
    d.close()
    assert d.result.text == 'abcsay "hi"\n\u00e9\u4e2d\U0001f600'
    assert d.result.usage == Usage(prompt_tokens=3, completion_tokens=99, total_tokens=102)
    same_as_general([*events, finish()])


def test_thoughts_streamed_call_pieces_and_quiet_ratings_are_read_without_a_parser() -> None:
    ratings = [{"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "NEGLIGIBLE"}]
    thoughts = [
        google(chunk({"text": f"t{n}", "thought": True}, n, safetyRatings=ratings))
        for n in range(4)
    ]
    opening = {
        "functionCall": {
            "name": "write",
            "willContinue": True,
            "partialArgs": [{"jsonPath": "$.s", "stringValue": "", "willContinue": True}],
        }
    }
    pieces = [
        google(
            chunk(
                {
                    "functionCall": {
                        "partialArgs": [
                            {"jsonPath": "$.s", "stringValue": p, "willContinue": True}
                        ],
                        "willContinue": True,
                    }
                },
                10 + n,
            )
        )
        for n, p in enumerate(["x", "y", "\\z", "w"])
    ]
    closing = google(chunk({"functionCall": {}}, 20))
    events = [*thoughts, google(chunk(opening, 9)), *pieces, closing, finish()]
    d = same_as_general(events)
    assert d.result.reasoning == "t0t1t2t3"
    assert d.result.filter_repeats == 3
    assert d.result.tool_calls[0].arguments == '{"s":"xy\\\\zw"}'
    d = learned(thoughts)
    d._loads = None  # type: ignore[assignment]
    assert d.feed(thoughts[2]) == [ReasoningDelta(text="t2", carrier="thought")]
    assert d._repeats == 2


def test_what_only_looks_like_the_envelope_goes_the_general_way() -> None:
    base = texts("a", "b")
    variants = [
        # the text ends early: the bytes after it are another key's
        google(chunk({"text": "c", "x": "d"}, 3)),
        # the usage has another shape, or a count that is not a JSON integer, or no count
        google({**chunk({"text": "c"}), "usageMetadata": {"promptTokenCount": 3}}),
        google(chunk({"text": "c"})).replace(b'"promptTokenCount": 3', b'"promptTokenCount": 03'),
        google(chunk({"text": "c"})).replace(b'"promptTokenCount": 3', b'"promptTokenCount": '),
        # another head, another tail
        google({**chunk({"text": "c"}), "responseId": "r2"}),
        google({**chunk({"text": "c"}), "modelVersion": "other"}),
        # an escape the reading refuses: a lone surrogate
        google(chunk({"text": "c"})).replace(b'"text": "c"', b'"text": "\\ud800"'),
    ]
    for variant in variants:
        events = [*base, variant, finish()]
        for errors in ("strict", "replace"):
            try:
                same_as_general(events, errors=errors)
            except PeerProtocolError:
                with pytest.raises(PeerProtocolError):
                    run(GeminiStreamDecoder(errors=errors), bytewise(b"".join(events)))


def test_a_leading_zero_in_the_usage_is_the_error_the_general_way_reports() -> None:
    bad = google(chunk({"text": "c"})).replace(b'"promptTokenCount": 3', b'"promptTokenCount": 03')
    d = learned(texts("a", "b"))
    with pytest.raises(PeerProtocolError) as caught:
        d.feed(bad)
    with pytest.raises(PeerProtocolError) as general:
        run(GeminiStreamDecoder(), bytewise(b"".join([*texts("a", "b"), bad])))
    assert caught.value.offset == general.value.offset


def test_text_that_is_not_utf8_on_the_envelope_gets_the_policy() -> None:
    bad = google(chunk({"text": "c"})).replace(b'"text": "c"', b'"text": "c\xff"')
    d = learned(texts("a", "b"))
    with pytest.raises(PeerProtocolError) as caught:
        d.feed(bad)
    assert "UTF-8" in str(caught.value)
    d = learned(texts("a", "b"), errors="replace")
    assert d.feed(bad) == [TextDelta(text="c\ufffd")]


def test_the_bound_holds_on_the_envelope() -> None:
    for events in (
        texts("a", "b", "x" * 40),
        [
            google(
                chunk(
                    {
                        "functionCall": {
                            "name": "f",
                            "willContinue": True,
                            "partialArgs": [
                                {"jsonPath": "$.s", "stringValue": "", "willContinue": True}
                            ],
                        }
                    }
                )
            ),
            *(
                google(
                    chunk(
                        {
                            "functionCall": {
                                "partialArgs": [
                                    {"jsonPath": "$.s", "stringValue": p, "willContinue": True}
                                ],
                                "willContinue": True,
                            }
                        }
                    )
                )
                for p in ("a", "x" * 40)
            ),
        ],
    ):
        d = learned(events, max_result_size=30)
        with pytest.raises(PeerProtocolError) as caught:
            d.feed(events[2])
        assert caught.value.limit == "max_result_size"


def test_envelopes_nobody_repeats_are_given_up_and_a_hit_renews_the_budget() -> None:
    text = [google(chunk({"text": "a"}, n)) for n in range(BUDGET + 3)]
    thought = [google(chunk({"text": "t", "thought": True}, n)) for n in range(BUDGET + 3)]
    d = GeminiStreamDecoder()
    d.feed(text[0])
    for n in range(1, BUDGET + 2):  # text, thought, text...: each envelope new, none repeated
        d.feed(text[n] if n % 2 else thought[n])
    assert d._envelope is None
    assert d._budget <= 0
    d = GeminiStreamDecoder()
    d.feed(text[0])
    for n in range(1, BUDGET):
        d.feed(text[n] if n % 2 else thought[n])
    d.feed(text[BUDGET] if BUDGET % 2 else thought[BUDGET])
    d.feed(text[BUDGET + 1] if BUDGET % 2 else thought[BUDGET + 1])  # a hit
    d.feed(thought[BUDGET + 2] if BUDGET % 2 else text[BUDGET + 2])  # learns again
    assert d._budget == BUDGET
    events = [*(text[n] if n % 2 else thought[n] for n in range(BUDGET + 3)), finish()]
    same_as_general(events)


def test_the_usage_is_settled_when_the_result_is_asked_for() -> None:
    d = learned(texts("a", "b", "c"))
    d.feed(texts("a", "b", "c")[2])
    assert d._pending is not None
    assert d.result.usage == Usage(prompt_tokens=3, completion_tokens=3, total_tokens=6)
    assert d._pending is None


ENVELOPE = google(chunk({"text": "a"}))[6:-4]


@pytest.mark.parametrize(
    ("payload", "kind"),
    [
        (ENVELOPE, "piece"),  # no hole of that kind
        (ENVELOPE.replace(b'"usageMetadata"', b'"usage"'), "text"),  # no usage
        (  # the usage before the hole
            json.dumps({"usageMetadata": {}, "candidates": [{"text": "a"}]}).encode(),
            "text",
        ),
        (ENVELOPE.replace(b'"promptTokenCount"', b'"text"'), "text"),  # the key twice
        (  # the usage's key twice
            ENVELOPE.replace(b'"promptTokenCount"', b'"usageMetadata"'),
            "text",
        ),
        (ENVELOPE.replace(b'"a"', b'"a\xff"'), "text"),  # not UTF-8
        (ENVELOPE.replace(b'"text": "a"', b'"text": 5'), "text"),  # not a string
        (ENVELOPE.replace(b'"text": "a"', b'"text": '), "text"),  # no value
        (  # the usage not an object
            json.dumps({"candidates": [{"text": "a"}], "usageMetadata": 5}).encode(),
            "text",
        ),
    ],
)
def test_what_allows_no_envelope(payload: bytes, kind: str) -> None:
    assert Envelope.learn(payload, kind) is None


def test_an_envelope_is_learned_from_compact_json_too() -> None:
    compact = json.dumps(chunk({"text": "a"}), separators=(",", ":")).encode()
    envelope = Envelope.learn(compact, "text")
    assert envelope is not None
    assert envelope.head.endswith(b'"text":"')
    later = compact.replace(b'"a"', b'"bc"').replace(b'Count":1,', b'Count":12,')
    read = envelope.read(later)
    assert read is not None
    hole, m = read
    assert b'"candidatesTokenCount":12,' in m.group(USAGE)
    assert hole == "bc"


def test_a_long_hole_is_found_from_the_end() -> None:
    """The hole's end is the last ``after``: a hole that holds ``after`` itself, escaped, is
    read whole; one that holds it unescaped (two strings, not one) is no repeat."""
    compact = json.dumps(chunk({"text": "a"}), separators=(",", ":")).encode()
    envelope = Envelope.learn(compact, "text")
    assert envelope is not None
    after = _after(compact, b'"a"')
    inner = after.replace(b'"', b'\\"')
    text = 'x\n"' + after.decode()[1:] + "y" * 300
    later = compact.replace(b'"a"', b'"x\\n' + inner + b"y" * 300 + b'"')
    read = envelope.read(later)
    assert read is not None
    assert read[0] == text
    assert envelope.read(compact.replace(b'"a"', b'"x' + after + b"y" * 300 + b'"')) is None
    assert envelope.read(compact.replace(b'"a"', b'"x\\qy"')) is None  # not a JSON escape
    assert envelope.read(b"{}" + compact) is None  # another head
    assert envelope.read(compact.replace(b'"a"', b'"bc"').replace(b'"r1"', b'"r2"')) is None
    long_other = later.replace(b'"r1"', b'"r2"')  # a long hole, other bytes after it
    assert envelope.read(long_other) is None


def _after(payload: bytes, hole: bytes) -> bytes:
    """The bytes from the hole's closing quote to the usage object."""
    closed = payload.index(hole) + len(hole) - 1
    return payload[closed : payload.index(b"{", payload.index(b'"usageMetadata"'))]


def test_the_hot_loop_finds_a_long_hole_from_the_end() -> None:
    """As `Envelope.read` does: a long text of code whose escapes spell the envelope's bytes
    after the hole is read on the hot loop, without a parser; one holding them unescaped is not
    a repeat, and the general way reads it."""
    events = texts("a", "b")
    after = _after(events[1], b'"b"')
    code = 'def f():\n    return "a\\tb"\n' * 20 + after.decode() + " \u00e9"
    d = learned(events)
    loads = d._loads
    d._loads = None  # type: ignore[assignment]  # any parse would fail now
    assert d.feed(texts("a", "b", code)[2]) == [TextDelta(text=code)]
    d._loads = loads
    # a long chunk that ends otherwise (its finish) is read the general way
    same_as_general([*events, google(chunk({"text": code}, 3, finishReason="STOP"))])
    raw = texts("a", "b", "xyz")[2].replace(b"xyz", b"x" + after + b"y" * 300)  # no JSON now
    errors = []
    for parts in ([*events, raw], bytewise(b"".join([*events, raw]))):
        with pytest.raises(PeerProtocolError) as caught:
            run(GeminiStreamDecoder(), parts)
        errors.append(str(caught.value))
    assert errors[0] == errors[1]
    same_as_general([*events, *texts("a", "b", code)[2:], finish()])
