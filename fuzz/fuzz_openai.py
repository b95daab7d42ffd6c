"""Atheris target for `ChatStreamDecoder`: ``python fuzz/fuzz_openai.py CORPUS fuzz/corpus/openai``.

Each input goes to `ChatStreamWatcher` (the gateway's view of a relayed stream) as well, under the
same invariant.

Seeds: the conformance fixtures (tests/conformance/openai), one file each.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import check, fuzz

from svir_proto.openai import ChatStreamDecoder
from svir_proto.openai.watch import ChatStreamWatcher


def make() -> ChatStreamDecoder:
    return ChatStreamDecoder(max_event_size=4096, max_tool_calls=8, max_result_size=4096)


def watch() -> ChatStreamWatcher:
    return ChatStreamWatcher(
        max_event_size=4096, max_tool_calls=8, max_result_size=4096, keep_text=False
    )


def test_one_input(data: bytes) -> None:
    check(make, data)
    check(watch, data)


if __name__ == "__main__":
    fuzz(test_one_input)
