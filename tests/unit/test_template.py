"""The delta templates of `svir_proto._template`: what is learned and what matches."""

from __future__ import annotations

import pytest

from svir_proto._template import Template
from svir_proto.responses.stream import DELTA_KEY, NUMBER_KEY

OPENAI = (
    b'{"type":"response.output_text.delta","sequence_number":%d,"item_id":"msg_1",'
    b'"output_index":0,"content_index":0,"delta":%s,"logprobs":[],"obfuscation":"%s"}'
)
LLAMA = b'{"type":"response.function_call_arguments.delta","delta":%s,"item_id":"fc_1"}'


def learned(payload: bytes, seq: int | None) -> Template:
    t = Template.learn(payload, seq, DELTA_KEY, NUMBER_KEY)
    assert t is not None
    return t


def test_openai_deltas_match_with_the_next_number_and_any_padding() -> None:
    t = learned(OPENAI % (3, b'"a"', b"xY1"), 3)
    assert t.read(OPENAI % (4, b'" b\\"c\\u00e9"', b""), 4) == ' b"c\u00e9'
    assert t.read(OPENAI % (4, b'"d"', b"Z9z9"), 4) == "d"
    assert t.read(OPENAI % (5, b'"d"', b"Z"), 4) is None  # not the number expected
    assert t.read(OPENAI % (4, b'"d"', b"Z"), None) is None  # no number expected yet
    assert t.read(OPENAI % (4, b'"d"', b"Z-"), 4) is None  # padding that is not plain
    plain = OPENAI % (4, b'"d"', b"Z")
    assert t.read(plain.replace(b"msg_1", b"msg_2"), 4) is None
    assert t.read(plain.replace(b"[]", b"[1]"), 4) is None
    assert t.read(plain[:-1] + b"]", 4) is None  # another end
    assert t.read(OPENAI % (4, b'"a"b"', b"Z"), 4) is None  # an unescaped quote: general way
    assert t.read(OPENAI % (4, b'"\xff"', b"Z"), 4) is None  # not UTF-8: the general way's


def test_llamacpp_deltas_have_no_number_and_no_padding() -> None:
    t = learned(LLAMA % b'"{"', None)
    assert t.read(LLAMA % b'"\\"city\\""', None) == '"city"'
    assert t.read(LLAMA % b'"x"' + b" ", None) is None
    overlap = b'{"type":"response.function_call_arguments.delta","delta":","item_id":"fc_1"}'
    assert t.read(overlap, None) is None  # head and tail share the quote: no delta between
    assert t.read(b'{"type":"response.function_call_arguments.delta","delta":"}', None) is None


@pytest.mark.parametrize(
    ("payload", "seq"),
    [
        (b'{"type":"x","delta":7}', None),  # not a string
        (b'{"type":"x","delta":"a","more":{"delta":"b"}}', None),  # two deltas
        (b'{"type":"x","delta":"a\xff"}', None),  # not UTF-8
        (b'{"type":"x","delta":"a","sequence_number":1}', 1),  # the number after the delta
        (b'{"type":"x","sequence_number":1,"delta":"a"}', 2),  # not the number it has
        (b'{"type":"x","delta":"a","obfuscation":"a-b"}', None),  # padding that is not plain
        (b'{"type":"x","delta":"a","obfuscation":"a","obfuscation":"b"}', None),  # two paddings
    ],
)
def test_what_is_not_learned(payload: bytes, seq: int | None) -> None:
    assert Template.learn(payload, seq, DELTA_KEY, NUMBER_KEY) is None


def test_one_reads_a_whole_typed_event_and_nothing_else() -> None:
    t = learned(OPENAI % (3, b'"a"', b"xY1"), 3)
    event = b"event: response.output_text.delta\ndata: " + OPENAI % (4, b'"b\\nc"', b"Q") + b"\n\n"
    assert t.one(event, 4) is None  # not typed yet: only bare payloads are read
    t.typed("response.output_text.delta")
    assert t.one(event, 4) == "b\nc"
    assert t.one(event, 5) is None  # another number
    assert t.one(event[:-1], 4) is None  # no blank line after it
    assert t.one(event.replace(b"event: response", b"event: other"), 4) is None
    assert t.one(event.replace(b'"Q"}', b'"Q","x":1}'), 4) is None  # other bytes after
    assert t.one(event.replace(b"b\\nc", b"b\xffc"), 4) is None  # not UTF-8: the general way's
    percent = learned(LLAMA % b'"{"', None)
    percent.typed("50%_done")  # a name with a percent sign, on a stream without numbers
    assert percent.one(b"event: 50%_done\ndata: " + LLAMA % b'"}"' + b"\n\n", 0) == "}"


