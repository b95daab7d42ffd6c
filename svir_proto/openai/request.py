"""Chat Completions requests: typed, checked at construction, encoded with an exact length.

Wire reference section 2 is the requirement. Every value is checked when it is built, and a
bad one is a `ValueError` or `TypeError` that names the field (``messages[1].content[2]``).

Layout (2.2): a user message's content is a plain string unless an image needs the array form;
then one text part comes first and the images after it, and there is no empty text part. Text
files go inside the text as ``<file name="...">\\n...\\n</file>``. An assistant turn carries its
``tool_calls`` and its reasoning under the key it arrived in; inline ``<think>`` reasoning is
never sent back. Images and text files from paths are read from disk while the body is sent
(`svir_proto.body`).

Beside the typed fields, ``extra_body`` carries what a server takes of its own (vLLM's and
llama.cpp's sampling options, ``top_k``, ``min_p``...): merged into the JSON as given, so the
body's length is still exact. `ChatRequest.from_openai` builds a request from the dict
openai-python would be given (a stored history): every key it does not type goes to
``extra_body``, and what it cannot carry is a `ValueError` naming the path, never dropped.

Server profiles (2.4 to 2.6) adapt a request to what a server accepts, and say what they
changed: a field the caller set is never dropped without a note. This module reads files only
to measure them and check their type; no other I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal, final

import attrs

from .._signatures import thinking_block
from ..body import (
    DEFAULT_PIECE_SIZE,
    Base64Bytes,
    Base64File,
    JSONTextFile,
    Placeholders,
    RequestBody,
    Segment,
    encode_document,
)
from ..events import Completion, ReasoningBlock, ReasoningCarrier, ToolCall
from .parts import ImagePart, Part, TextFile, TextPart, content_parts

__all__ = [
    "AZURE",
    "LM_STUDIO",
    "OPENAI",
    "STRICT",
    "AssistantMessage",
    "ChatRequest",
    "JSONObjectFormat",
    "JSONSchemaFormat",
    "Message",
    "NamedToolChoice",
    "ServerProfile",
    "SystemMessage",
    "TextFormat",
    "Tool",
    "ToolMessage",
    "UserMessage",
]

_TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")  # 2.6 for schema names; OpenAI's rule
REASONING_EFFORTS: Final = ("none", "minimal", "low", "medium", "high", "xhigh")
"""OpenAI's ``reasoning_effort`` values (``minimal``: gpt-5's; ``none`` and ``xhigh``: later)."""


@final
@attrs.frozen(kw_only=True)
class SystemMessage:
    """Instructions. ``role`` ``"developer"`` is what OpenAI's newer models call them (the
    servers that do not know it want ``"system"``, the default)."""

    content: str = attrs.field(validator=attrs.validators.instance_of(str))
    role: Literal["system", "developer"] = attrs.field(
        default="system", validator=attrs.validators.in_(("system", "developer"))
    )


@final
@attrs.frozen(kw_only=True)
class UserMessage:
    """A user turn: a string, or parts (text, images, text files)."""

    content: tuple[Part, ...] = attrs.field(converter=content_parts)


def _calls(value: Iterable[ToolCall]) -> tuple[ToolCall, ...]:
    return tuple(value)


def _blocks(value: Iterable[ReasoningBlock]) -> tuple[ReasoningBlock, ...]:
    return tuple(value)


@final
@attrs.frozen(kw_only=True)
class AssistantMessage:
    """An earlier answer: its text, its tool calls, and its reasoning under the key it came in
    (``reasoning_carrier``; ``"think"`` reasoning is never sent back, wire reference 4); its
    signed reasoning, ``thinking_blocks`` (LiteLLM's field, which a gateway in front of
    Anthropic or Gemini writes: `svir_proto.openai.encoder`), to go back to the vendor that
    signed it."""

    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = attrs.field(default=(), converter=_calls)
    reasoning: str | None = None
    reasoning_carrier: ReasoningCarrier | None = None
    thinking_blocks: tuple[ReasoningBlock, ...] = attrs.field(default=(), converter=_blocks)

    def __attrs_post_init__(self) -> None:
        for i, call in enumerate(self.tool_calls):
            if not isinstance(call, ToolCall):
                raise TypeError(f"tool_calls[{i}] must be a ToolCall, not {call!r}")
        if self.reasoning is not None and self.reasoning_carrier is None:
            raise ValueError("reasoning needs reasoning_carrier: the key it arrived in")
        for i, block in enumerate(self.thinking_blocks):
            if not isinstance(block, ReasoningBlock):
                raise TypeError(f"thinking_blocks[{i}] must be a ReasoningBlock, not {block!r}")

    @classmethod
    def from_completion(cls, completion: Completion) -> AssistantMessage:
        """The assistant turn to send back after a completed answer."""
        return cls(
            content=completion.text or None,
            tool_calls=completion.tool_calls,
            reasoning=completion.reasoning or None,
            reasoning_carrier=completion.reasoning_carrier if completion.reasoning else None,
        )


@final
@attrs.frozen(kw_only=True)
class ToolMessage:
    """A tool's result, for the call with ``tool_call_id``; structured results go as a JSON
    string (there is no field that marks a failure: say so in the content)."""

    tool_call_id: str
    content: str

    def __attrs_post_init__(self) -> None:
        if not self.tool_call_id:
            raise ValueError("tool_call_id must not be empty")


Message = SystemMessage | UserMessage | AssistantMessage | ToolMessage


@final
@attrs.frozen(kw_only=True)
class Tool:
    """A function the model may call; ``parameters`` is a JSON Schema object. With ``strict``
    (OpenAI's structured outputs for tools), the arguments are held to the schema."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = attrs.field(
        factory=lambda: {"type": "object", "properties": {}}
    )
    strict: bool = False

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.name, str) or not _TOOL_NAME.fullmatch(self.name):
            raise ValueError(f"tool name {self.name!r} must be 1 to 64 of A-Z a-z 0-9 _ -")
        if not isinstance(self.parameters, Mapping):
            raise TypeError(f"tool {self.name}: parameters must be a JSON Schema object")


