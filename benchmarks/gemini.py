"""Gemini streams to typed events and a final result, on the shapes Gemini's servers send,
side by side with the floor.

    python -m benchmarks.gemini [--chunks 20000] [--repeat 9] [--shape text,tools,thinking,safety]
                                [--array]

The shapes, generated from a seed, framed as Google frames them (``data: {...}`` with CRLF line
ends, ``": "`` after keys, ``<>&`` escaped), each chunk a whole ``GenerateContentResponse`` with
Gemini's real keys (``candidates[].content.parts[]``, ``role``, ``index``, a cumulative
``usageMetadata`` with ``promptTokensDetails``, ``modelVersion``, ``responseId``):

- ``text``: gemini-2.5-flash answering, a few tokens of multi-byte text per chunk.
- ``tools``: parallel function calls, whole in their chunks as Gemini sends them (args of a
  few hundred bytes), the first one signed, between runs of text; and Vertex AI's streamed
  arguments (``partialArgs``, a long string argument in pieces).
- ``thinking``: thought summaries (``"thought": true``), then the answer, then the signature
  (a 1 KB ``thoughtSignature``) on an empty final part, as Gemini 3 streams them.
- ``safety``: gemini-1.5's ``safetyRatings`` (four categories) on every chunk.
- ``long``: the text shape with one part of 200..2000 characters a chunk, a tenth of its words
  code with escapes (the OpenAI benchmark's ``long``; Gemini streams sentences, not tokens).

Each is fed in 1460 B pieces, random 1..4096 B pieces and one event per read; svir-proto with
orjson and with the standard library, against the floor: ``split(b"\\r\\n\\r\\n")`` and
``json.loads`` of each payload, nothing kept. Each cell is a time over the floor's, the median
of the per-round ratios (`benchmarks._timing`). Target: 0.75x with orjson.

``--array``: the same chunks as Gemini streams them without ``alt=sse``, one JSON array, each
element indented and followed by a line with the comma (Google's layout); the floor splits on
that line and parses each element.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable

from benchmarks._timing import interleaved, table
from benchmarks.shapes import PIECES, TOKENS, long_delta
from svir_proto import _json
from svir_proto.events import Completion
from svir_proto.gemini import GeminiStreamDecoder

TARGET = 0.75
FLOOR = "floor: split + json.loads"
SEP = b"\r\n\r\n"


def _g(obj: object) -> bytes:
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ": "))
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return b"data: " + text.encode() + SEP


class _Stream:
    def __init__(self, seed: int, model: str = "gemini-2.5-flash") -> None:
        self.rng = random.Random(seed)
        self.model = model
        self.rid = "".join(
            self.rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN0123456789") for _ in range(22)
        )
        self.tokens = 0
        self.out: list[bytes] = []

    def text(self, n: int) -> str:
        return "".join(self.rng.choice(TOKENS) for _ in range(n))

    def chunk(self, parts: list[dict[str, object]], **candidate: object) -> None:
        self.tokens += max(1, len(parts))
        usage = {
            "promptTokenCount": 31,
            "candidatesTokenCount": self.tokens,
            "totalTokenCount": 31 + self.tokens,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 31}],
        }
        c: dict[str, object] = {"content": {"parts": parts, "role": "model"}, **candidate}
        c["index"] = 0
        self.out.append(
            _g(
                {
                    "candidates": [c],
                    "usageMetadata": usage,
                    "modelVersion": self.model,
                    "responseId": self.rid,
                }
            )
        )

    def end(self) -> bytes:
        self.chunk([{"text": ""}], finishReason="STOP")
        return b"".join(self.out)


def text(chunks: int, seed: int = 7) -> bytes:
    s = _Stream(seed)
    for _ in range(chunks):
        s.chunk([{"text": s.text(s.rng.randint(1, 4))}])
    return s.end()


def long(chunks: int, seed: int = 7) -> bytes:
    """The text shape with a part of 200..2000 characters of text and code a chunk."""
    s = _Stream(seed)
    for _ in range(chunks):
        s.chunk([{"text": long_delta(s.rng)}])
    return s.end()


def tools(chunks: int, seed: int = 7) -> bytes:
    """Text, four chunks of three parallel calls each (whole, the first signed), then a call
    whose long string argument streams over most of the chunks (Vertex AI), then text."""
    s = _Stream(seed, "gemini-3-flash-preview")
    names = ["get_weather", "search_documents", "convert_currency", "lookup_flight"]
    for _ in range(chunks // 10):
        s.chunk([{"text": s.text(3)}])
    for _ in range(4):
        calls: list[dict[str, object]] = []
        for k in range(3):
            args = {
                "query": s.text(12),
                "limit": s.rng.randint(1, 50),
                "filters": {"lang": "de", "tags": [s.text(1) for _ in range(4)]},
            }
            part: dict[str, object] = {"functionCall": {"name": names[k], "args": args}}
            if k == 0:
                part["thoughtSignature"] = "Cp" + "Q" * 120
            calls.append(part)
        s.chunk(calls)
    s.chunk([{"functionCall": {"name": "write_file", "willContinue": True}}])
    for _ in range(chunks * 7 // 10):
        piece = {"jsonPath": "$.content", "stringValue": s.text(4), "willContinue": True}
        s.chunk([{"functionCall": {"partialArgs": [piece], "willContinue": True}}])
    s.chunk([{"functionCall": {"partialArgs": [{"jsonPath": "$.path", "stringValue": "a.txt"}]}}])
    for _ in range(chunks // 5):
        s.chunk([{"text": s.text(3)}])
    return s.end()


def thinking(chunks: int, seed: int = 7) -> bytes:
    s = _Stream(seed, "gemini-3-pro-preview")
    for _ in range(chunks // 2):
        s.chunk([{"text": s.text(6), "thought": True}])
    for _ in range(chunks - chunks // 2):
        s.chunk([{"text": s.text(3)}])
    s.chunk([{"text": "", "thoughtSignature": "Eq" + "A" * 1024}])
    return s.end()


def safety(chunks: int, seed: int = 7) -> bytes:
    s = _Stream(seed, "gemini-1.5-flash-002")
    categories = [
        "HARM_CATEGORY_SEXUALLY_EXPLICIT",
        "HARM_CATEGORY_HATE_SPEECH",
        "HARM_CATEGORY_HARASSMENT",
        "HARM_CATEGORY_DANGEROUS_CONTENT",
    ]
    ratings = [{"category": c, "probability": "NEGLIGIBLE"} for c in categories]
    for _ in range(chunks):
        s.chunk([{"text": s.text(2)}], safetyRatings=ratings)
    return s.end()


SHAPES: dict[str, tuple[str, Callable[[int], bytes], float]] = {
    "text": ("text, gemini-2.5-flash's keys, a few tokens a chunk", text, 1.0),
    "tools": ("parallel calls whole and signed, Vertex AI's streamed arguments", tools, 1.0),
    "thinking": ("thought summaries, the answer, a 1 KB signature", thinking, 1.0),
    "safety": ("gemini-1.5: four safety ratings on every chunk", safety, 1.0),
    "long": ("text parts of 200..2000 characters, code with escapes", long, 0.1),
}


def svir(parts: list[bytes]) -> Completion:
    d = GeminiStreamDecoder()
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
    def run(parts: list[bytes]) -> int:
        n = 0
        for block in b"".join(parts).split(SEP):
            if block.startswith(b"data: {"):
                loads(block[6:])  # nothing kept
                n += 1
        return n

    return run


ARRAY_SEP = b"\n,\r\n"
"""What is between two elements of Gemini's array (``--array``)."""


