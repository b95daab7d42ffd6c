"""The dialect registry: what each dialect's package gives the layers above it (an `Exchange`,
the gateway, the ``svir`` command), found by name or by a request's type, so that none of
them names a dialect's modules (ARCHITECTURE.md, "Dialects: one hub, N adapters").

Rule 1: a dialect is a package with the same parts (``request``, ``stream``, ``encoder``,
    ``status``, ``hub``); its `DialectSpec` is built from them on first use, so importing this
    module imports no dialect.
Rule 2: a request goes where its dialect's API puts it, from the endpoint's prefix (the path
    up to ``/v1``): ``/chat/completions``, ``/messages``, ``/responses``; Gemini's path names
    the model and the API version (``/v1beta/models/M:streamGenerateContent?alt=sse``) from
    the endpoint's root.
Rule 3: the endpoint's key goes where the dialect's API expects it: ``Authorization: Bearer``
    (OpenAI's two APIs, LLM-Stream), ``x-api-key`` with ``anthropic-version`` (Anthropic),
    ``x-goog-api-key`` (Gemini).
Rule 4: translating a request of dialect A to dialect B is ``B.from_hub(A.to_hub(request))``
    (`translate_request`); a request of the target's own dialect is never translated.
Rule 5: each dialect's API lists its models in its own shape (`ModelsAPI`): OpenAI's for Chat
    Completions, Responses and LLM-Stream (whose servers serve OpenAI's listing), Anthropic's
    for Messages, Gemini's for Gemini; a listing is read into `ModelInfo` by one API's
    ``read`` and written by another's ``write``.

No I/O here.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, final

import attrs

from .hub import HUB_EXTENSION, message_linked, message_path, stateful
from .llmstream.request import LLMMessage, LLMRequest

if TYPE_CHECKING:  # pragma: no cover - types only
    from .body import RequestBody
    from .errors import Failure
    from .events import Completion, Event, RequestFailed
    from .openai.endpoint import Endpoint
    from .openai.models import ModelInfo
    from .sse import Errors

__all__ = [
    "DIALECTS",
    "DialectName",
    "DialectRequest",
    "DialectSpec",
    "ModelsAPI",
    "DialectStreamDecoder",
    "DialectStreamEncoder",
    "Routed",
    "StreamReframer",
    "TranslationError",
    "as_sent",
    "dialect",
    "detect",
    "dialect_of",
    "translate_request",
]

DialectName = Literal["chat", "messages", "responses", "gemini", "llm-stream"]
DIALECTS: Final[tuple[DialectName, ...]] = ("chat", "messages", "responses", "gemini", "llm-stream")
"""Every dialect, in the order the ``svir`` command lists them."""


class DialectStreamDecoder(Protocol):
    """What every dialect's stream decoder offers (`svir_proto._dialect.DialectDecoder`)."""

    @property
    def result(self) -> Completion: ...
    @property
    def terminal(self) -> Event | None: ...
    @property
    def error(self) -> BaseException | None: ...
    @property
    def pending(self) -> int: ...
    def feed(self, data: bytes) -> list[Event]: ...
    def close(self) -> list[Event]: ...


class DialectRequest(Protocol):
    """What every dialect's typed request offers."""

    @property
    def tool_names(self) -> frozenset[str]: ...
    def body(self, *, piece_size: int = ...) -> RequestBody: ...


class DialectStreamEncoder(Protocol):
    """What every dialect's stream encoder offers: the bytes for one vocabulary event, and
    whether the dialect's end of stream was written."""

    @property
    def done(self) -> bool: ...

    def encode(self, event: Event) -> bytes: ...


class StreamReframer(Protocol):
    """Whole SSE events of a relayed stream, in the form its client asked for instead of SSE
    (`DialectSpec.reframe`: Gemini's one JSON array), their content as it came."""

    written: int
    """What was written so far (an array's elements)."""
    cut: bool
    """The `end` came inside an event: the form is left unfinished, the client's body cut."""

    def events(self, data: bytes) -> bytes: ...

    def end(self) -> bytes: ...


