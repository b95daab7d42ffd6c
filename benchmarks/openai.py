"""Bytes to typed events and a final result, side by side: svir-proto, openai-python, the floor.

    python -m benchmarks.openai [--chunks 20000] [--repeat 15]

- svir-proto: `ChatStreamDecoder` fed the pieces, every event built, then ``result``; once with
  orjson (the ``fast`` extra) and once with the standard library's json.
- openai-python: its typed pipeline, as ``client.chat.completions.stream`` runs it: its SSE
  decoder, ``sse.json()``, ``construct_type(ChatCompletionChunk)``, and
  ``ChatCompletionStreamState.handle_chunk``, then the final snapshot.
- floor: ``bytes.split(b"\\n\\n")`` on the joined body and ``json.loads`` of each payload: no
  SSE rules, no types, no result. Also shown with orjson.

The decoders take turns in every round (a drifting VM slows them alike); times are the best
round. The stream is seeded and realistic (multi-byte text, usage chunk, ``[DONE]``).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from benchmarks._timing import interleaved, table
from benchmarks._timing import main as bench_main
from benchmarks.streams import openai_stream, scenarios
from svir_proto import _json
from svir_proto.openai import ChatStreamDecoder


def svir(parts: list[bytes]) -> object:
    d = ChatStreamDecoder()
    for p in parts:
        d.feed(p)
    d.close()
    return d.result


def svir_with(backend: str) -> Callable[[list[bytes]], object]:
    def run(parts: list[bytes]) -> object:
        before = _json.BACKEND
        _json.use(backend)  # type: ignore[arg-type]
        try:
            return svir(parts)
        finally:
            _json.use(before)

    return run


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


def floor_with(loads: Callable[[bytes], object]) -> Callable[[list[bytes]], object]:
    def run(parts: list[bytes]) -> object:
        out = []
        for block in b"".join(parts).split(b"\n\n"):
            if block.startswith(b"data: {"):
                out.append(loads(block[6:]))
        return out

    return run


def run(chunks: int, repeat: int) -> str:
    body = openai_stream(chunks)
    n = chunks + 4
    result = svir([body])
    snapshot = openai_python([body])
    assert result.complete  # type: ignore[attr-defined]
    assert result.text == snapshot.choices[0].message.content  # type: ignore[attr-defined]
    fns: dict[str, Callable[[list[bytes]], object]] = {
        "svir-proto (orjson)": svir_with("orjson"),
        "svir-proto (json)": svir_with("json"),
        "openai-python 3.57": openai_python,
        "floor: split + json.loads": floor_with(json.loads),
        "floor: split + orjson": floor_with(_json.orjson.loads if _json.orjson else json.loads),
    }
    out = [f"body: {len(body) / 1e6:.2f} MB, {n} events (seeded; multi-byte text)"]
    for label, parts in scenarios(body):
        timings = interleaved(
            repeat, {k: (lambda fn=fn, parts=parts: fn(parts)) for k, fn in fns.items()}
        )
        floor = "floor: split + json.loads"
        oai = "openai-python 3.57"
        rows = [
            [
                k,
                f"{t * 1e3:.0f}",
                f"{t / n * 1e6:.2f}",
                f"{timings.ratio(k, floor):.2f}x",
                f"{timings.ratio(oai, k):.1f}x",
            ]
            for k, t in timings.best.items()
        ]
        out.append(
            f"\n{label}\n"
            + table(["pipeline", "ms", "us/event", "vs floor (json)", "openai-python / this"], rows)
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    bench_main(run, __doc__, argv)


if __name__ == "__main__":
    main()
