"""One request and its response, above the HTTP framing: what every transport shares.

An `Exchange` knows what to send for a request of either dialect, or for the model listing
(method, target, headers, and a `RequestBody` of exact length), and turns what comes back into
events: `ResponseStarted`, then `RequestFailed`, `ModelsListed`, or the dialect's stream events
through `StreamEnded`. `svir_proto.connection.ClientConnection` puts h11 under it; the httpcore
and httpx transports, whose libraries do the HTTP framing themselves, drive it directly.

Rule 1 (wire reference 5): 401 and 403 are decided from the head alone; the body is not waited
    for, since some servers stall it. The exchange is then over.
Rule 2: a success is a stream only if it is ``text/event-stream``: anything else is
    ``NOT_A_STREAM``, whatever the status says; so is a 204 or 205, which carries no content
    (RFC 9110 15.3.5, 15.3.6), whatever its head says (review 49 3b: a 205's stream was
    decoded as the answer, where a relay passes the 205 on without it).
Rule 0: the head may take ``max_head_size`` bytes (16 KiB, h11's own default): counted exactly
    when the framing layer knows them, else from the status and headers.
Rule 3: any other failure is read from at most ``max_error_body`` bytes of its body; the
    exchange is over when the body ends or that many bytes arrived, whichever comes first.
Rule 4 (draft 7.2 and 5): for an LLM-Stream request, a 415, or a 2xx stream whose first event is
    not ``stream.start`` (a server that took the JSON as an OpenAI request: llama.cpp does), sets
    `Exchange.fall_back`. `next_attempt` then sends the request again once, in the OpenAI
    dialect, translated.
Rule 5: a body that stops early because the client gave up (a timeout, a cancel) or the
    connection dropped is ended for the decoder, and the result says why (``interrupted``).
Rule 6 (`next_attempt`): a failed request is sent again only as `plan_retry` allows, and only
    after a `RequestFailed`, so never once any of the answer has arrived.
Rule 8 (a relay, `PassThrough.relay`): the response is not judged, it is passed on: a 2xx
    ``text/event-stream`` body is watched as it passes (`ChatStreamWatcher`) and every
    other response is raw, its end a `StreamEnded` (``complete`` if the body ended where its
    framing said). Either way every body piece is kept in `Exchange.relayed` until taken. A
    head that fails by Rule 1 or Rule 7 is still a `RequestFailed`.
Rule 7 (wire reference 5; RFC 9110 8.4): the request asks for ``Accept-Encoding: identity``; a
    response in another content coding (a gzip body from a proxy that compresses anyway) cannot
    be read, and is a `RequestFailed` from the head alone, with code
    ``unexpected_content_encoding``, in every transport alike (`head_outcome`).

Nothing here does I/O or reads a clock: a ``Retry-After`` date needs the ``now`` the caller
passes with the head.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Final, Literal, TypedDict, final

import attrs

from ._models import path_id
from .body import RequestBody
from .dialects import (
    DialectName,
    DialectRequest,
    DialectSpec,
    DialectStreamDecoder,
    dialect,
    dialect_of,
)
from .errors import CallerProtocolError, Failure, FailureKind, PeerProtocolError, SvirProtocolError
from .events import (
    Completion,
    Event,
    RequestFailed,
    ResponseStarted,
    Retrying,
    StreamEnded,
    TextRun,
)
from .llmstream.negotiate import ACCEPT_LLM_STREAM, should_fall_back
from .llmstream.request import LLMRequest
from .llmstream.stream import LLMStreamDecoder
from .openai._runs import ChatStreamRuns
from .openai._toolcalls import DEFAULT_MAX_TOOL_CALLS
from .openai.endpoint import USER_AGENT, Endpoint, HeaderItems, request_headers
from .openai.models import ModelInfo
from .openai.request import ChatRequest
from .openai.retry import plan_retry, retry_delay
from .openai.status import MAX_ERROR_BODY, Headers, body_outcome, head_outcome
from .openai.stream import DEFAULT_MAX_RESULT_SIZE, ChatStreamDecoder
from .openai.watch import ChatStreamWatcher
from .sse import DEFAULT_MAX_EVENT_SIZE, Errors, ServerSentEvent, SSEDecoder

__all__ = [
    "DEFAULT_MAX_HEAD_SIZE",
    "DEFAULT_MAX_MODELS_BODY",
    "REQUEST_ID_HEADERS",
    "Exchange",
    "ExchangeEvent",
    "ExchangeOptions",
    "ModelsListed",
    "ModelsRequest",
    "PassThrough",
    "Request",
    "TargetForm",
    "check_options",
    "next_attempt",
]

REQUEST_ID_HEADERS: Final = ("x-request-id", "request-id", "apim-request-id", "x-ms-request-id")
"""Where servers put the id of a request, in the order they are read: OpenAI, vLLM and most
proxies (``x-request-id``), Anthropic (``request-id``), Azure (``apim-request-id``,
``x-ms-request-id``)."""
DEFAULT_MAX_HEAD_SIZE: Final = 16 * 1024
"""Bytes a response head may take: h11's own default (16 KiB). Servers send a few hundred."""
DEFAULT_MAX_MODELS_BODY: Final = 4 * 1024 * 1024
"""Bytes of a ``/v1/models`` answer (4 MiB): LM Studio with a hundred models answers about
60 KB; OpenAI's whole catalogue is under 20 KB."""


