"""The event vocabulary's few helpers: `Completion.usable`."""

from __future__ import annotations

import pytest

from svir_proto import Completion, FinishReason


@pytest.mark.parametrize(
    ("fields", "usable"),
    [
        ({"complete": True, "finish_reason": FinishReason.STOP}, True),
        ({"complete": True, "finish_reason": FinishReason.TOOL_CALLS}, True),
        ({"complete": True, "finish_reason": FinishReason.LENGTH}, False),  # cut by max_tokens
        ({"complete": True, "finish_reason": FinishReason.CONTENT_FILTER}, False),
        ({"complete": True, "finish_reason": FinishReason.OTHER}, False),
        ({"complete": True, "finish_reason": FinishReason.STOP, "filtered": True}, False),
        ({"complete": False, "finish_reason": FinishReason.STOP}, False),  # a cut stream
    ],
)
def test_usable_is_a_whole_answer_that_stopped_on_its_own(
    fields: dict[str, object], usable: bool
) -> None:
    assert Completion(**fields).usable is usable  # type: ignore[arg-type]


def test_dumps_writes_what_the_standard_library_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from svir_proto import _json

    for value in ("plain", "é \u2028 \x7f \x00", "\ud800 lone", {"a": [1, None, True]}):
        want = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        assert _json.dumps(value) == want.encode("utf-8", "surrogatepass")
    monkeypatch.setattr(_json, "orjson", None)  # without the fast extra
    assert _json.dumps({"x": "é"}) == '{"x":"é"}'.encode()
