"""Hypothesis: the request scanner against json.loads, on request bodies split anywhere."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from svir_proto._jsonscan import MAX_VALUE, RequestScanner
from tests.helpers import splits

TEXT = st.text(max_size=30)
JUNK: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=10,
)


@st.composite
def requests(draw: st.DrawFn) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    keys = draw(st.permutations(["model", "messages", "stream", "stream_options", "tools", "x"]))
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
                {"type": "function", "function": {"name": draw(TEXT), "parameters": draw(JUNK)}}
                for _ in range(draw(st.integers(0, 3)))
            ]
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


@given(st.binary(max_size=200), st.data())
def test_any_bytes_never_raise(raw: bytes, data: st.DataObject) -> None:
    scanner = RequestScanner()
    for piece in data.draw(splits(raw)):
        scanner.feed(piece)


def test_nesting_beyond_the_bound_stops_the_scan_and_odd_names_are_skipped() -> None:
    deep = RequestScanner()
    deep.feed(b'{"model":"m",' + b'"x":' + b"[" * 100)
    assert deep.broken
    assert deep.model == "m"
    odd = RequestScanner()
    odd.feed(b'{"tools":[{"function":{"name":5}},{"function":{"name":"ok"}}],"stream":true}')
    assert odd.tools == ["ok"]
    assert odd.stream is True
