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
