"""Translation between the dialects: OpenAI requests to and from `LLMRequest`, and event
streams in both directions (draft section 7.1, "API Gateway Translation").

Because both dialects decode to one event vocabulary, translating a stream is choosing the
other encoder, plus what the draft's lifecycle asks for:

Rule 1: ``tool.call`` carries whole calls, so OpenAI tool-call pieces are not translated; the
    whole `ToolCall` events that the decoder emits at ``[DONE]`` are.
Rule 2: ``content.stop`` comes after the block's tool calls (4.8), so the OpenAI finish (which
    comes before ``[DONE]``) is held until the end, and so is usage, which then follows it
    (the draft's complete example, 5.5); so is each other block's stop (`BlockStopped`, an
    LLM-Stream upstream's), in the order they came.
Rule 3: an in-stream failure becomes an ``error`` with the draft's code, then ``stream.end``;
    the draft allows one ``error``, so a second failure (an upstream that sends two error chunks)
    is not passed on.
Rule 4: an upstream stream that was cut (no ``[DONE]``, no error) is passed on as a cut: the
    held ``content.stop`` and usage go out, and no ``stream.end`` follows. The client then knows
    the answer is partial, exactly as a direct client of the upstream would. A stream that ended
    with its marker but without a finish (mlx-lm) ends with ``stream.end`` and no
    ``content.stop``: not complete, and not cut either.
Rule 5: events that come before the upstream said who it is (Azure's prompt verdict, an error
    before any chunk) wait for ``stream.start``, which is written with the request's model if
    the upstream never names one.

Request fields: ``top_p`` and ``stop`` are the draft's ``parameters.top_p`` and
``parameters.stop_sequences``; ``max_completion_tokens`` is its ``max_tokens`` (and is noted, so
that it comes back under its own name); ``parallel_tool_calls`` is the hub's (`svir_proto.hub`).
``seed`` and ``extra_body``'s ``top_k`` and penalties are the hub's sampling parameters
(`svir_proto.hub.SAMPLING`: another dialect's request gives the penalties and the seed, never
``top_k``, which OpenAI refuses). The fields with no place in the draft travel in
``extensions["vendor:openai"]`` (``tool_choice``, ``response_format``, ``reasoning_effort``,
``user``, ``extra_body``), and a ``developer`` message's role in that message's own extensions
(another dialect's developer message comes as ``system``, which OpenAI reads the same and
every local server knows); ``tool_choice``, ``reasoning_effort`` and a JSON
``response_format`` also as the hub's neutral options, which every dialect reads (and which
`llm_to_openai` reads from another dialect's request), and so are ``user``, ``extra_body``'s
``store``, ``service_tier``, ``prompt_cache_key``, ``safety_identifier`` and ``verbosity``
(`svir_proto.hub.SERVICE`) and the names of the ``strict`` tools (`svir_proto.hub.strict_tools`).
Lost on the way to LLM-Stream, and only these: assistant reasoning text (no field in the
draft; signed ``thinking_blocks`` go as the message's reasoning blocks). An image's ``detail``
is the hub's (`svir_proto.hub.message_image_detail`). An image given by URL is the hub's
``linked`` (`svir_proto.hub.LinkedImage`: the draft carries images as data), which every vendor
dialect sends as its own image by URL, and `svir_proto.dialects.translate_request` to
LLM-Stream refuses (``ValueError``); an `LLMRequest` sent as it is carries it under
``vendor:svir`` only, and one whose URL has a character that is not visible is refused. A
text file becomes a ``document`` part (``text/plain``, still streamed from disk). Document and
audio parts that are not text cannot go to the OpenAI dialect: `llm_to_openai` raises
``ValueError`` naming the part.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, TypeGuard, get_args

from .events import (
    BlockStopped,
    Event,
    Finished,
    StreamEnded,
    StreamFailed,
    StreamStarted,
    TextDelta,
    TextRun,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from .hub import (
    SAMPLING,
    SERVICE,
    HubToolChoice,
    LinkedImage,
    effort_for,
    error_text,
    hub_options,
    message_extensions,
    message_image_detail,
    message_linked,
    message_path,
    not_carried,
    own_fields,
    parallel_tool_calls,
    reasoning_options,
    response_format,
    result_text,
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
from .llmstream._lifecycle import State
from .llmstream.encoder import LLMStreamEncoder
from .llmstream.request import (
    LLMMediaPart,
    LLMMessage,
    LLMRequest,
    LLMTextPart,
    LLMTool,
    LLMToolCall,
    Part,
)
from .openai.encoder import ChatStreamEncoder
from .openai.parts import ImageDetail, ImagePart, TextFile, TextPart
from .openai.request import (
    REASONING_EFFORTS,
    AssistantMessage,
    ChatRequest,
    JSONObjectFormat,
    JSONSchemaFormat,
    Message,
    NamedToolChoice,
    SystemMessage,
    TextFormat,
    Tool,
    ToolMessage,
    UserMessage,
)

__all__ = ["LLMStreamToOpenAI", "OpenAIToLLMStream", "llm_to_openai", "openai_to_llm"]

OPENAI_EXTENSION: Final = "vendor:openai"
CHAT_FIELDS: Final = {
    "parameters.temperature": "temperature",
    "parameters.top_p": "top_p",
    "parameters.stop_sequences": "stop",
    "response_format": "response_format",
}
"""Where a Chat request says what the hub's paths name (`DialectSpec.fields`; its maximum is
``max_tokens`` or ``max_completion_tokens``, whichever it sent)."""


# -- requests ---------------------------------------------------------------------------------


def openai_to_llm(request: ChatRequest, *, request_id: str | None = None) -> LLMRequest:
    """An OpenAI request as an `LLMRequest` (the module docstring says what does not carry)."""
    messages = []
    for i, m in enumerate(request.messages):
        if isinstance(m, SystemMessage):
            ext = {OPENAI_EXTENSION: {"role": m.role}} if m.role != "system" else {}
            messages.append(LLMMessage(role="system", content=m.content, extensions=ext))
        elif isinstance(m, UserMessage):
            parts: list[Part] = []
            details: dict[int, str] = {}
            linked: list[LinkedImage] = []
            for j, p in enumerate(m.content):
                if isinstance(p, TextPart):
                    parts.append(LLMTextPart(text=p.text))
                elif isinstance(p, TextFile):
                    if p.path is not None:
                        parts.append(
                            LLMMediaPart(type="document", media_type="text/plain", path=p.path)
                        )
                    else:
                        parts.append(LLMTextPart(text=p.opening() + (p.text or "") + "\n</file>"))
                elif p.url is not None:  # the hub's own (the draft carries images as data)
                    if not web_url(p.url):  # (review 42 F2: it went nowhere, unsaid)
                        raise ValueError(
                            f"messages[{i}].content[{j}]: an image URL with a character that is "
                            "not visible (a tab, a control character) cannot cross dialects"
                        )
                    linked.append(LinkedImage(at=len(parts), url=p.url, detail=p.detail))
                else:
                    if p.detail is not None:
                        details[len(parts)] = p.detail
                    parts.append(
                        LLMMediaPart(type="image", media_type=p.media_type, path=p.path)
                        if p.path is not None
                        else LLMMediaPart(type="image", media_type=p.media_type, raw=p.data or b"")
                    )
            content: str | tuple[Part, ...] = (
                parts[0].text
                if len(parts) == 1 and isinstance(parts[0], LLMTextPart)
                else tuple(parts) or ""
            )
            extensions = message_extensions(image_detail=details, linked=linked)
            messages.append(LLMMessage(role="user", content=content, extensions=extensions))
        elif isinstance(m, AssistantMessage):
            calls = tuple(
                LLMToolCall(id=c.id, name=c.name, arguments=c.arguments) for c in m.tool_calls
            )
            messages.append(
                LLMMessage(
                    role="assistant",
                    content=m.content if m.content is not None or calls else "",
                    tool_calls=calls,
                    extensions=message_extensions(reasoning=m.thinking_blocks),
                )
            )
        else:
            messages.append(LLMMessage(role="tool", content=m.content, tool_call_id=m.tool_call_id))
    params: dict[str, Any] = {}
    vendor: dict[str, Any] = {}
    if request.max_tokens is not None:
        params["max_tokens"] = request.max_tokens
    if request.max_completion_tokens is not None:
        params["max_tokens"] = request.max_completion_tokens
        vendor["max_completion_tokens"] = True  # it comes back under its own name
    if request.temperature is not None:
        params["temperature"] = request.temperature
    if request.top_p is not None:
        params["top_p"] = request.top_p
    if request.stop:
        params["stop_sequences"] = list(request.stop)
    if request.seed is not None:
        params["seed"] = request.seed
    for name in ("top_k", "presence_penalty", "frequency_penalty"):  # servers' own (vLLM's)
        if name in request.extra_body:  # or OpenAI's untyped options: the hub's (`SAMPLING`)
            params[name] = request.extra_body[name]
    choice = request.tool_choice
    if choice is not None:
        vendor["tool_choice"] = (
            {"name": choice.name} if isinstance(choice, NamedToolChoice) else choice
        )
    fmt = request.response_format
    if isinstance(fmt, TextFormat):
        vendor["response_format"] = {"type": "text"}
    elif isinstance(fmt, JSONObjectFormat):
        vendor["response_format"] = {"type": "json_object"}
    elif isinstance(fmt, JSONSchemaFormat):
        vendor["response_format"] = {
            "type": "json_schema",
            "name": fmt.name,
            "schema": dict(fmt.schema),
            "strict": fmt.strict,
        }
    if request.reasoning_effort is not None:
        vendor["reasoning_effort"] = request.reasoning_effort
    if request.user is not None:
        vendor["user"] = request.user
    if request.extra_body:
        vendor["extra_body"] = dict(request.extra_body)
    unsigned = [  # (signed, it goes as the message's reasoning blocks: all of it when they
        i  # hold it all, as a whole answer's do, attack 50b N4)
        for i, m in enumerate(request.messages)
        if isinstance(m, AssistantMessage)
        and m.reasoning
        and m.reasoning_carrier != "think"
        and m.reasoning != "".join(b.text for b in m.thinking_blocks)
    ]
    if unsigned:  # said by `openai_unread` (fidelity 42 F10)
        vendor["unsigned_reasoning"] = unsigned
    neutral: HubToolChoice | None = None  # the hub's too: every dialect reads it (attack 28)
    if isinstance(choice, NamedToolChoice):
        neutral = ("name", choice.name)
    elif choice in ("auto", "none", "required"):
        neutral = choice
    effort = request.reasoning_effort
    fmt_out = vendor.get("response_format")
    extensions = hub_options(
        tool_choice=neutral,
        parallel_tool_calls=request.parallel_tool_calls,
        reasoning={"effort": effort} if effort is not None else None,
        response_format=None if fmt_out is None or fmt_out["type"] == "text" else fmt_out,
        service=service_of({**request.extra_body, "user": request.user}),
        strict_tools=[t.name for t in request.tools if t.strict],
    )
    if vendor:
        extensions[OPENAI_EXTENSION] = vendor
    return LLMRequest(
        model=request.model,
        messages=messages,
        tools=[
            LLMTool(name=t.name, description=t.description, parameters=t.parameters)
            for t in request.tools
        ],
        parameters=params,
        metadata=_metadata(request.extra_body.get("metadata"), request_id),
        extensions=extensions,
    )


def _metadata(given: object, request_id: str | None) -> dict[str, Any]:
    """A Chat request's ``metadata`` (string pairs, which the Responses API has too) as the
    draft's, with the request's id."""
    out: dict[str, Any] = dict(given) if _string_pairs(given) else {}
    if request_id is not None:
        out["request_id"] = request_id
    return out


def openai_unread(request: LLMRequest) -> list[str]:
    """What `openai_to_llm` kept for the Chat API only, a sentence each: the request's fields
    beside the typed ones (``extra_body``: ``logprobs``, ``logit_bias``, ``metadata``...) but
    the hub's (`svir_proto.hub.SAMPLING`, `svir_proto.hub.SERVICE`)."""
    vendor = request.extensions.get(OPENAI_EXTENSION)
    vendor = vendor if isinstance(vendor, dict) else {}
    unsigned = vendor.get("unsigned_reasoning")
    said = [
        f"messages[{i}]: an assistant's reasoning that no signature vouches for, which only a "
        "Chat server takes back: not sent"
        for i in (unsigned if isinstance(unsigned, list) else ())
    ]
    extra = vendor.get("extra_body")
    if not isinstance(extra, dict):
        return said
    keys = set(extra) - set(SAMPLING) - set(SERVICE)
    if _string_pairs(extra.get("metadata")):
        keys.discard("metadata")  # the draft's (`_metadata`)
    return own_fields("the Chat API", keys) + said


