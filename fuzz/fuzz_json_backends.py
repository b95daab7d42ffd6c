"""Atheris target: the same bytes through the OpenAI and LLM-Stream decoders with orjson and with
the standard library must give the same events, errors and results (svir_proto._json's one
policy). ``python fuzz/fuzz_json_backends.py CORPUS fuzz/corpus/json_backends``.

The input is a payload: it is framed as one SSE event for each decoder, strict and replace.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import differential, fuzz

from svir_proto.llmstream import StreamDecoder
from svir_proto.openai import ChatStreamDecoder

START = (
    b'event: stream.start\ndata: {"v":"1.0","seq":0,"type":"stream.start","model":"m",'
    b'"created":1}\n\n'
)


def test_one_input(data: bytes) -> None:
    payload = data.replace(b"\n", b" ").replace(b"\r", b" ")  # one data line
    for errors in ("strict", "replace"):
        differential(
            lambda: ChatStreamDecoder(errors=errors),  # type: ignore[arg-type]  # noqa: B023
            b"data: " + payload + b"\n\ndata: [DONE]\n\n",
        )
        differential(
            lambda: StreamDecoder(errors=errors),  # type: ignore[arg-type]  # noqa: B023
            START + b"event: content.delta\ndata: " + payload + b"\n\n",
        )


if __name__ == "__main__":
    fuzz(test_one_input)
