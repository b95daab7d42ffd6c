"""Every OpenAI fixture, whole, byte by byte and in pieces of 7, with both JSON backends: the ones
written from the wire reference (openai/) and the ones recorded from llama.cpp (llamacpp/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from svir_proto.openai import (
    ChatRequest,
    ChatStreamDecoder,
    UserMessage,
    body_outcome,
    parse_models,
    plan_retry,
)
from tests.conformance.openai_results import summary
from tests.helpers import CONFORMANCE, MODES, pieces, run

FIXTURES = sorted((CONFORMANCE / "openai").glob("*.sse")) + sorted(
    (CONFORMANCE / "llamacpp").glob("*.sse")
)
REQUEST = ChatRequest(model="m", messages=[UserMessage(content="hi")], include_usage=True)
RECORDED_ERRORS = sorted((CONFORMANCE / "llamacpp").glob("*.error.json"))


def load(path: Path) -> dict[str, Any]:
    meta: dict[str, Any] = json.loads(path.with_suffix(".json").read_text("utf-8"))
    return meta


def test_fixtures_name_their_source() -> None:
    assert len(FIXTURES) >= 20
    for f in FIXTURES:
        meta = load(f)
        assert meta["source"]
        assert meta["expected"]["events"]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
@pytest.mark.parametrize("mode", MODES)
def test_fixture(path: Path, mode: str, json_backend: str) -> None:
    meta = load(path)
    body = path.read_bytes()
    decoder = ChatStreamDecoder(**meta["options"])
    events = run(decoder, pieces(mode, body))
    assert summary(events, decoder.result) == meta["expected"]


def test_wire_reference_example_result() -> None:
    """The reference states the result in words: call-a is lookup({"value":1}), call-b
    lookup({"value":2})."""
    d = ChatStreamDecoder()
    run(d, [(CONFORMANCE / "openai" / "wire-3.3-tool-calls.sse").read_bytes()])
    calls = d.result.tool_calls
    assert [(c.id, c.name) for c in calls] == [("call-a", "lookup"), ("call-b", "lookup")]
    assert [p.value for p in d.result.parsed_arguments()] == [{"value": 1}, {"value": 2}]
    assert d.result.complete


@pytest.mark.parametrize("path", RECORDED_ERRORS, ids=lambda p: p.name)
def test_recorded_error_bodies_are_typed(path: Path) -> None:
    rec = json.loads(path.read_text("utf-8"))
    headers = [("content-type", rec["content_type"])]
    failure = body_outcome(rec["status"], headers, rec["body"].encode()).failure
    assert (failure.kind.value, failure.code) == (rec["kind"], rec["code"])
    assert plan_retry(REQUEST, failure) is None  # neither is worth sending again


def test_recorded_llamacpp_sources_and_model_listing() -> None:
    recorded = sorted((CONFORMANCE / "llamacpp").glob("*.json"))
    assert len(recorded) >= 8
    for path in recorded:
        assert json.loads(path.read_text("utf-8"))["source"].startswith("a capture")
    listing = json.loads(next((CONFORMANCE / "llamacpp").glob("*-models.json")).read_text())
    models = parse_models(listing["body"].encode())
    assert [(m.id, m.kind.value) for m in models] == [("smollm2-135m", "chat")]