def test_ahead_reads_the_whole_events_at_the_front_and_says_what_follows() -> None:
    t = learned(OPENAI % (3, b'"a"', b"xY1"), 3)
    name = b"event: response.output_text.delta\ndata: "

    def event(seq: int, delta: bytes, pad: bytes = b"Q") -> bytes:
        return name + OPENAI % (seq, delta, pad) + b"\n\n"

    two = event(4, b'"b\\"c"') + event(5, b'""', b"")
    assert t.ahead(two, 4, 99, 999) == ([], 0, 0, False)  # not typed yet
    t.typed("response.output_text.delta")
    assert t.ahead(two, 4, 99, 999) == (['b"c'], 2, len(two), True)
    assert t.ahead(two + event(6, b'"d"')[:30], 4, 99, 999) == (['b"c'], 2, len(two), True)
    begun = two + event(6, b'"d"')[:-6]  # its head, and the delta begun
    assert t.ahead(begun, 4, 99, 999)[2:] == (len(two), True)
    assert t.ahead(two + event(7, b'"d"')[:-6], 4, 99, 999)[2:] == (len(two), False)
    assert t.ahead(two + event(6, b'"d"')[:-1], 4, 99, 999)[2:] == (len(two), False)  # an LF
    assert t.ahead(two + b"\r", 4, 99, 999)[2:] == (len(two), False)
    assert t.ahead(two, 5, 99, 999) == ([], 0, 0, False)  # another number
    assert t.ahead(two, 4, 3, 999) == (['b"c'], 2, len(two), True)  # room for all it holds
    assert t.ahead(two, 4, 2, 999) == ([], 0, 0, False)  # no room for the first
    assert t.ahead(two, 4, 99, len(two) // 2 - 1) == ([], 0, 0, False)  # longer than limit
    assert t.ahead(event(4, b'"\\ud800"'), 4, 99, 999) == ([], 0, 0, False)  # not a string
    assert t.ahead(event(4, b'"\xff"'), 4, 99, 999) == ([], 0, 0, False)  # not UTF-8
    assert not learned(LLAMA % b'"{"', None).begins(b"event: x", 0, 0)  # not typed: never


def test_ahead_runs_the_pattern_on_whole_events_only() -> None:
    """An event not whole yet (a long delta, arriving) costs no pattern: its failure over an
    unfinished body would cost ~80 ns a byte on every read."""
    t = learned(OPENAI % (3, b'"a"', b"xY1"), 3)
    t.typed("response.output_text.delta")
    name = b"event: response.output_text.delta\ndata: "
    whole = name + OPENAI % (4, b'"b"', b"Q") + b"\n\n"
    begun = (name + OPENAI % (5, b'"' + b"c" * 5000, b"Q"))[:-30]
    calls = []
    event = t.event

    def counted(*args: object) -> object:
        calls.append(args[1:])
        return event(*args)  # type: ignore[arg-type]

    t.event = counted  # type: ignore[misc]
    assert t.ahead(whole + begun, 4, 99, 9999) == (["b"], 1, len(whole), True)
    assert len(calls) == 1


LONG_CASES = [
    # a long delta of code: its escapes and a copy of the bytes after it, escaped
    (b'"' + b'def f():\\n    return \\"a\\tb\\"\\n' * 20 + b'\\",\\"logprobs\\":[]"', True),
    (b'"' + b"caf\xc3\xa9 " * 100 + b'"', True),
    (b'"' + b"x" * 400 + b'","logprobs":[],"obfuscation":"Q"' + b"y" * 10 + b'"', False),
    (b'"' + b"x" * 400 + b"\\q" + b'"', False),  # not a JSON escape
    (b'"' + b"x" * 400 + b"\\ud800" + b'"', False),  # a lone surrogate
    (b'"' + b"x" * 400 + b"\xff" + b'"', False),  # not UTF-8
]


@pytest.mark.parametrize(("delta", "text"), LONG_CASES)
def test_a_long_delta_is_found_from_the_end_on_every_path(delta: bytes, text: bool) -> None:
    """`read` (a run), `one` and `ahead` find a long delta's end from the event's end
    (`Template.long`): the text the standard library reads, or ``None`` where it does not read
    one valid string; the bytes after it, escaped in it, do not end it early."""
    import json

    t = learned(OPENAI % (3, b'"a"', b"xY1"), 3)
    t.typed("response.output_text.delta")
    payload = OPENAI % (4, delta, b"Q")
    expected = json.loads(delta) if text else None
    assert t.read(payload, 4) == expected
    assert t.read(payload[: -len(b'"logprobs":[],"obfuscation":"Q"}')] + b'"x":1}', 4) is None
    event = b"event: response.output_text.delta\ndata: " + payload + b"\n\n"
    assert t.one(event, 4) == expected
    short = b"event: response.output_text.delta\ndata: " + OPENAI % (5, b'"z"', b"") + b"\n\n"
    # an event whose data goes on over a second line is no delta: the run ends before it
    lines = event.replace(b'","logprobs"', b'",\ndata: "logprobs"', 1)
    assert t.ahead(lines + short, 4, 10**6, 10**6) == ([], 0, 0, False)
    got = t.ahead(event + short, 4, 10**6, 10**6)
    assert got == (([expected, "z"], 2, len(event + short), True) if text else ([], 0, 0, False))
