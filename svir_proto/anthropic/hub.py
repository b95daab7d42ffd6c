"""Messages API requests to and from the hub's neutral request (`svir_proto.hub`), so that an
Anthropic client can be served by any upstream and any client by an Anthropic upstream.

`to_hub` maps what the neutral request has fields for: ``system`` to a system message; user
text, base64 images (images from disk stay paths, streamed while sending) and documents of
base64 data with nothing besides to parts, and images by ``http(s)`` URL to the hub's ``linked``
(`svir_proto.hub.LinkedImage`); each ``tool_result`` to a ``tool`` message (its error flag as
the ``is_error`` message extension) before the rest of its user turn; an assistant's text,
``tool_use`` blocks (``input`` as JSON ``arguments``) and ``thinking``/``redacted_thinking``
blocks (the ``reasoning`` message extension, carrier ``thinking``), in the order they came (the
hub's ``order``); ``tools``; ``max_tokens``, ``temperature``, ``top_p``, ``stop_sequences`` and
``top_k`` (`svir_proto.hub.SAMPLING`) as parameters; ``tool_choice`` (``any`` is ``required``)
and ``disable_parallel_tool_use`` (``parallel_tool_calls``), ``thinking.budget_tokens``, a JSON
Schema output format (``output_config.format``, or the beta's ``output_format``) and the tools
held ``strict`` under ``vendor:svir``. Everything else goes under ``vendor:anthropic``, read by
`from_hub` only: ``metadata``, ``stream``, unknown top-level fields, a ``thinking`` option that
is not ``enabled``, and, whenever the neutral form would not give a field back exactly, that
field as it was (``system`` with ``cache_control``, server tools, the messages when a block has
no neutral form: ``url`` or ``file`` images, documents, unknown blocks, ``cache_control``,
text blocks side by side, which the neutral form joins).

``metadata.user_id`` is the hub's end user (`svir_proto.hub.SERVICE`), both ways.

Not carried to other dialects by `to_hub` (they are kept for Anthropic under
``vendor:anthropic`` only): ``file`` images, ``url`` images in a tool result or not by
``http(s)``, and other blocks without a neutral form, ``cache_control``, server tools, a
disabled or adaptive ``thinking``. A message whose blocks have no neutral form and hold an
image from disk cannot be kept whole (its bytes are not JSON): a `ValueError` names it.

A user's image by URL from another dialect (the hub's ``linked``) goes as an ``image`` block
of a ``url`` source, in its place.

Not carried to Anthropic by `from_hub` (listed here, as `svir_proto.hub` asks): signed
reasoning of another carrier (the Responses API's, Gemini's: Anthropic would reject their
signatures) is not sent; system messages after the first turn join the top-level ``system``;
a ``summary``; an ``effort`` without ``budget_tokens`` where the API would refuse its budget
(`svir_proto.hub.EFFORT_BUDGETS`, at most half of ``max_tokens``, which counts the thinking;
with no ``max_tokens``, the default answer's on top): under 1024 tokens, beside a
``temperature`` other than 1, a ``top_p`` under 0.95, a ``top_k`` or a forced tool choice, or
after a turn of tools with no thinking block of its own (the API requires one then); parameters
the Messages API
has no field for (``seed``, penalties, ...), and the `svir_proto.hub.SERVICE` options but the
end user. What cannot be carried and would change the answer
raises `ValueError` naming it: audio parts, documents from disk, tool-call arguments that are
not a JSON object, a ``temperature`` above 1, a ``response_format`` of JSON without a schema
(the Messages API's structured output takes a schema).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any, Final, TypeGuard

import attrs

from .._json import canonical, dumps
from .._signatures import from_thinking_block
from ..body import Base64Bytes, Segment
from ..events import ReasoningBlock
from ..hub import (
    EFFORT_BUDGETS,
    AssistantPiece,
    LinkedImage,
    hub_options,
    message_extensions,
    message_is_error,
    message_linked,
    message_path,
    message_pieces,
    message_reasoning,
    not_carried,
    own_fields,
    parallel_tool_calls,
    reasoning_options,
    response_format,
    sampling,
    service,
    service_of,
    strict_tools,
    tool_choice,
    unbudgeted,
    unsent_summary,
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
)
from ..openai.parts import ImagePart
from .request import (
    Block,
    ImageBlock,
    Message,
    MessagesRequest,
    OtherBlock,
    RedactedThinkingBlock,
    TextBlock,
    Thinking,
    ThinkingBlock,
    Tool,
    ToolChoice,
    ToolResultBlock,
    ToolUseBlock,
    _block,
    _block_out,
    _text_block,
    _tool_out,
)

__all__ = ["VENDOR", "from_hub", "to_hub"]

VENDOR: Final = "vendor:anthropic"
FIELDS: Final = {
    f"parameters.{name}": name for name in ("max_tokens", "temperature", "top_p", "stop_sequences")
}
"""Where a Messages request says what the hub's paths name (`DialectSpec.fields`)."""
DEFAULT_MAX_TOKENS: Final = 4096
"""``max_tokens`` for a neutral request without one (the Messages API requires it): the most
the Anthropic SDK's examples ask for, and more than most answers take."""
_LEAST_BUDGET: Final = 1024
"""The least ``thinking.budget_tokens`` the Messages API takes."""
_LEAST_TOP_P: Final = 0.95
"""The least ``top_p`` the Messages API takes beside thinking."""

