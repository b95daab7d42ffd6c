"""Responses API requests (``POST /v1/responses``): typed, checked at construction, encoded with
an exact length, and parsed on the server side.

A `ResponsesRequest` holds what the API reference's "Create a model response" defines that a
client or a gateway acts on: the ``input`` (a string, or items: messages with their parts,
function calls and their outputs, reasoning items sent back unchanged), ``instructions``, the
tools and ``tool_choice``, the sampling and reasoning options, ``store``, ``include``,
``previous_response_id``, ``metadata``, ``text`` and ``stream``. What it does not model is
kept as it came: items, parts and tools of other types (`OtherItem`, `OtherPart`,
`OtherTool`, `OtherChoice`), each object's unknown keys (``extra``), and the request's own
(``extra``), so a relay loses nothing. The rules are in ``_checks``; a bad value at
construction is a `ValueError` naming the field (``input[1].content[0].image_url``),
`ResponsesRequest.parse` raises a `RequestError` naming the JSON path.

Images and files from disk (`InputImage.from_path`, `InputFile.from_path`) are ``data:`` URLs
whose base64 is read while the body is sent (`svir_proto.body`): memory stays O(piece size).
The endpoint: ``POST`` `RESPONSES_PATH` with ``Authorization: Bearer`` (`responses_headers`),
the same host and key as Chat Completions (`responses_target` takes an OpenAI `Endpoint`).

This module reads files only to measure them and check their type; no other I/O.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal, final

import attrs

from .._json import MAX_REQUEST_VALUES, canonical
from ..body import DEFAULT_PIECE_SIZE, Base64File, Placeholders, RequestBody, encode_document
from ..llmstream.request import RequestError
from ..openai.endpoint import Endpoint
from ..openai.parts import ImagePart
from ..openai.request import _image_url
from ._checks import check_request, item_kind
from ._wire import RESPONSES_PATH

__all__ = [
    "RESPONSES_PATH",
    "FunctionCall",
    "FunctionCallOutput",
    "FunctionChoice",
    "FunctionTool",
    "InputFile",
    "InputImage",
    "InputMessage",
    "InputText",
    "OtherChoice",
    "OtherItem",
    "OtherPart",
    "OtherTool",
    "OutputRefusal",
    "OutputText",
    "ReasoningConfig",
    "ReasoningItem",
    "ResponsesRequest",
    "responses_headers",
    "responses_target",
]


def _mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return {} if value is None else value


def _extra() -> Any:
    """An object's unknown keys, kept as they came."""
    return attrs.field(factory=dict, converter=_mapping)


# -- parts -------------------------------------------------------------------------------------


@final
@attrs.frozen(kw_only=True)
class InputText:
    """``input_text``: text in a user, system or developer message, or a tool's output."""

    text: str
    extra: Mapping[str, Any] = _extra()

    def _document(self, marks: Placeholders | None) -> dict[str, Any]:
        return {"type": "input_text", "text": self.text, **self.extra}


@final
@attrs.frozen(kw_only=True)
class InputImage:
    """``input_image``: one of ``image_url`` (a ``data:`` URL of base64, or ``http(s)``),
    ``file_id``, or ``image`` (bytes or a file, sent as a ``data:`` URL read while sending:
    `from_path`, `from_bytes`); ``detail`` as the API takes it (``auto``, ``low``, ``high``)."""

    image_url: str | None = None
    file_id: str | None = None
    image: ImagePart | None = None
    detail: str | None = None
    extra: Mapping[str, Any] = _extra()

    def __attrs_post_init__(self) -> None:
        if sum(x is not None for x in (self.image_url, self.file_id, self.image)) != 1:
            raise ValueError("an input_image needs exactly one of image_url, file_id and image")
        if self.image is not None and not isinstance(self.image, ImagePart):
            raise TypeError(f"image must be an ImagePart, not {self.image!r}")

    @classmethod
    def from_path(
        cls,
        path: str | os.PathLike[str],
        media_type: str | None = None,
        *,
        detail: str | None = None,
    ) -> InputImage:
        """An image file, its type checked against its first bytes; read while sending."""
        return cls(image=ImagePart.from_path(path, media_type), detail=detail)

    @classmethod
    def from_bytes(
        cls, data: bytes, media_type: str | None = None, *, detail: str | None = None
    ) -> InputImage:
        return cls(image=ImagePart.from_bytes(data, media_type), detail=detail)

    def _document(self, marks: Placeholders | None) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "input_image"}
        if self.file_id is not None:
            out["file_id"] = self.file_id
        elif self.image is not None:  # Chat Completions' image_url, written in one place
            image = self.image
            if marks is None:  # checking the shape only: no placeholder, empty base64
                url = {"url": image.url or f"data:{image.media_type};base64,"}
            else:
                url = _image_url(image, marks)
            out["image_url"] = url["url"]
            if self.detail is None and image.detail is not None:
                out["detail"] = image.detail
        else:
            out["image_url"] = self.image_url
        if self.detail is not None:
            out["detail"] = self.detail
        return {**out, **self.extra}


