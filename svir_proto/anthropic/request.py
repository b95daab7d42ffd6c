"""Messages API requests (``POST /v1/messages``), both directions: typed and checked when built,
encoded with an exact length (images from disk read while sending), and parsed on the server
side with errors that name the JSON path.

Anthropic's API reference, "Messages", is the requirement:

Rule 1: ``model`` (a non-empty string), ``max_tokens`` (a positive integer) and ``messages`` (a
    non-empty array) are required; ``stream`` is a boolean (false is parsed and kept: a
    gateway relays non-streaming requests too).
Rule 2: a message has role ``user`` or ``assistant`` and content that is a string or a
    non-empty array of blocks. Blocks: ``text``; ``image`` with a ``base64`` source (media
    type PNG, JPEG, GIF or WebP, base64 data), a ``url`` source, or a ``file`` source;
    ``tool_result`` (user only: ``tool_use_id``, content a string or blocks, ``is_error``);
    ``tool_use`` (assistant only: ``id``, ``name``, ``input`` an object); ``thinking`` (with its
    ``signature``) and ``redacted_thinking`` (``data``), assistant only, sent back unchanged.
    A block of another type needs only its ``type``: it is kept as it is (`OtherBlock`).
Rule 3: ``system`` is a string or an array of text blocks; ``tools`` have unique non-empty
    names and, unless they are a server tool (a ``type`` other than ``custom``), an
    ``input_schema`` object; ``tool_choice`` is ``auto``, ``any``, ``none`` or ``tool`` with
    the ``name`` of a declared tool, with an optional boolean ``disable_parallel_tool_use``.
Rule 4: ``temperature`` and ``top_p`` are numbers in 0..1, ``top_k`` an integer >= 0,
    ``stop_sequences`` an array of strings, ``metadata`` an object whose ``user_id`` is a
    string, ``thinking`` ``{"type": "enabled", "budget_tokens": N >= 1024}`` or
    ``{"type": "disabled"}`` (or ``adaptive``).
Rule 5: what this module does not model is kept, never dropped: unknown top-level fields
    (`MessagesRequest.extra`), unknown keys of a block, tool or option (``extra``, e.g.
    ``cache_control``, ``citations``), blocks of unknown types (`OtherBlock`).

This module reads files only to measure them and check their type (`ImagePart`); no other I/O.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal, final

import attrs

from .._json import MAX_REQUEST_VALUES, canonical
from ..body import (
    DEFAULT_PIECE_SIZE,
    Base64Bytes,
    Base64File,
    Placeholders,
    RequestBody,
    encode_document,
)
from ..llmstream.request import RequestError
from ..openai.parts import IMAGE_TYPES, ImagePart
from ._wire import API_VERSION, PATH

__all__ = [
    "API_VERSION",
    "PATH",
    "Block",
    "ImageBlock",
    "Message",
    "MessagesRequest",
    "OtherBlock",
    "RedactedThinkingBlock",
    "TextBlock",
    "Thinking",
    "ThinkingBlock",
    "Tool",
    "ToolChoice",
    "ToolResultBlock",
    "ToolUseBlock",
    "headers",
]


def _mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return {} if value is None else value


def headers(
    api_key: str,
    *,
    version: str = API_VERSION,
    beta: str | None = None,
    stream: bool = True,
    bearer: bool = False,
) -> list[tuple[str, str]]:
    """The headers of a Messages API request: ``x-api-key`` (or, with ``bearer``,
    ``authorization: Bearer KEY``, which the anthropic SDK sends since its 2.x releases),
    ``anthropic-version``, and ``anthropic-beta`` when given (passed through as it is), with
    the body's content type.

    Raises:
        ValueError: a value holds a line break (it would split the header).
    """
    auth = ("authorization", f"Bearer {api_key}") if bearer else ("x-api-key", api_key)
    out = [
        auth,
        ("anthropic-version", version),
        ("content-type", "application/json"),
    ]
    if beta is not None:
        out.append(("anthropic-beta", beta))
    if stream:
        out.append(("accept", "text/event-stream"))
    for name, value in out:
        if "\r" in value or "\n" in value:
            raise ValueError(f"header {name} must not contain a line break")
    return out


# -- blocks ------------------------------------------------------------------------------------


@final
@attrs.frozen(kw_only=True)
class TextBlock:
    """``{"type": "text", "text": ...}``; ``extra`` keeps other keys (``cache_control``,
    ``citations``)."""

    text: str
    extra: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)


@final
@attrs.frozen(kw_only=True)
class ImageBlock:
    """An image: exactly one of ``data`` (base64 text, as parsed), ``image`` (an `ImagePart`
    from memory or disk, sent as base64 while the body is sent), ``url`` (a ``url`` source) or
    ``file_id`` (a ``file`` source). Use `from_path` or `from_bytes` for local images."""

    media_type: str | None = None
    data: str | None = None
    image: ImagePart | None = None
    url: str | None = None
    file_id: str | None = None
    extra: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)

    def __attrs_post_init__(self) -> None:
        given = [self.data, self.image, self.url, self.file_id]
        if sum(v is not None for v in given) != 1:
            raise ValueError("an image needs exactly one of data, image, url or file_id")
        if self.image is not None and not isinstance(self.image, ImagePart):
            raise TypeError(f"image must be an ImagePart, not {self.image!r}")

    @classmethod
    def from_path(cls, path: str | os.PathLike[str], media_type: str | None = None) -> ImageBlock:
        """An image read from disk while the body is sent; its type is checked now."""
        part = ImagePart.from_path(path, media_type)
        return cls(media_type=part.media_type, image=part)

    @classmethod
    def from_bytes(cls, data: bytes, media_type: str | None = None) -> ImageBlock:
        part = ImagePart.from_bytes(data, media_type)
        return cls(media_type=part.media_type, image=part)


@final
@attrs.frozen(kw_only=True)
class ToolUseBlock:
    """An assistant's tool call: ``input`` is the arguments as a JSON object."""

    id: str
    name: str
    input: Mapping[str, Any]
    extra: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)


