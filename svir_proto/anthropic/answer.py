"""A whole answer as a Messages API ``message`` object: what an Anthropic client that asked for
no stream reads (the anthropic SDK's ``messages.create()``, the AI SDK's ``generateText``),
from any upstream's `Completion` (`svir_proto.answer`).

The object is the one ``message_start`` opens and the stream's events fill in, with the stream
encoder's mappings (`encoder`): its content blocks in the order the stream gave the answer's
parts (`svir_proto.answer.ordered_parts`; fidelity 43 F08: thinking, a call, thinking, text
came back as both thinking blocks, then the text, then the call): the reasoning's ``thinking``
blocks, each with its signature, ``redacted_thinking`` for a redacted one, reasoning no
signature closed with an empty signature; text, a refusal written as text as the stream
writes it (text and refusal next to each other one block, as the stream writes them); a
``tool_use`` block per call, its ``input`` the arguments read as a JSON object),
``stop_reason`` (`encoder.stop_reason_of`), ``stop_sequence`` ``null``, and ``usage`` with
``input_tokens`` always (`encoder.usage_object`). A call whose arguments are not a JSON object
cannot be written: the answer is then the `Failure` the stream would end with; unless the
answer was cut by its length, which cut the call (fidelity 43 F10: the text before it and its
``max_tokens`` were a 502), which is then left out, said in ``lost``. No I/O here.
"""

from __future__ import annotations

from typing import Any

from .._json import canonical, dumps
from .._signatures import thinking_block
from ..answer import cut_by_length, finished_of, ordered_parts
from ..errors import Failure
from ..events import (
    Completion,
    FinishReason,
    ReasoningBlock,
    ReasoningDelta,
    RefusalDelta,
    TextDelta,
    Usage,
)
from .encoder import (
    NO_USAGE,
    NO_VERDICTS,
    REFUSAL_AS_TEXT,
    an_object,
    not_an_object,
    stop_reason_of,
    unvalued,
    usage_object,
)

__all__ = ["message"]


def message(
    result: Completion, *, message_id: str, model: str, lost: list[str] | None = None
) -> bytes | Failure:
    """The ``message`` object for ``result``, as JSON; or the failure that it cannot be.
    ``lost`` receives a sentence for each thing left out."""
    content: list[dict[str, Any]] = []
    texts: list[str] = []  # the text of the last block, while it is a text block, joined at
    # its end (review 44 H1: text and refusal alternating in 16 k runs took 2.7 to 12.5 s when
    # joined one by one)
    for part in ordered_parts(result):
        if type(part) is TextDelta or type(part) is RefusalDelta:
            if not texts:
                content.append({"type": "text", "text": ""})
            texts.append(part.text)
            continue
        if texts:
            content[-1]["text"] = "".join(texts)
            texts = []
        if type(part) is ReasoningBlock:
            content.append(thinking_block(part))
        elif type(part) is ReasoningDelta:
            content.append({"type": "thinking", "thinking": part.text, "signature": ""})
        elif not an_object(part.arguments):
            if result.finish_reason is not FinishReason.LENGTH:
                return not_an_object(part)
            if lost is not None:
                lost.append(cut_by_length(part, written=False))
        else:
            arguments = part.arguments.strip()
            content.append(
                {
                    "type": "tool_use",
                    "id": part.id,
                    "name": part.name,
                    "input": canonical(arguments) if arguments else {},
                }
            )
    if texts:
        content[-1]["text"] = "".join(texts)
    finished = finished_of(result, verdicts=True)
    if lost is not None:  # (what its stream would say: review 43 M6)
        lost += [] if finished is None else unvalued(finished)
        if result.usage is None:
            lost.append(NO_USAGE)
        if result.refusal:
            lost.append(REFUSAL_AS_TEXT)
        if any(v.filtered or v.detected for v in result.filter_verdicts):
            lost.append(NO_VERDICTS)
    out = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": (
            None if finished is None else stop_reason_of(finished, refused=bool(result.refusal))
        ),
        "stop_sequence": None,
        "usage": usage_object(result.usage or Usage(), start=True),
    }
    return dumps(out)
