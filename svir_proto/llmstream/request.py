"""LLM-Stream requests (draft section 4): ``application/llm-request+json``, both directions.

`LLMRequest.parse` (a server) reads a request body and rejects what the draft does not allow
with a `RequestError` that names the JSON path (``$.messages[1].content[0].media_type``).
`LLMRequest.from_document` (a client with a stored request) reads the same object, already
parsed, with the same checks as a `ValueError`. `LLMRequest.body` (a client) encodes one
through the exact-length, piece-by-piece `RequestBody`, so images, documents and audio stream
from disk here too.

Rule 1 (4.2): ``version`` "1.0", ``stream`` true, ``model`` and ``messages`` required.
Rule 2 (4.3): roles system, user, assistant, tool; content a string or an array of ``text``,
    ``image``, ``document``, ``audio`` parts (media parts with ``media_type`` and base64
    ``data``); ``name`` optional; ``tool_call_id`` required for the tool role; assistant
    ``tool_calls`` as ``{"id", "name", "arguments"}`` (4.8).
Rule 3 (4.4): tools have a name, a description and a JSON Schema ``parameters`` object.
Rule 4 (4.5): ``parameters`` ``max_tokens``, ``temperature``, ``top_p``, ``stop_sequences`` are
    checked; unknown parameters are kept and ignored.
Rule 5 (4.6, 4.7): ``metadata`` is an object (``request_id`` a string if present);
    ``extensions`` keys are ``vendor:name``; unknown top-level fields are ignored.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
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
from ..errors import PeerProtocolError

__all__ = [
    "MEDIA_TYPE",
    "LLMMediaPart",
    "LLMMessage",
    "LLMRequest",
    "LLMTextPart",
    "LLMTool",
    "LLMToolCall",
    "RequestError",
]

_CHECKED: Final[ContextVar[bool]] = ContextVar("svir_llm_request_checked", default=False)
"""Set while `LLMRequest._from_checked` builds a request from a document `_check` passed."""

MEDIA_TYPE: Final = "application/llm-request+json"
_EXTENSION_KEY: Final = re.compile(r"[^:\s]+:[^:\s]+")
ROLES: Final = ("system", "user", "assistant", "tool")
_TOP_LEVEL: Final = (
    "version",
    "stream",
    "model",
    "messages",
    "tools",
    "parameters",
    "metadata",
    "extensions",
)
MediaKind = Literal["image", "document", "audio"]


class RequestError(PeerProtocolError):
    """A request body the draft does not allow; ``path`` names where (``$.messages[0]...``)."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path


@final
@attrs.frozen(kw_only=True)
class LLMTextPart:
    text: str


@final
@attrs.frozen(kw_only=True)
class LLMMediaPart:
    """An image, document or audio part: base64 ``data`` as parsed, or, to send, ``raw`` bytes
    or a ``path`` read from disk while sending."""

    type: MediaKind
    media_type: str
    data: str | None = None
    raw: bytes | None = None
    path: str | None = None

    @classmethod
    def from_path(
        cls, type: MediaKind, path: str | os.PathLike[str], media_type: str
    ) -> LLMMediaPart:
        path = os.fspath(path)
        os.stat(path)  # it must exist now; it is read while sending
        return cls(type=type, media_type=media_type, path=path)

    def __attrs_post_init__(self) -> None:
        if self.type not in ("image", "document", "audio"):
            raise ValueError(
                f"a media part's type must be image, document or audio, not {self.type!r}"
            )
        if "/" not in self.media_type:
            raise ValueError(f"media_type {self.media_type!r} is not a media type")
        if sum(x is not None for x in (self.data, self.raw, self.path)) != 1:
            raise ValueError("a media part needs exactly one of data, raw or path")

    def decoded(self) -> bytes:
        """The part's bytes (reads the file for a path)."""
        if self.raw is not None:
            return self.raw
        if self.path is not None:
            with open(self.path, "rb") as f:
                return f.read()
        return base64.b64decode(self.data or "")


Part = LLMTextPart | LLMMediaPart


def _mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return {} if value is None else value


@final
@attrs.frozen(kw_only=True)
class LLMToolCall:
    id: str
    name: str
    arguments: str


def _parts(value: str | Iterable[Part] | None) -> str | tuple[Part, ...] | None:
    return value if value is None or isinstance(value, str) else tuple(value)


def _calls(value: Iterable[LLMToolCall]) -> tuple[LLMToolCall, ...]:
    return tuple(value)


