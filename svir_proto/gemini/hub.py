"""A `GeminiRequest` to the neutral request (`LLMRequest`, `svir_proto.hub`) and back:
``to_hub(request)`` and ``from_hub(request)``.

Gemini to the hub:

- ``systemInstruction``: one system message per text part. ``contents``: a ``model`` turn is
  an assistant message (its text, its calls with ``args`` as JSON text, and its signatures as
  the neutral ``reasoning`` blocks, carrier ``thought``, formed as `GeminiStreamDecoder` forms
  them: a signature on a call keeps the call's id as ``item_id``; their order the hub's
  ``order``, which `from_hub` writes its parts in); a ``user`` turn is its
  ``functionResponse`` parts as tool messages, then a user message with its text and inline
  data (image, audio or document parts, still read from disk when they came from disk; base64
  in its standard padded form, which the draft requires, so URL-safe or unpadded data comes
  back standard); a ``fileData`` image at an ``http(s)`` URL (its ``mimeType``, or the URL's
  extension, an image's) is the hub's ``linked`` (`svir_proto.hub.LinkedImage`), and a
  ``linked`` image of another dialect goes as ``fileData``, its type by the extension. A
  response's content is its ``output`` (or ``error``, which marks the tool message an error)
  when that string is all it holds, else its JSON. Calls and responses without Gemini ids
  (Gemini 2.5 sends none) get ``gemini-TURN-PART`` ids, responses matched to calls by name.
- ``maxOutputTokens``, ``temperature``, ``topP``, ``stopSequences``: the draft's parameters;
  ``topK``, ``seed``, ``presencePenalty``, ``frequencyPenalty``: the hub's sampling parameters
  (`svir_proto.hub.SAMPLING`); ``toolConfig``: the neutral tool choice (``AUTO`` auto,
  ``NONE`` none, ``ANY`` required, or the one function it allows); ``thinkingConfig``: the
  neutral reasoning (``thinkingBudget`` is ``budget_tokens``, ``thinkingLevel`` ``effort``,
  ``includeThoughts`` ``summary`` "auto"); function declarations: the draft's tools, Gemini's
  ``parameters`` Schema turned into JSON Schema (lower-case types) when there is no
  ``parametersJsonSchema``.
- Under ``vendor:gemini`` (`VENDOR`), read by ``from_hub`` only: the rest of
  ``generationConfig`` (``candidateCount``, ``responseMimeType``,
  ``responseSchema``...), ``safetySettings``, the other top-level fields, ``stream`` when
  false; and the exact Gemini form of whatever the neutral fields do not say exactly (a turn
  with file data or thoughts left unsigned, parts in another order, calls without ids, a
  tool's own Schema, ``VALIDATED`` mode...), with a fingerprint of the neutral fields it
  stands for: ``from_hub`` uses that form only while they still say the same, so
  ``from_hub(to_hub(r)) == r`` for every request, and an edited message is rebuilt from what
  it says now.

The hub to Gemini (``from_hub``) does not carry, and lists here rather than raising: a message's
``name`` (Gemini has no participants); ``metadata`` (``request_id``); ``parallel_tool_calls``;
parameters Gemini has no field for; the `svir_proto.hub.SERVICE` options (the end user, storage,
service tier...) and tools held ``strict``; reasoning blocks another dialect signed (Gemini
refuses other signatures: the first call of a turn, when Gemini did not sign it, carries the
stand-in Google documents, `_FOREIGN_SIGNATURE`, as Gemini 3 requires), and the reasoning
``summary`` style (only that thoughts are included); system messages after the first turn go
into ``systemInstruction``; an assistant message with nothing in it is left out (a turn needs a
part).
A tool result with media parts, or whose call names no function, raises `ValueError` naming
the message. A system instruction with inline data from memory or disk makes ``to_hub`` raise
`ValueError` (the hub has no media in system messages).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from typing import Any, Final, cast

import attrs

from .._json import canonical
from .._signatures import uncarried, unwrapped
from ..answer import AnswerPart
from ..events import ReasoningBlock, TextDelta, ToolCall
from ..hub import (
    SAMPLING,
    AssistantPiece,
    LinkedImage,
    hub_options,
    message_extensions,
    message_is_error,
    message_linked,
    message_pieces,
    message_reasoning,
    not_carried,
    own_fields,
    parallel_tool_calls,
    result_text,
    sampling,
    unsent_summary,
    web_url,
    with_linked,
)
from ..hub import reasoning_options as neutral_reasoning
from ..hub import response_format as neutral_format
from ..hub import tool_choice as neutral_choice
from ..llmstream.request import (
    LLMMediaPart,
    LLMMessage,
    LLMRequest,
    LLMTextPart,
    LLMTool,
    LLMToolCall,
    Part,
)
from ..openai.parts import url_image_type
from ._wire import CARRIER
from .parts import (
    GeminiContent,
    GeminiFileData,
    GeminiFunctionCall,
    GeminiFunctionResponse,
    GeminiInlineData,
    GeminiPart,
    GeminiText,
    model_parts,
    standard_base64,
)
from .request import (
    GeminiFunctionDeclaration,
    GeminiGenerationConfig,
    GeminiRequest,
    GeminiThinkingConfig,
    GeminiTool,
    GeminiToolConfig,
    content_in,
    content_out,
    generation_in,
    generation_out,
    tool_config_in,
    tool_config_out,
    tool_in,
    tool_out,
)

__all__ = ["VENDOR", "from_hub", "to_hub"]

VENDOR: Final = "vendor:gemini"
_REF: Final = "svir:part"  # in a kept turn: this inline data is the neutral media part N
_EMPTY_SCHEMA: Final = {"type": "object", "properties": {}}
_PARAMETERS: Final = (
    ("maxOutputTokens", "max_tokens"),
    ("temperature", "temperature"),
    ("topP", "top_p"),
    ("stopSequences", "stop_sequences"),
)
"""The ``generationConfig`` keys that are the draft's parameters, and the parameters' names."""
_SAMPLING: Final = (
    ("topK", "top_k"),
    ("seed", "seed"),
    ("presencePenalty", "presence_penalty"),
    ("frequencyPenalty", "frequency_penalty"),
)
"""The ``generationConfig`` keys that are the hub's sampling parameters (`SAMPLING`)."""
_NEUTRAL_GENERATION: Final = tuple(key for key, _ in _PARAMETERS + _SAMPLING)
_FOREIGN_SIGNATURE: Final = "skip_thought_signature_validator"
"""The ``thoughtSignature`` Google documents for a call Gemini did not sign as it stands (a
turn of another vendor's, or one whose signature no other dialect could carry back): Gemini 3
refuses a step whose first call has no signature."""
FIELDS: Final = {
    **{f"parameters.{name}": f"generationConfig.{key}" for key, name in _PARAMETERS},
    "response_format": "generationConfig.responseMimeType",
}
"""Where a Gemini request says what the hub's paths name (`DialectSpec.fields`)."""
_EFFORT_LEVEL: Final = {"xhigh": "high"}


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _plain(value: object) -> dict[str, Any]:
    """A mapping that is no dict (a frozen one a caller built) as JSON's object, for `_hash`
    (tuples are JSON's lists already)."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{type(value).__name__} has no JSON for a fingerprint")
    return {str(k): v for k, v in value.items()}


def _hash(value: object) -> str:
    """The fingerprint of a value: its JSON by the standard library's encoder, which walks a
    schema as deep as the parser lets a request nest without Python's recursion (attack 69 F1:
    a walk of our own ran out of stack at half that depth)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_plain)
    return hashlib.sha256(text.encode()).hexdigest()


