"""Time to first token and tokens per second as svir sees them, beside llama.cpp's own timings.

    python -m benchmarks.llamacpp [--runs 5] [--max-tokens 120]

Starts llama-server with SmolLM2-135M (scripts/llama_server.py), then for each run streams an
answer through a `ClientConnection` on a plain socket (the sans-IO core with I/O of our own: the
raw bytes stay at hand) and measures what `svir chat` shows:

- time to first token: from the request's last byte to the first visible delta;
- tokens per second: `SpeedMeter` over the visible deltas (first to last);
- CPU per event: the client's process time from request to end, over the events decoded.

The same response's usage chunk carries llama.cpp's ``timings`` (``prompt_ms``,
``predicted_per_second``), read from the raw bytes with the SSE decoder, so the two views of one
answer sit side by side.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import time

from svir_proto import ClientConnection, SpeedMeter, SSEDecoder, TextDelta
from svir_proto.openai import ChatRequest, Endpoint, UserMessage
from tests.live.conftest import llama_server

PROMPT = "Write a short poem about the sea, in eight lines."


def one(base: str, max_tokens: int) -> dict[str, float]:
    endpoint = Endpoint.parse(base)
    request = ChatRequest(
        model="smollm2-135m",
        messages=[UserMessage(content=PROMPT)],
        max_tokens=max_tokens,
        include_usage=True,
        temperature=0.7,
    )
    conn = ClientConnection(endpoint)
    meter = SpeedMeter()
    raw = bytearray()
    events = 0
    first: float | None = None
    with socket.create_connection((endpoint.host, endpoint.port)) as sock:
        for piece in conn.send(request):
            sock.sendall(piece)
        sent = time.perf_counter()
        cpu = time.process_time()
        while conn.terminal is None:
            data = sock.recv(65536)
            raw += data
            now = time.perf_counter()
            for event in conn.feed(data):
                events += 1
                meter.observe(event, now)  # type: ignore[arg-type]
                if first is None and isinstance(event, TextDelta) and event.text:
                    first = now
            if not data:
                break
        cpu = time.process_time() - cpu
    timings = {}
    body = bytes(raw).split(b"\r\n\r\n", 1)[1]
    for item in SSEDecoder(errors="replace").feed(body.replace(b"\r\n", b"\n")):
        data = getattr(item, "data", "")
        if '"timings"' in data and '"usage"' in data:
            timings = json.loads(data)["timings"]
    assert first is not None
    assert meter.rate is not None
    return {
        "ttft_ms": (first - sent) * 1e3,
        "svir_tps": meter.rate,
        "tokens": meter.tokens,
        "llama_prompt_ms": timings.get("prompt_ms", float("nan")),
        "llama_tps": timings.get("predicted_per_second", float("nan")),
        "llama_n": timings.get("predicted_n", 0),
        "cpu_us_event": cpu / max(events, 1) * 1e6,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--max-tokens", type=int, default=120)
    args = ap.parse_args(argv)
    paths = llama_server.installed()
    if paths is None:
        raise SystemExit("run scripts/install-llama first")
    with llama_server.LlamaServer(*paths, ctx=2048) as server:
        one(server.base_url, 8)  # warm up: the model's first pages, the prompt cache
        runs = [one(server.base_url, args.max_tokens) for _ in range(args.runs)]
    print(f"{args.runs} answers of up to {args.max_tokens} tokens, SmolLM2-135M on 2 cores")
    columns = ["run", "svir TTFT ms", "llama prompt_ms", "svir tok/s", "llama tok/s"]
    print(" | ".join([*columns, "tokens (svir/llama)", "CPU us/event"]))
    for i, r in enumerate(runs, 1):
        print(
            f"{i} | {r['ttft_ms']:.1f} | {r['llama_prompt_ms']:.1f} | {r['svir_tps']:.1f} | "
            f"{r['llama_tps']:.1f} | {r['tokens']:.0f}/{r['llama_n']:.0f} | {r['cpu_us_event']:.1f}"
        )
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    print(
        f"median | {med['ttft_ms']:.1f} | {med['llama_prompt_ms']:.1f} | {med['svir_tps']:.1f} | "
        f"{med['llama_tps']:.1f} | | {med['cpu_us_event']:.1f}"
    )


if __name__ == "__main__":
    main()
