"""The Messages API stream: bytes to typed events and a final result, on the shapes Anthropic's
servers send, side by side with the floor.

    python -m benchmarks.anthropic [--chunks 20000] [--repeat 9] [--shape text,tools,...]

The shapes (generated from a seed, with Anthropic's real keys: ``event:`` lines, ``type`` in
every payload, ``index``, ``delta.type``):

- ``text``: ``message_start`` with usage, one text block of one short token per
  ``content_block_delta``, a ``ping`` now and then, ``message_delta`` with cumulative usage
  (input and cache counts too, as since 2025), ``message_stop``.
- ``tools``: a text block, then four ``tool_use`` blocks one after the other, each with long
  arguments in small ``input_json_delta`` pieces (Anthropic never interleaves blocks).
- ``thinking``: extended thinking: a long ``thinking`` block of ``thinking_delta`` pieces and its
  ``signature_delta``, a ``redacted_thinking`` block, then the text.
- ``long``: the text block in deltas of 200..2000 characters, a tenth of their words code
  with escapes (the OpenAI benchmark's ``long``).
- ``llamacpp``: what llama.cpp's ``/v1/messages`` writes: its ``message_start`` (an id and
  usage of its own), a text block of one token per delta, then a ``tool_use`` block (no
  ``input``) whose arguments come a token at a time, quotes escaped (``\"``, ``\":``),
  ``message_delta`` with ``output_tokens`` only.

Each fed in 1460 B pieces, random pieces of 1..4096 B, and one event per read. In one run,
taking turns in every round: svir-proto's `MessagesStreamDecoder` (every event built, then
``result``) with orjson and with the standard library's json; the floor, ``bytes.split`` on the
blank lines and ``json.loads`` of each event's data, nothing kept; and the floor with orjson.
Each cell is a time over the floor's; target: at most 0.75x with either parser (issue 19).
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable

from benchmarks._timing import interleaved, table
from benchmarks.shapes import PIECES, TOKENS, long_delta
from svir_proto import _json
from svir_proto.anthropic import MessagesStreamDecoder
from svir_proto.events import Completion

TARGETS = {"svir-proto (orjson)": 0.75, "svir-proto (json)": 0.75}
FLOOR = "floor: split + json.loads"


def _event(obj: dict[str, object]) -> bytes:
    data = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return f"event: {obj['type']}\ndata: {data}\n\n".encode()


def _start(rng: random.Random) -> bytes:
    message = {
        "id": f"msg_{rng.getrandbits(96):024x}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 472,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 2048,
            "output_tokens": 2,
            "service_tier": "standard",
        },
    }
    return _event({"type": "message_start", "message": message})


def _block(index: int, block: dict[str, object]) -> bytes:
    return _event({"type": "content_block_start", "index": index, "content_block": block})


def _delta(index: int, delta: dict[str, object]) -> bytes:
    return _event({"type": "content_block_delta", "index": index, "delta": delta})


def _stop(index: int) -> bytes:
    return _event({"type": "content_block_stop", "index": index})


def _end(reason: str, output: int) -> list[bytes]:
    usage = {
        "input_tokens": 472,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 2048,
        "output_tokens": output,
    }
    return [
        _event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": reason, "stop_sequence": None},
                "usage": usage,
            }
        ),
        _event({"type": "message_stop"}),
    ]


def text(chunks: int, seed: int = 7) -> bytes:
    rng = random.Random(seed)
    out = [_start(rng), _block(0, {"type": "text", "text": ""})]
    for i in range(chunks):
        out.append(_delta(0, {"type": "text_delta", "text": rng.choice(TOKENS)}))
        if i % 500 == 499:
            out.append(_event({"type": "ping"}))
    return b"".join([*out, _stop(0), *_end("end_turn", chunks)])


def long(chunks: int, seed: int = 7) -> bytes:
    """The text shape with a delta of 200..2000 characters of text and code each."""
    rng = random.Random(seed)
    out = [_start(rng), _block(0, {"type": "text", "text": ""})]
    for _ in range(chunks):
        out.append(_delta(0, {"type": "text_delta", "text": long_delta(rng)}))
    return b"".join([*out, _stop(0), *_end("end_turn", chunks)])


def tools(chunks: int, seed: int = 7) -> bytes:
    rng = random.Random(seed)
    out = [_start(rng), _block(0, {"type": "text", "text": ""})]
    out.append(_delta(0, {"type": "text_delta", "text": "I'll look these up."}))
    out.append(_stop(0))
    per_call = max(chunks // 4, 1)
    for n in range(4):
        index = n + 1
        out.append(
            _block(
                index,
                {
                    "type": "tool_use",
                    "id": f"toolu_{rng.getrandbits(64):016x}",
                    "name": f"lookup_{n}",
                    "input": {},
                },
            )
        )
        out.append(_delta(index, {"type": "input_json_delta", "partial_json": ""}))
        out.append(_delta(index, {"type": "input_json_delta", "partial_json": '{"query": "'}))
        for _ in range(per_call):
            out.append(
                _delta(
                    index,
                    {
                        "type": "input_json_delta",
                        "partial_json": rng.choice(("ab", "c d", "ef", "gh ", "ijk")),
                    },
                )
            )
        out.append(_delta(index, {"type": "input_json_delta", "partial_json": '"}'}))
        out.append(_stop(index))
    return b"".join([*out, *_end("tool_use", chunks)])


def thinking(chunks: int, seed: int = 7) -> bytes:
    rng = random.Random(seed)
    out = [_start(rng), _block(0, {"type": "thinking", "thinking": "", "signature": ""})]
    for _ in range(chunks * 3 // 4):
        out.append(_delta(0, {"type": "thinking_delta", "thinking": rng.choice(TOKENS)}))
    signature = "".join(rng.choice("ABCDEFabcdef0123456789+/") for _ in range(400))
    out.append(_delta(0, {"type": "signature_delta", "signature": signature}))
    out.append(_stop(0))
    out.append(_block(1, {"type": "redacted_thinking", "data": signature}))
    out.append(_stop(1))
    out.append(_block(2, {"type": "text", "text": ""}))
    for _ in range(chunks // 4):
        out.append(_delta(2, {"type": "text_delta", "text": rng.choice(TOKENS)}))
    return b"".join([*out, _stop(2), *_end("end_turn", chunks)])


def llamacpp(chunks: int, seed: int = 7) -> bytes:
    rng = random.Random(seed)
    message = {
        "id": f"chatcmpl-{rng.getrandbits(128):032x}",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "smollm2-135m",
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"cache_read_input_tokens": 0, "input_tokens": 18, "output_tokens": 0},
    }
    out = [_event({"type": "message_start", "message": message})]
    out.append(_block(0, {"type": "text", "text": ""}))
    for _ in range(chunks // 2):
        out.append(_delta(0, {"type": "text_delta", "text": rng.choice(TOKENS)}))
    out.append(_stop(0))
    call = {"type": "tool_use", "id": f"{rng.getrandbits(128):032x}", "name": "get_weather"}
    out.append(_block(1, call))
    opening = ("{", '"', "query", '":', ' "')  # then the string's tokens, a quote escaped
    words = (" the", " model", '\\"', " caf", "é", " 東京", " 3", ".14", ",", " Wien")
    for i in range(chunks // 2):
        piece = opening[i] if i < len(opening) else rng.choice(words)
        out.append(_delta(1, {"type": "input_json_delta", "partial_json": piece}))
    out.append(_delta(1, {"type": "input_json_delta", "partial_json": '"}'}))
    out.append(_stop(1))
    end = {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None}}
    end["usage"] = {"output_tokens": chunks}
    return b"".join([*out, _event(end), _event({"type": "message_stop"})])


SHAPES: dict[str, tuple[str, Callable[[int], bytes], float]] = {
    "text": ("text, Anthropic's keys, pings, cumulative usage", text, 1.0),
    "tools": ("tool_use: 4 blocks of long input_json_delta streams", tools, 1.0),
    "thinking": ("extended thinking with a signature, redacted thinking, text", thinking, 1.0),
    "llamacpp": ("llama.cpp's /v1/messages: text, then a tool call token by token", llamacpp, 1.0),
    "long": ("text deltas of 200..2000 characters, code with escapes", long, 0.1),
}


def svir(parts: list[bytes]) -> Completion:
    d = MessagesStreamDecoder()
    for p in parts:
        d.feed(p)
    d.close()
    return d.result


def svir_with(backend: str) -> Callable[[list[bytes]], Completion]:
    def run(parts: list[bytes]) -> Completion:
        before = _json.BACKEND
        _json.use(backend)  # type: ignore[arg-type]
        try:
            return svir(parts)
        finally:
            _json.use(before)

    return run


def floor_with(loads: Callable[[bytes], object]) -> Callable[[list[bytes]], int]:
    """Split on blank lines, ``loads`` each event's data line; nothing kept."""

    def run(parts: list[bytes]) -> int:
        n = 0
        for block in b"".join(parts).split(b"\n\n"):
            at = block.find(b"data: ")
            if at >= 0:
                loads(block[at + 6 :])
                n += 1
        return n

    return run


