"""Atheris target for `MessagesRequest.parse` (the server side of a Messages API request):
``python fuzz/fuzz_anthropic_request.py CORPUS fuzz/corpus/anthropic_request``.

Invariant: any bytes either parse, or raise `RequestError` (a `PeerProtocolError` naming a
JSON path); a request that parses encodes to a body of its exact length that parses back to an
equal request, and goes through the hub and back unchanged.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import fuzz

from svir_proto.anthropic import MessagesRequest, from_hub, to_hub
from svir_proto.llmstream import RequestError


def test_one_input(data: bytes) -> None:
    try:
        request = MessagesRequest.parse(data)
    except RequestError as exc:
        if not exc.path.startswith("$"):
            raise AssertionError(f"a request error without a JSON path: {exc}") from exc
        return
    body = request.body(piece_size=64)
    raw = body.read()
    assert len(raw) == body.content_length
    assert MessagesRequest.parse(raw) == request
    assert from_hub(to_hub(request)) == request


if __name__ == "__main__":
    fuzz(test_one_input)
