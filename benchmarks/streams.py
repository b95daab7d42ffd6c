"""Seeded, realistic OpenAI Chat Completions streams for the benchmarks.

A stream looks like what vLLM or OpenAI send: a role chunk, then one chunk per token of text
(words from several scripts, so the UTF-8 is multi-byte), a finish chunk, a usage chunk and
``[DONE]``. Optionally tool calls, with arguments in pieces.
"""

from __future__ import annotations

import json
import random

WORDS = (
    "the model streams tokens one chunk at a time , and each chunk is a JSON object . "
    "Grüße aus Wien — café naïve façade über Straße ; 東京 の 天気 は 晴れ です 。 "
    "数据 流 解码器 速度 🙂 🚀 ✓ Привет мир λόγος ∑ ≈ 3.14159"
).split(" ")


def openai_stream(chunks: int, *, seed: int = 1234, tool_calls: int = 0) -> bytes:
    """A whole response body of ``chunks`` content chunks (plus the framing chunks)."""
    rng = random.Random(seed)
    head = {
        "id": "chatcmpl-9vQ2bench",
        "object": "chat.completion.chunk",
        "created": 1764460800,
        "model": "gpt-4o-mini-2024-07-18",
        "system_fingerprint": "fp_44709d6fcb",
    }

    def chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
        obj = {
            **head,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        return (
            b"data: "
            + json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()
            + b"\n\n"
        )

    out = [chunk({"role": "assistant", "content": "", "refusal": None})]
    for _ in range(chunks):
        word = rng.choice(WORDS)
        out.append(chunk({"content": (" " if rng.random() < 0.8 else "") + word}))
    for i in range(tool_calls):
        out.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": f"call_{i}",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": ""},
                        }
                    ]
                }
            )
        )
        for piece in ['{"', "city", '":"', "Vienna", '","', "units", '":"', "celsius", '"}']:
            out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    out.append(chunk({}, "tool_calls" if tool_calls else "stop"))
    usage = {
        **head,
        "choices": [],
        "usage": {"prompt_tokens": 42, "completion_tokens": chunks, "total_tokens": 42 + chunks},
    }
    out.append(b"data: " + json.dumps(usage, separators=(",", ":")).encode() + b"\n\n")
    out.append(b"data: [DONE]\n\n")
    return b"".join(out)


def pieces(body: bytes, size: int | None, *, seed: int = 99) -> list[bytes]:
    """Cut a body in pieces of ``size`` bytes, or of random sizes 1..4096 when ``size`` is None."""
    if size is not None:
        return [body[i : i + size] for i in range(0, len(body), size)]
    rng = random.Random(seed)
    out = []
    i = 0
    while i < len(body):
        n = rng.randint(1, 4096)
        out.append(body[i : i + n])
        i += n
    return out


def scenarios(body: bytes) -> list[tuple[str, list[bytes]]]:
    """The ways a body reaches a decoder, one per benchmark table."""
    live = [block + b"\n\n" for block in body.split(b"\n\n") if block]
    return [
        ("one event per piece (a live stream: the server flushes each token)", live),
        ("1400 B pieces (TCP segments)", pieces(body, 1400)),
        ("64 KiB pieces (socket reads of a fast stream)", pieces(body, 65536)),
        ("random 1..4096 B", pieces(body, None)),
    ]