@final
@attrs.frozen(kw_only=True)
class InputFile:
    """``input_file``: one of ``file_id``, ``file_url``, ``file_data`` (a ``data:`` URL of
    base64), or ``path`` (a file of ``media_type``, sent as ``file_data`` read while sending:
    `from_path`); ``filename`` as the API takes it."""

    file_id: str | None = None
    file_url: str | None = None
    file_data: str | None = None
    path: str | None = None
    media_type: str | None = None
    filename: str | None = None
    extra: Mapping[str, Any] = _extra()

    def __attrs_post_init__(self) -> None:
        sources = (self.file_id, self.file_url, self.file_data, self.path)
        if sum(x is not None for x in sources) != 1:
            raise ValueError(
                "an input_file needs exactly one of file_id, file_url, file_data and path"
            )
        if self.path is not None and (not self.media_type or "/" not in self.media_type):
            raise ValueError(f"a file from a path needs its media_type, not {self.media_type!r}")

    @classmethod
    def from_path(
        cls, path: str | os.PathLike[str], media_type: str, *, filename: str | None = None
    ) -> InputFile:
        """A file on disk, read while sending; ``filename`` defaults to its name."""
        path = os.fspath(path)
        os.stat(path)  # it must exist now
        return cls(path=path, media_type=media_type, filename=filename or os.path.basename(path))

    def _document(self, marks: Placeholders | None) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "input_file"}
        if self.path is not None:
            data = "" if marks is None else marks.add(Base64File(self.path))
            out["file_data"] = f"data:{self.media_type};base64,{data}"
        for key in ("file_id", "file_url", "file_data", "filename"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return {**out, **self.extra}


def _annotations(value: Iterable[Mapping[str, Any]]) -> tuple[Mapping[str, Any], ...]:
    return tuple(value)


@final
@attrs.frozen(kw_only=True)
class OutputText:
    """``output_text``: an earlier answer's text, in an assistant message sent back."""

    text: str
    annotations: tuple[Mapping[str, Any], ...] = attrs.field(default=(), converter=_annotations)
    extra: Mapping[str, Any] = _extra()

    def _document(self, marks: Placeholders | None) -> dict[str, Any]:
        out = {"type": "output_text", "text": self.text, "annotations": list(self.annotations)}
        return {**out, **self.extra}


@final
@attrs.frozen(kw_only=True)
class OutputRefusal:
    """``refusal``: an earlier refusal, in an assistant message sent back."""

    refusal: str
    extra: Mapping[str, Any] = _extra()

    def _document(self, marks: Placeholders | None) -> dict[str, Any]:
        return {"type": "refusal", "refusal": self.refusal, **self.extra}


@final
@attrs.frozen(kw_only=True)
class OtherPart:
    """A part of a type not modelled here (``input_audio``...), kept as it came."""

    data: Mapping[str, Any]

    def _document(self, marks: Placeholders | None) -> dict[str, Any]:
        return dict(self.data)


Part = InputText | InputImage | InputFile | OutputText | OutputRefusal | OtherPart
PART_TYPES: Final = (InputText, InputImage, InputFile, OutputText, OutputRefusal, OtherPart)


def _parts(value: str | Iterable[Part]) -> str | tuple[Part, ...]:
    return value if isinstance(value, str) else tuple(value)


# -- items ---------------------------------------------------------------------------------


@final
@attrs.frozen(kw_only=True)
class InputMessage:
    """A ``message`` item: ``role`` user, system, developer or assistant; ``content`` a string
    or parts; an assistant message sent back keeps its ``id``, ``status`` and ``phase``."""

    role: str
    content: str | tuple[Part, ...] = attrs.field(converter=_parts)
    id: str | None = None
    status: str | None = None
    phase: str | None = None
    extra: Mapping[str, Any] = _extra()

    @property
    def text(self) -> str:
        """The message's text: the string, or its text parts joined."""
        if isinstance(self.content, str):
            return self.content
        return "".join(p.text for p in self.content if isinstance(p, (InputText, OutputText)))

    def _document(self, marks: Placeholders | None) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "message", "role": self.role}
        if self.id is not None:
            out["id"] = self.id
        if isinstance(self.content, str):
            out["content"] = self.content
        else:
            out["content"] = [p._document(marks) for p in self.content]
        for key in ("status", "phase"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return {**out, **self.extra}


@final
@attrs.frozen(kw_only=True)
class FunctionCall:
    """A ``function_call`` item: an earlier answer's tool call, sent back."""

    call_id: str
    name: str
    arguments: str
    id: str | None = None
    status: str | None = None
    extra: Mapping[str, Any] = _extra()

    def _document(self, marks: Placeholders | None) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "function_call"}
        if self.id is not None:
            out["id"] = self.id
        out.update(call_id=self.call_id, name=self.name, arguments=self.arguments)
        if self.status is not None:
            out["status"] = self.status
        return {**out, **self.extra}