def _fingerprint(messages: Iterable[LLMMessage]) -> str:
    """What the neutral fields of some messages say (their ``vendor:gemini`` left out; media
    whether as bytes, base64 or a path, since a kept turn refers to them)."""
    plain = []
    for m in messages:
        content: object = m.content
        if isinstance(content, tuple):
            content = [  # media by kind only: a kept turn takes them from the messages
                [p.text] if isinstance(p, LLMTextPart) else [p.type, p.media_type] for p in content
            ]
        ext = {k: v for k, v in m.extensions.items() if k != VENDOR}
        calls = [[c.id, c.name, c.arguments] for c in m.tool_calls]
        plain.append([m.role, content, m.name, m.tool_call_id, calls, ext])
    return _hash(plain)


def unread(request: LLMRequest) -> list[str]:
    """What `to_hub` kept for the Gemini API only, a sentence each: ``safetySettings``, unknown
    fields, the ``generationConfig`` keys the hub has no field for (``candidateCount``...),
    the kinds of part a turn or the system instruction held that have no neutral form
    (``fileData`` but an image at a web URL, ``executableCode``...), which only a kept turn
    gives back; the built-in tools (``googleSearch``...); a ``toolConfig`` the neutral tool
    choice does not give back (names a call may take of several, ``VALIDATED``); and an
    output format that is not JSON (``text/x.enum``): fidelity 42, F2 to F4."""
    vendor = _ours(request.extensions)
    keys: set[str] = {f"contents[].parts ({kind})" for kind in _unneutral(request.messages)}
    system = vendor.get("systemInstruction")
    keys |= {f"systemInstruction.parts ({kind})" for kind in _kinds(system, text_only=True)}
    if vendor.get("safetySettings"):
        keys.add("safetySettings")
    extra = vendor.get("extra")
    if isinstance(extra, Mapping):
        keys |= set(extra)
    tools = vendor.get("tools")
    kinds = (
        {k for t in tools if isinstance(t, Mapping) for k in t}
        if isinstance(tools, list)
        else set()
    )
    keys |= {f"tools ({kind})" for kind in kinds - {"functionDeclarations"}}
    if vendor.get("toolConfig") is not None:
        keys.add("toolConfig")
    rest = vendor.get("generationConfig")
    if isinstance(rest, Mapping):
        carried = {key for key, _ in _SAMPLING} | {"responseJsonSchema"}
        if rest.get("responseMimeType") in (None, "application/json", "text/plain"):
            carried |= {"responseMimeType", "responseSchema"}  # (the hub's response_format)
        keys |= {f"generationConfig.{k}" for k in set(rest) - carried}
    return own_fields("the Gemini API", keys)