@final
@attrs.frozen
class NamedToolChoice:
    """``tool_choice`` naming one function: the model must call it."""

    name: str


@final
@attrs.frozen
class TextFormat:
    pass


@final
@attrs.frozen
class JSONObjectFormat:
    pass


@final
@attrs.frozen(kw_only=True)
class JSONSchemaFormat:
    """``response_format`` of type ``json_schema`` (wire reference 2.6). With ``strict``, every
    object in the schema must list all its properties as required and forbid others."""

    name: str
    schema: Mapping[str, Any]
    strict: bool = False

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.name, str) or not _TOOL_NAME.fullmatch(self.name):
            raise ValueError(
                f"response_format.json_schema.name {self.name!r} must be 1 to 64 of "
                "ASCII letters, digits, _ and -"
            )
        if self.strict:
            _check_strict(self.schema, "response_format.json_schema.schema")


def _check_strict(schema: object, where: str) -> None:
    if isinstance(schema, Mapping):
        if schema.get("type") == "object" or "properties" in schema:
            props = schema.get("properties", {})
            required = set(schema.get("required", ()))
            missing = sorted(set(props) - required)
            if missing:
                raise ValueError(f"{where}: strict needs every property required; not: {missing}")
            if schema.get("additionalProperties") is not False:
                raise ValueError(f"{where}: strict needs additionalProperties: false")
        for key, value in schema.items():
            if key in ("properties", "$defs", "definitions") and isinstance(value, Mapping):
                for name, sub in value.items():
                    _check_strict(sub, f"{where}.{key}.{name}")
            elif key in ("items", "anyOf", "allOf", "oneOf", "not"):
                for i, sub in enumerate(value if isinstance(value, list) else [value]):
                    _check_strict(sub, f"{where}.{key}[{i}]")


