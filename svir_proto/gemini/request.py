"""Gemini ``GenerateContentRequest``: typed, checked at construction, encoded with an exact
length, and parsed on the server side (Gemini API reference, "generateContent"; the
``google-genai`` SDK's ``types.GenerateContentConfig`` names the same fields in snake case).

The model is not in the body: it is in the path (`svir_proto.gemini.endpoint`), so the request
carries it (``model``) and whether it streams (``stream``: ``streamGenerateContent?alt=sse``,
or ``generateContent``), and `GeminiRequest.target` builds the path.

Rule 1: ``contents`` is a non-empty array of ``Content`` (``role`` ``user`` or ``model``, or
    left out) with non-empty ``parts``; a part holds exactly one of ``text``, ``inlineData``
    (``mimeType``, base64 ``data``: standard or URL-safe, padded or not, as proto3's JSON
    mapping reads bytes), ``fileData`` (``fileUri``), ``functionCall`` (``name``,
    ``args`` object, ``id``), ``functionResponse`` (``name``, ``response`` object, ``id``), or
    another kind, which is kept as it came; ``thought`` is a boolean and ``thoughtSignature``
    a string, sent back unchanged.
Rule 2: ``systemInstruction`` is one ``Content``; ``tools`` hold ``functionDeclarations``
    (``name``: a letter or ``_`` then up to 127 of letters, digits, ``_ . : -``, unique;
    ``description``; ``parameters`` or ``parametersJsonSchema``, not both) and other tools
    (``googleSearch``, ``codeExecution``...), kept.
Rule 3: ``toolConfig.functionCallingConfig``: ``mode`` one of ``AUTO``, ``ANY``, ``NONE``,
    ``VALIDATED`` (or ``MODE_UNSPECIFIED``); ``allowedFunctionNames`` only with ``ANY`` or
    ``VALIDATED``, each one a declared function.
Rule 4: ``generationConfig``: ``maxOutputTokens``, ``topK`` and ``candidateCount`` positive
    integers (``4.0`` is one, as proto3's JSON mapping reads it, and as the SDK sends
    ``topK``), ``candidateCount`` 1 (the stream decoder reads candidate 0 only, as a Chat
    request's ``n`` is 1: the other answers would be lost); ``temperature`` in 0..2;
    ``topP`` in 0..1; ``stopSequences`` up to 5 strings; ``responseMimeType`` a string;
    ``responseSchema`` an object; ``thinkingConfig`` with ``thinkingBudget`` an integer (-1:
    dynamic, 0: off), ``includeThoughts`` a boolean, ``thinkingLevel`` a string.
    Unknown keys are kept.
Rule 5: ``safetySettings`` (``category``, ``threshold``) and unknown top-level fields
    (``cachedContent``, ``labels``...) are kept as they came.
Rule 6: field names may come in the protobuf's own snake case (``system_instruction``,
    ``inline_data.mime_type``, ``function_declarations``...), as proto3's JSON mapping allows
    and many of the reference's REST examples write them: `parse` reads them as their camel
    case names (free-form values, ``args``, ``response`` and schemas, are left as they are).

A bad value at construction is a `ValueError` naming the field by its path
(``$.contents[1].parts[0].inlineData.mimeType``); a body that breaks the rules is a
`RequestError` with the same path. Inline data from paths is read from disk while the body is
sent (`svir_proto.body`). This module reads files only to measure them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final, final

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
from .endpoint import target
from .parts import (
    PART_TYPES,
    ROLES,
    GeminiContent,
    GeminiFileData,
    GeminiFunctionCall,
    GeminiFunctionResponse,
    GeminiInlineData,
    GeminiOtherPart,
    GeminiPart,
    GeminiText,
)

__all__ = [
    "GeminiFunctionDeclaration",
    "GeminiGenerationConfig",
    "GeminiRequest",
    "GeminiThinkingConfig",
    "GeminiTool",
    "GeminiToolConfig",
]

FUNCTION_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,127}")
MODES: Final = ("AUTO", "ANY", "NONE", "VALIDATED", "MODE_UNSPECIFIED")
MAX_STOP_SEQUENCES: Final = 5
_B64: Final = re.compile("[A-Za-z0-9+/_-]*")


def is_base64(text: str) -> bool:
    """Base64 as proto3's JSON mapping reads ``bytes``: standard or URL-safe, padded or not:
    its letters, then as much padding as its last group lacks, or none. (A pattern of groups
    of four kept a frame for each: 990 MB for a 30 MB image, attack 37.)"""
    body = text.rstrip("=")
    pad = len(text) - len(body)
    if _B64.fullmatch(body) is None:
        return False
    rest = len(body) % 4
    return (pad == 0 and rest != 1) or (pad == 4 - rest and rest in (2, 3))


_DATA_KEYS: Final = ("text", "inlineData", "fileData", "functionCall", "functionResponse")
_OTHER_DATA: Final = (
    "executableCode",
    "codeExecutionResult",
    "toolCall",
    "toolResponse",
)


def _mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return {} if value is None else value


def _tuple(value: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(value)


def _names(value: Iterable[str] | None) -> tuple[str, ...] | None:
    return None if value is None else tuple(value)


@final
@attrs.frozen(kw_only=True)
class GeminiFunctionDeclaration:
    """A function the model may call: ``parameters`` is Gemini's OpenAPI-style ``Schema``,
    ``parameters_json_schema`` a JSON Schema (give at most one)."""

    name: str
    description: str | None = None
    parameters: Mapping[str, Any] | None = None
    parameters_json_schema: object = None
    extra: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)


@final
@attrs.frozen(kw_only=True)
class GeminiTool:
    """One ``Tool``: function declarations, and any other tool keys (``googleSearch``...)."""

    function_declarations: tuple[GeminiFunctionDeclaration, ...] = attrs.field(
        default=(), converter=_tuple
    )
    extra: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)


@final
@attrs.frozen(kw_only=True)
class GeminiToolConfig:
    """``toolConfig``: ``functionCallingConfig``'s ``mode`` and ``allowedFunctionNames``;
    ``calling_extra`` its other keys, ``extra`` the config's other keys."""

    mode: str | None = None
    allowed_function_names: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    calling_extra: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)
    extra: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)


