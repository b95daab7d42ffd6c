"""A whole answer as a Chat Completions ``chat.completion`` object: what an OpenAI client that
asked for no stream reads (openai-python's ``create()``, the AI SDK's ``generateText``), from
any upstream's `Completion` (`svir_proto.answer`).

The object is what OpenAI returns, with the stream encoder's mappings (`encoder`): one choice;
its message has ``content`` (``null`` when there is no text but a refusal or tool calls, as
OpenAI writes it), ``refusal``, the reasoning under the key it came in (``reasoning`` or
``reasoning_content``), and ``tool_calls`` when there are any; ``finish_reason`` as the stream
writes it (``null`` with no finish); signed reasoning in ``thinking_blocks``, as the stream
writes it (`encoder`); ``usage`` when the upstream gave it. Azure's content-filter
verdicts go where Azure puts them: the prompt's in ``prompt_filter_results``, the answer's last
in the choice's ``content_filter_results``. No I/O here.
"""

from __future__ import annotations

from typing import Any

from .._json import dumps
from .._signatures import thinking_block
from ..answer import finished_of
from ..events import Completion
from .encoder import filter_results, finish_value, reasoning_key, unvalued, usage_object

__all__ = ["chat_completion"]


def chat_completion(
    result: Completion,
    *,
    response_id: str,
    model: str,
    created: int,
    lost: list[str] | None = None,
) -> bytes:
    """The ``chat.completion`` object for ``result``, as JSON; ``lost`` receives what it
    could not write, as its stream would say it (review 43 M6)."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": result.text
        if result.text or not (result.refusal or result.tool_calls)
        else None,
        "refusal": result.refusal or None,
    }
    if result.reasoning:
        message[reasoning_key(result.reasoning_carrier)] = result.reasoning
    if result.reasoning_blocks:
        message["thinking_blocks"] = [thinking_block(b) for b in result.reasoning_blocks]
    if result.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in result.tool_calls
        ]
    finished = finished_of(result)
    value = None if finished is None else finish_value(finished)
    if lost is not None and value is not None:
        lost += unvalued(value)
    choice: dict[str, Any] = {
        "index": 0,
        "message": message,
        "logprobs": None,
        "finish_reason": value,
    }
    out: dict[str, Any] = {
        "id": response_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [choice],
    }
    prompt = [v for v in result.filter_verdicts if v.scope == "prompt"]
    answer = [v for v in result.filter_verdicts if v.scope == "completion"]
    if prompt:
        out["prompt_filter_results"] = [
            {"prompt_index": 0, "content_filter_results": filter_results(prompt[-1])}
        ]
    if answer:
        choice["content_filter_results"] = filter_results(answer[-1])
    if result.usage is not None:
        out["usage"] = usage_object(result.usage, counted=True)
    return dumps(out)
