"""Hypothesis: an assistant's turn that a client sends back, its reasoning, text and calls
interleaved in any order, reaches an upstream whose dialect keeps order in that order (attack
50b N1: it went as reasoning, text, calls, which Anthropic refuses for a rebuilt turn; attack
49b F4: a Gemini text's signature went before the text it followed).

The client writes each piece as its own dialect does: the reasoning the upstream's vendor
signed, carried in the client's signature field as the gateway gave it (`carried_signature`),
each text and call a block or item of its own. Adjacent texts are one run (Anthropic joins its
text blocks, and a Gemini turn is read so).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from svir_proto import dialects
from svir_proto._signatures import carried_signature

SIGNER = {"messages": "thinking", "responses": "summary", "gemini": "thought"}
"""The carrier of each upstream's own reasoning."""


def _runs(kinds: list[str]) -> list[str]:
    out: list[str] = []
    for k in kinds:
        if not (k == "t" and out and out[-1] == "t"):
            out.append(k)
    return out


def _messages_request(kinds: list[str], carrier: str) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = []
    results = []
    for n, k in enumerate(kinds):
        if k == "r":
            sig = carried_signature(f"S{n}", carrier, f"rs_{n}" if carrier == "summary" else None)
            blocks.append({"type": "thinking", "thinking": f"T{n}", "signature": sig})
        elif k == "t":
            blocks.append({"type": "text", "text": f"X{n}"})
        else:
            blocks.append({"type": "tool_use", "id": f"call_{n}", "name": "f", "input": {"n": n}})
            results.append({"type": "tool_result", "tool_use_id": f"call_{n}", "content": "ok"})
    return {
        "model": "m",
        "max_tokens": 50,
        "tools": [{"name": "f", "input_schema": {"type": "object"}}],
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": blocks},
            {"role": "user", "content": results or "next"},
        ],
    }


def _responses_request(kinds: list[str], carrier: str) -> dict[str, Any]:
    items: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
    results = []
    for n, k in enumerate(kinds):
        if k == "r":
            sig = carried_signature(f"S{n}", carrier, None)
            summary = [{"type": "summary_text", "text": f"T{n}"}]
            items.append({"type": "reasoning", "summary": summary, "encrypted_content": sig})
        elif k == "t":
            text = [{"type": "output_text", "text": f"X{n}"}]
            items.append({"type": "message", "role": "assistant", "content": text})
        else:
            items.append({"type": "function_call", "call_id": f"call_{n}", "name": "f",
                          "arguments": json.dumps({"n": n})})  # fmt: skip
            results.append({"type": "function_call_output", "call_id": f"call_{n}", "output": "ok"})
    items += results or [{"role": "user", "content": "next"}]
    tools = [{"type": "function", "name": "f", "parameters": {"type": "object"}}]
    return {"model": "m", "input": items, "tools": tools}


def _sent_order(upstream: str, body: dict[str, Any]) -> list[str]:
    """The kinds of the assistant's turn as the upstream is sent it."""
    if upstream == "messages":
        content = body["messages"][1]["content"]
        if isinstance(content, str):
            return ["t"]
        kind = {"thinking": "r", "text": "t", "tool_use": "c"}
        return _runs([kind[b["type"]] for b in content])
    if upstream == "gemini":
        turn = next(c for c in body["contents"] if c["role"] == "model")
        return _runs(
            [
                "c" if "functionCall" in p else "r" if p.get("thought") else "t"
                for p in turn["parts"]
            ]
        )
    kinds = []
    for item in body["input"][1:]:
        if item.get("type") == "reasoning":
            kinds.append("r")
        elif item.get("type") == "function_call":
            kinds.append("c")
        elif item.get("role") == "assistant":
            kinds.append("t")
    return _runs(kinds)


PAIRS = [("messages", "responses"), ("messages", "gemini"), ("responses", "messages"),
         ("responses", "gemini")]  # fmt: skip


@given(st.lists(st.sampled_from("rtc"), min_size=1, max_size=7), st.sampled_from(PAIRS))
def test_a_turn_sent_back_reaches_the_upstream_in_its_order(
    kinds: list[str], pair: tuple[str, str]
) -> None:
    client, upstream = pair
    build = _messages_request if client == "messages" else _responses_request
    doc = {**build(kinds, SIGNER[upstream]), "stream": True}
    request = dialects.dialect(client).parse(json.dumps(doc).encode())
    lost: list[str] = []
    sent = dialects.translate_request(request, upstream, lost=lost)
    body = json.loads(b"".join(sent.body()))  # type: ignore[attr-defined]
    said = kinds if upstream != "responses" or {"t", "c"} & set(kinds) else [*kinds, "t"]
    assert _sent_order(upstream, body) == _runs(said)  # (a turn of reasoning only: the
    # Responses API's reasoning item is followed by an empty message)
    assert not [n for n in lost if "reasoning" in n], lost
