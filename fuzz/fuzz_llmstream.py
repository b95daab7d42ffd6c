"""Atheris target for the LLM-Stream `LLMStreamDecoder`:
``python fuzz/fuzz_llmstream.py CORPUS fuzz/corpus/llmstream``. Seeds: the draft's examples."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import check, fuzz

from svir_proto.llmstream import LLMStreamDecoder


def make() -> LLMStreamDecoder:
    return LLMStreamDecoder(max_event_size=4096, max_result_size=4096)


def test_one_input(data: bytes) -> None:
    check(make, data)


if __name__ == "__main__":
    fuzz(test_one_input)
