"""The gateway's own CPU, without sockets: one `GatewaySession` per request, driven in process.

    .venv/bin/python -m benchmarks.gateway_session [--requests 2000] [--chunks 500]
        [--read-size 65536] [--repeat 5] [--dialect openai,llmstream]
        [--profile tottime|cumulative] [--workload request|read|unpaced]

What `benchmarks.gateway` measures through the kernel and an event loop, with the loop, the
syscalls and the other processes taken away: the sans-IO part that every backend runs, so that
a change to the session, the connection or the decoders shows in a number that a busy 2-core
machine does not drown. Two figures per client dialect (OpenAI relayed, LLM-Stream translated):

- **per request**: a client's request read (head and body), the upstream connection taken
  from the pool (the `Release` of the previous request gives it back), the request written,
  and the benchmark upstream's short answer (its head and `benchmarks._upstream.PROBE_CHUNKS`
  events in one read) relayed or translated: what a request costs besides its events;
- **per read**: an answer of ``--chunks`` events, one upstream read per event (a model
  streaming tokens: every event is its own read), the request's own cost spread over them;
- **per event, unpaced**: the same answer in reads of ``--read-size`` bytes (64 KiB: an
  upstream that streams faster than the gateway reads, whose reads end anywhere, nearly always
  inside an event and inside an HTTP chunk), the request's own cost spread over its events.

The best of ``--repeat`` runs (process CPU time); ``--profile`` prints cProfile's view of one
run instead. The answers are the upstream's, byte for byte as `benchmarks._upstream` sends them.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from collections.abc import Sequence

from benchmarks._clients import request
from benchmarks._server import frames
from benchmarks._timing import table
from benchmarks._upstream import HEAD, PROBE_CHUNKS
from svir_proto.connection import ClientConnection
from svir_proto.gateway.config import GatewayConfig, GatewayState
from svir_proto.gateway.session import GatewaySession, Release
from svir_proto.openai.endpoint import Endpoint


class Driver:
    """One gateway's state and its pool of one upstream connection, for the requests of one
    client dialect."""

    def __init__(self, dialect: str) -> None:
        config = GatewayConfig(upstream=Endpoint.parse("http://127.0.0.1:9/v1"))
        self.state = GatewayState(config, new_id=lambda: "req-0", wall=lambda now: 1764460800)
        client = ClientConnection(Endpoint.parse("http://127.0.0.1:8787/v1"))
        self.wire = b"".join(client.send(request(dialect)))
        self.pool: list[ClientConnection] = []
        self.written = 0

    def one(self, reads: Sequence[bytes], now: float = 1.0) -> None:
        """A request on a new client connection, answered by ``reads``; the client closes."""
        session = GatewaySession(self.state, now)
        written = len(session.client_data(self.wire, now))
        session.actions.clear()
        written += len(session.upstream_connected(now, self.pool.pop() if self.pool else None))
        session.actions.clear()
        actions = session.actions
        for data in reads:
            written += len(session.upstream_data(data, now))
            if actions:
                for action in actions:
                    if type(action) is Release and action.connection is not None:
                        self.pool.append(action.connection)
                actions.clear()
        session.client_data(b"", now)
        self.written += written


def best(run: Driver, reads: Sequence[bytes], count: int, repeat: int) -> float:
    """The least process CPU seconds per request over ``repeat`` runs of ``count``."""
    times = []
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(count):
            run.one(reads)
        times.append((time.process_time() - start) / count)
    return min(times)


def workloads(chunks: int, read_size: int = 65536) -> dict[str, list[bytes]]:
    probe = frames(PROBE_CHUNKS)
    long = frames(chunks)
    wire = HEAD + b"".join(long)
    return {
        "request": [HEAD + b"".join(probe)],  # the head and every event in one read
        "read": [HEAD + long[0], *long[1:]],  # one read per event
        "unpaced": [wire[i : i + read_size] for i in range(0, len(wire), read_size)],
    }


def run(
    requests: int = 2000,
    chunks: int = 500,
    repeat: int = 5,
    dialects: Sequence[str] = ("openai", "llmstream"),
    read_size: int = 65536,
) -> str:
    work = workloads(chunks, read_size)
    events = len(work["read"]) - 1
    rows = []
    for dialect in dialects:
        driver = Driver(dialect)
        for reads in work.values():
            for _ in range(20):  # warm: imports, the pool, the decoders' caches
                driver.one(reads)
        per_request = best(driver, work["request"], requests, repeat)
        reads = work["read"]
        per_read = best(driver, reads, max(1, requests // len(reads)), repeat) / len(reads)
        unpaced = best(driver, work["unpaced"], max(1, requests // events), repeat) / events
        out = "OpenAI, relayed" if dialect == "openai" else "LLM-Stream, translated"
        rows.append(
            [out, f"{per_request * 1e6:.1f}", f"{per_read * 1e6:.2f}", f"{unpaced * 1e6:.2f}"]
        )
    head = [
        "client (upstream: OpenAI)",
        f"µs per request (head + {PROBE_CHUNKS} events in one read)",
        f"µs per read (one event each, {events} events)",
        f"µs per event, unpaced ({len(work['unpaced'])} reads of {read_size} B)",
    ]
    return table(head, rows)


def profile(
    dialect: str, chunks: int, requests: int, sort: str, read_size: int, only: str | None
) -> None:
    work = workloads(chunks, read_size)
    driver = Driver(dialect)
    for reads in work.values():
        for _ in range(20):
            driver.one(reads)
    profiler = cProfile.Profile()
    profiler.enable()
    if only in (None, "request"):
        for _ in range(requests):
            driver.one(work["request"])
    for name in ("read", "unpaced"):
        if only in (None, name):
            for _ in range(max(1, requests // (len(work["read"]) - 1))):
                driver.one(work[name])
    profiler.disable()
    pstats.Stats(profiler, stream=sys.stdout).sort_stats(sort).print_stats(40)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--chunks", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dialect", default="openai,llmstream")
    ap.add_argument("--read-size", type=int, default=65536, help="bytes per unpaced read")
    ap.add_argument("--profile", choices=["tottime", "cumulative"])
    ap.add_argument("--workload", choices=["request", "read", "unpaced"], help="to profile")
    a = ap.parse_args(argv)
    dialects = [d for d in a.dialect.split(",") if d]
    if a.profile:
        profile(dialects[0], a.chunks, a.requests, a.profile, a.read_size, a.workload)
        return
    print(run(a.requests, a.chunks, a.repeat, dialects, a.read_size))


if __name__ == "__main__":
    main()