def _result_content(
    value: str | Iterable[TextBlock | ImageBlock | OtherBlock] | None,
) -> str | tuple[TextBlock | ImageBlock | OtherBlock, ...] | None:
    return value if value is None or isinstance(value, str) else tuple(value)


@final
@attrs.frozen(kw_only=True)
class ToolResultBlock:
    """A tool's result, in a user message: a string or blocks; ``is_error`` marks a failure."""

    tool_use_id: str
    content: str | tuple[TextBlock | ImageBlock | OtherBlock, ...] | None = attrs.field(
        default=None, converter=_result_content
    )
    is_error: bool | None = None
    extra: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)


@final
@attrs.frozen(kw_only=True)
class ThinkingBlock:
    """An assistant's signed reasoning, sent back unchanged."""

    thinking: str
    signature: str
    extra: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)


@final
@attrs.frozen(kw_only=True)
class RedactedThinkingBlock:
    """Reasoning withheld from the client: its encrypted ``data``, sent back unchanged."""

    data: str
    extra: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)


@final
@attrs.frozen(kw_only=True)
class OtherBlock:
    """A block of a type this module does not model (``document``, ``search_result``,
    ``server_tool_use``, ...): its JSON object, sent as it is (Rule 5)."""

    value: Mapping[str, Any]


Block = (
    TextBlock
    | ImageBlock
    | ToolUseBlock
    | ToolResultBlock
    | ThinkingBlock
    | RedactedThinkingBlock
    | OtherBlock
)
_BLOCKS: Final = (
    TextBlock,
    ImageBlock,
    ToolUseBlock,
    ToolResultBlock,
    ThinkingBlock,
    RedactedThinkingBlock,
    OtherBlock,
)


def _content(value: str | Iterable[Block]) -> str | tuple[Block, ...]:
    return value if isinstance(value, str) else tuple(value)


@final
@attrs.frozen(kw_only=True)
class Message:
    """A turn: ``role`` ``user`` or ``assistant``; ``content`` a string or blocks."""

    role: Literal["user", "assistant"]
    content: str | tuple[Block, ...] = attrs.field(converter=_content)