@final
@attrs.frozen(kw_only=True)
class GeminiThinkingConfig:
    """``thinkingConfig``: a token budget (Gemini 2.5), a level (Gemini 3), and whether the
    answer includes thought summaries."""

    thinking_budget: int | None = None
    include_thoughts: bool | None = None
    thinking_level: str | None = None
    extra: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)


@final
@attrs.frozen(kw_only=True)
class GeminiGenerationConfig:
    """``generationConfig``; ``extra`` keeps the keys not named here."""

    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    stop_sequences: tuple[str, ...] | None = attrs.field(default=None, converter=_names)
    candidate_count: int | None = None
    response_mime_type: str | None = None
    response_schema: Mapping[str, Any] | None = None
    thinking_config: GeminiThinkingConfig | None = None
    extra: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)


def _contents(value: Iterable[GeminiContent]) -> tuple[GeminiContent, ...]:
    return tuple(value)


@final
@attrs.frozen(kw_only=True)
class GeminiRequest:
    """A ``generateContent`` request for ``model`` (``gemini-2.5-flash``, or a resource name
    such as ``tunedModels/x``), streamed unless ``stream`` is false, to the API's ``version``
    (``v1beta``; ``v1``, ``v1alpha``: the path's first segment, as the model and the method
    are path facts, not the body's).

    The module docstring gives the rules checked at construction (a `ValueError` naming the
    field's path) and by `parse`.
    """

    model: str
    contents: tuple[GeminiContent, ...] = attrs.field(converter=_contents)
    system_instruction: GeminiContent | None = None
    tools: tuple[GeminiTool, ...] = attrs.field(default=(), converter=_tuple)
    tool_config: GeminiToolConfig | None = None
    generation_config: GeminiGenerationConfig | None = None
    safety_settings: tuple[Mapping[str, Any], ...] = attrs.field(default=(), converter=_tuple)
    stream: bool = True
    extra: Mapping[str, Any] = attrs.field(factory=dict, converter=_mapping)
    version: str = "v1beta"

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model.strip("/"):
            raise ValueError("model must be a non-empty string (gemini-2.5-flash, models/...)")
        target(self.model, version=self.version)  # raises for a path that would mean another
        if not isinstance(self.stream, bool):
            raise TypeError(f"stream must be a bool, not {self.stream!r}")
        _typed(self)
        try:
            _check(self.document(), "$")
        except RequestError as exc:  # the caller's values: a ValueError naming the field
            raise ValueError(exc.message) from exc

    @property
    def tool_names(self) -> frozenset[str]:
        """The declared functions, to pass to `GeminiStreamDecoder(declared_tools=...)`."""
        return frozenset(d.name for t in self.tools for d in t.function_declarations)

    def target(self, *, version: str | None = None) -> str:
        """The request target: ``/v1beta/models/MODEL:streamGenerateContent?alt=sse`` (or
        ``:generateContent`` when not streaming), of its `version` unless ``version``."""
        return target(self.model, stream=self.stream, version=version or self.version)

    def document(self, marks: Placeholders | None = None) -> dict[str, Any]:
        """The request as a JSON object. Inline data given as bytes or paths become
        placeholders in ``marks``; without ``marks`` (checking the shape only), empty data."""
        doc: dict[str, Any] = {"contents": [content_out(c, marks) for c in self.contents]}
        if self.system_instruction is not None:
            doc["systemInstruction"] = content_out(self.system_instruction, marks)
        if self.tools:
            doc["tools"] = [tool_out(t) for t in self.tools]
        if self.tool_config is not None:
            doc["toolConfig"] = tool_config_out(self.tool_config)
        if self.safety_settings:
            doc["safetySettings"] = [dict(s) for s in self.safety_settings]
        if self.generation_config is not None:
            doc["generationConfig"] = generation_out(self.generation_config)
        for key, value in self.extra.items():
            doc.setdefault(key, value)
        return doc

    def body(self, *, piece_size: int = DEFAULT_PIECE_SIZE) -> RequestBody:
        """The request as a `RequestBody` (``application/json``): exact ``content_length``,
        inline data from paths read from disk while sending."""
        return encode_document(self.document, piece_size=piece_size)

    @classmethod
    def parse(
        cls,
        body: bytes | bytearray | str,
        *,
        model: str,
        stream: bool = True,
        version: str = "v1beta",
    ) -> GeminiRequest:
        """Read a request body (the server side; the model and the method come from the path,
        `parse_target`).

        Raises:
            RequestError: the body is not JSON or breaks the rules; ``path`` says where.
        """
        try:
            doc: Any = canonical(
                body, max_values=MAX_REQUEST_VALUES
            )  # the one JSON policy (svir_proto._json)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise RequestError("$", f"not JSON: {exc}") from exc
        doc = _camel_request(doc)  # Rule 6
        _check(doc, "$")
        config = doc.get("generationConfig")
        calling = doc.get("toolConfig")
        system = doc.get("systemInstruction")
        known = {
            "contents",
            "systemInstruction",
            "tools",
            "toolConfig",
            "safetySettings",
            "generationConfig",
        }
        return cls(
            model=model,
            contents=[content_in(c) for c in doc["contents"]],
            system_instruction=None if system is None else content_in(system),
            tools=[tool_in(t) for t in doc.get("tools") or ()],
            tool_config=None if calling is None else tool_config_in(calling),
            generation_config=None if config is None else generation_in(config),
            safety_settings=doc.get("safetySettings") or (),
            stream=stream,
            extra={k: v for k, v in doc.items() if k not in known},
            version=version,
        )


