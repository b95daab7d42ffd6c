"""Where the gateway's CPU goes per forwarded event: py-spy on ``svir gateway`` under the
gateway benchmark's load.

    .venv/bin/python -m benchmarks.gateway_profile [--loop uvloop|asyncio|trio]
        [--mode unpaced|paced] [--streams 200] [--chunks 500] [--rounds 10]
        [--dialect openai|llmstream] [--rate 200] [--top 30] [--out FILE]

The benchmark's upstream (`benchmarks._upstream`) and clients (`benchmarks._clients`), and one
gateway (warmed up with two streams, then sampled by ``py-spy record --nonblocking --pid``:
py-spy comes from ``scripts/install-bench-peers``), take ``--rounds`` runs of ``--streams``
streams at once. Then
the gateway's CPU per upstream event (``/proc``, as the benchmark measures it) is split by
py-spy's samples (idle ones left out: a sample is a thread on a CPU, or runnable): each
function's own share (self) and its share with what it calls (total), in % and in ns per event.
The raw stacks are kept in ``--out`` (py-spy's collapsed format, for flame graph tools).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchmarks import _contenders as c
from benchmarks._server import frames
from benchmarks._timing import table
from benchmarks.gateway import Clients, Upstream, raise_file_limit


def py_spy() -> str:
    """The py-spy beside this Python, else on PATH."""
    here = Path(sys.executable).with_name("py-spy")
    found = str(here) if here.exists() else shutil.which("py-spy")
    if not found:
        raise SystemExit("py-spy is not installed: scripts/install-bench-peers")
    return found


def frame_name(frame: str, lines: bool = False) -> str:
    """``func (path/to/file.py:LINE)`` as ``file.py:func`` (lines folded together, unless
    ``lines``: then ``file.py:LINE:func``)."""
    name, _, where = frame.partition(" (")
    path, _, line = where.rstrip(")").rpartition(":")
    if lines:
        name = f"{line}:{name}"
    parts = Path(path).parts
    if not parts:  # a frame py-spy could not place
        return name or frame
    short = "/".join(parts[-2:]) if "svir_proto" in parts or "benchmarks" in parts else parts[-1]
    return f"{short}:{name}"


def split(stacks: Path, lines: bool = False) -> tuple[Counter[str], Counter[str], int]:
    """Self and total samples per function, and all samples, from py-spy's raw output."""
    own: Counter[str] = Counter()
    total: Counter[str] = Counter()
    samples = 0
    for line in stacks.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        names = [frame_name(f) for f in stack.split(";") if not f.startswith("process ")]
        if lines:  # the line each function was at
            names[-1:] = [frame_name(stack.split(";")[-1], lines=True)]
        names = [x for x in names if not x.startswith("thread ")]
        if not names:
            continue
        samples += n
        own[names[-1]] += n
        for name in set(names):
            total[name] += n
    return own, total, samples


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loop", default="uvloop", choices=["uvloop", "asyncio", "trio"])
    ap.add_argument("--mode", default="unpaced", choices=["unpaced", "paced"])
    ap.add_argument("--pace", type=float, default=5.0, help="ms between paced events")
    ap.add_argument("--streams", type=int, default=200)
    ap.add_argument("--chunks", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--dialect", default="openai", choices=["openai", "llmstream"])
    ap.add_argument("--rate", type=int, default=200, help="py-spy samples per second")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--out", help="keep py-spy's raw stacks here")
    ap.add_argument("--lines", action="store_true", help="self time per line, not function")
    ap.add_argument("--native", action="store_true",
                    help="C frames too (py-spy stops the gateway for each sample)")  # fmt: skip
    a = ap.parse_args(argv)
    raise_file_limit()
    events = len(frames(a.chunks)) - 1
    upstream, clients = Upstream(), Clients(1)
    with tempfile.TemporaryDirectory(prefix="svir-gwprof-") as tmp:
        stacks = Path(a.out or os.path.join(tmp, "stacks.txt"))
        python = sys.executable
        if a.loop == "uvloop":
            python = c.find_uvloop(None) or sys.exit("no Python with uvloop: install-bench-peers")
        gateway = c.svir(a.loop, upstream.port, a.streams, Path(tmp), python)
        spy: subprocess.Popen[bytes] | None = None
        log = open(os.path.join(tmp, "py-spy.log"), "wb")  # noqa: SIM115 - closed below
        try:
            upstream.set("unpaced", a.chunks, 0)
            clients.run(gateway.port, a.dialect, 2, a.chunks, 60)  # warm up: imports, pools
            upstream.set(a.mode, a.chunks, a.pace / 1000)
            pids = gateway.pids()
            argv_spy = [py_spy(), "record", "--native" if a.native else "--nonblocking",
                        "--format", "raw", "--rate", str(a.rate), "--output", str(stacks),
                        "--pid", str(pids[-1])]  # fmt: skip
            spy = subprocess.Popen(argv_spy, stdout=log, stderr=subprocess.STDOUT, cwd=tmp)
            time.sleep(1.0)  # py-spy attaches
            cpu = c.CPU(pids)
            wall = time.monotonic()
            lost = 0
            for _ in range(a.rounds):
                got = clients.run(gateway.port, a.dialect, a.streams, a.chunks, 300)
                lost += sum(v for k, v in got["outcomes"].items() if k != "ok")
            wall = time.monotonic() - wall
            seconds = cpu.seconds()
        finally:
            if spy is not None:
                spy.send_signal(signal.SIGINT)  # py-spy writes its stacks and exits
                try:
                    spy.wait(60)
                except subprocess.TimeoutExpired:
                    spy.kill()
                    spy.wait()
            log.close()
            gateway.stop()
            clients.stop()
            upstream.stop()
        own, total, samples = (
            split(stacks, a.lines) if stacks.exists() else (Counter(), Counter(), 0)
        )
        if not samples:
            raise SystemExit(f"py-spy wrote no samples: {Path(tmp, 'py-spy.log').read_text()}")
    forwarded = a.rounds * a.streams * events
    per_event = seconds / forwarded * 1e9  # ns
    print(
        f"svir gateway on {a.loop}, {a.dialect} out, {a.mode}: {a.rounds} rounds of "
        f"{a.streams} streams of {events} events in {wall:.1f} s ({lost} answers differ); "
        f"gateway CPU {seconds:.2f} s = {per_event / 1000:.2f} µs per forwarded event "
        f"(under py-spy {'--native' if a.native else '--nonblocking'}); {samples} samples at "
        f"{a.rate}/s"
    )
    rows = [
        [name, f"{n / samples:.1%}", f"{n / samples * per_event:.0f}",
         f"{total[name] / samples:.1%}", f"{total[name] / samples * per_event:.0f}"]
        for name, n in own.most_common(a.top)
    ]  # fmt: skip
    print(table(["function (self)", "self", "ns/event", "total", "ns/event"], rows))
    print()
    rows = [
        [name, f"{n / samples:.1%}", f"{n / samples * per_event:.0f}"]
        for name, n in total.most_common()
        if n < 0.95 * samples  # not the frames every sample is under (main, the loop's run)
    ][: a.top]
    print(table(["function (with what it calls)", "total", "ns/event"], rows))


if __name__ == "__main__":
    main()
