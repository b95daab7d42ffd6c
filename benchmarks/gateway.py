"""The gateway under load, over loopback only, bounded in count and time.

    python -m benchmarks.gateway [--streams 200] [--chunks 500] [--backend asyncio]

Three processes: a replaying upstream (`benchmarks._server`: one seeded answer of ``--chunks``
chunks per request, one HTTP chunk per event), ``svir gateway`` in front of it, and the clients:
``--streams`` streams at once on anyio, half of them LLM-Stream, half OpenAI. Every answer is
decoded and compared with the answer decoded directly from the upstream's bytes: no event lost,
duplicated or reordered. Then the same streams go to the upstream directly.

Reported: wall time both ways, the gateway process's CPU per forwarded event (from
/proc/PID/stat), and its peak resident memory (VmHWM). Targets (issue 11): at most 20 µs of
gateway CPU per forwarded event, and 200 streams held with RSS under 100 MB.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from benchmarks.streams import openai_stream
from svir_proto import LLMMessage, LLMRequest
from svir_proto.openai import ChatRequest, ChatStreamDecoder, UserMessage
from svir_proto.transports import anyio as anyio_transport
from svir_proto.transports._shared import Timeouts

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(port: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


async def streams(base: str, count: int, expected: str) -> tuple[int, int]:
    """``count`` streams at once; returns (events received, answers that differ)."""
    chat = ChatRequest(model="m", messages=[UserMessage(content="hi")], include_usage=True)
    llm = LLMRequest(model="m", messages=[LLMMessage(role="user", content="hi")])
    totals = [0, 0]

    async def one(i: int) -> None:
        request: Any = llm if i % 2 else chat
        client = anyio_transport.Client(
            base, retries=0, timeouts=Timeouts(first_byte=120, read=120)
        )
        async with client:
            n = 0
            async with client.stream_chat(request) as stream:
                async for _ in stream:
                    n += 1
            totals[0] += n
            result = stream.result
            if result.text != expected or not result.complete:
                totals[1] += 1

    async with anyio.create_task_group() as tg:
        for i in range(count):
            tg.start_soon(one, i)
    return totals[0], totals[1]


def run(streams_n: int, chunks: int, backend: str) -> str:
    body = openai_stream(chunks)
    direct = ChatStreamDecoder()
    direct.feed(body)
    direct.close()
    expected = direct.result.text
    upstream = subprocess.Popen(
        [sys.executable, "-m", "benchmarks._server", str(chunks), "bulk"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert upstream.stdout is not None
    up_port = int(upstream.stdout.readline())
    gw_port = free_port()
    gateway = subprocess.Popen(
        [sys.executable, "-m", "svir_proto.cli", "gateway", "--upstream",
         f"http://127.0.0.1:{up_port}", "--listen", f"127.0.0.1:{gw_port}",
         "--max-streams", str(streams_n + 8), "--backend", backend],
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for(gw_port)
        anyio.run(streams, f"http://127.0.0.1:{gw_port}/v1", 2, expected)  # warm up
        cpu0 = cpu_seconds(gateway.pid)
        start = time.perf_counter()
        got, wrong = anyio.run(streams, f"http://127.0.0.1:{gw_port}/v1", streams_n, expected)
        through = time.perf_counter() - start
        gw_cpu = cpu_seconds(gateway.pid) - cpu0
        rss = peak_rss_mb(gateway.pid)
        start = time.perf_counter()
        direct_got, direct_wrong = anyio.run(
            streams, f"http://127.0.0.1:{up_port}/v1", streams_n, expected
        )
        direct_wall = time.perf_counter() - start
    finally:
        gateway.terminate()
        gateway.wait()
        upstream.kill()
        upstream.wait()
        upstream.stdout.close()
    forwarded = streams_n * (chunks + 3)  # each upstream event: the chunks, finish, usage, end
    return "\n".join(
        [
            f"{streams_n} streams at once of {chunks} chunks, half LLM-Stream, half OpenAI "
            f"(gateway on {backend})",
            f"answers that differ from the upstream's: {wrong} through the gateway, "
            f"{direct_wrong} direct",
            f"events received: {got} through the gateway, {direct_got} direct",
            f"wall: {through:.2f} s through the gateway, {direct_wall:.2f} s direct",
            f"gateway CPU: {gw_cpu:.2f} s, {gw_cpu / forwarded * 1e6:.1f} us per forwarded event",
            f"gateway peak RSS: {rss:.1f} MB",
        ]
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--streams", type=int, default=200)
    ap.add_argument("--chunks", type=int, default=500)
    ap.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    args = ap.parse_args(argv)
    print(run(args.streams, args.chunks, args.backend))


if __name__ == "__main__":
    main()
