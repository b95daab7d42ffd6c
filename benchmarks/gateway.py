"""The gateway beside nginx and LiteLLM's proxy, over loopback only, bounded in count and time.

    scripts/install-bench-peers   # nginx, LiteLLM (.venv-litellm), uvloop (.venv-uvloop), py-spy
    .venv/bin/python -m benchmarks.gateway [--quick] [--streams 50,200,1000]
        [--mode paced,unpaced] [--pace 5] [--chunks 500] [--repeat 3] [--clients 1]
        [--probes 40] [--ttft-probes 40] [--nginx PATH|none] [--litellm PYTHON|VENV|none]
        [--uvloop PYTHON|VENV|none]
        [--litellm-max-streams 200] [--litellm-rounds 1] [--only LANE,...] [--close]
        [--timeout 300] [--base TREE]

Issue 20's table, measured side by side in one run. An upstream of ours in its own process
(`benchmarks._upstream`) streams a seeded, realistic OpenAI answer of ``--chunks`` chunks, one
HTTP chunk per event, either **paced** (one event every ``--pace`` ms, each its own write: a
model streaming tokens, where every event is its own read) or **unpaced** (as fast as it is
read). In front of it, the contenders: the upstream **direct**; ``svir gateway --backend
asyncio`` on plain asyncio and on uvloop (when a Python with uvloop is found, ``--uvloop``:
the gateway takes uvloop when it can import it; the plain lane hides it), and ``--backend
trio``, OpenAI in and out, and LLM-Stream out (the lanes "LS"); nginx with ``proxy_buffering
off`` and LiteLLM's proxy, when they are found (the benchmark installs none of these and says
which it found: `scripts/install-bench-peers` does; LiteLLM, slow, runs in the first
``--litellm-rounds`` rounds and up to ``--litellm-max-streams`` streams). Clients in their own
process(es) (`benchmarks._clients`: raw sockets, keep-alive as real clients send it, decoding
after the run) open ``--streams`` streams at once; once each has had its first bytes, up to
``--probes`` probes (requests for a short answer, `benchmarks._upstream.PROBE_CHUNKS` chunks)
go one after the other while the streams last: their time to first token is that of a request
arriving under load. Every answer is decoded and compared with the upstream's. The lanes take
turns within each round, each round starting with the next lane; each stream count gets fresh
contender processes, warmed up with two streams each. ``--base TREE`` adds the lanes
"svir base" and "svir base LS": the gateway of another source tree (a checkout of the commit to
compare with), on plain asyncio, taking turns with this tree's: a change measured in one run.
``--quick`` is a smoke run of seconds (the test suite runs it): 4 streams of 20 chunks, one
round, 2 probes.

Per lane: wall time over direct's in the same round; the time to first token (from the connect
to the read carrying the first text) and what the lane adds to direct's: of the streams at once
(median, p95), of the probes under their load (p50, p99, every round's probes together), and,
without load, of ``--ttft-probes`` probes one after the other; the contender's CPU per
upstream event (its own processes: ``/proc/PID/stat``, in nanoseconds from the threads'
``schedstat``), also as a multiple of nginx's; its peak RSS (VmHWM, reset before each run;
nginx runs as one process, its worker); answers lost, duplicated, reordered or otherwise
different. Values are medians over the rounds, the spread (lowest-highest) beside them. Also
reported: the clients' CPU per event and the busiest client process's share of a core (they
must not be the bottleneck), the upstream's, and how late the upstream sent its paced events (a
machine too busy to keep the schedule shows there), with the load average and CPU pressure per
scenario.

Targets (issue 20): paced, CPU per event at most 3x nginx's, 200 streams within 1.2x of direct
wall time, 1,000 within 1.5x and under 100 MB; unpaced, at most 3 µs per event OpenAI in and
out, 4 µs LLM-Stream out; added time to first token at most 2x nginx's median (nginx's taken
as at least `NOISE`); nothing lost, duplicated or reordered.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any, NamedTuple

from benchmarks import _contenders as c
from benchmarks._server import frames
from benchmarks._timing import table
from benchmarks._upstream import PROBE_CHUNKS

LANES: dict[str, tuple[str, str]] = {  # lane: (contender, client dialect)
    "direct": ("direct", "openai"),
    "nginx": ("nginx", "openai"),
    "LiteLLM": ("LiteLLM", "openai"),
    "svir asyncio": ("svir asyncio", "openai"),
    "svir uvloop": ("svir uvloop", "openai"),
    "svir trio": ("svir trio", "openai"),
    "svir asyncio LS": ("svir asyncio", "llmstream"),
    "svir base": ("svir base", "openai"),  # --base: another tree's gateway, plain asyncio
    "svir base LS": ("svir base", "llmstream"),
    "svir uvloop LS": ("svir uvloop", "llmstream"),
    "svir trio LS": ("svir trio", "llmstream"),
}
SVIR = tuple(lane for lane in LANES if lane.startswith("svir "))
FILES = 65536  # the open-file limit wanted: 1,000 streams hold 2,000 sockets in a gateway
PROBE = "one at a time"  # the scenario of time to first token without load


class Run(NamedTuple):
    """One lane's run: what the clients saw and what the contender spent."""

    wall: float
    ttft: list[float]  # ms, one per stream that got a token
    probe_ttft: list[float]  # ms, one per probe (under load, or one at a time) that got one
    cpu: float  # the contender's CPU seconds (0 for direct)
    rss: float  # its peak RSS, MB (nan for direct)
    clients_cpu: float
    clients_busy: float  # the busiest client process's CPU over its wall time
    upstream_cpu: float
    upstream_late: float  # ms the upstream's paced events went out late, 99th percentile
    outcomes: Counter[str]
    reasons: Counter[str]