# -- the types of the values (before the shape is checked on the document) --------------------


def _typed(request: GeminiRequest) -> None:
    where = "$.contents"
    for i, c in enumerate(request.contents):
        _typed_content(c, f"{where}[{i}]")
    if request.system_instruction is not None:
        _typed_content(request.system_instruction, "$.systemInstruction")
    for i, t in enumerate(request.tools):
        if not isinstance(t, GeminiTool):
            raise TypeError(f"$.tools[{i}] must be a GeminiTool, not {t!r}")
        for j, d in enumerate(t.function_declarations):
            if not isinstance(d, GeminiFunctionDeclaration):
                raise TypeError(f"$.tools[{i}].functionDeclarations[{j}] must be a declaration")
    for name, value, kind in (
        ("toolConfig", request.tool_config, GeminiToolConfig),
        ("generationConfig", request.generation_config, GeminiGenerationConfig),
    ):
        if value is not None and not isinstance(value, kind):
            raise TypeError(f"$.{name} must be a {kind.__name__}, not {value!r}")
    config = request.generation_config
    thinking = None if config is None else config.thinking_config
    if thinking is not None and not isinstance(thinking, GeminiThinkingConfig):
        raise TypeError("$.generationConfig.thinkingConfig must be a GeminiThinkingConfig")
    for i, s in enumerate(request.safety_settings):
        if not isinstance(s, Mapping):
            raise TypeError(f"$.safetySettings[{i}] must be a mapping, not {s!r}")


