"""A soak of the gateway (issue 16): many concurrent streams for a while, a share of the clients
and of the upstream's answers misbehaving, over loopback only.

    python -m benchmarks.soak [--seconds 30] [--streams 1000] [--backend asyncio] [--pace 0.02]

Three processes: a paced upstream (this module with ``--upstream``: asyncio, one HTTP chunk per
event, ``--pace`` seconds between events), ``svir gateway`` in front of it, and the clients
(this process, asyncio, raw sockets): ``--streams`` of them at once, each making requests one
after the other until ``--seconds`` have passed, half LLM-Stream and half OpenAI. Each request
draws what its client does and what the upstream does:

- clients: 70 % read their answer whole; 10 % reset their connection mid-stream; 10 % stop
  reading (the gateway's ``--send-timeout`` must end them); 10 % trickle their head a few
  bytes at a time before reading normally;
- the upstream (chosen by the request's ``X-Request-Id``): 90 % answer whole; 5 % reset mid-
  stream; 5 % stall mid-stream (the gateway's ``--timeout`` must end them).

Reported: streams completed (a normal client of a normal answer must get it whole: any other
outcome is counted as lost), the other outcomes, the gateway's peak RSS (VmHWM), its CPU per
forwarded event (/proc/PID/stat over ``/metrics``'s ``events_forwarded``), and, once every
client is gone, the stream slots and body-budget bytes left held (``/metrics``: both must be
0). The file limit is raised to its hard limit first (each stream holds three sockets).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")
EVENTS = 40
TEXT_PIECE = "tok "


def raise_file_limit() -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else 1 << 20
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# -- the upstream ----------------------------------------------------------------------------


def _event(i: int) -> bytes:
    obj = {
        "id": "chatcmpl-soak",
        "object": "chat.completion.chunk",
        "created": 1764460800,
        "model": "soak",
        "choices": [{"index": 0, "delta": {"content": TEXT_PIECE}, "finish_reason": None}],
    }
    data = b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(data), data)


_FINISH = json.dumps(
    {
        "id": "chatcmpl-soak",
        "object": "chat.completion.chunk",
        "created": 1764460800,
        "model": "soak",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    },
    separators=(",", ":"),
).encode()
_END = b"data: " + _FINISH + b"\n\n"
TAIL = b"%x\r\n%s\r\n" % (len(_END), _END) + b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n"
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


async def _upstream_conn(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    chunks = [_event(i) for i in range(EVENTS)]
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            fields = {}
            for line in head.split(b"\r\n")[1:]:
                k, _, v = line.partition(b":")
                fields[k.strip().lower()] = v.strip()
            await reader.readexactly(int(fields.get(b"content-length", b"0")))
            rid = fields.get(b"x-request-id", b"").decode()
            kind, _, pace_s = rid.partition(":")
            pace = float(pace_s.split("~")[0] or 0) if pace_s else 0.0
            writer.write(HEAD)
            for i, c in enumerate(chunks):
                if i == EVENTS // 2 and kind == "reset":
                    sock = writer.get_extra_info("socket")
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    writer.transport.abort()
                    return
                if i == EVENTS // 2 and kind == "stall":
                    await reader.read()  # until the gateway gives up on it
                    return
                writer.write(c)
                await writer.drain()
                if pace:
                    await asyncio.sleep(pace)
            writer.write(TAIL)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, OSError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.transport.abort()


async def _serve_upstream() -> None:
    server = await asyncio.start_server(_upstream_conn, "127.0.0.1", 0, backlog=4096)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


# -- the clients ----------------------------------------------------------------------------


def _request(i: int, upstream: str, pace: float, llm: bool) -> bytes:
    rid = f"{upstream}:{pace}~{i}"
    if llm:
        doc: dict[str, object] = {
            "version": "1.0", "stream": True, "model": "soak",
            "messages": [{"role": "user", "content": "hi"}], "metadata": {"request_id": rid},
        }  # fmt: skip
        kind = "application/llm-request+json"
    else:
        doc = {"model": "soak", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        kind = "application/json"
    body = json.dumps(doc).encode()
    return (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {kind}\r\n"
        f"X-Request-Id: {rid}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body


def _dechunk(data: bytes) -> bytes | None:
    """The body of a chunked response, ``None`` if it is not whole."""
    head, sep, rest = data.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200 ") or not sep:
        return None
    out = []
    while True:
        line, sep, rest = rest.partition(b"\r\n")
        if not sep:
            return None
        size = int(line.split(b";")[0], 16)
        if size == 0:
            return b"".join(out)
        if len(rest) < size + 2:
            return None
        out.append(rest[:size])
        rest = rest[size + 2 :]


def _whole(data: bytes, llm: bool) -> bool:
    """A normal answer reached the client whole: every event, and the end marker."""
    body = _dechunk(data)
    if body is None:
        return False
    if llm:
        deltas = body.count(b'"type":"content.delta"') + body.count(b'"type": "content.delta"')
        return deltas == EVENTS and body.count(b"event: stream.end") == 1
    return body.count(TEXT_PIECE.encode()) == EVENTS and body.endswith(b"data: [DONE]\n\n")


async def _one(port: int, i: int, rng: random.Random, pace: float, out: Counter[str]) -> None:
    llm = i % 2 == 1
    up = rng.choices(["ok", "reset", "stall"], [90, 5, 5])[0]
    client = rng.choices(["normal", "reset", "stop", "trickle"], [70, 10, 10, 10])[0]
    data = _request(i, up, pace, llm)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        out["connect failed"] += 1
        return
    try:
        if client == "trickle":
            for j in range(0, len(data), 16):
                writer.write(data[j : j + 16])
                await writer.drain()
                await asyncio.sleep(0.01)
        else:
            writer.write(data)
        if client == "reset":
            await asyncio.wait_for(reader.read(2000), 30)
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
            out["client reset"] += 1
            return
        if client == "stop":  # reads nothing until the gateway gives up on it
            writer.transport.pause_reading()
            await asyncio.sleep(rng.uniform(1, 3))
            writer.transport.abort()
            out["client stopped reading"] += 1
            return
        body = await asyncio.wait_for(reader.read(-1), 120)
    except (OSError, asyncio.TimeoutError) as exc:
        out[f"normal client error: {type(exc).__name__}" if up == "ok" else "upstream fault"] += 1
        return
    finally:
        writer.transport.abort()
    if up == "ok":
        out["completed" if _whole(body, llm) else "lost"] += 1
        if not _whole(body, llm) and os.environ.get("SOAK_DEBUG"):
            print(body[:200], body[-200:])
    else:
        out[f"upstream {up}: ended"] += 1


async def _clients(port: int, streams: int, seconds: float, pace: float) -> Counter[str]:
    out: Counter[str] = Counter()
    stop = time.monotonic() + seconds
    rng = random.Random(16)
    counter = iter(range(10**9))

    async def worker() -> None:
        while time.monotonic() < stop:
            await _one(port, next(counter), rng, pace, out)

    await asyncio.gather(*(worker() for _ in range(streams)))
    return out


# -- the run ------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def metrics(port: int) -> dict[str, float]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    body = data.partition(b"\r\n\r\n")[2].decode()
    out: dict[str, float] = {}
    for line in body.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the gateway exited")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def run(seconds: float, streams: int, backend: str, pace: float = 0.02) -> str:
    limit = raise_file_limit()
    upstream = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.soak", "--upstream"], stdout=subprocess.PIPE, text=True
    )
    assert upstream.stdout is not None
    up_port = int(upstream.stdout.readline())
    gw_port = _free_port()
    log = tempfile.NamedTemporaryFile(prefix="svir-soak-", suffix=".log", delete=False)  # noqa: SIM115 - closed in the finally below, kept if the gateway died
    gateway = subprocess.Popen(
        [sys.executable, "-m", "svir_proto.cli", "gateway", "--upstream",
         f"http://127.0.0.1:{up_port}", "--listen", f"127.0.0.1:{gw_port}",
         "--backend", backend, "--max-streams", str(streams * 2),
         "--max-connections", str(streams * 4), "--timeout", "3", "--send-timeout", "2",
         "--head-timeout", "10", "--keepalive", "1"],
        stderr=log,
    )  # fmt: skip
    try:
        _wait_for(gw_port, gateway)
        before = metrics(gw_port)
        cpu0 = cpu_seconds(gateway.pid)
        start = time.monotonic()
        out = asyncio.run(_clients(gw_port, streams, seconds, pace))
        wall = time.monotonic() - start
        alive = gateway.poll() is None
        held: dict[str, float] = {}
        deadline = time.monotonic() + 30
        while alive and time.monotonic() < deadline:
            held = metrics(gw_port)
            if not held["svir_gateway_active_streams"] and not held["svir_gateway_buffered_bytes"]:
                break
            time.sleep(0.2)
        cpu = cpu_seconds(gateway.pid) - cpu0 if alive else float("nan")
        rss = peak_rss_mb(gateway.pid) if alive else float("nan")
    finally:
        gateway.kill()
        gateway.wait()
        upstream.kill()
        upstream.wait()
        upstream.stdout.close()
        log.close()
    tail = Path(log.name).read_text(errors="replace").splitlines()
    failures = [
        x
        for x in tail
        if "outcome=" not in x and ("Traceback" in x or "Error" in x or "failed" in x)
    ]
    if alive:
        os.unlink(log.name)
    events = held.get("svir_gateway_events_forwarded_total", 0) - before.get(
        "svir_gateway_events_forwarded_total", 0
    )
    lines = [
        f"soak: {streams} concurrent clients for {seconds:g} s on {backend}, {EVENTS} events "
        f"per stream every {pace:g} s (file limit {limit})",
        f"gateway alive afterwards: {'yes' if alive else 'NO (its log: ' + log.name + ')'}",
        f"errors in its log: {len(failures)}"
        + (f" (first: {failures[0][:200]})" if failures else ""),
        f"streams completed: {out['completed']}, lost: {out['lost']}",
        "other outcomes: "
        + ", ".join(f"{k} {v}" for k, v in sorted(out.items()) if k not in ("completed", "lost")),
        f"slots left held afterwards: {held.get('svir_gateway_active_streams', float('nan')):g}, "
        f"body-budget bytes left held: {held.get('svir_gateway_buffered_bytes', float('nan')):g}",
        f"gateway peak RSS: {rss:.1f} MB",
        f"gateway CPU: {cpu:.2f} s over {wall:.1f} s, {events:.0f} events forwarded, "
        f"{cpu / events * 1e6 if events else float('nan'):.1f} us per forwarded event",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--streams", type=int, default=1000)
    ap.add_argument("--pace", type=float, default=0.02, help="seconds between upstream events")
    ap.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    ap.add_argument("--upstream", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.upstream:
        raise_file_limit()
        asyncio.run(_serve_upstream())
        return
    print(run(args.seconds, args.streams, args.backend, args.pace))


if __name__ == "__main__":
    main()
