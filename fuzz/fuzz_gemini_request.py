"""Atheris target for `GeminiRequest.parse` (the server side) and the hub:
``python fuzz/fuzz_gemini_request.py CORPUS fuzz/corpus/gemini_request``.

Invariants: any bytes either parse, or raise `RequestError` naming a JSON path; a request that
parses encodes to a body of its exact length that parses back to an equal request; and it goes
to the neutral request and back (`svir_proto.gemini.hub`) whole (inline data's base64 in its
standard form).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import attrs
from _harness import fuzz

from svir_proto.gemini import GeminiContent, GeminiInlineData, GeminiRequest
from svir_proto.gemini.hub import from_hub, to_hub
from svir_proto.llmstream import RequestError


def test_one_input(data: bytes) -> None:
    try:
        request = GeminiRequest.parse(data, model="gemini-2.5-flash")
    except RequestError as exc:
        if not exc.path.startswith("$"):
            raise AssertionError(f"a request error without a JSON path: {exc}") from exc
        return
    body = request.body(piece_size=64)
    raw = body.read()
    assert len(raw) == body.content_length
    assert GeminiRequest.parse(raw, model="gemini-2.5-flash") == request
    try:
        hub = to_hub(request)
    except ValueError as exc:  # the one thing to_hub refuses (its docstring)
        if "systemInstruction" not in str(exc):
            raise
        return
    again = from_hub(hub)
    assert [_data(c) for c in again.contents] == [_data(c) for c in request.contents]
    assert attrs.evolve(again, contents=request.contents) == request


def _data(content: GeminiContent) -> list[object]:
    """A turn with its inline data as bytes (the hub carries base64 in its standard form)."""
    return [p.decoded() if isinstance(p, GeminiInlineData) else p for p in content.parts]


if __name__ == "__main__":
    fuzz(test_one_input)