@final
@attrs.frozen(kw_only=True)
class Tool:
    """A tool the model may call. ``extra`` keeps other keys: a server tool's ``type``
    (``web_search_20250305``, ...) and its options, ``cache_control``."""

    name: str
    input_schema: Mapping[str, Any] | None = None
    description: str | None = None
    extra: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)


@final
@attrs.frozen(kw_only=True)
class ToolChoice:
    """``tool_choice``: ``auto``, ``any`` (some tool), ``tool`` (the one ``name``d) or
    ``none``."""

    type: Literal["auto", "any", "tool", "none"]
    name: str | None = None
    disable_parallel_tool_use: bool | None = None


@final
@attrs.frozen(kw_only=True)
class Thinking:
    """The ``thinking`` option: ``enabled`` with ``budget_tokens``, ``disabled``, or
    ``adaptive``; ``extra`` keeps other keys."""

    type: str
    budget_tokens: int | None = None
    extra: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)


def _messages(value: Iterable[Message]) -> tuple[Message, ...]:
    return tuple(value)


def _tools(value: Iterable[Tool]) -> tuple[Tool, ...]:
    return tuple(value)


def _strings(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


def _system(value: str | Iterable[TextBlock] | None) -> str | tuple[TextBlock, ...] | None:
    return value if value is None or isinstance(value, str) else tuple(value)


@final
@attrs.frozen(kw_only=True)
class MessagesRequest:
    """A Messages API request; checked when built (a bad value is a `ValueError` naming the
    field, a wrong type a `TypeError`), encoded by `body`, read by `parse`.

    Fields not set (``None``, empty) are not sent. ``extra`` holds top-level fields this
    module does not model, sent as they are.
    """

    model: str
    max_tokens: int
    messages: tuple[Message, ...] = attrs.field(converter=_messages)
    system: str | tuple[TextBlock, ...] | None = attrs.field(default=None, converter=_system)
    tools: tuple[Tool, ...] = attrs.field(default=(), converter=_tools)
    tool_choice: ToolChoice | None = None
    stop_sequences: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    metadata: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)
    thinking: Thinking | None = None
    stream: bool = True
    extra: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)

    def __attrs_post_init__(self) -> None:
        _check_types(self)
        try:
            _check(self.to_document(), "$")
        except RequestError as exc:  # the caller's values: a ValueError naming the field
            raise ValueError(exc.message.removeprefix("$.")) from exc

    @property
    def tool_names(self) -> frozenset[str]:
        """The declared tools, to pass to `MessagesStreamDecoder(declared_tools=...)`."""
        return frozenset(t.name for t in self.tools)

    def headers(
        self, api_key: str, *, beta: str | None = None, bearer: bool = False
    ) -> list[tuple[str, str]]:
        """`headers` for this request (``accept: text/event-stream`` when it streams)."""
        return headers(api_key, beta=beta, stream=self.stream, bearer=bearer)

    @classmethod
    def parse(cls, body: bytes | bytearray | str) -> MessagesRequest:
        """Read a request body (the server side).

        Raises:
            RequestError: the body is not JSON or breaks the rules; ``path`` says where.
        """
        try:
            doc: Any = canonical(
                body, max_values=MAX_REQUEST_VALUES
            )  # the one JSON policy (svir_proto._json)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise RequestError("$", f"not JSON: {exc}") from exc
        _check(doc, "$")
        system = doc.get("system")
        if isinstance(system, list):
            system = [_text_block(b) for b in system]
        choice = doc.get("tool_choice")
        thinking = doc.get("thinking")
        return cls(
            model=doc["model"],
            max_tokens=doc["max_tokens"],
            messages=[
                Message(
                    role=m["role"],
                    content=m["content"]
                    if isinstance(m["content"], str)
                    else [_block(b) for b in m["content"]],
                )
                for m in doc["messages"]
            ],
            system=system,
            tools=[
                Tool(
                    name=t["name"],
                    input_schema=t.get("input_schema"),
                    description=t.get("description"),
                    extra=_rest(t, ("name", "input_schema", "description")),
                )
                for t in doc.get("tools") or ()
            ],
            tool_choice=None
            if choice is None
            else ToolChoice(
                type=choice["type"],
                name=choice.get("name"),
                disable_parallel_tool_use=choice.get("disable_parallel_tool_use"),
            ),
            stop_sequences=doc.get("stop_sequences") or (),
            temperature=doc.get("temperature"),
            top_p=doc.get("top_p"),
            top_k=doc.get("top_k"),
            metadata=doc.get("metadata") or {},
            thinking=None
            if thinking is None
            else Thinking(
                type=thinking["type"],
                budget_tokens=thinking.get("budget_tokens"),
                extra=_rest(thinking, ("type", "budget_tokens")),
            ),
            stream=doc.get("stream") is True,  # absent or null: the API's default, false
            extra=_rest(doc, _TOP_LEVEL),
        )

    def to_document(self, marks: Placeholders | None = None) -> dict[str, Any]:
        """The request as a JSON object. Images given as an `ImagePart` become placeholders
        in ``marks``; without ``marks`` (checking the shape only), empty data."""
        doc: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": [
                {
                    "role": m.role,
                    "content": m.content
                    if isinstance(m.content, str)
                    else [_block_out(b, marks) for b in m.content],
                }
                for m in self.messages
            ],
        }
        if self.system is not None:
            doc["system"] = (
                self.system
                if isinstance(self.system, str)
                else [_block_out(b, marks) for b in self.system]
            )
        if self.tools:
            doc["tools"] = [_tool_out(t) for t in self.tools]
        if self.tool_choice is not None:
            c = self.tool_choice
            choice: dict[str, Any] = {"type": c.type}
            if c.name is not None:
                choice["name"] = c.name
            if c.disable_parallel_tool_use is not None:
                choice["disable_parallel_tool_use"] = c.disable_parallel_tool_use
            doc["tool_choice"] = choice
        if self.stop_sequences:
            doc["stop_sequences"] = list(self.stop_sequences)
        for key in ("temperature", "top_p", "top_k"):
            value = getattr(self, key)
            if value is not None:
                doc[key] = value
        if self.metadata:
            doc["metadata"] = dict(self.metadata)
        if self.thinking is not None:
            thinking: dict[str, Any] = {"type": self.thinking.type}
            if self.thinking.budget_tokens is not None:
                thinking["budget_tokens"] = self.thinking.budget_tokens
            doc["thinking"] = {**thinking, **self.thinking.extra}
        doc["stream"] = self.stream
        for key, value in self.extra.items():
            doc.setdefault(key, value)
        return doc

    def body(self, *, piece_size: int = DEFAULT_PIECE_SIZE) -> RequestBody:
        """The request as a `RequestBody`: exact ``content_length``, images from disk read
        while sending."""
        return encode_document(self.to_document, piece_size=piece_size)


