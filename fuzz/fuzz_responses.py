"""Atheris target for the OpenAI Responses `ResponsesStreamDecoder`:
``python fuzz/fuzz_responses.py CORPUS fuzz/corpus/responses``. Seeds: the conformance fixtures
(llama.cpp's recordings and the API reference's cases)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import check, fuzz

from svir_proto.responses import ResponsesStreamDecoder


def make() -> ResponsesStreamDecoder:
    return ResponsesStreamDecoder(
        declared_tools=["get_weather"],
        max_event_size=4096,
        max_result_size=8192,
        max_tool_calls=8,
        max_output_items=16,
    )


def test_one_input(data: bytes) -> None:
    check(make, data)


if __name__ == "__main__":
    fuzz(test_one_input)