def _parts(content: str | tuple[Part, ...] | None) -> tuple[Part, ...]:
    """A message's content as its parts: a string is one text part, an empty one none (the
    places `svir_proto.hub.LinkedImage` counts)."""
    if isinstance(content, str):
        return (LLMTextPart(text=content),) if content else ()
    return content or ()


def _url_image(where: str, notes: list[str]) -> Callable[[LinkedImage], ImagePart]:
    """How a Chat request gives the image by URL of the message at ``where``: an
    ``image_url`` part; a detail the Chat API does not take is noted in ``notes`` and not
    sent."""

    def image(linked: LinkedImage) -> ImagePart:
        detail: Any = linked.detail
        if detail not in (None, *get_args(ImageDetail)):
            notes.append(
                f"{where}.content: an image's detail ({detail!r}) is not one the Chat "
                "API takes: not sent"
            )
            detail = None
        return ImagePart.from_url(linked.url, detail=detail)

    return image


def _string_pairs(value: object) -> TypeGuard[dict[str, str]]:
    """A Chat request's ``metadata`` that the draft's carries: string pairs."""
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


_CHAT_PARAMETERS: Final = (
    "max_tokens",
    "temperature",
    "top_p",
    "stop_sequences",
    "seed",
    "presence_penalty",
    "frequency_penalty",
)
"""The neutral parameters another dialect's request gives a Chat request (not ``top_k``, which
OpenAI refuses)."""