@final
@attrs.frozen(kw_only=True)
class LLMMessage:
    """A message (4.3). ``content`` takes a string or any iterable of parts (kept as a tuple).

    ``extensions`` is svir's: what a message of another dialect carries that the draft has no
    field for (an assistant's signed reasoning, a tool result marked as an error), under
    ``vendor:name`` keys as the request's own ``extensions`` (4.7). It is written as the
    message's ``extensions`` member, which a conforming parser ignores (4.7: unknown fields);
    `svir_proto.hub` names the neutral keys.
    """

    role: str
    content: str | tuple[Part, ...] | None = attrs.field(converter=_parts)
    name: str | None = None
    tool_call_id: str | None = None
    tool_calls: tuple[LLMToolCall, ...] = attrs.field(default=(), converter=_calls)
    extensions: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)

    def __attrs_post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, not {self.role!r}")
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("a tool message needs tool_call_id (4.3)")
        if self.content is None and not (self.role == "assistant" and self.tool_calls):
            raise ValueError(
                "content is required (it may be null only for an assistant's tool calls)"
            )
        for key in self.extensions:
            if not isinstance(key, str) or not _EXTENSION_KEY.fullmatch(key):
                raise ValueError(f"extensions: keys must be vendor:name, not {key!r}")

    @property
    def text(self) -> str:
        """The message's text: the string, or its text parts joined (an answer's pieces)."""
        if isinstance(self.content, str):
            return self.content
        return "".join(p.text for p in self.content or () if isinstance(p, LLMTextPart))

    @property
    def texts(self) -> tuple[str, ...]:
        """The message's text parts apart (the string as one): instructions given in blocks
        (Anthropic's ``system``) are kept apart where a dialect can, and joined by a line end
        where it cannot, never glued."""
        if isinstance(self.content, str):
            return (self.content,)
        return tuple(p.text for p in self.content or () if isinstance(p, LLMTextPart))


@final
@attrs.frozen(kw_only=True)
class LLMTool:
    name: str
    description: str
    parameters: Mapping[str, Any]


def _messages(value: Iterable[LLMMessage]) -> tuple[LLMMessage, ...]:
    return tuple(value)


def _tools(value: Iterable[LLMTool]) -> tuple[LLMTool, ...]:
    return tuple(value)