def _messages(value: Iterable[Message]) -> tuple[Message, ...]:
    return tuple(value)


def _tools(value: Iterable[Tool]) -> tuple[Tool, ...]:
    return tuple(value)


ResponseFormat = TextFormat | JSONObjectFormat | JSONSchemaFormat
ToolChoice = Literal["auto", "none", "required"] | NamedToolChoice


def _stop(value: str | Iterable[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def _extra(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return {} if value is None else value


TYPED_FIELDS: Final = frozenset(
    {
        "model",
        "messages",
        "stream",
        "stream_options",
        "tools",
        "tool_choice",
        "max_tokens",
        "max_completion_tokens",
        "temperature",
        "top_p",
        "n",
        "stop",
        "seed",
        "response_format",
        "reasoning_effort",
        "parallel_tool_calls",
        "user",
    }
)
"""The body's keys that `ChatRequest` writes from its own fields (``extra_body`` may not)."""


@final
@attrs.frozen(kw_only=True)
class ChatRequest:
    """A streamed Chat Completions request (``stream`` is always true).

    ``tool_choice`` left ``None`` is not sent: the server's default is ``none`` without tools
    and ``auto`` with them (2.4). ``include_usage`` asks for the trailing usage chunk
    (``stream_options``, 2.5). Every field left ``None`` (or empty) is not sent.

    Attributes:
        max_tokens: the answer's cap, under its old name (what local servers read).
        max_completion_tokens: the same cap under OpenAI's newer name, which its reasoning
            models require (they reject ``max_tokens``); give one or the other.
        stop: up to the server's limit of sequences that end the answer (a string is one).
        seed: for reproducible sampling, where the server honours it.
        parallel_tool_calls: whether the model may call several tools in one turn.
        user: an id of the end user, for the provider's abuse monitoring.
        extra_body: keys merged into the JSON as they are, for what a server takes of its own
            (``{"top_k": 40}``); not the keys the fields above write (`TYPED_FIELDS`).
    """

    model: str
    messages: tuple[Message, ...] = attrs.field(converter=_messages)
    tools: tuple[Tool, ...] = attrs.field(default=(), converter=_tools)
    tool_choice: ToolChoice | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    n: int = 1
    response_format: ResponseFormat | None = None
    include_usage: bool = False
    reasoning_effort: str | None = None
    max_completion_tokens: int | None = None
    top_p: float | None = None
    stop: tuple[str, ...] = attrs.field(default=(), converter=_stop)
    seed: int | None = None
    parallel_tool_calls: bool | None = None
    user: str | None = None
    extra_body: Mapping[str, Any] = attrs.field(factory=dict, converter=_extra)

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model:
            raise ValueError("model must be a non-empty string (the id the server lists)")
        if not self.messages:
            raise ValueError("messages must not be empty")
        for i, m in enumerate(self.messages):
            if not isinstance(m, (SystemMessage, UserMessage, AssistantMessage, ToolMessage)):
                raise TypeError(f"messages[{i}] must be a message, not {m!r}")
        for i, tool in enumerate(self.tools):
            if not isinstance(tool, Tool):
                raise TypeError(f"tools[{i}] must be a Tool, not {tool!r}")
        names = [t.name for t in self.tools]
        if len(set(names)) != len(names):
            raise ValueError(f"tools: names must be unique, got {names}")
        choice = self.tool_choice
        if isinstance(choice, NamedToolChoice):
            if choice.name not in names:
                raise ValueError(f"tool_choice names {choice.name!r}, which is not in tools")
        elif choice is not None and choice not in ("auto", "none", "required"):
            raise ValueError(
                f"tool_choice must be auto, none, required or a NamedToolChoice, not {choice!r}"
            )
        if choice == "required" and not self.tools:
            raise ValueError("tool_choice 'required' needs tools")
        for key in ("max_tokens", "max_completion_tokens"):
            value = getattr(self, key)
            if value is not None and (type(value) is not int or value < 1):
                raise ValueError(f"{key} must be a positive int, not {value!r}")
        if self.max_tokens is not None and self.max_completion_tokens is not None:
            raise ValueError("give max_tokens or max_completion_tokens, not both: one cap")
        t = self.temperature
        if t is not None and (not _is_number(t) or not 0 <= t <= 2):
            raise ValueError(f"temperature must be in 0.0..2.0, not {t!r}")
        top_p = self.top_p
        if top_p is not None and (not _is_number(top_p) or not 0 <= top_p <= 1):
            raise ValueError(f"top_p must be in 0.0..1.0, not {top_p!r}")
        if self.n != 1:
            raise ValueError(f"n must be 1: more than one choice is not supported, not {self.n!r}")
        if self.reasoning_effort is not None and self.reasoning_effort not in REASONING_EFFORTS:
            raise ValueError(
                f"reasoning_effort must be one of {REASONING_EFFORTS}, "
                f"not {self.reasoning_effort!r}"
            )
        if self.response_format is not None and not isinstance(
            self.response_format, (TextFormat, JSONObjectFormat, JSONSchemaFormat)
        ):
            raise TypeError(
                f"response_format must be a format object, not {self.response_format!r}"
            )
        for i, stop in enumerate(self.stop):
            if not isinstance(stop, str) or not stop:
                raise ValueError(f"stop[{i}] must be a non-empty string, not {stop!r}")
        if self.seed is not None and type(self.seed) is not int:
            raise TypeError(f"seed must be an int, not {self.seed!r}")
        if self.parallel_tool_calls is not None and type(self.parallel_tool_calls) is not bool:
            raise TypeError(f"parallel_tool_calls must be a bool, not {self.parallel_tool_calls!r}")
        if self.user is not None and not isinstance(self.user, str):
            raise TypeError(f"user must be a str, not {self.user!r}")
        self._check_extra_body()

    def _check_extra_body(self) -> None:
        if not isinstance(self.extra_body, Mapping):
            raise TypeError(f"extra_body must be a mapping, not {self.extra_body!r}")
        for key in self.extra_body:
            if not isinstance(key, str):
                raise TypeError(f"extra_body: keys must be str, not {key!r}")
            if key in TYPED_FIELDS:
                raise ValueError(
                    f"extra_body[{key!r}]: ChatRequest writes this key from its own field; "
                    "set the field instead"
                )
        try:
            json.dumps(self.extra_body, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"extra_body must be JSON: {exc}") from exc

    @classmethod
    def from_openai(cls, params: Mapping[str, Any]) -> ChatRequest:
        """A request from the keyword arguments openai-python's ``chat.completions.create``
        takes, as a dict (a stored history, a request a proxy received).

        The keys this class types are read and checked; every other top-level key goes to
        ``extra_body`` unchanged. ``stream`` may be absent or true (this request always
        streams); ``stream_options.include_usage`` becomes ``include_usage``. Image parts take
        ``data:`` and ``http(s)`` URLs.

        Raises:
            ValueError, TypeError: naming the path of what is malformed or cannot be carried
                (``messages[2].content[1].type``: an audio part, a legacy function call...).
        """
        from ._from_openai import request_fields  # the reader loads only when it is used

        return cls(**request_fields(params))

    @property
    def tool_names(self) -> frozenset[str]:
        """The declared tools, to pass to `ChatStreamDecoder(declared_tools=...)`."""
        return frozenset(t.name for t in self.tools)

    def body(self, *, piece_size: int = DEFAULT_PIECE_SIZE) -> RequestBody:
        """The request as a `RequestBody`: exact ``content_length``, files read while sending."""
        return _encode(self, piece_size)


# -- encoding --------------------------------------------------------------------------------


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _user_content(parts: tuple[Part, ...], marks: Placeholders) -> str | list[dict[str, Any]]:
    texts: list[str] = []
    images: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart):
            texts.append(part.text)
        elif isinstance(part, TextFile):
            body = part.text if part.path is None else marks.add(JSONTextFile(part.path))
            texts.append(part.opening() + (body or "") + "\n</file>")
        else:
            images.append({"type": "image_url", "image_url": _image_url(part, marks)})
    text = "\n".join(t for t in texts if t)
    if not images:
        return text
    return ([{"type": "text", "text": text}] if text else []) + images


def _image_url(part: ImagePart, marks: Placeholders) -> dict[str, Any]:
    if part.url is not None:
        out: dict[str, Any] = {"url": part.url}
    else:
        segment: Segment = (
            Base64File(part.path, part.size)
            if part.path is not None
            else Base64Bytes(part.data or b"")
        )
        out = {"url": f"data:{part.media_type};base64,{marks.add(segment)}"}
    if part.detail is not None:
        out["detail"] = part.detail
    return out


def _message(m: Message, marks: Placeholders) -> dict[str, Any]:
    if isinstance(m, SystemMessage):
        return {"role": m.role, "content": m.content}
    if isinstance(m, UserMessage):
        return {"role": "user", "content": _user_content(m.content, marks)}
    if isinstance(m, ToolMessage):
        return {"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content}
    out: dict[str, Any] = {"role": "assistant", "content": m.content}
    if m.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in m.tool_calls
        ]
    if m.reasoning is not None and m.reasoning_carrier in ("reasoning_content", "reasoning"):
        out[m.reasoning_carrier] = m.reasoning
    if m.thinking_blocks:
        out["thinking_blocks"] = [thinking_block(b) for b in m.thinking_blocks]
    return out


def _function(tool: Tool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "parameters": dict(tool.parameters),
    }
    if tool.strict:
        out["strict"] = True
    return out


def document(request: ChatRequest, marks: Placeholders) -> dict[str, Any]:
    """The JSON object of a request, with placeholders where file parts go."""
    doc: dict[str, Any] = {
        "model": request.model,
        "messages": [_message(m, marks) for m in request.messages],
        "stream": True,
    }
    if request.tools:
        doc["tools"] = [{"type": "function", "function": _function(t)} for t in request.tools]
    choice = request.tool_choice
    if isinstance(choice, NamedToolChoice):
        doc["tool_choice"] = {"type": "function", "function": {"name": choice.name}}
    elif choice is not None:
        doc["tool_choice"] = choice
    if request.max_tokens is not None:
        doc["max_tokens"] = request.max_tokens
    if request.temperature is not None:
        doc["temperature"] = request.temperature
    fmt = request.response_format
    if isinstance(fmt, TextFormat):
        doc["response_format"] = {"type": "text"}
    elif isinstance(fmt, JSONObjectFormat):
        doc["response_format"] = {"type": "json_object"}
    elif isinstance(fmt, JSONSchemaFormat):
        spec: dict[str, Any] = {"name": fmt.name, "schema": dict(fmt.schema)}
        if fmt.strict:
            spec["strict"] = True
        doc["response_format"] = {"type": "json_schema", "json_schema": spec}
    if request.include_usage:
        doc["stream_options"] = {"include_usage": True}
    if request.reasoning_effort is not None:
        doc["reasoning_effort"] = request.reasoning_effort
    for key in ("max_completion_tokens", "top_p", "seed", "parallel_tool_calls", "user"):
        value = getattr(request, key)
        if value is not None:
            doc[key] = value
    if request.stop:
        doc["stop"] = list(request.stop)
    doc.update(request.extra_body)
    return doc


def _encode(request: ChatRequest, piece_size: int) -> RequestBody:
    return encode_document(lambda marks: document(request, marks), piece_size=piece_size)


# -- server profiles ------------------------------------------------------------------------


@final
@attrs.frozen(kw_only=True)
class ServerProfile:
    """What a server accepts (wire reference 2.4 to 2.6). `adapt` rewrites a request to fit.

    Attributes:
        named_tool_choice: accepts ``tool_choice`` naming a function (LM Studio does not).
        json_object: accepts ``response_format`` ``json_object`` (LM Studio does not).
        tool_choice_without_tools: accepts ``tool_choice`` with no ``tools`` (Azure does not).
        stream_options, reasoning_effort: accepts these optional fields (strict servers, plain
            mlx-lm or llama.cpp builds, may reject the whole request).
        max_completion_tokens: accepts the cap under its newer name; a server that does not
            gets it as ``max_tokens``.
        developer_role: accepts ``role: "developer"``; a server that does not gets
            ``"system"``.
        schema_holds_reasoning: a structured answer may arrive as reasoning, not content
            (LM Studio holds a reasoning model's reasoning to the schema; read
            ``Completion.reasoning`` when ``text`` is empty).
    """

    name: str
    named_tool_choice: bool = True
    json_object: bool = True
    tool_choice_without_tools: bool = True
    stream_options: bool = True
    reasoning_effort: bool = True
    max_completion_tokens: bool = True
    developer_role: bool = True
    schema_holds_reasoning: bool = False

    def adapt(self, request: ChatRequest) -> tuple[ChatRequest, tuple[str, ...]]:
        """The request this server accepts, and one sentence per change made."""
        changes: dict[str, Any] = {}
        notes: list[str] = []
        if isinstance(request.tool_choice, NamedToolChoice) and not self.named_tool_choice:
            changes["tool_choice"] = "required"
            notes.append(
                f"{self.name} takes tool_choice strings only: "
                f"{request.tool_choice.name!r} became 'required'"
            )
        if (
            request.tool_choice is not None
            and not request.tools
            and not self.tool_choice_without_tools
        ):
            changes["tool_choice"] = None
            notes.append(f"{self.name} rejects tool_choice without tools: not sent")
        if isinstance(request.response_format, JSONObjectFormat) and not self.json_object:
            changes["response_format"] = JSON_OBJECT_AS_SCHEMA
            notes.append(f"{self.name} takes no json_object: sent as a json_schema of any object")
        if request.include_usage and not self.stream_options:
            changes["include_usage"] = False
            notes.append(f"{self.name} may reject stream_options: not sent (no usage chunk)")
        if request.reasoning_effort is not None and not self.reasoning_effort:
            changes["reasoning_effort"] = None
            notes.append(f"{self.name} may reject reasoning_effort: not sent")
        if request.max_completion_tokens is not None and not self.max_completion_tokens:
            changes["max_completion_tokens"] = None
            changes["max_tokens"] = request.max_completion_tokens
            notes.append(f"{self.name} reads max_tokens: max_completion_tokens sent under it")
        if not self.developer_role and any(
            isinstance(m, SystemMessage) and m.role == "developer" for m in request.messages
        ):
            changes["messages"] = [
                attrs.evolve(m, role="system")
                if isinstance(m, SystemMessage) and m.role == "developer"
                else m
                for m in request.messages
            ]
            notes.append(f"{self.name} knows no developer role: sent as system")
        return (attrs.evolve(request, **changes) if changes else request), tuple(notes)


JSON_OBJECT_AS_SCHEMA: Final = JSONSchemaFormat(name="json_object", schema={"type": "object"})
"""The nearest form of ``json_object`` for servers that take only ``json_schema``."""

OPENAI: Final = ServerProfile(name="OpenAI")
AZURE: Final = ServerProfile(name="Azure OpenAI", tool_choice_without_tools=False)
LM_STUDIO: Final = ServerProfile(
    name="LM Studio",
    named_tool_choice=False,
    json_object=False,
    schema_holds_reasoning=True,
)
STRICT: Final = ServerProfile(
    name="a strict server",
    stream_options=False,
    reasoning_effort=False,
    max_completion_tokens=False,
    developer_role=False,
)