def _text_after_an_image(parts: Sequence[object]) -> bool:
    """Whether text (or a text file) comes after an image among a user message's parts."""
    seen = False
    for part in parts:
        if isinstance(part, ImagePart):
            seen = True
        elif seen and (not isinstance(part, TextPart) or part.text):
            return True
    return False


def llm_to_openai(request: LLMRequest, *, lost: list[str] | None = None) -> ChatRequest:
    """An `LLMRequest` as an OpenAI request (usage is always asked for); ``lost``, a list that
    receives a sentence for each thing not carried: signed reasoning (no field in the Chat
    API), and of another dialect's request parameters but `_CHAT_PARAMETERS`, an effort
    OpenAI does not take, and metadata (`svir_proto.hub.not_carried`).

    Raises:
        ValueError: a part the OpenAI dialect cannot carry (audio, a non-text document; in a
            tool message, anything but text).
    """
    notes: list[str] = [] if lost is None else lost
    messages: list[Message] = []
    for i, m in enumerate(request.messages):
        where = message_path(request, i)
        if m.role == "system":
            theirs = m.extensions.get(OPENAI_EXTENSION)
            developer = isinstance(theirs, dict) and theirs.get("role") == "developer"
            messages.append(  # blocks apart (client round 32: "French.Keep it short.")
                SystemMessage(
                    content="\n".join(m.texts), role="developer" if developer else "system"
                )
            )
        elif m.role == "user":
            linked = message_linked(m)
            if isinstance(m.content, str) and not linked:
                messages.append(UserMessage(content=m.content))
                continue
            parts: list[TextPart | ImagePart | TextFile] = []
            details = message_image_detail(m)
            for j, p in enumerate(_parts(m.content)):
                if isinstance(p, LLMTextPart):
                    parts.append(TextPart(text=p.text))
                elif p.type == "image":
                    detail: Any = details.get(j)
                    if detail not in (None, *get_args(ImageDetail)):
                        notes.append(
                            f"{where}.content[{j}]: an image's detail ({detail!r}) is not "
                            "one the Chat API takes: not sent"
                        )
                        detail = None
                    parts.append(
                        ImagePart.from_path(p.path, p.media_type, detail=detail)
                        if p.path
                        else ImagePart.from_bytes(p.decoded(), p.media_type, detail=detail)
                    )
                elif p.type == "document" and p.media_type.startswith("text/"):
                    if p.path is not None:
                        parts.append(TextFile.from_path(p.path))
                    else:
                        parts.append(
                            TextFile.from_text(p.decoded().decode("utf-8"), name=f"document-{j}")
                        )
                else:  # (the hub's index of the part, in the hub's own path only: attack 69)
                    at = f"{where}.content[{j}]" if where.startswith("messages[") else where
                    article = "an" if p.type[:1] in ("a", "e", "i", "o", "u") else "a"
                    raise ValueError(
                        f"{at}: the OpenAI dialect cannot carry {article} {p.type} part "
                        f"({p.media_type})"
                    )
            image = _url_image(where, notes)
            placed = with_linked(parts, linked, image)
            if _text_after_an_image(placed):  # (fidelity 51 N1: said, not moved unsaid)
                notes.append(
                    f"{where}.content: a Chat request has its text first, then its images "
                    "(wire reference 2.2): text after an image is not kept in its place"
                )
            messages.append(UserMessage(content=placed))
        elif m.role == "assistant":
            calls = tuple(
                ToolCall(index=k, id=c.id, name=c.name, arguments=c.arguments)
                for k, c in enumerate(m.tool_calls)
            )
            messages.append(AssistantMessage(content=m.text or None, tool_calls=calls))
        else:
            for j, p in enumerate(m.content if isinstance(m.content, tuple) else ()):
                if not isinstance(p, LLMTextPart):  # (audit 36: an image went nowhere)
                    raise ValueError(
                        f"{where}.content[{j}]: an OpenAI tool message carries text "
                        f"only, not {p.type} ({p.media_type})"
                    )
            text = error_text(m) or result_text(m)  # (media raised above)
            messages.append(ToolMessage(tool_call_id=m.tool_call_id or "", content=text))
    vendor = request.extensions.get(OPENAI_EXTENSION)
    vendor = vendor if isinstance(vendor, dict) else {}
    strict = strict_tools(request)
    tools = [
        Tool(
            name=t.name,
            description=t.description,
            parameters=t.parameters,
            strict=t.name in strict,
        )
        for t in request.tools
    ]
    choice: Any = vendor.get("tool_choice")
    if isinstance(choice, dict):
        choice = NamedToolChoice(choice.get("name", ""))
    elif choice is None:  # another dialect's request: the hub's neutral choice
        neutral = tool_choice(request)
        choice = NamedToolChoice(neutral[1]) if isinstance(neutral, tuple) else neutral
    effort = vendor.get("reasoning_effort")
    if effort is None:
        effort = effort_for(reasoning_options(request))  # a budget as its effort (audit 36)
        if (unsent := unsent_summary(request, "Chat API")) is not None:
            notes.append(unsent)
        if effort is not None and effort not in REASONING_EFFORTS:
            notes.append(f"reasoning effort {effort!r} is not one OpenAI takes: not sent")
            effort = None
    fmt_raw = vendor.get("response_format")
    if fmt_raw is None:  # another dialect's request: the hub's neutral format
        fmt_raw = response_format(request)
    fmt: Any = None
    if isinstance(fmt_raw, dict):
        kind = fmt_raw.get("type")
        if kind == "text":
            fmt = TextFormat()
        elif kind == "json_object":
            fmt = JSONObjectFormat()
        elif kind == "json_schema":
            fmt = JSONSchemaFormat(
                name=fmt_raw.get("name", ""),
                schema=fmt_raw.get("schema", {}),
                strict=bool(fmt_raw.get("strict")),
            )
    params = request.parameters
    cap = params.get("max_tokens")
    # OpenAI's reasoning models refuse max_tokens (audit 36); a server that takes an effort
    # takes the newer name too (llama.cpp, vLLM)
    completion_cap = vendor.get("max_completion_tokens") is True or effort is not None
    stops = params.get("stop_sequences")
    extra = vendor.get("extra_body")
    chosen = sampling(request)
    served = service(request)
    user = vendor.get("user", served.pop("user", None))
    foreign = not isinstance(extra, dict)
    if foreign:  # another dialect's request: OpenAI's penalties (its top_k would be refused
        extra = {  # by OpenAI), and how it is to be served
            k: chosen[k] for k in ("presence_penalty", "frequency_penalty") if k in chosen
        } | served
    notes += unbudgeted(request, "the Chat API")
    notes += not_carried(  # (a Chat request's own: only its signed reasoning, nowhere to go)
        request,
        "the Chat API",
        parameters=_CHAT_PARAMETERS if foreign else params,
        served=SERVICE,
        strict=True,
        metadata=() if foreign else request.metadata,
        carriers=(),
        image_detail=True,
    )
    return ChatRequest(
        model=request.model,
        messages=messages,
        tools=tools,
        tool_choice=choice,
        max_tokens=None if completion_cap else cap,
        max_completion_tokens=cap if completion_cap else None,
        temperature=params.get("temperature"),
        top_p=params.get("top_p"),
        stop=stops if isinstance(stops, list) else None,
        seed=chosen.get("seed"),
        user=user,
        parallel_tool_calls=parallel_tool_calls(request),
        extra_body=extra or None,
        response_format=fmt,
        include_usage=True,
        reasoning_effort=effort,
    )