class TranslationError(ValueError):
    """What the target dialect of `translate_request` cannot carry of a request, named where
    the request's own dialect says it (``$.stop`` of a Chat request to a Responses upstream,
    which has no stop sequences).

    Attributes:
        path: where, as `RequestError` names it (``$.`` and the field).
    """

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path


@final
@attrs.frozen(kw_only=True)
class Routed:
    """What a request target says of a request whose dialect names its model in the path
    (Gemini's ``/v1beta/models/M:streamGenerateContent?alt=sse``): `DialectSpec.route`."""

    model: str
    stream: bool
    sse: bool
    """Whether the answer asked for is SSE (``alt=sse``); else a stream is a JSON array."""
    target: str
    """The request's target as it goes to an upstream of the dialect: from the API's root,
    in its canonical form (a stream's as SSE), without the client's query (a key)."""
    version: str = "v1beta"
    """The API's version the path names (Gemini's ``v1beta``), which the request keeps."""


@final
@attrs.frozen(kw_only=True)
class ModelsAPI:
    """The model listing of a dialect's API (Rule 5): ``GET /v1/models`` (OpenAI's, whose
    every dialect and LLM-Stream's servers share it; Anthropic's) or ``GET /v1beta/models``
    (Gemini's), and ``.../models/{id}`` for one model.

    Attributes:
        name: the API (dialects of one API share its listing).
        read: ``read(body, one=False)``: the models of a listing (of one model's object
            with ``one``) and whether the server has more than it reads, or a
            `PeerProtocolError` that says what the body is not.
        write: ``write(models, one=False)``: the listing's bytes (the one model's object
            with ``one``) as the API's clients read them.
        every: the query that asks for as many models as one answer holds.
        paging: the query parameters that ask for a page of the listing.
    """

    name: Literal["openai", "anthropic", "gemini"]
    read: Callable[..., tuple[tuple[ModelInfo, ...], bool]]
    write: Callable[..., bytes]
    every: str = ""
    paging: tuple[str, ...] = ()

    def path(self, model: str | None = None, version: str = "v1beta") -> str:
        """The listing's path (one model's, its id as a path takes it: encoded as it
        came), below the prefix of an endpoint (`DialectSpec.root` for Gemini's, whose path
        names the API's ``version``)."""
        head = f"/{version}/models" if self.name == "gemini" else "/models"
        return head if model is None else f"{head}/{model}"