# -- to the hub -------------------------------------------------------------------------------


def _part(b: TextBlock | ImageBlock | OtherBlock) -> LLMTextPart | LLMMediaPart:
    if isinstance(b, OtherBlock):  # a document of base64 data (`_document`)
        source = b.value["source"]
        return LLMMediaPart(type="document", media_type=source["media_type"], data=source["data"])
    if isinstance(b, TextBlock):
        return LLMTextPart(text=b.text)
    if b.image is not None:
        if b.image.path is not None:
            return LLMMediaPart(type="image", media_type=b.media_type or "", path=b.image.path)
        return LLMMediaPart(type="image", media_type=b.media_type or "", raw=b.image.data)
    return LLMMediaPart(type="image", media_type=b.media_type or "", data=b.data)


def _neutral(b: object) -> TypeGuard[TextBlock | ImageBlock | OtherBlock]:
    """A text block, an image given as its bytes, or a document of base64 data with nothing
    besides: what the hub carries (an image by URL is its ``linked``; one by file id, a
    document's title or citations are named lost by `unread`; fidelity 42 F7: a user's PDF
    went nowhere where the hub carries documents)."""
    if isinstance(b, ImageBlock):
        return b.url is None and b.file_id is None
    if isinstance(b, OtherBlock):
        return _document(b.value)
    return isinstance(b, TextBlock)


def _document(value: Mapping[str, Any]) -> bool:
    """``{"type": "document", "source": {"type": "base64", "media_type": ..., "data": ...}}``."""
    source = value.get("source")
    return (
        value.keys() == {"type", "source"}
        and value["type"] == "document"
        and isinstance(source, Mapping)
        and source.keys() == {"type", "media_type", "data"}
        and source["type"] == "base64"
        and isinstance(source["media_type"], str)
        and "/" in source["media_type"]
        and isinstance(source["data"], str)
    )


def _user(blocks: tuple[Block, ...]) -> list[LLMMessage]:
    out = []
    rest: list[LLMTextPart | LLMMediaPart] = []
    linked: list[LinkedImage] = []
    for b in blocks:
        if isinstance(b, ToolResultBlock):
            content: Any = b.content
            if isinstance(content, tuple):
                content = [_part(p) for p in content if _neutral(p)]
            out.append(  # no parts (none had a neutral form) are an empty text
                LLMMessage(
                    role="tool",
                    content=content or "",
                    tool_call_id=b.tool_use_id,
                    extensions=message_extensions(is_error=b.is_error is True),
                )
            )
        elif _neutral(b):
            rest.append(_part(b))  # its cache_control, if any, is kept by to_hub's check
        elif _linkable(b):
            assert isinstance(b, ImageBlock)
            linked.append(LinkedImage(at=len(rest), url=b.url or ""))
    if rest or linked or not out:  # a turn of blocks without a neutral form is an empty turn
        extensions = message_extensions(linked=linked)
        out.append(LLMMessage(role="user", content=rest or "", extensions=extensions))
    return out


def _linkable(b: Block) -> bool:
    """An image by a web URL (the hub's ``linked`` carries it)."""
    return isinstance(b, ImageBlock) and b.url is not None and web_url(b.url)


