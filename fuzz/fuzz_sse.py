"""Atheris target for `SSEDecoder`: ``python fuzz/fuzz_sse.py fuzz/corpus/sse`` (needs atheris)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import check, fuzz

from svir_proto.sse import SSEDecoder


def make() -> SSEDecoder:
    return SSEDecoder(max_event_size=4096)


def test_one_input(data: bytes) -> None:
    check(make, data)


if __name__ == "__main__":
    fuzz(test_one_input)
