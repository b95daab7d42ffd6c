"""Every Messages API fixture, whole, byte by byte and in pieces of 7, with both JSON backends:
the ones recorded from llama.cpp's ``POST /v1/messages`` and the ones written from Anthropic's
API reference (each names its section). Each also goes through our encoder and back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from svir_proto.anthropic import MessagesStreamDecoder, MessagesStreamEncoder, body_outcome
from svir_proto.events import ToolCall
from tests.conformance.openai_results import summary
from tests.helpers import CONFORMANCE, MODES, pieces, run

DIR = CONFORMANCE / "anthropic"
FIXTURES = sorted(DIR.glob("*.sse"))
RECORDED_ERRORS = sorted(DIR.glob("*.error.json"))


def load(path: Path) -> dict[str, Any]:
    meta: dict[str, Any] = json.loads(path.with_suffix(".json").read_text("utf-8"))
    return meta


def test_fixtures_name_their_source() -> None:
    assert len(FIXTURES) >= 15
    recorded = [f for f in FIXTURES if f.name.startswith("llama-cpp")]
    assert len(recorded) >= 3
    for f in FIXTURES:
        meta = load(f)
        assert meta["source"]
        assert meta["expected"]["events"]
    for f in recorded:
        assert load(f)["source"].startswith("a capture")


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
@pytest.mark.parametrize("mode", MODES)
def test_fixture(path: Path, mode: str, json_backend: str) -> None:
    meta = load(path)
    decoder = MessagesStreamDecoder(**meta["options"])
    events = run(decoder, pieces(mode, path.read_bytes()))
    assert summary(events, decoder.result) == meta["expected"]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_fixture_through_our_encoder_and_back(path: Path) -> None:
    """What the encoder writes decodes to the same events and result, except the noted problems
    (what was not carried is not written) and what the encoder writes at the end (a cut stays
    a cut; the tool calls come whole again once the stream is complete)."""
    meta = load(path)
    decoder = MessagesStreamDecoder(**meta["options"])
    events = run(decoder, [path.read_bytes()])
    encoder = MessagesStreamEncoder()
    body = b"".join(encoder.encode(e) for e in events)
    again = MessagesStreamDecoder(**meta["options"])
    back = run(again, [body])
    first, second = decoder.result, again.result
    assert [e for e in back if not isinstance(e, ToolCall)] == [
        e for e in events if not isinstance(e, ToolCall)
    ]
    assert second.tool_calls == first.tool_calls
    fields = ("text", "reasoning", "reasoning_blocks", "tool_calls", "pending_tool_calls")
    fields += ("finish_reason", "finish_raw", "usage", "error", "done", "complete")
    assert {f: getattr(second, f) for f in fields} == {f: getattr(first, f) for f in fields}


@pytest.mark.parametrize("path", RECORDED_ERRORS, ids=lambda p: p.name)
def test_recorded_error_bodies_are_typed(path: Path) -> None:
    rec = json.loads(path.read_text("utf-8"))
    failure = body_outcome(
        rec["status"], [("content-type", rec["content_type"])], rec["body"].encode()
    )
    assert (failure.failure.kind.value, failure.failure.code) == (rec["kind"], rec["code"])
    assert rec["kind"] == "context_overflow"
