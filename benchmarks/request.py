"""Building and sending a request with large images: svir-proto's streamed body beside the
in-memory way every surveyed client does it (read each image, base64 it, json.dumps it all).

    python -m benchmarks.request [--images 3] [--mib 8]

Reports the time to produce every byte and the peak memory the Python heap held (tracemalloc),
side by side in one run.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from benchmarks._timing import table
from svir_proto.openai import ChatRequest, ImagePart, TextPart, UserMessage

PNG_HEAD = b"\x89PNG\r\n\x1a\n"


def measure(fn: Callable[[], int]) -> tuple[float, int, int]:
    tracemalloc.start()
    t = time.perf_counter()
    n = fn()
    elapsed = time.perf_counter() - t
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return elapsed, peak, n


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--images", type=int, default=3)
    ap.add_argument("--mib", type=int, default=8)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i in range(args.images):
            p = Path(tmp) / f"photo{i}.png"
            with p.open("wb") as f:
                f.write(PNG_HEAD)
                for _ in range(args.mib):
                    f.write(os.urandom(1 << 20))
            paths.append(p)

        def svir() -> int:
            parts = [
                TextPart(text="Compare these photos."),
                *(ImagePart.from_path(p) for p in paths),
            ]
            body = ChatRequest(model="m", messages=[UserMessage(content=parts)]).body()
            sent = sum(len(piece) for piece in body)  # what a transport writes
            assert sent == body.content_length
            return sent

        def in_memory() -> int:
            content: list[dict[str, object]] = [{"type": "text", "text": "Compare these photos."}]
            for p in paths:
                data = base64.b64encode(p.read_bytes()).decode()
                content.append(
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64," + data}}
                )
            doc = {"model": "m", "messages": [{"role": "user", "content": content}], "stream": True}
            return len(json.dumps(doc, separators=(",", ":")).encode())

        rows = []
        results = {
            name: measure(fn)
            for name, fn in (
                ("svir-proto RequestBody", svir),
                ("in memory (json.dumps)", in_memory),
            )
        }
        base_peak = results["svir-proto RequestBody"][1]
        for name, (elapsed, peak, n) in results.items():
            rows.append(
                [
                    name,
                    f"{n / 1e6:.1f}",
                    f"{elapsed * 1e3:.0f}",
                    f"{peak / 1e6:.2f}",
                    f"{peak / base_peak:.0f}x",
                ]
            )
        print(f"{args.images} images of {args.mib} MiB from disk")
        print(table(["body", "MB sent", "ms", "peak heap MB", "peak vs svir"], rows))


if __name__ == "__main__":
    main()
