"""End to end over loopback: each transport beside openai-python's client and httpx + httpx-sse.

    python -m benchmarks.transport [--chunks 20000] [--repeat 7]

A server in its own process (`benchmarks._server`) streams a seeded 20,000-chunk answer, one
HTTP chunk per event, in 64 KiB writes (``bulk``) and one write per event (``flushed``). Each
client sends the request and reads the answer to the end; we take the client's CPU time
(``time.process_time``: the server's is not counted) and wall time, per event. Beside them, the
bare decoder: `ChatStreamDecoder` fed the same body in 64 KiB pieces, no I/O. The clients take
turns in every round; ratios are medians of per-round ratios.

- openai-python: ``client.chat.completions.create(stream=True)``, consumed to the end, as its
  users run it (typed chunks; no accumulation).
- httpx + httpx-sse: ``EventSource.iter_sse()`` and ``json.loads`` of each event's data, the
  least a consumer of that pair writes.
- httpcore alone: its pool reads the body to the end and nothing decodes it: what the httpcore
  and httpx transports pay before our code sees a byte (h11 inside it yields one piece per
  HTTP chunk).

Targets (issue 9): at least 10x less CPU per event than openai-python end to end, and a
transport at most 30 % over the bare decoder.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import anyio
import httpcore
import httpx

from benchmarks._timing import main as bench_main
from benchmarks._timing import table
from benchmarks.streams import openai_stream
from svir_proto.openai import ChatRequest, ChatStreamDecoder, Endpoint, UserMessage
from svir_proto.transports import anyio as anyio_transport
from svir_proto.transports import blocking
from svir_proto.transports import httpcore as httpcore_transport
from svir_proto.transports import httpx as httpx_transport

REQUEST = ChatRequest(model="m", messages=[UserMessage(content="hi")], include_usage=True)
Timed = tuple[int, float, float]  # events, CPU seconds, wall seconds


def start(chunks: int, mode: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmarks._server", str(chunks), mode],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    port = proc.stdout.readline().strip()
    return proc, f"http://127.0.0.1:{port}/v1"


def clients(base: str, body: bytes) -> tuple[dict[str, Callable[[], Timed]], Callable[[], None]]:
    """The clients, and what closes them."""
    endpoint = Endpoint.parse(base)
    block = blocking.Client(endpoint)
    pool = httpcore_transport.Client(endpoint)
    http = httpx.Client()
    via_httpx = httpx_transport.Client(endpoint, http)
    import openai

    oai = openai.OpenAI(base_url=base, api_key="sk", max_retries=0)

    def count(stream: Any) -> int:
        with stream:
            return sum(1 for _ in stream)

    def bare() -> int:
        d = ChatStreamDecoder(expect_usage=True)
        n = 0
        for i in range(0, len(body), 65536):
            n += len(d.feed(body[i : i + 65536]))
        return n + len(d.close())

    def on_anyio(backend: str) -> Callable[[], Timed]:
        async def go() -> Timed:
            # timed inside the event loop: starting a loop is not the transport's cost
            c, w = time.process_time(), time.perf_counter()
            async with anyio_transport.Client(endpoint) as client:
                n = 0
                async with client.stream_chat(REQUEST) as stream:
                    async for _ in stream:
                        n += 1
            return n, time.process_time() - c, time.perf_counter() - w

        return lambda: anyio.run(go, backend=backend)

    def openai_python() -> int:
        stream = oai.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        return sum(1 for _ in stream)

    raw_pool = httpcore.ConnectionPool()
    body_bytes = REQUEST.body().read()

    def httpcore_alone() -> int:
        """httpcore's own cost: the request, and the body read to the end, undecoded."""
        headers = [("Host", endpoint.authority), ("Content-Type", "application/json")]
        with raw_pool.stream(
            "POST", base + "/chat/completions", headers=headers, content=body_bytes
        ) as r:
            return sum(1 for _ in r.iter_stream())

    def httpx_sse() -> int:
        from httpx_sse import connect_sse

        n = 0
        payload = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
        with connect_sse(http, "POST", base + "/chat/completions", json=payload) as source:
            for sse in source.iter_sse():
                if sse.data != "[DONE]":
                    json.loads(sse.data)
                n += 1
        return n

    def close() -> None:
        block.close()
        pool.close()
        raw_pool.close()
        http.close()
        oai.close()

    return {
        "bare decoder (no I/O)": timed(bare),
        "svir blocking": timed(lambda: count(block.stream_chat(REQUEST))),
        "svir anyio (asyncio)": on_anyio("asyncio"),
        "svir anyio (trio)": on_anyio("trio"),
        "svir httpcore": timed(lambda: count(pool.stream_chat(REQUEST))),
        "svir httpx": timed(lambda: count(via_httpx.stream_chat(REQUEST))),
        "httpcore alone (no decoding)": timed(httpcore_alone),
        "httpx + httpx-sse": timed(httpx_sse),
        "openai-python": timed(openai_python),
    }, close


def timed(fn: Callable[[], int]) -> Callable[[], Timed]:
    def run() -> Timed:
        c, w = time.process_time(), time.perf_counter()
        n = fn()
        return n, time.process_time() - c, time.perf_counter() - w

    return run


def measure(
    fns: dict[str, Callable[[], Timed]], repeat: int
) -> dict[str, list[tuple[float, float]]]:
    """(CPU seconds, wall seconds) per round, the clients taking turns."""
    names = list(fns)
    rounds: dict[str, list[tuple[float, float]]] = {n: [] for n in names}
    for r in range(repeat):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            _, cpu, wall = fns[name]()
            rounds[name].append((cpu, wall))
    return rounds


def median(xs: list[float]) -> float:
    s = sorted(xs)
    return s[len(s) // 2]


def run(chunks: int, repeat: int) -> str:
    body = openai_stream(chunks)
    events = chunks + 4
    out = [f"{chunks} chunks, {len(body) / 1e6:.2f} MB, one HTTP chunk per event, over loopback"]
    for mode in ("bulk", "flushed"):
        proc, base = start(chunks, mode)
        try:
            fns, close = clients(base, body)
            try:
                for fn in fns.values():
                    fn()  # warm up: imports, first connections
                rounds = measure(fns, repeat)
            finally:
                close()
        finally:
            proc.kill()
            proc.wait()
            assert proc.stdout is not None
            proc.stdout.close()
        bare = rounds["bare decoder (no I/O)"]
        oai = rounds["openai-python"]
        rows = []
        for name, rs in rounds.items():
            cpu = median([c for c, _ in rs])
            wall = median([w for _, w in rs])
            over_bare = median([c / b[0] for (c, _), b in zip(rs, bare, strict=True)])
            vs_oai = median([o[0] / c for (c, _), o in zip(rs, oai, strict=True)])
            rows.append(
                [
                    name,
                    f"{wall * 1e3:.0f}",
                    f"{cpu / events * 1e6:.2f}",
                    f"{over_bare:.2f}x",
                    f"{vs_oai:.1f}x",
                ]
            )
        header = ["client", "wall ms", "CPU us/event", "CPU / bare decoder", "openai / this"]
        out.append(f"\nserver writes: {mode}\n" + table(header, rows))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    bench_main(run, __doc__, argv)


if __name__ == "__main__":
    main()
