"""`ChatRequest.from_openai`: the dict openai-python's ``chat.completions.create`` takes, read
into the typed request. Wire reference section 2 is the shape.

Rule 1: every key the request types is read and checked where it stands; a value of the wrong
    shape is a `ValueError` (or `TypeError`) naming its path (``messages[1].content[0]``).
Rule 2: a top-level key the request does not type goes to ``extra_body`` unchanged, so a
    server's own options pass through; a key *inside* a message, a part or a tool that has no
    place in the typed request (a message's ``name``, an audio part, a legacy
    ``function_call``) is an error, never dropped, unless it holds nothing (``null``, empty).
Rule 3: ``stream`` may be absent or true: a `ChatRequest` always streams.

No I/O: an image comes from a ``data:`` URL in the dict, or stays a URL for the server.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .._signatures import from_thinking_block
from ..events import ReasoningBlock, ReasoningCarrier, ToolCall
from .parts import ImagePart, Part, TextPart
from .request import (
    TYPED_FIELDS,
    AssistantMessage,
    JSONObjectFormat,
    JSONSchemaFormat,
    Message,
    NamedToolChoice,
    ResponseFormat,
    SystemMessage,
    TextFormat,
    Tool,
    ToolChoice,
    ToolMessage,
    UserMessage,
)

__all__: list[str] = []

_PLAIN: Final = ("max_tokens", "max_completion_tokens", "temperature", "top_p", "n", "seed")
_PLAIN_MORE: Final = ("reasoning_effort", "parallel_tool_calls", "user")


def _need(cond: bool, path: str, problem: str) -> None:
    if not cond:
        raise ValueError(f"{path}: {problem}")


def _keys(obj: Mapping[str, Any], allowed: tuple[str, ...], path: str) -> None:
    # a key whose value is null or empty holds nothing to lose: openai-python's messages
    # write ``"audio": null, "annotations": []`` (an answer's message sent back as it came)
    extra = sorted(k for k in set(obj) - set(allowed) if obj[k] not in (None, [], {}, ""))
    _need(not extra, path, f"{', '.join(map(repr, extra))} cannot be carried (it would be lost)")


def _str(value: object, path: str, *, empty: bool = True) -> str:
    if not isinstance(value, str) or (not empty and not value):
        raise ValueError(f"{path}: a {'' if empty else 'non-empty '}string is required")
    return value


def _object(value: object, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"{path}: an object is required, not {value!r}"[:200])
    return value


def request_fields(params: Mapping[str, Any]) -> dict[str, Any]:
    """The `ChatRequest` keyword arguments for ``params`` (the module's rules)."""
    params = _object(params, "the request")
    stream = params.get("stream", True)
    _need(stream is True, "stream", "a ChatRequest always streams: true, or leave it out")
    out: dict[str, Any] = {
        "model": params.get("model"),
        "messages": _messages(params.get("messages"), "messages"),
    }
    for key in (*_PLAIN, *_PLAIN_MORE):
        if params.get(key) is not None:
            out[key] = params[key]
    options = params.get("stream_options")
    if options is not None:
        options = _object(options, "stream_options")
        _keys(options, ("include_usage",), "stream_options")
        out["include_usage"] = options.get("include_usage") is True
    if params.get("stop") is not None:
        stop = params["stop"]
        out["stop"] = stop if isinstance(stop, str) else tuple(_list(stop, "stop"))
    if params.get("tools") is not None:
        out["tools"] = [
            _tool(t, f"tools[{i}]") for i, t in enumerate(_list(params["tools"], "tools"))
        ]
    if params.get("tool_choice") is not None:
        out["tool_choice"] = _tool_choice(params["tool_choice"])
    if params.get("response_format") is not None:
        out["response_format"] = _format(params["response_format"])
    out["extra_body"] = {k: v for k, v in params.items() if k not in TYPED_FIELDS}  # Rule 2
    return out


def _list(value: object, path: str) -> list[Any]:
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{path}: an array is required, not {value!r}"[:200])
    return list(value)


def _messages(value: object, path: str) -> list[Message]:
    return [
        _message(_object(m, f"{path}[{i}]"), f"{path}[{i}]")
        for i, m in enumerate(_list(value, path))
    ]


def _text(value: object, path: str) -> str:
    """A content that must be text: a string, or text parts (joined as the encoder joins)."""
    if isinstance(value, str):
        return value
    texts = []
    for i, part in enumerate(_list(value, path)):
        part = _object(part, f"{path}[{i}]")
        _need(
            part.get("type") == "text",
            f"{path}[{i}].type",
            f"only text here, not {part.get('type')!r}",
        )
        _keys(part, ("type", "text"), f"{path}[{i}]")
        texts.append(_str(part.get("text"), f"{path}[{i}].text"))
    return "\n".join(texts)


def _message(m: Mapping[str, Any], path: str) -> Message:
    role = m.get("role")
    if role in ("system", "developer"):
        _keys(m, ("role", "content"), path)
        return SystemMessage(content=_text(m.get("content"), f"{path}.content"), role=role)
    if role == "user":
        _keys(m, ("role", "content"), path)
        content = m.get("content")
        if isinstance(content, str):
            return UserMessage(content=content)
        return UserMessage(
            content=[
                _part(p, f"{path}.content[{i}]")
                for i, p in enumerate(_list(content, f"{path}.content"))
            ]
        )
    if role == "assistant":
        return _assistant(m, path)
    if role == "tool":
        _keys(m, ("role", "content", "tool_call_id"), path)
        call_id = _str(m.get("tool_call_id"), f"{path}.tool_call_id", empty=False)
        return ToolMessage(tool_call_id=call_id, content=_text(m.get("content"), f"{path}.content"))
    raise ValueError(f"{path}.role: system, developer, user, assistant or tool, not {role!r}")


def _part(part: object, path: str) -> Part:
    part = _object(part, path)
    kind = part.get("type")
    if kind == "text":
        _keys(part, ("type", "text"), path)
        return TextPart(text=_str(part.get("text"), f"{path}.text"))
    if kind == "image_url":
        _keys(part, ("type", "image_url"), path)
        image = _object(part.get("image_url"), f"{path}.image_url")
        _keys(image, ("url", "detail"), f"{path}.image_url")
        try:
            return ImagePart.from_url(image.get("url"), detail=image.get("detail"))  # type: ignore[arg-type]
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{path}.image_url: {exc}") from exc
    raise ValueError(f"{path}.type: text or image_url parts only, not {kind!r}")


def _assistant(m: Mapping[str, Any], path: str) -> AssistantMessage:
    known = ("role", "content", "tool_calls", "reasoning_content", "reasoning", "refusal")
    _keys(m, (*known, "thinking_blocks"), path)
    _need(m.get("refusal") is None, f"{path}.refusal", "a refusal cannot be sent back")
    content = m.get("content")
    text = None if content is None else _text(content, f"{path}.content")
    calls = []
    for i, c in enumerate(_list(m.get("tool_calls") or [], f"{path}.tool_calls")):
        at = f"{path}.tool_calls[{i}]"
        c = _object(c, at)
        _keys(c, ("id", "type", "function", "index"), at)
        _need(c.get("type", "function") == "function", f"{at}.type", "only function calls")
        fn = _object(c.get("function"), f"{at}.function")
        _keys(fn, ("name", "arguments"), f"{at}.function")
        calls.append(
            ToolCall(
                index=i,
                id=_str(c.get("id"), f"{at}.id", empty=False),
                name=_str(fn.get("name"), f"{at}.function.name"),
                arguments=_str(fn.get("arguments"), f"{at}.function.arguments"),
            )
        )
    reasoning: str | None = None
    carrier: ReasoningCarrier | None = None
    keys: tuple[ReasoningCarrier, ...] = ("reasoning_content", "reasoning")
    for key in keys:
        if m.get(key) is not None:
            _need(carrier is None, f"{path}.{key}", "reasoning under one key only")
            reasoning, carrier = _str(m[key], f"{path}.{key}"), key
    blocks = [
        _thinking_block(b, f"{path}.thinking_blocks[{i}]")
        for i, b in enumerate(_list(m.get("thinking_blocks") or [], f"{path}.thinking_blocks"))
    ]
    return AssistantMessage(
        content=text,
        tool_calls=calls,
        reasoning=reasoning,
        reasoning_carrier=carrier,
        thinking_blocks=blocks,
    )


def _thinking_block(b: object, path: str) -> ReasoningBlock:
    """A ``thinking_blocks`` entry (`svir_proto.openai.encoder` writes them): ``thinking``
    with its text and signature, or ``redacted_thinking`` with its data; ``index``, which a
    client that merged stream deltas keeps, says nothing here."""
    b = _object(b, path)
    kind = b.get("type")
    if kind == "redacted_thinking":
        _keys(b, ("type", "data", "index"), path)
        return from_thinking_block(kind, "", _str(b.get("data"), f"{path}.data", empty=False))
    _need(kind == "thinking", f"{path}.type", f"thinking or redacted_thinking, not {kind!r}")
    _keys(b, ("type", "thinking", "signature", "index"), path)
    return from_thinking_block(
        "thinking",
        _str(b.get("thinking", ""), f"{path}.thinking"),
        _str(b.get("signature"), f"{path}.signature", empty=False),
    )


def _tool(t: object, path: str) -> Tool:
    t = _object(t, path)
    _keys(t, ("type", "function"), path)
    _need(t.get("type") == "function", f"{path}.type", "only function tools")
    fn = _object(t.get("function"), f"{path}.function")
    _keys(fn, ("name", "description", "parameters", "strict"), f"{path}.function")
    kwargs: dict[str, Any] = {"name": fn.get("name"), "strict": fn.get("strict") is True}
    if fn.get("description") is not None:
        kwargs["description"] = fn["description"]
    if fn.get("parameters") is not None:
        kwargs["parameters"] = fn["parameters"]
    try:
        return Tool(**kwargs)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{path}: {exc}") from exc


def _tool_choice(value: object) -> ToolChoice:
    if isinstance(value, str):
        return value  # type: ignore[return-value]  # ChatRequest checks the word
    value = _object(value, "tool_choice")
    _keys(value, ("type", "function"), "tool_choice")
    _need(value.get("type") == "function", "tool_choice.type", "only a function")
    fn = _object(value.get("function"), "tool_choice.function")
    _keys(fn, ("name",), "tool_choice.function")
    return NamedToolChoice(_str(fn.get("name"), "tool_choice.function.name"))


def _format(value: object) -> ResponseFormat:
    value = _object(value, "response_format")
    kind = value.get("type")
    if kind in ("text", "json_object"):
        _keys(value, ("type",), "response_format")
        return TextFormat() if kind == "text" else JSONObjectFormat()
    _need(
        kind == "json_schema",
        "response_format.type",
        f"text, json_object or json_schema, not {kind!r}",
    )
    _keys(value, ("type", "json_schema"), "response_format")
    spec = _object(value.get("json_schema"), "response_format.json_schema")
    _keys(spec, ("name", "schema", "strict"), "response_format.json_schema")
    return JSONSchemaFormat(
        name=spec.get("name"),  # type: ignore[arg-type]  # checked by JSONSchemaFormat
        schema=_object(spec.get("schema", {}), "response_format.json_schema.schema"),
        strict=spec.get("strict") is True,
    )
