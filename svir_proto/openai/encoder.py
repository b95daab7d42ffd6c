"""Events to OpenAI-compatible Chat Completions chunks: the server side of the dialect, for a
gateway that answers OpenAI clients from any upstream.

One event gives at most one chunk. Reasoning goes out under the key it came in, and inline
``think`` reasoning as ``reasoning_content`` (an OpenAI client has the field, so no markers are
needed). A whole `ToolCall` goes out as one piece with its id, name and arguments; with
``tool_call_deltas`` (an OpenAI upstream relayed to an OpenAI client), the `ToolCallDelta`
pieces go out as they came instead, each with its resolved index, and the whole calls that the
decoder emits at the end are not sent again, but one whose index no piece began (an upstream
that sends whole calls only, LLM-Stream's: review 49 S1, the client got none).

Signed reasoning (a `ReasoningSignature`: Anthropic's, Gemini's, the Responses API's) goes out as
LiteLLM writes Anthropic's, in a ``thinking_blocks`` delta when its block ends: the block's text
and signature (another vendor's carried, `svir_proto._signatures.thinking_block`), or a
``redacted_thinking`` block's data, each entry with its ``index`` among them (so that a client
that merges deltas, openai-python's ``stream()``, keeps them apart); a client sends them back in
the assistant message's ``thinking_blocks``. The reasoning of a block is held until then, up to
``max_output_size`` characters (a block longer than that goes out without its entry; the
gateway sets ``--max-answer``), and only of the carriers vendors sign.

A `StreamFailed` is an ``{"error": ...}`` chunk (as vLLM and llama.cpp send it), and the last
chunk of the answer: only the usage and the end follow it. `StreamEnded` writes ``[DONE]`` when
the stream ended with its marker or an error; a cut stays a cut.
"""

from __future__ import annotations

import json
from typing import Any, Final