@final
@attrs.frozen(kw_only=True)
class FunctionCallOutput:
    """A ``function_call_output`` item: the result of the call with ``call_id``, a string or
    input parts."""

    call_id: str
    output: str | tuple[Part, ...] = attrs.field(converter=_parts)
    id: str | None = None
    status: str | None = None
    extra: Mapping[str, Any] = _extra()

    def _document(self, marks: Placeholders | None) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "function_call_output"}
        if self.id is not None:
            out["id"] = self.id
        out["call_id"] = self.call_id
        out["output"] = (
            self.output
            if isinstance(self.output, str)
            else [p._document(marks) for p in self.output]
        )
        if self.status is not None:
            out["status"] = self.status
        return {**out, **self.extra}


def _texts(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


@final
@attrs.frozen(kw_only=True)
class ReasoningItem:
    """A ``reasoning`` item sent back unchanged: its ``id``, the texts of its ``summary``
    parts, its ``encrypted_content`` (``include: ["reasoning.encrypted_content"]``, needed
    with ``store: false``) and the texts of its ``reasoning_text`` content."""

    id: str | None = None
    summary: tuple[str, ...] = attrs.field(default=(), converter=_texts)
    encrypted_content: str | None = None
    content: tuple[str, ...] = attrs.field(default=(), converter=_texts)
    status: str | None = None
    extra: Mapping[str, Any] = _extra()

    def _document(self, marks: Placeholders | None) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "reasoning"}
        if self.id is not None:
            out["id"] = self.id
        out["summary"] = [{"type": "summary_text", "text": t} for t in self.summary]
        if self.encrypted_content is not None:
            out["encrypted_content"] = self.encrypted_content
        if self.content:
            out["content"] = [{"type": "reasoning_text", "text": t} for t in self.content]
        if self.status is not None:
            out["status"] = self.status
        return {**out, **self.extra}


@final
@attrs.frozen(kw_only=True)
class OtherItem:
    """An item of a type not modelled here (``item_reference``, a built-in tool's call...),
    kept as it came."""

    data: Mapping[str, Any]

    def _document(self, marks: Placeholders | None) -> dict[str, Any]:
        return dict(self.data)


Item = InputMessage | FunctionCall | FunctionCallOutput | ReasoningItem | OtherItem
ITEM_TYPES: Final = (InputMessage, FunctionCall, FunctionCallOutput, ReasoningItem, OtherItem)


# -- tools and options ---------------------------------------------------------------------


@final
@attrs.frozen(kw_only=True)
class FunctionTool:
    """A ``function`` tool: ``parameters`` is a JSON Schema object; ``strict`` as the API
    takes it. ``None`` fields are not sent."""

    name: str
    description: str | None = None
    parameters: Mapping[str, Any] | None = None
    strict: bool | None = None
    extra: Mapping[str, Any] = _extra()

    def _document(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "function", "name": self.name}
        if self.description is not None:
            out["description"] = self.description
        if self.parameters is not None:
            out["parameters"] = dict(self.parameters)
        if self.strict is not None:
            out["strict"] = self.strict
        return {**out, **self.extra}


