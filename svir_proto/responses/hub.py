"""A Responses request to the hub's neutral request and back (`svir_proto.hub`): the two
adapters that join this dialect to every other.

`to_hub` maps what has a neutral form: ``instructions`` (a first system message),
user, system and developer messages (developer as system), their text, images and files
(``data:`` URLs as base64, files from disk still streamed from disk), the assistant's turns
(the run of reasoning items, assistant messages and function calls between two user-side
items: one assistant message, its text joined, its calls as ``tool_calls``, its reasoning
items as signed blocks, ``encrypted_content`` the signature, carrier ``summary`` or
``reasoning_text``, their order the hub's ``order``, which `from_hub` writes them in),
function call outputs (tool messages), function tools, the sampling
parameters (``max_output_tokens`` as ``max_tokens``), ``tool_choice``,
``parallel_tool_calls`` and ``reasoning`` (``vendor:svir``), ``metadata``. Everything else
travels under ``vendor:responses``, on the request and on each message, so that
``from_hub(to_hub(r)) == r`` for every request:

- on the request: ``store``, ``include``, ``previous_response_id``, ``text``, ``stream``
  (when false), unknown fields, a ``tool_choice`` of another kind, and the tools as they
  came when they were not all plain function tools;
- on a message: what its item had besides its neutral form: the developer role, ids,
  statuses, phases, unknown keys, parts with no neutral form (images by ``file_id`` or
  ``http(s)`` URL, ``input_file`` by id or URL, refusals, other part types) and their place;
  on an assistant turn, its items as they came.

`from_hub` reads such records only while they agree with the neutral fields beside them (a
message whose text or calls were changed is rebuilt from the neutral fields), so a request
from another dialect is read from its neutral fields alone. What it cannot carry, it leaves
out and says in ``lost`` (pass a list): parameters with no Responses field (unknown ones;
stop sequences, which would change the answer, are refused), the ``is_error`` mark of a tool
result that is not text (a text one goes as `svir_proto.hub.error_result`), reasoning signed
by another vendor (Anthropic's ``thinking``, Gemini's ``thought``: OpenAI cannot verify it),
an effort it does not know (a ``budget_tokens`` goes as its effort:
`svir_proto.hub.effort_for`), audio parts, and metadata that is not short strings (the API
takes 16 pairs of strings). A function tool always says whether it is ``strict`` (the hub's
`svir_proto.hub.strict_tools`), since the API holds one that does not to its schema, but
for one of a Responses request that did not say. Other dialects' records
(``vendor:anthropic``...) are not read.

Not carried from this dialect to the others (they find it under ``vendor:responses`` only):
``previous_response_id`` (a gateway must resolve it itself: see `ResponsesRequest`),
``store``, ``include``, ``text`` formats, built-in tools and their items, images by id and
files by id or URL, images by URL in a tool's output or a system message, annotations, item ids
and phases. A user's ``input_image`` by ``http(s)`` URL is the hub's ``linked`` too
(`svir_proto.hub.LinkedImage`), which every vendor dialect sends on; from another dialect it
comes back as an ``input_image`` in its place. An earlier refusal in an assistant message sent
back is its text in the neutral message (no other dialect has a refusal to send back), said
by `unread`.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from ..events import ReasoningBlock, ReasoningCarrier
from ..hub import (
    SERVICE,
    AssistantPiece,
    HubToolChoice,
    LinkedImage,
    effort_for,
    error_text,
    hub_options,
    message_extensions,
    message_image_detail,
    message_is_error,
    message_linked,
    message_path,
    message_pieces,
    message_reasoning,
    own_fields,
    parallel_tool_calls,
    reasoning_options,
    response_format,
    service,
    service_of,
    strict_tools,
    tool_choice,
    unbudgeted,
    uncarried,
    unnamed,
    unsent_reasoning,
    web_url,
    with_linked,
)
from ..llmstream.request import (
    LLMMediaPart,
    LLMMessage,
    LLMRequest,
    LLMTextPart,
    LLMTool,
    LLMToolCall,
    RequestError,
)
from ..llmstream.request import Part as LLMPart
from ..openai.parts import ImagePart
from ._checks import (
    INPUT_PARTS,
    MAX_METADATA,
    MAX_METADATA_KEY,
    MAX_METADATA_VALUE,
    REASONING_EFFORTS,
    SUMMARIES,
    check_item,
    check_part,
    check_tool,
    data_url,
)
from ._wire import CARRIERS
from .request import (
    FunctionCall,
    FunctionCallOutput,
    FunctionChoice,
    FunctionTool,
    InputFile,
    InputImage,
    InputMessage,
    InputText,
    Item,
    OtherChoice,
    OtherItem,
    OtherTool,
    OutputRefusal,
    OutputText,
    Part,
    ReasoningConfig,
    ReasoningItem,
    ResponsesRequest,
    _item,
    _part,
    _tool,
)

__all__ = ["RESPONSES_EXTENSION", "from_hub", "to_hub"]

RESPONSES_EXTENSION: Final = "vendor:responses"
FIELDS: Final = {
    "parameters.max_tokens": "max_output_tokens",
    "parameters.temperature": "temperature",
    "parameters.top_p": "top_p",
    "response_format": "text.format",
}
"""Where a Responses request says what the hub's paths name (`DialectSpec.fields`)."""