def _assistant(content: str | tuple[Block, ...]) -> LLMMessage:
    if isinstance(content, str):
        return LLMMessage(role="assistant", content=content)
    # (joined as Anthropic's answers are read: it splits one text into blocks at each citation)
    text = "".join(b.text for b in content if isinstance(b, TextBlock))
    calls: list[LLMToolCall] = []
    reasoning: list[ReasoningBlock] = []
    pieces: list[AssistantPiece] = []  # in order (attack 50b N1)
    for b in content:
        piece: AssistantPiece
        if isinstance(b, TextBlock):
            piece = b.text
        elif isinstance(b, ToolUseBlock):
            piece = LLMToolCall(id=b.id, name=b.name, arguments=dumps(dict(b.input)).decode())
            calls.append(piece)
        elif isinstance(b, (ThinkingBlock, RedactedThinkingBlock)):
            piece = (  # another vendor's signature, carried, is its own again
                from_thinking_block("thinking", b.thinking, b.signature)
                if isinstance(b, ThinkingBlock)
                else from_thinking_block("redacted_thinking", "", b.data)
            )
            reasoning.append(piece)
        else:
            continue
        pieces.append(piece)
    return LLMMessage(
        role="assistant",
        content=text if text or not calls else None,
        tool_calls=calls,
        extensions=message_extensions(reasoning=reasoning, pieces=pieces),
    )


def _messages_to_hub(messages: tuple[Message, ...], paths: list[str]) -> list[LLMMessage]:
    """The neutral messages; ``paths`` receives each one's path (`svir_proto.hub.message_path`:
    a user turn's tool results are tool messages of their own)."""
    out: list[LLMMessage] = []
    before = len(paths)
    for j, m in enumerate(messages):
        if m.role == "assistant":
            out.append(_assistant(m.content))
        elif isinstance(m.content, str):
            out.append(LLMMessage(role="user", content=m.content))
        else:
            out.extend(_user(m.content))
        paths += [f"messages[{j}]"] * (before + len(out) - len(paths))
    return out


def _has_disk_image(messages: tuple[Message, ...]) -> str | None:
    for i, m in enumerate(messages):
        for j, b in enumerate(() if isinstance(m.content, str) else m.content):
            parts = b.content if isinstance(b, ToolResultBlock) else (b,)
            for p in parts if isinstance(parts, tuple) else ():
                if isinstance(p, ImageBlock) and p.image is not None and p.image.path:
                    return f"messages[{i}].content[{j}]"
    return None


class _Inline:
    """Stands in for `Placeholders` where an image in memory goes into JSON as its base64."""

    def add(self, segment: Segment) -> str:
        assert isinstance(segment, Base64Bytes)  # images from disk are refused before
        return base64.b64encode(segment.data).decode()