@final
@attrs.frozen(kw_only=True)
class OtherTool:
    """A tool of another type (``web_search``, ``file_search``, ``mcp``...), kept as it came."""

    data: Mapping[str, Any]

    def _document(self) -> dict[str, Any]:
        return dict(self.data)


@final
@attrs.frozen
class FunctionChoice:
    """``tool_choice`` naming one function: the model must call it."""

    name: str


@final
@attrs.frozen(kw_only=True)
class OtherChoice:
    """Another ``tool_choice`` object (``allowed_tools``, a built-in tool), kept as it came."""

    data: Mapping[str, Any]


ToolChoice = Literal["auto", "none", "required"] | FunctionChoice | OtherChoice


@final
@attrs.frozen(kw_only=True)
class ReasoningConfig:
    """``reasoning``: ``effort`` (none, minimal, low, medium, high, xhigh) and ``summary``
    (auto, concise, detailed); ``None`` fields are not sent."""

    effort: str | None = None
    summary: str | None = None
    extra: Mapping[str, Any] = _extra()

    def _document(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in ("effort", "summary") if getattr(self, k) is not None}
        return {**out, **self.extra}


def _items(value: str | Iterable[Item]) -> str | tuple[Item, ...]:
    return value if isinstance(value, str) else tuple(value)


def _tools(value: Iterable[FunctionTool | OtherTool]) -> tuple[FunctionTool | OtherTool, ...]:
    return tuple(value)


def _strings(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


KNOWN: Final = frozenset(
    {
        "model",
        "input",
        "instructions",
        "tools",
        "tool_choice",
        "max_output_tokens",
        "temperature",
        "top_p",
        "reasoning",
        "parallel_tool_calls",
        "store",
        "include",
        "previous_response_id",
        "metadata",
        "text",
        "stream",
    }
)
"""The request fields `ResponsesRequest` names; any other is kept in ``extra``."""


@final
@attrs.frozen(kw_only=True)
class ResponsesRequest:
    """A Responses API request. ``None`` fields (and empty ``tools``, ``include``,
    ``metadata``) are not sent; ``stream`` is always sent (it defaults to true here, to
    false on the wire, so a parsed request without it has ``stream=False``).

    ``previous_response_id`` is kept and sent. A gateway in front of a stateless upstream
    (Chat Completions, Messages, Gemini, llama.cpp) cannot resolve it: it must keep the
    responses it served itself, by id, to prepend their input and output items, or answer
    400; `svir_proto.responses.hub.to_hub` carries the id under ``vendor:responses``, where
    no other dialect reads it. ``store: true`` promises the same persistence.
    """

    model: str
    input: str | tuple[Item, ...] = attrs.field(default=(), converter=_items)
    instructions: str | None = None
    tools: tuple[FunctionTool | OtherTool, ...] = attrs.field(default=(), converter=_tools)
    tool_choice: ToolChoice | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    reasoning: ReasoningConfig | None = None
    parallel_tool_calls: bool | None = None
    store: bool | None = None
    include: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    previous_response_id: str | None = None
    metadata: Mapping[str, str] = attrs.field(factory=dict, converter=_mapping)
    text: Mapping[str, Any] | None = None
    stream: bool = True
    extra: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)

    def __attrs_post_init__(self) -> None:
        _check_types(self)
        try:
            check_request(self.to_document(), "$")
        except RequestError as exc:  # the caller's values: a ValueError naming the field
            path = exc.path[2:] if exc.path.startswith("$.") else exc.path
            problem = exc.message.split(": ", 1)[1]
            raise ValueError(f"{path}: {problem}" if path != "$" else problem) from exc

    @property
    def tool_names(self) -> frozenset[str]:
        """The declared function tools, for `ResponsesStreamDecoder(declared_tools=...)`."""
        return frozenset(t.name for t in self.tools if isinstance(t, FunctionTool))

    @property
    def path(self) -> str:
        return RESPONSES_PATH

    def to_document(self, marks: Placeholders | None = None) -> dict[str, Any]:
        """The request as a JSON object. Parts from bytes or files become placeholders in
        ``marks``; without ``marks`` (checking the shape only), empty base64."""
        doc: dict[str, Any] = {"model": self.model}
        if isinstance(self.input, str):
            doc["input"] = self.input
        elif self.input:
            doc["input"] = [item._document(marks) for item in self.input]
        if self.instructions is not None:
            doc["instructions"] = self.instructions
        if self.tools:
            doc["tools"] = [t._document() for t in self.tools]
        choice = self.tool_choice
        if isinstance(choice, FunctionChoice):
            doc["tool_choice"] = {"type": "function", "name": choice.name}
        elif isinstance(choice, OtherChoice):
            doc["tool_choice"] = dict(choice.data)
        elif choice is not None:
            doc["tool_choice"] = choice
        for key in ("max_output_tokens", "temperature", "top_p"):
            value = getattr(self, key)
            if value is not None:
                doc[key] = value
        if self.reasoning is not None:
            doc["reasoning"] = self.reasoning._document()
        for key in ("parallel_tool_calls", "store"):
            value = getattr(self, key)
            if value is not None:
                doc[key] = value
        if self.include:
            doc["include"] = list(self.include)
        if self.previous_response_id is not None:
            doc["previous_response_id"] = self.previous_response_id
        if self.metadata:
            doc["metadata"] = dict(self.metadata)
        if self.text is not None:
            doc["text"] = dict(self.text)
        doc["stream"] = self.stream
        doc.update(self.extra)
        return doc

    def body(self, *, piece_size: int = DEFAULT_PIECE_SIZE) -> RequestBody:
        """The request as a `RequestBody`: exact ``content_length``, files read while sending."""
        return encode_document(self.to_document, piece_size=piece_size)

    @classmethod
    def parse(cls, body: bytes | bytearray | str) -> ResponsesRequest:
        """Read a request body (the server side).

        Raises:
            RequestError: the body is not JSON or breaks the rules of ``_checks``; ``path``
                says where.
        """
        try:
            doc: Any = canonical(
                body, max_values=MAX_REQUEST_VALUES
            )  # the one JSON policy (svir_proto._json)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise RequestError("$", f"not JSON: {exc}") from exc
        check_request(doc, "$")
        return _from_document(doc)


