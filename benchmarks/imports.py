"""What importing costs: ``python -X importtime`` of svir-proto's entry points against httpx's,
each in a fresh interpreter, taking turns, as same-run ratios (a loaded machine slows both).

    python -m benchmarks.imports [--repeat 15]

The number is the cumulative microseconds ``-X importtime`` reports for the imported module
(what ``import`` itself cost, the interpreter's own start-up left out); the ratio is the median
of the per-round ratios to ``import httpx`` (benchmarks/_timing.py says why the median).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from collections.abc import Sequence

from benchmarks._timing import table

CASES = {
    "import svir_proto": "import svir_proto",
    "from svir_proto import TextDelta": "from svir_proto import TextDelta",
    "from svir_proto.openai import ChatStreamDecoder": (
        "from svir_proto.openai import ChatStreamDecoder"
    ),
    "from svir_proto.transports.blocking import Client": (
        "from svir_proto.transports.blocking import Client"
    ),
    "import httpx": "import httpx",
}
BASE = "import httpx"


def cost(code: str) -> int:
    """Microseconds, cumulative, of what ``code`` imported: the top-level entries that
    ``-X importtime`` lists after the interpreter's own start-up (``site``)."""
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    total = 0
    started = False
    for line in err.splitlines():
        if not line.startswith("import time:") or line.count("|") != 2:
            continue
        _, cumulative, name = line.split("|")
        if name.startswith("  "):  # nested: counted in its parent's cumulative time
            continue
        if started:
            total += int(cumulative)
        started = started or name.strip() == "site"
    return total


def run(repeat: int = 15) -> str:
    rounds: dict[str, list[int]] = {name: [] for name in CASES}
    names = list(CASES)
    for r in range(repeat):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            rounds[name].append(cost(CASES[name]))
    rows = []
    for name in names:
        ratio = statistics.median(a / b for a, b in zip(rounds[name], rounds[BASE], strict=True))
        rows.append((name, f"{statistics.median(rounds[name]) / 1000:.1f} ms", f"{ratio:.2f}"))
    return table(["import", "median", f"ratio to {BASE}"], rows)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    print(run(parser.parse_args(argv).repeat))


if __name__ == "__main__":
    main()