@final
@attrs.frozen(kw_only=True)
class DialectSpec:
    """One dialect, as the layers above the dialect packages use it.

    Attributes:
        name: the registry's name (`DIALECTS`).
        request_type: the typed request (``ChatRequest``, ``MessagesRequest``, ...).
        path: where the API serves it, from the endpoint's prefix (Rule 2); ``None`` when the
            path depends on the request (Gemini: `target`).
        parse: a request body read into the typed request, for the server side.
        read: a request body read into the typed request and whether it asks for a stream,
            for a server that also answers one that does not (with `answer`).
        to_hub, from_hub: the dialect's adapters to and from the neutral request;
            ``from_hub(request, lost=None)``: ``lost``, a list that receives a sentence for
            each thing the dialect has no field for (what it does not carry and does not
            refuse, listed by its docstring).
        decoder: makes the stream decoder for a request (its declared tools) and the options.
        encoder: makes the stream encoder: ``encoder(model, response_id, created,
            declared_tools=None, request=None, routed=None, *, begun=None)`` (the names of
            the tools the request declared: an encoder that must name a streamed call before
            its arguments waits for a name that is whole, `svir_proto._names`; the request of
            the encoder's
            own dialect being answered, whose options an answer repeats: the Responses API's
            response object, but for its instructions, a prompt the gateway would write four
            times more; what its path said (`route`): a Gemini stream asked without ``alt=sse``
            is one JSON array). ``begun``: the stream was begun by another writer (a relay
            that broke off), whose events this one's follow: the number the next event takes
            in a dialect that numbers them (Responses', whose encoder then writes no
            lifecycle of its own), the elements written of a Gemini array (`reframe`), else 0
            (the others' take it and write as they would: their failure needs no beginning).
        answer: the whole answer, for a client that asked for no stream:
            ``answer(result, model, response_id, created, request=None, lost=None)``, the
            dialect's one JSON object for a `Completion` (`svir_proto.answer.AnswerFold`
            makes one from events), or the `Failure` that it cannot be written (``lost``
            receives a sentence for each thing it could not write); ``None`` for a dialect that
            only streams.
        body_outcome: the `RequestFailed` of a response that is not a stream.
        error_body: the dialect's error body for a failure, and `error_status` its status.
        accept: the ``Accept`` header its requests send.
        content_type: the media type of its request bodies.
        key_variable: the environment variable its API key is read from by convention.
        sniff: whether a recorded body's first bytes are this dialect's stream.
        fields: the hub's paths (``parameters.stop_sequences``) that this dialect's requests
            name otherwise (``stop``), for what another dialect cannot carry of them
            (`TranslationError`).
        route: for a dialect whose path names the model (``path`` ``None``: Gemini), a request
            target read (`Routed`), or a `RequestError` for one that is not the dialect's;
            its ``read`` then takes the model and whether it streams: ``read(body, routed)``;
            ``owns`` says whether a path (no query) is one ``route`` reads.
        comments: whether its clients skip SSE comments (``: keep-alive``); the google-genai
            SDK reads a line that is not ``data:`` as JSON, so a Gemini stream has none.
    """

    name: DialectName
    request_type: type
    path: str | None
    parse: Callable[[bytes], Any]
    read: Callable[..., tuple[Any, bool]]
    to_hub: Callable[[Any], LLMRequest]
    from_hub: Callable[..., Any]
    decoder: Callable[..., DialectStreamDecoder]
    encoder: Callable[..., DialectStreamEncoder]
    body_outcome: Callable[..., RequestFailed]
    error_body: Callable[[Failure], bytes]
    error_status: Callable[[Failure], int]
    sniff: Callable[[bytes], bool]
    answer: Callable[..., bytes | Failure] | None = None
    auth: Callable[[str], list[tuple[str, str]]] | None = None
    """The headers that carry the key (Rule 3); ``None``: ``Authorization: Bearer``, as the
    `Endpoint` sends it."""
    accept: str = "text/event-stream"
    content_type: str = "application/json"
    key_variable: str = "OPENAI_API_KEY"
    fields: Mapping[str, str] = attrs.field(factory=dict)
    unread: Callable[[LLMRequest], list[str]] = lambda request: []
    """What the dialect's ``to_hub`` kept for its own API only (under its vendor key), a
    sentence each: lost on the way to another dialect but LLM-Stream, which carries it."""
    route: Callable[[str], Routed] | None = None
    owns: Callable[[str], bool] | None = None
    comments: bool = True
    models: ModelsAPI | None = None
    """Its API's model listing (Rule 5)."""
    reframe: Callable[[Routed], StreamReframer | None] | None = None
    """For a dialect whose clients may ask for a stream in another form than the SSE an
    upstream of the dialect is asked for (Gemini's array without ``alt=sse``: `Routed.sse`):
    what a relay writes the upstream's whole events with, in the client's form, their content
    as it came; ``None`` for a request answered in SSE."""
    carried: Callable[[Any, Any], Any] | None = None
    """For a dialect whose answers repeat the request's options: a request without what
    `unread` names, and, given the request a server of another dialect was asked read back
    in this one (or ``None``), without what did not come back: what that server is asked
    (see `as_sent`)."""

    def target(self, request: Any, endpoint: Endpoint) -> str:
        """The request's path on ``endpoint`` (Rule 2)."""
        if self.path is not None:
            return endpoint.prefix + self.path
        return self.root(endpoint) + str(request.target())

    def root(self, endpoint: Endpoint) -> str:
        """Where the request targets of a dialect whose path names the API version (Gemini's)
        begin on ``endpoint``: its prefix without a version (Rule 2), the target's goes."""
        if self.path is not None:
            return endpoint.prefix
        return _VERSION.sub("", endpoint.prefix.removesuffix("/v1"))

    def headers(self, head: list[tuple[str, str]], endpoint: Endpoint) -> list[tuple[str, str]]:
        """``head`` (an `Endpoint`'s headers, which send the key as a bearer token) with the
        endpoint's key where this dialect sends it instead (Rule 3), unless the endpoint sends
        it as a bearer token whatever the dialect (`Endpoint.bearer`); a header the caller set
        stays."""
        api_key = endpoint.api_key
        if api_key is None or self.auth is None or endpoint.bearer:
            return head
        bearer = ("Authorization", f"Bearer {api_key}")
        kept = [item for item in head if item != bearer]
        taken = {k.lower() for k, _ in kept}
        return kept + [(k, v) for k, v in self.auth(api_key) if k.lower() not in taken]

    def new_decoder(
        self,
        declared: Collection[str] | None,
        *,
        max_event_size: int,
        max_result_size: int,
        max_tool_calls: int,
        keep_text: bool = True,
        errors: Errors,
    ) -> DialectStreamDecoder:
        """The stream decoder for an answer to a request that declared these tools;
        ``keep_text=False``: one that keeps neither the text nor the reasoning in its
        ``result``, nor bounds them (a relay's: every decoder's ``keep_text``)."""
        return self.decoder(
            declared_tools=declared if declared else None,
            max_event_size=max_event_size,
            max_result_size=max_result_size,
            max_tool_calls=max_tool_calls,
            keep_text=keep_text,
            errors=errors,
        )


