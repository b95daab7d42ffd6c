"""`RequestScanner`: the facts of a request body, read as it passes, a piece at a time."""

from __future__ import annotations

import json

import pytest

from svir_proto._jsonscan import MAX_VALUE, RequestScanner
from tests.helpers import bytewise

BODY = (
    b'{"model": "qw\\"en", "messages": [{"role": "user", "content": "\\\\ [x] {y}"}], '
    b'"stream": true, "stream_options": {"include_usage": true}, '
    b'"tools": [{"type": "function", "function": {"name": "get_w\\u00e9ather", "x": [1, 2.5]}}]}'
)


def scan(pieces: list[bytes]) -> RequestScanner:
    s = RequestScanner()
    for p in pieces:
        s.feed(p)
    return s


def test_whole_and_bytewise_alike() -> None:
    for pieces in ([BODY], bytewise(BODY)):
        s = scan(pieces)
        assert (s.model, s.stream, s.include_usage, s.tools) == (
            'qw"en',
            True,
            True,
            ["get_wéather"],
        )
        assert not s.broken


def test_what_follows_the_body_and_empty_pieces_change_nothing() -> None:
    s = scan([b"", BODY, b'{"model": "other"}', b""])
    assert s.model == 'qw"en'


def test_a_broken_body_keeps_what_was_found() -> None:
    s = scan([b'{"model": "m", "stream": tru', b'e, "x": ' + b"[" * 1100])  # too deep
    assert s.broken
    assert (s.model, s.stream) == ("m", True)
    s.feed(b'"stream": false')  # nothing more is read
    assert s.stream is True
    assert scan([b"}{"]).broken


def test_values_past_the_bound_are_not_kept_and_the_scan_goes_on() -> None:
    """Attack 38, F2: a kept string was cut at `MAX_VALUE` and parsed: a cut inside a UTF-8
    character or an escape was no JSON, the scan stopped (``broken``), and every fact after it
    was lost (``n`` 3 relayed, ``stream`` read as no stream). A string that long is no fact,
    and a key that long no wanted key; the scan goes on past both."""
    for long in (b"m" * (MAX_VALUE + 50), b"a" * (MAX_VALUE - 1) + "é".encode(),
                 b"a" * (MAX_VALUE - 1) + b'\\"' + b"b" * 20):  # fmt: skip
        body = b'{"model": "' + long + b'", "' + long + b'": 1, "stream": true, "n": 3}'
        assert json.loads(body)["n"] == 3
        for pieces in ([body], bytewise(body)):
            s = scan(pieces)
            assert (s.model, s.stream, s.choices, s.broken) == (None, True, True, False)
    for n in (b'"' + b"0" * 300 + b'2"', b'"' + b" " * 300 + b'2"'):  # (review 39: vLLM reads 2)
        body = b'{"model": "m", "n": ' + n + b"}"
        for s in (RequestScanner.whole(body), scan([body]), scan(bytewise(body))):
            assert (s.model, s.choices, s.broken) == ("m", True, False)


def test_scalars_split_across_pieces() -> None:
    s = scan([b'{"stream": t', b"r", b'ue, "model": "m"}'])
    assert (s.stream, s.model) == (True, "m")
    s = scan([b'{"stream": false', b', "stream_options": {"include_usage": false}}'])
    assert (s.stream, s.include_usage) == (False, False)


def test_tool_names_that_are_not_strings_or_past_the_bound_are_not_kept() -> None:
    from svir_proto._jsonscan import MAX_TOOLS

    def tools(names: list[object]) -> bytes:
        listed = [{"type": "function", "function": {"name": n}} for n in names]
        return json.dumps({"tools": listed}).encode()

    assert scan([tools([1, None, "ok"])]).tools == ["ok"]
    assert scan([tools([f"t{i}" for i in range(MAX_TOOLS + 5)])]).tools == [
        f"t{i}" for i in range(MAX_TOOLS)
    ]


@pytest.mark.parametrize(
    "body",
    [
        b'["model", "m"]',  # no object at the top
        b'{"model":"m","model":"n"}',  # a key twice: the scanner sees both
        b'{"tools":[{"function":{"name":"' + b"f" * 300 + b'"}}]}',  # a name MAX_VALUE cuts
        b'{"model":"\\u006d' + b"m" * 30 + b'"}',  # escaped: it may be longer than it reads
        b'{"x":' + b"[" * 70 + b"]" * 70 + b"}",  # nested past MAX_DEPTH
        b'{"model":"m"} trailing',
        b'{"' + b"k" * 300 + b'":1,"model":"m"}',  # a key the scanner keeps, MAX_VALUE cuts
    ],
)
def test_a_whole_body_the_parse_cannot_vouch_for_is_scanned(body: bytes) -> None:
    assert not RequestScanner()._parse(body)
    whole, fed = RequestScanner.whole(body), scan([body])
    assert (whole.model, whole.tools, whole.broken) == (fed.model, fed.tools, fed.broken)