def to_hub(request: MessagesRequest) -> LLMRequest:
    """The neutral request for a Messages API request (see the module docstring for what
    travels where).

    Raises:
        ValueError: a message must be kept whole and holds an image from disk.
    """
    vendor: dict[str, Any] = {}
    messages: list[LLMMessage] = []
    if request.system:  # an empty list of blocks is kept under vendor:anthropic only
        system = (
            request.system
            if isinstance(request.system, str)
            else [LLMTextPart(text=b.text) for b in request.system]
        )
        messages.append(LLMMessage(role="system", content=system))
    paths = ["system"] * len(messages)
    messages.extend(_messages_to_hub(request.messages, paths))
    parameters: dict[str, Any] = {"max_tokens": request.max_tokens}
    if request.temperature is not None:
        parameters["temperature"] = request.temperature
    if request.top_p is not None:
        parameters["top_p"] = request.top_p
    if request.stop_sequences:
        parameters["stop_sequences"] = list(request.stop_sequences)
    choice = request.tool_choice
    hub_choice: Any = None
    parallel = None
    server = {t.name for t in request.tools if _server_tool(t)}
    if server:  # the API's own tools (``web_search_20250305``...): kept whole, no functions
        vendor["tools"] = [_tool_out(t) for t in request.tools]
    if choice is not None:
        hub_choice = {"auto": "auto", "any": "required", "none": "none"}.get(choice.type)
        if choice.type == "tool":
            hub_choice = ("name", choice.name)
        if choice.disable_parallel_tool_use is not None:
            parallel = not choice.disable_parallel_tool_use
        if (choice.type == "tool" and choice.name in server) or (
            choice.type == "any" and len(server) == len(request.tools)
        ):  # a server tool's: no other dialect has it (review 38)
            hub_choice = None
            vendor["tool_choice"] = {k: v for k, v in attrs.asdict(choice).items() if v is not None}
    thinking = request.thinking
    reasoning = None
    if thinking is not None and thinking.type == "enabled" and not thinking.extra:
        # Anthropic shows its thinking: a summary, in the other dialects' words (Gemini's
        # includeThoughts; audit 36: no thoughts came back)
        reasoning = {"budget_tokens": thinking.budget_tokens, "summary": "auto"}
    elif thinking is not None:
        vendor["thinking"] = {
            "type": thinking.type,
            **({} if thinking.budget_tokens is None else {"budget_tokens": thinking.budget_tokens}),
            **thinking.extra,
        }
    if request.top_k is not None:
        parameters["top_k"] = request.top_k  # the hub's (`SAMPLING`)
    if request.metadata:
        vendor["metadata"] = dict(request.metadata)
    if not request.stream:
        vendor["stream"] = False
    output, extra, form = _output_format(request.extra)
    if extra:
        vendor["extra"] = extra
    if form == _OUTPUT_FORMAT:  # (the API's own place is where another dialect's goes)
        vendor["output"] = form
    hub = LLMRequest(
        model=request.model,
        messages=messages,
        tools=[  # (a server tool, ``web_search_20250305``..., is the API's: under the vendor's)
            LLMTool(name=t.name, description=t.description or "", parameters=t.input_schema or {})
            for t in request.tools
            if not _server_tool(t)
        ],
        parameters=parameters,
        extensions=hub_options(
            tool_choice=hub_choice,
            parallel_tool_calls=parallel,
            reasoning=reasoning,
            service=service_of({"user": request.metadata.get("user_id")}),
            strict_tools=[t.name for t in request.tools if t.extra.get("strict") is True],
            response_format=output,
            paths=paths,
            stateful=("messages", _stateful(request)),
        ),
    )
    kept = {k: vendor[k] for k in ("tools", "tool_choice") if k in vendor}
    back = from_hub(  # what the neutral form gives back (and the server tools); keep the rest
        attrs.evolve(hub, extensions={**hub.extensions, VENDOR: kept}) if kept else hub
    )
    if back.system != request.system:
        vendor["system"] = (
            request.system
            if isinstance(request.system, str)
            else [_block_out(b, None) for b in request.system or ()]
        )
    if back.tools != request.tools:
        vendor["tools"] = [_tool_out(t) for t in request.tools]
    if back.messages != request.messages:
        where = _has_disk_image(request.messages)
        if where is not None:
            raise ValueError(
                f"{where}: the message has blocks without a neutral form and an image from "
                "disk, so it cannot be carried whole"
            )
        inline = _Inline()
        vendor["messages"] = [
            {
                "role": m.role,
                "content": m.content
                if isinstance(m.content, str)
                else [_block_out(b, inline) for b in m.content],  # type: ignore[arg-type]
            }
            for m in request.messages
        ]
    if not vendor:
        return hub
    extensions = {**hub.extensions, VENDOR: vendor}
    return LLMRequest(
        model=hub.model,
        messages=hub.messages,
        tools=hub.tools,
        parameters=hub.parameters,
        extensions=extensions,
    )


# -- from the hub -------------------------------------------------------------------------------


def _block_in(p: LLMTextPart | LLMMediaPart, where: str) -> TextBlock | ImageBlock | OtherBlock:
    if isinstance(p, LLMTextPart):
        return TextBlock(text=p.text)
    if p.type == "image":
        if p.path is not None:
            return ImageBlock(
                media_type=p.media_type, image=ImagePart.from_path(p.path, p.media_type)
            )
        if p.raw is not None:
            return ImageBlock.from_bytes(p.raw, p.media_type)
        return ImageBlock(media_type=p.media_type, data=p.data)
    if p.type == "document" and p.path is None:
        data = p.data if p.data is not None else _b64(p.raw or b"")
        source = {"type": "base64", "media_type": p.media_type, "data": data}
        return OtherBlock(value={"type": "document", "source": source})
    raise ValueError(
        f"{where}: a {p.type} part from {'disk' if p.path else 'memory'} cannot be sent"
    )


def _url_image(linked: LinkedImage) -> Block:
    """An image by URL (the hub's ``linked``) as an ``image`` block of a ``url`` source."""
    return ImageBlock(url=linked.url)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _tool_input(call: LLMToolCall, where: str) -> Mapping[str, Any]:
    try:
        value = canonical(call.arguments) if call.arguments.strip() else {}
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{where}.arguments: not JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise ValueError(f"{where}.arguments: a tool_use input must be a JSON object")
    return value