def check(body: bytes) -> None:
    """The decoder reads the shape whole before anyone is timed."""
    result = svir([body])
    assert result.complete, result.problems
    assert not result.problems


def run(chunks: int, repeat: int, shapes: list[str]) -> str:
    orjson_loads = _json.orjson.loads if _json.orjson is not None else json.loads
    out: list[str] = []
    worst = dict.fromkeys(TARGETS, 0.0)
    for name in shapes:
        label, generate, scale = SHAPES[name]
        body = generate(int(chunks * scale))
        check(body)
        n = body.count(b"\n\n")
        fns: dict[str, Callable[[list[bytes]], object]] = {
            "svir-proto (orjson)": svir_with("orjson") if _json.orjson else svir_with("json"),
            "svir-proto (json)": svir_with("json"),
            FLOOR: floor_with(json.loads),
            "floor: split + orjson": floor_with(orjson_loads),
        }
        cells: dict[str, list[str]] = {k: [] for k in fns}
        per_event: dict[str, list[str]] = {k: [] for k in fns}
        for cut in PIECES.values():
            parts = cut(body)
            timings = interleaved(
                repeat, {k: (lambda f=f, parts=parts: f(parts)) for k, f in fns.items()}
            )
            for k in fns:
                ratio = timings.ratio(k, FLOOR)
                cells[k].append(f"{ratio:.2f}x")
                per_event[k].append(f"{timings.best[k] / n * 1e6:.2f}")
                if k in worst:
                    worst[k] = max(worst[k], ratio)
        rows = [[k, *cells[k], " / ".join(per_event[k])] for k in fns]
        out.append(
            f"\n{label}: {len(body) / 1e6:.2f} MB, {n} events\n"
            + table(["pipeline", *PIECES, "us/event (same order)"], rows)
        )
    verdict = ", ".join(
        f"{k} worst {worst[k]:.2f}x (target {TARGETS[k]}x)" for k in TARGETS if worst[k]
    )
    return "\n".join(out) + f"\n\nvs floor (split + json.loads): {verdict}"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--chunks", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument(
        "--shape", default=",".join(SHAPES), help="comma-separated: " + ", ".join(SHAPES)
    )
    args = ap.parse_args(argv)
    print(run(args.chunks, args.repeat, args.shape.split(",")))


if __name__ == "__main__":
    main()