def _typed_content(content: object, where: str) -> None:
    if not isinstance(content, GeminiContent):
        raise TypeError(f"{where} must be a GeminiContent, not {content!r}")
    for j, p in enumerate(content.parts):
        if not isinstance(p, PART_TYPES):
            raise TypeError(f"{where}.parts[{j}] must be a Gemini part, not {p!r}")


# -- to the document ----------------------------------------------------------------------------


def _new(extra: Mapping[str, Any], *taken: str) -> dict[str, Any]:
    """What ``extra`` adds to an object that has ``taken`` already (the named fields win)."""
    return {k: v for k, v in extra.items() if k not in taken}


def _part_out(p: GeminiPart, marks: Placeholders | None) -> dict[str, Any]:
    if isinstance(p, GeminiOtherPart):
        return dict(p.value)
    out: dict[str, Any] = {}
    if isinstance(p, GeminiText):
        out["text"] = p.text
        if p.thought:
            out["thought"] = True
    elif isinstance(p, GeminiInlineData):
        data = p.data
        if data is None:
            if marks is None:
                data = ""
            elif p.path is not None:
                data = marks.add(Base64File(p.path, p.size))
            else:
                data = marks.add(Base64Bytes(p.raw or b""))
        out["inlineData"] = {
            "mimeType": p.mime_type,
            "data": data,
            **_new(p.inner_extra, "mimeType", "data"),
        }
    elif isinstance(p, GeminiFileData):
        file: dict[str, Any] = {"fileUri": p.file_uri}
        if p.mime_type is not None:
            file["mimeType"] = p.mime_type
        out["fileData"] = {**file, **_new(p.inner_extra, "fileUri", "mimeType")}
    elif isinstance(p, GeminiFunctionCall):
        call: dict[str, Any] = {"name": p.name, "args": dict(p.args)}
        if p.id is not None:
            call["id"] = p.id
        out["functionCall"] = {**call, **_new(p.inner_extra, *call)}
    else:
        response: dict[str, Any] = {"name": p.name, "response": dict(p.response)}
        if p.id is not None:
            response["id"] = p.id
        out["functionResponse"] = {**response, **_new(p.inner_extra, *response)}
    if p.thought_signature is not None:
        out["thoughtSignature"] = p.thought_signature
    for key, value in p.extra.items():
        out.setdefault(key, value)
    return out


