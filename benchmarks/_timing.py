"""Best-of-N timing and a plain table, shared by the benchmark scripts."""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


class Timings(NamedTuple):
    """Each function's time in every round (the functions take turns within a round)."""

    rounds: dict[str, list[float]]

    @property
    def best(self) -> dict[str, float]:
        return {name: min(times) for name, times in self.rounds.items()}

    def ratio(self, name: str, base: str) -> float:
        """``name``'s time over ``base``'s, the median of the ratios within each round.

        Rounds are back to back, so a machine whose speed drifts (a shared VM) slows both
        alike within a round; the median then ignores the rounds a burst of noise hit.
        """
        return statistics.median(
            t / b for t, b in zip(self.rounds[name], self.rounds[base], strict=True)
        )


def interleaved(repeat: int, fns: dict[str, Callable[[], object]]) -> Timings:
    """Time every function ``repeat`` times, taking turns, each round starting with the next
    function (so none always runs first, after the others warmed or cooled the caches)."""
    names = list(fns)
    rounds: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeat):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            t = time.perf_counter()
            fns[name]()
            rounds[name].append(time.perf_counter() - t)
    return Timings(rounds)


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
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args(argv)
    print(run(args.chunks, args.repeat))