# -- to the hub ----------------------------------------------------------------------------


def to_hub(request: ResponsesRequest, *, request_id: str | None = None) -> LLMRequest:
    """The request as the hub's neutral `LLMRequest` (see the module docstring).

    Args:
        request_id: set as ``metadata.request_id`` (LLM-Stream's echo), when given.

    Raises:
        ValueError: the request has no input and no instructions (the neutral request needs
            a message).
    """
    messages: list[LLMMessage] = []
    paths: list[str] = []  # (`svir_proto.hub.message_path`)
    if request.instructions is not None:
        messages.append(
            LLMMessage(
                role="system",
                content=request.instructions,
                extensions={RESPONSES_EXTENSION: {"instructions": True}},
            )
        )
        paths.append("instructions")
    items = request.input
    if isinstance(items, str):
        marker = {RESPONSES_EXTENSION: {"input": "string"}}  # not an array of one message
        messages.append(LLMMessage(role="user", content=items, extensions=marker))
        paths.append("input")
    else:
        run: list[Item] = []
        for k, item in enumerate(items):
            if isinstance(item, (ReasoningItem, FunctionCall, OtherItem)) or (
                isinstance(item, InputMessage) and item.role == "assistant"
            ):
                run.append(item)
                continue
            if run:
                messages.append(_assistant(run))
                paths.append(f"input[{k - len(run)}]")
                run = []
            messages.append(_user_side(item))
            paths.append(f"input[{k}]")
        if run:
            messages.append(_assistant(run))
            paths.append(f"input[{len(items) - len(run)}]")
    if not messages:
        raise ValueError("input: a request with no input and no instructions has no neutral form")
    params = {
        key: value
        for key, value in (
            ("max_tokens", request.max_output_tokens),
            ("temperature", request.temperature),
            ("top_p", request.top_p),
        )
        if value is not None
    }
    tools = [
        LLMTool(name=t.name, description=t.description or "", parameters=t.parameters or {})
        for t in request.tools
        if isinstance(t, FunctionTool)
    ]
    record: dict[str, Any] = {}
    if any(not _plain_tool(t) for t in request.tools):
        record["tools"] = [t._document() for t in request.tools]
    unsaid = [t.name for t in request.tools if isinstance(t, FunctionTool) and t.strict is None]
    if unsaid:  # the API's default, strict: no other dialect's tools have it
        record["strict_unsaid"] = unsaid
    choice: HubToolChoice | None = None
    offered = {t.name for t in tools}
    if isinstance(request.tool_choice, FunctionChoice):
        choice = ("name", request.tool_choice.name)
    elif isinstance(request.tool_choice, OtherChoice):
        record["tool_choice"] = dict(request.tool_choice.data)
        asked = _allowed(request.tool_choice.data, request.tools)
        if asked is not None:
            choice, kept = asked
            if len(kept) < len(tools):  # (attack 50b N2: no other dialect has the choice)
                offered = set(kept)
                tools = [t for t in tools if t.name in offered]
                record["tools"] = [t._document() for t in request.tools]
                record["allowed_only"] = True
    else:
        choice = request.tool_choice
    reasoning: dict[str, Any] = {}
    if request.reasoning is not None:
        r = request.reasoning
        reasoning = {k: getattr(r, k) for k in ("effort", "summary") if getattr(r, k) is not None}
        if r.extra:
            record["reasoning_extra"] = dict(r.extra)
        if not reasoning and not r.extra:
            record["reasoning"] = {}  # an empty object, sent as such
    for key in ("store", "previous_response_id", "text"):
        value = getattr(request, key)
        if value is not None:
            record[key] = dict(value) if isinstance(value, Mapping) else value
    record.setdefault("store", None)  # (said, so that the record says the request is this
    # dialect's: another's is not stored unless it asks, `from_hub`; fidelity 51 N3)
    if request.include:
        record["include"] = list(request.include)
    if not request.stream:
        record["stream"] = False
    if request.extra:
        record["extra"] = dict(request.extra)
    metadata = dict(request.metadata)
    if request_id is not None and "request_id" not in metadata:
        metadata["request_id"] = request_id
        record["request_id_added"] = True
    extensions = hub_options(
        tool_choice=choice,
        parallel_tool_calls=request.parallel_tool_calls,
        stateful=("responses", _stateful(request)),
        response_format=_json_format(request.text),
        reasoning=reasoning or None,
        service=service_of(
            {
                **request.extra,
                "store": request.store,
                "verbosity": (request.text or {}).get("verbosity"),
            }
        ),
        strict_tools=[  # (of the tools offered: review 50 r7)
            t.name
            for t in request.tools
            if isinstance(t, FunctionTool) and t.strict and t.name in offered
        ],
        paths=paths,
    )
    extensions[RESPONSES_EXTENSION] = record  # (never empty: it says the store)
    return LLMRequest(
        model=request.model,
        messages=messages,
        tools=tools,
        parameters=params,
        metadata=metadata,
        extensions=extensions,
    )


