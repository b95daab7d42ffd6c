"""The parts of a Gemini ``Content`` (Gemini API reference, the ``Content`` and ``Part``
types of "Caching", which "generateContent" uses): text (and thoughts), inline data (from
memory or disk), file data, function calls and their responses, and any other kind kept as it
came.

Every part may carry ``thoughtSignature`` (sent back unchanged, as "Thought signatures" asks)
and keys this module does not model (``extra``: ``videoMetadata``, ``mediaResolution``,
``partMetadata``...; ``inner_extra``: those of the part's data object, such as a blob's
``displayName`` or Vertex AI's ``willContinue``), so that a relay loses nothing. A model turn
built from a `Completion` (`GeminiContent.from_completion`) puts each signature back where
the stream carried it, and its parts in the order the stream gave them.

This module reads files only to measure them and check their type; no other I/O.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal, final

import attrs

from ..answer import AnswerPart, ordered_parts
from ..events import Completion, ReasoningBlock, ReasoningDelta, TextDelta, ToolCall
from ..openai.parts import IMAGE_TYPES, ImagePart
from ._wire import CARRIER

__all__ = [
    "GeminiContent",
    "GeminiFileData",
    "GeminiFunctionCall",
    "GeminiFunctionResponse",
    "GeminiInlineData",
    "GeminiOtherPart",
    "GeminiPart",
    "GeminiText",
]

Role = Literal["user", "model"]
ROLES: Final = ("user", "model")


def _mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return {} if value is None else value


@final
@attrs.frozen(kw_only=True)
class GeminiText:
    """A text part; ``thought``: the model's reasoning (a thought summary)."""

    text: str
    thought: bool = False
    thought_signature: str | None = None
    extra: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)


@final
@attrs.frozen(kw_only=True)
class GeminiInlineData:
    """``inlineData``: media bytes with their MIME type. Exactly one of ``data`` (base64, as a
    request carried it), ``raw`` (bytes) or ``path`` (a file read while the body is sent).
    Use `from_bytes` or `from_path`."""

    mime_type: str
    data: str | None = None
    raw: bytes | None = None
    path: str | None = None
    size: int = attrs.field(default=0, eq=False)  # a path's, measured when it was given
    thought_signature: str | None = None
    extra: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)
    inner_extra: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)

    def __attrs_post_init__(self) -> None:
        if sum(x is not None for x in (self.data, self.raw, self.path)) != 1:
            raise ValueError("inlineData needs exactly one of data, raw or path")

    @classmethod
    def from_bytes(cls, data: bytes, mime_type: str | None = None) -> GeminiInlineData:
        """Bytes in memory; an image's type is checked against its first bytes (and found
        from them when ``mime_type`` is not given), as `svir_proto.openai.ImagePart` does."""
        if not isinstance(data, bytes):
            raise TypeError(f"inlineData bytes must be bytes, not {type(data).__name__}")
        if mime_type is None or mime_type in IMAGE_TYPES:
            mime_type = ImagePart.from_bytes(data, mime_type).media_type
        return cls(mime_type=mime_type, raw=data, size=len(data))

    @classmethod
    def from_path(
        cls, path: str | os.PathLike[str], mime_type: str | None = None
    ) -> GeminiInlineData:
        """A file, read from disk while the body is sent (base64 streamed, memory O(piece)).
        An image's type is checked against its first bytes and its name; other media (PDF,
        audio, video) need ``mime_type``."""
        path = os.fspath(path)
        if mime_type is None or mime_type in IMAGE_TYPES:
            image = ImagePart.from_path(path, mime_type)
            return cls(mime_type=image.media_type, path=path, size=image.size)
        return cls(mime_type=mime_type, path=path, size=os.stat(path).st_size)

    def decoded(self) -> bytes:
        """The part's bytes (reads the file for a path)."""
        if self.raw is not None:
            return self.raw
        if self.path is not None:
            with open(self.path, "rb") as f:
                return f.read()
        return base64.b64decode(standard_base64(self.data or ""))


def standard_base64(data: str) -> str:
    """Base64 as a request may carry it (standard or URL-safe, padded or not: the SDK sends
    the URL-safe form, pydantic's) in the standard, padded form."""
    if len(data) % 4 == 0 and "-" not in data and "_" not in data:
        return data
    return data.replace("-", "+").replace("_", "/") + "=" * (-len(data) % 4)


@final
@attrs.frozen(kw_only=True)
class GeminiFileData:
    """``fileData``: a file the service already holds (a Files API or ``gs://`` URI)."""

    file_uri: str
    mime_type: str | None = None
    thought_signature: str | None = None
    extra: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)
    inner_extra: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)


