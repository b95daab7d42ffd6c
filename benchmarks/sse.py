"""SSE decoding side by side: svir-proto, httpx-sse, openai-python, and the split floor.

    python -m benchmarks.sse [--chunks 20000] [--repeat 15]

Each decoder turns the same seeded body, cut the same way, into events whose ``data`` is text.
httpx-sse works on text, so its time includes an incremental UTF-8 decoder, as httpx gives it.
It is timed twice: as its users run it (``EventSource.iter_sse``, over a stand-in for the
response that yields the decoded text, so httpx's own per-chunk work is left out), and its two
decoder classes driven by hand with none of its generators (a lower bound on its cost).
The floor is ``bytes.split(b"\\n\\n")`` on the joined body: no framing rules, no decoding; the
second floor also decodes each payload and builds its event, the least any decoder must do.

The last column is each decoder's time over ours: the median, over the rounds, of the ratio
within a round (the decoders take turns, so drift in the machine's speed cancels).
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Iterator

from benchmarks._timing import interleaved, table
from benchmarks._timing import main as bench_main
from benchmarks.streams import openai_stream, scenarios
from svir_proto.sse import ServerSentEvent, SSEDecoder


def svir(parts: list[bytes]) -> int:
    d = SSEDecoder()
    n = 0
    for p in parts:
        for e in d.feed(p):
            n += type(e) is ServerSentEvent
    return n + sum(type(e) is ServerSentEvent for e in d.close())


def httpx_sse(parts: list[bytes]) -> int:
    from httpx_sse._decoders import SSEDecoder as HDecoder
    from httpx_sse._decoders import SSELineDecoder

    text = codecs.getincrementaldecoder("utf-8")(errors="replace")
    lines = SSELineDecoder()
    dec = HDecoder()
    n = 0
    for p in parts:
        for line in lines.decode(text.decode(p)):
            if dec.decode(line) is not None:
                n += 1
    for line in lines.flush():
        n += dec.decode(line) is not None
    return n


class _TextResponse:
    """What httpx-sse's ``EventSource`` reads from an ``httpx.Response``: the headers, and
    ``iter_text()``, the body decoded incrementally as httpx does, without httpx's own
    per-chunk plumbing (a transport's cost, which our decoders do not pay here either)."""

    def __init__(self, parts: list[bytes]) -> None:
        self.headers = {"content-type": "text/event-stream"}
        self._parts = parts

    def iter_text(self) -> Iterator[str]:
        text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        for p in self._parts:
            yield text.decode(p)
        tail = text.decode(b"", True)
        if tail:
            yield tail


def httpx_sse_api(parts: list[bytes]) -> int:
    from httpx_sse import EventSource

    source = EventSource(_TextResponse(parts))  # type: ignore[arg-type]
    return sum(1 for _ in source.iter_sse())


def openai_python(parts: list[bytes]) -> int:
    from openai._streaming import SSEDecoder as ODecoder

    return sum(1 for _ in ODecoder().iter_bytes(iter(parts)))


def floor(parts: list[bytes]) -> int:
    return len([b for b in b"".join(parts).split(b"\n\n") if b])


def floor_events(parts: list[bytes]) -> int:
    """The floor, then what every decoder must do for an event: decode it and build it."""
    new = tuple.__new__
    events = [
        new(ServerSentEvent, ("message", b[6:].decode(), "", None))
        for b in b"".join(parts).split(b"\n\n")
        if b
    ]
    return len(events)


PEERS: dict[str, Callable[[list[bytes]], int]] = {
    "svir-proto": svir,
    "httpx-sse 0.4, iter_sse": httpx_sse_api,
    "httpx-sse 0.4, its decoders": httpx_sse,
    "openai-python": openai_python,
    "floor (split)": floor,
    "floor + decode + event": floor_events,
}


def run(chunks: int, repeat: int) -> str:
    body = openai_stream(chunks)
    out = [f"body: {len(body) / 1e6:.2f} MB, {chunks + 4} events (seeded; multi-byte text)"]
    for label, parts in scenarios(body):
        counts = {name: fn(parts) for name, fn in PEERS.items()}
        assert len({n for name, n in counts.items() if not name.startswith("floor")}) == 1, counts
        timings = interleaved(
            repeat, {name: (lambda fn=fn, parts=parts: fn(parts)) for name, fn in PEERS.items()}
        )
        rows = [
            [
                name,
                f"{t * 1e3:.1f}",
                f"{len(body) / t / 1e6:.1f}",
                f"{counts['svir-proto'] / t / 1e3:.0f}k",
                f"{timings.ratio(name, 'svir-proto'):.2f}x",
            ]
            for name, t in timings.best.items()
        ]
        out.append(
            f"\n{label}\n"
            + table(["decoder", "best ms", "MB/s", "events/s", "time vs svir (median)"], rows)
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    bench_main(run, __doc__, argv)


if __name__ == "__main__":
    main()
