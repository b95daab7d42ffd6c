"""`svir_proto._json`: one JSON policy whatever parser is installed (its rules, one by one)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from svir_proto import _json
from svir_proto._json import MAX_DEPTH, JSONPolicyError, canonical, too_deep


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", "[-Infinity]", "1e400", "[-1e999]"])
def test_rule_1_no_nan_no_infinity(text: str) -> None:
    with pytest.raises(ValueError, match=r"not JSON|beyond the float range"):
        canonical(text)


def test_rule_2_integers_beyond_64_bits_read_as_floats() -> None:
    assert canonical("18446744073709551615") == 2**64 - 1
    assert canonical("-9223372036854775808") == -(2**63)
    assert canonical("18446744073709551616") == float(2**64)
    assert isinstance(canonical("123456789012345678901234567890"), float)
    with pytest.raises(ValueError, match="float range"):
        canonical("1" + "0" * 400)
    # past Python's 4,300 digits, still Rule 2 (attack 47 H3: it was ``int``'s own refusal),
    # and the number is not written whole into the message
    with pytest.raises(ValueError, match=r"^99999999999999999999\.\.\. \(5000 characters\) is"):
        canonical("9" * 5000)


NUMBERS = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["1e400", "-1E+309", "1e-400", "1.5e0300", "2e308", "7e30", "1" + "0" * 19]),
)
IDS = st.sampled_from(
    ["chatcmpl-269e0d37f2a74de452e6b438", "5e000e", "1e300 m", "x5e0001", "2025-04-14"]
)


@given(st.lists(st.one_of(NUMBERS, IDS.map(json.dumps)), min_size=1, max_size=12), IDS)
def test_rules_1_and_2_read_alike_whether_the_numbers_look_plain(
    items: list[str], pad: str
) -> None:
    """A payload whose numbers `_plain_numbers` finds past neither rule is read by the C
    scanner without the hooks (a chunk of logprobs holds dozens): the same value or the same
    error as with them, whatever the strings around the numbers hold."""
    text = json.dumps({"id": pad, "pad": "x" * 300})[:-1] + ',"n":[' + ",".join(items) + "]}"
    raw = text.encode()
    try:
        hooked = _json._decode(text, _json._SCAN)
    except ValueError:
        assert not _json._plain_numbers(raw)
    else:
        if _json._plain_numbers(raw):
            assert repr(_json._decode(text, _json._SCAN_PLAIN)) == repr(hooked)


def test_an_id_in_hex_leaves_the_numbers_plain() -> None:
    """Found by the logprobs benchmark: an id in hex with a dash (``chatcmpl-269e0d...``) and a
    model's date read as an exponent of three digits, so every chunk of a stream paid a hook
    per number (1.75x the floor with the standard library)."""
    chunk = json.dumps(
        {
            "id": "chatcmpl-269e0d37f2a74de452e6b438",
            "model": "gpt-4.1-mini-2025-04-14",
            "logprobs": [{"logprob": -3.8991481529212186, "bytes": [32, 240, 159]}] * 8,
        }
    ).encode()
    assert _json._plain_numbers(chunk)
    assert not _json._plain_numbers(chunk[:-1] + b',"big":-1e+400}')
    assert not _json._plain_numbers(chunk[:-1] + b',"note":"1e300 m"}')  # a no: hooks, alike
    many = b'["' + b'5e000e","' * _json._LOOKS + b'"]'  # past the bound: a no, at once
    assert not _json._plain_numbers(many)
    assert _json._plain_numbers(b'["' + b'5e000e","' * (_json._LOOKS - 1) + b'"]')


@pytest.mark.parametrize("number", [b"1e400x", b"-1e400:", b"1e400.5"])
def test_a_text_that_is_no_json_fails_as_the_hooks_say(number: bytes) -> None:
    """Review 40: past Rule 1 and followed by what ends no number, the exponent looked plain,
    and the error was the scanner's, further on: it is the hooks' wherever the numbers look
    plain."""
    raw = b'{"pad":"' + b"x" * 300 + b'","n":' + number + b"}"
    assert _json._plain_numbers(raw)
    with pytest.raises(ValueError, match="beyond the float range"):
        canonical(raw)


@pytest.mark.parametrize("raw", [b"\xef\xbb\xbf{}", '{"a":1}'.encode("utf-16"), b'"\xed\xa0\x80"'])
def test_rule_3_utf8_only(raw: bytes) -> None:
    with pytest.raises((ValueError, UnicodeDecodeError)):
        canonical(raw)


@pytest.mark.parametrize(
    ("text", "at"),
    [
        (r'"\ud800"', 1),  # a high half alone
        (r'"x\udc00"', 2),  # a low half alone
        (r'"\ud800\ud800\udc00"', 1),  # a high half followed by another high half
        (r'"\ud800 \udc00"', 1),  # halves apart
        (r'["\ud83d\ude00", "\ud83d"]', 18),  # a pair, then a high half alone
    ],
)
def test_rule_4_a_lone_surrogate_is_an_error_at_its_offset(text: str, at: int) -> None:
    with pytest.raises(JSONPolicyError) as info:
        canonical(text)
    assert info.value.pos == at
    assert canonical(text, errors="replace") is not None


def test_rule_4_pairs_and_escaped_backslashes_are_text() -> None:
    assert canonical(r'"\ud83d\ude00"') == "\U0001f600"
    assert canonical(r'"\\ud800"') == "\\ud800"
    assert canonical(r'{"\ud800": ["\udfff"]}', errors="replace") == {"\ufffd": ["\ufffd"]}
    assert canonical(b'"\xff"', errors="replace") == "\ufffd"


def test_rule_4_a_relays_policy_replaces_escapes_and_refuses_bytes() -> None:
    """``errors="surrogates"``: an escaped lone surrogate is valid JSON (a relay passes it on
    for its client to join), bytes that are not UTF-8 are not JSON text."""
    assert canonical(b'["A\\ud83d", "\\ude00B"]', errors="surrogates") == ["A\ufffd", "\ufffdB"]
    with pytest.raises(UnicodeDecodeError):
        canonical(b'"caf\xc3"', errors="surrogates")
    from svir_proto.errors import PeerProtocolError
    from svir_proto.openai import ChatStreamDecoder

    d = ChatStreamDecoder(errors="surrogates")
    d.feed(b'data: {"choices":[{"index":0,"delta":{"content":"A\\ud83d"}}]}\n\n')
    with pytest.raises(PeerProtocolError, match="invalid UTF-8"):
        d.feed(b'data: {"choices":[{"index":0,"delta":{"content":"\xc3"}}]}\n\n')
    assert d.result.text == "A\ufffd"


def test_rule_5_nesting() -> None:
    ok = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert not too_deep(ok)
    deep = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    assert too_deep(deep)
    assert too_deep(deep.encode())
    with pytest.raises(JSONPolicyError, match="nested deeper"):
        canonical(deep)
    in_strings = json.dumps(["[" * 600, '\\"[[[', "{" * 600])  # brackets in strings do not nest
    assert not too_deep(in_strings)


def test_rules_4_and_5_together_at_the_depth_limit() -> None:
    # a surrogate check that recursed met Python's recursion limit near MAX_DEPTH, where
    # orjson reads on (found by the backend-differential property test)
    inner = MAX_DEPTH - 1
    text = '{"k\\ud800":' + "[" * inner + '"\\udc00x"' + "]" * inner + ',"ok":"\\ud83d\\ude00"}'
    value = canonical(text, errors="replace")
    assert isinstance(value, dict)
    assert value["ok"] == "\U0001f600"
    item = value["k\ufffd"]
    for _ in range(inner):
        item = item[0]
    assert item == "\ufffdx"
    with pytest.raises(JSONPolicyError, match="lone surrogate"):
        canonical(text)
    mixed = canonical('[1, null, "\\ud800", {"n": 2, "k": ["\\udc00", 3.5]}]', errors="replace")
    assert mixed == [1, None, "\ufffd", {"n": 2, "k": ["\ufffd", 3.5]}]
    paired = "[" * MAX_DEPTH + '"\\ud83d\\ude00"' + "]" * MAX_DEPTH
    assert canonical(paired) is not None


def test_use_selects_a_backend() -> None:
    before = _json.BACKEND
    try:
        _json.use("json")
        assert _json.loads("[1]") == [1]
        with pytest.raises(ValueError, match="backend must be"):
            _json.use("simdjson")  # type: ignore[arg-type]
    finally:
        _json.use(before)


def test_use_refuses_orjson_when_it_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_json, "orjson", None)
    with pytest.raises(ValueError, match="orjson is not installed"):
        _json.use("orjson")


def test_what_follows_the_value_may_be_whitespace_only() -> None:
    assert _json.canonical('{"a": 1} \n') == {"a": 1}
    assert _json.canonical(" [1]") == [1]
    with pytest.raises(json.JSONDecodeError) as info:
        _json.canonical('{"a": 1} x')
    assert (info.value.msg, info.value.pos) == ("Extra data", 9)
    with pytest.raises(json.JSONDecodeError) as info:
        _json.canonical("  ")
    assert (info.value.msg, info.value.pos) == ("Expecting value", 2)


@pytest.mark.parametrize("backend", ["orjson", "json"])
def test_the_decoders_refuse_nesting_past_the_limit_on_either_backend(backend: str) -> None:
    """orjson reads 600 levels and the standard library may too: Rule 5 refuses them in both
    dialects' events, with the same error whatever the backend (the decoders check the depth
    of long payloads only, so this one is long)."""
    from svir_proto import PeerProtocolError
    from svir_proto.llmstream import LLMStreamDecoder
    from svir_proto.openai import ChatStreamDecoder

    if backend == "orjson" and _json.orjson is None:  # pragma: no cover - fast extra missing
        pytest.skip("orjson is not installed")
    deep = "[" * 600 + "]" * 600
    bodies = {
        ChatStreamDecoder: f'data: {{"id":"c","choices":[],"x":{deep}}}\n\n',
        LLMStreamDecoder: f'event: stream.start\ndata: {{"v":"1.0","seq":0,"type":"stream.start",'
        f'"x":{deep}}}\n\n',
    }
    before = _json.BACKEND
    try:
        _json.use(backend)  # type: ignore[arg-type]
        for decoder, body in bodies.items():
            with pytest.raises(PeerProtocolError, match="nested deeper") as info:
                decoder().feed(body.encode())
            assert info.value.offset == body.index("{")
    finally:
        _json.use(before)


def _deep_by_bytes(raw: bytes) -> bool:
    """Rule 5 byte by byte, as `too_deep` once read it: the reference its C-speed reading
    must agree with."""
    depth = 0
    in_string = escape = False
    for byte in raw:
        if in_string:
            if escape:
                escape = False
            elif byte == 0x5C:
                escape = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in b"[{":
            depth += 1
            if depth > MAX_DEPTH:
                return True
        elif byte in b"]}":
            depth -= 1
    return False


@given(
    st.integers(MAX_DEPTH - 8, MAX_DEPTH),
    st.lists(st.sampled_from([b"[", b"]", b"{", b"}", b'"', b"\\", b"a", b'\\"']), max_size=60),
)
def test_rule_5_reads_strings_and_brackets_as_byte_by_byte(opened: int, rest: list[bytes]) -> None:
    raw = b"[" * opened + b"".join(rest) + b" " * (2 * MAX_DEPTH)  # past the length cut
    assert too_deep(raw) is _deep_by_bytes(raw)
    assert too_deep(b'"' + raw) is _deep_by_bytes(b'"' + raw)  # all in a string, or most


HIDDEN = '{"k":' + "[" * 20 + "]" * 20 + ',"k":1}'
HIDDEN_DEEP = '{"k":' + "[" * 600 + "]" * 600 + ',"k":"' + "\\u005b" * 600 + '"}'
"""Values deeper than the parse shows, one with escaped brackets where the hidden ones were."""


def test_a_value_hidden_by_a_duplicate_key_is_as_deep_as_its_bytes() -> None:
    """Found by review: the walk alone read 513..1024 levels behind a duplicate key as
    shallow, where the bytes (and the standard library past its stack) said too deep."""
    for text in ('{"a":' + "[" * 513 + "]" * 513 + ',"a":1}', HIDDEN_DEEP):
        assert too_deep(text, json.loads(text))
        with pytest.raises(JSONPolicyError, match="nested deeper"):
            canonical(text)


@given(
    st.integers(MAX_DEPTH - 8, MAX_DEPTH + 8),
    st.lists(
        st.sampled_from(
            ['"[[{"', '"a"', "[]", "{}", '{"k":[1]}', '"\\\\["', '"\\u005b"', HIDDEN, HIDDEN_DEEP]
        ),
        max_size=40,
    ),
)
def test_rule_5_reads_a_parsed_value_as_its_bytes(opened: int, items: list[str]) -> None:
    """A payload the caller parsed is walked a level at a time: the same answer as its bytes
    read byte by byte, brackets in strings (code, arguments) counting for nothing, and a
    value a duplicate key hid (the last one wins) counting as its bytes do."""
    text = "[" * opened + ",".join(['"' + "[" * 600 + '"', *items]) + "]" * opened
    assert too_deep(text, json.loads(text)) is _deep_by_bytes(text.encode())


@pytest.mark.parametrize("deep", [False, True])
def test_rule_5_reads_a_value_of_many_containers_from_its_bytes(deep: bool) -> None:
    """Attack 41 F3: past `_WALKED` containers the walk stops (a microsecond each) and the
    bytes tell, with the same answer."""
    nested = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) if deep else "[]"
    text = "[" + ",".join(['{"a":[{}]}'] * (_json._WALKED + 1) + ['"[{"', nested]) + "]"
    assert too_deep(text, json.loads(text)) is deep is _deep_by_bytes(text.encode())


@pytest.mark.parametrize("backend", ["orjson", "json"] if _json.orjson else ["json"])
def test_a_long_string_read_from_its_bytes_takes_the_way_its_first_escape_says(
    backend: str,
) -> None:
    """`string_text` on a long body: a call's arguments (quotes escaped, nothing else) are
    unquoted; code whose first escape is another goes to the scanner at once; a quote escaped
    first and another escape later goes to the scanner too. Each as the parser reads it."""
    from svir_proto._jsonbytes import string_text

    before = _json.BACKEND
    _json.use(backend)  # type: ignore[arg-type]
    try:
        for body in (
            b'{\\"city\\": \\"' + b"x" * 300 + b'\\"}',
            b'def f():\\n    return \\"a\\tb\\"' + b"y" * 300,
            b'say \\"hi\\"' + b"z" * 300 + b"\\n",
            b'a \\"' + b"z" * 300 + b'"b',  # an unescaped quote: not one string
        ):
            payload = b'{"delta":"' + body + b'"}'
            try:
                expected: object = json.loads(b'"' + body + b'"')
            except ValueError:
                expected = None
            assert string_text(payload, 10, len(payload) - 2) == expected
    finally:
        _json.use(before)