def _check_types(r: ResponsesRequest) -> None:
    """The Python types the document builder relies on: a wrong one is a `TypeError`."""
    if not isinstance(r.input, str):
        for i, item in enumerate(r.input):
            if not isinstance(item, ITEM_TYPES):
                raise TypeError(f"input[{i}] must be an item, not {item!r}"[:200])
            parts = (
                item.content
                if isinstance(item, InputMessage)
                else item.output
                if isinstance(item, FunctionCallOutput)
                else ""
            )
            if not isinstance(parts, str):
                field = "content" if isinstance(item, InputMessage) else "output"
                for j, part in enumerate(parts):
                    if not isinstance(part, PART_TYPES):
                        raise TypeError(
                            f"input[{i}].{field}[{j}] must be a part, not {part!r}"[:200]
                        )
    for i, tool in enumerate(r.tools):
        if not isinstance(tool, (FunctionTool, OtherTool)):
            raise TypeError(f"tools[{i}] must be a FunctionTool or OtherTool, not {tool!r}"[:200])
    if r.reasoning is not None and not isinstance(r.reasoning, ReasoningConfig):
        raise TypeError(f"reasoning must be a ReasoningConfig, not {r.reasoning!r}"[:200])
    clash = sorted(KNOWN & set(r.extra))
    if clash:
        raise ValueError(f"extra: {clash} are fields of the request, not extras")


# -- parsing -------------------------------------------------------------------------------


def _rest(obj: dict[str, Any], known: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in known}


def _part(p: dict[str, Any]) -> Part:
    kind = p["type"]
    if kind == "input_text":
        return InputText(text=p["text"], extra=_rest(p, ("type", "text")))
    if kind == "input_image":
        return InputImage(
            image_url=p.get("image_url"),
            file_id=p.get("file_id"),
            detail=p.get("detail"),
            extra=_rest(p, ("type", "image_url", "file_id", "detail")),
        )
    if kind == "input_file":
        keys = ("file_id", "file_url", "file_data", "filename")
        return InputFile(**{k: p.get(k) for k in keys}, extra=_rest(p, ("type", *keys)))
    if kind == "output_text":
        return OutputText(
            text=p["text"],
            annotations=p.get("annotations") or (),
            extra=_rest(p, ("type", "text", "annotations")),
        )
    if kind == "refusal":
        return OutputRefusal(refusal=p["refusal"], extra=_rest(p, ("type", "refusal")))
    return OtherPart(data=p)