@final
@attrs.frozen(kw_only=True)
class LLMRequest:
    """An ``application/llm-request+json`` request. ``parameters`` keeps unknown keys."""

    model: str
    messages: tuple[LLMMessage, ...] = attrs.field(converter=_messages)
    tools: tuple[LLMTool, ...] = attrs.field(default=(), converter=_tools)
    parameters: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)
    metadata: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)
    extensions: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)

    def __attrs_post_init__(self) -> None:
        if _CHECKED.get():  # made by `_from_checked` of a document `_check` passed already
            return
        try:
            _check(self.to_document(), "$")
        except RequestError as exc:  # the caller's values: a ValueError naming the field
            raise ValueError(exc.message) from exc

    @property
    def request_id(self) -> str | None:
        rid = self.metadata.get("request_id")
        return rid if isinstance(rid, str) else None

    @property
    def tool_names(self) -> frozenset[str]:
        return frozenset(t.name for t in self.tools)

    @classmethod
    def parse(cls, body: bytes | bytearray | str) -> LLMRequest:
        """Read a request body (the server side).

        Raises:
            RequestError: the body is not JSON or breaks the draft; ``path`` says where.
        """
        try:
            doc: Any = canonical(
                body, max_values=MAX_REQUEST_VALUES
            )  # the one JSON policy (svir_proto._json)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise RequestError("$", f"not JSON: {exc}") from exc
        _check(doc, "$")
        return cls._from_checked(doc)

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> LLMRequest:
        """A request from its JSON object, already parsed (a stored request, a dict built by
        hand): the draft's checks, as `parse` makes them. ``version`` and ``stream`` may be
        left out (they can only be ``"1.0"`` and true).

        Raises:
            ValueError: the object breaks the draft (the message names the path), or has a
                top-level key the draft does not define (it would be lost: put what is yours
                under ``extensions``).
        """
        if not isinstance(document, Mapping):
            raise TypeError(f"an LLM-Stream request must be a mapping, not {document!r}"[:200])
        unknown = sorted(set(document) - set(_TOP_LEVEL))
        if unknown:
            raise ValueError(
                f"$: {', '.join(map(repr, unknown))} is not a field of the draft (4.2) and "
                "would be lost; carry it under extensions"
            )
        doc = {"version": "1.0", "stream": True, **document}
        try:
            _check(doc, "$")
        except RequestError as exc:  # the caller's values: a ValueError naming the field
            raise ValueError(exc.message) from exc
        return cls._from_checked(doc)

    @classmethod
    def _from_checked(cls, doc: Mapping[str, Any]) -> LLMRequest:
        token = _CHECKED.set(True)  # the request's own check would check the same again
        try:
            return cls._build(doc)
        finally:
            _CHECKED.reset(token)

    @classmethod
    def _build(cls, doc: Mapping[str, Any]) -> LLMRequest:
        messages = []
        for m in doc["messages"]:
            content = m.get("content")
            if isinstance(content, list):
                content = tuple(
                    LLMTextPart(text=p["text"])
                    if p["type"] == "text"
                    else LLMMediaPart(type=p["type"], media_type=p["media_type"], data=p["data"])
                    for p in content
                )
            messages.append(
                LLMMessage(
                    role=m["role"],
                    content=content,
                    name=m.get("name"),
                    tool_call_id=m.get("tool_call_id"),
                    tool_calls=tuple(
                        LLMToolCall(id=c["id"], name=c["name"], arguments=c["arguments"])
                        for c in m.get("tool_calls") or ()
                    ),
                    extensions=_message_extensions(m.get("extensions")),
                )
            )
        return cls(
            model=doc["model"],
            messages=messages,
            tools=[
                LLMTool(name=t["name"], description=t["description"], parameters=t["parameters"])
                for t in doc.get("tools") or ()
            ],
            parameters=doc.get("parameters") or {},
            metadata=doc.get("metadata") or {},
            extensions=doc.get("extensions") or {},
        )

    def to_document(self, marks: Placeholders | None = None) -> dict[str, Any]:
        """The request as a JSON object. Media parts given as bytes or paths become
        placeholders in ``marks``; without ``marks`` (checking the shape only), empty data."""
        messages = []
        for m in self.messages:
            out: dict[str, Any] = {"role": m.role}
            if isinstance(m.content, tuple):
                parts: list[dict[str, Any]] = []
                for p in m.content:
                    if isinstance(p, LLMTextPart):
                        parts.append({"type": "text", "text": p.text})
                        continue
                    data = p.data
                    if data is None:
                        if marks is None:
                            data = ""
                        elif p.path is not None:
                            data = marks.add(Base64File(p.path))
                        else:
                            data = marks.add(Base64Bytes(p.raw or b""))
                    parts.append({"type": p.type, "media_type": p.media_type, "data": data})
                out["content"] = parts
            else:
                out["content"] = m.content
            if m.name is not None:
                out["name"] = m.name
            if m.tool_call_id is not None:
                out["tool_call_id"] = m.tool_call_id
            if m.tool_calls:
                out["tool_calls"] = [
                    {"id": c.id, "name": c.name, "arguments": c.arguments} for c in m.tool_calls
                ]
            if m.extensions:
                out["extensions"] = dict(m.extensions)
            messages.append(out)
        doc: dict[str, Any] = {
            "version": "1.0",
            "stream": True,
            "model": self.model,
            "messages": messages,
        }
        if self.tools:
            doc["tools"] = [
                {"name": t.name, "description": t.description, "parameters": dict(t.parameters)}
                for t in self.tools
            ]
        for key in ("parameters", "metadata", "extensions"):
            value = getattr(self, key)
            if value:
                doc[key] = dict(value)
        return doc

    def body(self, *, piece_size: int = DEFAULT_PIECE_SIZE) -> RequestBody:
        """The request as a `RequestBody` with Content-Type ``application/llm-request+json``."""
        return encode_document(self.to_document, content_type=MEDIA_TYPE, piece_size=piece_size)


# -- checking --------------------------------------------------------------------------------


def _need(cond: bool, path: str, problem: str) -> None:
    if not cond:
        raise RequestError(path, problem)


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check(doc: object, at: str) -> None:
    _need(isinstance(doc, dict), at, "a request must be a JSON object")
    assert isinstance(doc, dict)
    _need(
        doc.get("version") == "1.0", f"{at}.version", f'must be "1.0", not {doc.get("version")!r}'
    )
    _need(doc.get("stream") is True, f"{at}.stream", "must be true")
    _need(
        isinstance(doc.get("model"), str) and bool(doc.get("model")),
        f"{at}.model",
        "a non-empty string is required",
    )
    messages = doc.get("messages")
    _need(
        isinstance(messages, list) and bool(messages),
        f"{at}.messages",
        "a non-empty array is required",
    )
    for i, m in enumerate(messages):  # type: ignore[arg-type]
        _check_message(m, f"{at}.messages[{i}]")
    tools = doc.get("tools")
    if tools is not None:
        _need(isinstance(tools, list), f"{at}.tools", "must be an array")
        names = set()
        for i, t in enumerate(tools):
            p = f"{at}.tools[{i}]"
            _need(isinstance(t, dict), p, "a tool must be an object")
            _need(
                isinstance(t.get("name"), str) and bool(t["name"]),
                f"{p}.name",
                "a non-empty string is required",
            )
            _need(t["name"] not in names, f"{p}.name", f"{t['name']!r} is declared twice")
            names.add(t["name"])
            _need(isinstance(t.get("description"), str), f"{p}.description", "a string is required")
            _need(
                isinstance(t.get("parameters"), dict),
                f"{p}.parameters",
                "a JSON Schema object is required",
            )
    params = doc.get("parameters")
    if params is not None:
        p = f"{at}.parameters"
        _need(isinstance(params, dict), p, "must be an object")
        mt = params.get("max_tokens")
        _need(
            mt is None or (type(mt) is int and mt > 0),
            f"{p}.max_tokens",
            f"a positive integer, not {mt!r}",
        )
        for key in ("temperature", "top_p"):
            v = params.get(key)
            _need(v is None or _is_number(v), f"{p}.{key}", f"a number, not {v!r}")
        tp = params.get("top_p")
        _need(tp is None or 0 <= tp <= 1, f"{p}.top_p", f"in 0..1, not {tp!r}")
        temp = params.get("temperature")
        _need(temp is None or temp >= 0, f"{p}.temperature", f"not negative, not {temp!r}")
        stops = params.get("stop_sequences")
        _need(
            stops is None or (isinstance(stops, list) and all(isinstance(s, str) for s in stops)),
            f"{p}.stop_sequences",
            "an array of strings",
        )
    meta = doc.get("metadata")
    if meta is not None:
        _need(isinstance(meta, dict), f"{at}.metadata", "must be an object")
        rid = meta.get("request_id")
        _need(rid is None or isinstance(rid, str), f"{at}.metadata.request_id", "must be a string")
    _check_extensions(doc.get("extensions"), f"{at}.extensions")


