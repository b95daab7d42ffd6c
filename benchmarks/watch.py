"""A relay's watcher side by side with the decoder and the floor, on big reads.

    python -m benchmarks.watch [--chunks 20000] [--repeat 15]

`ChatStreamWatcher` is what the gateway runs on a relayed OpenAI stream: the decoder, less the
text it need not read (svir_proto/openai/watch.py). An upstream that streams faster than the
gateway reads gives it reads of many events, and the watcher skips the runs of plain content
in them a block at a time; a line break (an escape) ends a run. Each shape is the chat shape
of `benchmarks.shapes` with a line break in every k-th delta (never, every 40th, every 3rd),
read whole (one read) and one event per read:

- watcher: `ChatStreamWatcher(keep_text=False)`, as a relay runs it;
- decoder: `ChatStreamDecoder(keep_text=False)`, every event built;
- floor: ``bytes.split`` and ``json.loads`` of each payload, nothing kept.

Cells are each pipeline's time over the floor's (the median of the ratios within a round: the
pipelines take turns, so a drifting machine slows them alike), then µs per event. Before the
watcher found the next chunk's opening a block at a time, a read of 20,000 chunks with a line
break in every third took 14.7 µs per event: it walked the read from its first event each
time.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable

from benchmarks._timing import interleaved, table
from benchmarks._timing import main as bench_main
from benchmarks.shapes import per_event
from svir_proto.openai import ChatStreamDecoder
from svir_proto.openai.watch import ChatStreamWatcher

EVERY = (0, 40, 3)
"""A line break in every k-th delta (0: never)."""


def body(chunks: int, every: int, seed: int = 7) -> bytes:
    """The chat shape's chunks, their deltas words, a line break in every ``every``-th."""
    rng = random.Random(seed)
    head: dict[str, object] = {"id": f"chatcmpl-{rng.getrandbits(128):032x}"}
    head |= {"object": "chat.completion.chunk", "created": 1764460800, "model": "gpt-4o-mini"}

    def chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return b"data: %s\n\n" % json.dumps({**head, "choices": [choice]}).encode()

    out = [chunk({"role": "assistant", "content": ""})]
    for i in range(1, chunks + 1):
        word = f" word{rng.randrange(1000)}"
        out.append(chunk({"content": word + "\n" if every and i % every == 0 else word}))
    return b"".join([*out, chunk({}, "stop"), b"data: [DONE]\n\n"])


def _fed(make: Callable[[], ChatStreamDecoder], parts: list[bytes]) -> Callable[[], object]:
    def run() -> object:
        d = make()
        for part in parts:
            d.feed(part)
        d.close()
        return d.result

    return run


def _floor(parts: list[bytes]) -> Callable[[], object]:
    def run() -> int:
        n = 0
        for block in b"".join(parts).split(b"\n\n"):
            if block.startswith(b"data: {"):
                json.loads(block[6:])
                n += 1
        return n

    return run


def run(chunks: int, repeat: int) -> str:
    rows = []
    for every in EVERY:
        whole = body(chunks, every)
        events = whole.count(b"\n\n")
        cells: dict[str, list[str]] = {"watcher": [], "decoder": [], "floor": []}
        for parts in ([whole], per_event(whole)):
            watcher = ChatStreamWatcher(keep_text=False)
            for part in parts:
                watcher.feed(part)
            watcher.close()
            assert watcher.result.complete
            assert watcher.seen == chunks + 3  # and the start, the finish, the end
            timings = interleaved(
                repeat,
                {
                    "watcher": _fed(lambda: ChatStreamWatcher(keep_text=False), parts),
                    "decoder": _fed(lambda: ChatStreamDecoder(keep_text=False), parts),
                    "floor": _floor(parts),
                },
            )
            for name, cell in cells.items():
                us = timings.best[name] / events * 1e6
                cell.append(f"{timings.ratio(name, 'floor'):.2f}x, {us:.2f} µs")
        label = "never" if not every else f"1 in {every}"
        rows += [[f"{name}, line break {label}", *cell] for name, cell in cells.items()]
    return table(["pipeline", "one read", "one event per read"], rows)


def main(argv: list[str] | None = None) -> None:
    bench_main(run, __doc__, argv)


if __name__ == "__main__":
    main()
