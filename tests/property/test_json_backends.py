"""Hypothesis: one answer whatever the JSON backend. The same chunks, holding the values the two
parsers disagree on (NaN, Infinity, numbers beyond float or 64-bit range, lone surrogates escaped
or encoded, a BOM, duplicate keys, deep nesting), go to both decoders with orjson and with the
standard library, strict and replace: the same events, errors and results."""

from __future__ import annotations

import importlib.util
import sys

from hypothesis import given
from hypothesis import strategies as st

from svir_proto import _json
from svir_proto._jsonbytes import string_text
from svir_proto.llmstream import LLMStreamDecoder
from svir_proto.openai import ChatStreamDecoder
from tests.helpers import ROOT

spec = importlib.util.spec_from_file_location("_harness", ROOT / "fuzz" / "_harness.py")
assert spec is not None
assert spec.loader is not None
harness = importlib.util.module_from_spec(spec)
sys.path.insert(0, str(ROOT / "fuzz"))
spec.loader.exec_module(harness)

ODD_NUMBERS = st.sampled_from(
    [b"NaN", b"Infinity", b"-Infinity", b"1e400", b"-1e999", b"18446744073709551615",
     b"18446744073709551616", b"-9223372036854775809", b"123456789012345678901234567890",
     b"1.5", b"-0", b"7", b"1" + b"0" * 400, b"1e+400", b"1E400", b"-1e-400", b"1.0e0400",
     b"12345678901234567890.5", b"0.1234567890123456789e5", b"9223372036854775807"]
)  # fmt: skip
ODD_TEXT = st.sampled_from(
    [b'"\\ud800"', b'"\\udfff x"', b'"\\ud83d\\ude00"', b'"a\\ud83d"', b'"\xed\xa0\x80"',
     b'"\xff"', b'"\\\\ud800"', b'"plain"', b'"caf\xc3\xa9"', b'"\\u00e9"']
)  # fmt: skip


@st.composite
def chunks(draw: st.DrawFn) -> bytes:
    text = draw(ODD_TEXT)
    number = draw(ODD_NUMBERS)
    nest = draw(st.sampled_from([0, 10, 511, 520, 1030]))
    payload = (
        b'{"id":"c","model":"m","choices":[{"index":0,"delta":{"content":' + text + b"},"
        b'"finish_reason":null}],"usage":{"prompt_tokens":'
        + number
        + b',"completion_tokens":2}'
        + (b',"x":' + b"[" * nest + b"]" * nest if nest else b"")
        + draw(st.sampled_from([b"", b',"id":"d"', b',"usage":null']))
        + draw(st.sampled_from([b"", b',"pad":"' + b"x" * 300 + b'"']))  # past _json._SHORT
        + b"}"
    )
    if draw(st.booleans()):
        payload = b"\xef\xbb\xbf" + payload
    return payload


@given(chunks(), st.sampled_from(["strict", "replace"]))
def test_the_openai_decoder_reads_alike_with_either_backend(payload: bytes, errors: str) -> None:
    body = b"data: " + payload + b"\n\ndata: [DONE]\n\n"
    harness.differential(lambda: ChatStreamDecoder(errors=errors), body)  # type: ignore[arg-type]


@given(chunks(), st.sampled_from(["strict", "replace"]))
def test_the_llm_stream_decoder_reads_alike_with_either_backend(
    payload: bytes, errors: str
) -> None:
    start = b'event: stream.start\ndata: {"v":"1.0","seq":0,"type":"stream.start","model":"m",'
    start += b'"created":1}\n\n'
    body = start + b"event: content.delta\ndata: " + payload + b"\n\n"
    harness.differential(lambda: LLMStreamDecoder(errors=errors), body)  # type: ignore[arg-type]


def test_no_text_that_cannot_be_utf8_leaves_a_decoder() -> None:
    body = b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"a\\ud800b"}}]}\n\n'
    for backend in _json.BACKEND, "json":
        _json.use(backend)  # type: ignore[arg-type]
        d = ChatStreamDecoder(errors="replace")
        d.feed(body + b"data: [DONE]\n\n")
        assert d.result.text == "a\ufffdb"
        d.result.text.encode("utf-8")  # it can be encoded: a gateway would not crash
    _json.use("orjson" if _json.orjson is not None else "json")


NUMBER_TEXT = st.one_of(
    st.integers().map(lambda n: str(n).encode()),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda f: repr(f).encode()),
    st.from_regex(rb"\A-?(0|[1-9][0-9]{0,30})(\.[0-9]{1,30})?([eE][+-]?[0-9]{1,4})?\Z"),
    ODD_NUMBERS,
)


@given(st.lists(NUMBER_TEXT, min_size=1, max_size=40), st.integers(0, 400))
def test_numbers_read_alike_with_or_without_the_hooks(numbers: list[bytes], pad: int) -> None:
    """The standard library's scanner without hooks (for a payload whose numbers no rule can
    touch) reads every number as the scanner with them does, and fails where it fails."""
    payload = b'{"pad":"' + b"x" * pad + b'","n":[' + b",".join(numbers) + b"]}"

    def read(data: bytes | str) -> object:
        try:
            return ("value", _json.canonical(data))
        except ValueError as exc:
            return ("error", type(exc), str(exc))

    assert read(payload) == read(payload.decode())  # text always takes the hooks


STRING_PIECES = st.sampled_from(
    [b"plain words ", b"caf\xc3\xa9 ", b"\xf0\x9f\x99\x82", b"\\n", b"\\t", b'\\"', b"\\\\",
     b"\\/", b"\\u00e9", b"\\ud83d\\ude00", b"\\ud800", b"\\udc00x", b"\\\\ud800", b'"', b"\x01",
     b"\xff", b"\xed\xa0\x80", b"\\x41", b"\\", b"x" * 150]
)  # fmt: skip


@given(st.lists(STRING_PIECES, max_size=12), st.booleans())
def test_a_string_read_from_its_bytes_reads_alike_with_either_backend(
    pieces: list[bytes], long: bool
) -> None:
    """`string_text` (the templates' way to a delta's text) gives, with orjson and with the
    standard library, the same text or the same refusal (``None``, or UnicodeDecodeError for the
    general way to judge), and a text only where the parser reads the quoted body as that text
    under the rules: plain bodies, a call's ``\\"`` bodies and long ones with other escapes,
    which take different ways."""
    body = b"".join(pieces) + (b"y" * 200 if long else b"")
    payload = b'{"content":"' + body + b'"}'
    opened, closed = 12, len(payload) - 2

    def read() -> object:
        try:
            return ("text", string_text(bytearray(payload), opened, closed))
        except UnicodeDecodeError:
            return ("not utf-8",)

    outcomes = []
    for backend in ("orjson", "json") if _json.orjson is not None else ("json",):
        _json.use(backend)  # type: ignore[arg-type]
        outcomes.append(read())
    _json.use("orjson" if _json.orjson is not None else "json")
    assert all(outcome == outcomes[0] for outcome in outcomes)
    try:
        expected: object = _json.canonical(b'"' + body + b'"')
    except ValueError:  # UnicodeDecodeError included
        expected = None
    assert outcomes[0] == ("text", expected) or (
        expected is None and outcomes[0][1:] in [(None,), ()]
    )