@final
@attrs.frozen(kw_only=True)
class ModelsRequest:
    """``GET /v1/models`` (wire reference section 6), or another dialect's API's listing
    (`svir_proto.dialects.ModelsAPI`: Anthropic's, Gemini's ``GET /v1beta/models``, with the
    query that asks for as many models as one answer holds), with the key where that API
    takes it; ``model``: that one model (``GET /v1/models/{model}``; its id as a path takes
    it: a caller encodes it).
    """

    dialect: DialectName = "chat"
    model: str | None = None

    def __attrs_post_init__(self) -> None:
        if self.model is not None and not path_id(self.model, one=self.dialect == "gemini"):
            raise ValueError(
                f"model must be an id a path can carry (`svir_proto._models.path_id`: no "
                f"'.' or '..' segment, no '?', '#', '\\', space or control), not {self.model!r}"
            )


@final
@attrs.frozen(kw_only=True)
class ModelsListed:
    """The answer to a `ModelsRequest`: the models, in the server's order (see `ModelInfo`);
    ``more``: the server said it has more than this answer holds (a page of them)."""

    models: tuple[ModelInfo, ...]
    more: bool = False


@final
@attrs.define(kw_only=True)
class PassThrough:
    """A request whose body the caller sends itself, as it arrives from elsewhere (a gateway
    forwarding its client's body): only its length and type are known up front.

    ``declared_tools`` and ``include_usage`` may be set while the body passes (the gateway
    reads them from it); the decoder takes them when the response begins.

    ``relay``: the response is passed on as it came (Rule 8): its body's pieces are collected
    in `Exchange.relayed`; a success that is a stream is also decoded (to watch it: its text
    is not kept), and anything else is not interpreted at all. ``method`` and ``target`` (the
    path below the endpoint's ``/v1``; for a dialect whose targets name the API version,
    Gemini's, from the endpoint's root: `DialectSpec.root`) say what to send, ``accept`` what
    the answer may be; ``headers`` are added to the request's (a request id), and the key goes
    where the dialect's API expects it (`DialectSpec.headers`). A GET or a HEAD has no body:
    ``content_length`` 0; the answer to a HEAD has none either (RFC 9110 9.3.2). ``dialect``
    (`svir_proto.dialects`) is the body's, whose decoder reads the answer: a relayed OpenAI
    stream is watched with `ChatStreamWatcher`, any other dialect's with its decoder.
    """

    content_length: int
    content_type: str = "application/json"
    declared_tools: frozenset[str] | None = None
    include_usage: bool = False
    relay: bool = False
    accept: str = "text/event-stream"
    method: Literal["POST", "GET", "HEAD"] = "POST"
    target: str = "/chat/completions"
    headers: tuple[tuple[str, str], ...] = ()
    dialect: DialectName = "chat"

    def __attrs_post_init__(self) -> None:
        if type(self.content_length) is not int or self.content_length < 0:
            raise ValueError(f"content_length must be an int >= 0, not {self.content_length!r}")
        if not self.target.startswith("/"):
            raise ValueError(f"target must be a path (below /v1, or the root), not {self.target!r}")