def test_a_whole_body_is_read_as_the_scanner_reads_it() -> None:
    body = json.dumps(
        {"model": "m", "stream": "yes", "stream_options": [], "metadata": {"request_id": ""},
         "tools": {"a": {"function": {"name": "f"}}, "b": {"function": []}, "c": 1}}
    ).encode()  # fmt: skip
    whole, fed = RequestScanner.whole(body), scan([body])
    assert RequestScanner()._parse(body)
    got = (whole.model, whole.stream, whole.include_usage, whole.request_id, whole.tools)
    assert got == ("m", None, False, None, ["f"])
    assert got == (fed.model, fed.stream, fed.include_usage, fed.request_id, fed.tools)


def test_a_long_scalar_across_pieces_is_held_to_the_bound() -> None:
    """Attack 27: a number of 30 MB in pieces was held whole (8 such bodies: 250 MB)."""
    s = RequestScanner()
    s.feed(b'{"model":"m","stream":')
    for _ in range(1000):
        s.feed(b"1" * 4096)
        assert len(s._scalar) <= MAX_VALUE + 1
    s.feed(b',"x":' + b"2" * 5000)
    s.feed(b"2" * 5000 + b',"metadata":{"request_id":"r"}}')
    assert (s.model, s.stream, s.request_id, s.broken) == ("m", False, "r", False)
    long_true = RequestScanner()
    for piece in (b'{"stream":tr', b"ue" + b"e" * MAX_VALUE, b"}"):
        long_true.feed(piece)
    assert long_true.stream is False  # "truee...": not true, however it is cut


def test_containers_no_fact_is_in_are_skipped_to_their_end() -> None:
    """Attack 27: thirty megabytes of [1,1,1,...] under a key nobody reads cost a Python step
    per value; now the next quote or bracket is all a skipped container is read for, strings
    and depth included."""
    junk = b'{"a":[1,{"b":"]}\\"["}],"c":' + b"[" * 10 + b"1" + b"]" * 10 + b"}"
    body = (
        b'{"messages":[' + b"1," * 50_000 + junk + b'],"model":"m",'
        b'"tools":[{"x":{"name":"no"},"function":{"name":"f","parameters":{"name":"no"}}}],'
        b'"stream_options":{"include_usage":true,"x":[true]},"stream":true}'
    )
    for pieces in (
        [body],
        [*bytewise(body[:200]), body[200:]],
        [body[i : i + 7] for i in range(0, len(body), 7)],
    ):
        s = RequestScanner()
        for piece in pieces:
            s.feed(piece)
        assert (s.model, s.stream, s.include_usage, s.tools, s.broken) == (
            "m", True, True, ["f"], False
        )  # fmt: skip
        assert s._done
    deep = b'{"x":' + b"[" * 1100 + b"]" * 1100 + b',"model":"m"}'
    s = RequestScanner()
    s.feed(deep)
    assert s.broken  # nesting past SKIPPED_DEPTH (Rule 2)


def test_a_skipped_container_too_deep_for_a_window_goes_a_bracket_at_a_time() -> None:
    """A window whose pairs nest past the bound, and one a long string cuts short, are not
    taken at once (`_brackets`): the brackets are followed one at a time, and the bound on
    nesting still stops the scan."""
    long = b'{"model":"m","x":[[[[[' + b'"' + b"a" * 5000 + b'"' + b']]]]],"stream":true}'
    assert (scanned(long).model, scanned(long).stream, scanned(long).broken) == ("m", True, False)
    deep = b'{"model":"m","x":[' + b"[" * 1100 + b"]" * 1100 + b",1" * 3000 + b'],"stream":true}'
    assert (scanned(deep).model, scanned(deep).broken) == ("m", True)
    saw = b'{"model":"m","x":[' + (b"[" * 60 + b"]" * 60 + b",") * 200 + b'1],"stream":true}'
    assert (scanned(saw).model, scanned(saw).stream, scanned(saw).broken) == ("m", True, False)


def scanned(body: bytes) -> RequestScanner:
    scanner = RequestScanner()
    scanner.feed(body)
    return scanner