def as_array(body: bytes) -> list[bytes]:
    """The SSE body's chunks as Gemini's array, one element (and what precedes it) a piece:
    ``[`` and the first, then each after a line with the comma, then the end."""
    chunks = [json.loads(b[6:]) for b in body.split(SEP) if b]
    elements = [json.dumps(c, ensure_ascii=False, indent=2).encode() for c in chunks]
    return [b"[" + elements[0], *(ARRAY_SEP + e for e in elements[1:]), b"\n]"]


def floor_array_with(loads: Callable[[bytes], object]) -> Callable[[list[bytes]], int]:
    def run(parts: list[bytes]) -> int:
        n = 0
        for element in b"".join(parts)[1:-2].split(ARRAY_SEP):
            loads(element)  # nothing kept
            n += 1
        return n

    return run


def check(body: bytes, array: bool = False) -> None:
    """The answer is whole and the floor reads as many events, before anyone is timed."""
    result = svir([body])
    assert result.complete, result.problems
    floor = floor_array_with(json.loads) if array else floor_with(json.loads)
    assert floor([body]) == (body.count(ARRAY_SEP) + 1 if array else body.count(SEP))


def run(chunks: int, repeat: int, shapes: list[str], array: bool = False) -> str:
    out: list[str] = []
    worst = 0.0
    floor = floor_array_with if array else floor_with
    fns: dict[str, Callable[[list[bytes]], object]] = {
        "svir-proto (orjson)": svir_with("orjson") if _json.orjson else svir_with("json"),
        "svir-proto (json)": svir_with("json"),
        FLOOR: floor(json.loads),
    }
    if _json.orjson is not None:
        fns["floor: split + orjson"] = floor(_json.orjson.loads)
    for name in shapes:
        label, generate, scale = SHAPES[name]
        body = generate(max(10, int(chunks * scale)))
        elements = as_array(body) if array else []
        if array:
            body = b"".join(elements)
            label += ", as one JSON array"
        check(body, array)
        n = len(elements) - 1 if array else body.count(SEP)
        cells: dict[str, list[str]] = {k: [] for k in fns}
        per_event: dict[str, list[str]] = {k: [] for k in fns}
        for what, cut in PIECES.items():
            parts = elements if array and what == "one event per read" else cut(body)
            timings = interleaved(
                repeat, {k: (lambda f=f, parts=parts: f(parts)) for k, f in fns.items()}
            )
            for k in fns:
                ratio = timings.ratio(k, FLOOR)
                cells[k].append(f"{ratio:.2f}x")
                per_event[k].append(f"{timings.best[k] / n * 1e6:.2f}")
                if k == "svir-proto (orjson)":
                    worst = max(worst, ratio)
        rows = [[k, *cells[k], " / ".join(per_event[k])] for k in fns]
        out.append(
            f"\n{label}: {len(body) / 1e6:.2f} MB, {n} events\n"
            + table(["pipeline", *PIECES, "us/event (same order)"], rows)
        )
    return (
        "\n".join(out)
        + "\n\nvs floor (split + json.loads): "
        + f"svir-proto (orjson) worst {worst:.2f}x (target {TARGET}x)"
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--chunks", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument(
        "--shape", default=",".join(SHAPES), help="comma-separated: " + ", ".join(SHAPES)
    )
    ap.add_argument("--array", action="store_true", help="Gemini's stream without alt=sse")
    args = ap.parse_args(argv)
    print(run(args.chunks, args.repeat, args.shape.split(","), args.array))


if __name__ == "__main__":
    main()