@final
@attrs.frozen(kw_only=True)
class GeminiFunctionCall:
    """A model's ``functionCall``: ``args`` is its JSON object; ``id`` Gemini's, if any."""

    name: str
    args: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)
    id: str | None = None
    thought_signature: str | None = None
    extra: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)
    inner_extra: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)

    @classmethod
    def from_tool_call(
        cls, call: ToolCall, *, thought_signature: str | None = None, with_id: bool = True
    ) -> GeminiFunctionCall:
        """A decoded `ToolCall` sent back; its arguments must be a JSON object."""
        args = call.parse_arguments()
        if not isinstance(args.value, dict):
            raise ValueError(f"tool call {call.id!r}: its arguments are not a JSON object")
        return cls(
            name=call.name,
            args=args.value,
            id=call.id if with_id else None,
            thought_signature=thought_signature,
        )


@final
@attrs.frozen(kw_only=True)
class GeminiFunctionResponse:
    """A ``functionResponse``: the result of the call ``name`` (and ``id``) as a JSON object;
    by Gemini's convention ``{"output": ...}`` or ``{"error": ...}``."""

    name: str
    response: Mapping[str, Any]
    id: str | None = None
    thought_signature: str | None = None
    extra: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)
    inner_extra: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)


@final
@attrs.frozen(kw_only=True)
class GeminiOtherPart:
    """A part of a kind this module does not model (``executableCode``,
    ``codeExecutionResult``, ``toolCall``...), kept as it came."""

    value: Mapping[str, Any]

    @property
    def thought_signature(self) -> str | None:
        signature = self.value.get("thoughtSignature")
        return signature if isinstance(signature, str) else None


GeminiPart = (
    GeminiText
    | GeminiInlineData
    | GeminiFileData
    | GeminiFunctionCall
    | GeminiFunctionResponse
    | GeminiOtherPart
)
PART_TYPES: Final = (
    GeminiText,
    GeminiInlineData,
    GeminiFileData,
    GeminiFunctionCall,
    GeminiFunctionResponse,
    GeminiOtherPart,
)


def _parts(value: str | Iterable[GeminiPart]) -> tuple[GeminiPart, ...]:
    if isinstance(value, str):
        return (GeminiText(text=value),)
    return tuple(value)


@final
@attrs.frozen(kw_only=True)
class GeminiContent:
    """One turn: ``role`` ``user`` or ``model`` (``None``: left out, which Gemini reads as
    ``user``; a system instruction has none), and its parts (a string is one text part)."""

    role: Role | None = "user"
    parts: tuple[GeminiPart, ...] = attrs.field(converter=_parts)

    @classmethod
    def from_completion(cls, completion: Completion) -> GeminiContent:
        """The model turn to send back after an answer: its thoughts with their signatures,
        its text, and its calls, in the order the stream gave them when the completion kept
        it (`svir_proto.answer.ordered_parts`), each signature on the part that carried it
        (Rule 3 of `svir_proto.gemini.stream`). A decoder's own result keeps no order (the
        cost would be every delta's): it gives its signed thoughts first, each signature on
        the thought before it, though Gemini may have signed a later part; fold the events
        (`svir_proto.answer.AnswerFold`) for the turn as it came (review 49 1b)."""
        return cls(role="model", parts=model_parts(ordered_parts(completion), with_ids=True))

    @property
    def text(self) -> str:
        """The text of the parts that are not thoughts, joined."""
        return "".join(p.text for p in self.parts if isinstance(p, GeminiText) and not p.thought)


def model_parts(given: Iterable[AnswerPart], *, with_ids: bool) -> tuple[GeminiPart, ...]:
    """A model turn's parts from what the vocabulary keeps, in the order ``given``
    (`svir_proto.answer.ordered_parts`): each signed block of Gemini's own reasoning (other
    dialects' signatures would be refused) as a thought part carrying its signature, unless
    the block signs a call (its ``item_id``), whose part then carries it, wherever the block
    came; Gemini's own reasoning that no signature closed as a thought part without one
    (attack 48 F3: a thought the turn signed on a later part); text; calls. Other dialects'
    reasoning that no signature closed, and refusal text, have no part."""
    given = tuple(given)
    ids = {p.id for p in given if type(p) is ToolCall}
    on_call = {
        p.item_id: p.signature
        for p in given
        if type(p) is ReasoningBlock and _own(p) and p.item_id is not None and p.item_id in ids
    }
    out: list[GeminiPart] = []
    for p in given:
        if type(p) is ReasoningBlock and _own(p):
            if p.item_id is None or p.item_id not in ids:
                out.append(
                    GeminiText(text=p.text, thought=bool(p.text), thought_signature=p.signature)
                )
            elif p.text:
                out.append(GeminiText(text=p.text, thought=True))
        elif type(p) is ReasoningDelta and p.carrier == CARRIER:
            out.append(GeminiText(text=p.text, thought=True))
        elif type(p) is TextDelta:
            out.append(GeminiText(text=p.text))
        elif type(p) is ToolCall:
            out.append(
                GeminiFunctionCall.from_tool_call(
                    p, thought_signature=on_call.get(p.id), with_id=with_ids
                )
            )
    return tuple(out)


def _own(block: ReasoningBlock) -> bool:
    """A block of Gemini's own reasoning, signed (not redacted): one a model turn carries."""
    return block.carrier == CARRIER and not block.redacted