def raise_file_limit(want: int = FILES) -> int:
    """Raise this process's open-file limit (the children inherit it) toward ``want``."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = want if hard == resource.RLIM_INFINITY else min(want, hard)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft


def cpu_pressure() -> str:
    """The share of the last 10 s some runnable task waited for a CPU (PSI), if known."""
    try:
        line = Path("/proc/pressure/cpu").read_text().splitlines()[0]
    except (OSError, IndexError):
        return "?"
    return line.split()[1].partition("=")[2] + "%"


def quantile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` quantile (nan for none)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def p95(values: Sequence[float]) -> float:
    return quantile(values, 0.95)


def p99(values: Sequence[float]) -> float:
    return quantile(values, 0.99)


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


class Upstream:
    """`benchmarks._upstream` in its own process, told how to answer through its stdin."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks._upstream"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self._in: IO[str] = self.proc.stdin
        self._out: IO[str] = self.proc.stdout
        self.port = int(self._out.readline())

    def _ask(self, line: str) -> str:
        self._in.write(line + "\n")
        self._in.flush()
        answer = self._out.readline().strip()
        if not answer:
            raise RuntimeError("the upstream exited")
        return answer

    def set(self, mode: str, chunks: int, pace: float) -> None:
        if self._ask(f"{mode} {chunks} {pace}") != "ok":
            raise RuntimeError("the upstream did not take its mode")

    def late(self) -> tuple[float, float, float]:
        """How late its paced events went out since the last call, ms: median, p99, worst."""
        p50, p99, worst = (float(x) for x in self._ask("late").split())
        return p50, p99, worst

    def stop(self) -> None:
        self._in.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._out.close()