# -- streams ----------------------------------------------------------------------------------


class OpenAIToLLMStream:
    """OpenAI-dialect events in (from `ChatStreamDecoder`), LLM-Stream bytes out (Rules 1-5).

    Args:
        model: written on ``stream.start`` if the upstream never names its model.
        request_id: echoed on ``stream.start`` and ``stream.end``.
        created: the ``created`` to write if the upstream gives none (the caller's clock).
    """

    def __init__(self, *, model: str = "", request_id: str | None = None, created: int = 0) -> None:
        self.encoder = LLMStreamEncoder(request_id=request_id)
        self._model = model
        self._created = created
        self._started = False
        self._early: list[Event] = []
        self._stops: dict[int, Finished | BlockStopped] = {}  # each block's, as they came
        self._usage: Usage | None = None
        self._failed = False

    @property
    def done(self) -> bool:
        """``stream.end`` was written (as every dialect's encoder says of its end marker)."""
        return self.encoder.state is State.ENDED

    @property
    def lost(self) -> list[str]:
        """What the draft has no value for (`LLMStreamEncoder.lost`)."""
        return self.encoder.lost

    def feed(self, event: Event) -> bytes:
        """The LLM-Stream bytes for one upstream event (often ``b""``: held or not carried).
        Also `encode`, the name every dialect's encoder gives it."""
        if type(event) is TextDelta and self._started and not self._failed:  # most events
            return self.encoder.delta(event.text, index=event.index)
        if isinstance(event, StreamStarted):
            if self._started:
                return b""
            self._started = True
            start = StreamStarted(
                response_id=event.response_id,
                model=event.model or self._model,
                created=event.created or self._created,
                request_id=self.encoder.request_id,
            )
            early, self._early = self._early, []
            return self.encoder.encode(start) + b"".join(self.feed(e) for e in early)
        if not self._started:
            if isinstance(event, (StreamFailed, StreamEnded)):
                return self.feed(StreamStarted(response_id="", model=self._model)) + self.feed(
                    event
                )
            self._early.append(event)  # Rule 5
            return b""
        if isinstance(event, ToolCallDelta):  # Rule 1
            return b""
        if isinstance(event, (Finished, BlockStopped)):  # Rule 2
            self._stops[event.index if type(event) is BlockStopped else 0] = event
            return b""
        if isinstance(event, Usage):
            self._usage = event
            return b""
        if isinstance(event, StreamFailed):  # Rule 3: the draft's one error; a second is dropped
            if self._failed:
                return b""
            self._failed = True
            return self.encoder.encode(event)
        if isinstance(event, StreamEnded):
            out = b""
            if not self._failed:
                for stop in self._stops.values():
                    out += self.encoder.encode(stop)
                if self._usage is not None:
                    out += self.encoder.encode(self._usage)
                if not event.done:
                    return out  # Rule 4: a cut stays a cut
            return out + self.encoder.end()
        if self._failed:
            return b""  # nothing but stream.end may follow an error
        return self.encoder.encode(event)

    encode = feed  # `feed` under its every-dialect name, one call less per event

    def encode_run(self, run: TextRun) -> bytes:
        """The LLM-Stream bytes for a run of text deltas (`TextRun`): what `feed` gives for
        each of its `TextRun.deltas`, their JSON copied as it came once the stream is under
        way (`LLMStreamEncoder.deltas`)."""
        if self._started and not self._failed:
            return self.encoder.deltas(run)
        return b"".join(map(self.feed, run.deltas()))


class LLMStreamToOpenAI:
    """LLM-Stream events in (from `LLMStreamDecoder`), OpenAI-dialect bytes out."""

    def __init__(
        self, *, response_id: str = "chatcmpl-svir", model: str = "", created: int = 0
    ) -> None:
        self.encoder = ChatStreamEncoder(response_id=response_id, model=model, created=created)

    def feed(self, event: Event) -> bytes:
        """The OpenAI-dialect bytes for one event."""
        return self.encoder.encode(event)
