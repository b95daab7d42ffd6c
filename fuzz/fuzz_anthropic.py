"""Atheris target for the Messages API `MessagesStreamDecoder`:
``python fuzz/fuzz_anthropic.py CORPUS fuzz/corpus/anthropic``. Seeds: the Messages fixtures
(llama.cpp's recordings and the API reference's cases)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import check, fuzz

from svir_proto.anthropic import MessagesStreamDecoder


def make() -> MessagesStreamDecoder:
    return MessagesStreamDecoder(
        declared_tools=["get_weather"], max_event_size=4096, max_result_size=4096, max_tool_calls=8
    )


def test_one_input(data: bytes) -> None:
    check(make, data)


if __name__ == "__main__":
    fuzz(test_one_input)
