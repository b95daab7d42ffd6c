"""Typed SSE events (``event: NAME`` then ``data: PAYLOAD``), as Anthropic Messages, OpenAI
Responses and LLM-Stream servers send every event: what framing them costs.

    python -m benchmarks.typed_sse [--chunks 20000] [--repeat 9] [--shape anthropic,...]

The shapes, seeded: ``anthropic`` (``message_start``, ``content_block_start``, a ``ping``, one
``content_block_delta`` per token, ``content_block_stop``, ``message_delta``, ``message_stop``),
``responses`` (``response.created`` ... one ``response.output_text.delta`` per token with its
``sequence_number`` ... ``response.completed``), ``anthropic-crlf`` (the same, CRLF line ends)
and ``llmstream`` (`LLMStreamEncoder`'s own stream). Each is fed in 1460 B pieces, random pieces
of 1..4096 B, and one event per read. In one run, taking turns in every round:

- framing: a `DialectDecoder` whose ``_on_event`` does nothing: what framing costs a dialect
  decoder written against ``_on_event`` (every event framed, typed and handed over).
- framing, own hook: the same with ``_on_typed`` overridden to do nothing: what framing costs a
  decoder that reads the lane's typed batches itself.
- SSEDecoder: the public generic decoder, every `ServerSentEvent` built with its type.
- LLMStreamDecoder (``llmstream`` only): the whole decoder, with orjson and with the standard
  library's json (target: 0.75x the floor with either).
- floor: ``bytes.split`` on the joined body and ``json.loads`` (or orjson) of each payload.

Each cell is a time per event in microseconds (the best round), then over the floor's
(``split + json.loads``, the median of the ratios within the rounds).
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable, Sequence

from benchmarks._timing import interleaved, table
from benchmarks.shapes import PIECES, TOKENS
from svir_proto import _json
from svir_proto._dialect import DialectDecoder
from svir_proto.events import Finished, FinishReason, StreamStarted, TextDelta, Usage
from svir_proto.llmstream import LLMStreamDecoder, LLMStreamEncoder
from svir_proto.sse import ServerSentEvent, SSEDecoder

FLOOR = "floor: split + json.loads"


def _event(name: str, obj: object) -> bytes:
    data = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return f"event: {name}\ndata: {data}\n\n".encode()


def anthropic(chunks: int, seed: int = 7) -> bytes:
    rng = random.Random(seed)
    usage = {"input_tokens": 25, "cache_creation_input_tokens": 0, "output_tokens": 1}
    message = {
        "id": f"msg_{rng.getrandbits(96):024x}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**usage, "cache_read_input_tokens": 0},
    }
    out = [
        _event("message_start", {"type": "message_start", "message": message}),
        _event(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
        ),
        b'event: ping\ndata: {"type": "ping"}\n\n',
    ]
    for _ in range(chunks):
        delta = {"type": "text_delta", "text": rng.choice(TOKENS)}
        out.append(
            _event(
                "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
            )
        )
    out += [
        _event("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": chunks},
            },
        ),
        _event("message_stop", {"type": "message_stop"}),
    ]
    return b"".join(out)


def responses(chunks: int, seed: int = 7) -> bytes:
    rng = random.Random(seed)
    seq = iter(range(1 << 62))
    item = f"msg_{rng.getrandbits(128):032x}"
    response = {
        "id": f"resp_{rng.getrandbits(128):032x}",
        "object": "response",
        "created_at": 1764460800,
        "status": "in_progress",
        "model": "gpt-4.1-mini-2025-04-14",
        "output": [],
    }

    def event(name: str, **fields: object) -> bytes:
        return _event(name, {"type": name, "sequence_number": next(seq), **fields})

    part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
    where = {"item_id": item, "output_index": 0, "content_index": 0}
    out = [
        event("response.created", response=response),
        event("response.in_progress", response=response),
        event(
            "response.output_item.added",
            output_index=0,
            item={"id": item, "type": "message", "status": "in_progress", "content": []},
        ),
        event("response.content_part.added", **where, part=part),
    ]
    text = []
    for _ in range(chunks):
        token = rng.choice(TOKENS)
        text.append(token)
        padding = "".join(rng.choice("abcdefghijkXYZ0123") for _ in range(rng.randint(2, 9)))
        out.append(
            event(
                "response.output_text.delta", **where, delta=token, logprobs=[], obfuscation=padding
            )
        )
    whole = "".join(text)
    out += [
        event("response.output_text.done", **where, text=whole, logprobs=[]),
        event("response.content_part.done", **where, part={**part, "text": whole}),
        event("response.completed", response={**response, "status": "completed"}),
    ]
    return b"".join(out)


def llmstream(chunks: int, seed: int = 7) -> bytes:
    rng = random.Random(seed)
    enc = LLMStreamEncoder(request_id="req_1")
    out = [enc.encode(StreamStarted(response_id="", model="m", created=1, request_id="req_1"))]
    out += [enc.encode(TextDelta(text=rng.choice(TOKENS))) for _ in range(chunks)]
    out.append(enc.encode(Finished(reason=FinishReason.STOP, raw="stop")))
    out.append(enc.encode(Usage(prompt_tokens=3, completion_tokens=chunks)))
    return b"".join(out) + enc.end()


SHAPES: dict[str, tuple[str, Callable[[int], bytes]]] = {
    "anthropic": ("Anthropic Messages: a content_block_delta per token", anthropic),
    "responses": ("OpenAI Responses: a response.output_text.delta per token", responses),
    "anthropic-crlf": (
        "Anthropic Messages, CRLF line ends",
        lambda n: anthropic(n).replace(b"\n", b"\r\n"),
    ),
    "llmstream": ("LLM-Stream: a content.delta per token", llmstream),
}


class Framing(DialectDecoder):
    """A dialect that reads nothing: the decoder's framing, lanes and hand-over alone."""

    events = 0

    def _on_event(self, sse_type: str | None, data: bytes | bytearray, at: int) -> None:
        self.events += 1

    def _on_body_end(self) -> None:
        self._terminate(done=True)

    def _complete(self) -> bool:
        return True


