"""Hypothesis: the request scanner against json.loads, on request bodies split anywhere."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from svir_proto._jsonscan import MAX_MEMBERS, MAX_VALUE, RequestScanner
from tests.helpers import splits

TEXT = st.text(max_size=30) | st.text('\\"\n{}[],:a', max_size=30)  # escapes: runs of them
JUNK: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=10,
)


EXTRA = st.dictionaries(  # members no wanted path goes through, read past in C (`_MEMBERS`)
    st.sampled_from(["a", "nn", "models", "n ", "Name", "x\\y", 'q"', "é", "type", "strict"]),
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    max_size=4,
)


@st.composite
def requests(draw: st.DrawFn) -> dict[str, Any]:
    doc: dict[str, Any] = dict(draw(EXTRA))
    keys = draw(
        st.permutations(["model", "messages", "stream", "stream_options", "tools", "n", "x"])
    )
    for key in keys:
        if key == "model":
            doc["model"] = draw(TEXT)
        elif key == "messages":
            doc["messages"] = [{"role": "user", "content": draw(TEXT)}, draw(JUNK)]
        elif key == "stream":
            doc["stream"] = draw(st.booleans() | st.none())
        elif key == "stream_options" and draw(st.booleans()):
            doc["stream_options"] = {"include_usage": draw(st.booleans()), "x": draw(JUNK)}
        elif key == "tools" and draw(st.booleans()):
            doc["tools"] = [
                {
                    **draw(EXTRA),
                    "type": "function",
                    "function": {**draw(EXTRA), "name": draw(TEXT), "parameters": draw(JUNK)},
                }
                for _ in range(draw(st.integers(0, 3)))
            ]
        elif key == "n" and draw(st.booleans()):
            doc["n"] = draw(st.sampled_from([1, 2, 0, 1.0, None, True, "2", [2]]) | st.integers())
        elif key == "x":
            doc["x"] = draw(JUNK)
    return doc


@given(requests(), st.booleans(), st.data())
def test_the_facts_equal_json_loads_however_split(
    doc: dict[str, Any], ascii_only: bool, data: st.DataObject
) -> None:
    body = json.dumps(doc, ensure_ascii=ascii_only).encode()
    scanner = RequestScanner()
    for piece in data.draw(splits(body)):
        scanner.feed(piece)
    assert not scanner.broken
    model = doc.get("model")
    assert scanner.model == (model if len(model.encode()) <= MAX_VALUE // 6 else scanner.model)
    assert scanner.stream == (doc.get("stream") is True if "stream" in doc else None)
    assert scanner.include_usage == bool(doc.get("stream_options", {}).get("include_usage"))
    assert scanner.tools == [t["function"]["name"] for t in doc.get("tools", [])]
    n = doc.get("n")
    if type(n) is str:  # a string of a number is that number (what vLLM reads)
        n = float(n) if n.strip().lstrip("-").replace(".", "", 1).isdigit() else None
    assert scanner.choices == (type(n) in (int, float) and n != 1)


@given(st.binary(max_size=200), st.data())
def test_any_bytes_never_raise(raw: bytes, data: st.DataObject) -> None:
    scanner = RequestScanner()
    for piece in data.draw(splits(raw)):
        scanner.feed(piece)


def test_nesting_beyond_the_bound_stops_the_scan_and_odd_names_are_skipped() -> None:
    deep = RequestScanner()
    deep.feed(b'{"model":"m",' + b'"x":' + b"[" * 1100)
    assert deep.broken
    assert deep.model == "m"
    odd = RequestScanner()
    odd.feed(b'{"tools":[{"function":{"name":5}},{"function":{"name":"ok"}}],"stream":true}')
    assert odd.tools == ["ok"]
    assert odd.stream is True


def facts(scanner: RequestScanner) -> tuple[object, ...]:
    return (
        scanner.model,
        scanner.request_id,
        scanner.stream,
        scanner.include_usage,
        scanner.tools,
        scanner.choices,
        scanner.broken,
    )


def scanned(body: bytes) -> RequestScanner:
    scanner = RequestScanner()
    scanner.feed(body)
    return scanner


NAMES = st.sampled_from(["model", "stream", "tools", "function", "name", "metadata",
                         "request_id", "stream_options", "include_usage", "n", "x"])  # fmt: skip
LONG = st.text(min_size=15, max_size=300) | st.text(alphabet='\n"\\é\U0001f600', max_size=60)
VALUES: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT | LONG,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAMES | TEXT, inner, max_size=4),
    max_leaves=12,
)


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    """Request-like JSON, and what may trip a parse into reading it otherwise than the scanner:
    a key twice, long or escaped kept strings, tools as an object, deep nesting, junk around."""
    doc = draw(requests() | st.dictionaries(NAMES, VALUES, max_size=6))
    if draw(st.booleans()):
        doc["metadata"] = {"request_id": draw(TEXT | LONG | st.integers())}
    if draw(st.booleans()) and isinstance(doc.get("tools"), list):
        doc["tools"] = {str(i): t for i, t in enumerate(doc["tools"])}
    text = json.dumps(doc, ensure_ascii=draw(st.booleans()))
    if draw(st.booleans()) and len(text) > 2:  # a key twice
        key = draw(NAMES)
        text = text[:-1] + ("," if len(doc) else "") + f'"{key}":{json.dumps(draw(VALUES))}}}'
    if draw(st.booleans()):  # nested deep, somewhere
        depth = draw(st.integers(55, 75))
        text = text[:-1] + ("," if len(doc) else "") + '"x":' + "[" * depth + "]" * depth + "}"
    if draw(st.booleans()):
        text = (
            draw(st.sampled_from(["", " ", "\ufeff", "["]))
            + text
            + draw(st.sampled_from(["", " \n", "x", "}"]))
        )
    return text.encode("utf-8", "surrogatepass")


@given(bodies())
def test_a_whole_body_gives_the_facts_the_scanner_finds(body: bytes) -> None:
    assert facts(RequestScanner.whole(body)) == facts(scanned(body))


@given(st.binary(max_size=200))
def test_any_whole_bytes_give_the_facts_the_scanner_finds(raw: bytes) -> None:
    assert facts(RequestScanner.whole(raw)) == facts(scanned(raw))


def test_a_plain_small_body_is_parsed_at_once() -> None:
    body = b'{"model":"m","stream":true,"stream_options":{"include_usage":true},' + (
        b'"metadata":{"request_id":"r"},"tools":[{"function":{"name":"f"}},{"function":{}}]}'
    )
    scanner = RequestScanner()
    assert scanner._parse(body)
    assert facts(scanner) == ("m", "r", True, True, ["f"], False, False)
    assert not RequestScanner()._parse(b'{"model":"m","model":"n"}')  # the scanner's turn
    assert not RequestScanner()._parse(b'{"model":"' + b"m" * 300 + b'"}')


DEEP_TEXT = st.text(alphabet='ab[]{}"\\,: \n', max_size=12)
NESTED: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.integers() | DEEP_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(DEEP_TEXT, inner, max_size=3),
    max_leaves=40,
)


@given(st.lists(NESTED, min_size=1, max_size=6), st.integers(1, 60), st.data())
def test_a_long_skipped_container_of_any_nesting_is_followed_to_its_end(
    values: list[Any], repeat: int, data: st.DataObject
) -> None:
    """Kilobytes of values of any nesting, with strings full of brackets, quotes and escapes,
    under a key no fact is in: the windows and matches that follow its depth in C (Rule 1)
    find its end where json does, however the body is cut, and the facts after it."""
    junk = json.dumps(values * repeat)
    body = (
        b'{"model":"m","x":' + junk.encode() + b',"stream":true,'
        b'"tools":[{"function":{"name":"f"}}],"y":' + junk.encode() + b"}"
    )
    for pieces in (
        [body],
        data.draw(splits(body)),
        [body[i : i + 4099] for i in range(0, len(body), 4099)],
    ):
        scanner = RequestScanner()
        for piece in pieces:
            scanner.feed(piece)
        assert facts(scanner) == ("m", None, True, False, ["f"], False, False)
        assert scanner._done


def test_containers_the_scanner_descends_have_a_bound_on_their_members() -> None:
    """`MAX_MEMBERS`: past it the scan stops (Rule 3), the facts before it stay, and a whole
    body with as many commas is scanned, not parsed, so that both ways agree."""
    many = b'{"model":"m",' + b'"a":{},' * MAX_MEMBERS + b'"stream":true}'
    scanner = RequestScanner()
    scanner.feed(many)
    assert (scanner.model, scanner.stream, scanner.broken) == ("m", None, True)
    assert facts(RequestScanner.whole(many)) == facts(scanner)
    tools = b'{"tools":[' + b"{}," * MAX_MEMBERS + b'{"function":{"name":"f"}}],"model":"m"}'
    assert scanned(tools).broken
    fits = b'{"model":"m",' + b'"a":{},' * (MAX_MEMBERS - 2) + b'"stream":true}'
    assert facts(scanned(fits)) == ("m", None, True, False, [], False, False)
    plain = b'{"model":"m",' + b'"a":1,"b":"x",' * MAX_MEMBERS + b'"stream":true}'
    assert facts(scanned(plain)) == facts(scanned(fits))  # (read past in C: not counted)
