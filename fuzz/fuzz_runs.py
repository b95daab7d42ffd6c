"""Atheris target for `ChatStreamRuns`, the decoder of a gateway that translates an OpenAI
upstream to LLM-Stream (``svir_proto.openai._runs``): ``python fuzz/fuzz_runs.py CORPUS
fuzz/corpus/runs``.

The input's first byte picks the options (``think_tags``, the UTF-8 policy, the JSON backend);
the rest is the body. Three invariants: the harness's (whole and cut give the same outcome, a
`TextRun` counting as the deltas it stands for); the body cut gives with `ChatStreamRuns` what
it gives whole with `ChatStreamDecoder` (``keep_text=False``; the runs expanded: its Rule 3);
and the LLM-Stream bytes `OpenAIToLLMStream` writes from the one are the bytes it writes from
the other.

Seeds: streams shaped like the servers' (the envelope repeated around plain content) with text
each JSON backend writes as it came (escapes, characters past U+FFFF) and text it does not
(``\\u00e9``, ``\\/``, a surrogate's escape, invalid UTF-8), ``<think>`` markers, empty deltas,
tool calls, usage, an error chunk, ``[DONE]`` in odd places, a chunk that is not JSON.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import check, cuts, expand, fuzz, outcome

from svir_proto import TextRun, _json
from svir_proto.openai import ChatStreamDecoder
from svir_proto.openai._runs import ChatStreamRuns
from svir_proto.translate import OpenAIToLLMStream

LIMITS: dict[str, Any] = {"max_event_size": 4096, "max_tool_calls": 8, "max_result_size": 4096}


def translated(decoder: Any, pieces: list[bytes]) -> tuple[bytes, object]:
    """The LLM-Stream bytes for what ``decoder`` makes of ``pieces``, and its error (offset
    and limit)."""
    out = OpenAIToLLMStream(model="m", request_id="r", created=1)
    events, error, _ = outcome(decoder, pieces)
    data = b"".join(out.encode_run(e) if type(e) is TextRun else out.feed(e) for e in events)
    return data, error


def test_one_input(data: bytes) -> None:
    if not data:
        return
    choice, body = data[0], data[1:]
    options: dict[str, Any] = {
        **LIMITS,
        "think_tags": not choice & 1,
        "errors": "replace" if choice & 2 else "strict",
    }
    before = _json.BACKEND
    if choice & 4 and _json.orjson is not None:
        _json.use("json" if before == "orjson" else "orjson")
    try:
        check(lambda: ChatStreamRuns(**options), body)
        whole = [body] if body else []
        plain = outcome(ChatStreamDecoder(keep_text=False, **options), whole)
        expected = translated(ChatStreamDecoder(keep_text=False, **options), whole)
        for pieces in (whole, cuts(body)):
            runs = outcome(ChatStreamRuns(**options), pieces)
            if (expand(runs[0]), runs[1:]) != (plain[0], plain[1:]):
                raise AssertionError(f"runs and deltas differ for {body!r}:\n{runs}\n{plain}")
            got = translated(ChatStreamRuns(**options), pieces)
            if got != expected:
                raise AssertionError(f"LLM-Stream bytes differ for {body!r}:\n{got}\n{expected}")
    finally:
        _json.use(before)


if __name__ == "__main__":
    fuzz(test_one_input)
