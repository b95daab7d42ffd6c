"""What two answers of llama.cpp to the same request share: `steady` drops what differs from
one request to the next (ids, timestamps, timing values), so an answer through the gateway can
be compared with one straight from llama.cpp."""

from __future__ import annotations

import json
from typing import Any


def steady(doc: Any) -> Any:
    """``doc`` (JSON values) with the ids of completions and tool calls, every ``created`` and
    the values of llama.cpp's ``timings`` (their names stay) replaced by their type's name."""
    if isinstance(doc, list):
        return [steady(v) for v in doc]
    if not isinstance(doc, dict):
        return doc
    fresh = str(doc.get("object", "")).startswith("chat.completion") or "function" in doc
    out: dict[str, Any] = {}
    for k, v in doc.items():
        if k == "created" or (k == "id" and fresh):
            out[k] = type(v).__name__
        elif k == "timings":
            out[k] = sorted(v)
        else:
            out[k] = steady(v)
    return out


def named(doc: Any, ids: list[str]) -> Any:
    """``doc`` with each of ``ids`` (strings a server made up for one answer: completion and
    tool call ids), wherever it appears, replaced by ``<id N>`` in the order given."""
    text = json.dumps(doc)
    for n, value in enumerate(dict.fromkeys(ids)):
        text = text.replace(json.dumps(value), json.dumps(f"<id {n}>"))
    return json.loads(text)
