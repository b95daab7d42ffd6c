"""Every Gemini fixture (tests/conformance/gemini/), whole, byte by byte, in pieces of 7 and
one event per read, with both JSON backends; the HTTP error bodies; the request bodies of the
reference."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from svir_proto import RequestError
from svir_proto.gemini import GeminiRequest, GeminiStreamDecoder, body_outcome
from tests.conformance.openai_results import summary
from tests.helpers import CONFORMANCE, MODES, pieces, run

HERE = CONFORMANCE / "gemini"
FIXTURES = sorted(HERE.glob("*.sse"))
ERRORS = json.loads((HERE / "errors.json").read_text("utf-8"))["cases"]
REQUESTS = json.loads((HERE / "requests.json").read_text("utf-8"))


def load(path: Path) -> dict[str, Any]:
    meta: dict[str, Any] = json.loads(path.with_suffix(".json").read_text("utf-8"))
    return meta


def test_fixtures_name_their_source() -> None:
    assert len(FIXTURES) >= 20
    for f in FIXTURES:
        meta = load(f)
        assert meta["source"]
        assert meta["expected"]["events"]
    for case in [*ERRORS, *REQUESTS["valid"], *REQUESTS["invalid"]]:
        assert case["source"]


def feed(mode: str, body: bytes) -> list[bytes]:
    """The suites' three feeds, and one event per read (a live stream: the fast lanes)."""
    if mode == "per-event":
        sep = b"\r\n\r\n" if b"\r\n\r\n" in body else b"\n\n"
        blocks = body.split(sep)
        return [b + sep for b in blocks[:-1]] + ([blocks[-1]] if blocks[-1] else [])
    return pieces(mode, body)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
@pytest.mark.parametrize("mode", [*MODES, "per-event"])
def test_fixture(path: Path, mode: str, json_backend: str) -> None:
    meta = load(path)
    decoder = GeminiStreamDecoder(**meta["options"])
    events = run(decoder, feed(mode, path.read_bytes()))
    assert summary(events, decoder.result) == meta["expected"]


def test_the_fixtures_say_what_their_names_say() -> None:
    """A few facts, stated in words, that the expected results must show."""

    def result(name: str) -> dict[str, Any]:
        out: dict[str, Any] = load(HERE / f"{name}.sse")["expected"]["result"]
        return out

    assert result("stream-text")["usage"]["completion_tokens"] == 24 + 231  # thoughts counted
    assert result("prompt-blocked")["finish_raw"] == "SAFETY"
    assert result("prompt-blocked")["complete"]
    assert result("error-mid-stream")["done"]
    assert not result("error-mid-stream")["complete"]
    assert not result("no-finish-clean-end")["done"]
    assert result("cut-inside-event")["cut"]
    assert result("function-call-2.5")["tool_calls"][0]["id"] == "u7jYaNyOEp2I1dkP0ZfQoAU-0"
    usage = result("usage-cache-and-tools")["usage"]
    assert (usage["prompt_tokens"], usage["cached_tokens"]) == (2048 + 150, 2000)
    assert usage["completion_tokens"] == 8 + 330
    signed = result("parallel-calls-ids")["reasoning_blocks"]
    assert [(b["item_id"], b["text"]) for b in signed] == [("fc-a1", "Checking both cities.")]


@pytest.mark.parametrize("case", ERRORS, ids=lambda c: c["name"])
def test_error_bodies_are_typed(case: dict[str, Any]) -> None:
    failure = body_outcome(
        case["status"], [tuple(h) for h in case["headers"]], case["body"].encode()
    ).failure
    got = {"kind": failure.kind.value, "code": failure.code, "retry_after": failure.retry_after}
    assert got == case["expected"]
    assert failure.status == case["status"]


@pytest.mark.parametrize("case", REQUESTS["valid"], ids=lambda c: c["name"])
def test_reference_requests_parse_and_encode_back(case: dict[str, Any]) -> None:
    raw = json.dumps(case["body"]).encode()
    request = GeminiRequest.parse(raw, model=case["model"])
    assert request.document() == case.get("document", case["body"])
    body = request.body()
    data = body.read()
    assert body.content_length == len(data)
    assert GeminiRequest.parse(data, model=case["model"]) == request


@pytest.mark.parametrize("case", REQUESTS["invalid"], ids=lambda c: c["name"])
def test_reference_rules_are_enforced_with_the_path(case: dict[str, Any]) -> None:
    with pytest.raises(RequestError) as caught:
        GeminiRequest.parse(json.dumps(case["body"]).encode(), model="gemini-2.5-flash")
    assert caught.value.path == case["path"]