def content_out(c: GeminiContent, marks: Placeholders | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if c.role is not None:
        out["role"] = c.role
    out["parts"] = [_part_out(p, marks) for p in c.parts]
    return out


def tool_out(t: GeminiTool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if t.function_declarations:
        declarations = []
        for d in t.function_declarations:
            decl: dict[str, Any] = {"name": d.name}
            if d.description is not None:
                decl["description"] = d.description
            if d.parameters is not None:
                decl["parameters"] = dict(d.parameters)
            if d.parameters_json_schema is not None:
                decl["parametersJsonSchema"] = d.parameters_json_schema
            for key, value in d.extra.items():
                decl.setdefault(key, value)
            declarations.append(decl)
        out["functionDeclarations"] = declarations
    for key, value in t.extra.items():
        out.setdefault(key, value)
    return out


def tool_config_out(c: GeminiToolConfig) -> dict[str, Any]:
    calling: dict[str, Any] = {}
    if c.mode is not None:
        calling["mode"] = c.mode
    if c.allowed_function_names:
        calling["allowedFunctionNames"] = list(c.allowed_function_names)
    for key, value in c.calling_extra.items():
        calling.setdefault(key, value)
    out: dict[str, Any] = {}
    if calling:
        out["functionCallingConfig"] = calling
    for key, value in c.extra.items():
        out.setdefault(key, value)
    return out


_GENERATION: Final = (
    ("maxOutputTokens", "max_output_tokens"),
    ("temperature", "temperature"),
    ("topP", "top_p"),
    ("topK", "top_k"),
    ("candidateCount", "candidate_count"),
    ("responseMimeType", "response_mime_type"),
)
_THINKING: Final = (
    ("thinkingBudget", "thinking_budget"),
    ("includeThoughts", "include_thoughts"),
    ("thinkingLevel", "thinking_level"),
)


def generation_out(g: GeminiGenerationConfig) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for wire, name in _GENERATION:
        value = getattr(g, name)
        if value is not None:
            out[wire] = value
    if g.stop_sequences is not None:
        out["stopSequences"] = list(g.stop_sequences)
    if g.response_schema is not None:
        out["responseSchema"] = dict(g.response_schema)
    if g.thinking_config is not None:
        thinking: dict[str, Any] = {}
        for wire, name in _THINKING:
            value = getattr(g.thinking_config, name)
            if value is not None:
                thinking[wire] = value
        for key, value in g.thinking_config.extra.items():
            thinking.setdefault(key, value)
        out["thinkingConfig"] = thinking
    for key, value in g.extra.items():
        out.setdefault(key, value)
    return out


# -- from the (checked) document ----------------------------------------------------------------


def _rest(obj: dict[str, Any], known: Iterable[str]) -> dict[str, Any]:
    names = set(known)
    return {k: v for k, v in obj.items() if k not in names}


def _part_in(p: dict[str, Any]) -> GeminiPart:
    signature = p.get("thoughtSignature")
    if "text" in p:
        return GeminiText(
            text=p["text"],
            thought=p.get("thought") is True,
            thought_signature=signature,
            extra=_rest(p, ("text", "thought", "thoughtSignature")),
        )
    extra = _rest(p, (*_DATA_KEYS, "thoughtSignature"))
    if "inlineData" in p:
        blob = p["inlineData"]
        return GeminiInlineData(
            mime_type=blob["mimeType"],
            data=blob["data"],
            thought_signature=signature,
            extra=extra,
            inner_extra=_rest(blob, ("mimeType", "data")),
        )
    if "fileData" in p:
        file = p["fileData"]
        return GeminiFileData(
            file_uri=file["fileUri"],
            mime_type=file.get("mimeType"),
            thought_signature=signature,
            extra=extra,
            inner_extra=_rest(file, ("fileUri", "mimeType")),
        )
    if "functionCall" in p:
        call = p["functionCall"]
        return GeminiFunctionCall(
            name=call["name"],
            args=call.get("args") or {},
            id=call.get("id"),
            thought_signature=signature,
            extra=extra,
            inner_extra=_rest(call, ("name", "args", "id")),
        )
    if "functionResponse" in p:
        response = p["functionResponse"]
        return GeminiFunctionResponse(
            name=response["name"],
            response=response["response"],
            id=response.get("id"),
            thought_signature=signature,
            extra=extra,
            inner_extra=_rest(response, ("name", "response", "id")),
        )
    return GeminiOtherPart(value=p)


def content_in(c: dict[str, Any]) -> GeminiContent:
    return GeminiContent(role=c.get("role"), parts=[_part_in(p) for p in c["parts"]])


def tool_in(t: dict[str, Any]) -> GeminiTool:
    declarations = [
        GeminiFunctionDeclaration(
            name=d["name"],
            description=d.get("description"),
            parameters=d.get("parameters"),
            parameters_json_schema=d.get("parametersJsonSchema"),
            extra=_rest(d, ("name", "description", "parameters", "parametersJsonSchema")),
        )
        for d in t.get("functionDeclarations") or ()
    ]
    return GeminiTool(function_declarations=declarations, extra=_rest(t, ("functionDeclarations",)))


def tool_config_in(c: dict[str, Any]) -> GeminiToolConfig:
    calling = c.get("functionCallingConfig") or {}
    return GeminiToolConfig(
        mode=calling.get("mode"),
        allowed_function_names=calling.get("allowedFunctionNames") or (),
        calling_extra=_rest(calling, ("mode", "allowedFunctionNames")),
        extra=_rest(c, ("functionCallingConfig",)),
    )


def generation_in(g: dict[str, Any]) -> GeminiGenerationConfig:
    thinking = g.get("thinkingConfig")
    return GeminiGenerationConfig(
        **{name: g.get(wire) for wire, name in _GENERATION},
        stop_sequences=g.get("stopSequences"),
        response_schema=g.get("responseSchema"),
        thinking_config=None
        if thinking is None
        else GeminiThinkingConfig(
            **{name: thinking.get(wire) for wire, name in _THINKING},
            extra=_rest(thinking, (w for w, _ in _THINKING)),
        ),
        extra=_rest(
            g, (*(w for w, _ in _GENERATION), "stopSequences", "responseSchema", "thinkingConfig")
        ),
    )


# -- Rule 6 -------------------------------------------------------------------------------------

_FREE: Final = frozenset(
    {
        "args",
        "response",
        "parameters",
        "parametersJsonSchema",
        "responseSchema",
        "responseJsonSchema",
        "partMetadata",
        "labels",
        "metadata",
    }
)
"""Fields whose values are the caller's own JSON: their keys are never renamed."""


def _camel_name(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest) if rest else name


_CAMEL_DEPTH: Final = 8
"""Levels of objects and lists Rule 6 looks into (a request's own fields are within 8); a
list counts as a level too (attack 69 F1: lists nested 500 deep ran out of stack)."""


def _camel(value: object, depth: int = 0) -> Any:
    """Snake-case keys as camel case, down through the request's own messages (Rule 6)."""
    if depth > _CAMEL_DEPTH:
        return value
    if isinstance(value, list):
        return [_camel(v, depth + 1) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, v in value.items():
        name = _camel_name(key) if "_" in key else key
        out.setdefault(name, v if name in _FREE else _camel(v, depth + 1))
    return out


def _camel_request(doc: object) -> Any:
    if not isinstance(doc, dict) or not any("_" in k for k in _keys(doc)):
        return doc  # the common case: already camel case throughout
    return _camel(doc)


def _keys(value: object, depth: int = 0) -> Iterable[str]:
    if depth > _CAMEL_DEPTH:
        return
    if isinstance(value, list):
        for v in value:
            yield from _keys(v, depth + 1)
    elif isinstance(value, dict):
        for k, v in value.items():  # JSON's keys are strings
            yield k
            if k not in _FREE:
                yield from _keys(v, depth + 1)


# -- checking (Rules 1 to 5) ----------------------------------------------------------------------


def _need(cond: bool, path: str, problem: str) -> None:
    if not cond:
        raise RequestError(path, problem)


def _number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _integral(v: object) -> bool:
    """An integer, as proto3's JSON mapping reads one: ``4`` or ``4.0`` (the SDK sends
    ``topK`` as a float)."""
    return type(v) is int or (type(v) is float and v.is_integer())


def _positive(v: object) -> bool:
    return _integral(v) and v > 0  # type: ignore[operator]


def _object(v: object) -> bool:
    return isinstance(v, dict)


def _string(obj: dict[str, Any], key: str, path: str, *, required: bool = False) -> None:
    v = obj.get(key)
    if v is None:
        _need(not required, f"{path}.{key}", "a string is required")
    else:
        _need(isinstance(v, str), f"{path}.{key}", f"must be a string, not {v!r}")


def _check_part(p: object, at: str) -> None:
    _need(_object(p), at, "a part must be an object")
    assert isinstance(p, dict)
    held = [k for k in (*_DATA_KEYS, *_OTHER_DATA) if k in p]
    _need(len(held) <= 1, at, f"a part holds exactly one kind of data, not {held}")
    thought = p.get("thought")
    _need(thought is None or isinstance(thought, bool), f"{at}.thought", "must be a boolean")
    _string(p, "thoughtSignature", at)
    if "text" in p:
        _string(p, "text", at, required=True)
    elif "inlineData" in p:
        blob = p["inlineData"]
        where = f"{at}.inlineData"
        _need(_object(blob), where, "must be an object")
        _string(blob, "mimeType", where, required=True)
        _need(
            "/" in blob["mimeType"], f"{where}.mimeType", f"{blob['mimeType']!r} is not a MIME type"
        )
        _string(blob, "data", where, required=True)
        _need(is_base64(blob["data"]), f"{where}.data", "must be base64")
    elif "fileData" in p:
        file = p["fileData"]
        where = f"{at}.fileData"
        _need(_object(file), where, "must be an object")
        _string(file, "fileUri", where, required=True)
        _string(file, "mimeType", where)
    elif "functionCall" in p:
        call = p["functionCall"]
        where = f"{at}.functionCall"
        _need(_object(call), where, "must be an object")
        _string(call, "name", where, required=True)
        _need(bool(call["name"]), f"{where}.name", "must not be empty")
        args = call.get("args")
        _need(args is None or _object(args), f"{where}.args", "must be an object")
        _string(call, "id", where)
    elif "functionResponse" in p:
        response = p["functionResponse"]
        where = f"{at}.functionResponse"
        _need(_object(response), where, "must be an object")
        _string(response, "name", where, required=True)
        _need(bool(response["name"]), f"{where}.name", "must not be empty")
        _need(_object(response.get("response")), f"{where}.response", "an object is required")
        _string(response, "id", where)


def _check_content(c: object, at: str, *, system: bool = False) -> None:
    _need(_object(c), at, "a content must be an object")
    assert isinstance(c, dict)
    role = c.get("role")
    if not system or role is not None:
        _need(role is None or role in ROLES, f"{at}.role", f"must be user or model, not {role!r}")
    parts = c.get("parts")
    _need(isinstance(parts, list) and bool(parts), f"{at}.parts", "a non-empty array is required")
    for j, p in enumerate(parts):  # type: ignore[arg-type]
        _check_part(p, f"{at}.parts[{j}]")


def _check(doc: object, at: str) -> None:
    _need(_object(doc), at, "a request must be a JSON object")
    assert isinstance(doc, dict)
    contents = doc.get("contents")
    _need(
        isinstance(contents, list) and bool(contents),
        f"{at}.contents",
        "a non-empty array is required",
    )
    for i, c in enumerate(contents):  # type: ignore[arg-type]
        _check_content(c, f"{at}.contents[{i}]")
    system = doc.get("systemInstruction")
    if system is not None:
        _check_content(system, f"{at}.systemInstruction", system=True)
    names = _check_tools(doc.get("tools"), f"{at}.tools")
    _check_tool_config(doc.get("toolConfig"), f"{at}.toolConfig", names)
    settings = doc.get("safetySettings")
    if settings is not None:
        where = f"{at}.safetySettings"
        _need(isinstance(settings, list), where, "must be an array")
        for i, s in enumerate(settings):
            _need(_object(s), f"{where}[{i}]", "a safety setting must be an object")
            _string(s, "category", f"{where}[{i}]")
            _string(s, "threshold", f"{where}[{i}]")
    _check_generation(doc.get("generationConfig"), f"{at}.generationConfig")


def _check_tools(tools: object, at: str) -> set[str]:
    names: set[str] = set()
    if tools is None:
        return names
    _need(isinstance(tools, list), at, "must be an array")
    assert isinstance(tools, list)
    for i, t in enumerate(tools):
        where = f"{at}[{i}]"
        _need(_object(t), where, "a tool must be an object")
        declarations = t.get("functionDeclarations")
        if declarations is None:
            continue
        _need(isinstance(declarations, list), f"{where}.functionDeclarations", "must be an array")
        for j, d in enumerate(declarations):
            p = f"{where}.functionDeclarations[{j}]"
            _need(_object(d), p, "a function declaration must be an object")
            name = d.get("name")
            _need(
                isinstance(name, str) and bool(FUNCTION_NAME.fullmatch(name)),
                f"{p}.name",
                f"{name!r}: a letter or _, then up to 127 of letters, digits, _ . : -",
            )
            _need(name not in names, f"{p}.name", f"{name!r} is declared twice")
            names.add(name)
            _string(d, "description", p)
            params = d.get("parameters")
            _need(params is None or _object(params), f"{p}.parameters", "must be a Schema object")
            _need(
                params is None or d.get("parametersJsonSchema") is None,
                f"{p}.parametersJsonSchema",
                "give parameters or parametersJsonSchema, not both",
            )
    return names


def _check_tool_config(config: object, at: str, names: set[str]) -> None:
    if config is None:
        return
    _need(_object(config), at, "must be an object")
    assert isinstance(config, dict)
    calling = config.get("functionCallingConfig")
    if calling is None:
        return
    where = f"{at}.functionCallingConfig"
    _need(_object(calling), where, "must be an object")
    mode = calling.get("mode")
    _need(mode is None or mode in MODES, f"{where}.mode", f"must be one of {MODES}, not {mode!r}")
    allowed = calling.get("allowedFunctionNames")
    if allowed is None:
        return
    p = f"{where}.allowedFunctionNames"
    _need(isinstance(allowed, list), p, "must be an array of names")
    _need(mode in ("ANY", "VALIDATED"), p, "is allowed only with mode ANY or VALIDATED")
    for i, name in enumerate(allowed):  # (a list is not hashable: no TypeError from the set)
        _need(
            isinstance(name, str) and name in names,
            f"{p}[{i}]",
            f"{name!r} is not a declared function",
        )


def _check_generation(config: object, at: str) -> None:
    if config is None:
        return
    _need(_object(config), at, "must be an object")
    assert isinstance(config, dict)
    for key in ("maxOutputTokens", "topK", "candidateCount"):
        v = config.get(key)
        _need(v is None or _positive(v), f"{at}.{key}", f"a positive integer, not {v!r}")
    count = config.get("candidateCount")
    _need(
        count is None or count == 1,
        f"{at}.candidateCount",
        f"must be 1: the stream decoder reads candidate 0 only, not {count!r}",
    )
    t = config.get("temperature")
    _need(t is None or (_number(t) and 0 <= t <= 2), f"{at}.temperature", f"in 0..2, not {t!r}")
    p = config.get("topP")
    _need(p is None or (_number(p) and 0 <= p <= 1), f"{at}.topP", f"in 0..1, not {p!r}")
    stops = config.get("stopSequences")
    _need(
        stops is None
        or (
            isinstance(stops, list)
            and len(stops) <= MAX_STOP_SEQUENCES
            and all(isinstance(s, str) for s in stops)
        ),
        f"{at}.stopSequences",
        f"up to {MAX_STOP_SEQUENCES} strings",
    )
    _string(config, "responseMimeType", at)
    schema = config.get("responseSchema")
    _need(schema is None or _object(schema), f"{at}.responseSchema", "must be a Schema object")
    thinking = config.get("thinkingConfig")
    if thinking is not None:
        where = f"{at}.thinkingConfig"
        _need(_object(thinking), where, "must be an object")
        budget = thinking.get("thinkingBudget")
        _need(
            budget is None or (_integral(budget) and budget >= -1),
            f"{where}.thinkingBudget",
            f"an integer from -1 (dynamic), not {budget!r}",
        )
        include = thinking.get("includeThoughts")
        _need(
            include is None or isinstance(include, bool),
            f"{where}.includeThoughts",
            "must be a boolean",
        )
        _string(thinking, "thinkingLevel", where)