def _content(value: str | list[dict[str, Any]]) -> str | tuple[Part, ...]:
    return value if isinstance(value, str) else tuple(_part(p) for p in value)


def _item(it: dict[str, Any]) -> Item:
    kind = item_kind(it)
    known: tuple[str, ...]
    if kind == "message":
        known = ("type", "role", "content", "id", "status", "phase")
        return InputMessage(
            role=it["role"],
            content=_content(it["content"]),
            id=it.get("id"),
            status=it.get("status"),
            phase=it.get("phase"),
            extra=_rest(it, known),
        )
    if kind == "function_call":
        known = ("type", "call_id", "name", "arguments", "id", "status")
        return FunctionCall(
            call_id=it["call_id"],
            name=it["name"],
            arguments=it["arguments"],
            id=it.get("id"),
            status=it.get("status"),
            extra=_rest(it, known),
        )
    if kind == "function_call_output":
        known = ("type", "call_id", "output", "id", "status")
        return FunctionCallOutput(
            call_id=it["call_id"],
            output=_content(it["output"]),
            id=it.get("id"),
            status=it.get("status"),
            extra=_rest(it, known),
        )
    if kind == "reasoning":
        known = ("type", "id", "summary", "encrypted_content", "content", "status")
        return ReasoningItem(
            id=it.get("id"),
            summary=[p["text"] for p in it.get("summary") or ()],
            encrypted_content=it.get("encrypted_content"),
            content=[p["text"] for p in it.get("content") or ()],
            status=it.get("status"),
            extra=_rest(it, known),
        )
    return OtherItem(data=it)


def _tool(t: dict[str, Any]) -> FunctionTool | OtherTool:
    if t["type"] != "function":
        return OtherTool(data=t)
    return FunctionTool(
        name=t["name"],
        description=t.get("description"),
        parameters=t.get("parameters"),
        strict=t.get("strict"),
        extra=_rest(t, ("type", "name", "description", "parameters", "strict")),
    )


def _choice(c: object) -> ToolChoice | None:
    if c is None or isinstance(c, str):
        return c  # type: ignore[return-value]
    assert isinstance(c, dict)
    if c["type"] == "function" and set(c) == {"type", "name"}:
        return FunctionChoice(c["name"])
    return OtherChoice(data=c)


def _from_document(doc: dict[str, Any]) -> ResponsesRequest:
    items = doc.get("input")
    reasoning = doc.get("reasoning")
    return ResponsesRequest(
        model=doc["model"],
        input=items if isinstance(items, str) else [_item(i) for i in items or ()],
        instructions=doc.get("instructions"),
        tools=[_tool(t) for t in doc.get("tools") or ()],
        tool_choice=_choice(doc.get("tool_choice")),
        max_output_tokens=doc.get("max_output_tokens"),
        temperature=doc.get("temperature"),
        top_p=doc.get("top_p"),
        reasoning=None
        if reasoning is None
        else ReasoningConfig(
            effort=reasoning.get("effort"),
            summary=reasoning.get("summary"),
            extra=_rest(reasoning, ("effort", "summary")),
        ),
        parallel_tool_calls=doc.get("parallel_tool_calls"),
        store=doc.get("store"),
        include=doc.get("include") or (),
        previous_response_id=doc.get("previous_response_id"),
        metadata=doc.get("metadata") or {},
        text=doc.get("text"),
        stream=doc.get("stream") is True,
        extra={k: v for k, v in doc.items() if k not in KNOWN},
    )


# -- the endpoint ----------------------------------------------------------------------------


def responses_target(endpoint: Endpoint) -> str:
    """The request target on an OpenAI-compatible server: its ``/v1`` prefix + ``/responses``."""
    return endpoint.prefix + "/responses"


def responses_headers(api_key: str | None = None, *, stream: bool = True) -> list[tuple[str, str]]:
    """The headers a Responses request needs besides Host and the body's: ``Accept``, and
    ``Authorization: Bearer`` when there is a key (the same header as Chat Completions)."""
    if api_key is not None and (not api_key or "\r" in api_key or "\n" in api_key):
        raise ValueError("api_key must be a non-empty single line")
    out = [("Accept", "text/event-stream" if stream else "application/json")]
    if api_key is not None:
        out.append(("Authorization", f"Bearer {api_key}"))
    return out