_TOP_LEVEL: Final = (
    "model",
    "max_tokens",
    "messages",
    "system",
    "tools",
    "tool_choice",
    "stop_sequences",
    "temperature",
    "top_p",
    "top_k",
    "metadata",
    "thinking",
    "stream",
)


def _rest(obj: Mapping[str, Any], known: Iterable[str]) -> dict[str, Any]:
    keys = set(known)
    return {k: v for k, v in obj.items() if k not in keys}


# -- to and from JSON ----------------------------------------------------------------------------


def _text_block(b: dict[str, Any]) -> TextBlock:
    return TextBlock(text=b["text"], extra=_rest(b, ("type", "text")))


def _image_block(b: dict[str, Any]) -> ImageBlock:
    source = b["source"]
    extra = _rest(b, ("type", "source"))
    if source["type"] == "base64":
        return ImageBlock(media_type=source["media_type"], data=source["data"], extra=extra)
    if source["type"] == "url":
        return ImageBlock(url=source["url"], extra=extra)
    return ImageBlock(file_id=source["file_id"], extra=extra)


def _block(b: dict[str, Any]) -> Block:
    kind = b["type"]
    if kind == "text":
        return _text_block(b)
    if kind == "image":
        return _image_block(b)
    if kind == "tool_use":
        return ToolUseBlock(
            id=b["id"],
            name=b["name"],
            input=b["input"],
            extra=_rest(b, ("type", "id", "name", "input")),
        )
    if kind == "tool_result":
        content = b.get("content")
        if isinstance(content, list):
            content = [_block(p) for p in content]
        return ToolResultBlock(
            tool_use_id=b["tool_use_id"],
            content=content,
            is_error=b.get("is_error"),
            extra=_rest(b, ("type", "tool_use_id", "content", "is_error")),
        )
    if kind == "thinking":
        return ThinkingBlock(
            thinking=b["thinking"],
            signature=b["signature"],
            extra=_rest(b, ("type", "thinking", "signature")),
        )
    if kind == "redacted_thinking":
        return RedactedThinkingBlock(data=b["data"], extra=_rest(b, ("type", "data")))
    return OtherBlock(value=b)


