"""The stream shapes servers send, generated from a seed, for `benchmarks.openai`.

Each shape is a whole response body, as the server wrote it:

- ``chat``: OpenAI's chunk keys on every chunk (``id``, ``object``, ``created``, ``model``,
  ``system_fingerprint``, ``logprobs: null``, ``usage: null``, ``service_tier``), one short
  token of text per chunk, then the finish, the usage chunk and ``[DONE]``.
- ``tools``: four tool calls streamed at once, their fragments interleaved; each name arrives
  in two pieces (vLLM and llama.cpp split names), and 5 % of the chunks carry fragments of two
  calls.
- ``azure``: Azure OpenAI's default mode (wire reference 3.7): the prompt-filter chunk, then
  ``content_filter_results`` with four categories on every chunk, ``obfuscation`` padding.
- ``crlf``: the chat shape with CRLF line ends throughout.

And, not in the default run, five shapes an independent benchmark found over the target (the
README says where each stands):

- ``long``: deltas of 200..2000 characters, a tenth of them code with escapes (a provider that
  batches tokens, an answer of code).
- ``vllm``: vLLM with ``continuous_usage_stats``: a usage object on every chunk (so no chunk
  repeats the last one's envelope), ``reasoning_content`` deltas, then content.
- ``logprobs``: ``logprobs: true, top_logprobs: 5``: every token with its five alternatives.
- ``pings``: the chat shape with a keep-alive comment after every event.
- ``bare``: the chat shape with ``data:`` and no space (servers on axum write it so: TGI).

The pieces a decoder is fed: TCP-segment sized (1460 B), random sizes 1..4096 B, and one event
per read (a live stream: the server flushes each token).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable

from benchmarks.streams import pieces

TOKENS = (
    " the", " model", " streams", " one", " token", " at", " a", " time", ",", " and", " each",
    " chunk", " is", " JSON", ".", " Gr", "üße", " caf", "é", " 東京", "の", " 🙂", " ≈",
    " 3", ".14", "\n", " Wien", " über", " data", " flow",
)  # fmt: skip


def _dump(obj: object) -> bytes:
    return b"data: " + json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"


def _head(rng: random.Random) -> dict[str, object]:
    return {
        "id": f"chatcmpl-{rng.getrandbits(96):024x}",
        "object": "chat.completion.chunk",
        "created": 1764460800 + rng.randrange(10_000),
        "model": "gpt-4.1-mini-2025-04-14",
        "service_tier": "default",
        "system_fingerprint": "fp_6f2eabb9a5",
    }


def _chunk(head: dict[str, object], delta: dict[str, object], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    return _dump({**head, "choices": [choice], "usage": None})


def _tail(head: dict[str, object], completion_tokens: int) -> list[bytes]:
    usage = {
        "prompt_tokens": 31,
        "completion_tokens": completion_tokens,
        "total_tokens": 31 + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }
    return [_dump({**head, "choices": [], "usage": usage}), b"data: [DONE]\n\n"]


def chat(chunks: int, seed: int = 7) -> bytes:
    rng = random.Random(seed)
    head = _head(rng)
    out = [_chunk(head, {"role": "assistant", "content": "", "refusal": None})]
    out += [_chunk(head, {"content": rng.choice(TOKENS)}) for _ in range(chunks)]
    out.append(_chunk(head, {}, "stop"))
    return b"".join(out + _tail(head, chunks))


def tools(chunks: int, seed: int = 7, calls: int = 4) -> bytes:
    rng = random.Random(seed)
    head = _head(rng)
    names = ["get_weather", "search_documents", "convert_currency", "lookup_flight"]
    out = [_chunk(head, {"role": "assistant", "content": None})]
    opened: list[int] = []  # calls whose head (id, first half of the name) was sent
    named: set[int] = set()  # calls whose name is whole

    def fragment(i: int) -> dict[str, object]:
        name = names[i % len(names)]
        if i not in opened:
            opened.append(i)
            half = name[: len(name) // 2]
            return {
                "index": i,
                "id": f"call_{rng.getrandbits(64):016x}",
                "type": "function",
                "function": {"name": half, "arguments": ""},
            }
        if i not in named:
            named.add(i)
            return {"index": i, "function": {"name": name[len(name) // 2 :]}}
        pieces = ['{"', "city", '": "', "Vienna", '", "', "units", '": "c', "elsius", "}"]
        piece = rng.choice(pieces)
        return {"index": i, "function": {"arguments": piece}}

    for _ in range(chunks):
        ready = range(min(len(opened) + 1, calls))  # calls open in order, then interleave
        two = rng.random() < 0.05 and len(ready) > 1
        picked = rng.sample(ready, 2) if two else [rng.choice(ready)]
        out.append(_chunk(head, {"tool_calls": [fragment(i) for i in picked]}))
    out.append(_chunk(head, {}, "tool_calls"))
    return b"".join(out + _tail(head, chunks))


_SAFE = {"filtered": False, "severity": "safe"}
_CATEGORIES = dict.fromkeys(("hate", "self_harm", "sexual", "violence"), _SAFE)


def azure(chunks: int, seed: int = 7) -> bytes:
    rng = random.Random(seed)
    prompt_results = {**_CATEGORIES, "jailbreak": {"detected": False, "filtered": False}}
    out = [
        _dump(
            {
                "choices": [],
                "created": 0,
                "id": "",
                "model": "",
                "object": "",
                "prompt_filter_results": [
                    {"prompt_index": 0, "content_filter_results": prompt_results}
                ],
            }
        )
    ]
    head = {**_head(rng), "system_fingerprint": None, "model": "gpt-4o-2024-11-20"}

    def chunk(delta: dict[str, object], results: object, finish: str | None = None) -> bytes:
        choice = {
            "content_filter_results": results,
            "delta": delta,
            "finish_reason": finish,
            "index": 0,
            "logprobs": None,
        }
        padding = "".join(rng.choice("abcdefghijkXYZ0123") for _ in range(rng.randint(2, 9)))
        return _dump({**head, "usage": None, "obfuscation": padding, "choices": [choice]})

    out.append(chunk({"content": "", "refusal": None, "role": "assistant"}, {}))
    out += [chunk({"content": rng.choice(TOKENS)}, _CATEGORIES) for _ in range(chunks)]
    out.append(chunk({}, {}, "stop"))
    return b"".join(out + _tail(head, chunks))


def crlf(chunks: int, seed: int = 7) -> bytes:
    return chat(chunks, seed).replace(b"\n\n", b"\r\n\r\n")


CODE = ('\n    return "a\\tb"', " `code`", " if a < b:\n", " C:\\path\\file", '\t{"k": 1}')


def long_delta(rng: random.Random) -> str:
    """A delta of 200..2000 characters, a tenth of its words code with escapes: the ``long``
    shape's, which the other dialects' benchmarks use too."""
    size, words = rng.randint(200, 2000), []
    while size > 0:
        words.append(rng.choice(CODE) if rng.random() < 0.1 else rng.choice(TOKENS))
        size -= len(words[-1])
    return "".join(words)


def long(chunks: int, seed: int = 7) -> bytes:
    rng = random.Random(seed)
    head = _head(rng)
    out = [_chunk(head, {"role": "assistant", "content": "", "refusal": None})]
    for _ in range(chunks):
        out.append(_chunk(head, {"content": long_delta(rng)}))
    out.append(_chunk(head, {}, "stop"))
    return b"".join(out + _tail(head, chunks))


def vllm(chunks: int, seed: int = 7) -> bytes:
    rng = random.Random(seed)
    head = {
        "id": f"chatcmpl-{rng.getrandbits(128):032x}",
        "object": "chat.completion.chunk",
        "created": 1764460800,
        "model": "Qwen/Qwen3-8B",
    }

    def chunk(i: int, delta: dict[str, object], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        usage = {"prompt_tokens": 31, "total_tokens": 31 + i, "completion_tokens": i}
        return _dump({**head, "choices": [choice], "usage": usage})

    out = [chunk(0, {"role": "assistant", "content": ""})]
    for i in range(1, chunks + 1):
        key = "reasoning_content" if i <= chunks // 3 else "content"
        out.append(chunk(i, {key: rng.choice(TOKENS)}))
    out.append(chunk(chunks, {}, "stop"))
    return b"".join(out) + b"data: [DONE]\n\n"


def logprobs(chunks: int, seed: int = 7) -> bytes:
    rng = random.Random(seed)
    head = _head(rng)

    def scored(token: str) -> dict[str, object]:
        return {"token": token, "logprob": -rng.random() * 5, "bytes": list(token.encode())}

    out = [_chunk(head, {"role": "assistant", "content": "", "refusal": None})]
    for _ in range(chunks):
        token = rng.choice(TOKENS)
        top = [scored(token), *(scored(rng.choice(TOKENS)) for _ in range(4))]
        content = [{**scored(token), "top_logprobs": top}]
        choice = {
            "index": 0,
            "delta": {"content": token},
            "logprobs": {"content": content, "refusal": None},
            "finish_reason": None,
        }
        out.append(_dump({**head, "choices": [choice], "usage": None}))
    out.append(_chunk(head, {}, "stop"))
    return b"".join(out + _tail(head, chunks))


def pings(chunks: int, seed: int = 7) -> bytes:
    return chat(chunks, seed).replace(b"\n\n", b"\n\n: keep-alive\n\n")


def bare(chunks: int, seed: int = 7) -> bytes:
    return chat(chunks, seed).replace(b"data: ", b"data:")


SHAPES: dict[str, tuple[str, Callable[[int], bytes], float]] = {
    # name: (what it is, generator, chunks relative to --chunks)
    "chat": ("chat, OpenAI's chunk keys", chat, 1.0),
    "tools": ("tool calls: 4 interleaved, names split, 5 % two fragments", tools, 0.25),
    "azure": ("Azure: prompt filter, then 4 filter categories on every chunk", azure, 1.0),
    "crlf": ("CRLF line ends throughout", crlf, 1.0),
    "long": ("deltas of 200..2000 characters, code with escapes", long, 0.1),
    "vllm": ("vLLM: usage on every chunk, reasoning_content then content", vllm, 1.0),
    "logprobs": ("top 5 logprobs of every token", logprobs, 0.25),
    "pings": ("a keep-alive comment after every event", pings, 1.0),
    "bare": ("data: with no space after the colon (axum's servers: TGI)", bare, 1.0),
}
DEFAULT = ("chat", "tools", "azure", "crlf")
"""The shapes `benchmarks.openai` runs unless told (the others: ``--shape``)."""


def per_event(body: bytes) -> list[bytes]:
    """One event per piece, whatever its line ends."""
    sep = b"\r\n\r\n" if b"\r\n\r\n" in body[:4096] else b"\n\n"
    return [block + sep for block in body.split(sep) if block]


PIECES: dict[str, Callable[[bytes], list[bytes]]] = {
    "1460 B": lambda body: pieces(body, 1460),
    "random 1..4096 B": lambda body: pieces(body, None),
    "one event per read": per_event,
}