def test_a_key_written_with_escapes_is_read_as_its_text() -> None:
    """A key the scanner wants (``model``), written with an escape, is that key; the coverage
    of this way came only from the interop recordings before."""
    body = b'{"mod\\u0065l": "m1", "stream": true}'
    for pieces in ([body], bytewise(body)):
        s = scan(pieces)
        assert (s.model, s.stream) == ("m1", True)


@pytest.mark.parametrize(
    ("n", "choices"),
    [
        (b"1", False),
        (b"null", False),
        (b"1.0", False),
        (b"2", True),
        (b"1." + b"0" * 300, True),  # past MAX_VALUE: other than one, however it is cut
        (b"1" + b"0" * 300 + b"e-300", True),
        (b"1" + b"0" * 5000, True),  # past Python's digits for int(): no parse, no break
        (b'"2"', True),  # a string of one, which vLLM reads as 2 (attack round 33)
        (b'" 1 "', False),
        (b'"two"', False),  # no number: the upstream's to refuse
        (b"[2]", False),
    ],
)
def test_n_is_the_same_fact_however_the_body_is_cut(n: bytes, choices: bool) -> None:
    """The review of stop 32 found a long ``n`` read whole in one piece and as a stand-in
    across two, and a 5000-digit one break the scan (losing ``stream`` after it)."""
    body = b'{"model":"m","n":' + n + b',"stream":true}'
    cuts = [
        RequestScanner.whole(body),
        scan([body]),
        scan([body[i : i + 1] for i in range(len(body))]),
    ]
    assert [(s.choices, s.stream, s.broken) for s in cuts] == [(choices, True, False)] * 3


def test_a_body_the_scan_cannot_read_is_parsed_for_its_n() -> None:
    from svir_proto._jsonscan import parsed_choices

    members = b'{"model":"m",' + b'"a":[],' * 1100 + b'"n":2}'
    assert scan([members]).broken
    assert not scan([members]).choices
    assert parsed_choices(members)
    assert not parsed_choices(members.replace(b'"n":2', b'"n":1'))
    assert not parsed_choices(b'{"n":2')  # not JSON: the upstream's to refuse
    assert not parsed_choices(b"[2]")


def counted() -> tuple[RequestScanner, list[int]]:
    """A scanner, and the count of its strings' parts read so far (a Python step each)."""
    s = RequestScanner()
    calls = [0]
    part = s._string_part

    def step(data: bytes, text: bytes, pos: int) -> int:
        calls[0] += 1
        return part(data, text, pos)

    s._string_part = step  # type: ignore[method-assign]
    return s, calls


@pytest.mark.parametrize("where", ["skipped", "read"])
def test_a_string_of_escapes_costs_a_few_steps_a_piece_and_little_memory(where: str) -> None:
    """Attack round 37 (F5): a relayed body of escapes (``"\\n"`` fifteen million times) cost
    seven seconds of CPU, a Python step per escape, and a skipped container's string cost its
    match some 120 bytes a byte (30 MB for a 256 KiB read). A string is now a search for its
    quote in the piece with its escapes spelled plain (`_unescaped`), at any place: in a
    container the scan skips (``messages``) or in a value it reads past (a top-level key)."""
    import tracemalloc

    escapes = b'\\n\\"\\\\' * 100_000  # 600 KB: a newline, a quote, a backslash, as escapes
    if where == "skipped":
        body = b'{"messages":[{"content":"' + escapes + b'"}],"model":"m","stream":true}'
    else:
        body = b'{"x":"' + escapes + b'","model":"m","stream":true}'
    pieces = [body[i : i + 65536] for i in range(0, len(body), 65536)]
    s, calls = counted()
    tracemalloc.start()
    try:
        for piece in pieces:
            s.feed(piece)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (s.model, s.stream, s.broken) == ("m", True, False)
    assert calls[0] <= 3 * len(pieces), f"{calls[0]} steps for {len(pieces)} pieces"
    assert peak < 8 * 65536, f"{peak} bytes at the most for pieces of 64 KiB"


@pytest.mark.parametrize("cut", range(1, 12))
def test_a_backslash_run_across_pieces_escapes_as_one_run(cut: int) -> None:
    """Backslashes pair from the start of their run, whichever piece each is in: an odd run
    ending a piece escapes the next piece's first byte, a quote or a backslash."""
    body = b'{"x":"a\\\\\\\\\\"\\\\","model":"m\\\\\\"","stream":true}'
    assert json.loads(body) == {"x": 'a\\\\"\\', "model": 'm\\"', "stream": True}
    for pieces in ([body[:cut], body[cut:]], [body[:cut], body[cut : cut + 1], body[cut + 1 :]]):
        s = scan(pieces)
        assert (s.model, s.stream, s.broken) == ('m\\"', True, False), pieces