class Clients:
    """``count`` client processes (`benchmarks._clients`); a run splits its streams between
    them."""

    def __init__(self, count: int) -> None:
        self.procs = [
            subprocess.Popen(
                [sys.executable, "-m", "benchmarks._clients"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(count)
        ]

    def run(
        self,
        port: int,
        dialect: str,
        streams: int,
        chunks: int,
        timeout: float,
        key: str | None = None,
        *,
        close: bool = False,
        sequential: bool = False,
        probes: int = 0,
    ) -> dict[str, Any]:
        procs = self.procs[:1] if sequential else self.procs
        shares = [streams // len(procs)] * len(procs)
        for i in range(streams % len(procs)):
            shares[i] += 1
        busy = [(p, n) for p, n in zip(procs, shares, strict=True) if n]
        for i, (p, n) in enumerate(busy):
            assert p.stdin is not None
            command = {"port": port, "dialect": dialect, "streams": n, "chunks": chunks,
                       "timeout": timeout, "key": key, "close": close,
                       "sequential": sequential,
                       "probes": probes if i == 0 else 0}  # fmt: skip
            p.stdin.write(json.dumps(command) + "\n")
            p.stdin.flush()
        results = []
        for p, _ in busy:
            assert p.stdout is not None
            line = p.stdout.readline()
            if not line:
                raise RuntimeError("a client process died")
            results.append(json.loads(line))
        outcomes: Counter[str] = Counter()
        reasons: Counter[str] = Counter()
        for r in results:
            outcomes.update(r["outcomes"])
            reasons.update(r["reasons"])
        return {
            "wall": max(r["end"] for r in results) - min(r["start"] for r in results),
            "ttft": [t for r in results for t in r["ttft"]],
            "probe_ttft": [t for r in results for t in r["probe_ttft"]],
            "cpu": sum(r["cpu"] for r in results),
            "busy": max(r["cpu"] / max(r["end"] - r["start"], 1e-9) for r in results),
            "outcomes": outcomes,
            "reasons": reasons,
        }

    def stop(self) -> None:
        for p in self.procs:
            assert p.stdin is not None
            assert p.stdout is not None
            p.stdin.close()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            p.stdout.close()


class Options(NamedTuple):
    streams: tuple[int, ...] = (50, 200, 1000)
    modes: tuple[str, ...] = ("paced", "unpaced")
    pace: float = 0.005  # seconds between two paced events
    chunks: int = 500
    repeat: int = 3
    clients: int = 1
    nginx: str | None = None  # a path, "none", or None: look on PATH and in /usr/sbin
    litellm: str | None = None  # a Python or venv, "none", or None: $SVIR_BENCH_LITELLM
    uvloop: str | None = None  # a Python or venv, "none", or None: $SVIR_BENCH_UVLOOP, ...
    litellm_max_streams: int = 200
    litellm_rounds: int = 1  # LiteLLM takes part in the first rounds only (it takes minutes)
    only: tuple[str, ...] = ()  # lanes to run (direct always runs); (): every one found
    timeout: float = 300.0  # seconds a run may take before its unfinished streams are lost
    ttft_probes: int = 40  # streams one at a time per lane and round, paced (0: none)
    probes: int = 40  # probes one after the other under the load of each run, at most
    close: bool = False  # the clients send Connection: close
    base: str | None = None  # a source tree whose gateway runs the lanes "svir base" (--base)


Results = dict[tuple[str, int], dict[str, list[Run]]]
QUICK = {"streams": (4,), "chunks": 20, "repeat": 1, "ttft_probes": 2, "probes": 2,
         "timeout": 60.0}  # --quick: a smoke run (the test suite's), every lane found  # fmt: skip


class Bench:
    """The processes of one benchmark run: the upstream, the clients, and the contenders of
    the stream count being measured."""

    def __init__(self, o: Options, say: Callable[[str], None]) -> None:
        self.o, self.say = o, say
        self.upstream = Upstream()
        self.clients = Clients(o.clients)
        self.running: dict[str, c.Running] = {}

    def warm_up(self, lanes: list[str]) -> None:
        """Two streams per lane: imports, pools, first connections."""
        self.upstream.set("unpaced", self.o.chunks, 0)
        for lane in lanes:
            self.one(lane, 2, self.o.chunks)

    def one(self, lane: str, count: int, chunks: int, *, sequential: bool = False) -> Run:
        who, dialect = LANES[lane]
        contender = self.running.get(who)
        o = self.o
        pids = contender.pids() if contender is not None else []
        c.reset_peak(pids)
        self.upstream.late()
        cpu, up = c.CPU(pids), c.CPU([self.upstream.proc.pid])
        port = contender.port if contender is not None else self.upstream.port
        key = contender.key if contender is not None else None
        got = self.clients.run(
            port, dialect, count, chunks, o.timeout, key, close=o.close, sequential=sequential,
            probes=0 if sequential else o.probes,
        )  # fmt: skip
        if sequential:  # the probes one at a time are the streams of their scenario
            got["ttft"], got["probe_ttft"] = got["probe_ttft"], []
        return Run(
            wall=got["wall"],
            ttft=got["ttft"],
            probe_ttft=got["probe_ttft"],
            cpu=cpu.seconds(),
            rss=c.peak_rss_mb(pids) if pids else math.nan,
            clients_cpu=got["cpu"],
            clients_busy=got["busy"],
            upstream_cpu=up.seconds(),
            upstream_late=self.upstream.late()[1],
            outcomes=got["outcomes"],
            reasons=got["reasons"],
        )

    def scenario(self, mode: str, count: int, lanes: list[str]) -> dict[str, list[Run]]:
        """``repeat`` rounds of every lane, taking turns, each round starting with the next."""
        o = self.o
        chunks = o.chunks
        self.upstream.set("unpaced" if mode == "unpaced" else "paced", chunks, o.pace)
        runs: dict[str, list[Run]] = {lane: [] for lane in lanes}
        for r in range(o.repeat):
            for lane in lanes[r % len(lanes) :] + lanes[: r % len(lanes)]:
                if LANES[lane][0] == "LiteLLM" and r >= o.litellm_rounds:
                    continue
                got = self.one(lane, count, chunks, sequential=mode == PROBE)
                runs[lane].append(got)
                bad = sum(v for k, v in got.outcomes.items() if k != "ok")
                self.say(
                    f"{mode} {count} round {r + 1}: {lane}: {got.wall:.2f} s, "
                    f"CPU {got.cpu:.2f} s, {len(got.probe_ttft)} probes, {bad} answers differ"
                    + (f" {dict(got.reasons)}" if bad else "")
                )
                contender = self.running.get(LANES[lane][0])
                if bad and contender is not None:
                    for line in contender.tail():
                        self.say(f"    {line}")
        return runs

    def stop_contenders(self) -> None:
        for proc in self.running.values():
            proc.stop()
        self.running = {}

    def stop(self) -> None:
        self.stop_contenders()
        self.clients.stop()
        self.upstream.stop()


def run(options: Options | None = None, log: Callable[[str], None] | None = None) -> str:
    """Run the benchmark; returns its report (``log`` gets progress lines)."""
    o = options or Options()
    say = log or (lambda line: print(line, file=sys.stderr, flush=True))
    files = raise_file_limit()
    nginx_bin = c.find_nginx(o.nginx)
    litellm_py = c.find_litellm(o.litellm)
    uvloop = c.find_uvloop(o.uvloop)
    found = [
        f"open-file limit: {files}; svir gateway on plain asyncio, trio, and "
        + (f"uvloop ({uvloop})" if uvloop else "not uvloop (not installed: --uvloop)"),
        f"nginx: {nginx_bin} ({c.nginx_version(nginx_bin)})" if nginx_bin else
        "nginx: skipped (--nginx none)" if o.nginx == "none" else
        "nginx: not found (on PATH or in /usr/sbin): skipped",
        f"LiteLLM: {litellm_py} (litellm {c.litellm_version(litellm_py)})" if litellm_py else
        "LiteLLM: skipped (--litellm none)" if (o.litellm or os.environ.get(
            "SVIR_BENCH_LITELLM")) == "none" else
        "LiteLLM: litellm.proxy not importable (--litellm, $SVIR_BENCH_LITELLM, .venv-litellm): "
        "skipped",
    ]  # fmt: skip
    for line in found:
        say(line)
    wanted = [
        lane
        for lane, (who, _) in LANES.items()
        if (lane == "direct" or not o.only or lane in o.only)
        and (who != "nginx" or nginx_bin)
        and (who != "LiteLLM" or litellm_py)
        and (who != "svir uvloop" or uvloop)
        and (who != "svir base" or o.base)
    ]
    results: Results = {}
    load = [f"{os.getloadavg()[0]:.2f} ({cpu_pressure()})"]
    bench = Bench(o, say)
    try:
        for n in o.streams:
            lanes = [x for x in wanted if LANES[x][0] != "LiteLLM" or n <= o.litellm_max_streams]
            with tempfile.TemporaryDirectory(prefix="svir-gwbench-") as tmp:
                bench.running = start(lanes, bench.upstream.port, n, Path(tmp), nginx_bin,
                                      litellm_py, uvloop, o.base)  # fmt: skip
                try:
                    bench.warm_up(lanes)
                    scenarios = [(mode, n) for mode in o.modes]
                    if o.ttft_probes and n == o.streams[0]:
                        scenarios.insert(0, (PROBE, o.ttft_probes))
                    for mode, count in scenarios:
                        results[(mode, count)] = bench.scenario(mode, count, lanes)
                        load.append(f"{os.getloadavg()[0]:.2f} ({cpu_pressure()})")
                finally:
                    bench.stop_contenders()
    finally:
        bench.stop()
    return report(results, o, found, load)


def start(
    lanes: list[str],
    upstream: int,
    streams: int,
    tmp: Path,
    nginx_bin: str | None,
    litellm_py: str | None,
    uvloop_py: str | None = None,
    base: str | None = None,
) -> dict[str, c.Running]:
    """Start the contenders of ``lanes`` in front of the upstream, for ``streams`` at once."""
    running: dict[str, c.Running] = {}
    try:
        for who in dict.fromkeys(LANES[lane][0] for lane in lanes):
            if who == "svir base" and base:
                running[who] = c.svir("asyncio", upstream, streams, tmp, base=base)
            elif who == "svir uvloop" and uvloop_py:
                running[who] = c.svir("uvloop", upstream, streams, tmp, uvloop_py)
            elif who.startswith("svir "):
                running[who] = c.svir(who.split()[1], upstream, streams, tmp)
            elif who == "nginx" and nginx_bin:
                running[who] = c.nginx(nginx_bin, upstream, streams, tmp)
            elif who == "LiteLLM" and litellm_py:
                running[who] = c.litellm(litellm_py, upstream, tmp)
    except BaseException:
        for proc in running.values():
            proc.stop()
        raise
    return running


# -- the report -------------------------------------------------------------------------------


class Summary(NamedTuple):
    """One lane in one scenario, over the rounds: (median, lowest, highest) of each."""

    ratio: tuple[float, float, float]
    wall: tuple[float, float, float]
    added_med: tuple[float, float, float]
    added_p95: tuple[float, float, float]
    ttft_med: tuple[float, float, float]
    ttft_p95: tuple[float, float, float]
    probe_med: float  # probes under load, every round's together: ms
    probe_p99: float
    probe_added_med: float  # over direct's probes under the same load
    probe_added_p99: float
    probes: int  # how many probes got a token, every round's together
    cpu_ev: tuple[float, float, float]  # µs per upstream event
    cpu_stream: tuple[float, float, float]  # ms per stream
    rss: tuple[float, float, float]
    clients_ev: tuple[float, float, float]
    clients_busy: float
    upstream_ev: float
    upstream_late: float
    outcomes: Counter[str]
    reasons: Counter[str]


def spread(values: Sequence[float]) -> tuple[float, float, float]:
    vals = [v for v in values if not math.isnan(v)]
    if not vals:
        return (math.nan, math.nan, math.nan)
    return (statistics.median(vals), min(vals), max(vals))


def summarize(
    runs: dict[str, list[Run]], n: int, events: int, probe_events: int
) -> dict[str, Summary]:
    """Each lane over the rounds; ratios and added times against direct's in the same round
    (a lane that skipped rounds, LiteLLM, against direct's first ones)."""
    direct = runs["direct"]
    direct_probes = [t for d in direct for t in d.probe_ttft]
    out = {}
    for lane, rs in runs.items():
        probes = [t for r in rs for t in r.probe_ttft]
        totals = [n * events + len(r.probe_ttft) * probe_events for r in rs]
        outcomes: Counter[str] = Counter()
        reasons: Counter[str] = Counter()
        for r in rs:
            outcomes.update(r.outcomes)
            reasons.update(r.reasons)
        pairs = list(zip(rs, direct, strict=False))  # LiteLLM: its first rounds
        out[lane] = Summary(
            ratio=spread([r.wall / d.wall for r, d in pairs]),
            wall=spread([r.wall for r in rs]),
            added_med=spread([median(r.ttft) - median(d.ttft) for r, d in pairs]),
            added_p95=spread([p95(r.ttft) - p95(d.ttft) for r, d in pairs]),
            ttft_med=spread([median(r.ttft) for r in rs]),
            ttft_p95=spread([p95(r.ttft) for r in rs]),
            probe_med=median(probes),
            probe_p99=p99(probes),
            probe_added_med=median(probes) - median(direct_probes),
            probe_added_p99=p99(probes) - p99(direct_probes),
            probes=len(probes),
            cpu_ev=spread(
                [
                    math.nan if lane == "direct" else r.cpu / t * 1e6
                    for r, t in zip(rs, totals, strict=True)
                ]
            ),
            cpu_stream=spread([math.nan if lane == "direct" else r.cpu / n * 1e3 for r in rs]),
            rss=spread([r.rss for r in rs]),
            clients_ev=spread([r.clients_cpu / t * 1e6 for r, t in zip(rs, totals, strict=True)]),
            clients_busy=max(r.clients_busy for r in rs),
            upstream_ev=median([r.upstream_cpu / t * 1e6 for r, t in zip(rs, totals, strict=True)]),
            upstream_late=max(r.upstream_late for r in rs),
            outcomes=outcomes,
            reasons=reasons,
        )
    return out


def fmt(v: float, digits: int = 2) -> str:
    return "-" if math.isnan(v) else f"{v:.{digits}f}"


def fmt_spread(s: tuple[float, float, float], digits: int = 2, unit: str = "") -> str:
    if math.isnan(s[0]):
        return "-"
    if f"{s[1]:.{digits}f}" == f"{s[2]:.{digits}f}":
        return f"{s[0]:.{digits}f}{unit}"
    return f"{s[0]:.{digits}f}{unit} ({s[1]:.{digits}f}-{s[2]:.{digits}f})"


def bad(outcomes: Counter[str]) -> str:
    return "/".join(str(outcomes.get(k, 0)) for k in ("lost", "duplicated", "reordered", "differs"))


def scenario_table(mode: str, n: int, s: dict[str, Summary], o: Options) -> str:
    """Every lane of one scenario, with the spread over the rounds."""
    rows = []
    for lane, x in s.items():
        direct = lane == "direct"
        rows.append(
            [
                lane,
                fmt_spread(x.wall, 2, " s"),
                "1" if direct else fmt_spread(x.ratio, 2, "x"),
                f"{fmt(x.ttft_med[0])} / {fmt(x.ttft_p95[0])}",
                "-" if direct else f"{fmt(x.added_med[0])} / {fmt(x.added_p95[0])}",
                f"{fmt(x.probe_med)} / {fmt(x.probe_p99)} ({x.probes})" if x.probes else "-",
                "-" if direct else fmt_spread(x.cpu_stream if mode == PROBE else x.cpu_ev, 1),
                "-" if direct else fmt_spread(x.rss, 1),
                bad(x.outcomes),
                f"{fmt(x.clients_ev[0], 1)} ({x.clients_busy:.0%})",
                fmt(x.upstream_late, 1) if mode != "unpaced" else "-",
            ]
        )
    pace = f", one event every {o.pace * 1000:g} ms" if mode != "unpaced" else ""
    if mode == PROBE:
        head = (
            f"paced{pace}: {n} probes one after the other (time to first token without "
            f"load), {PROBE_CHUNKS} chunks each, {o.repeat} rounds"
        )
    else:
        head = (
            f"{mode}{pace}: {n} streams at once, {o.chunks} chunks each, and up to "
            f"{o.probes} probes of {PROBE_CHUNKS} chunks one after the other under their "
            f"load; {o.repeat} rounds"
        )
    headers = ["lane", "wall", "x direct", "TTFT ms med / p95", "added med / p95",
               "probes under load TTFT p50 / p99 (count)",
               "CPU ms/stream" if mode == PROBE else "CPU µs/event", "peak RSS MB",
               "lost/dup/reord/diff",
               "clients µs/event (busiest)", "upstream late ms"]  # fmt: skip
    notes = [f"  {lane}: {dict(x.reasons)}" for lane, x in s.items() if sum(x.reasons.values())]
    up = s["direct"].upstream_ev
    return "\n".join([head, table(headers, rows), f"upstream CPU: {fmt(up, 1)} µs per event",
                      *notes])  # fmt: skip


def verdicts(checks: dict[str, bool | None]) -> str:
    return " · ".join(
        f"{name} {'-' if ok is None else 'yes' if ok else 'NO'}" for name, ok in checks.items()
    )


SHORT = {lane: lane.removeprefix("svir ").replace(" LS", "") + (" LS" if "LS" in lane else "")
         for lane in SVIR}  # fmt: skip
COLUMNS = ("nginx", "svir asyncio", "svir base", "svir uvloop", "svir trio", "LiteLLM")
NOISE = 0.1  # ms: an added time to first token below this is within the clock's noise


def cells(
    s: dict[str, Summary], get: Callable[[Summary], str], columns: Sequence[str] = COLUMNS
) -> list[str]:
    """One cell per column; a svir cell carries its LLM-Stream lane beside it."""
    out = []
    for lane in columns:
        text = get(s[lane]) if lane in s else ""
        if lane.startswith("svir ") and f"{lane} LS" in s:
            text += f" (LS {get(s[lane + ' LS'])})"
        out.append(text.strip())
    return out


def holds(s: dict[str, Summary], ok: Callable[[str, Summary], bool | None]) -> str:
    return verdicts({SHORT[lane]: ok(lane, s[lane]) for lane in SVIR if lane in s})


def times(a: float, b: float) -> str:
    """``a`` as a multiple of ``b``."""
    return "" if math.isnan(a) or math.isnan(b) or b <= 0 else f" {a / b:.1f}x"


def ttft_row(mode: str, n: int, s: dict[str, Summary]) -> list[str]:
    """Unloaded probes: what a contender adds to direct's time to first token."""
    d = s["direct"]
    values = cells(s, lambda x: f"{fmt(x.added_med[0])} / {fmt(x.added_p95[0])}")
    direct = f"({fmt(d.ttft_med[0])} / {fmt(d.ttft_p95[0])})"
    nginx = max(s["nginx"].added_med[0], NOISE) if "nginx" in s else math.nan
    return [
        f"added TTFT ms, med / p95, {n} probes one at a time", direct, *values,
        f"≤ 2x nginx med = {fmt(2 * nginx)}" if "nginx" in s else "≤ 2x nginx's (no nginx)",
        holds(s, lambda _, x: None if math.isnan(nginx) else x.added_med[0] <= 2 * nginx),
    ]  # fmt: skip


def probe_row(mode: str, n: int, s: dict[str, Summary]) -> list[str]:
    """Probes under load: their time to first token, and as a multiple of nginx's."""
    d = s["direct"]
    ng = s["nginx"].probe_med if "nginx" in s else math.nan
    values = cells(s, lambda x: f"{fmt(x.probe_med)} / {fmt(x.probe_p99)}"
                   + (times(x.probe_med, ng) if x is not s.get("nginx") else ""))  # fmt: skip
    direct = f"{fmt(d.probe_med)} / {fmt(d.probe_p99)}" if d.probes else "(no probe)"
    nginx = max(s["nginx"].probe_added_med, NOISE) if "nginx" in s else math.nan
    ok = not math.isnan(nginx) and d.probes
    return [
        f"probe TTFT ms under load, p50 / p99, {mode} {n}", direct, *values,
        f"added p50 ≤ 2x nginx's = {fmt(2 * nginx)}" if ok else "added p50 ≤ 2x nginx's",
        holds(s, lambda _, x: x.probe_added_med <= 2 * nginx if ok and x.probes else None),
    ]  # fmt: skip


def request_row(n: int, s: dict[str, Summary]) -> list[str]:
    """What a request costs beside its events: the probes' CPU per stream (14 events)."""
    values = cells(s, lambda x: fmt(x.cpu_stream[0]))
    return [f"CPU ms per request, {n} probes one at a time", "", *values, "-", ""]


def cpu_row(mode: str, n: int, s: dict[str, Summary]) -> list[str]:
    ng = s["nginx"].cpu_ev[0] if "nginx" in s else math.nan
    values = cells(s, lambda x: fmt(x.cpu_ev[0], 1)
                   + (times(x.cpu_ev[0], ng) if x is not s.get("nginx") else ""))  # fmt: skip
    if mode == "unpaced":
        return [
            f"CPU µs per event, unpaced {n}", "", *values, "≤ 3 (LS ≤ 4)",
            holds(s, lambda lane, x: x.cpu_ev[0] <= (4 if "LS" in lane else 3)),
        ]  # fmt: skip
    return [
        f"CPU µs per event, paced {n}", "", *values,
        f"≤ 3x nginx = {fmt(3 * ng, 1)}" if "nginx" in s else "≤ 3x nginx's (no nginx)",
        holds(s, lambda _, x: None if math.isnan(ng) else x.cpu_ev[0] <= 3 * ng),
    ]  # fmt: skip


WALL_TARGETS = {200: (1.2, math.inf), 1000: (1.5, 100.0)}  # paced: (x direct, MB)


def wall_row(mode: str, n: int, s: dict[str, Summary]) -> list[str]:
    values = cells(s, lambda x: f"{fmt(x.ratio[0])}x, {fmt(x.rss[0], 1)} MB")
    direct = f"({fmt(s['direct'].wall[0])} s)"
    if mode != "paced" or n not in WALL_TARGETS:
        return [f"wall over direct, peak RSS, {mode} {n}", direct, *values, "-", ""]
    ratio, mb = WALL_TARGETS[n]
    target = f"≤ {ratio}x" + (f", < {mb:g} MB" if mb < math.inf else "")
    return [
        f"wall over direct, peak RSS, paced {n}", direct, *values, target,
        holds(s, lambda _, x: x.ratio[0] <= ratio and x.rss[0] < mb),
    ]  # fmt: skip


def summary_table(sums: dict[tuple[str, int], dict[str, Summary]]) -> str:
    """Issue 20's table: nginx, svir, LiteLLM; the targets and whether each holds."""
    loaded = [(key, s) for key, s in sums.items() if key[0] != PROBE]
    rows = [ttft_row(mode, n, s) for (mode, n), s in sums.items() if mode == PROBE]
    rows += [probe_row(mode, n, s) for (mode, n), s in loaded]
    rows += [request_row(n, s) for (mode, n), s in sums.items() if mode == PROBE]
    rows += [cpu_row(mode, n, s) for (mode, n), s in loaded]
    rows += [wall_row(mode, n, s) for (mode, n), s in loaded]
    total: dict[str, Summary] = {}
    for s in sums.values():
        for lane, x in s.items():
            if lane in total:
                total[lane].outcomes.update(x.outcomes)
            else:
                total[lane] = x._replace(outcomes=Counter(x.outcomes))
    rows.append(
        [
            "answers lost/dup/reord/diff, all runs",
            bad(total["direct"].outcomes),
            *cells(total, lambda x: bad(x.outcomes)),
            "0/0/0/0",
            holds(total, lambda _, x: sum(v for k, v in x.outcomes.items() if k != "ok") == 0),
        ]
    )
    columns = [c for c in COLUMNS if c in total]
    keep = [0, 1, *(2 + COLUMNS.index(c) for c in columns), 2 + len(COLUMNS), 3 + len(COLUMNS)]
    return table(["", "direct", *columns, "target", "holds"],
                 [[row[i] for i in keep] for row in rows])  # fmt: skip


def behind(sums: dict[tuple[str, int], dict[str, Summary]], o: Options) -> list[str]:
    """A warning for each paced scenario whose upstream could not keep its schedule even
    direct: the machine was too busy, and the lanes' ratios say less."""
    out = []
    for (mode, n), s in sums.items():
        late = s["direct"].upstream_late
        if mode != "unpaced" and late > 2 * o.pace * 1000:
            out.append(
                f"warning: paced {n}: the upstream fell behind its schedule even direct "
                f"(99th percentile {late:.1f} ms late): the machine was too busy to pace "
                "every stream, so events came several to a read"
            )
    return out


def report(results: Results, o: Options, found: list[str], load: list[str]) -> str:
    events, probe_events = len(frames(o.chunks)) - 1, len(frames(PROBE_CHUNKS)) - 1
    sums = {
        key: summarize(runs, key[1], probe_events if key[0] == PROBE else events, probe_events)
        for key, runs in results.items()
    }
    wrong: Counter[str] = Counter()
    for s in sums.values():
        for x in s.values():
            wrong.update(x.outcomes)
    compared = sum(wrong.values())
    return "\n".join(
        [
            *found,
            f"{o.chunks} chunks per answer ({events} upstream events), paced every "
            f"{o.pace * 1000:g} ms; {o.repeat} rounds; {o.clients} client process(es)"
            + ("; the clients send Connection: close" if o.close else ""),
            f"load average (CPU pressure): {', '.join(load)} (at the start, then after each "
            "scenario)",
            "",
            "Issue 20's table (medians over the rounds; LS: LLM-Stream out; direct: absolute)",
            summary_table(sums),
            *behind(sums, o),
            "",
            *[scenario_table(mode, n, s, o) + "\n" for (mode, n), s in sums.items()],
            f"answers compared with the upstream's: {compared}, lost {wrong['lost']}, "
            f"duplicated {wrong['duplicated']}, reordered {wrong['reordered']}, "
            f"different {wrong['differs']}",
        ]
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    d = Options()
    ints = lambda s: tuple(int(x) for x in s.split(","))  # noqa: E731
    words = lambda s: tuple(x.strip() for x in s.split(",") if x.strip())  # noqa: E731
    ap.add_argument("--streams", type=ints, default=d.streams, help="stream counts: 50,200,1000")
    ap.add_argument("--mode", type=words, default=d.modes, help="paced,unpaced")
    ap.add_argument("--pace", type=float, default=d.pace * 1000, help="ms between paced events")
    ap.add_argument("--chunks", type=int, default=d.chunks, help="content chunks per answer")
    ap.add_argument("--repeat", type=int, default=d.repeat, help="rounds per scenario")
    ap.add_argument("--clients", type=int, default=d.clients, help="client processes")
    ap.add_argument("--nginx", help="the nginx binary (default: on PATH); none: skip it")
    ap.add_argument("--litellm", help="a Python (or venv) with litellm[proxy] (default: "
                    "$SVIR_BENCH_LITELLM, this one, .venv-litellm); none: skip it")  # fmt: skip
    ap.add_argument("--uvloop", help="a Python (or venv) with uvloop and svir-proto (default: "
                    "$SVIR_BENCH_UVLOOP, this one, .venv-uvloop); none: skip it")  # fmt: skip
    ap.add_argument("--litellm-max-streams", type=int, default=d.litellm_max_streams,
                    help="LiteLLM only up to this many streams (it is slow)")  # fmt: skip
    ap.add_argument("--only", type=words, default=(), help=f"lanes, of: {', '.join(LANES)}")
    ap.add_argument("--timeout", type=float, default=d.timeout, help="seconds a run may take")
    ap.add_argument("--ttft-probes", type=int, default=d.ttft_probes,
                    help="paced streams one at a time per lane and round, for time to first "
                    "token without load (0: none)")  # fmt: skip
    ap.add_argument("--probes", type=int, default=d.probes,
                    help="probes one after the other under each run's load, at most")  # fmt: skip
    ap.add_argument("--litellm-rounds", type=int, default=d.litellm_rounds,
                    help="LiteLLM takes part in this many rounds only (it is slow)")  # fmt: skip
    ap.add_argument("--close", action="store_true", help="the clients send Connection: close")
    ap.add_argument("--base", help="a source tree (a checkout of another commit: git worktree "
                    "add --detach, or git archive) whose svir_proto runs the lanes 'svir base' "
                    "and 'svir base LS' on plain asyncio, beside this tree's, taking turns: a "
                    "change measured in one run")  # fmt: skip
    ap.add_argument("--quick", action="store_true",
                    help="a smoke run, seconds long: " + ", ".join(
                        f"--{k.replace('_', '-')} {v}" for k, v in QUICK.items()))  # fmt: skip
    a = ap.parse_args(argv)
    if a.quick:
        for k, v in QUICK.items():
            if getattr(a, k) == getattr(d, k, None):
                setattr(a, k, v)
    for mode in a.mode:
        if mode not in ("paced", "unpaced"):
            ap.error(f"--mode: {mode!r} is neither paced nor unpaced")
    for lane in a.only:
        if lane not in LANES:
            ap.error(f"--only: no lane {lane!r}")
    options = Options(
        streams=a.streams, modes=a.mode, pace=a.pace / 1000, chunks=a.chunks, repeat=a.repeat,
        clients=a.clients, nginx=a.nginx, litellm=a.litellm, uvloop=a.uvloop,
        litellm_max_streams=a.litellm_max_streams, only=a.only, timeout=a.timeout,
        ttft_probes=a.ttft_probes, close=a.close, probes=a.probes,
        litellm_rounds=a.litellm_rounds, base=a.base,
    )  # fmt: skip
    started = time.monotonic()
    print(run(options))
    print(f"(the benchmark took {time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