class OwnHook(Framing):
    """`Framing`, reading the lane's typed batches itself (a hook that does nothing)."""

    def _on_typed(
        self, at: int, types: Sequence[str], payloads: Sequence[bytes | bytearray], eol: int
    ) -> None:
        self.events += len(payloads)


def framing(kind: type[Framing]) -> Callable[[list[bytes]], int]:
    def run(parts: list[bytes]) -> int:
        d = kind()
        for p in parts:
            d.feed(p)
        d.close()
        return d.events

    return run


def sse(parts: list[bytes]) -> int:
    d = SSEDecoder()
    n = 0
    for p in parts:
        for e in d.feed(p):
            n += type(e) is ServerSentEvent
    return n + sum(type(e) is ServerSentEvent for e in d.close())


def with_backend(backend: str, run: Callable[[list[bytes]], int]) -> Callable[[list[bytes]], int]:
    """``run`` with `svir_proto._json` on ``backend`` (orjson when it is installed)."""

    def timed(parts: list[bytes]) -> int:
        before = _json.BACKEND
        _json.use(backend if _json.orjson is not None else "json")  # type: ignore[arg-type]
        try:
            return run(parts)
        finally:
            _json.use(before)

    return timed


def llmstream_decoder(parts: list[bytes]) -> int:
    d = LLMStreamDecoder()
    for p in parts:
        d.feed(p)
    d.close()
    assert d.result.complete, d.result.problems
    return d._seq


def floor_with(loads: Callable[[bytes], object], sep: bytes) -> Callable[[list[bytes]], int]:
    def run(parts: list[bytes]) -> int:
        n = 0
        for block in b"".join(parts).split(sep):
            if block:
                loads(block[block.index(b"data: ") + 6 :])
                n += 1
        return n

    return run


def run(chunks: int, repeat: int, shapes: Sequence[str]) -> str:
    orjson_loads = _json.orjson.loads if _json.orjson is not None else json.loads
    out: list[str] = []
    for name in shapes:
        label, generate = SHAPES[name]
        body = generate(chunks)
        sep = b"\r\n\r\n" if name.endswith("crlf") else b"\n\n"
        n = body.count(sep)
        fns: dict[str, Callable[[list[bytes]], int]] = {
            "framing (_on_event)": framing(Framing),
            "framing (own _on_typed)": framing(OwnHook),
            "SSEDecoder": sse,
        }
        if name == "llmstream":
            fns["LLMStreamDecoder (orjson)"] = with_backend("orjson", llmstream_decoder)
            fns["LLMStreamDecoder (json)"] = with_backend("json", llmstream_decoder)
        fns[FLOOR] = floor_with(json.loads, sep)
        fns["floor: split + orjson"] = floor_with(orjson_loads, sep)
        cells: dict[str, list[str]] = {k: [] for k in fns}
        for cut in PIECES.values():
            parts = cut(body)
            counts = {k: f(parts) for k, f in fns.items()}
            assert set(counts.values()) == {n}, counts  # every pipeline saw every event
            timings = interleaved(
                repeat, {k: (lambda f=f, parts=parts: f(parts)) for k, f in fns.items()}
            )
            for k in fns:
                us = timings.best[k] / n * 1e6
                cells[k].append(f"{us:.2f} ({timings.ratio(k, FLOOR):.2f}x)")
        rows = [[k, *cells[k]] for k in fns]
        out.append(
            f"\n{label}: {len(body) / 1e6:.2f} MB, {n} events\n"
            + table(["pipeline: us/event (vs floor)", *PIECES], rows)
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--chunks", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument(
        "--shape", default=",".join(SHAPES), help="comma-separated: " + ", ".join(SHAPES)
    )
    args = ap.parse_args(argv)
    print(run(args.chunks, args.repeat, args.shape.split(",")))


if __name__ == "__main__":
    main()
