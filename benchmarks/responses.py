"""The Responses API stream, bytes to typed events and a result, on the shapes its servers
send, side by side with the floor and openai-python.

    python -m benchmarks.responses [--chunks 20000] [--repeat 9] [--shape text,llamacpp,...]

The shapes, generated from a seed:

- ``text``: OpenAI's events as the API sends them: ``event:`` lines, the whole response object
  on ``response.created``, ``.in_progress`` and ``.completed``, and on every
  ``response.output_text.delta`` its ``sequence_number``, ``item_id``, ``output_index``,
  ``content_index``, ``logprobs`` and ``obfuscation`` padding.
- ``llamacpp``: llama.cpp's events: the same types with only ``type``, ``item_id`` and
  ``delta`` (no sequence numbers, no indices).
- ``tools``: four function calls one after the other, their arguments in long runs of small
  deltas (OpenAI's keys), each closed by ``.done``.
- ``reasoning``: a reasoning summary streamed in two parts, signed with ``encrypted_content``,
  then the answer's text.
- ``long``: the text shape in deltas of 200..2000 characters, a tenth of their words code
  with escapes (the OpenAI benchmark's ``long``); its last events hold the whole answer.

Each is fed in 1460 B pieces, random pieces of 1..4096 B, and one event per read. In one run,
taking turns in every round:

- svir-proto: `ResponsesStreamDecoder` fed the pieces, every event built, then ``result``;
  with orjson (the ``fast`` extra) and with the standard library's json.
- floor: ``bytes.split`` on the joined body and ``json.loads`` of each event's data (found
  after its ``data: ``), nothing kept: no SSE rules, no types, no result. Also with orjson.
- openai-python: its typed pipeline as ``client.responses.stream`` runs it (its SSE decoder,
  ``construct_type`` of each event, ``ResponseStreamState``), once per shape on the 1460 B
  pieces (it fails on llama.cpp's events, which have no ``output_index``).

Each cell is a time over the floor's (``split + json.loads``), the median of the ratios within
the rounds. Targets: svir-proto at most 0.75x, with orjson and with the standard library.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable

from benchmarks._timing import interleaved, table
from benchmarks.shapes import PIECES, TOKENS, long_delta
from svir_proto import _json
from svir_proto.events import Completion
from svir_proto.responses import ResponsesStreamDecoder

TARGETS = {"svir-proto (orjson)": 0.75, "svir-proto (json)": 0.75}
FLOOR = "floor: split + json.loads"
MODEL = "gpt-5-mini-2025-08-07"


class _Writer:
    def __init__(self, *, numbered: bool = True) -> None:
        self.seq = 0
        self.numbered = numbered
        self.out: list[bytes] = []

    def ev(self, etype: str, **fields: object) -> None:
        obj: dict[str, object] = {"type": etype}
        if self.numbered:
            obj["sequence_number"] = self.seq
            self.seq += 1
        obj.update(fields)
        data = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()
        self.out.append(b"event: " + etype.encode() + b"\ndata: " + data + b"\n\n")

    def body(self) -> bytes:
        return b"".join(self.out)


def _response(rid: str, status: str, output: list[object], usage: object) -> dict[str, object]:
    return {
        "id": rid, "object": "response", "created_at": 1764547200, "status": status,
        "background": False, "error": None, "incomplete_details": None, "instructions": None,
        "max_output_tokens": None, "max_tool_calls": None, "model": MODEL, "output": output,
        "parallel_tool_calls": True, "previous_response_id": None, "prompt_cache_key": None,
        "reasoning": {"effort": "medium", "summary": "auto"}, "safety_identifier": None,
        "service_tier": "default", "store": True, "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"}, "tool_choice": "auto",
        "tools": [], "top_logprobs": 0, "top_p": 1.0, "truncation": "disabled", "usage": usage,
        "user": None, "metadata": {},
    }  # fmt: skip


def _usage(output: int) -> dict[str, object]:
    return {
        "input_tokens": 31,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 31 + output,
    }


def _pad(rng: random.Random) -> str:
    return "".join(rng.choice("abcdefghijkXYZ0123") for _ in range(rng.randint(1, 15)))


def _message(
    w: _Writer,
    rng: random.Random,
    index: int,
    chunks: int,
    openai: bool,
    delta: Callable[[random.Random], str] = lambda rng: rng.choice(TOKENS),
) -> object:
    mid = f"msg_{rng.getrandbits(160):040x}"
    where: dict[str, object] = {"item_id": mid}
    if openai:
        where.update(output_index=index, content_index=0)
    added = {
        "id": mid,
        "type": "message",
        "status": "in_progress",
        "content": [],
        "role": "assistant",
    }
    w.ev("response.output_item.added", output_index=index, item=added)
    empty = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
    w.ev("response.content_part.added", **where, part=empty)
    text = []
    for _ in range(chunks):
        token = delta(rng)
        text.append(token)
        if openai:
            w.ev(
                "response.output_text.delta",
                **where,
                delta=token,
                logprobs=[],
                obfuscation=_pad(rng),
            )
        else:
            w.ev("response.output_text.delta", **where, delta=token)
    whole = "".join(text)
    w.ev("response.output_text.done", **where, text=whole, logprobs=[])
    part = {**empty, "text": whole}
    w.ev("response.content_part.done", **where, part=part)
    item = {**added, "status": "completed", "content": [part]}
    w.ev("response.output_item.done", output_index=index, item=item)
    return item


def text(chunks: int, seed: int = 7) -> bytes:
    rng = random.Random(seed)
    w = _Writer()
    rid = f"resp_{rng.getrandbits(160):040x}"
    w.ev("response.created", response=_response(rid, "in_progress", [], None))
    w.ev("response.in_progress", response=_response(rid, "in_progress", [], None))
    item = _message(w, rng, 0, chunks, openai=True)
    w.ev("response.completed", response=_response(rid, "completed", [item], _usage(chunks)))
    return w.body()


def long(chunks: int, seed: int = 7) -> bytes:
    """The text shape with deltas of 200..2000 characters of text and code."""
    rng = random.Random(seed)
    w = _Writer()
    rid = f"resp_{rng.getrandbits(160):040x}"
    w.ev("response.created", response=_response(rid, "in_progress", [], None))
    item = _message(w, rng, 0, chunks, openai=True, delta=long_delta)
    w.ev("response.completed", response=_response(rid, "completed", [item], _usage(chunks)))
    return w.body()


def llamacpp(chunks: int, seed: int = 7) -> bytes:
    rng = random.Random(seed)
    w = _Writer(numbered=False)
    rid = f"resp_{rng.getrandbits(160):040x}"
    brief = {"id": rid, "object": "response", "status": "in_progress"}
    w.ev("response.created", response=brief)
    w.ev("response.in_progress", response=brief)
    item = _message(w, rng, 0, chunks, openai=False)
    final = {**brief, "created_at": 1764547200, "status": "completed", "model": "smollm2-135m"}
    w.ev("response.completed", response={**final, "output": [item], "usage": _usage(chunks)})
    return w.body()


def tools(chunks: int, seed: int = 7, calls: int = 4) -> bytes:
    rng = random.Random(seed)
    w = _Writer()
    rid = f"resp_{rng.getrandbits(160):040x}"
    w.ev("response.created", response=_response(rid, "in_progress", [], None))
    w.ev("response.in_progress", response=_response(rid, "in_progress", [], None))
    pieces = ['{"', "city", '": "', "Vienna", '", "', "units", '": "c', "elsius", '"', ", ", "}"]
    items = []
    for i in range(calls):
        fid = f"fc_{rng.getrandbits(160):040x}"
        added = {
            "id": fid, "type": "function_call", "status": "in_progress", "arguments": "",
            "call_id": f"call_{rng.getrandbits(96):024x}", "name": "get_weather",
        }  # fmt: skip
        w.ev("response.output_item.added", output_index=i, item=added)
        args = []
        for _ in range(chunks // calls):
            piece = rng.choice(pieces)
            args.append(piece)
            w.ev("response.function_call_arguments.delta", item_id=fid, output_index=i,
                 delta=piece, obfuscation=_pad(rng))  # fmt: skip
        whole = "".join(args)
        w.ev("response.function_call_arguments.done", item_id=fid, output_index=i, arguments=whole)
        item = {**added, "status": "completed", "arguments": whole}
        w.ev("response.output_item.done", output_index=i, item=item)
        items.append(item)
    w.ev("response.completed", response=_response(rid, "completed", items, _usage(chunks)))
    return w.body()


def reasoning(chunks: int, seed: int = 7) -> bytes:
    rng = random.Random(seed)
    w = _Writer()
    rid = f"resp_{rng.getrandbits(160):040x}"
    w.ev("response.created", response=_response(rid, "in_progress", [], None))
    w.ev("response.in_progress", response=_response(rid, "in_progress", [], None))
    rs = f"rs_{rng.getrandbits(160):040x}"
    partial = {"id": rs, "type": "reasoning", "encrypted_content": "gAAAAB" + "x" * 600}
    w.ev("response.output_item.added", output_index=0, item={**partial, "summary": []})
    summary = []
    for si in range(2):
        w.ev("response.reasoning_summary_part.added", item_id=rs, output_index=0,
             summary_index=si, part={"type": "summary_text", "text": ""})  # fmt: skip
        parts = []
        for _ in range(chunks // 4):
            token = rng.choice(TOKENS)
            parts.append(token)
            w.ev("response.reasoning_summary_text.delta", item_id=rs, output_index=0,
                 summary_index=si, delta=token, obfuscation=_pad(rng))  # fmt: skip
        whole = "".join(parts)
        summary.append({"type": "summary_text", "text": whole})
        w.ev("response.reasoning_summary_text.done", item_id=rs, output_index=0,
             summary_index=si, text=whole)  # fmt: skip
        w.ev("response.reasoning_summary_part.done", item_id=rs, output_index=0,
             summary_index=si, part=summary[-1])  # fmt: skip
    signed = {"id": rs, "type": "reasoning", "encrypted_content": "gAAAAB" + "y" * 2000,
              "summary": summary}  # fmt: skip
    w.ev("response.output_item.done", output_index=0, item=signed)
    item = _message(w, rng, 1, chunks // 2, openai=True)
    w.ev("response.completed", response=_response(rid, "completed", [signed, item], _usage(chunks)))
    return w.body()


SHAPES: dict[str, tuple[str, Callable[[int], bytes], float]] = {
    "text": ("text, OpenAI's event keys and padding", text, 1.0),
    "llamacpp": ("text, llama.cpp's event keys", llamacpp, 1.0),
    "tools": ("4 function calls, long argument streams", tools, 1.0),
    "reasoning": ("signed reasoning summary in two parts, then text", reasoning, 1.0),
    "long": ("text deltas of 200..2000 characters, code with escapes", long, 0.1),
}


def svir(parts: list[bytes]) -> Completion:
    d = ResponsesStreamDecoder()
    for p in parts:
        d.feed(p)
    d.close()
    return d.result


def svir_with(backend: str) -> Callable[[list[bytes]], Completion]:
    def run(parts: list[bytes]) -> Completion:
        before = _json.BACKEND
        _json.use(backend)  # type: ignore[arg-type]
        try:
            return svir(parts)
        finally:
            _json.use(before)

    return run


def floor_with(loads: Callable[[bytes], object]) -> Callable[[list[bytes]], int]:
    def run(parts: list[bytes]) -> int:
        n = 0
        for block in b"".join(parts).split(b"\n\n"):
            at = block.find(b"data: ")
            if at >= 0:
                loads(block[at + 6 :])  # nothing kept
                n += 1
        return n

    return run


def openai_python(parts: list[bytes]) -> object:
    from openai._models import construct_type
    from openai._streaming import SSEDecoder
    from openai._types import omit
    from openai.lib.streaming.responses._responses import ResponseStreamState
    from openai.types.responses import ResponseStreamEvent

    state: ResponseStreamState[object] = ResponseStreamState(input_tools=omit, text_format=omit)
    for sse in SSEDecoder().iter_bytes(iter(parts)):
        event = construct_type(type_=ResponseStreamEvent, value=sse.json())
        state.handle_event(event)  # type: ignore[arg-type]
    return state._completed_response


def check(name: str, body: bytes) -> None:
    """The decoder reads each shape whole before anyone is timed."""
    result = svir([body])
    assert result.complete, (name, result.problems)
    assert not result.problems, (name, result.problems)
    assert result.text or result.tool_calls


def run(chunks: int, repeat: int, shapes: list[str]) -> str:
    orjson_loads = _json.orjson.loads if _json.orjson is not None else json.loads
    out: list[str] = []
    worst = dict.fromkeys(TARGETS, 0.0)
    for name in shapes:
        label, generate, scale = SHAPES[name]
        body = generate(int(chunks * scale))
        check(name, body)
        n = body.count(b"\n\n")
        fns: dict[str, Callable[[list[bytes]], object]] = {
            "svir-proto (orjson)": svir_with("orjson") if _json.orjson else svir_with("json"),
            "svir-proto (json)": svir_with("json"),
            FLOOR: floor_with(json.loads),
            "floor: split + orjson": floor_with(orjson_loads),
        }
        cells: dict[str, list[str]] = {k: [] for k in fns}
        per_event: dict[str, list[str]] = {k: [] for k in fns}
        for cut in PIECES.values():
            parts = cut(body)
            timings = interleaved(
                repeat, {k: (lambda f=f, parts=parts: f(parts)) for k, f in fns.items()}
            )
            for k in fns:
                ratio = timings.ratio(k, FLOOR)
                cells[k].append(f"{ratio:.2f}x")
                per_event[k].append(f"{timings.best[k] / n * 1e6:.2f}")
                if k in worst:
                    worst[k] = max(worst[k], ratio)
        parts = PIECES["1460 B"](body)
        t = time.perf_counter()
        try:
            openai_python(parts)
            oai = f"{(time.perf_counter() - t) / n * 1e6:.0f}"
        except Exception as exc:  # a peer that breaks on a shape is a result too
            oai = f"fails: {type(exc).__name__}"
        rows = [[k, *cells[k], " / ".join(per_event[k])] for k in fns]
        rows.append(["openai-python (1460 B, once)", "", "", "", oai])
        out.append(
            f"\n{label}: {len(body) / 1e6:.2f} MB, {n} events\n"
            + table(["pipeline", *PIECES, "us/event (same order)"], rows)
        )
    verdict = ", ".join(
        f"{k} worst {worst[k]:.2f}x (target {TARGETS[k]}x)" for k in TARGETS if worst[k]
    )
    return "\n".join(out) + f"\n\nvs floor (split + json.loads): {verdict}"


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