Request = ChatRequest | LLMRequest | ModelsRequest | PassThrough | DialectRequest
"""What an exchange sends: a typed request of any dialect (`svir_proto.dialects`), the model
listing, or a body the caller passes through."""
ExchangeEvent = Event | ModelsListed | TextRun
"""What an exchange gives: the dialect's events, the model listing, and with ``text_runs``
runs of text deltas."""
Phase = Literal["head", "probe", "stream", "error", "models", "raw", "over"]
TargetForm = Literal["origin", "absolute"]
"""The request target (RFC 9112 3.2): the path (``origin``), or the whole URL (``absolute``,
for a request sent to an HTTP proxy)."""


class ExchangeOptions(TypedDict, total=False):
    """The keyword arguments every client passes on to each `Exchange` (see its Args): one
    definition, so that a transport's ``Client(..., **options)`` is typed and checked
    (`check_options`) when it is made, not at its first request."""

    user_agent: str
    max_head_size: int
    max_error_body: int
    max_models_body: int
    max_event_size: int
    max_result_size: int
    max_tool_calls: int
    think_tags: bool
    think_opened: bool
    keep_text: bool
    text_runs: bool
    errors: Errors


_BOUNDS: Final = frozenset(
    {
        "max_head_size",
        "max_error_body",
        "max_models_body",
        "max_event_size",
        "max_result_size",
        "max_tool_calls",
    }
)


