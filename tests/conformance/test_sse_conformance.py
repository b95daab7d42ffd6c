"""The WHATWG and wire-reference SSE cases, fed whole, byte by byte, and in pieces of 7."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from svir_proto.sse import EndOfStream, ServerSentEvent, SSEComment, SSEDecoder, SSEItem
from tests.helpers import CONFORMANCE, MODES, case_body, load_cases, pieces, run

FILES = sorted((CONFORMANCE / "sse").glob("*.json"))
CASES = [(f.name, c) for f in FILES for c in load_cases(f)]


def expected(case: dict[str, Any]) -> list[SSEItem]:
    out: list[SSEItem] = []
    for e in case["events"]:
        if "comment" in e:
            out.append(SSEComment(text=e["comment"]))
        else:
            out.append(
                ServerSentEvent(
                    event=e.get("event", "message"),
                    data=e["data"],
                    id=e.get("id", ""),
                    retry=e.get("retry"),
                )
            )
    out.append(EndOfStream(incomplete=case["incomplete"]))
    return out


def test_files_exist_and_name_their_source() -> None:
    import json

    assert len(FILES) >= 2
    for f in FILES:
        assert json.loads(f.read_text())["source"]


@pytest.mark.parametrize(("file", "case"), CASES, ids=[f"{f}:{c['name']}" for f, c in CASES])
@pytest.mark.parametrize("mode", MODES)
def test_case(file: str, case: dict[str, Any], mode: str) -> None:
    assert run(SSEDecoder(), pieces(mode, case_body(case))) == expected(case)


def test_conformance_dir_is_real() -> None:
    assert Path(CONFORMANCE / "sse").is_dir()
