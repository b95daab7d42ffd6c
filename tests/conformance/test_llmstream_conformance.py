"""The draft's own examples (sections 4.8, 5.3, 5.5), decoded and re-encoded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from svir_proto.llmstream import LLMRequest, LLMStreamDecoder, LLMStreamEncoder
from tests.conformance.openai_results import summary
from tests.helpers import CONFORMANCE, MODES, pieces, run

DIR = CONFORMANCE / "llmstream"
STREAMS = sorted(DIR.glob("*.sse"))
REQUESTS = sorted(DIR.glob("*.request.json"))


def meta(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.with_suffix(".json").read_text("utf-8"))
    return data


def test_the_draft_examples_are_all_here() -> None:
    names = {p.stem for p in STREAMS} | {p.name.split(".request")[0] for p in REQUESTS}
    assert {
        "draft-5.5-complete-example",
        "draft-5.3-event-examples",
        "draft-4.8-tool-flow-response-1",
        "draft-4.8-request-1",
    } <= names
    for p in STREAMS:
        assert meta(p)["source"]


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.stem)
@pytest.mark.parametrize("mode", MODES)
def test_stream(path: Path, mode: str, json_backend: str) -> None:
    m = meta(path)
    body = path.read_bytes()
    d = LLMStreamDecoder(**m["options"])
    assert summary(run(d, pieces(mode, body)), d.result) == m["expected"]


def test_the_encoder_writes_the_complete_example_byte_for_byte() -> None:
    e = LLMStreamEncoder(request_id="550e8400-...")
    out = e.start(model="example-model", created=1749292800)
    for text in ("The", " weather", " in Vienna", " is 24C and sunny."):
        out += e.delta(text)
    out += e.stop("end_turn") + e.usage(input_tokens=42, output_tokens=8) + e.end()
    assert out == (DIR / "draft-5.5-complete-example.sse").read_bytes()


@pytest.mark.parametrize("path", REQUESTS, ids=lambda p: p.name)
def test_request_parses_and_encodes_back(path: Path) -> None:
    doc = json.loads(path.read_text("utf-8"))["request"]
    request = LLMRequest.parse(json.dumps(doc).encode())
    body = request.body()
    raw = body.read()
    assert len(raw) == body.content_length
    assert json.loads(raw) == doc
    assert body.content_type == "application/llm-request+json"