def _message_extensions(ext: object) -> dict[str, Any]:
    """A message's ``extensions`` member is svir's, not the draft's, so a parser must ignore it
    when it is not ours to read (4.7): only an object's ``vendor:name`` keys are kept."""
    if not isinstance(ext, dict):
        return {}
    return {k: v for k, v in ext.items() if _EXTENSION_KEY.fullmatch(k)}


def _check_extensions(ext: object, p: str) -> None:
    if ext is not None:
        _need(isinstance(ext, dict), p, "must be an object")
        assert isinstance(ext, dict)
        for key in ext:
            _need(bool(_EXTENSION_KEY.fullmatch(key)), f"{p}[{key!r}]", "keys must be vendor:name")


def _check_message(m: object, p: str) -> None:
    _need(isinstance(m, dict), p, "a message must be an object")
    assert isinstance(m, dict)
    role = m.get("role")
    _need(role in ROLES, f"{p}.role", f"must be one of {', '.join(ROLES)}, not {role!r}")
    content = m.get("content")
    calls = m.get("tool_calls")
    if calls is not None:
        _need(
            role == "assistant", f"{p}.tool_calls", "only an assistant message carries tool calls"
        )
        _need(isinstance(calls, list), f"{p}.tool_calls", "must be an array")
        for i, c in enumerate(calls):
            cp = f"{p}.tool_calls[{i}]"
            _need(isinstance(c, dict), cp, "a tool call must be an object")
            for key in ("id", "name", "arguments"):
                _need(isinstance(c.get(key), str), f"{cp}.{key}", "a string is required")
    if content is None:
        _need("content" in m and role == "assistant" and bool(calls), f"{p}.content", "is required")
    elif isinstance(content, list):
        _need(bool(content), f"{p}.content", "an array of parts must not be empty")
        for i, part in enumerate(content):
            _check_part(part, f"{p}.content[{i}]")
    else:
        _need(isinstance(content, str), f"{p}.content", "must be a string or an array of parts")
    name = m.get("name")
    _need(name is None or isinstance(name, str), f"{p}.name", "must be a string")
    tcid = m.get("tool_call_id")
    if role == "tool":
        _need(
            isinstance(tcid, str) and bool(tcid),
            f"{p}.tool_call_id",
            "is required for the tool role",
        )
    else:
        _need(tcid is None or isinstance(tcid, str), f"{p}.tool_call_id", "must be a string")


def _check_part(part: object, p: str) -> None:
    _need(isinstance(part, dict), p, "a content part must be an object")
    assert isinstance(part, dict)
    kind = part.get("type")
    if kind == "text":
        _need(isinstance(part.get("text"), str), f"{p}.text", "a string is required")
        return
    _need(
        kind in ("image", "document", "audio"),
        f"{p}.type",
        f"must be text, image, document or audio, not {kind!r}",
    )
    mt = part.get("media_type")
    _need(
        isinstance(mt, str) and "/" in mt,
        f"{p}.media_type",
        f"a media type is required, not {mt!r}",
    )
    data = part.get("data")
    _need(isinstance(data, str), f"{p}.data", "base64 data is required")
    try:
        base64.b64decode(data, validate=True)  # type: ignore[arg-type]
    except (binascii.Error, ValueError) as exc:
        raise RequestError(f"{p}.data", f"not base64: {exc}") from exc