def check_options(options: Mapping[str, object], *, where: str = "Exchange()") -> ExchangeOptions:
    """``options`` checked as `ExchangeOptions`: each name known, each value of its type.

    Raises:
        TypeError: an unknown name (with the nearest known one, if any), or a value of the
            wrong type.
        ValueError: a bound that is not a positive int, ``errors`` neither ``"strict"`` nor
            ``"replace"``, a ``user_agent`` that is not one line, ``text_runs`` without
            ``keep_text=False``.
    """
    known = ExchangeOptions.__annotations__
    for name, value in options.items():
        if name not in known:
            import difflib  # only on this error path

            near = difflib.get_close_matches(name, [*known, *_CLIENT_WORDS], n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise TypeError(f"{where} got an unexpected keyword argument {name!r}{hint}")
        if name in _BOUNDS:
            if type(value) is not int or value < 1:
                raise ValueError(f"{where}: {name} must be a positive int, not {value!r}")
        elif name in ("think_tags", "think_opened", "keep_text", "text_runs"):
            if type(value) is not bool:
                raise TypeError(f"{where}: {name} must be a bool, not {value!r}")
        elif name == "errors":
            if value not in ("strict", "replace"):
                raise ValueError(f"{where}: errors must be 'strict' or 'replace', not {value!r}")
        elif not isinstance(value, str) or not value or "\r" in value or "\n" in value:
            raise ValueError(f"{where}: user_agent must be a non-empty line, not {value!r}")
    if options.get("text_runs") and options.get("keep_text", True):
        raise ValueError(f"{where}: text_runs needs keep_text=False (a run's text is not decoded)")
    return options  # type: ignore[return-value]


# what a client takes besides the exchange's options: for the hint of an unknown name
_CLIENT_WORDS: Final = ("timeouts", "retries", "headers", "api_key", "raise_on_failure")


class Exchange:
    """One request and its response; see the module docstring's rules.

    Args:
        endpoint: the server.
        request: what to send.
        body: ``request.body()``, made beforehand (in a worker thread, say: a long
            conversation takes a while to encode), for a typed request with a body; made now
            when ``None``.
        headers: the caller's own request headers, which replace svir-proto's of the same
            name (`Endpoint.headers`, `request_headers` says which they may not set).
        target_form: ``"absolute"`` to send the whole URL as the request target (to an HTTP
            proxy); ``"origin"`` (the path) otherwise.
        user_agent: the ``User-Agent`` header.
        max_head_size: bytes the response head may take (Rule 0).
        max_error_body: bytes of an error body that are read (Rule 3).
        max_models_body: bytes a model listing may take.
        max_event_size, max_result_size, max_tool_calls, think_tags, think_opened, errors:
            passed to the dialect's decoder (`ChatStreamDecoder`, `LLMStreamDecoder`, ...).
        keep_text: ``False``: the answer's text, reasoning and refusal are not kept in
            `result` (its ``text`` is empty), nor bounded by ``max_result_size``, whatever the
            dialect (each decoder's ``keep_text``: a gateway that passes the events on); tool
            calls are still assembled and bounded.
        text_runs: a Chat Completions stream gives runs of its plain text deltas as one
            `TextRun` each, the texts' JSON as the server wrote them, instead of a `TextDelta`
            per chunk: for a translator that copies them (the gateway, to LLM-Stream; see
            `svir_proto.openai._runs`). Needs ``keep_text=False``; no other dialect gives
            runs, and neither does a relay.

    What to send: `method`, `target`, `headers` and `body` (``None`` for a GET, and for a
    `PassThrough`, whose body the caller sends), `content_length` bytes of it.

    What came back, each returning the events it produced, in order:
        `receive_head` (the status and headers), then `receive_body` for each piece of the
        body, then `end_of_body`; or `interrupt` when the body stops early. Once `finished`,
        the last event returned was the terminal one (`StreamEnded`, `RequestFailed` or
        `ModelsListed`): stop reading, unless the connection is to be reused. `status`,
        `response_headers` and `request_id` describe the response once its head came.

    Raises:
        TypeError, ValueError: from the constructor, a request or an option that is wrong.
        PeerProtocolError: from `receive_body` and `end_of_body`, when the body breaks the
            dialect or a bound (the decoder's rules); the events before it are returned first.
        CallerProtocolError: a call out of order (a body before the head).
    """

    def __init__(
        self,
        endpoint: Endpoint,
        request: Request,
        *,
        body: RequestBody | None = None,
        headers: HeaderItems | None = None,
        target_form: TargetForm = "origin",
        user_agent: str = USER_AGENT,
        max_head_size: int = DEFAULT_MAX_HEAD_SIZE,
        max_error_body: int = MAX_ERROR_BODY,
        max_models_body: int = DEFAULT_MAX_MODELS_BODY,
        max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
        max_result_size: int = DEFAULT_MAX_RESULT_SIZE,
        max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS,
        think_tags: bool = True,
        think_opened: bool = False,
        keep_text: bool = True,
        text_runs: bool = False,
        errors: Errors = "strict",
    ) -> None:
        check_options(
            {
                "user_agent": user_agent,
                "max_head_size": max_head_size,
                "max_error_body": max_error_body,
                "max_models_body": max_models_body,
                "max_event_size": max_event_size,
                "max_result_size": max_result_size,
                "max_tool_calls": max_tool_calls,
                "think_tags": think_tags,
                "think_opened": think_opened,
                "keep_text": keep_text,
                "text_runs": text_runs,
                "errors": errors,
            }
        )
        if target_form not in ("origin", "absolute"):
            raise ValueError(f"target_form must be 'origin' or 'absolute', not {target_form!r}")
        if body is not None and isinstance(request, (ModelsRequest, PassThrough)):
            raise TypeError(f"a {type(request).__name__} takes no body, its caller sends it")
        self.endpoint: Final = endpoint
        self.request: Final = request
        self._spec: DialectSpec | None = None  # a dialect other than OpenAI's and LLM-Stream's
        if isinstance(request, ModelsRequest):
            self.method = "GET"
            listing = dialect(request.dialect)
            if request.dialect != "chat":
                self._spec = listing
            api = listing.models
            assert api is not None  # (every dialect's API lists its models)
            path = listing.root(endpoint) + api.path(request.model)
            if request.model is None:
                path += api.every
            self.body = None
            head = endpoint.headers(accept="application/json", user_agent=user_agent, extra=headers)
            head = listing.headers(head, endpoint)
        elif isinstance(request, (ChatRequest, LLMRequest)):
            self.method = "POST"
            path = endpoint.chat_completions_path
            self.body = request.body() if body is None else body
            head = endpoint.headers(
                content_length=self.body.content_length,
                content_type=self.body.content_type,
                accept=ACCEPT_LLM_STREAM
                if isinstance(request, LLMRequest)
                else "text/event-stream",
                user_agent=user_agent,
                extra=headers,
            )
        elif isinstance(request, PassThrough):
            if request.dialect != "chat":
                self._spec = dialect(request.dialect)
            self.method = request.method
            # a dialect whose target names the API version (Gemini's) has it from the root
            path = (endpoint.prefix if self._spec is None else self._spec.root(endpoint)) + (
                request.target
            )
            self.body = None  # the caller sends it, as it arrives
            head = endpoint.headers(
                content_length=request.content_length if request.method == "POST" else None,
                content_type=request.content_type,
                accept=request.accept,
                user_agent=user_agent,
                extra=[*request.headers, *request_headers(headers)] if headers else request.headers,
            )
            if self._spec is not None:  # the key where the dialect's API expects it
                head = self._spec.headers(head, endpoint)
        else:
            spec = dialect_of(request)
            if spec is None:
                raise TypeError(
                    "request must be a typed request of a dialect (ChatRequest, LLMRequest, "
                    f"MessagesRequest, ...), a ModelsRequest or a PassThrough: {request!r}"
                )
            self._spec = spec
            self.method = "POST"
            path = spec.target(request, endpoint)
            self.body = request.body() if body is None else body
            head = spec.headers(
                endpoint.headers(
                    content_length=self.body.content_length,
                    content_type=self.body.content_type,
                    accept=spec.accept,
                    user_agent=user_agent,
                    extra=headers,
                ),
                endpoint,
            )
        self.headers: Final = head
        self.content_length: Final = (
            self.body.content_length
            if self.body is not None
            else request.content_length
            if isinstance(request, PassThrough) and request.method == "POST"
            else 0
        )
        """The request body's length in bytes (0 for a GET)."""
        self.target: Final = (
            path if target_form == "origin" else f"{endpoint.scheme}://{endpoint.authority}{path}"
        )
        self.url: Final = f"{endpoint.scheme}://{endpoint.authority}{path}"
        """The request's whole URL (for a library that takes URLs: httpx, httpcore)."""
        self.status: int | None = None
        self.response_headers: tuple[tuple[str, str], ...] = ()
        """The response's headers once its head came: names lower-cased, values stripped."""
        self.fall_back = False
        self._terminal: ExchangeEvent | None = None
        self._max_event_size = max_event_size
        self._max_result_size = max_result_size
        self._max_tool_calls = max_tool_calls
        self._think_tags = think_tags
        self._think_opened = think_opened
        self._keep_text = keep_text
        self._text_runs = text_runs
        self._errors: Errors = errors
        self.max_head_size: Final = max_head_size
        self._max_error_body = max_error_body
        self._max_models_body = max_models_body
        self._phase: Phase = "head"
        self._response_headers: Headers = ()
        self._now: float | None = None
        self._held: list[bytes] = []  # an error body, a model list, or an LLM-Stream's first bytes
        self._held_size = 0
        self._probe: SSEDecoder | None = None
        self._decoder: DialectStreamDecoder | None = None
        self._failure: Failure | None = None
        self._interrupted: str | None = None
        self.receive_body: Callable[[bytes], list[ExchangeEvent]] = self._before_head
        """Take a piece of the response body; returns the events it completes (the decoder's
        own ``feed`` while a stream is read, so the hot path has no call of ours in it)."""
        self.relayed: list[bytes] = []
        """A relay's body pieces not taken yet (Rule 8): take them after each piece."""
        self._relay = isinstance(request, PassThrough) and request.relay

    @property
    def request_id(self) -> str | None:
        """The server's id for this request (`REQUEST_ID_HEADERS`), once the head came: what
        to quote to its operator."""
        for name in REQUEST_ID_HEADERS:
            for key, value in self.response_headers:
                if key == name and value:
                    return value
        return None

    # -- what came back ------------------------------------------------------------------------

    @property
    def terminal(self) -> ExchangeEvent | None:
        """The terminal event (`StreamEnded`, `RequestFailed`, `ModelsListed`), once produced."""
        return self._terminal if self._decoder is None else self._decoder.terminal

    @property
    def error(self) -> BaseException | None:
        """The error the body broke the protocol with, once the events before it were returned
        (see `PullDecoder.error`); raise it rather than read on."""
        return None if self._decoder is None else self._decoder.error

    @property
    def pending(self) -> int:
        """Bytes of the stream's event not whole yet that its decoder holds (up to its
        ``max_event_size``); 0 for an answer that is no stream."""
        return 0 if self._decoder is None else self._decoder.pending

    @property
    def next_sequence(self) -> int | None:
        """For a stream whose events are numbered (Responses'): the number its next event
        takes, as far as its events were read whole (a gateway that ends a relay of it in its
        place numbers on from there); ``None`` for another, or before its first."""
        return getattr(self._decoder, "next_sequence", None)

    @property
    def events_seen(self) -> int:
        """Events a relayed stream has carried so far (Rule 8: the watcher counts them)."""
        decoder = self._decoder
        return decoder.seen if isinstance(decoder, ChatStreamWatcher) else 0

    @property
    def watcher(self) -> ChatStreamWatcher | None:
        """A relayed OpenAI stream's watcher (Rule 8), once its head came: its ``seen`` counts
        the events, as `events_seen` does."""
        decoder = self._decoder
        return decoder if isinstance(decoder, ChatStreamWatcher) else None

    @property
    def finished(self) -> bool:
        """The terminal event was produced; the response needs no more reading."""
        return self.terminal is not None

    @property
    def result(self) -> Completion:
        """The answer so far, also after a failure (``error``) or an interruption; without
        ``keep_text``, its ``text``, ``reasoning`` and ``refusal`` are empty."""
        if self._decoder is not None:
            result = self._decoder.result
        elif self._failure is not None:
            result = Completion(error=self._failure, closed=self._phase == "over")
        else:
            result = Completion()
        if self._interrupted is not None:
            result = attrs.evolve(result, interrupted=self._interrupted)
        return result

    def receive_head(
        self,
        status: int,
        headers: Iterable[tuple[bytes | str, bytes | str]],
        *,
        now: float | None = None,
        size: int | None = None,
        normal: bool = False,
    ) -> list[ExchangeEvent]:
        """The response's status and headers (Rules 0, 1, 2 and 4).

        Args:
            now: seconds since the epoch, to turn a ``Retry-After`` date into a delay.
            size: the head's bytes on the wire, if the framing layer knows them.
            normal: the headers are as `response_headers` keeps them already (``str``, names
                lower-cased, values stripped): a framing layer that read them so says it.

        Raises:
            PeerProtocolError: the head is larger than ``max_head_size``.
        """
        if self._phase != "head":
            raise CallerProtocolError("cannot receive a response head twice")
        h = tuple(headers)
        if size is None:  # "HTTP/1.1 200 OK\r\n", each "name: value\r\n", then "\r\n"
            size = 19 + sum(len(k) + len(v) + 4 for k, v in h)
        if size > self.max_head_size:
            raise PeerProtocolError(
                f"the response head is larger than max_head_size ({self.max_head_size} bytes)",
                offset=0,
                limit="max_head_size",
                limit_value=self.max_head_size,
            )
        self.status = status
        self._response_headers = h
        self._now = now
        started = ResponseStarted(
            status=status,
            headers=h  # type: ignore[arg-type]
            if normal
            else tuple(
                (
                    (k.decode("latin-1") if isinstance(k, bytes) else k).lower(),
                    (v.decode("latin-1") if isinstance(v, bytes) else v).strip(),
                )
                for k, v in h
            ),
        )
        self.response_headers = started.headers
        out: list[ExchangeEvent] = [started]
        request = self.request
        if isinstance(request, LLMRequest) and should_fall_back(status):
            self.fall_back = True  # Rule 4; the failure is still read from the body
        outcome = head_outcome(status, started.headers, now=now, normal=True)
        if status in (204, 205) and not self._relay and not isinstance(outcome, RequestFailed):
            message = f"HTTP {status}, which carries no content (RFC 9110 15.3): no answer"
            failure = Failure(kind=FailureKind.NOT_A_STREAM, message=message, status=status)
            outcome = RequestFailed(failure=failure)  # (Rule 2)
        if isinstance(outcome, RequestFailed):  # Rules 1, 2 and 7
            self._fail(outcome, out)
        elif self._relay:  # Rule 8
            kind = next((v for k, v in started.headers if k == "content-type"), "")
            if 200 <= status < 300 and kind.split(";")[0].strip().lower() == "text/event-stream":
                self._stream(out)
                decoder = self.receive_body
                relayed = self.relayed

                def watched(data: bytes) -> list[ExchangeEvent]:
                    relayed.append(data)
                    return decoder(data)

                self.receive_body = watched
            else:
                self._phase = "raw"
                self.receive_body = self._raw_body
        elif isinstance(request, ModelsRequest) and 200 <= status < 300:
            self._phase = "models"
            self.receive_body = self._models_body
        elif outcome is None:  # Rules 2 and 3
            self._phase = "error"
            self.receive_body = self._error_body
        elif isinstance(request, LLMRequest):  # Rule 4: is it LLM-Stream at all?
            self._phase = "probe"
            self._probe = SSEDecoder(max_event_size=self._max_event_size)
            self.receive_body = self._probe_body
        else:
            self._stream(out)
        return out

    def end_of_body(self) -> list[ExchangeEvent]:
        """The body ended where its framing said it would."""
        phase = self._phase
        if phase == "stream":
            assert self._decoder is not None
            return [*self._decoder.close()]
        out: list[ExchangeEvent] = []
        if phase == "raw":
            self._end_raw(out, complete=True)
        elif phase == "error":
            self._decide(out)
        elif phase == "models":
            body = b"".join(self._held)
            self._held = []
            self._phase = "over"
            request = self.request
            assert isinstance(request, ModelsRequest)
            api = dialect(request.dialect).models
            assert api is not None
            models, more = api.read(body, one=request.model is not None)
            listed = ModelsListed(models=models, more=more)
            self._terminal = listed
            out.append(listed)
        elif phase == "probe":  # the body ended before its first event: let the decoder say so
            self._stream(out, probe_result=False)
            assert self._decoder is not None
            out += self._decoder.close()
        elif phase == "head":
            raise CallerProtocolError("the body cannot end before the head arrived")
        return out

    def interrupt(self, reason: str) -> list[ExchangeEvent]:
        """The body stopped early (Rule 5): the client gave up, or the connection dropped.

        Returns the events that end the exchange as far as it got (a stream's `StreamEnded`,
        not complete; an error body's `RequestFailed` from what was read), and marks the result
        ``interrupted`` with ``reason``. Never raises for what the body held.
        """
        if self._interrupted is None and not self.finished:
            self._interrupted = reason
        if self.finished:
            return []
        out: list[ExchangeEvent] = []
        if self._phase == "probe":
            self._stream(out, probe_result=False)
        if self._decoder is not None:
            try:
                out += self._decoder.close()
            except SvirProtocolError as exc:  # what the body broke was raised already, or is lost
                out += exc.pending_events  # type: ignore[arg-type]
                exc.pending_events = ()  # returned now, not again with the error
        elif self._phase == "error":
            self._decide(out)
        elif self._phase == "raw":
            self._end_raw(out, complete=False)
        else:
            self._phase = "over"
        return out

    # -- the phases -------------------------------------------------------------------------

    def _before_head(self, data: bytes) -> list[ExchangeEvent]:
        if self._phase == "head":
            raise CallerProtocolError("cannot receive a body before the response head")
        return []  # the exchange is over: what follows is left unread

    def _raw_body(self, data: bytes) -> list[ExchangeEvent]:
        self.relayed.append(data)
        return []

    def _end_raw(self, out: list[ExchangeEvent], *, complete: bool) -> None:
        ended = StreamEnded(complete=complete, done=complete)
        self._phase = "over"
        self.receive_body = self._before_head
        self._terminal = ended
        out.append(ended)

    def _error_body(self, data: bytes) -> list[ExchangeEvent]:
        self._hold(data, self._max_error_body)
        out: list[ExchangeEvent] = []
        if self._held_size >= self._max_error_body:
            self._decide(out)  # Rule 3: enough read
        return out

    def _models_body(self, data: bytes) -> list[ExchangeEvent]:
        self._hold(data, None)
        if self._held_size > self._max_models_body:
            raise PeerProtocolError(
                f"the model list is larger than max_models_body ({self._max_models_body} bytes)",
                offset=self._max_models_body,
                limit="max_models_body",
                limit_value=self._max_models_body,
            )
        return []

    def _probe_body(self, data: bytes) -> list[ExchangeEvent]:
        assert self._probe is not None
        self._hold(data, None)
        for item in self._probe.feed(data):
            if isinstance(item, ServerSentEvent):
                out: list[ExchangeEvent] = []
                if item.event == "stream.start":
                    self._stream(out, probe_result=True)
                else:
                    self.fall_back = True
                    failure = Failure(
                        kind=FailureKind.NOT_A_STREAM,
                        message="the server answered an LLM-Stream request with a stream whose "
                        f"first event is {item.event!r}, not 'stream.start': it does not speak "
                        "LLM-Stream (draft section 5)",
                        code="not_llm_stream",
                        status=self.status,
                    )
                    self._fail(RequestFailed(failure=failure), out)
                return out
        return []

    def _hold(self, data: bytes, limit: int | None) -> None:
        if limit is not None:
            data = data[: limit - self._held_size]
        self._held.append(data)
        self._held_size += len(data)

    def _stream(self, out: list[ExchangeEvent], probe_result: bool | None = None) -> None:
        """Start decoding a stream; with a probe, replay the bytes it held."""
        request = self.request
        decoder: DialectStreamDecoder
        # a relay passes the bytes on as they came: a lone surrogate escape (valid JSON) is its
        # client's to join to the next chunk's (a pair split by a server that cuts text in
        # UTF-16 units; audit 36: the relay wrote its own error in the upstream's stream);
        # bytes that are not UTF-8 are not JSON text, and still fail
        errors: Errors = "surrogates" if self._relay and self._errors == "strict" else self._errors
        if self._spec is not None:
            assert not isinstance(request, ModelsRequest)
            decoder = self._spec.new_decoder(
                request.declared_tools if isinstance(request, PassThrough) else request.tool_names,
                max_event_size=self._max_event_size,
                max_result_size=self._max_result_size,
                max_tool_calls=self._max_tool_calls,
                keep_text=self._keep_text,
                errors=errors,
            )
        elif isinstance(request, (ChatRequest, PassThrough)):
            if isinstance(request, ChatRequest):
                declared = request.tool_names if request.tools else None
            else:
                declared = request.declared_tools
            kind: type[ChatStreamDecoder] = ChatStreamDecoder
            if self._relay:
                kind = ChatStreamWatcher  # Rule 8: watched
            elif self._text_runs:
                kind = ChatStreamRuns
            decoder = kind(
                declared_tools=declared,
                expect_usage=request.include_usage,
                think_tags=self._think_tags,
                think_opened=self._think_opened,
                keep_text=self._keep_text,
                max_tool_calls=self._max_tool_calls,
                max_event_size=self._max_event_size,
                max_result_size=self._max_result_size,
                errors=errors,
            )
        else:
            assert isinstance(request, LLMRequest), request
            decoder = LLMStreamDecoder(
                declared_tools=request.tool_names if request.tools else None,
                max_event_size=self._max_event_size,
                max_result_size=self._max_result_size,
                keep_text=self._keep_text,
                errors=errors,
            )
        self._decoder = decoder
        self._phase = "stream"
        self._probe = None
        held, self._held = self._held, []
        self.receive_body = decoder.feed  # type: ignore[assignment]
        if held and probe_result is not None:
            out += decoder.feed(b"".join(held))

    def _decide(self, out: list[ExchangeEvent]) -> None:
        """Rule 3: the failure, from the error body read so far."""
        assert self.status is not None
        body = b"".join(self._held)
        self._held = []
        spec = self._spec
        if spec is None and isinstance(self.request, LLMRequest):  # (a svir peer's error body
            spec = dialect("llm-stream")  # says its failure's own kind and code: review 64)
        outcome = body_outcome if spec is None else spec.body_outcome
        self._fail(outcome(self.status, self._response_headers, body, now=self._now), out)

    def _fail(self, failed: RequestFailed, out: list[ExchangeEvent]) -> None:
        self._failure = failed.failure
        self._phase = "over"
        self.receive_body = self._before_head
        self._terminal = failed
        out.append(failed)


def next_attempt(
    exchange: Exchange, failure: Failure, *, retried: int, retries: int
) -> tuple[Request, Retrying] | None:
    """What to send after a `RequestFailed`, if anything (Rules 4 and 6).

    Args:
        exchange: the exchange that failed.
        failure: its failure.
        retried: how many retries were made before this one (a fall-back not counted).
        retries: how many retries are allowed; ``0`` turns them off (the fall-back to the
            OpenAI dialect is negotiation, not a retry, and happens once either way).

    Returns:
        The request to send, and the `Retrying` event that tells the caller why and after what
        delay; or ``None``: the failure stands.
    """
    request = exchange.request
    attempt = retried + 2
    if exchange.fall_back and isinstance(request, LLMRequest):
        from .translate import llm_to_openai  # translation loads only when a server needs it

        try:
            translated = llm_to_openai(request)
        except ValueError:
            return None  # a part the OpenAI dialect cannot carry: the failure stands
        reason = (
            "the server does not speak LLM-Stream: sent again in the OpenAI dialect, "
            "translated (draft section 7.2)"
        )
        return translated, Retrying(attempt=attempt, delay=0.0, reason=reason, failure=failure)
    if retried >= retries:
        return None
    if isinstance(request, ChatRequest):
        plan = plan_retry(request, failure, attempt=retried + 1, max_attempts=retries + 1)
        if plan is None:
            return None
        return plan.request, Retrying(
            attempt=attempt, delay=plan.delay, reason=plan.reason, failure=failure
        )
    delay = retry_delay(failure, attempt=retried + 1)
    if delay is None:
        return None
    reason = f"{failure.kind.value}: retry"
    return request, Retrying(attempt=attempt, delay=delay, reason=reason, failure=failure)
