"""Bytes to typed events and a final result, on every stream shape, side by side with the floor
and the peers.

    python -m benchmarks.openai [--chunks 20000] [--repeat 9] [--shape chat,tools,azure,crlf]
        [--shape long,vllm,logprobs,pings,bare]

The shapes (`benchmarks.shapes`): chat with OpenAI's chunk keys, four interleaved tool calls,
Azure's filter verdict on every chunk, CRLF line ends; each fed in 1460 B pieces, random pieces
of 1..4096 B, and one event per read. In one run, taking turns in every round (a drifting VM
slows them alike):

- svir-proto: `ChatStreamDecoder` fed the pieces, every event built, then ``result``; with
  orjson (the ``fast`` extra) and with the standard library's json.
- httpx-sse + dict: httpx-sse's ``EventSource.iter_sse`` over the decoded text, ``json.loads``
  of each event, and a dict accumulator for the text, the tool calls and the finish reason: what
  a careful user writes by hand.
- floor: ``bytes.split`` on the joined body and ``json.loads`` of each payload, nothing kept:
  no SSE rules, no types, no result. Also with orjson.
- openai-python: its typed pipeline as ``client.chat.completions.stream`` runs it (its SSE
  decoder, ``construct_type(ChatCompletionChunk)``, ``ChatCompletionStreamState``); it is ~50
  times slower, so it runs once per shape, on the 1460 B pieces.

Each cell is a time over the floor's (``split + json.loads``), the median of the ratios within
the rounds. Targets: svir-proto at most 0.75x, with orjson and with the standard library,
on every shape and every way of feeding it.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

from benchmarks._timing import interleaved, table
from benchmarks.shapes import DEFAULT, PIECES, SHAPES
from benchmarks.sse import _TextResponse
from svir_proto import _json
from svir_proto.events import Completion
from svir_proto.openai import ChatStreamDecoder

TARGETS = {"svir-proto (orjson)": 0.75, "svir-proto (json)": 0.75}
FLOOR = "floor: split + json.loads"


def svir(parts: list[bytes]) -> Completion:
    d = ChatStreamDecoder()
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


def httpx_sse_dict(parts: list[bytes]) -> dict[str, object]:
    from httpx_sse import EventSource

    text: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    finish = None
    for sse in EventSource(_TextResponse(parts)).iter_sse():  # type: ignore[arg-type]
        if sse.data == "[DONE]":
            break
        chunk = json.loads(sse.data)
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            if delta.get("content"):
                text.append(delta["content"])
            for call in delta.get("tool_calls") or ():
                entry = calls.setdefault(call.get("index", 0), {"name": "", "arguments": ""})
                function = call.get("function") or {}
                entry["name"] += function.get("name") or ""
                entry["arguments"] += function.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    return {"text": "".join(text), "calls": calls, "finish": finish}


def openai_python(parts: list[bytes]) -> object:
    from openai._models import construct_type
    from openai._streaming import SSEDecoder
    from openai.lib.streaming.chat._completions import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    state: ChatCompletionStreamState[object] = ChatCompletionStreamState()
    for sse in SSEDecoder().iter_bytes(iter(parts)):
        if sse.data.startswith("[DONE]"):
            break
        chunk = construct_type(type_=ChatCompletionChunk, value=sse.json())
        state.handle_chunk(chunk)  # type: ignore[arg-type]
    return state.current_completion_snapshot


def floor_with(
    loads: Callable[[bytes], object], sep: bytes, data: bytes = b"data: "
) -> Callable[[list[bytes]], int]:
    opened, start = data + b"{", len(data)  # ("data:" with no space: the bare shape)

    def run(parts: list[bytes]) -> int:
        n = 0
        for block in b"".join(parts).split(sep):
            if block.startswith(opened):
                loads(block[start:])  # nothing kept: a kept dict per event costs the GC, not us
                n += 1
        return n

    return run


def check(body: bytes) -> None:
    """The pipelines agree on the answer before anyone is timed."""
    result = svir([body])
    peer = httpx_sse_dict([body])
    assert result.complete, result.problems
    assert result.text == peer["text"]
    calls: dict[int, dict[str, str]] = peer["calls"]  # type: ignore[assignment]
    assert [(c.name, c.arguments) for c in result.tool_calls] == [
        (calls[i]["name"], calls[i]["arguments"]) for i in sorted(calls)
    ]


def run(chunks: int, repeat: int, shapes: list[str]) -> str:
    orjson_loads = _json.orjson.loads if _json.orjson is not None else json.loads
    out: list[str] = []
    worst = dict.fromkeys(TARGETS, 0.0)
    for name in shapes:
        label, generate, scale = SHAPES[name]
        body = generate(int(chunks * scale))
        check(body)
        sep = b"\r\n\r\n" if name == "crlf" else b"\n\n"
        data = b"data:" if name == "bare" else b"data: "
        n = body.count(b"\n" + data) + body.startswith(data)  # events, not comments
        fns: dict[str, Callable[[list[bytes]], object]] = {
            "svir-proto (orjson)": svir_with("orjson") if _json.orjson else svir_with("json"),
            "svir-proto (json)": svir_with("json"),
            "httpx-sse + dict": httpx_sse_dict,
            FLOOR: floor_with(json.loads, sep, data),
            "floor: split + orjson": floor_with(orjson_loads, sep, data),
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
        parts = PIECES["1460 B"](body)
        t = time.perf_counter()
        try:
            openai_python(parts)
            oai = f"{(time.perf_counter() - t) / n * 1e6:.0f}"
        except Exception as exc:  # a peer that breaks on a shape is a result too
            oai = f"fails: {type(exc).__name__}"
        rows = [[k, *cells[k], " / ".join(per_event[k])] for k in fns]
        rows.append(["openai-python (1460 B, once)", "", "", "", oai])
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
        "--shape", default=",".join(DEFAULT), help="comma-separated: " + ", ".join(SHAPES)
    )
    args = ap.parse_args(argv)
    print(run(args.chunks, args.repeat, args.shape.split(",")))


if __name__ == "__main__":
    main()