_NEUTRAL_PARTS: Final = frozenset(
    ("text", "inlineData", "functionCall", "functionResponse", "thought", "thoughtSignature")
)
"""The keys of a part the hub reads (`_user_turn`, `_model_turn`)."""


def _unneutral(messages: Iterable[LLMMessage]) -> set[str]:
    """The kinds of part of the turns kept whole (`_kept`) that have no neutral form."""
    kinds: set[str] = set()
    for m in messages:
        kinds |= _kinds(_ours(m.extensions).get("content"))
    return kinds


def _kinds(wire: object, text_only: bool = False) -> set[str]:
    """The kinds of part of a content's wire form that have no neutral form (``text_only``:
    a system instruction's, whose only neutral parts are text)."""
    parts = wire.get("parts") if isinstance(wire, Mapping) else None
    linkable = isinstance(wire, Mapping) and wire.get("role") != "model"  # (a user's images)
    kinds: set[str] = set()
    unsigned = False  # a thought no later signature signs: the hub carries signed ones only
    for part in parts if isinstance(parts, list) else ():  # (objects: `content_out` made them)
        kinds |= {k for k, v in part.items() if not _read(k, v, text_only, linkable)}
        unsigned = part.get("thoughtSignature") is None and (
            unsigned or (part.get("thought") is True and bool(part.get("text")))
        )
    if unsigned and not linkable:
        kinds.add("thought without a signature")
    return kinds


def _read(key: str, value: object, text_only: bool, linkable: bool) -> bool:
    """Whether the hub reads a part's ``key`` (with its ``value``): `_kinds`' test."""
    if text_only:
        return key in ("text", "thought", "thoughtSignature")
    if key == "fileData":
        return linkable and _linked_wire(value)
    return key in _NEUTRAL_PARTS


def _linked_wire(value: object) -> bool:
    """A ``fileData`` object of a kept turn that the hub's ``linked`` carries (`_linkable`)."""
    if not isinstance(value, Mapping) or not value.keys() <= {"fileUri", "mimeType"}:
        return False
    uri, mime = value.get("fileUri"), value.get("mimeType")  # (checked when it was read)
    return _linkable(GeminiFileData(file_uri=uri, mime_type=mime))  # type: ignore[arg-type]


def _ours(ext: Mapping[str, Any]) -> Mapping[str, Any]:
    value = ext.get(VENDOR)
    return value if isinstance(value, Mapping) else {}


def _mark(message: LLMMessage, **ours: Any) -> LLMMessage:
    ext = {**message.extensions, VENDOR: {**_ours(message.extensions), **ours}}
    return attrs.evolve(message, extensions=ext)


# -- tool results ---------------------------------------------------------------------------


def _is_object(text: str) -> bool:
    try:
        return isinstance(canonical(text), dict)
    except (ValueError, RecursionError):
        return False


def _result_in(response: Mapping[str, Any]) -> tuple[str, bool]:
    """A ``functionResponse.response`` as a tool message's content, and whether it is an
    error (Gemini's convention: ``output`` or ``error``)."""
    if len(response) == 1:
        ((key, value),) = response.items()
        if key == "error" and isinstance(value, str):
            return value, True
        if key == "output" and isinstance(value, str) and not _is_object(value):
            return value, False
    return _dumps(response), False


def _result_out(content: str, is_error: bool) -> dict[str, Any]:
    if is_error:
        return {"error": content}
    try:
        value = canonical(content)
    except (ValueError, RecursionError):
        value = None
    return value if isinstance(value, dict) else {"output": content}


# -- schemas and tools ----------------------------------------------------------------------

_SCHEMA_LISTS: Final = ("anyOf", "allOf", "oneOf", "prefixItems")
_SCHEMA_MAPS: Final = ("properties", "$defs", "definitions", "patternProperties")


def _json_schema(schema: object) -> object:
    """Gemini's OpenAPI-style ``Schema`` as JSON Schema: its upper-case ``type`` names
    lower-case (``OBJECT`` is ``object``) throughout, ``nullable: true`` a type that takes
    ``null`` too; the rest as it is."""
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    nullable = schema.get("nullable") is True and isinstance(schema.get("type"), str)
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            out[key] = [value.lower(), "null"] if nullable else value.lower()
        elif key == "nullable" and nullable:
            continue  # (the type says it)
        elif key in _SCHEMA_MAPS and isinstance(value, Mapping):
            out[key] = {k: _json_schema(v) for k, v in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_json_schema(v) for v in value]
        elif key in ("items", "additionalProperties", "not"):
            out[key] = _json_schema(value)
        else:
            out[key] = value
    return out


