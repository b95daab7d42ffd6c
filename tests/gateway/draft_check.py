"""An independent check of LLM-Stream bytes against draft-spk-agentproto-llm-stream-00, written
from the draft's text and not from our encoder or decoder: it parses the SSE itself (section 5.1:
``event:`` and ``data:`` lines, a blank line between events) and checks each rule it can.

`check(body)` returns the list of violations (empty: the bytes follow the draft) and the events.
"""

from __future__ import annotations

import json
from typing import Any

TYPES = {
    "stream.start",
    "content.delta",
    "content.stop",
    "tool.call",
    "usage",
    "error",
    "stream.end",
}
STOP_REASONS = {"end_turn", "max_tokens", "tool_use", "content_filter"}
ERROR_CODES = {
    "rate_limited",
    "context_length_exceeded",
    "content_filtered",
    "internal_error",
    "overloaded",
}
REQUIRED = {  # section 5.3: each event's required fields and their JSON types
    "stream.start": {"model": str, "created": int},
    "content.delta": {"index": int, "role": str, "delta": dict},
    "content.stop": {"index": int, "stop_reason": str},
    "tool.call": {"index": int, "id": str, "name": str, "arguments": str},
    "usage": {"input_tokens": int, "output_tokens": int},
    "error": {"code": str, "message": str},
    "stream.end": {},
}


def events(body: bytes) -> list[tuple[str | None, str]]:
    """(event field, data) of each SSE event: LF line ends, as the draft writes them. A block
    with no data line (comments: a keep-alive, a ``svir-lost`` note) is no event (the SSE
    rules, which the draft leaves as they are: "SSE transport remains unchanged")."""
    out = []
    for block in body.decode("utf-8").split("\n\n"):
        if not block.strip():
            continue
        name, data = None, []
        for line in block.split("\n"):
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
        if data or not all(line.startswith(":") for line in block.split("\n")):
            out.append((name, "\n".join(data)))
    return out


def check(body: bytes, *, ended: bool = True) -> tuple[list[str], list[dict[str, Any]]]:
    """The violations of the draft in ``body``; ``ended``: the stream must have its end (not a
    stream the upstream cut, which the gateway passes on as a cut)."""
    bad: list[str] = []
    parsed: list[dict[str, Any]] = []
    for i, (name, data) in enumerate(events(body)):
        try:
            obj = json.loads(data)
        except ValueError:
            bad.append(f"event {i}: data is not one JSON object (5.1)")
            continue
        if not isinstance(obj, dict):
            bad.append(f"event {i}: data is not an object (5.1)")
            continue
        parsed.append(obj)
        if obj.get("v") != "1.0":
            bad.append(f"event {i}: v is {obj.get('v')!r}, not '1.0' (5.2)")
        if obj.get("seq") != i or type(obj.get("seq")) is not int:
            bad.append(f"event {i}: seq is {obj.get('seq')!r}, not {i} (5.2.1)")
        kind = obj.get("type")
        if kind != name:
            bad.append(f"event {i}: type {kind!r} does not match event: {name!r} (5.2)")
        if kind not in TYPES:
            bad.append(f"event {i}: unknown type {kind!r}")
            continue
        for field, ftype in REQUIRED[kind].items():
            if type(obj.get(field)) is not ftype:
                bad.append(f"event {i}: {kind} needs {field} ({ftype.__name__}) (5.3)")
        if kind == "content.delta" and not isinstance(obj.get("delta", {}).get("text"), str):
            bad.append(f"event {i}: content.delta needs delta.text (5.3.2)")
        if kind == "content.stop" and obj.get("stop_reason") not in STOP_REASONS:
            bad.append(f"event {i}: stop_reason {obj.get('stop_reason')!r} (5.3.3)")
        if kind == "error" and obj.get("code") not in ERROR_CODES:
            bad.append(f"event {i}: error code {obj.get('code')!r} (5.3.6)")
    kinds = [obj.get("type") for obj in parsed]
    if not kinds or kinds[0] != "stream.start":  # 5.4 rule 1
        bad.append("the first event is not stream.start")
    if kinds.count("stream.start") > 1:
        bad.append("more than one stream.start")
    ends = kinds.count("stream.end")
    if ended and ends != 1:  # 5.4 rule 7
        bad.append(f"{ends} stream.end events, not exactly one")
    if ends and kinds[-1] != "stream.end":
        bad.append("stream.end is not the last event")
    if kinds.count("error") > 1:  # 5.3.6: zero or one
        bad.append("more than one error event")
    if "error" in kinds and kinds[kinds.index("error") + 1 :] not in ([], ["stream.end"]):
        bad.append("events other than stream.end after error")
    ids = [obj["id"] for obj in parsed if obj.get("type") == "tool.call" and "id" in obj]
    if len(ids) != len(set(ids)):
        bad.append("tool.call ids are not unique")
    return bad, parsed


def test_the_checker_catches_what_it_checks() -> None:
    good = (
        b'event: stream.start\ndata: {"v":"1.0","seq":0,"type":"stream.start",'
        b'"model":"m","created":1}\n\n'
        b'event: stream.end\ndata: {"v":"1.0","seq":1,"type":"stream.end"}\n\n'
    )
    assert check(good)[0] == []
    gap = good.replace(b'"seq":1', b'"seq":2')
    assert any("seq" in v for v in check(gap)[0])
    renamed = good.replace(b"event: stream.end", b"event: end")
    assert any("does not match" in v for v in check(renamed)[0])
    assert any("stream.end" in v for v in check(good.split(b"\n\n")[0] + b"\n\n")[0])