def _block_out(b: Block, marks: Placeholders | None) -> dict[str, Any]:
    out: dict[str, Any]
    if isinstance(b, TextBlock):
        out = {"type": "text", "text": b.text}
    elif isinstance(b, ImageBlock):
        source: dict[str, Any]
        if b.url is not None:
            source = {"type": "url", "url": b.url}
        elif b.file_id is not None:
            source = {"type": "file", "file_id": b.file_id}
        else:
            data = b.data
            if data is None:
                part = b.image
                assert part is not None  # one of the four, checked at construction
                if marks is None:
                    data = ""
                elif part.path is not None:
                    data = marks.add(Base64File(part.path, part.size))
                else:
                    data = marks.add(Base64Bytes(part.data or b""))
            source = {"type": "base64", "media_type": b.media_type, "data": data}
        out = {"type": "image", "source": source}
    elif isinstance(b, ToolUseBlock):
        out = {"type": "tool_use", "id": b.id, "name": b.name, "input": dict(b.input)}
    elif isinstance(b, ToolResultBlock):
        out = {"type": "tool_result", "tool_use_id": b.tool_use_id}
        if isinstance(b.content, tuple):
            out["content"] = [_block_out(p, marks) for p in b.content]
        elif b.content is not None:
            out["content"] = b.content
        if b.is_error is not None:
            out["is_error"] = b.is_error
    elif isinstance(b, ThinkingBlock):
        out = {"type": "thinking", "thinking": b.thinking, "signature": b.signature}
    elif isinstance(b, RedactedThinkingBlock):
        out = {"type": "redacted_thinking", "data": b.data}
    else:
        return dict(b.value)
    for key, value in b.extra.items():
        out.setdefault(key, value)
    return out


