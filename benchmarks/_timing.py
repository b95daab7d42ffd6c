"""Best-of-N timing and a plain table, shared by the benchmark scripts."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def interleaved(repeat: int, fns: dict[str, Callable[[], object]]) -> dict[str, float]:
    """Best time of each function, the functions taking turns in every round, so that a
    machine whose speed drifts (a shared VM) slows them all alike and the ratios hold."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t)
    return best


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [[str(h) for h in headers], *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    lines.insert(1, "-|-".join("-" * w for w in widths))
    return "\n".join(lines)


def main(run: Callable[[int, int], str], doc: str | None, argv: list[str] | None = None) -> None:
    """The command line the stream benchmarks share: --chunks N --repeat R, then the tables."""
    ap = argparse.ArgumentParser(description=doc)
    ap.add_argument("--chunks", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    print(run(args.chunks, args.repeat))