def _hub_tool(d: GeminiFunctionDeclaration) -> LLMTool:
    if isinstance(d.parameters_json_schema, Mapping):
        params: object = d.parameters_json_schema
    elif d.parameters is not None:
        params = _json_schema(d.parameters)
    else:
        params = _EMPTY_SCHEMA
    return LLMTool(name=d.name, description=d.description or "", parameters=params)  # type: ignore[arg-type]


def _gemini_tools(tools: Iterable[LLMTool]) -> tuple[GeminiTool, ...]:
    declarations = [
        GeminiFunctionDeclaration(
            name=t.name,
            description=t.description or None,
            parameters_json_schema=dict(t.parameters),
        )
        for t in tools
    ]
    return (GeminiTool(function_declarations=declarations),) if declarations else ()


def _tools_hash(tools: Iterable[LLMTool]) -> str:
    return _hash([[t.name, t.description, t.parameters] for t in tools])


def _choice_in(config: GeminiToolConfig | None) -> Any:
    if config is None or config.mode is None:
        return None
    if config.mode == "ANY":
        names = config.allowed_function_names
        return ("name", names[0]) if len(names) == 1 else "required"
    return {"AUTO": "auto", "NONE": "none", "VALIDATED": "auto"}.get(config.mode)


def _choice_out(choice: Any) -> GeminiToolConfig | None:
    if choice is None:
        return None
    if isinstance(choice, tuple):
        return GeminiToolConfig(mode="ANY", allowed_function_names=[choice[1]])
    return GeminiToolConfig(mode={"auto": "AUTO", "none": "NONE", "required": "ANY"}[choice])


def _choice_wire(choice: Any) -> object:
    return list(choice) if isinstance(choice, tuple) else choice


# -- reasoning options ----------------------------------------------------------------------


def _count(value: Any) -> Any:
    """A count as the hub has it: proto3 reads ``4.0`` as 4 (the request's Rule 4; a number
    past 64 bits reads as a float, `svir_proto._json` Rule 2); the hub wants the integer."""
    return int(value) if type(value) is float else value