def _tool_out(t: Tool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": t.name}
    if t.description is not None:
        out["description"] = t.description
    if t.input_schema is not None:
        out["input_schema"] = dict(t.input_schema)
    for key, value in t.extra.items():
        out.setdefault(key, value)
    return out


# -- checking -------------------------------------------------------------------------------------


def _check_types(r: MessagesRequest) -> None:
    """Wrong types, as `TypeError` naming the field (values are `_check`'s)."""
    for i, m in enumerate(r.messages):
        if not isinstance(m, Message):
            raise TypeError(f"messages[{i}] must be a Message, not {m!r}")
        if not isinstance(m.content, str):
            for j, b in enumerate(m.content):
                if not isinstance(b, _BLOCKS):
                    raise TypeError(f"messages[{i}].content[{j}] must be a block, not {b!r}")
                if isinstance(b, ToolResultBlock) and isinstance(b.content, tuple):
                    for k, p in enumerate(b.content):
                        if not isinstance(p, (TextBlock, ImageBlock, OtherBlock)):
                            raise TypeError(
                                f"messages[{i}].content[{j}].content[{k}] must be a text or "
                                f"image block, not {p!r}"
                            )
    if isinstance(r.system, tuple):
        for i, b in enumerate(r.system):
            if not isinstance(b, TextBlock):
                raise TypeError(f"system[{i}] must be a TextBlock, not {b!r}")
    for i, t in enumerate(r.tools):
        if not isinstance(t, Tool):
            raise TypeError(f"tools[{i}] must be a Tool, not {t!r}")
    if type(r.stream) is not bool:
        raise TypeError(f"stream must be a bool, not {r.stream!r}")
    for name, kind in (("tool_choice", ToolChoice), ("thinking", Thinking)):
        value = getattr(r, name)
        if value is not None and not isinstance(value, kind):
            raise TypeError(f"{name} must be a {kind.__name__}, not {value!r}")


def _need(cond: bool, path: str, problem: str) -> None:
    if not cond:
        raise RequestError(path, problem)


def _number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _string(obj: dict[str, Any], key: str, p: str, *, empty: bool = True) -> None:
    v = obj.get(key)
    _need(
        isinstance(v, str) and (empty or bool(v)),
        f"{p}.{key}",
        "a string is required" if empty else "a non-empty string is required",
    )


def _check(doc: object, at: str) -> None:
    _need(isinstance(doc, dict), at, "a request must be a JSON object")
    assert isinstance(doc, dict)
    _string(doc, "model", at, empty=False)
    mt = doc.get("max_tokens")
    _need(
        type(mt) is int and mt > 0,
        f"{at}.max_tokens",
        f"a positive integer is required, not {mt!r}",
    )
    messages = doc.get("messages")
    _need(
        isinstance(messages, list) and bool(messages),
        f"{at}.messages",
        "a non-empty array is required",
    )
    for i, m in enumerate(messages):  # type: ignore[arg-type]
        _check_message(m, f"{at}.messages[{i}]")
    system = doc.get("system")
    if system is not None and not isinstance(system, str):
        p = f"{at}.system"
        _need(isinstance(system, list), p, "a string or an array of text blocks")
        for i, b in enumerate(system):
            _need(isinstance(b, dict) and b.get("type") == "text", f"{p}[{i}]", "a text block")
            _string(b, "text", f"{p}[{i}]")
    names = _check_tools(doc.get("tools"), f"{at}.tools")
    choice = doc.get("tool_choice")
    if choice is not None:
        p = f"{at}.tool_choice"
        _need(isinstance(choice, dict), p, "must be an object")
        kind = choice.get("type")
        _need(
            kind in ("auto", "any", "tool", "none"),
            f"{p}.type",
            f"must be auto, any, tool or none, not {kind!r}",
        )
        if kind == "tool":
            name = choice.get("name")
            _need(
                isinstance(name, str) and name in names,
                f"{p}.name",
                f"must name a declared tool, not {name!r}",
            )
        d = choice.get("disable_parallel_tool_use")
        _need(d is None or isinstance(d, bool), f"{p}.disable_parallel_tool_use", "a boolean")
    stops = doc.get("stop_sequences")
    _need(
        stops is None or (isinstance(stops, list) and all(isinstance(s, str) for s in stops)),
        f"{at}.stop_sequences",
        "an array of strings",
    )
    for key in ("temperature", "top_p"):
        v = doc.get(key)
        _need(
            v is None or (_number(v) and 0 <= v <= 1), f"{at}.{key}", f"a number in 0..1, not {v!r}"
        )
    k = doc.get("top_k")
    _need(k is None or (type(k) is int and k >= 0), f"{at}.top_k", f"an integer >= 0, not {k!r}")
    meta = doc.get("metadata")
    if meta is not None:
        _need(isinstance(meta, dict), f"{at}.metadata", "must be an object")
        uid = meta.get("user_id")
        _need(uid is None or isinstance(uid, str), f"{at}.metadata.user_id", "must be a string")
    thinking = doc.get("thinking")
    if thinking is not None:
        p = f"{at}.thinking"
        _need(isinstance(thinking, dict), p, "must be an object")
        kind = thinking.get("type")
        _need(
            kind in ("enabled", "disabled", "adaptive"),
            f"{p}.type",
            f"must be enabled, disabled or adaptive, not {kind!r}",
        )
        budget = thinking.get("budget_tokens")
        if kind == "enabled":
            _need(
                type(budget) is int and budget >= 1024,
                f"{p}.budget_tokens",
                f"an integer >= 1024 is required, not {budget!r}",
            )
    stream = doc.get("stream")
    _need(stream is None or isinstance(stream, bool), f"{at}.stream", "must be a boolean")


def _check_tools(tools: object, p: str) -> set[str]:
    names: set[str] = set()
    if tools is None:
        return names
    _need(isinstance(tools, list), p, "must be an array")
    assert isinstance(tools, list)
    for i, t in enumerate(tools):
        tp = f"{p}[{i}]"
        _need(isinstance(t, dict), tp, "a tool must be an object")
        _string(t, "name", tp, empty=False)
        _need(t["name"] not in names, f"{tp}.name", f"{t['name']!r} is declared twice")
        names.add(t["name"])
        description = t.get("description")
        _need(description is None or isinstance(description, str), f"{tp}.description", "a string")
        if t.get("type") in (None, "custom"):
            _need(
                isinstance(t.get("input_schema"), dict),
                f"{tp}.input_schema",
                "a JSON Schema object is required",
            )
        else:
            _need(isinstance(t["type"], str), f"{tp}.type", "a string")
    return names


_USER_ONLY: Final = ("tool_result",)
_ASSISTANT_ONLY: Final = ("tool_use", "thinking", "redacted_thinking")


def _check_message(m: object, p: str) -> None:
    _need(isinstance(m, dict), p, "a message must be an object")
    assert isinstance(m, dict)
    role = m.get("role")
    _need(role in ("user", "assistant"), f"{p}.role", f"must be user or assistant, not {role!r}")
    content = m.get("content")
    if isinstance(content, str):
        return
    _need(isinstance(content, list), f"{p}.content", "a string or an array of blocks")
    _need(bool(content), f"{p}.content", "an array of blocks must not be empty")
    assert isinstance(content, list)
    for i, b in enumerate(content):
        bp = f"{p}.content[{i}]"
        _check_block(b, bp)
        kind = b["type"]
        _need(
            not (role == "assistant" and kind in _USER_ONLY),
            f"{bp}.type",
            f"a {kind} block belongs in a user message",
        )
        _need(
            not (role == "user" and kind in _ASSISTANT_ONLY),
            f"{bp}.type",
            f"a {kind} block belongs in an assistant message",
        )


def _check_block(b: object, p: str, *, inner: bool = False) -> None:
    _need(isinstance(b, dict), p, "a content block must be an object")
    assert isinstance(b, dict)
    kind = b.get("type")
    _need(isinstance(kind, str) and bool(kind), f"{p}.type", "a block needs a type")
    if kind == "text":
        _string(b, "text", p)
    elif kind == "image":
        _check_image(b.get("source"), f"{p}.source")
    elif inner:
        _need(kind not in _USER_ONLY + _ASSISTANT_ONLY, f"{p}.type", f"no {kind} block here")
    elif kind == "tool_use":
        _string(b, "id", p, empty=False)
        _string(b, "name", p, empty=False)
        _need(isinstance(b.get("input"), dict), f"{p}.input", "an object is required")
    elif kind == "tool_result":
        _string(b, "tool_use_id", p, empty=False)
        content = b.get("content")
        if content is not None and not isinstance(content, str):
            _need(isinstance(content, list), f"{p}.content", "a string or an array of blocks")
            for i, part in enumerate(content):
                _check_block(part, f"{p}.content[{i}]", inner=True)
        e = b.get("is_error")
        _need(e is None or isinstance(e, bool), f"{p}.is_error", "a boolean")
    elif kind == "thinking":
        _string(b, "thinking", p)
        _string(b, "signature", p)
    elif kind == "redacted_thinking":
        _string(b, "data", p)


def _check_image(source: object, p: str) -> None:
    _need(isinstance(source, dict), p, "an image needs a source object")
    assert isinstance(source, dict)
    kind = source.get("type")
    if kind == "url":
        _string(source, "url", p, empty=False)
        return
    if kind == "file":
        _string(source, "file_id", p, empty=False)
        return
    _need(kind == "base64", f"{p}.type", f"must be base64, url or file, not {kind!r}")
    mt = source.get("media_type")
    _need(  # (a list or an object is not hashable: no TypeError from the set)
        isinstance(mt, str) and mt in IMAGE_TYPES,
        f"{p}.media_type",
        f"must be one of {sorted(IMAGE_TYPES)}, not {mt!r}",
    )
    data = source.get("data")
    _need(isinstance(data, str), f"{p}.data", "base64 data is required")
    try:
        base64.b64decode(data, validate=True)  # type: ignore[arg-type]
    except (binascii.Error, ValueError) as exc:
        raise RequestError(f"{p}.data", f"not base64: {exc}") from exc