def test_a_body_beginning_with_a_byte_order_mark_is_read_past_it() -> None:
    """Attack 38, F3: Python's ``json.loads`` of bytes (vLLM's), and llama.cpp's parser, read a
    body that begins with a UTF-8 BOM; the scanner stopped at it, and ``n`` 3 was relayed."""
    from svir_proto._jsonscan import parsed_choices

    body = b"\xef\xbb\xbf" + json.dumps({"model": "m", "stream": True, "n": 3}).encode()
    assert json.loads(body)["n"] == 3
    for s in (RequestScanner.whole(body), scan(bytewise(body)), scan([body[:2], body[2:]])):
        assert (s.model, s.stream, s.choices, s.broken) == ("m", True, True, False)
    assert parsed_choices(body)
    assert scan([b'{"model": "m"}\xef']).model == "m"  # (after the body: not read)
    for odd in (b"\xbf\xbb" + body[3:], b" " + body, body[:3] + body, body[:2] + body[3:]):
        with pytest.raises((json.JSONDecodeError, UnicodeDecodeError)):
            json.loads(odd)
        for s in (RequestScanner.whole(odd), scan(bytewise(odd))):
            assert s.model is None  # (review 39: a BOM's bytes anywhere were read past)


def test_members_no_fact_is_in_are_read_past_at_once_and_not_counted() -> None:
    """Attack 38, F4 and F2: every member of the objects the scan goes into (the top level,
    each tool, each function) cost a Python step or more, and past `MAX_MEMBERS` the scan
    stopped: 31 MB of tools of a thousand members each cost 12 s of CPU, and 1,100 options
    before ``n`` hid it (``n`` 3 relayed). A run of members whose keys are no wanted path's
    and whose values are strings or scalars is one C-level match now."""
    from svir_proto._jsonscan import MAX_MEMBERS

    members = ",".join(f'"k{i}": {i}, "s{i}": "a,b"' for i in range(MAX_MEMBERS)).encode()
    function = b'{"description": "d", ' + members + b', "name": "get"}'
    tool = b'{"type": "function", ' + members + b', "function": ' + function + b"}"
    body = b'{"model": "m", ' + members + b', "tools": [' + b", ".join([tool] * 20) + b'], "n": 3}'
    s, calls = counted()
    pieces = [body[i : i + 65536] for i in range(0, len(body), 65536)]
    for piece in pieces:
        s.feed(piece)
    assert (s.model, s.tools, s.choices, s.broken) == ("m", ["get"] * 20, True, False)
    assert calls[0] < 20 * 10 + 4 * len(pieces), calls  # a few keys a tool, not a member each
    assert facts_of(RequestScanner.whole(body)) == facts_of(s)


def facts_of(s: RequestScanner) -> tuple[object, ...]:
    return (s.model, s.stream, s.tools, s.choices, s.broken)


@pytest.mark.parametrize("depth", [70, 800])
def test_a_skipped_container_nested_as_deep_as_upstreams_take_is_read_past(depth: int) -> None:
    """Attack 38, F2: nesting past 64 levels in a message stopped the scan (``n`` 3 relayed);
    Python's json (vLLM's) reads nearly a thousand. The scan follows a skipped container to
    `SKIPPED_DEPTH`, deep windows a bracket's level at a time in C (`_levels`), not a Python
    step each (30 MB of arrays 60 deep took minutes; now seconds)."""
    from svir_proto._jsonscan import SKIPPED_DEPTH

    nested = b"[" * depth + b'"x]"' + b"]" * depth
    body = b'{"messages": [{"content": ' + nested + b'}], "model": "m", "n": 3}'
    assert json.loads(body)["n"] == 3
    for pieces in ([body], [body[i : i + 100] for i in range(0, len(body), 100)]):
        s = scan(pieces)
        assert (s.model, s.choices, s.broken) == ("m", True, False)
    deeper = b"[" * (SKIPPED_DEPTH + 8) + b"]" * (SKIPPED_DEPTH + 8)  # (its last 3 at once)
    s = scan([b'{"messages": ' + deeper + b', "model": "m"}'])
    assert (s.model, s.broken) == (None, True)
