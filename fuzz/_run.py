"""``fuzz/run``: every target under libFuzzer, one line of numbers each.

    fuzz/run [--time SECONDS] [--runs N] [--jobs J] [--only sse,openai] [--dataflow]

Each target starts from its seeds (``fuzz/corpus/<name>``, never changed) and a scratch corpus
(``fuzz/.work/<name>/corpus``, kept between runs, ignored by git), with the dictionary
``fuzz/tokens.dict``. A crash, timeout or memory blow-up is written to ``fuzz/.work/<name>/``
and named in the line; it then belongs in the seeds with a named test (README.md).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

FUZZ = Path(__file__).resolve().parent
TARGETS = sorted(p.stem.removeprefix("fuzz_") for p in FUZZ.glob("fuzz_*.py"))
STAT = re.compile(rb"stat::(\w+):\s+(\d+)")


def run(name: str, seconds: int, runs: int | None, dataflow: bool) -> str:
    work = FUZZ / ".work" / name
    corpus = work / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    before = {p.name for p in work.iterdir() if p.is_file()}
    command = [
        sys.executable,
        str(FUZZ / f"fuzz_{name}.py"),
        str(corpus),
        str(FUZZ / "corpus" / name),
        f"-dict={FUZZ / 'tokens.dict'}",
        "-max_len=4096",
        "-timeout=10",
        "-rss_limit_mb=2048",
        "-print_final_stats=1",
        f"-artifact_prefix={work}/",
        f"-max_total_time={seconds}" if runs is None else f"-runs={runs}",
    ]
    env = {**os.environ, "SVIR_FUZZ_DATAFLOW": "1" if dataflow else "0"}
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, env=env, cwd=work)
    elapsed = time.monotonic() - started
    stats = {k.decode(): int(v) for k, v in STAT.findall(done.stderr)}
    (work / "last.log").write_bytes(done.stderr)
    crashes = sorted(
        p.name
        for p in work.iterdir()
        if p.is_file()
        and p.name not in before
        and p.name.startswith(("crash-", "timeout-", "oom-", "leak-", "slow-unit-"))
    )
    inputs = stats.get("number_of_executed_units", 0)
    line = (
        f"{name:14} {inputs:>10,} inputs  {inputs / elapsed if elapsed else 0:>7,.0f}/s  "
        f"corpus {sum(1 for _ in corpus.iterdir()):>5}  crashes {len(crashes)}"
    )
    if crashes:
        line += "  " + " ".join(str(work / c) for c in crashes)
    elif done.returncode != 0:
        line += f"  (libFuzzer exit {done.returncode}: see {work / 'last.log'})"
    return line


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--time", type=int, default=60, help="seconds per target (default 60)")
    ap.add_argument("--runs", type=int, help="inputs per target instead of a time")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="targets at once")
    ap.add_argument("--only", help="comma-separated targets: " + ", ".join(TARGETS))
    ap.add_argument("--dataflow", action="store_true", help="trace comparisons too (slower)")
    args = ap.parse_args(argv)
    names = args.only.split(",") if args.only else TARGETS
    unknown = set(names) - set(TARGETS)
    if unknown:
        ap.error(f"no such target: {', '.join(sorted(unknown))}")
    failed = False
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        jobs = [pool.submit(run, n, args.time, args.runs, args.dataflow) for n in names]
        for job in jobs:
            line = job.result()
            failed |= "crashes 0" not in line or "exit" in line
            print(line, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