def _without(
    option: str, make: Callable[..., DialectStreamDecoder]
) -> Callable[..., DialectStreamDecoder]:
    """``make`` for the options of `DialectSpec.new_decoder`, but one it does not take."""

    def decoder(**options: Any) -> DialectStreamDecoder:
        options.pop(option, None)
        return make(**options)

    return decoder


def _streams(parse: Callable[[bytes], Any]) -> Callable[[bytes], tuple[Any, bool]]:
    """`DialectSpec.read` for a dialect whose typed request keeps ``stream``."""

    def read(body: bytes) -> tuple[Any, bool]:
        request = parse(body)
        return request, request.stream is True

    return read


def _parse_chat(body: bytes) -> Any:
    return _read_chat(body, stream_only=True)[0]


def _read_chat(body: bytes, *, stream_only: bool = False) -> tuple[Any, bool]:
    """A Chat request and whether it streams: a `ChatRequest` always does, so ``stream``
    (false, or absent: OpenAI's default) is read here and taken out of it; ``stream_only``:
    refuse a request that does not stream (`DialectSpec.parse`)."""
    from ._json import MAX_REQUEST_VALUES, canonical
    from .llmstream.request import RequestError
    from .openai.request import ChatRequest

    try:
        doc = canonical(body, max_values=MAX_REQUEST_VALUES)
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise RequestError("$", f"the body is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise RequestError("$", "the body must be a JSON object")
    stream = doc.pop("stream", None)
    if stream is not None and not isinstance(stream, bool):
        raise RequestError("$.stream", f"must be a boolean, not {stream!r}")
    if stream_only and not stream:  # OpenAI's default is not to stream
        raise RequestError(
            "$.stream", 'not a stream, which the hub reads only (send "stream": true)'
        )
    if not stream:  # a whole answer: its usage is in it, as OpenAI's always is
        doc.pop("stream_options", None)
    try:
        return ChatRequest.from_openai(doc), stream is True
    except (ValueError, TypeError) as exc:  # its messages begin with the path
        where, colon, problem = str(exc).partition(": ")
        if colon and _PATH.fullmatch(where):
            raise RequestError("$." + where, problem) from None
        raise RequestError("$", str(exc)) from None


_PATH = re.compile(r"[A-Za-z_]\w*(?:\[\d+\]|\.[A-Za-z_]\w*)*")
"""A path in `ChatRequest.from_openai`'s messages (``messages[0].content``)."""


def _models(api: Literal["openai", "anthropic", "gemini"]) -> ModelsAPI:
    """The listing of an API (Rule 5), from its package's ``models`` module."""
    models = importlib.import_module(f".{api}.models", __package__)
    return ModelsAPI(
        name=api,
        read=models.read_models,
        write=models.models_json,
        every=models.EVERY,
        paging=models.PAGING,
    )


def _chat() -> DialectSpec:
    from . import translate
    from .openai import answer, encoder, request, status, stream

    asked = request.ChatRequest  # the lambdas' own ``request`` is the client's request
    return DialectSpec(
        name="chat",
        models=_models("openai"),
        request_type=request.ChatRequest,
        path="/chat/completions",
        parse=_parse_chat,
        read=_read_chat,
        to_hub=translate.openai_to_llm,
        unread=translate.openai_unread,
        from_hub=translate.llm_to_openai,
        decoder=_without("max_tool_calls", stream.ChatStreamDecoder),
        encoder=lambda model, rid, created, declared_tools=None, request=None, routed=None, **_: (
            encoder.ChatStreamEncoder(
                tool_call_deltas=True,
                model=model,
                response_id=rid or "chatcmpl-svir",
                created=created,
                usage=not isinstance(request, asked) or request.include_usage,
            )
        ),
        answer=lambda result, model, rid, created, request=None, lost=None: answer.chat_completion(
            result, response_id=rid or "chatcmpl-svir", model=model, created=created, lost=lost
        ),
        body_outcome=status.body_outcome,
        error_body=status.error_body,
        error_status=status.error_status,
        sniff=lambda head: head.startswith(b"data:"),
        fields=translate.CHAT_FIELDS,
    )


def _messages() -> DialectSpec:
    from .anthropic import answer, encoder, hub, request, status, stream

    return DialectSpec(
        name="messages",
        models=_models("anthropic"),
        request_type=request.MessagesRequest,
        path="/messages",
        parse=request.MessagesRequest.parse,
        read=_streams(request.MessagesRequest.parse),
        to_hub=hub.to_hub,
        unread=hub.unread,
        from_hub=hub.from_hub,
        decoder=stream.MessagesStreamDecoder,
        encoder=lambda model, rid, created, declared_tools=None, request=None, routed=None, **_: (
            encoder.MessagesStreamEncoder(
                model=model,
                message_id=rid or "msg_svir",
                created=created,
                declared_tools=declared_tools,
            )
        ),
        answer=lambda result, model, rid, created, request=None, lost=None: answer.message(
            result, message_id=rid or "msg_svir", model=model, lost=lost
        ),
        body_outcome=status.body_outcome,
        error_body=status.error_body,
        error_status=status.error_status,
        auth=lambda key: [
            (k, v) for k, v in request.headers(key) if k in ("x-api-key", "anthropic-version")
        ],
        sniff=lambda head: b"message_start" in head,
        key_variable="ANTHROPIC_API_KEY",
        fields=hub.FIELDS,
    )


def _responses() -> DialectSpec:
    from .openai import status
    from .responses import answer, encoder, hub, request, stream

    return DialectSpec(
        name="responses",
        models=_models("openai"),
        request_type=request.ResponsesRequest,
        path="/responses",
        parse=request.ResponsesRequest.parse,
        read=_streams(request.ResponsesRequest.parse),
        to_hub=hub.to_hub,
        unread=hub.unread,
        carried=hub.carried,
        from_hub=hub.from_hub,
        decoder=stream.ResponsesStreamDecoder,
        encoder=lambda model, rid, created, declared_tools=None, request=None, routed=None, **kw: (
            encoder.ResponsesStreamEncoder(
                model=model,
                response_id=rid or "resp_svir",
                created=created,
                declared_tools=declared_tools,
                request=request,
                begun=kw.get("begun"),
                repeat_instructions=False,  # a prompt, written again in every lifecycle event
            )
        ),
        answer=lambda result, model, rid, created, request=None, lost=None: answer.response(
            result,
            response_id=rid or "resp_svir",
            model=model,
            created=created,
            request=request,
            repeat_instructions=False,
            lost=lost,
        ),
        body_outcome=status.body_outcome,
        error_body=status.error_body,
        error_status=status.error_status,
        sniff=lambda head: b'"type":"response.' in head or b"event: response." in head,
        fields=hub.FIELDS,
    )


def _parse_gemini(body: bytes) -> Any:
    from .llmstream.request import RequestError

    raise RequestError(
        "$", "a Gemini request names its model in its path: GeminiRequest.parse(body, model=...)"
    )


def _read_gemini(body: bytes, routed: Routed | None = None) -> tuple[Any, bool]:
    from .gemini.request import GeminiRequest

    if routed is None:
        return _parse_gemini(body), True
    request = GeminiRequest.parse(
        body, model=routed.model, stream=routed.stream, version=routed.version
    )
    return request, routed.stream


def _route_gemini(target: str) -> Routed:
    from .gemini import endpoint

    where = endpoint.parse_target(target)  # (its model is one segment: `target` takes it)
    upstream = endpoint.target(where.model, stream=where.stream, version=where.version)
    return Routed(
        model=where.model,
        stream=where.stream,
        sse=where.alt == "sse",
        target=upstream,
        version=where.version,
    )


def _gemini() -> DialectSpec:
    from .gemini import answer, encoder, endpoint, hub, request, status, stream

    return DialectSpec(
        name="gemini",
        models=_models("gemini"),
        request_type=request.GeminiRequest,
        path=None,
        parse=_parse_gemini,
        read=_read_gemini,
        route=_route_gemini,
        owns=endpoint.is_target,
        comments=False,
        reframe=lambda routed: encoder.ArrayWriter() if routed.stream and not routed.sse else None,
        to_hub=hub.to_hub,
        unread=hub.unread,
        from_hub=hub.from_hub,
        decoder=stream.GeminiStreamDecoder,
        encoder=lambda model, rid, created, declared_tools=None, request=None, routed=None, **kw: (
            encoder.GeminiStreamEncoder(
                model=model,
                response_id=rid,
                created=created,
                sse=routed is None or routed.sse,
                opened=kw.get("begun") or 0,
            )
        ),
        answer=lambda result, model, rid, created, request=None, lost=None: (
            answer.generate_content_response(
                result, model=model, response_id=rid, created=created, lost=lost
            )
        ),
        body_outcome=status.body_outcome,
        error_body=status.error_body,
        error_status=status.error_status,
        sniff=lambda head: (
            head.startswith(b"data:") and (b'"candidates"' in head or b'"promptFeedback"' in head)
        ),
        auth=lambda key: [(endpoint.API_KEY_HEADER, key)],
        key_variable="GEMINI_API_KEY",
        fields=hub.FIELDS,
    )


def _as_llm_stream(request: Any, lost: list[str] | None = None) -> Any:
    """The neutral request as an LLM-Stream request: itself, unless a message gives an image
    by URL (the hub's ``linked``), which the draft cannot carry.

    Raises:
        ValueError: such an image, named.
    """
    for i, m in enumerate(request.messages):
        if message_linked(m):
            raise ValueError(
                f"{message_path(request, i)}.content: an image by URL cannot go to "
                "LLM-Stream, which carries images as data (draft 4.3)"
            )
    return _without_paths(request)  # (the client's layout is no upstream's business: r7)


def _without_paths(request: LLMRequest) -> LLMRequest:
    """The request without the hub's ``paths`` (where a client's messages were in its own
    request, for the notes): not taken from an LLM-Stream client, whose messages are where
    they are (review 50 r1), nor sent to an LLM-Stream server (review 51 r7)."""
    ours = request.extensions.get(HUB_EXTENSION)
    if not isinstance(ours, dict) or "paths" not in ours:
        return request
    rest = {k: v for k, v in ours.items() if k != "paths"}
    extensions = {k: v for k, v in request.extensions.items() if k != HUB_EXTENSION}
    if rest:
        extensions[HUB_EXTENSION] = rest
    return attrs.evolve(request, extensions=extensions)


def _llm_stream() -> DialectSpec:
    from . import translate
    from .llmstream import _status as status
    from .llmstream import negotiate, request, stream

    return DialectSpec(
        name="llm-stream",
        models=_models("openai"),
        request_type=request.LLMRequest,
        path="/chat/completions",
        parse=request.LLMRequest.parse,
        read=lambda body: (request.LLMRequest.parse(body), True),  # the draft only streams
        to_hub=_without_paths,
        from_hub=_as_llm_stream,
        decoder=_without("max_tool_calls", stream.LLMStreamDecoder),
        encoder=lambda model, rid, created, declared_tools=None, request=None, routed=None, **_: (
            translate.OpenAIToLLMStream(model=model, request_id=rid or None, created=created)
        ),
        body_outcome=status.body_outcome,
        error_body=status.error_body,
        error_status=status.error_status,
        sniff=lambda head: head.startswith(b"event: stream.start"),
        accept=negotiate.ACCEPT_LLM_STREAM,
        content_type=request.MEDIA_TYPE,
        fields={  # its request is the hub's
            f"parameters.{name}": f"parameters.{name}"
            for name in ("max_tokens", "temperature", "top_p", "stop_sequences")
        },
    )


_BUILDERS: Final[dict[str, Callable[[], DialectSpec]]] = {
    "chat": _chat,
    "messages": _messages,
    "responses": _responses,
    "gemini": _gemini,
    "llm-stream": _llm_stream,
}
# the package that holds each dialect's request type, for `dialect_of` without imports
_PACKAGES: Final = {
    "openai": "chat",
    "anthropic": "messages",
    "responses": "responses",
    "gemini": "gemini",
    "llmstream": "llm-stream",
}
_BUILT: dict[str, DialectSpec] = {}
_VERSION: Final = re.compile(r"/v1[a-z0-9]*$")


def dialect(name: str) -> DialectSpec:
    """The dialect called ``name`` (`DIALECTS`).

    Raises:
        ValueError: no such dialect, or its package is not part of this installation.
    """
    spec = _BUILT.get(name)
    if spec is None:
        builder = _BUILDERS.get(name)
        if builder is None:
            known = ", ".join(n for n in DIALECTS if n in _BUILDERS)
            raise ValueError(f"no dialect {name!r}: the dialects are {known}")
        spec = _BUILT[name] = builder()
    return spec


def dialect_of(request: object) -> DialectSpec | None:
    """The dialect of a typed request, or ``None`` for anything else."""
    module = type(request).__module__
    if not module.startswith("svir_proto."):
        return None
    name = _PACKAGES.get(module.split(".")[1])
    if name is None:
        return None
    spec = dialect(name)
    return spec if isinstance(request, spec.request_type) else None


SNIFF_SIZE: Final = 4096
"""Bytes of a recorded body `detect` reads: its first event, whatever the dialect."""


def detect(body: bytes) -> DialectName:
    """The dialect of a recorded stream body, from its first event: LLM-Stream's
    ``stream.start``, Anthropic's ``message_start``, the Responses API's ``response.created``,
    Gemini's ``candidates``; OpenAI's Chat Completions when none of them."""
    head = body[:SNIFF_SIZE].lstrip(b"\xef\xbb\xbf \r\n")
    end = head.find(b"\n\n")
    first = head if end < 0 else head[:end]
    for name in ("llm-stream", "messages", "responses", "gemini"):
        if name in _BUILDERS and dialect(name).sniff(first):
            return name
    return "chat"


def translate_request(
    request: object,
    to: str,
    *,
    neutral: LLMRequest | None = None,
    lost: list[str] | None = None,
) -> Any:
    """``request`` (of any dialect) as a request of dialect ``to``, through the hub (Rule 4);
    ``neutral``: the request's neutral form, when the caller has made it already; ``lost``: a
    list that receives a sentence for each thing ``to`` has no field for (its ``from_hub``).

    Raises:
        TypeError: ``request`` is not a typed request of a dialect.
        ValueError: no dialect ``to``; or what the target cannot carry (its ``from_hub``), a
            reference to another dialect's server state among it (`svir_proto.hub.stateful`).
            A `TranslationError` when that is one field the request names (``$.stop``).
    """
    source = dialect_of(request)
    if source is None:
        raise TypeError(f"not a request of any dialect: {request!r}")
    target = dialect(to)
    if source is target:
        return request
    if neutral is None:
        neutral = source.to_hub(request)
    state = stateful(neutral)
    if state is not None and state[0] != target.name:
        hint = (
            " (a client that refers to its earlier answers' items, thinking them stored, sends "
            "them whole when it asks with store false: the AI SDK's Responses provider, "
            "providerOptions.openai.store)"
            if state[0] == "responses"
            else ""
        )
        raise ValueError(
            f"{', '.join(state[1])}: only a {state[0]} server can read this (what it keeps, "
            f"or an item only its API has), which a {target.name} upstream cannot; send the "
            f"context itself{hint}"
        )
    try:
        translated = target.from_hub(neutral, lost=lost)
    except ValueError as exc:  # its message begins with the hub's path, if one field is at fault
        where, colon, problem = str(exc).partition(": ")
        field = source.fields.get(where) if colon else None
        if field is None:
            raise
        raise TranslationError(f"$.{field}", problem) from exc
    if lost is not None and not _keeps_all(source, target):
        lost += source.unread(neutral)
    return translated


def as_sent(request: DialectRequest, to: DialectName, *, neutral: LLMRequest | None = None) -> Any:
    """``request`` as far as `translate_request` asks a server of dialect ``to`` its options:
    for an answer that repeats them (the Responses API's response object), so that it does
    not claim what no server was asked. Without what only its own dialect reads (what its
    ``unread`` names), unless ``to`` carries that too; and without the options that ``to``
    has no field for: the options go to ``to`` and come back (the conversation left out: one
    user message for all of it), and what did not come back is left out (the
    dialect's ``carried``; review 49 2a: whatever its ``from_hub`` says lost, as some drop
    without a word). A dialect whose answers repeat no option (no ``carried``) gets its
    request back as it is, at no cost.

    Args:
        neutral: the request's ``to_hub``, when made already.

    Raises:
        TypeError: ``request`` is of no dialect.
    """
    source = dialect_of(request)
    if source is None:
        raise TypeError(f"not a request of any dialect: {request!r}")
    target = dialect(to)
    if source.carried is None or _keeps_all(source, target):
        return request
    if neutral is None:
        neutral = source.to_hub(request)
    options = attrs.evolve(neutral, messages=(LLMMessage(role="user", content="."),))
    try:
        back = source.from_hub(target.to_hub(target.from_hub(options, lost=[])), lost=[])
    except ValueError:  # (what ``to`` refuses, `translate_request` refused already)
        back = None
    return source.carried(request, back)


def _keeps_all(source: DialectSpec, target: DialectSpec) -> bool:
    """Whether a request of ``source`` reaches a server of ``target`` whole: its own dialect,
    or LLM-Stream, whose extensions carry every vendor's record."""
    return source is target or target.name == "llm-stream"