def _json_format(text: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """``text.format`` when it asks for JSON: the hub's neutral ``response_format``."""
    fmt = text.get("format") if text is not None else None
    if isinstance(fmt, Mapping) and fmt.get("type") in ("json_object", "json_schema"):
        return fmt
    return None


def _text_out(fmt: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The hub's neutral ``response_format`` as ``text``, from another dialect's request."""
    return None if fmt is None else {"format": dict(fmt)}


def _allowed(
    data: Mapping[str, Any], tools: Sequence[FunctionTool | OtherTool]
) -> tuple[HubToolChoice, list[str]] | None:
    """What an ``allowed_tools`` choice of declared functions asks of a server of another
    dialect, which has no such choice: the neutral choice, and the tools it is offered
    (``required`` of one function is that function, all tools offered; else ``auto`` or
    ``required`` of the functions it allows, offered alone: the model can call no other, as
    the choice asks; attack 50b N2: no choice at all went). ``None``: another choice (kept
    whole, and said lost: `unread`)."""
    allowed = data.get("tools")
    mode = data.get("mode")
    if data.get("type") != "allowed_tools" or not isinstance(allowed, list):
        return None
    names = [  # (a name that is no string is another choice: review 51 r3, it raised)
        t.get("name")
        for t in allowed
        if isinstance(t, Mapping) and t.get("type") == "function" and isinstance(t.get("name"), str)
    ]
    declared = [t.name for t in tools if isinstance(t, FunctionTool)]
    wanted = set(names)  # (sets: review 50 r3, a list of each was quadratic)
    if not names or len(names) != len(allowed) or mode not in ("auto", "required"):
        return None
    if not wanted <= set(declared):
        return None
    if mode == "required" and len(wanted) == 1:
        return ("name", str(names[0])), declared
    return mode, [n for n in declared if n in wanted]


def _stateful(request: ResponsesRequest) -> list[str]:
    """Where the request refers to what the Responses API's server keeps: an earlier response,
    a conversation, a stored prompt, a file by its id, an item by reference; or holds an item
    only that API has (a built-in tool's call, or a type this package does not model), which
    no other dialect can carry: sent on, it would be an empty turn
    (`svir_proto.hub.stateful`)."""
    paths = ["$.previous_response_id"] if request.previous_response_id is not None else []
    paths += [  # a conversation the server keeps, a prompt it stores (fidelity 42 F8)
        f"$.{key}" for key in ("conversation", "prompt") if request.extra.get(key) is not None
    ]
    if isinstance(request.input, str):
        return paths
    for i, item in enumerate(request.input):
        if isinstance(item, OtherItem):
            paths.append(f"$.input[{i}]")
        elif isinstance(item, InputMessage) and not isinstance(item.content, str):
            paths += [
                f"$.input[{i}].content[{j}].file_id"
                for j, part in enumerate(item.content)
                if isinstance(part, (InputImage, InputFile)) and part.file_id is not None
            ]
    return paths


def _plain_tool(t: FunctionTool | OtherTool) -> bool:
    """A tool the neutral `LLMTool` gives back exactly."""
    return (
        isinstance(t, FunctionTool)
        and t.description is not None
        and t.parameters is not None
        and t.strict is None
        and not t.extra
    )


def _neutral_part(part: Part) -> tuple[LLMPart | None, dict[str, Any]]:
    """A part's neutral form, if it has one, and what it has besides (its sidecar)."""
    if isinstance(part, InputText):  # (output text is an assistant's: its turn is a record)
        return LLMTextPart(text=part.text), dict(part.extra)
    if isinstance(part, InputImage):  # (its detail is the hub's: `_content`)
        extra = dict(part.extra)
        if part.image is not None:
            image = part.image
            if image.path is not None:
                return LLMMediaPart(
                    type="image", media_type=image.media_type, path=image.path
                ), extra
            return LLMMediaPart(
                type="image", media_type=image.media_type, raw=image.data or b""
            ), extra
        data = _data_url(part.image_url)
        if data is not None:
            return LLMMediaPart(type="image", media_type=data[0], data=data[1]), extra
    if isinstance(part, InputFile):
        extra = {**part.extra, "filename": part.filename}  # None too: "document" is no name
        if part.path is not None:
            return LLMMediaPart(
                type="document", media_type=part.media_type or "", path=part.path
            ), extra
        data = _data_url(part.file_data)
        if data is not None:
            return LLMMediaPart(type="document", media_type=data[0], data=data[1]), extra
    return None, {}


def _data_url(url: str | None) -> tuple[str, str] | None:
    return data_url(url or "")


def _content(
    content: str | tuple[Part, ...], linkable: bool = False
) -> tuple[str | tuple[LLMPart, ...], Any, dict[int, str], list[LinkedImage]]:
    """Neutral content and its sidecar: ``None`` when the neutral form is exact; else, per
    original part, the neutral part's index (with what it had besides) or the part whole;
    the images' ``detail``, by their neutral index (`svir_proto.hub.message_extensions`);
    and, where ``linkable`` (a user's message), its images by URL (the hub's ``linked``),
    which the sidecar keeps whole too, marked so."""
    if isinstance(content, str):
        return content, None, {}, []
    parts: list[LLMPart] = []
    sidecar: list[Any] = []
    details: dict[int, str] = {}
    linked: list[LinkedImage] = []
    exact = True
    for p in content:
        neutral, extra = _neutral_part(p)
        if neutral is None:
            url = _link(p) if linkable else None
            if url is not None:
                detail = p.detail if isinstance(p, InputImage) else None
                linked.append(LinkedImage(at=len(parts), url=url, detail=detail))
                sidecar.append({"raw": p._document(None), "linked": True})
            else:
                sidecar.append({"raw": p._document(None)})
            exact = False
        else:
            entry: dict[str, Any] = {"at": len(parts)}
            if extra:
                entry["extra"] = extra
                exact = False
            if isinstance(p, InputImage) and p.detail is not None:
                details[len(parts)] = p.detail
            sidecar.append(entry)
            parts.append(neutral)
    return tuple(parts), None if exact else sidecar, details, linked


def _link(part: Part) -> str | None:
    """The URL of an ``input_image`` by a web URL with nothing besides, which the hub's
    ``linked`` carries; else ``None``."""
    if isinstance(part, InputImage) and part.image_url is not None and not part.extra:
        return part.image_url if web_url(part.image_url) else None
    return None


def _user_side(item: InputMessage | FunctionCallOutput) -> LLMMessage:
    record: dict[str, Any] = {}
    for key in ("id", "status"):
        value = getattr(item, key)
        if value is not None:
            record[key] = value
    if item.extra:
        record["extra"] = dict(item.extra)
    user = isinstance(item, InputMessage) and item.role == "user"
    original = item.output if isinstance(item, FunctionCallOutput) else item.content
    content, sidecar, details, linked = _content(original, linkable=user)
    if sidecar is not None or content == ():
        record["parts"] = sidecar or []  # an empty array stays one, not a string
    hub = message_extensions(image_detail=details, linked=linked)
    if isinstance(item, FunctionCallOutput):
        return LLMMessage(
            role="tool",
            content=content or "",
            tool_call_id=item.call_id,
            extensions={**hub, RESPONSES_EXTENSION: record} if record else hub,
        )
    if item.role == "developer":
        record["role"] = "developer"
    if item.phase is not None:
        record["phase"] = item.phase
    return LLMMessage(
        role="user" if item.role == "user" else "system",
        content=content or "",
        extensions={**hub, RESPONSES_EXTENSION: record} if record else hub,
    )


def _assistant(run: list[Item]) -> LLMMessage:
    """An assistant turn: the items between two user-side items, as one message, their
    order kept (`svir_proto.hub.message_pieces`)."""
    text, calls, blocks, has_message, pieces = _neutral_turn(run)
    record = {"items": [item._document(None) for item in run]}
    content: str | None = text if has_message or not calls else None
    hub = message_extensions(reasoning=blocks, pieces=pieces)
    return LLMMessage(
        role="assistant",
        content=content,
        tool_calls=calls,
        extensions={**hub, RESPONSES_EXTENSION: record},
    )


def _neutral_turn(
    run: list[Item],
) -> tuple[str, tuple[LLMToolCall, ...], tuple[ReasoningBlock, ...], bool, list[AssistantPiece]]:
    """An assistant turn's text, calls, reasoning, whether it has a message, and all of them
    in order."""
    text: list[str] = []
    calls: list[LLMToolCall] = []
    blocks: list[ReasoningBlock] = []
    pieces: list[AssistantPiece] = []
    has_message = False
    for item in run:
        if isinstance(item, InputMessage):
            has_message = True
            said = _said(item)
            text.append(said)
            pieces.append(said)
        elif isinstance(item, FunctionCall):
            calls.append(LLMToolCall(id=item.call_id, name=item.name, arguments=item.arguments))
            pieces.append(calls[-1])
        elif isinstance(item, ReasoningItem):
            carrier: ReasoningCarrier = (
                "reasoning_text" if item.content and not item.summary else "summary"
            )
            shown = item.summary if carrier == "summary" else item.content
            said = "\n\n".join(shown)
            blocks.append(
                uncarried(item.encrypted_content or "", said)  # another vendor's, carried
                or ReasoningBlock(
                    text=said,
                    signature=item.encrypted_content or "",
                    carrier=carrier,
                    item_id=item.id,
                )
            )
            pieces.append(blocks[-1])
    return "".join(text), tuple(calls), tuple(blocks), has_message, pieces


def _said(message: InputMessage) -> str:
    """What an assistant's message said: its text, and an earlier refusal's as text, which no
    other dialect has a field for (fidelity 51 N6: the turn went empty, which the APIs refuse,
    or, to Gemini, went away; `unread` says so)."""
    content, text = message.content, message.text
    if isinstance(content, str):
        return text
    refusal = "".join(p.refusal for p in content if isinstance(p, OutputRefusal))
    return f"{text}\n{refusal}" if text and refusal else text or refusal  # (apart: no glue)


def _refused(items: object) -> bool:
    """Whether an assistant turn's items as they came (its record) hold a refusal."""
    return isinstance(items, list) and any(
        isinstance(item, Mapping)
        and isinstance(content := item.get("content"), list)
        and any(isinstance(p, Mapping) and p.get("type") == "refusal" for p in content)
        for item in items
    )


# -- from the hub --------------------------------------------------------------------------


def unread(request: LLMRequest) -> list[str]:
    """What `to_hub` kept for the Responses API only, a sentence each: the request's unknown
    fields (but the hub's `svir_proto.hub.SERVICE`), ``include``, ``text`` options but its
    format and verbosity, the API's own tools (``web_search``...), and the parts of its
    messages with no neutral form (``input_audio``, an image by ``file_id``...), by type."""
    record = _record(request.extensions)
    keys: set[str] = set()
    extra = record.get("extra")
    if isinstance(extra, Mapping):
        keys |= set(extra) - set(SERVICE)
    if record.get("include"):
        keys.add("include")
    text = record.get("text")
    if isinstance(text, Mapping):
        keys |= {f"text.{k}" for k in set(text) - {"format", "verbosity"}}
    tools = record.get("tools")
    kinds = sorted(
        {str(t.get("type")) for t in tools if isinstance(t, Mapping)} - {"function"}
        if isinstance(tools, list)
        else set()
    )
    keys |= {f"tools ({', '.join(kinds)})"} if kinds else set()
    extra_reasoning = record.get("reasoning_extra")
    if isinstance(extra_reasoning, Mapping):
        keys |= {f"reasoning.{k}" for k in extra_reasoning}
    choice = record.get("tool_choice")  # one no neutral choice is exactly (fidelity 42 F1)
    if isinstance(choice, Mapping) and tool_choice(request) is None:
        keys.add(f"tool_choice ({choice.get('type')})")
    only = (
        ["tool_choice (allowed_tools): only the tools it allows are sent"]
        if record.get("allowed_only") is True and tool_choice(request) is not None
        else []
    )
    kept = [
        entry["raw"]
        for m in request.messages
        if isinstance(parts := _record(m.extensions).get("parts"), list)
        for entry in parts
        if isinstance(entry, Mapping)
        and isinstance(entry.get("raw"), Mapping)
        and entry.get("linked") is not True  # (the hub's ``linked`` carries it)
    ]  # parts with no neutral form (attack 39 F4: an input_audio went nowhere, unsaid)
    keys |= {f"input[].content ({t})" for t in {p.get("type") for p in kept} if isinstance(t, str)}
    refusals = [
        f"{message_path(request, i)}: an earlier refusal goes as the assistant's text"
        for i, m in enumerate(request.messages)
        if m.role == "assistant" and _refused(_record(m.extensions).get("items"))
    ]
    return own_fields("the Responses API", keys) + only + refusals


def carried(request: ResponsesRequest, back: ResponsesRequest | None = None) -> ResponsesRequest:
    """The request's options as far as a server of another dialect is asked them, for a
    response that repeats them: it does not claim what no server was asked (attack 46 G4: an
    8 MB ``tool_choice`` that went nowhere came back three times, in every lifecycle event).

    Without what `unread` names (the API's own tools, ``include``, ``text`` options but its
    format and verbosity, ``reasoning``'s unknown keys, a ``tool_choice`` no neutral one is,
    which leaves the server's ``auto``); and, given ``back``, the request that server was
    asked, read back as a Responses request (`svir_proto.dialects.as_sent`), without what
    did not come back (review 48 M3: ``store``, ``text.verbosity``, ``metadata``, a
    ``reasoning.effort`` or ``parallel_tool_calls`` its dialect has no field for, which the
    response still repeated while Svir-Lost said they were not sent). What did come back
    keeps the client's value (a value the server's dialect gave it is not the client's)."""
    choice = request.tool_choice
    if isinstance(choice, OtherChoice) and _allowed(choice.data, request.tools) is None:
        choice = None
    text = request.text
    if text is not None:
        text = {k: v for k, v in text.items() if k in ("format", "verbosity")} or None
    reasoning = request.reasoning
    if reasoning is not None and reasoning.extra:
        reasoning = attrs.evolve(reasoning, extra={})
    changes: dict[str, Any] = {
        "tools": [t for t in request.tools if isinstance(t, FunctionTool)],
        "tool_choice": choice,
        "text": text,
        "reasoning": reasoning,
        "include": (),
    }
    if back is not None:
        _came_back(changes, request, back)
    return attrs.evolve(request, **changes)  # (once: it checks the whole request again)


_SCALARS: Final = (
    "tool_choice",
    "max_output_tokens",
    "temperature",
    "top_p",
    "parallel_tool_calls",
    "store",
    "previous_response_id",
)


def _came_back(changes: dict[str, Any], request: ResponsesRequest, back: ResponsesRequest) -> None:
    """``changes`` (`carried`'s) without what ``back`` has not; a tool held ``strict`` as it
    came back, and the ``max_output_tokens`` a server that needs one was asked when the
    client said none (review 49 2b: the echo said strict where Svir-Lost said not sent, and
    no bound where the Messages API was asked 4096)."""
    changes.update((name, None) for name in _SCALARS if getattr(back, name) is None)
    if back.store != request.store:  # (the False `from_hub` says for a dialect that keeps
        changes["store"] = None  # nothing: not the client's word)
    if request.max_output_tokens is None:
        changes["max_output_tokens"] = back.max_output_tokens
    theirs = {t.name: t for t in back.tools if isinstance(t, FunctionTool)}
    changes["tools"] = [
        t if not t.strict or theirs[t.name].strict else attrs.evolve(t, strict=False)
        for t in changes["tools"]
        if t.name in theirs
    ]
    changes["metadata"] = {k: v for k, v in request.metadata.items() if k in back.metadata}
    text = changes["text"]
    if text is not None:  # (the plain text format, the default, is none where it went)
        came = back.text or {}
        changes["text"] = {
            k: v for k, v in text.items() if k in came or (k, v) == ("format", {"type": "text"})
        } or None
    reasoning, asked = changes["reasoning"], back.reasoning
    if reasoning is not None:
        effort = None if asked is None or asked.effort is None else reasoning.effort
        # a summary asked for as it came back: a style that went nowhere comes back as
        # "auto", the server's own, or not at all (attack 50b N5: the client's was repeated)
        summary = None if asked is None or reasoning.summary is None else asked.summary
        changes["reasoning"] = (
            None
            if effort is None and summary is None
            else attrs.evolve(reasoning, effort=effort, summary=summary)
        )


def _record(extensions: Mapping[str, Any]) -> Mapping[str, Any]:
    value = extensions.get(RESPONSES_EXTENSION)
    return value if isinstance(value, Mapping) else {}


def from_hub(request: LLMRequest, *, lost: list[str] | None = None) -> ResponsesRequest:
    """The hub's neutral request as a Responses request (see the module docstring).

    Args:
        lost: a list that receives one sentence per thing that is not carried.

    Raises:
        ValueError: a value the Responses API does not take (a ``tool_choice`` naming a tool
            that is not declared, a media part that is not an image where an image must be,
            stop sequences, which it has no field for and which change the answer).
    """
    notes: list[str] = [] if lost is None else lost
    top = _record(request.extensions)
    instructions: str | None = None
    items: list[Item] = []
    string: str | None = None  # the input was a string
    for i, m in enumerate(request.messages):
        record = _record(m.extensions)
        if i == 0 and m.role == "system" and record.get("instructions") is True:
            instructions = m.text
        elif m.role == "assistant":
            items.extend(_assistant_items(m, record, notes))
            notes += unsent_reasoning(message_path(request, i), message_reasoning(m), CARRIERS)
        else:
            if record.get("input") == "string" and m.role == "user" and isinstance(m.content, str):
                string = m.content
            items.append(_user_item(m, record, message_path(request, i), notes))
    inputs: str | list[Item] = string if string is not None and len(items) == 1 else items
    params = dict(request.parameters)
    for key in sorted(set(params) - {"max_tokens", "temperature", "top_p"}):
        if key == "stop_sequences" and params[key]:  # the text would go on past them
            raise ValueError(
                "parameters.stop_sequences: the Responses API has no stop sequences; send the "
                "request without them"
            )
        notes.append(f"parameters.{key} has no field in the Responses API: not sent")
    strict = strict_tools(request)
    unsaid = top.get("strict_unsaid")
    unsaid = unsaid if isinstance(unsaid, list) else []
    tools: list[FunctionTool | OtherTool] = [
        FunctionTool(
            name=t.name,
            description=t.description,
            parameters=dict(t.parameters),
            strict=_strict(t.name, strict, unsaid),
        )
        for t in request.tools
    ]
    raw_tools = top.get("tools")
    raw_choice = top.get("tool_choice")
    if isinstance(raw_tools, list):
        try:
            names: set[str] = set()
            for t in raw_tools:
                check_tool(t, "$", names)
            again = [_tool(t) for t in raw_tools]
        except RequestError:
            again = []
        asked = _allowed(raw_choice, again) if isinstance(raw_choice, dict) else None
        offered = None if asked is None else set(asked[1])  # (the tools the others got)
        neutral = [
            (t.name, t.description or "", dict(t.parameters or {}))
            for t in again
            if isinstance(t, FunctionTool) and (offered is None or t.name in offered)
        ]
        if neutral == [(t.name, t.description, dict(t.parameters)) for t in request.tools]:
            tools = again
    neutral_choice = tool_choice(request)
    choice: Any = neutral_choice
    if isinstance(choice, tuple):
        choice = FunctionChoice(choice[1])
    asked = _allowed(raw_choice, tools) if isinstance(raw_choice, dict) else None
    if (
        isinstance(raw_choice, dict)
        and isinstance(raw_choice.get("type"), str)
        and asked
        == (None if neutral_choice is None else (neutral_choice, [t.name for t in request.tools]))
    ):
        choice = OtherChoice(data=raw_choice)  # (what it says, as it came: no neutral one)
    options = reasoning_options(request)
    reasoning = None
    effort, summary = effort_for(options), options.get("summary")  # a budget as its effort
    if effort is not None and effort not in REASONING_EFFORTS:
        notes.append(f"reasoning effort {effort!r} is not one the Responses API takes: not sent")
        effort = None
    notes += unbudgeted(request, "the Responses API")
    notes += unnamed(request, "the Responses API")
    if summary is not None and summary not in SUMMARIES:
        notes.append(f"reasoning summary {summary!r} is not one the Responses API takes: not sent")
        summary = None
    extra = top.get("reasoning_extra")
    if effort is not None or summary is not None or isinstance(extra, dict) or "reasoning" in top:
        reasoning = ReasoningConfig(
            effort=effort, summary=summary, extra=extra if isinstance(extra, dict) else {}
        )
    metadata: dict[str, str] = {}
    for key, value in request.metadata.items():
        if key == "request_id" and top.get("request_id_added") is True:
            continue
        if (
            isinstance(value, str)
            and len(key) <= MAX_METADATA_KEY
            and len(value) <= MAX_METADATA_VALUE
            and len(metadata) < MAX_METADATA
        ):
            metadata[key] = value
        else:
            notes.append(f"metadata[{key!r}] is not a short string pair: not sent")
    store, previous, text = top.get("store"), top.get("previous_response_id"), top.get("text")
    include = top.get("include")
    extra_fields = top.get("extra")
    served = service(request)
    if not top:  # another dialect's request (a Responses request records its store, if
        # only as null): how it is to be served, from the hub
        store = served.pop("store", None)
        if store is None:  # its own API keeps nothing unless asked, the Responses API all
            store = False  # unless told (fidelity 51 N3: a Messages client's conversation was
            if reasoning is not None:  # kept); and its reasoning comes back signed, to be
                include = ["reasoning.encrypted_content"]  # sent back, as no item is kept
        verbosity = served.pop("verbosity", None)
        text = _text_out(response_format(request))
        if verbosity is not None:
            text = (text or {}) | {"verbosity": verbosity}
        extra_fields = served
    return ResponsesRequest(
        model=request.model,
        input=inputs,
        instructions=instructions,
        tools=tools,
        tool_choice=choice,
        max_output_tokens=params.get("max_tokens"),
        temperature=params.get("temperature"),
        top_p=params.get("top_p"),
        reasoning=reasoning,
        parallel_tool_calls=parallel_tool_calls(request),
        store=store if isinstance(store, bool) else None,
        include=[x for x in include if isinstance(x, str)] if isinstance(include, list) else (),
        previous_response_id=previous if isinstance(previous, str) else None,
        metadata=metadata,
        text=text if isinstance(text, dict) else _text_out(response_format(request)),
        stream=top.get("stream") is not False,
        extra=extra_fields if isinstance(extra_fields, dict) else {},
    )


def _strict(name: str, strict: frozenset[str], unsaid: list[Any]) -> bool | None:
    """A function tool's ``strict``: said for every tool (the API holds a tool that does not
    say to its schema, audit 36, and no other dialect's tools are), but for one of a Responses
    request that did not say (``strict_unsaid``)."""
    if name in strict:
        return True
    return None if name in unsaid else False


def _item_fields(record: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("id", "status"):
        if isinstance(record.get(key), str):
            out[key] = record[key]
    extra = record.get("extra")
    if isinstance(extra, dict):
        out["extra"] = extra
    return out


def _user_item(m: LLMMessage, record: Mapping[str, Any], where: str, notes: list[str]) -> Item:
    parts = _parts_back(m, record.get("parts"), where, notes)
    fields = _item_fields(record)
    if m.role == "tool":
        if message_is_error(m):
            failed = error_text(m)
            if failed is not None:
                parts = failed
            else:
                notes.append(
                    f"{where}: a tool result's is_error mark has no field in the "
                    "Responses API, and its result is not text"
                )
        return FunctionCallOutput(call_id=m.tool_call_id or "", output=parts, **fields)
    role = m.role
    if role == "system" and record.get("role") == "developer":
        role = "developer"
    phase = record.get("phase")
    return InputMessage(
        role=role, content=parts, phase=phase if isinstance(phase, str) else None, **fields
    )


def _parts_back(
    m: LLMMessage, sidecar: object, where: str, notes: list[str]
) -> str | tuple[Part, ...]:
    """A message's parts: through its sidecar while it agrees with the neutral content."""
    details = message_image_detail(m)
    content = m.content
    neutral = content if isinstance(content, tuple) else ()
    if isinstance(sidecar, list) and (neutral or content == ""):
        at = [e.get("at") for e in sidecar if isinstance(e, dict) and "raw" not in e]
        ints = [a for a in at if type(a) is int]
        if (
            len(ints) == len(at)
            and sorted(ints) == list(range(len(neutral)))  # every neutral part, once
            and all(_raw_part_ok(e) for e in sidecar)
        ):
            out: list[Part] = []
            for entry in sidecar:
                if "raw" in entry:
                    out.append(_part(entry["raw"]))
                else:
                    extra = entry.get("extra")
                    back = _part_back(
                        neutral[entry["at"]],
                        dict(extra) if isinstance(extra, dict) else {},  # popped from: a copy
                        f"{where}.content[{entry['at']}]",
                        notes,
                        details.get(entry["at"]),
                    )
                    if back is not None:
                        out.append(back)
            return tuple(out)
    linked = message_linked(m)
    if not linked and not neutral:
        return content if isinstance(content, str) else ""
    if isinstance(content, str):  # with images by URL: the text is a part among them
        neutral = (LLMTextPart(text=content),) if content else ()
    backs = [
        _part_back(p, {}, f"{where}.content[{j}]", notes, details.get(j))
        for j, p in enumerate(neutral)
    ]
    return tuple(
        p
        for p in with_linked(backs, linked, _url_image)
        if p is not None  # (a part with no form here: noted, its place kept for the images)
    )


def _url_image(linked: LinkedImage) -> InputImage:
    """An image by URL (the hub's ``linked``) as an ``input_image``."""
    return InputImage(image_url=linked.url, detail=linked.detail)


def _raw_part_ok(entry: object) -> bool:
    """A sidecar entry is an object, and a part whole is one the rules allow."""
    if not isinstance(entry, dict):
        return False
    if "raw" not in entry:
        return True
    try:
        check_part(entry["raw"], "$", INPUT_PARTS)
    except RequestError:
        return False
    return True


def _part_back(
    p: LLMPart, extra: dict[str, Any], where: str, notes: list[str], detail: Any = None
) -> Part | None:
    if isinstance(p, LLMTextPart):
        return InputText(text=p.text, extra=extra)
    if p.type == "image":
        if p.path is not None:
            return InputImage(
                image=ImagePart.from_path(p.path, p.media_type), detail=detail, extra=extra
            )
        if p.raw is not None:
            return InputImage(
                image=ImagePart.from_bytes(p.raw, p.media_type), detail=detail, extra=extra
            )
        return InputImage(
            image_url=f"data:{p.media_type};base64,{p.data}", detail=detail, extra=extra
        )
    if p.type == "document":
        named = os.path.basename(p.path) if p.path is not None else "document"
        filename = extra.pop("filename", named)
        if p.path is not None:
            return InputFile(path=p.path, media_type=p.media_type, filename=filename, extra=extra)
        data = p.data if p.data is not None else base64.b64encode(p.raw or b"").decode()
        return InputFile(
            file_data=f"data:{p.media_type};base64,{data}",
            filename=filename,
            extra=extra,
        )
    notes.append(f"{where}: a {p.type} part ({p.media_type}) has no form in the Responses API")
    return None


def _assistant_items(m: LLMMessage, record: Mapping[str, Any], notes: list[str]) -> list[Item]:
    """An assistant turn's items: as they came while they agree with the neutral fields."""
    raw = record.get("items")
    blocks = message_reasoning(m)
    if isinstance(raw, list):
        try:
            for it in raw:
                check_item(it, "$")
            again: list[Item] | None = [_item(it) for it in raw]
        except RequestError:
            again = None
        if again is not None:
            text, calls, again_blocks, _, _ = _neutral_turn(again)
            if (text, calls, again_blocks) == (m.text, m.tool_calls, blocks):
                return again
    items: list[Item] = []
    pieces = message_pieces(m)  # in order (attack 50b N1)
    if not any(isinstance(p, str) for p in pieces) and not m.tool_calls:
        pieces.append("")  # (an empty message: the turn said nothing)
    for p in pieces:
        if isinstance(p, str):
            items.append(InputMessage(role="assistant", content=[OutputText(text=p)]))
        elif isinstance(p, LLMToolCall):
            items.append(FunctionCall(call_id=p.id, name=p.name, arguments=p.arguments))
        elif p.carrier in CARRIERS:  # (another vendor's: said by `unsent_reasoning`)
            texts = tuple(t for t in p.text.split("\n\n") if t) if p.text else ()
            items.append(
                ReasoningItem(
                    id=p.item_id,
                    summary=texts if p.carrier == "summary" else (),
                    content=texts if p.carrier == "reasoning_text" else (),
                    encrypted_content=p.signature or None,
                )
            )
    return items
