"""Atheris target: the same bytes through the OpenAI and LLM-Stream decoders with orjson and with
the standard library must give the same events, errors and results (svir_proto._json's one
policy). ``python fuzz/fuzz_json_backends.py CORPUS fuzz/corpus/json_backends``.

The input is a payload, framed as one SSE event for the decoder and UTF-8 policy that its last
byte picks.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import differential, fuzz

from svir_proto.llmstream import LLMStreamDecoder
from svir_proto.openai import ChatStreamDecoder

START = (
    b'event: stream.start\ndata: {"v":"1.0","seq":0,"type":"stream.start","model":"m",'
    b'"created":1}\n\n'
)


def test_one_input(data: bytes) -> None:
    """The input's last byte picks the decoder and the UTF-8 policy (so that each input costs
    two decodes, one per backend); the rest is the payload."""
    if not data:
        return
    choice = data[-1]
    payload = data[:-1].replace(b"\n", b" ").replace(b"\r", b" ")  # one data line
    errors = "replace" if choice & 1 else "strict"
    if choice & 2:
        differential(
            lambda: LLMStreamDecoder(errors=errors),  # type: ignore[arg-type]
            START + b"event: content.delta\ndata: " + payload + b"\n\n",
        )
    else:
        differential(
            lambda: ChatStreamDecoder(errors=errors),  # type: ignore[arg-type]
            b"data: " + payload + b"\n\ndata: [DONE]\n\n",
        )


if __name__ == "__main__":
    fuzz(test_one_input)
