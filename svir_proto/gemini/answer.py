"""A whole answer as one ``GenerateContentResponse``: what a Gemini client that asked for no
stream reads (``POST /v1beta/models/M:generateContent``: the google-genai SDK's
``generate_content()``, the AI SDK's ``generateText``), from any upstream's `Completion`
(`svir_proto.answer`). It must never do I/O, nor hand a client a call it would run with
arguments the model did not give.

The object is the one the stream encoder's chunks (`encoder`) add up to, with its mappings:

Rule 1 (parts): candidate 0's ``content`` (role ``model``) has the answer's parts in the order
    the stream gave them (`svir_proto.answer.ordered_parts`). Text is a text part, and so is
    a refusal (Gemini has none: said in ``lost``), text next to text one part; reasoning is a
    ``{"text": ..., "thought": true}`` part, whatever its carrier (another's is said), thought
    next to thought one part. A redacted block's data is a signature of its own (Rule 2).
Rule 2 (signatures): a signed block of Gemini's own reasoning whose ``item_id`` names a call
    the answer writes rides on that call's part as ``thoughtSignature``, wherever the block
    came (`svir_proto.gemini.parts.model_parts`), as Gemini sends it and wants it back; any
    other signature goes on the part of the run of text or thought it closes, or on an empty
    text part where none is open (as Gemini streams one). One of another carrier, or a
    redacted block's data, goes in base64 as `svir_proto._signatures.carried_in_base64`
    writes it (encoder Rule 3: the SDK refuses a signature that is not base64, and sends it
    back to go to its vendor whole). `GeminiStreamDecoder` reads each back as the block it
    was (stream Rule 3).
Rule 3 (calls): a call is a ``functionCall`` part ``{"id", "name", "args"}``, ``args`` its
    arguments read as a JSON object (none: ``{}``). A call whose arguments are not a JSON
    object cannot be written: the answer is then a `Failure`, as the stream encoder's stream
    ends with it (a client would run the call with arguments the model never gave); unless
    the answer was cut by its length, which cut the call: it is then left out, said in
    ``lost``, and the rest of the answer goes (as the Messages answer and the stream do).
Rule 4 (the end): ``finishReason`` on the candidate when the result has a finish, as the
    stream writes it (``_finish_value``; the content filter's when a verdict blocked the
    answer), none when it has none; ``usageMetadata`` when the upstream counted (else none,
    and nothing said: left out, not made up, as the stream leaves it out), with the
    thoughts taken out of the candidates (`_wire.usage_out`) and the cache writes under
    ``usageMetadata["vendor:svir"]``; ``modelVersion``, ``responseId`` and, with
    ``created``, ``createTime`` (Vertex AI's field), as on every chunk of the stream.
Rule 5 (verdicts): the last verdict on the answer is the candidate's ``safetyRatings``, the
    last on the prompt ``promptFeedback.safetyRatings``, each in Gemini's own categories
    only (others said). A prompt blocked with no answer (a filtered prompt verdict, a
    ``content_filter`` finish, and no part) is ``promptFeedback.blockReason`` and no
    candidate at all, as Gemini answers it.

``lost`` receives what its stream would say it lost, one sentence each, once; but for a call
the length cut (Rule 3), said as the Messages answer says it.
"""

from __future__ import annotations

from typing import Any, Final

from .._json import dumps
from .._signatures import carried_in_base64
from ..answer import cut_by_length, finished_of, not_an_object, ordered_parts
from ..errors import Failure
from ..events import (
    Completion,
    FinishReason,
    ReasoningBlock,
    ReasoningDelta,
    RefusalDelta,
    TextDelta,
    ToolCall,
)
from . import _safety
from ._wire import BLOCK_REASONS, CARRIER, SVIR_EXTENSION, usage_out
from .encoder import FUNCTION_ARGS, _finish_value, _rfc3339, _unvalued, call_args

__all__ = ["generate_content_response"]

# what the stream encoder says it lost (`GeminiStreamEncoder.lost`), word for word
_REFUSAL_AS_TEXT: Final = "a refusal: Gemini has none, it went out as text"
_OTHER_CATEGORIES: Final = "filter verdicts in categories Gemini has not: not sent"