def _messages_from_hub(
    request: LLMRequest, notes: list[str]
) -> tuple[list[LLMMessage], list[Message]]:
    system: list[LLMMessage] = []
    out: list[Message] = []
    pending: list[Block] = []  # tool results, joined by the user turn that follows them

    def flush() -> None:
        if pending:
            out.append(Message(role="user", content=list(pending)))
            pending.clear()

    for i, m in enumerate(request.messages):
        where = message_path(request, i)
        if m.role == "system":
            system.append(m)
        elif m.role == "tool":
            content: Any = m.content
            if isinstance(content, tuple):
                content = [_block_in(p, f"{where}.content[{j}]") for j, p in enumerate(content)]
            pending.append(
                ToolResultBlock(
                    tool_use_id=m.tool_call_id or "",
                    content=content,
                    is_error=True if message_is_error(m) else None,
                )
            )
        elif m.role == "user":
            linked = message_linked(m)
            if isinstance(m.content, str) and not pending and not linked:
                out.append(Message(role="user", content=m.content))
                continue
            blocks: list[Block] = (
                ([TextBlock(text=m.content)] if m.content else [])
                if isinstance(m.content, str)
                else [_block_in(p, f"{where}.content[{j}]") for j, p in enumerate(m.content or ())]
            )
            pending.extend(with_linked(blocks, linked, _url_image))
            flush()
        else:
            flush()
            turn = _assistant_in(m, where)
            if turn.content == "" and message_reasoning(m):  # (review 51 r8: a turn of
                notes.append(  # another vendor's thoughts only went empty, which the API
                    f"{where}: the assistant's turn holds nothing the Messages API takes, "
                    "which refuses an empty one: left out"  # refuses; the turns around join)
                )
                continue
            out.append(turn)
    flush()
    return system, out


def _assistant_in(m: LLMMessage, where: str) -> Message:
    """An assistant's turn, its blocks in the order they came (`message_pieces`)."""
    blocks: list[Block] = []
    j = 0
    for p in message_pieces(m):
        if isinstance(p, str):
            blocks.append(TextBlock(text=p))
        elif isinstance(p, LLMToolCall):
            path = f"{where}.tool_calls[{j}]"
            blocks.append(ToolUseBlock(id=p.id, name=p.name, input=_tool_input(p, path)))
            j += 1
        elif p.carrier != "thinking":
            continue  # another vendor's signature: not sent (module docstring)
        elif p.redacted:
            blocks.append(RedactedThinkingBlock(data=p.signature))
        else:
            blocks.append(ThinkingBlock(thinking=p.text, signature=p.signature))
    if (len(blocks) == 1 and isinstance(blocks[0], TextBlock)) or not blocks:
        return Message(role="assistant", content=m.text)
    return Message(role="assistant", content=blocks)


def _thinking_may_go_on(messages: Sequence[LLMMessage]) -> bool:
    """Whether the Messages API takes a request with thinking on for these messages: with it,
    the last assistant turn, when it called tools, must begin with its thinking block, which a
    client of a dialect with no field for it (Chat) cannot send back."""
    last = next((m for m in reversed(messages) if m.role == "assistant"), None)
    return (
        last is None
        or not last.tool_calls
        or any(b.carrier == "thinking" for b in message_reasoning(last))
    )