def _reasoning_in(t: GeminiThinkingConfig | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if t is None:
        return out
    if t.thinking_budget is not None:
        out["budget_tokens"] = _count(t.thinking_budget)
    if t.thinking_level is not None:
        out["effort"] = t.thinking_level.lower()
    if t.include_thoughts:
        out["summary"] = "auto"
    return out


def _reasoning_out(options: Mapping[str, Any]) -> GeminiThinkingConfig | None:
    budget = options.get("budget_tokens")
    effort = options.get("effort")
    summary = options.get("summary")
    if type(budget) is not int and not isinstance(effort, str) and summary is None:
        return None
    level = None
    if type(budget) is not int and isinstance(effort, str):
        if effort == "none":
            budget = 0
        else:
            level = _EFFORT_LEVEL.get(effort, effort)
    return GeminiThinkingConfig(
        thinking_budget=budget if type(budget) is int else None,
        include_thoughts=True if summary is not None else None,
        thinking_level=level,
    )


# -- turns to messages ------------------------------------------------------------------------


class _Ids:
    """Ids for calls and responses that came without: a response takes the oldest open call
    of its name."""

    def __init__(self) -> None:
        self.open: dict[str, list[str]] = {}

    def call(self, name: str, turn: int, part: int) -> str:
        call_id = f"gemini-{turn}-{part}"
        self.open.setdefault(name, []).append(call_id)
        return call_id

    def response(self, name: str, turn: int, part: int) -> str:
        waiting = self.open.get(name)
        return waiting.pop(0) if waiting else f"gemini-{turn}-{part}"


def _media(p: GeminiInlineData) -> LLMMediaPart:
    kind = p.mime_type.split("/", 1)[0]
    return LLMMediaPart(
        type="image" if kind == "image" else "audio" if kind == "audio" else "document",
        media_type=p.mime_type,
        data=None if p.data is None else standard_base64(p.data),
        raw=p.raw,
        path=p.path,
    )


def _model_turn(c: GeminiContent, turn: int, ids: _Ids) -> list[LLMMessage]:
    texts: list[str] = []
    media: list[Part] = []
    calls: list[LLMToolCall] = []
    blocks: list[ReasoningBlock] = []
    thoughts: list[str] = []
    pieces: list[AssistantPiece] = []  # in order (attack 49b F4: a text's signature after it)
    with_ids = all(p.id for p in c.parts if isinstance(p, GeminiFunctionCall))
    for k, p in enumerate(c.parts):
        item_id = None
        call = None
        text_at = None
        if isinstance(p, GeminiText):
            (thoughts if p.thought else texts).append(p.text)
            if not p.thought:
                text_at = len(pieces)
                pieces.append(p.text)
        elif isinstance(p, GeminiFunctionCall):
            item_id = p.id if with_ids and p.id else ids.call(p.name, turn, k)
            call = LLMToolCall(id=item_id, name=p.name, arguments=_dumps(p.args))
            calls.append(call)
        elif isinstance(p, GeminiInlineData):
            media.append(_media(p))
        if p.thought_signature is not None:  # as the decoder forms them (stream Rule 3)
            text = "".join(thoughts)
            thoughts.clear()
            blocks.append(  # another vendor's, carried in base64 (encoder Rule 3), is its own
                uncarried(unwrapped(p.thought_signature), text)
                or ReasoningBlock(
                    text=text, signature=p.thought_signature, carrier=CARRIER, item_id=item_id
                )
            )
            if text and text_at is not None:  # the thoughts it closes came before the text
                pieces.insert(text_at, blocks[-1])  # (review 50 r6)
            else:
                pieces.append(blocks[-1])
        if call is not None:  # (after the block that signs it, as its thought came first)
            pieces.append(call)
    text = "".join(texts)
    content: str | tuple[Part, ...] | None
    if media:
        content = (LLMTextPart(text=text), *media) if text else tuple(media)
    else:
        content = text if text or not calls else None
    message = LLMMessage(
        role="assistant",
        content=content,
        tool_calls=calls,
        extensions=message_extensions(reasoning=blocks, pieces=pieces),
    )
    if not with_ids:
        message = _mark(message, ids=False)
    return _kept(c, [message])


def _stateful(request: GeminiRequest) -> list[str]:
    """Where the request's prompt stands on what only Google's servers hold: a context they
    cache (``cachedContent``), a file the Files API keeps or one in Cloud Storage (``gs://``).
    Another dialect's upstream, asked without them, would answer another prompt (attack 69 F2:
    they were only said lost): `svir_proto.dialects.translate_request` refuses them."""
    paths = ["$.cachedContent"] if request.extra.get("cachedContent") is not None else []
    turns = (
        [("systemInstruction", request.system_instruction)] if request.system_instruction else []
    )
    turns += [(f"contents[{i}]", c) for i, c in enumerate(request.contents)]
    for at, content in turns:
        paths += [
            f"$.{at}.parts[{j}].fileData"
            for j, p in enumerate(content.parts)
            if isinstance(p, GeminiFileData) and _kept_by_google(p.file_uri)
        ]
    return paths


def _kept_by_google(uri: str) -> bool:
    """A file of the Files API (``https://generativelanguage.googleapis.com/v1beta/files/ID``)
    or of Cloud Storage."""
    return uri.startswith("gs://") or (
        uri.startswith("https://generativelanguage.googleapis.com/") and "/files/" in uri
    )


def _linkable(p: GeminiFileData) -> bool:
    """A ``fileData`` of an image at a web URL, with nothing besides (a ``displayName``, a
    signature: review 42 F10): the hub's ``linked`` carries it."""
    kind = p.mime_type if p.mime_type is not None else url_image_type(p.file_uri)
    return (
        kind is not None
        and kind.startswith("image/")
        and web_url(p.file_uri)
        and not p.extra
        and not p.inner_extra
        and p.thought_signature is None
    )


def _user_turn(c: GeminiContent, turn: int, ids: _Ids, after_tool: bool) -> list[LLMMessage]:
    out: list[LLMMessage] = []
    parts: list[Part] = []
    linked: list[LinkedImage] = []
    for k, p in enumerate(c.parts):
        if isinstance(p, GeminiFunctionResponse):
            result, is_error = _result_in(p.response)
            message = LLMMessage(
                role="tool",
                content=result,
                name=p.name,
                tool_call_id=p.id or ids.response(p.name, turn, k),
                extensions=message_extensions(is_error=is_error),
            )
            if p.id is None:
                message = _mark(message, ids=False)
            if after_tool and not out:
                message = _mark(message, turn=True)  # not the previous turn's results
            out.append(message)
        elif isinstance(p, GeminiText) and not p.thought:
            parts.append(LLMTextPart(text=p.text))
        elif isinstance(p, GeminiInlineData):
            parts.append(_media(p))
        elif isinstance(p, GeminiFileData) and _linkable(p):
            linked.append(LinkedImage(at=len(parts), url=p.file_uri))
    if parts or linked or not out:
        first = parts[0] if len(parts) == 1 else None
        content = first.text if isinstance(first, LLMTextPart) else tuple(parts)
        extensions = message_extensions(linked=linked)
        user = LLMMessage(role="user", content=content or "", extensions=extensions)
        out.append(_mark(user, joined=True) if out else user)
    return _kept(c, out)


def _kept(c: GeminiContent, messages: list[LLMMessage]) -> list[LLMMessage]:
    """When the neutral messages do not give back the turn exactly, the turn's own form goes
    with them (its inline data by reference to their media parts), with their fingerprint."""
    if _turn(messages, {}) == c:
        return messages
    wire = content_out(c, None)
    n = 0
    for part, raw in zip(c.parts, wire["parts"], strict=True):
        if isinstance(part, GeminiInlineData):
            raw["inlineData"] = {**part.inner_extra, _REF: n}
            n += 1
    messages[0] = _mark(messages[0], content=wire, fingerprint=_fingerprint(messages))
    return messages


# -- messages to turns -------------------------------------------------------------------------


def _turn(group: list[LLMMessage], names: Mapping[str, str]) -> GeminiContent:
    """A turn from what its neutral messages say (or its kept form while they say the same)."""
    kept = _ours(group[0].extensions)
    wire = kept.get("content")
    if isinstance(wire, Mapping) and kept.get("fingerprint") == _fingerprint(group):
        return _resolve(wire, group)
    if group[0].role == "assistant":
        return _model_content(group[0])
    parts: list[GeminiPart] = []
    for m in group:
        if m.role == "tool":
            parts.append(_response(m, names))
            continue
        linked = message_linked(m)
        own: list[GeminiPart]
        if isinstance(m.content, str):
            own = [GeminiText(text=m.content)] if m.content or not linked else []
        else:
            own = [_part(p) for p in m.content or ()]
        parts.extend(with_linked(own, linked, _url_image))
    return GeminiContent(role="user", parts=parts)


def _url_image(linked: LinkedImage) -> GeminiPart:
    """An image by URL (the hub's ``linked``) as ``fileData``, its type by its name's
    extension when it has one."""
    return GeminiFileData(file_uri=linked.url, mime_type=url_image_type(linked.url))


def _resolve(wire: Mapping[str, Any], group: list[LLMMessage]) -> GeminiContent:
    media = [
        p
        for m in group
        if isinstance(m.content, tuple)
        for p in m.content
        if isinstance(p, LLMMediaPart)
    ]
    content = content_in(
        {
            **wire,
            "parts": [
                {**p, "inlineData": {"mimeType": "x/x", "data": ""}} if _ref(p) is not None else p
                for p in wire["parts"]
            ],
        }
    )
    parts = list(content.parts)
    for i, p in enumerate(wire["parts"]):
        n = _ref(p)
        if n is not None:
            inline = parts[i]
            assert isinstance(inline, GeminiInlineData)
            source = _part(media[n])
            assert isinstance(source, GeminiInlineData)
            inner = {k: v for k, v in p["inlineData"].items() if k != _REF}
            parts[i] = attrs.evolve(
                source,
                thought_signature=inline.thought_signature,
                extra=inline.extra,
                inner_extra=inner,
            )
    return GeminiContent(role=content.role, parts=parts)


def _ref(part: Mapping[str, Any]) -> int | None:
    inline = part.get("inlineData")
    n = inline.get(_REF) if isinstance(inline, Mapping) else None
    return n if type(n) is int else None


def _model_content(m: LLMMessage) -> GeminiContent:
    """A model turn: its parts in the order they came (`svir_proto.hub.message_pieces`),
    else its thoughts, its text and its calls."""
    with_ids = _ours(m.extensions).get("ids") is not False
    media = isinstance(m.content, tuple)  # (then thoughts, what it gave, calls)
    pieces: list[AssistantPiece] = (
        [*message_reasoning(m), *m.tool_calls] if media else message_pieces(m)
    )
    given: list[AnswerPart] = []
    calls = 0
    for p in pieces:
        if isinstance(p, str):
            given.append(TextDelta(text=p))
        elif isinstance(p, LLMToolCall):  # (the calls come in their order: review 50 r2)
            given.append(ToolCall(index=calls, id=p.id, name=p.name, arguments=p.arguments))
            calls += 1
        else:
            given.append(p)
    parts = list(model_parts(given, with_ids=with_ids))
    at = next((i for i, p in enumerate(parts) if isinstance(p, GeminiFunctionCall)), len(parts))
    first = parts[at] if at < len(parts) else None
    if isinstance(first, GeminiFunctionCall) and first.thought_signature is None:
        parts[at] = attrs.evolve(first, thought_signature=_FOREIGN_SIGNATURE)
    if isinstance(m.content, tuple):
        parts[at:at] = [_part(p) for p in m.content]
    return GeminiContent(role="model", parts=parts)


def _response(m: LLMMessage, names: Mapping[str, str]) -> GeminiFunctionResponse:
    name = m.name or names.get(m.tool_call_id or "")
    if not name:
        raise ValueError(f"the tool result for call {m.tool_call_id!r} names no function")
    if isinstance(m.content, tuple) and any(isinstance(p, LLMMediaPart) for p in m.content):
        raise ValueError(f"the tool result for call {m.tool_call_id!r} has media: no Gemini form")
    return GeminiFunctionResponse(
        name=name,
        response=_result_out(result_text(m), message_is_error(m)),
        id=None if _ours(m.extensions).get("ids") is False else m.tool_call_id,
    )


def _part(p: Part) -> GeminiPart:
    if isinstance(p, LLMTextPart):
        return GeminiText(text=p.text)
    size = os.stat(p.path).st_size if p.path is not None else len(p.raw or b"")
    return GeminiInlineData(mime_type=p.media_type, data=p.data, raw=p.raw, path=p.path, size=size)


def _groups(messages: Iterable[LLMMessage]) -> list[list[LLMMessage]]:
    """The turns the messages make: a tool result joins the results before it (unless it
    begins a turn), a user message joins them when it came from their turn."""
    groups: list[list[LLMMessage]] = []
    for m in messages:
        ours = _ours(m.extensions)
        last = groups[-1][-1] if groups else None
        if (
            last is not None
            and last.role == "tool"
            and (
                (m.role == "tool" and ours.get("turn") is not True)
                or (m.role == "user" and ours.get("joined") is True)
            )
        ):
            groups[-1].append(m)
        else:
            groups.append([m])
    return groups


# -- the request ------------------------------------------------------------------------------


def to_hub(request: GeminiRequest) -> LLMRequest:
    """A Gemini request as the neutral request (the module docstring says what goes where)."""
    messages: list[LLMMessage] = []
    paths: list[str] = []  # (`svir_proto.hub.message_path`)
    vendor: dict[str, Any] = {}
    system = request.system_instruction
    if system is not None:
        at = [k for k, p in enumerate(system.parts) if isinstance(p, GeminiText) and not p.thought]
        texts = [cast(GeminiText, system.parts[k]) for k in at]
        own = [LLMMessage(role="system", content=p.text) for p in texts]
        messages.extend(own)
        paths = [f"systemInstruction.parts[{k}]" for k in at]
        if GeminiContent(role=None, parts=[GeminiText(text=p.text) for p in texts]) != system:
            if any(isinstance(p, GeminiInlineData) and p.data is None for p in system.parts):
                raise ValueError(
                    "systemInstruction: inline data from memory or disk has no neutral form"
                )
            vendor["systemInstruction"] = content_out(system, None)
            vendor["system_fingerprint"] = _fingerprint(own)
    ids = _Ids()
    after_tool = False
    for i, c in enumerate(request.contents):
        group = _model_turn(c, i, ids) if c.role == "model" else _user_turn(c, i, ids, after_tool)
        after_tool = group[-1].role == "tool"
        messages.extend(group)
        paths += [f"contents[{i}]"] * len(group)
    tools = [_hub_tool(d) for t in request.tools for d in t.function_declarations]
    if _gemini_tools(tools) != request.tools:
        vendor["tools"] = [tool_out(t) for t in request.tools]
        vendor["tools_fingerprint"] = _tools_hash(tools)
    choice = _choice_in(request.tool_config)
    if _choice_out(choice) != request.tool_config:
        vendor["toolConfig"] = tool_config_out(request.tool_config)  # type: ignore[arg-type]
        vendor["tool_choice"] = _choice_wire(choice)
    params: dict[str, Any] = {}
    reasoning: dict[str, Any] = {}
    config = request.generation_config
    if config is not None:
        wire = generation_out(config)
        for key, name in _PARAMETERS + _SAMPLING:
            if key in wire:
                params[name] = _count(wire[key]) if name == "max_tokens" else wire[key]
        thinking = wire.pop("thinkingConfig", None)
        reasoning = _reasoning_in(config.thinking_config)
        if _reasoning_out(reasoning) != config.thinking_config:
            vendor["thinkingConfig"] = thinking
            vendor["reasoning"] = reasoning
        vendor["generationConfig"] = {k: v for k, v in wire.items() if k not in _NEUTRAL_GENERATION}
    if request.safety_settings:
        vendor["safetySettings"] = [dict(s) for s in request.safety_settings]
    if request.extra:
        vendor["extra"] = dict(request.extra)
    if not request.stream:
        vendor["stream"] = False
    extensions: dict[str, Any] = hub_options(
        tool_choice=choice,
        reasoning=reasoning,
        stateful=("gemini", _stateful(request)),
        response_format=_format_in(config),
        paths=paths,
    )
    if vendor:
        extensions[VENDOR] = vendor
    return LLMRequest(
        model=request.model,
        messages=messages,
        tools=tools,
        parameters=params,
        extensions=extensions,
    )


def from_hub(request: LLMRequest, *, lost: list[str] | None = None) -> GeminiRequest:
    """The neutral request as a Gemini request (the module docstring says what does not carry);
    ``lost``, a list that receives a sentence for each thing not carried.

    Raises:
        ValueError: a tool result with media, or whose call names no function; a value Gemini
            refuses (a temperature above 2, more than 5 stop sequences).
    """
    vendor = _ours(request.extensions)
    system = [m for m in request.messages if m.role == "system"]
    system_instruction = None
    kept = vendor.get("systemInstruction")
    if isinstance(kept, Mapping) and vendor.get("system_fingerprint") == _fingerprint(system):
        system_instruction = content_in(dict(kept))
    elif system:
        system_instruction = GeminiContent(
            role=None, parts=[GeminiText(text=t) for m in system for t in m.texts]
        )
    names: dict[str, str] = {}
    contents = []
    for group in _groups(m for m in request.messages if m.role != "system"):
        for m in group:
            names.update((c.id, c.name) for c in m.tool_calls)
        turn = _turn(group, names)
        if turn.parts:  # an assistant message with nothing in it has no Gemini form
            contents.append(turn)
    kept_tools = vendor.get("tools")
    if isinstance(kept_tools, list) and vendor.get("tools_fingerprint") == _tools_hash(
        request.tools
    ):
        tools = tuple(tool_in(t) for t in kept_tools)
    else:
        tools = _gemini_tools(request.tools)
    choice = neutral_choice(request)
    kept_config = vendor.get("toolConfig")
    if isinstance(kept_config, Mapping) and vendor.get("tool_choice") == _choice_wire(choice):
        tool_config: GeminiToolConfig | None = tool_config_in(dict(kept_config))
    else:
        tool_config = _choice_out(choice)
    if lost is not None:
        lost += not_carried(
            request,
            "the Gemini API",
            parameters=("max_tokens", "temperature", "top_p", "stop_sequences", *SAMPLING),
            carriers=(CARRIER,),
            systems_in_place=False,
        )
        if parallel_tool_calls(request) is False:  # (calls in parallel: Gemini's way)
            lost.append("parallel_tool_calls has no field in the Gemini API: not sent")
        if (unsent := unsent_summary(request, "Gemini API")) is not None:  # (attack 50b N5)
            lost.append(unsent)
    return GeminiRequest(
        model=request.model,
        contents=contents,
        system_instruction=system_instruction,
        tools=tools,
        tool_config=tool_config,
        generation_config=_generation(request, vendor),
        safety_settings=vendor.get("safetySettings") or (),
        stream=vendor.get("stream") is not False,
        extra=vendor.get("extra") or {},
    )


def _format_in(config: GeminiGenerationConfig | None) -> dict[str, Any] | None:
    """JSON output asked for (``responseMimeType`` ``application/json``, and a schema, if
    any) as the hub's neutral ``response_format``."""
    if config is None or config.response_mime_type != "application/json":
        return None
    schema = config.extra.get("responseJsonSchema")
    if schema is None:  # Gemini's own schema, as JSON Schema (fidelity 42 F5)
        schema = _json_schema(config.response_schema)
    if not isinstance(schema, Mapping):
        return {"type": "json_object"}
    return {"type": "json_schema", "name": "response", "schema": dict(schema)}


def _format_out(fmt: Mapping[str, Any]) -> dict[str, Any]:
    """The hub's neutral ``response_format`` as ``generationConfig`` keys: JSON Schema goes in
    ``responseJsonSchema`` (``responseSchema`` is Gemini's OpenAPI subset)."""
    out: dict[str, Any] = {"responseMimeType": "application/json"}
    if fmt.get("type") == "json_schema":
        out["responseJsonSchema"] = dict(fmt["schema"])
    return out


def _generation(request: LLMRequest, vendor: Mapping[str, Any]) -> GeminiGenerationConfig | None:
    params = request.parameters
    reasoning = dict(neutral_reasoning(request))
    kept = vendor.get("thinkingConfig")
    if isinstance(kept, Mapping) and vendor.get("reasoning") == reasoning:
        thinking = generation_in({"thinkingConfig": kept}).thinking_config
    else:
        thinking = _reasoning_out(reasoning)
    rest = vendor.get("generationConfig")
    fmt = neutral_format(request)
    if fmt is not None and not (isinstance(rest, Mapping) and "responseMimeType" in rest):
        rest = {**(rest if isinstance(rest, Mapping) else {}), **_format_out(fmt)}
    chosen = sampling(request)
    if chosen:  # (over what a Gemini request kept: the neutral values are the ones that hold)
        given = {key: chosen[name] for key, name in _SAMPLING if name in chosen}
        rest = {**(rest if isinstance(rest, Mapping) else {}), **given}
    values = {
        "max_output_tokens": params.get("max_tokens"),
        "temperature": params.get("temperature"),
        "top_p": params.get("top_p"),
        "stop_sequences": params.get("stop_sequences"),
    }
    if (
        not isinstance(rest, Mapping)
        and thinking is None
        and all(v is None for v in values.values())
    ):
        return None
    config = generation_in(dict(rest) if isinstance(rest, Mapping) else {})
    return attrs.evolve(config, **values, thinking_config=thinking)