from .._dialect import DEFAULT_MAX_RESULT_SIZE
from .._json import dumps
from .._signatures import thinking_block
from ..answer import no_value
from ..events import (
    Event,
    FilterVerdict,
    Finished,
    FinishReason,
    ReasoningBlock,
    ReasoningCarrier,
    ReasoningDelta,
    ReasoningSignature,
    RefusalDelta,
    StreamEnded,
    StreamFailed,
    StreamStarted,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from .stream import _FINISH

__all__ = ["ChatStreamEncoder", "filter_results", "finish_value", "reasoning_key", "usage_object"]

_SIGNED: Final = frozenset({"thinking", "summary", "reasoning_text", "thought"})
"""The carriers of reasoning a vendor signs (Anthropic's, the Responses API's, Gemini's): only
theirs is held for a ``thinking_blocks`` entry."""
_AFTER_AN_ERROR: Final = (Usage, StreamEnded)
"""What is still written after a `StreamFailed`: the count of what was spent, and the end."""


def finish_value(finished: Finished) -> str:
    """The ``finish_reason`` for a finish: the raw value when it is OpenAI's and means the same;
    another dialect's (Anthropic's ``end_turn``, ``tool_use``) as the OpenAI value of its
    meaning; an ``OTHER`` finish as it came."""
    raw = finished.raw
    if _FINISH.get(raw) is not finished.reason and finished.reason is not FinishReason.OTHER:
        value: str = finished.reason.value
        return value
    return raw


def unvalued(value: str) -> list[str]:
    """A ``finish_reason`` none of the Chat API's, said (fidelity 43 F03: a paused or failed
    turn goes as it came, not as ``stop``)."""
    if value in _FINISH:
        return []
    return [no_value(value, "the Chat API's finish reasons", "it came")]


def reasoning_key(carrier: ReasoningCarrier | None) -> str:
    """The key reasoning goes under: ``reasoning`` when it came so, else ``reasoning_content``
    (inline ``think`` reasoning too: an OpenAI client has the field, so no markers)."""
    return "reasoning" if carrier == "reasoning" else "reasoning_content"


def usage_object(usage: Usage, *, counted: bool = False) -> dict[str, Any]:
    """OpenAI's ``usage`` object for ``usage``: a count the upstream did not report is
    ``null``, as a stream's chunk passes it on (and our decoder reads it back); ``counted``:
    every count is a number, as in OpenAI's whole answers (0, and the total the sum of the
    others), which the SDKs' types require."""
    out: dict[str, Any] = {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }
    if counted:
        out["prompt_tokens"] = prompt = usage.prompt_tokens or 0
        out["completion_tokens"] = completion = usage.completion_tokens or 0
        if usage.total_tokens is None:
            out["total_tokens"] = prompt + completion
    if usage.cached_tokens is not None:
        out["prompt_tokens_details"] = {"cached_tokens": usage.cached_tokens}
    if usage.reasoning_tokens is not None:
        out["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
    return out


def filter_results(verdict: FilterVerdict) -> dict[str, Any]:
    """Azure's ``content_filter_results`` object for a verdict: a category's result, or its
    list of results for the categories that name each (``custom_blocklists``)."""
    results: dict[str, Any] = {}
    for r in verdict.results:
        entry = {
            k: v
            for k, v in (
                ("filtered", r.filtered),
                ("detected", r.detected),
                ("severity", r.severity),
                ("id", r.id),
            )
            if v is not None
        }
        if r.id is not None:
            results.setdefault(r.category, []).append(entry)
        else:
            results[r.category] = entry
    return results


class ChatStreamEncoder:
    """Write events as ``chat.completion.chunk`` SSE events.

    Args:
        response_id, model, created: the identity every chunk carries; a `StreamStarted`
            replaces whichever it sets.
        usage: write the trailing usage chunk (``choices: []``), as OpenAI does only for a
            request with ``stream_options.include_usage``: a client that did not ask reads
            every chunk's ``choices[0]`` (openai-python's own README loop), and an upstream
            of another dialect sends usage unasked.
        max_output_size: characters of a block of signed reasoning held to write its
            ``thinking_blocks`` entry (see the module).
    """

    def __init__(
        self,
        *,
        response_id: str = "chatcmpl-svir",
        model: str = "",
        created: int = 0,
        tool_call_deltas: bool = False,
        usage: bool = True,
        max_output_size: int = DEFAULT_MAX_RESULT_SIZE,
    ):
        self.response_id = response_id
        self.model = model
        self.created = created
        self.tool_call_deltas = tool_call_deltas
        self._begun: set[int] = set()  # with tool_call_deltas: the calls pieces began
        self.usage = usage
        self.max_output_size = max_output_size
        self._thought: list[str] = []  # the reasoning of the block its signature will end
        self._thought_size = 0  # its characters; beyond max_output_size, not held
        self._signed = 0  # thinking_blocks entries written
        self.done = False
        """``[DONE]`` was written: the stream ended with its marker."""
        self._failed = False
        self._head = b""  # the bytes every chunk begins with, for the current identity
        self.lost: list[str] = []
        """What the Chat API has no value for, a sentence each (a relay says it)."""

    def _text(self, text: str) -> bytes:
        """A content delta, the most frequent chunk: its constant part written once."""
        head = self._head
        if not head:
            head = self._head = (
                b'data: {"id":'
                + dumps(self.response_id)
                + b',"object":"chat.completion.chunk","created":'
                + dumps(self.created)
                + b',"model":'
                + dumps(self.model)
                + b',"choices":[{"index":0,"delta":{"content":'
            )
        return head + dumps(text) + b'},"finish_reason":null}]}\n\n'

    def _chunk(self, choices: list[dict[str, Any]], **extra: Any) -> bytes:
        obj = {
            "id": self.response_id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": choices,
            **extra,
        }
        return (
            b"data: "
            + json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()
            + b"\n\n"
        )

    def _delta(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        return self._chunk([{"index": 0, "delta": delta, "finish_reason": finish}])

    def _thinking_block(self, signature: ReasoningSignature) -> bytes:
        """The ``thinking_blocks`` delta of the block ``signature`` ends (see the module): a
        redacted block has no text, and the reasoning before it is the next block's."""
        whole = self._thought_size <= self.max_output_size
        text = "" if signature.redacted else "".join(self._thought)
        if not signature.redacted:
            self._thought.clear()
            self._thought_size = 0
        if not whole and not signature.redacted:
            return b""  # its text was not held: an entry without it would not verify
        entry = {"index": self._signed, **thinking_block(ReasoningBlock.closed_by(signature, text))}
        self._signed += 1
        return self._delta({"thinking_blocks": [entry]})

    def encode(self, event: Event) -> bytes:
        """The bytes for one event (``b""`` for events with no chunk: ToolCallDelta and the
        HTTP-level events)."""
        if self._failed and type(event) not in _AFTER_AN_ERROR:
            return b""  # the error chunk was the end: what a decoder read on after it is not
            # written (as every other dialect's encoder does), but the usage and the end
        match event:
            case StreamStarted():
                self.response_id = event.response_id or self.response_id
                self.model = event.model or self.model
                self.created = event.created or self.created
                self._head = b""
                # null, as OpenAI's first chunk of a tool-only answer: "" made openai-python
                # report content "" and the AI SDK open an empty text part (issue 17)
                return self._delta({"role": "assistant", "content": None})
            case TextDelta():
                return self._text(event.text)
            case ReasoningDelta():
                if event.carrier in _SIGNED:  # held for its block's entry (nothing else is)
                    self._thought_size += len(event.text)
                    if self._thought_size <= self.max_output_size:
                        self._thought.append(event.text)
                return self._delta({reasoning_key(event.carrier): event.text})
            case ReasoningSignature():
                return self._thinking_block(event)
            case RefusalDelta():
                return self._delta({"refusal": event.text})
            case ToolCallDelta() if self.tool_call_deltas:
                self._begun.add(event.index)
                piece: dict[str, Any] = {"index": event.index}
                if event.id is not None:
                    piece["id"] = event.id
                    piece["type"] = "function"
                function: dict[str, str] = {"arguments": event.arguments}
                if event.name is not None:
                    function["name"] = event.name
                piece["function"] = function
                return self._delta({"tool_calls": [piece]})
            case ToolCall() if not self.tool_call_deltas or event.index not in self._begun:
                call = {
                    "index": event.index,
                    "id": event.id,
                    "type": "function",
                    "function": {"name": event.name, "arguments": event.arguments},
                }
                return self._delta({"tool_calls": [call]})
            case Finished():
                value = finish_value(event)
                self.lost += unvalued(value)
                return self._delta({}, value)
            case Usage() if self.usage:
                return self._chunk([], usage=usage_object(event))
            case FilterVerdict():
                # Azure writes a prompt's verdict with no choice and an answer's with no
                # delta; openai-python's README loop reads every chunk's choices[0].delta
                # (fidelity 51 N2: a Gemini upstream's safety ratings broke it), which an
                # empty delta beside the verdict keeps whole, for either kind of client
                results = filter_results(event)
                choice: dict[str, Any] = {"index": 0, "delta": {}, "finish_reason": None}
                if event.scope == "prompt":
                    return self._chunk(
                        [choice],
                        prompt_filter_results=[
                            {"prompt_index": 0, "content_filter_results": results}
                        ],
                    )
                choice["content_filter_results"] = results
                if event.offsets is not None:
                    choice["content_filter_offsets"] = {
                        k: getattr(event.offsets, k)
                        for k in ("check_offset", "start_offset", "end_offset")
                    }
                return self._chunk([choice])
            case StreamFailed():
                self._failed = True
                error = {
                    "message": event.error.message,
                    "type": event.error.kind.value,
                    "code": event.error.code,
                }
                return (
                    b"data: " + json.dumps({"error": error}, ensure_ascii=False).encode() + b"\n\n"
                )
            case StreamEnded():
                if event.done or self._failed:  # the upstream's own ending, mirrored
                    self.done = True
                    return b"data: [DONE]\n\n"
                return b""
        return b""