def from_hub(
    request: LLMRequest,
    *,
    default_max_tokens: int = DEFAULT_MAX_TOKENS,
    lost: list[str] | None = None,
) -> MessagesRequest:
    """The Messages API request for a neutral request (see the module docstring for what
    does not carry).

    Args:
        default_max_tokens: ``max_tokens`` when the request sets none (it is required here).
        lost: a list that receives a sentence for each thing not carried.

    Raises:
        ValueError: something that would change the answer cannot be carried; it is named.
    """
    fmt = response_format(request)
    if fmt is not None and fmt.get("type") != "json_schema":
        raise ValueError(
            "response_format: the Messages API has no JSON output mode without a schema (ask "
            "for JSON in the prompt, or give its JSON Schema)"
        )
    vendor = request.extensions.get(VENDOR)
    vendor = vendor if isinstance(vendor, Mapping) else {}
    emptied: list[str] = []
    systems, messages = _messages_from_hub(request, emptied)
    if "messages" in vendor:
        messages = [
            Message(
                role=m["role"],
                content=m["content"]
                if isinstance(m["content"], str)
                else [_block(b) for b in m["content"]],
            )
            for m in vendor["messages"]
        ]
    system: Any = None
    if len(systems) == 1 and isinstance(systems[0].content, str):
        system = systems[0].content
    elif systems:  # a block for each text part of each, never glued
        system = [TextBlock(text=t) for m in systems for t in m.texts]
    if "system" in vendor:
        raw = vendor["system"]
        system = raw if isinstance(raw, str) or raw is None else [_text_block(b) for b in raw]
    strict = strict_tools(request)
    tools = [
        Tool(
            name=t.name,
            input_schema=t.parameters,
            description=t.description or None,
            extra={"strict": True} if t.name in strict else {},
        )
        for t in request.tools
    ]
    if "tools" in vendor:
        tools = [
            Tool(
                name=t["name"],
                input_schema=t.get("input_schema"),
                description=t.get("description"),
                extra={
                    k: v for k, v in t.items() if k not in ("name", "input_schema", "description")
                },
            )
            for t in vendor["tools"]
        ]
    choice = _choice_from_hub(request)
    raw_choice = vendor.get("tool_choice")
    if isinstance(raw_choice, Mapping) and raw_choice.get("type") in ("tool", "any"):
        choice = ToolChoice(
            type=raw_choice["type"],
            name=raw_choice.get("name"),
            disable_parallel_tool_use=raw_choice.get("disable_parallel_tool_use"),
        )
    params = request.parameters
    temperature = params.get("temperature")
    if temperature is not None and temperature > 1:
        raise ValueError(f"parameters.temperature: {temperature} is above the Messages API's 1")
    max_tokens = params.get("max_tokens")
    options = reasoning_options(request)
    budget = options.get("budget_tokens")
    effort = options.get("effort")
    top_p = params.get("top_p")
    if (
        type(budget) is not int
        and effort in EFFORT_BUDGETS
        and temperature in (None, 1)
        and (top_p is None or top_p >= _LEAST_TOP_P)
        and "top_k" not in sampling(request)
        and tool_choice(request) in (None, "auto", "none")
        and _thinking_may_go_on(request.messages)
    ):
        # an effort as its budget (audit 36), when the API would take it (review 36): no
        # temperature but 1, no top_p under 0.95 nor top_k beside it, no tool forced, a turn
        # of tools that began with thinking, and at least 1024 tokens, below max_tokens,
        # which counts the thinking: half of the client's, or the default answer's on top
        budget = EFFORT_BUDGETS[effort]
        if isinstance(max_tokens, int):
            budget = min(budget, max_tokens // 2)
        else:
            max_tokens = default_max_tokens + budget
        budget = budget if budget >= _LEAST_BUDGET else None
    if not isinstance(max_tokens, int):
        max_tokens = default_max_tokens
    thinking = None
    if type(budget) is int and budget > 0:  # (0: no thinking, as without it; below: unsaid)
        thinking = Thinking(type="enabled", budget_tokens=max(budget, _LEAST_BUDGET))
    if "thinking" in vendor:
        raw = vendor["thinking"]
        thinking = Thinking(
            type=raw["type"],
            budget_tokens=raw.get("budget_tokens"),
            extra={k: v for k, v in raw.items() if k not in ("type", "budget_tokens")},
        )
    if lost is not None:
        lost += emptied
        if not isinstance(params.get("max_tokens"), int):  # (the API requires one: fidelity N4)
            lost.append(
                f"max_tokens: the Messages API requires one and the request set none: "
                f"{max_tokens} sent (a longer answer is cut there)"
            )
        if (unsent := unsent_summary(request, "Messages API")) is not None:
            lost.append(unsent)
        if thinking is None and effort in EFFORT_BUDGETS:
            lost.append(
                f"reasoning effort {effort!r}: the Messages API would refuse its thinking "
                "budget beside these options: not sent"
            )
        elif thinking is None and isinstance(effort, str) and effort != "none":
            lost.append(f"reasoning effort {effort!r} has no thinking budget: not sent")
        if type(budget) is int and 0 < budget < _LEAST_BUDGET and "thinking" not in vendor:
            lost.append(
                f"reasoning.budget_tokens {budget} is below the Messages API's least, "
                f"{_LEAST_BUDGET}: {_LEAST_BUDGET} sent"
            )
        if type(budget) is int and budget < 0:
            lost += unbudgeted(request, "the Messages API")
        lost += not_carried(
            request,
            "the Messages API",
            parameters=("max_tokens", "temperature", "top_p", "stop_sequences", "top_k"),
            served=("user",),
            strict=True,
            carriers=("thinking",),
            systems_in_place=False,
        )
    return MessagesRequest(
        model=request.model,
        max_tokens=max_tokens,
        messages=messages,
        system=system,
        tools=tools,
        tool_choice=choice,
        stop_sequences=params.get("stop_sequences") or (),
        temperature=temperature,
        top_p=params.get("top_p"),
        top_k=sampling(request).get("top_k"),
        metadata=vendor.get("metadata") or _metadata(service(request)),
        thinking=thinking,
        stream=vendor.get("stream", True),
        extra=_with_output(vendor.get("extra") or {}, fmt, vendor.get("output")),
    )


_OUTPUT_CONFIG: Final = "output_config"
_OUTPUT_FORMAT: Final = "output_format"
"""Where a Messages request asks for JSON of a schema: ``output_config.format`` (the API's),
``output_format`` (its beta's, ``structured-outputs-2025-11-13``)."""


def _output_format(
    extra: Mapping[str, Any],
) -> tuple[dict[str, Any] | None, dict[str, Any], str | None]:
    """A request's JSON Schema output format as the hub's neutral ``response_format`` (none
    that is not one), the request's other fields, and where the format was (fidelity 42 F14:
    it was a field of the Messages API only)."""
    rest = dict(extra)
    config = rest.get(_OUTPUT_CONFIG)
    for form, fmt in (
        (_OUTPUT_FORMAT, rest.get(_OUTPUT_FORMAT)),
        (_OUTPUT_CONFIG, config.get("format") if isinstance(config, Mapping) else None),
    ):
        if (
            isinstance(fmt, Mapping)
            and fmt.keys() == {"type", "schema"}
            and fmt["type"] == "json_schema"
            and isinstance(fmt["schema"], Mapping)
        ):
            if form == _OUTPUT_FORMAT:
                del rest[form]
            else:
                assert isinstance(config, Mapping)
                rest[form] = {k: v for k, v in config.items() if k != "format"}
                if not rest[form]:
                    del rest[form]
            neutral = {"type": "json_schema", "name": "response", "schema": dict(fmt["schema"])}
            return neutral, rest, form
    return None, rest, None


def _with_output(
    extra: Mapping[str, Any], fmt: Mapping[str, Any] | None, form: object
) -> Mapping[str, Any]:
    """The request's other fields with the neutral JSON Schema output format, where the client
    had it (another dialect's: ``output_config.format``)."""
    if fmt is None:
        return extra
    wire = {"type": "json_schema", "schema": dict(fmt["schema"])}
    if form == _OUTPUT_FORMAT:
        return {**extra, _OUTPUT_FORMAT: wire}
    config = extra.get(_OUTPUT_CONFIG)
    return {
        **extra,
        _OUTPUT_CONFIG: {**(config if isinstance(config, Mapping) else {}), "format": wire},
    }


_NEUTRAL_BLOCKS: Final = frozenset(
    ("text", "image", "tool_use", "tool_result", "thinking", "redacted_thinking")
)


def unread(request: LLMRequest) -> list[str]:
    """What `to_hub` kept for the Messages API only, a sentence each: unknown fields, metadata
    but the end user, a ``thinking`` that is not ``enabled`` (``adaptive``...), a tool choice
    of a server tool, and, in what was kept whole, server tools, ``cache_control`` and blocks
    with no neutral form (not the form alone: text blocks are text), a tool result's too."""
    vendor = request.extensions.get(VENDOR)
    if not isinstance(vendor, Mapping):
        return []
    keys: set[str] = set()
    extra, metadata = vendor.get("extra"), vendor.get("metadata")
    if isinstance(extra, Mapping):
        keys |= set(extra)
    if isinstance(metadata, Mapping):
        keys |= {f"metadata.{k}" for k in metadata if k != "user_id"}
    keys |= {"thinking", "tool_choice"} & set(vendor)
    tools = vendor.get("tools")
    if isinstance(tools, list):
        kinds = {t.get("type", "custom") for t in tools if isinstance(t, Mapping)} - {"custom"}
        keys |= {f"tools ({k})" for k in kinds if isinstance(k, str)}
        keys |= {"tools[].cache_control"} if _marked(tools) else set()
    keys |= {"system[].cache_control"} if _marked(vendor.get("system")) else set()
    messages = vendor.get("messages")
    if isinstance(messages, list):
        blocks = [
            b
            for m in messages
            if isinstance(m, Mapping) and isinstance(m.get("content"), list)
            for b in m["content"]
            if isinstance(b, Mapping)
        ]
        inner = [  # a tool result's blocks (fidelity 42 F6: a search_result went unsaid)
            c
            for b in blocks
            if b.get("type") == "tool_result" and isinstance(b.get("content"), list)
            for c in b["content"]
            if isinstance(c, Mapping)
        ]
        keys |= {"messages[].cache_control"} if _marked(blocks) or _marked(inner) else set()
        keys |= {
            f"messages[].content ({t})"
            for t in {b.get("type") for b in blocks} - _NEUTRAL_BLOCKS
            if isinstance(t, str)
        }
        keys |= {
            f"messages[].content[].content ({t})"
            for t in {c.get("type") for c in inner} - {"text", "image"}
            if isinstance(t, str)
        }
        users = {  # a user's blocks: only they may be the hub's linked images
            id(b)
            for m in messages
            if isinstance(m, Mapping)
            and m.get("role") == "user"
            and isinstance(m.get("content"), list)
            for b in m["content"]
        }
        linked = _linked(blocks, users)
        return own_fields("the Messages API", keys) + [_NOT_LINKED[kind] for kind in sorted(linked)]
    return own_fields("the Messages API", keys)


_NOT_LINKED: Final = {
    "url": "messages[].content (image by url): an image by URL crosses dialects from a user's "
    "message only, by http(s): not sent",
}
"""What is said of an image whose source the hub's ``linked`` does not carry (one by file is
refused: `_stateful`)."""


def _linked(blocks: list[Mapping[str, Any]], users: set[int]) -> set[str]:
    """The kinds of source (``url``) of the images in ``blocks`` and in their tool results
    that are not their bytes and that the hub's ``linked`` does not carry (a tool result's, an
    assistant's; attack 41 F5: they went nowhere, unsaid); ``users``, the ids of the blocks of
    user messages."""
    kinds: set[str] = set()
    for b in blocks:
        inner = b.get("content") if b.get("type") == "tool_result" else None
        for image in [b, *(inner if isinstance(inner, list) else ())]:
            if not isinstance(image, Mapping) or image.get("type") != "image":
                continue
            source = image.get("source")
            kind = source.get("type") if isinstance(source, Mapping) else None
            url = source.get("url") if isinstance(source, Mapping) else None
            carried = (
                image is b and id(b) in users and kind == "url" and isinstance(url, str)
            ) and web_url(url)
            if kind == "url" and not carried:
                kinds.add(kind)
    return kinds


def _stateful(request: MessagesRequest) -> list[str]:
    """Where the prompt stands on a file only the Messages API's server keeps: an image or a
    document by ``file_id`` (a ``file`` source), in a message or a tool's result. Another
    dialect's upstream, asked without it, would answer another prompt (attack 69 F2: it was
    only said lost): `svir_proto.dialects.translate_request` refuses it, as a Responses
    request's file by id."""
    paths = []
    for i, m in enumerate(request.messages):
        for j, b in enumerate(m.content if isinstance(m.content, tuple) else ()):
            at = f"$.messages[{i}].content[{j}]"
            inner = b.content if isinstance(b, ToolResultBlock) else None
            paths += [f"{at}.source"] if _by_file(b) else []
            paths += [
                f"{at}.content[{k}].source"
                for k, c in enumerate(inner if isinstance(inner, tuple) else ())
                if _by_file(c)
            ]
    return paths


def _by_file(b: object) -> bool:
    """An image or a document block whose source is a file by its id."""
    if isinstance(b, ImageBlock):
        return b.file_id is not None
    if isinstance(b, OtherBlock):
        source = b.value.get("source")
        return isinstance(source, Mapping) and source.get("type") == "file"
    return False


def _server_tool(tool: Tool) -> bool:
    """A tool the Messages API runs itself (``web_search_20250305``...): no other dialect's."""
    kind: object = tool.extra.get("type", "custom")
    return kind != "custom"


def _marked(blocks: object) -> bool:
    """Whether a kept list of blocks or tools has a ``cache_control`` among them."""
    return isinstance(blocks, list) and any(
        isinstance(b, Mapping) and "cache_control" in b for b in blocks
    )


def _metadata(served: Mapping[str, Any]) -> dict[str, Any]:
    """The end user, the one `svir_proto.hub.SERVICE` option the Messages API has a field for."""
    user = served.get("user")
    return {} if user is None else {"user_id": user}


def _choice_from_hub(request: LLMRequest) -> ToolChoice | None:
    choice = tool_choice(request)
    parallel = parallel_tool_calls(request)
    disable = None if parallel is None else not parallel
    if choice is None:
        return (
            None if disable is None else ToolChoice(type="auto", disable_parallel_tool_use=disable)
        )
    if isinstance(choice, tuple):
        return ToolChoice(type="tool", name=choice[1], disable_parallel_tool_use=disable)
    kind = {"auto": "auto", "none": "none", "required": "any"}[choice]
    return ToolChoice(type=kind, disable_parallel_tool_use=disable)  # type: ignore[arg-type]
