"""Atheris target for `ResponsesRequest.parse` and the hub adapters (the server side of a
Responses request): ``python fuzz/fuzz_responsesrequest.py CORPUS fuzz/corpus/responsesrequest``.

Invariant: any bytes either parse, or raise `RequestError` (a `PeerProtocolError` naming a
JSON path); a request that parses encodes to a body of its exact length that parses back to an
equal request, and goes to the hub and back unchanged.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import fuzz

from svir_proto.llmstream import RequestError
from svir_proto.responses import ResponsesRequest
from svir_proto.responses.hub import from_hub, to_hub


def test_one_input(data: bytes) -> None:
    try:
        request = ResponsesRequest.parse(data)
    except RequestError as exc:
        if not exc.path.startswith("$"):
            raise AssertionError(f"a request error without a JSON path: {exc}") from exc
        return
    body = request.body(piece_size=64)
    raw = body.read()
    assert len(raw) == body.content_length
    assert ResponsesRequest.parse(raw) == request
    try:
        neutral = to_hub(request)
    except ValueError:  # no input and no instructions: no neutral form
        assert not request.input
        assert request.instructions is None
        return
    assert from_hub(neutral) == request


if __name__ == "__main__":
    fuzz(test_one_input)