def generate_content_response(
    result: Completion,
    *,
    model: str,
    response_id: str,
    created: int,
    lost: list[str] | None = None,
) -> bytes | Failure:
    """The ``GenerateContentResponse`` for ``result``, as JSON (see the module's rules).

    Args:
        result: the answer, folded from any upstream's stream (`svir_proto.answer.AnswerFold`).
        model: ``modelVersion``.
        response_id: ``responseId``.
        created: seconds since the epoch (the caller's clock); when not 0, ``createTime``.
        lost: a list that receives a sentence for each thing the answer could not write.

    Returns:
        The object's bytes, or the `Failure` that it cannot be written (Rule 3).
    """
    notes: list[str] = []

    def note(sentence: str) -> None:
        if sentence not in notes:
            notes.append(sentence)

    # Rule 3: every call's args first, so that a failure writes nothing
    args: dict[ToolCall, dict[str, Any]] = {}
    for call in result.tool_calls:
        value = call_args(call.arguments)
        if value is not None:
            args[call] = value
        elif result.finish_reason is not FinishReason.LENGTH:
            return not_an_object(call, FUNCTION_ARGS)
        else:
            note(cut_by_length(call, written=False))
    ids = {call.id for call in args}
    on_call = {  # Rule 2
        block.item_id: block.signature
        for block in result.reasoning_blocks
        if _own(block) and block.item_id in ids
    }
    parts: list[dict[str, Any]] = []
    run: list[str] = []  # the texts of the run of text or thought going on, joined at its end
    thought = False  # whether that run is thought

    def close(signature: str | None = None) -> None:
        """The run going on ends: its part, carrying ``signature`` if one closes it."""
        part: dict[str, Any] = {"text": "".join(run)}
        if thought and run:
            part["thought"] = True
        if signature is not None:
            part["thoughtSignature"] = signature
        if run or signature is not None:
            parts.append(part)
        run.clear()

    def add(text: str, of_thought: bool) -> None:
        nonlocal thought
        if run and thought is not of_thought:
            close()
        thought = of_thought
        run.append(text)

    for part in ordered_parts(result):
        if type(part) is TextDelta or type(part) is RefusalDelta:
            add(part.text, False)
        elif type(part) is ReasoningDelta:
            if part.carrier != CARRIER:
                note(f"reasoning's carrier {part.carrier!r}: sent as thought parts")
            add(part.text, True)
        elif type(part) is ReasoningBlock:
            if part.carrier != CARRIER and part.text:
                note(f"reasoning's carrier {part.carrier!r}: sent as thought parts")
            if part.text:
                add(part.text, True)
            if not _own(part):  # another vendor's (or redacted data): carried (Rule 2)
                close(
                    carried_in_base64(
                        part.signature, part.carrier, part.item_id, redacted=part.redacted
                    )
                )
            elif part.item_id not in ids:  # (else it rides on its call)
                close(part.signature)
        elif type(part) is ToolCall and part in args:  # (a call the length cut: left out)
            close()
            written: dict[str, Any] = {
                "functionCall": {"id": part.id, "name": part.name, "args": args[part]}
            }
            signature = on_call.get(part.id)
            if signature is not None:
                written["thoughtSignature"] = signature
            parts.append(written)
    close()
    if result.refusal:
        note(_REFUSAL_AS_TEXT)

    out: dict[str, Any] = {}
    prompt = answer = None  # the last verdict of each scope
    blocked = False  # a verdict on the prompt blocked it
    for verdict in result.filter_verdicts:
        if len(_safety.ratings(verdict.results)) < len(verdict.results):
            note(_OTHER_CATEGORIES)
        if verdict.scope == "prompt":
            prompt = verdict
            blocked = blocked or verdict.filtered
        else:
            answer = verdict
    finished = finished_of(result, verdicts=True)  # (`BLOCKED` when a verdict blocked it)
    feedback: dict[str, Any] = {}
    if (
        blocked
        and finished is not None
        and finished.reason is FinishReason.CONTENT_FILTER
        and not parts
    ):  # Rule 5: the prompt was blocked, nothing was answered
        feedback["blockReason"] = finished.raw if finished.raw in BLOCK_REASONS else "OTHER"
    else:
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
        if finished is not None:
            candidate["finishReason"] = _finish_value(finished)
            for sentence in _unvalued(finished):
                note(sentence)
        ratings = [] if answer is None else _safety.ratings(answer.results)
        if ratings:
            candidate["safetyRatings"] = ratings
        candidate["index"] = 0
        out["candidates"] = [candidate]
    ratings = [] if prompt is None else _safety.ratings(prompt.results)
    if ratings:
        feedback["safetyRatings"] = ratings
    if feedback:
        out["promptFeedback"] = feedback
    usage = result.usage
    if usage is not None:
        counts: dict[str, Any] = usage_out(usage)
        if usage.cache_creation_tokens is not None:
            counts[SVIR_EXTENSION] = {"cacheCreationTokenCount": usage.cache_creation_tokens}
        out["usageMetadata"] = counts
    out["modelVersion"] = model
    out["responseId"] = response_id
    if created:
        out["createTime"] = _rfc3339(created)
    if lost is not None:
        lost += notes
    return dumps(out)


def _own(block: ReasoningBlock) -> bool:
    """A signed block of Gemini's own reasoning: one that can ride on a call (Rule 2)."""
    return block.carrier == CARRIER and not block.redacted
