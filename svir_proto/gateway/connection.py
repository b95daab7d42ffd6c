"""`GatewayConnection`: one client connection of a gateway (draft section 7), HTTP/1.1 in the
server role (`_serverside`), sans-IO: it reads the client's requests and writes their answers.

From the client's bytes it gives events: forward this request upstream (`Forward`, then the
body's pieces as they come for a request passed through, `ForwardBody` and `ForwardEnd`),
prepare this request first (`Prepare`: a body held whole, to parse and translate, off the
event loop if it is large), answer this yourself (`LocalRequest`: health, readiness, metrics),
write these bytes (`Reply`: a whole answer the gateway made; `Interim`: ``100 Continue``), the
client went away (`ClientClosed`). It writes the client's answers: an answer translated from
upstream events (`upstream`), an answer relayed as the upstream sent it (`relay_head`,
`relay_data`, `relay_events`: without its comments for a Gemini client, as one JSON array for
one that asked for it, `relay_end`), and the
errors and keep-alives the gateway adds (`upstream_broken`, `keepalive`).

Rule 1 (routes): ``POST /v1/chat/completions`` goes upstream, and so do each vendor's own
    (``POST /v1/messages``, ``/v1/responses``, Gemini's ``/v1beta/models/{model}:
    streamGenerateContent?alt=sse`` and ``:generateContent``; without ``alt=sse``, the stream
    is one JSON array: `_array`); the model listing and one model (``GET /v1/models``,
    ``/v1/models/{id}``; Gemini's ``/v1beta/models``...) are answered in the API of the client
    that asks (`_vendor_of`), relayed as the upstream answers them when that is the upstream's
    API's, else read and written again (`_listing`); ``GET /healthz``,
    ``/readyz`` and ``/metrics`` are the server's; ``HEAD`` is ``GET`` without the body
    (RFC 9110 9.3.2); a known path with another method is 405 with ``Allow``; anything else is
    404 in OpenAI's error shape. A target in absolute form (``http://host/path``) is its path,
    and its host is the one Rule 4 checks (RFC 9112 3.2.2).
Rule 2 (dialects, draft 7.2 and 7.3): ``application/llm-request+json`` is an LLM-Stream request
    and gets an LLM-Stream response; ``application/json`` is an OpenAI request, answered in
    OpenAI's dialect, or in LLM-Stream's when ``Accept`` carries ``profile="llm-stream-1.0"``;
    any other media type is 415 with ``Accept-Post``, and a body in a content coding (a
    ``Content-Encoding`` but ``identity``) 415 with ``Accept-Encoding: identity`` (RFC 9110
    15.5.16). An LLM-Stream request must stream (the
    draft has no other mode): ``"stream": false`` is 400 naming ``$.stream``. A request that
    is translated and asks for no stream (Chat's ``stream`` false or absent, Messages' and
    Responses' false or absent) goes upstream as a stream all the same, and its answer is
    the whole answer in the client's dialect (`svir_proto.answer`, `DialectSpec.answer`):
    one JSON object, sent once the stream has ended, with its Content-Length; at most
    ``max_answer`` characters of it are held. A failure, a cut, or an answer the dialect
    cannot write (a Messages ``tool_use`` whose arguments are no object) is then an HTTP
    error (Rule 5), since nothing was sent before it. A request of the upstream's own dialect
    goes as it came and its answer is relayed, but for an LLM-Stream request (an LLM-Stream
    upstream: the gateway checks its calls, draft 8.2, and numbers what it adds), which is
    parsed and answered as translated ones are. A Gemini stream asked as one JSON array goes
    upstream as SSE, whose whole events are relayed as the array's elements, their bytes as
    they came (`DialectSpec.reframe`; attack 69 F4: decoded and encoded again, they lost
    what no event carries, a model's images, code and grounding).
Rule 3 (bounds, `GatewayConfig`): a head over ``max_head_size`` is 431; a body over
    ``max_body`` or, held, ``max_buffered`` is 413 before a byte of it is read; a request past
    ``max_streams`` is 503 with ``Retry-After``, also before its body, and one whose body, as
    its bytes come (not as its length says), would pass what ``max_buffered`` has left, then;
    ``Expect: 100-continue`` is answered once the request is admitted, and a refusal is sent
    instead of it. An OpenAI request's body up to ``hold_below`` bytes is read whole (the
    gateway then knows all of it), a larger one goes upstream piece by piece as it arrives; a
    body to translate (LLM-Stream's, or another dialect than the upstream's) is read whole, and
    holds of ``max_buffered`` what parsing it will build (`_cost.BodyCost`, taken as its
    pieces come: 503 while others hold the budget, 413 once it alone would pass it) until its
    preparation ends. While an answer is made, what a client sends
    after its request waits (the session stops reading past ``max_head_size``: a pipelined
    request is read once the answer is whole). After
    a request that ends its connection (``Connection: close``, HTTP/1.0 without keep-alive)
    nothing more is read: what follows is dropped (RFC 9112 9.6).
Rule 4 (authentication, `_http` Rule 2, wire reference 5): the host and the gateway's own token
    are checked first (421, 400 for two ``Authorization`` headers, 401 with
    ``WWW-Authenticate``); ``/metrics`` needs the token unless ``public_metrics``. On a vendor's
    path the token may also come where its SDK sends a key (``x-api-key`` on ``/v1/messages``,
    ``x-goog-api-key`` on Gemini's: `_KEY_HEADERS`), one such header. The upstream's
    key is the server's, never the client's, and an upstream 401 or 403 reaches the client as
    502 ``upstream_authentication``, never as its own 401.
Rule 5 (failures in the client's dialect): a failure before the answer began is an HTTP error
    status for both dialects (the upstream's own 4xx or 5xx kept; 502 when the upstream could
    not be reached or broke the protocol, 504 when it stalled, 503 when the gateway stops), with
    OpenAI's error object whose ``code`` is, for an LLM-Stream client, the draft's error code.
    A failure once the answer began is an LLM-Stream ``error`` with the draft's code and then
    exactly one ``stream.end``, or OpenAI's error chunk and ``[DONE]``, or the client dialect's
    error event (Messages' ``error``, Gemini's error chunk, the last element of its array;
    the Responses API's ``error`` and ``response.failed``, those of the upstream's response
    in a relayed stream it began, numbered on), after which the body ends. An answer that is
    no stream to a request for one is such a failure, but a relayed JSON answer (a server
    that ignored ``stream``, or could not read it: passed on as it came, the upstream's word,
    where a translated client, whose dialect has no place for it, gets the failure). A cut
    upstream stays a cut for the client: no end marker, and the body cut. A failure that came
    without a status (one inside the stream: of a client that asked for the whole answer, or
    the gateway's own) has its kind's (`FailureKind.status`: 429, 400, 503, 504, else 502),
    whatever the client's dialect.
Rule 6 (draft 8.1 and 8.2): nothing here logs a prompt or an answer; a tool call of a tool the
    request did not declare is not passed to an LLM-Stream client (an ``error`` instead).
Rule 7 (request ids): ``metadata.request_id`` of the request, else its ``X-Request-Id``, else
    one the gateway makes, is sent upstream as ``X-Request-Id``, returned in the response's
    ``X-Request-Id`` (and Anthropic's ``request-id`` to a Messages client, when the answer is
    the gateway's: a relayed one has the upstream's) and echoed on ``stream.start`` and
    ``stream.end``; an id that could not be a header line as it is is not taken (`_http` Rule
    4).
Rule 8 (what a translation loses, ARCHITECTURE "Dialects"): what the upstream's dialect has no
    field for, and does not refuse (its ``from_hub``'s ``lost``, and the client's dialect's
    own fields: `svir_proto.dialects.DialectSpec.unread`), is said on the answer, a
    ``Svir-Lost`` header field each, an RFC 9651 string (`MAX_LOST` at most), so that nothing
    is dropped silently.

It never does I/O and reads no clock: the server passes ``now`` where a timestamp is needed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Literal, final
from urllib.parse import parse_qsl, urlencode

import attrs

from .._http1 import BadHead, RequestHead
from .._jsonscan import RequestScanner, parsed_choices
from .._models import path_id
from .._pull import PullDecoder
from ..answer import AnswerFold
from ..body import RequestBody
from ..dialects import (
    DialectName,
    DialectSpec,
    DialectStreamEncoder,
    Routed,
    StreamReframer,
    TranslationError,
    as_sent,
    dialect,
    translate_request,
)
from ..errors import AnswerTooLarge, CallerProtocolError, Failure, FailureKind
from ..events import (
    BlockStopped,
    Completion,
    RequestFailed,
    ResponseStarted,
    Retrying,
    StreamEnded,
    StreamFailed,
    StreamStarted,
    TextDelta,
    TextRun,
    ToolCall,
)
from ..exchange import ExchangeEvent, ModelsListed, ModelsRequest, PassThrough
from ..llmstream.negotiate import (
    parse_media_type,
    request_dialect,
    response_dialect,
    unsupported_media_type,
)
from ..llmstream.request import LLMRequest, RequestError
from ..openai.status import error_json
from ..translate import OpenAIToLLMStream
from ._cost import BodyCost
from ._http import bearer, host_allowed, host_valid, reason, request_id, token_matches
from ._serverside import END, ServerSide
from .config import GatewayConfig, GatewayState

__all__ = [
    "ClientClosed",
    "Forward",
    "ForwardBody",
    "ForwardEnd",
    "GatewayConnection",
    "GatewayEvent",
    "Interim",
    "LocalRequest",
    "Prepare",
    "Reply",
]

Outcome = Literal["ok", "failed", "rejected", "cut", "cancelled"]
Phase = Literal["idle", "head", "body", "answer", "closed"]
Kind = Literal["chat", "messages", "responses", "gemini", "models", "model", "local"]
ClientDialect = Literal["openai", "llm-stream", "messages", "responses", "gemini"]
"""The dialect a client is answered in: ``openai`` is OpenAI's Chat Completions."""
_COMPLETIONS: Final = frozenset({"chat", "messages", "responses", "gemini"})
_WIRE: Final[dict[str, DialectName]] = {
    "openai": "chat", "llm-stream": "llm-stream", "messages": "messages", "responses": "responses",
    "gemini": "gemini",
}  # fmt: skip
_VENDORS: Final[dict[str, ClientDialect]] = {
    "messages": "messages", "responses": "responses", "gemini": "gemini"
}  # fmt: skip
"""A vendor's own path (`Kind`), and the dialect it takes and is answered in (Rule 2)."""
_KEY_HEADERS: Final = {"messages": "x-api-key", "gemini": "x-goog-api-key"}
"""Where a vendor's SDK sends its key on its own path: the gateway's token, there too (the
anthropic SDK's ``api_key``, google-genai's); ``Authorization: Bearer`` goes anywhere."""
_GEMINI_VERSIONS: Final = ("/v1beta/", "/v1alpha/")
"""Where only Gemini's API is (OpenAI's is ``/v1/``): a refusal of another path there (its
``countTokens``, the SDK's model listing: attack 62 F6) is in Gemini's shape too."""
_GEMINI_HEADERS: Final = frozenset({"x-goog-api-key", "x-goog-api-client"})
"""What only a Gemini client sends (its key; the header google-genai names itself in)."""
_ROUTES: Final[dict[str, tuple[Kind, tuple[str, ...]]]] = {
    "/v1/chat/completions": ("chat", ("POST",)),
    "/v1/messages": ("messages", ("POST",)),
    "/v1/responses": ("responses", ("POST",)),
    "/v1/models": ("models", ("GET", "HEAD")),
    "/v1beta/models": ("models", ("GET", "HEAD")),  # Gemini's (its /v1/models is OpenAI's here)
    "/v1alpha/models": ("models", ("GET", "HEAD")),
    "/healthz": ("local", ("GET", "HEAD")),
    "/readyz": ("local", ("GET", "HEAD")),
    "/metrics": ("local", ("GET", "HEAD")),
}
_ANSWERS: Final = frozenset({"text/event-stream", "application/json"})
_INVALID: Final = "invalid_request_error"
"""The error type (and code) of the gateway's refusals of a request: OpenAI's word for it."""
"""What a 2xx answer to a stream request may be to be relayed (JSON: a server that ignored
``stream``); anything else is a failure (Rule 5)."""
_SSE_HEAD: Final = [
    ("Content-Type", "text/event-stream"),
    ("Cache-Control", "no-cache"),
    ("X-Accel-Buffering", "no"),
]
_ARRAY_HEAD: Final = [("Content-Type", "application/json"), *_SSE_HEAD[1:]]
"""A stream that is one JSON array's (Gemini's without ``alt=sse``)."""
# RFC 9110 7.6.1 and RFC 9112 9.6: these describe one connection, never relayed
_HOP_BY_HOP: Final = frozenset(
    {
        "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
        "upgrade", "proxy-authenticate", "proxy-authorization", "content-length", "date",
        "server",
    }
)  # fmt: skip
_NOT_RELAYED: Final = _HOP_BY_HOP | {"x-request-id"}  # the request id is the gateway's (Rule 7)
_NOT_RELAYED_STREAM: Final = _NOT_RELAYED | {"cache-control", "x-accel-buffering"}  # ours
_KIND_OF_STATUS: Final = {
    401: FailureKind.AUTHENTICATION,
    408: FailureKind.TIMEOUT,
    503: FailureKind.OVERLOADED,
}
"""The kind of the gateway's own refusals (any other 4xx is rejected, a 5xx a server error)."""
PREPARE_IN_PLACE: Final = 256 * 1024
"""A body to translate whose parse builds up to this (`_cost.BodyCost`: some 140 small
messages, or 30 KiB of prose, a few milliseconds of parsing) is parsed and translated at once;
a larger one is handed to the server (`Prepare`) to do off its event loop, so one large
request does not stall the others."""
KEEPALIVE: Final = b": keep-alive\n\n"
BLANK_LINE: Final = b"\r\n"
"""The keep-alive of a dialect whose clients read no SSE comment (`DialectSpec.comments`):
an empty line, which ends no event (SSE's dispatch of an empty data buffer does nothing)."""


@final
@attrs.frozen(kw_only=True)
class Reply:
    """Bytes to write to the client: a whole answer the gateway made itself. ``close``: close
    the connection after writing them (the request's body was not read, or may not be)."""

    data: bytes
    close: bool


@final
@attrs.frozen(kw_only=True)
class Interim:
    """Bytes to write to the client at once, before the answer: ``100 Continue``."""

    data: bytes


@final
@attrs.frozen(kw_only=True)
class LocalRequest:
    """A request the server answers itself: call `reply_local` with its answer."""

    name: Literal["healthz", "readyz", "metrics"]


@final
@attrs.frozen(kw_only=True)
class Forward:
    """Send ``request`` upstream. For a `PassThrough` whose body is not held, the body follows
    as `ForwardBody` pieces and a `ForwardEnd`, as the client sends it; for one whose body is
    held, ``body`` is that body."""

    request: Any  # a typed request of the upstream's dialect, or a PassThrough
    dialect: ClientDialect  # the client's response dialect
    body: bytes | None = None
    encoded: RequestBody | None = attrs.field(default=None, eq=False, repr=False)
    """A typed request's ``body()``, made with it in the worker (attack 39 F1: encoding 200,000
    messages on the loop stalled every client 0.6 s)."""
    headers: tuple[tuple[str, str], ...] = ()
    """Headers to send with a typed request (its request id: a PassThrough has its own)."""


@final
@attrs.frozen(kw_only=True)
class Prepare:
    """A held request body to parse and translate: call ``run()`` (in a worker thread if you
    like: it touches nothing but its own values) and give what it returns to `prepared`."""

    run: Callable[[], object]


@final
@attrs.frozen(kw_only=True)
class ForwardBody:
    """A piece of a passed-through request's body, to send upstream at once."""

    data: bytes


@final
@attrs.frozen
class ForwardEnd:
    """The passed-through body is whole."""


@final
@attrs.frozen
class ClientClosed:
    """The client closed its connection, or broke it: cancel whatever is under way for it."""


GatewayEvent = (
    Reply | Interim | LocalRequest | Forward | Prepare | ForwardBody | ForwardEnd | ClientClosed
)

MAX_NAME: Final = 256
"""Characters of an upstream's response id or model name a translated answer repeats
(`GatewayConnection._named`; servers write a few dozen)."""
MAX_MODEL: Final = 4 * MAX_NAME
"""Characters of the model a translated request may ask for: its answer's every event repeats
it when the upstream names none (attack 43 F1b: a megabyte's name made 0.09 MB of answer
502 MB); a local model's path may be long (review 43 M3)."""
_CUT: Final = Failure(
    kind=FailureKind.TRANSIENT,
    message="the upstream's stream was cut before its end",
    code="upstream_cut",
    status=502,
)
"""A stream cut before any of it went to the client: answered with this status."""


class GatewayConnection(PullDecoder[GatewayEvent]):
    """One client connection; see the module docstring's rules.

    Args:
        config: the gateway's bounds and policies; ``None``: the defaults, for no upstream in
            particular (tests, fuzzing).
        state: what the gateway's connections share (stream slots, the body budget); ``None``:
            a state of this connection's own.
        token, max_body, max_head_size: set these in ``config`` instead; kept as shortcuts.

    The server reads `method`, `target`, `dialect`, `outcome`, `upstream_failure`,
    `request_id` and `events_forwarded` for its log line and metrics: never a prompt or answer.
    """

    def __init__(
        self,
        config: GatewayConfig | None = None,
        state: GatewayState | None = None,
        *,
        token: str | None = None,
        max_body: int | None = None,
        max_head_size: int | None = None,
    ) -> None:
        super().__init__()
        if config is None:
            from ..openai.endpoint import Endpoint

            config = GatewayConfig(upstream=Endpoint.parse("http://upstream.invalid"))
        if token is not None or max_body is not None or max_head_size is not None:
            shortcuts: dict[str, Any] = {
                k: v
                for k, v in (
                    ("token", token), ("max_body", max_body), ("max_head_size", max_head_size)
                )
                if v is not None
            }  # fmt: skip
            config = attrs.evolve(config, **shortcuts)
        self.config: Final = config
        self.state: Final = state if state is not None else GatewayState(config, new_id=_counter())
        self._side = ServerSide(config.max_head_size, config.max_requests)
        self._reset()

    def _reset(self) -> None:
        self.outcome: Outcome | None = None
        """How the current request ended, once it has: for the server's metrics."""
        self.method = ""
        self.target = ""
        self.upstream_failure: FailureKind | None = None
        self.dialect: ClientDialect | None = None  # the client's response dialect
        self.request_kind: Kind | None = None
        self._path_kind: Kind | None = None  # what the target names, once the head is read
        self._vendor: ClientDialect | None = None  # whose API's path it is (`_vendor_of`)
        self.request_id: str | None = None
        self.events_forwarded = 0
        self.head_only = False  # a HEAD request, or a relayed 205: the answer has no body
        self.streaming_request = False
        """The request asked for a stream (``stream: true``, a Gemini stream's path, or any
        LLM-Stream request): the client reads a stream, so keep-alives may go to it (comments,
        or blank lines for a Gemini client, SSE or one JSON array)."""
        self._mode: Literal["idle", "local", "held", "pass", "forwarded", "answered"] = "idle"
        self._local = ""  # a request the server answers itself: its name
        self._ingress: ClientDialect | None = None
        self._routed: Routed | None = None  # what a path that names the model says (Gemini's)
        self._translated = False  # the request goes upstream in another dialect
        self._body = bytearray()
        self._held = 0  # bytes of the body budget this request holds
        self._cost = 0  # what translating its body builds, as far as it came (`_estimate`)
        self._dropped = 0  # bytes of a body read and dropped (a GET's), up to ``max_body``
        self._length: int | None = None  # the body's Content-Length (None: chunked, or none)
        self._got = 0  # bytes of the body read so far, whatever becomes of them
        self._estimate: BodyCost | None = None  # a body to translate's, made at its first piece
        self._preparing: _Preparation | None = None  # its body, being prepared off the loop
        self._slot = False  # this request holds a stream slot
        self._pass: PassThrough | None = None
        self._relayed_failure = False  # a relayed answer's status is an error's
        self._begun: StreamStarted | None = None  # a relayed stream's start, as it went out
        self._scanner: RequestScanner | None = None
        self._header_id: str | None = None
        self._model = ""
        self._declared: frozenset[str] | None = None
        self._head_sent = False
        self._chunked = False  # the answer's body is chunked, framed here
        self._out: DialectStreamEncoder | None = None  # the answer's encoder, once it is encoded
        self._whole: AnswerFold | None = None  # a translated answer sent whole, as it is folded
        self._asked: object = None  # the client's typed request, once translated
        self._lost: list[str] = []  # what its translation could not carry (`Svir-Lost`)
        self._said: list[str] = []  # what the gateway did not pass on (`_named`, `_other_block`)
        self.noted = 0
        """What the upstream's decoder noticed and the answer did not carry, counted."""
        self._relaying: Literal["", "stream", "raw", "late"] = ""
        self._uncommented = False  # a relayed stream's comments are not passed on (`relay_events`)
        self._framer: StreamReframer | None = None  # a relayed stream's form, if not SSE
        self._fresh = False  # nothing of a relayed stream's body went out yet
        self._stripped_cut = False  # a relayed body ended inside a comment not passed on

    # -- where the connection is ------------------------------------------------------------

    @property
    def phase(self) -> Phase:
        """What the connection waits for: ``idle`` (a request's first byte), ``head`` (the rest
        of a head), ``body`` (the rest of a body), ``answer`` (the upstream, or the server: the
        request is read), ``closed`` (the client went away). The server's deadlines follow it."""
        if isinstance(self._terminal, ClientClosed):
            return "closed"
        side = self._side
        if side.theirs == "idle":
            return "head" if side.begun else "idle"
        if side.theirs == "body" and self._mode in ("held", "pass", "local"):
            return "body"
        return "answer"

    @property
    def body_length(self) -> int:
        """What came of the body being read, for its rate deadline (the session's Rule 3): not
        what its Content-Length says, which would buy a client time it never used (attack 43
        F2: 32 MiB declared, a byte sent each 10 s, held its share for 158 s)."""
        return self._got

    @property
    def backlog(self) -> int:
        """Bytes the client sent that wait unread (a pipelined request) while its answer is
        made: at most ``max_head_size`` (Rule 3); the server closes past it. The body of a
        request answered before it ended (a GET's, which means nothing) is no backlog: it is
        read, and dropped, as it comes, up to ``max_body`` bytes; what comes past that is."""
        side = self._side
        if side.theirs == "body":
            return max(self._dropped - self.config.max_body, 0)
        return side.held

    @property
    def holds_stream(self) -> bool:
        """The current request holds a stream slot (`GatewayState.admit_stream`)."""
        return self._slot

    @property
    def relaying(self) -> Literal["", "stream", "raw", "late"]:
        """How the answer is relayed (`relay_head`): ``stream`` (the upstream's events as they
        came), ``raw`` (any other answer, as it came), ``late`` (a failure after a keep-alive
        sent the stream's head, or an answer to a stream request that is no stream: read it,
        then answer with it, `upstream`)."""
        return self._relaying

    # -- the client's request ---------------------------------------------------------------

    def _receive(self, data: bytes) -> None:
        self._side.receive_data(data)

    def _fill(self) -> None:
        side = self._side
        while self._terminal is None:  # after the terminal event nothing more is read
            try:
                event = side.next_event()
            except BadHead as exc:
                if self._mode == "idle" or not self._head_sent:
                    self._bad_http(exc)
                else:
                    self._closed()
                return
            if event is None:  # more bytes needed, or nothing more is read (Rule 3)
                return
            kind = type(event)
            if kind is bytes:
                self._data(event)  # type: ignore[arg-type]
            elif kind is RequestHead:
                self._request(event)  # type: ignore[arg-type]
            elif event is END:
                self._end()
            else:  # CLOSED: the client went away between requests
                self._closed()
                return

    def _bad_http(self, exc: BadHead) -> None:
        if exc.status == 431:
            self._reject(431, str(exc), _INVALID, close=True)
        else:
            self._reject(exc.status, f"not valid HTTP/1.1: {exc}", _INVALID, close=True)

    def _closed(self) -> None:
        self._release()
        self._queue.append(ClientClosed())
        self._terminal = self._queue[-1]

    def _request(self, req: RequestHead) -> None:
        cfg = self.config
        method = req.method
        self.head_only = method == "HEAD"  # before any answer: HEAD's has no body
        headers = req.named  # a repeated field: its last value
        target, authority = _origin(req.target)
        self.method, self.target = method, target
        if req.folded:  # _http Rule 1: h11 would unfold it
            return self._reject(
                400, "a header field line may not be folded (obs-fold, RFC 9112 5.2)",
                _INVALID, close=True,
            )  # fmt: skip
        if req.version not in ("1.0", "1.1"):  # _http Rule 1: the grammar takes any d.d
            return self._reject(
                505, "this gateway speaks HTTP/1.0 and HTTP/1.1", _INVALID, close=True
            )
        kind, allowed = _route(target)
        self._path_kind = kind
        self._vendor = _vendor_of(kind, target, headers)
        if "content-length" in headers and "transfer-encoding" in headers:  # _http Rule 1
            return self._reject(
                400, "a request may not carry both Content-Length and Transfer-Encoding",
                _INVALID, close=True,
            )  # fmt: skip
        if req.version == "1.0" and "transfer-encoding" in headers:  # RFC 9112 6.1: faulty
            return self._reject(
                400, "an HTTP/1.0 request may not carry Transfer-Encoding (RFC 9112 6.1)",
                _INVALID, close=True,
            )  # fmt: skip
        host = headers.get("host") if authority is None else authority
        if host is not None and not host_valid(host):  # _http Rule 2
            return self._reject(
                400, f"the host {host[:200]!r} is not a host and a port (RFC 9110 7.2)",
                _INVALID, close=True,
            )  # fmt: skip
        if not host_allowed(host, cfg.allowed_hosts):  # Rule 4
            self.state.metrics.refused["host"] += 1
            return self._reject(
                421, f"this gateway does not answer for the host {host!r}",
                "misdirected_request", close=True,
            )  # fmt: skip
        if kind is None:
            return self._reject(404, f"no such path: {target}", "not_found", close=True)
        if method not in allowed:
            return self._reject(
                405, f"{target} takes {', '.join(allowed)}", "method_not_allowed", close=True,
                headers=[("Allow", ", ".join(allowed))],
            )  # fmt: skip
        given = bearer(v for k, v in req.fields if k == "authorization")
        key_header = _KEY_HEADERS.get(self._vendor or "") if given is None else None
        if key_header is not None:  # (the vendor's SDK sends the token as its key)
            given = bearer(f"Bearer {v}" for k, v in req.fields if k == key_header)
        if given is False:
            return self._reject(
                400, f"a request may carry one {key_header or 'Authorization'} header", _INVALID,
                close=True,
            )  # fmt: skip
        local = kind == "local"
        if (
            cfg.token is not None
            and not (local and (target != "/metrics" or cfg.public_metrics))
            and not token_matches(given, cfg.token)
        ):
            self.state.metrics.refused["token"] += 1
            return self._reject(
                401, "the gateway's token is missing or wrong", "authentication", close=True,
                headers=[("WWW-Authenticate", 'Bearer realm="svir-gateway"')],
            )  # fmt: skip
        self.request_kind = kind
        self._header_id = request_id(headers.get("x-request-id"))
        if local:  # answered once its body (a GET's means nothing) is read and dropped
            length = headers.get("content-length")
            self._length = None if length is None else int(length)
            if self._length is not None and self._length > cfg.max_body:
                return self._too_large()
            self._mode = "local"
            self._local = target[1:]
            return None
        query = req.target.partition("?")[2]  # (the origin form's: review 63, one string)
        if kind not in _COMPLETIONS:  # the model listing, or one model
            return self._listing(kind == "model", target, query)
        return self._completion(kind, headers, f"{target}?{query}" if query else target)

    def _listing(self, one: bool, target: str, query: str) -> None:
        """Rule 1's model listing (or one model: ``one``), in the API of the client's path
        (`_vendor_of`): relayed as the upstream answers when the upstream's dialect lists
        models in that API (with the client's query for a page of them), else read from the
        upstream's API and written in the client's (`ModelsRequest`, `_listed`), which says
        what it could not write. A model id goes to Gemini's API as one segment (review 72
        8: ``/v1/models/x/operations`` reached another of its resources)."""
        client = self.dialect = self._vendor or "openai"
        self.request_id = rid = self._header_id or self.state.new_id()
        upstream = self.config.upstream_dialect
        api, theirs = dialect(upstream).models, self._answered_in().models
        assert api is not None  # (every dialect's API lists its models)
        assert theirs is not None
        model = target.split("/models/", 1)[1] if one else None  # as it came: encoded
        if model is not None and api.name == "gemini" and not path_id(model, one=True):
            return self._reject(404, f"no such path: {target}", "not_found", close=True)
        self._mode = "forwarded"
        asked = [(k, v) for k, v in parse_qsl(query) if k in theirs.paging]
        if api.name != theirs.name:
            self._lost = _header_values(_rewritten(api.name, theirs.name, asked))
            listing = ModelsRequest(dialect=upstream, model=model)
            self._queue.append(Forward(request=listing, dialect=client, headers=_id_header(rid)))
            return None
        path = api.path(model, target.split("/", 2)[1]) if api.name == "gemini" else api.path(model)
        # a HEAD goes up as a GET (vLLM's FastAPI answers HEAD 405, mlx-lm 501: review
        # 44 M1), whose body the session drops (`GatewaySession._relay`); the request's
        # empty body is "held", so that it ends and the connection can be kept
        relay = PassThrough(
            content_length=0, method="GET", relay=True, accept="application/json",
            target=path + (f"?{urlencode(asked)}" if asked else ""), headers=_id_header(rid),
            dialect=upstream,
        )  # fmt: skip
        self._queue.append(Forward(request=relay, dialect=client, body=b""))
        return None

    def _completion(self, kind: Kind, headers: dict[str, str], target: str) -> None:
        """A request for a completion: admitted, or refused (``target``: its origin form, with
        its query, which a Gemini path's read of the model and method takes)."""
        cfg = self.config
        length_field = headers.get("content-length")
        length = int(length_field) if length_field is not None else None  # h11 checked digits
        self._length = length
        if length is not None and length > cfg.max_body:
            return self._too_large()
        coding = headers.get("content-encoding")
        if coding is not None and any(
            c.strip().lower() not in ("", "identity") for c in coding.split(",")
        ):  # Rule 2: a body is read as it came (attack 80 F3: gzip went upstream uncoded)
            return self._reject(
                415, f"Content-Encoding: {coding[:100]} is not read here; send the body as it "
                "is", "unsupported_content_encoding", close=True,
                headers=[("Accept-Encoding", "identity")],
            )  # fmt: skip
        ingress: ClientDialect | None
        answer: ClientDialect | None
        if kind == "chat":
            ingress = request_dialect(headers.get("content-type"))
            answer = response_dialect(ingress, headers.get("accept")) if ingress else None
        else:  # Rule 2: a vendor's own path takes its JSON, answered in its dialect
            media = parse_media_type(headers.get("content-type") or "")[0]
            vendor = _VENDORS[kind]
            ingress = answer = vendor if media == "application/json" else None
        if ingress is None and kind != "chat":  # a vendor's path serves JSON only
            return self._reject(
                415, f"{headers.get('content-type') or 'no Content-Type'} is not served here; "
                "send application/json", "unsupported_media_type", close=True,
                headers=[("Accept-Post", "application/json")],
            )  # fmt: skip
        if ingress is None:
            status, extra, body = unsupported_media_type(headers.get("content-type"))
            return self._reply(status, extra, body, close=True, outcome="rejected")
        assert answer is not None
        route = dialect(_WIRE[ingress]).route
        if route is not None:  # the path names the model (Gemini's)
            try:
                self._routed = route(target)
            except RequestError as exc:
                self.request_id = self._header_id or self.state.new_id()
                return self._reject(400, exc.message, _INVALID, close=True, param="target")
        self._ingress = ingress
        self.dialect = answer
        upstream = cfg.upstream_dialect
        # Rule 2: else relayed as it comes (`_reencoded`: what is parsed whatever the upstream)
        self._translated = _WIRE[ingress] != upstream or self._reencoded
        held = self._translated or length is None or length <= cfg.hold_below
        # a body passed through takes its slot now, for its upstream request begins now; a
        # held one once it is whole, and is refused now only if none is free: a slow body
        # holds its connection and what it sent of the budget, no stream slot (attack 43 r4:
        # sixteen bodies trickled a byte at a time held every slot for --body-timeout)
        if not (self.state.stream_free() if held else self._take_stream()):
            return self._no_stream()
        if held and length is not None and length > cfg.max_buffered:  # it can never fit
            return self._reject(
                413, f"the body is larger than the {cfg.max_buffered} bytes the gateway "
                "holds for request bodies", "request_too_large", close=True,
            )  # fmt: skip
        # (a held body takes the budget as its bytes come, not as its length says: attack 43
        # F2, eight lengths declared and never sent held all of it for minutes)
        # a body passed through is scanned as it goes; a held one is read whole at its end
        self._scanner = None if self._translated or held else RequestScanner()
        if held:
            self._mode = "held"
        else:
            assert length is not None
            self._mode = "pass"
            self.request_id = self._header_id or self.state.new_id()
            self._pass = self._relay(length)
            self._queue.append(Forward(request=self._pass, dialect=self.dialect))
        self._continue()
        return None

    def _relay(self, length: int, stream: bool | None = None) -> PassThrough:
        """The request passed upstream as the client sent it, in the upstream's own dialect:
        its answer is relayed, unless an OpenAI client asked for LLM-Stream's (decoded and
        encoded again; what is never relayed is parsed first: `_reencoded`). ``stream`` says
        whether it asks for a stream once that is known (a held body's); a path that names
        the method says it instead (Gemini's), and when neither has (a body passed through
        before its end), the dialect's stream is accepted."""
        assert self.request_id is not None
        wire = _WIRE[self._ingress or "openai"]
        spec = dialect(wire)
        routed = self._routed
        if routed is not None:  # (its path says whether it streams: review 63)
            stream = routed.stream
        return PassThrough(
            content_length=length, relay=self.dialect != "llm-stream", dialect=wire,
            target=spec.path or "" if routed is None else routed.target,
            accept="application/json" if stream is False else spec.accept,
            headers=(("X-Request-Id", self.request_id),),
        )  # fmt: skip

    def _continue(self) -> None:
        """Rule 3: the request is admitted; a client waiting for ``100 Continue`` gets it."""
        if self._side.waiting_100:
            self._queue.append(Interim(data=self._side.interim()))

    def _too_large(self) -> None:
        self._reject(
            413, f"the body is larger than {self.config.max_body} bytes", "request_too_large",
            close=True,
        )  # fmt: skip

    def _take_stream(self) -> bool:
        """Take a stream slot for this request, if one is free: with its head (a body passed
        through), or once its body is whole (a held one), never both."""
        assert not self._slot
        self._slot = self.state.admit_stream()
        return self._slot

    def _no_stream(self) -> None:
        self._body = bytearray()  # (a held body refused once whole: review 44 L3)
        self.state.metrics.refused["streams"] += 1
        self._busy("the gateway holds as many streams as it may")

    def _busy(self, message: str) -> None:
        self._reject(503, message, "overloaded", close=True, headers=[("Retry-After", "1")])

    def _data(self, data: bytes) -> None:
        self._got += len(data)
        if self._mode == "held":
            cfg = self.config
            size = len(self._body) + len(data)
            grow = len(data)  # held as it comes, whatever its length says (attack 43 F2)
            if size > cfg.max_body:
                self._too_large()
                return
            self._cost += grow
            if self._translated:  # Rule 3: what parsing it will build, beyond its bytes
                if self._estimate is None:
                    self._estimate = BodyCost()
                extra = self._estimate.add(data) - len(data)
                self._cost += extra
                grow += extra
                if self._cost > cfg.max_buffered:
                    self._reject(
                        413, f"translating this body takes more than the {cfg.max_buffered} "
                        "bytes the gateway holds for request bodies: what came of it parses "
                        f"to about {self._cost} bytes", "request_too_large", close=True,
                    )  # fmt: skip
                    return
            if not self.state.hold(grow):
                self.state.metrics.refused["buffered"] += 1
                self._busy("the gateway holds as many request bodies as it may")
                return
            self._held += grow
            self._body += data
        elif self._mode == "pass":  # the body goes upstream as it comes
            assert self._scanner is not None
            self._scanner.feed(data)
            self._queue.append(ForwardBody(data=data))
        else:  # a body on a GET (the model listing, /healthz, /metrics): it means nothing,
            # and is read and dropped up to max_body (past it: 413 before a local answer, the
            # client not read while a listing's is made, `backlog`); nothing is read at all
            # after a reply that closes
            self._dropped += len(data)
            if self._mode == "local" and self._dropped > self.config.max_body:
                self._too_large()

    def _end(self) -> None:
        if self._mode == "local":
            self._mode = "answered"
            self._queue.append(LocalRequest(name=self._local))  # type: ignore[arg-type]
        elif self._mode == "held":
            if not self._take_stream():  # (others took the free slots while it came)
                self._no_stream()
                return
            self._mode = "forwarded"
            body = bytes(self._body)
            self._body = bytearray()
            if self._translated:
                given, to = _WIRE[self._ingress or "openai"], self.config.upstream_dialect
                if self._cost <= PREPARE_IN_PLACE:
                    self.prepared(_prepare(body, given, to, self._routed))
                else:
                    self._preparing = _Preparation(body, given, to, self._routed)
                    self._queue.append(Prepare(run=self._preparing))
                return
            facts = RequestScanner.whole(body)
            choices = facts.choices or (facts.broken and parsed_choices(body))
            if choices and self._ingress == "openai":
                self._one_choice()
                return
            stream = self._streams(facts)
            if not stream and self._streams_only():
                return
            self._learn(facts)
            self.streaming_request = stream
            self.request_id = request_id(facts.request_id) or self._header_id or self.state.new_id()
            relay = self._relay(len(body), stream)
            relay.declared_tools = self._declared
            relay.include_usage = facts.include_usage
            self._unhold()
            self._queue.append(Forward(request=relay, dialect=self.dialect or "openai", body=body))
        elif self._mode == "pass":
            scanner = self._scanner
            assert scanner is not None
            assert self._pass is not None
            if scanner.choices and self._ingress == "openai" and not self._head_sent:
                self._one_choice()  # sent upstream, not ended: the upstream's is cancelled
                return  # (an answer begun before the body ended goes on: its watcher cuts it)
            stream = self._streams(scanner)
            if not stream and not self._head_sent and self._streams_only():
                return  # (likewise)
            self._learn(scanner)
            self.streaming_request = stream
            self._pass.declared_tools = self._declared
            self._pass.include_usage = scanner.include_usage
            self._mode = "forwarded"
            self._queue.append(ForwardEnd())

    def _streams_only(self) -> bool:
        """Refuse a request that asks for no stream when the answer it asks for is one (an
        LLM-Stream answer, in ``Accept``: there is no whole one), before its answer, as a
        translated request is refused (`prepared`); attack 36, F3: it went upstream, and the
        upstream's whole answer was a 502 that blamed it. Whether it refused."""
        if self._answered_in().answer is not None:
            return False
        self.request_id = self.request_id or self._header_id or self.state.new_id()
        message = 'the answer asked for is an LLM-Stream stream: send "stream": true'
        self._reject(400, message, _INVALID, param="$.stream")
        return True

    def _one_choice(self) -> None:
        """Refuse a relayed Chat request for more than one choice, before its answer: the
        relay's watcher (the Chat decoder) follows one choice, and would cut the answer at the
        first chunk of another (attack round 32, F3), as a translated request is refused at
        once. An upstream that began answering a passed-through body before its end is not
        answered twice (review of stop 32): that answer goes on, and its watcher cuts it at
        the first chunk of another choice."""
        self.request_id = self.request_id or self._header_id or self.state.new_id()
        message = "n must be 1: more than one choice is not supported by this gateway"
        self._reject(400, message, _INVALID, param="$.n")

    @property
    def _reencoded(self) -> bool:
        """The request is parsed and its answer encoded by the gateway, even to an upstream of
        its own dialect (which gets the request's bytes as they came: `_prepare`): an
        LLM-Stream request (the gateway stops a call it did not declare, draft 8.2, and
        numbers the events it adds, an error, the end, in the stream's ``seq``), and a stream
        asked in a form a relay cannot write (`_array` of a dialect without `reframe`)."""
        return self._ingress == "llm-stream" or (
            self._array and self._answered_in().reframe is None
        )

    @property
    def _array(self) -> bool:
        """The stream is asked as one JSON array (Gemini's without ``alt=sse``): the upstream
        is asked for SSE all the same; the gateway's encoder writes the array from another
        dialect's events, a relay from its own dialect's (`relay_events`), and the gateway's
        keep-alives are blanks between its elements and its error the last of them."""
        routed = self._routed
        return routed is not None and routed.stream and not routed.sse

    def _answered_in(self) -> DialectSpec:
        """The dialect the client is answered in."""
        return dialect(_WIRE[self.dialect or "openai"])

    def _streams(self, scanner: RequestScanner) -> bool:
        """Whether a relayed request asks for a stream: its ``stream``, or its path's."""
        return scanner.stream is True if self._routed is None else self._routed.stream

    def _learn(self, scanner: RequestScanner) -> None:
        self._model = scanner.model or "" if self._routed is None else self._routed.model
        if self._ingress == "openai":  # the scanner reads OpenAI's tools (function.name)
            self._declared = frozenset(scanner.tools) if scanner.tools else None

    def prepared(self, outcome: object) -> None:
        """What a `Prepare`'s ``run`` returned: the request goes upstream, or is refused. The
        share of the body budget the parse held goes back with a refusal; a request that goes
        upstream keeps it until its answer ends (`_release`): its typed requests, some 16
        times its body, live as long (attack 39 F5: 8 slow streams of 3.3 MB held 413 MB)."""
        self._preparing = None
        if not isinstance(outcome, tuple):
            self._unhold()
        if isinstance(outcome, (RequestError, ValueError)):  # a refusal has its id (Rule 7)
            self.request_id = self._header_id or self.state.new_id()
        if isinstance(outcome, RequestError):
            self._reject(400, outcome.message, _INVALID, param=outcome.path)
            return
        if isinstance(outcome, ValueError):  # what the upstream's dialect cannot carry
            path = outcome.path if isinstance(outcome, TranslationError) else None
            self._reject(400, str(outcome), _INVALID, param=path)
            return
        assert isinstance(outcome, tuple)
        hub, upstream, stream, self._asked, self._lost, encoded = outcome
        assert isinstance(hub, LLMRequest)
        if len(hub.model) > MAX_MODEL:  # (the answer's every event may repeat it)
            self._unhold()
            self.request_id = self._header_id or self.state.new_id()
            message = f"model is {len(hub.model)} characters long, more than {MAX_MODEL}"
            self._reject(400, message, _INVALID, param="$.model")
            return
        self.request_id = request_id(hub.request_id) or self._header_id or self.state.new_id()
        if not stream and self._streams_only():
            return
        self.streaming_request = stream
        if not stream:  # Rule 2: the upstream streams, the client gets the whole answer
            self._whole = AnswerFold(max_size=self.config.max_answer)
        self._model = hub.model
        self._declared = hub.tool_names if hub.tools else None
        rid = (("X-Request-Id", self.request_id),)
        forward = Forward(
            request=upstream, dialect=self.dialect or "llm-stream", headers=rid, encoded=encoded
        )
        self._queue.append(forward)

    def prepare_ended(self) -> None:
        """A `Prepare` of a client that left ended (or will never run): the share of the body
        budget its body held is given back only now, so that what clients that send and leave
        make the gateway hold and parse stays within ``max_buffered``."""
        self._preparing = None
        self._unhold()

    def _unhold(self) -> None:
        if self._held and self._preparing is None:  # a body being prepared holds its share
            self.state.unhold(self._held)
            self._held = 0

    def _release(self) -> None:
        """Give back what this request holds (its stream slot, its share of the budget: that of
        a body being prepared once its preparation ends; if it has not begun, it never does)."""
        if self._preparing is not None:
            self._preparing.wanted = False
        self._unhold()
        if self._slot:
            self._slot = False
            self.state.release_stream()

    # -- answers the gateway makes itself -----------------------------------------------------

    def _reject(
        self,
        status: int,
        message: str,
        code: str,
        *,
        close: bool = False,
        headers: list[tuple[str, str]] | None = None,
        **extra: Any,
    ) -> None:
        body = self._refusal(status, message, code, **extra)
        head = [("Content-Type", "application/json"), *(headers or [])]
        self._reply(status, head, body, close=close, outcome="rejected")

    def _refusal(self, status: int, message: str, code: str, **extra: Any) -> bytes:
        """Rule 5: the error object of the gateway's own refusal, in the dialect of the path
        the client asked (Anthropic's on ``/v1/messages``, Gemini's on its path and on any
        path of its versions, from their first line on; OpenAI's, with ``code`` and ``extra``
        such as ``param``, anywhere else)."""
        vendor = self._vendor
        if vendor is None and self.target.startswith(_GEMINI_VERSIONS):  # (its countTokens...)
            vendor = "gemini"
        if vendor is None or vendor == "responses":
            return error_json(message, code, **extra)
        # Anthropic's and Gemini's objects have no param: the messages of the refusals with one
        # (a `RequestError`'s) begin with it already
        kind = _KIND_OF_STATUS.get(status, FailureKind.REJECTED if status < 500 else None)
        kind = kind or FailureKind.SERVER_ERROR  # the code is kept where it is Anthropic's too
        failure = Failure(kind=kind, message=message, code=code, status=status)
        return dialect(_WIRE[vendor]).error_body(failure)

    def _reply(
        self,
        status: int,
        headers: list[tuple[str, str]],
        body: bytes,
        *,
        close: bool,
        outcome: Outcome,
    ) -> None:
        if self._mode in ("held", "pass", "local"):
            close = True  # the rest of the body will not be read
        self._release()
        data = self._response(status, headers, body, close=close)
        self._mode = "answered"
        self.outcome = outcome
        self._queue.append(Reply(data=data, close=close))
        self._terminal = self._queue[-1]

    def _response(
        self, status: int, headers: list[tuple[str, str]], body: bytes, *, close: bool
    ) -> bytes:
        """A whole response with its Content-Length (and ``Connection: close`` if asked); for
        HEAD, the same head and no body (RFC 9110 9.3.2)."""
        head = [*headers, ("Content-Length", str(len(body)))]
        head += self._ids()
        if close:  # a server may answer before the body, or after a bad request
            head.append(("Connection", "close"))
        side = self._side
        out = side.head(status, reason(status), head)
        if body and not self.head_only:
            out += side.data(body)
        out += side.end()
        self._head_sent = True
        return out

    def busy(self, retry_after: int) -> bytes:
        """503 with ``Retry-After``: the server cannot take this request now."""
        self._release()
        self._mode = "answered"
        self.outcome = "rejected"
        body = self._refusal(503, "the gateway holds as many streams as it may", "overloaded")
        head = [("Content-Type", "application/json"), ("Retry-After", str(retry_after))]
        return self._response(503, head, body, close=True)

    def reply_local(self, status: int, content_type: str, body: bytes) -> bytes:
        """The bytes of the server's own answer to a `LocalRequest`."""
        self.outcome = "ok" if status < 400 else "failed"
        return self._response(status, [("Content-Type", content_type)], body, close=False)

    # -- the upstream's answer, translated ------------------------------------------------------

    def upstream(
        self, events: list[ExchangeEvent], *, now: int = 0, problems: tuple[str, ...] = ()
    ) -> bytes:
        """The client's bytes for events from the upstream's `Exchange`, in order (Rule 5).
        The stream events of one read go out as one HTTP chunk. A run of text deltas
        (`TextRun`, an upstream connection's with ``text_runs``) is written as its deltas are.

        Args:
            now: seconds since the epoch, for ``stream.start``'s ``created`` when the upstream
                gives none.
            problems: with the stream's end, what the upstream's decoder noticed and did not
                carry (`Completion.problems`): said to the client (`_noted`).
        """
        if self._whole is not None:
            return self._gather(events, now, problems)
        out: list[bytes] = []
        pending: list[bytes] = []  # the stream's bytes of these events, framed once
        encode = None if self._out is None else self._out.encode
        for event in events:
            try:
                if type(event) is TextDelta and encode is not None:  # nearly every event
                    self.events_forwarded += 1
                    pending.append(encode(event))
                    continue
                if isinstance(event, (ResponseStarted, Retrying)):
                    continue
                if isinstance(event, RequestFailed):
                    out.append(self._failed(event.failure, now))
                elif isinstance(event, ModelsListed):
                    out.append(self._listed(event))
                else:
                    if not self._head_sent:
                        if type(event) is StreamEnded and not event.complete:
                            # a stream cut before its first event (an empty body): nothing of
                            # it went out, so a status, as for a whole answer (attack 35, F4)
                            return b"".join(out) + self._failed(_CUT, now)
                        out.append(self._stream_head())
                    encoded = self._encode(event, now)
                    if type(event) is StreamEnded:  # (what the encoder lost, at the end too)
                        pending.append(self._noted(problems))
                    pending.append(encoded)
                    encode = self._encoder(now).encode
                    if isinstance(event, StreamEnded):
                        out.append(self._end_stream(b"".join(pending), event.complete))
                        pending = []
            except AnswerTooLarge as exc:  # the answer its final events carry: the stream ends
                failure = Failure(kind=FailureKind.UNEXPECTED, message=str(exc), code="too_large")
                ended: list[ExchangeEvent] = [
                    StreamFailed(error=failure),
                    StreamEnded(complete=False, done=True),
                ]
                out.append(self._chunk(b"".join(pending)))  # (nothing, if nothing is pending)
                return b"".join(out) + self.upstream(ended, now=now, problems=problems)
        if pending:
            out.append(self._chunk(b"".join(pending)))
        return b"".join(out)

    def _noted(self, problems: tuple[str, ...]) -> bytes:
        """What the upstream's decoder noticed and did not carry (`Completion.problems`: a
        Gemini code result, a legacy function call...), and what the client's encoder could
        not write (its ``lost``: a usage it made up, a verdict it has no field for), as SSE
        comments before the stream's end, one each, as ``Svir-Lost`` values
        (`_header_values`): a client skips them, a person reading the stream sees them, and
        the log counts them (attack 42 F5, fidelity 43 F02: they went nowhere); and the
        upstream's names the encoder was not given (`_named`). A client of a dialect whose
        clients read no comment (Gemini's: `DialectSpec.comments`) gets none: the log counts
        them still (a chunk of their own would be an answer chunk with no text to its SDK)."""
        said = [*problems, *self._said, *getattr(self._out, "lost", ())]
        self.noted += len(said)
        if not self._answered_in().comments:  # (counted, not written)
            return b""
        return b"".join(b": svir-lost " + v.encode() + b"\n\n" for v in _header_values(said))

    def _gather(
        self, events: list[ExchangeEvent], now: int, problems: tuple[str, ...] = ()
    ) -> bytes:
        """`upstream` for a client that asked for no stream (Rule 2): the events are folded,
        and at the stream's end the whole answer goes out, or the failure."""
        fold = self._whole
        assert fold is not None
        if fold is _ANSWERED:  # (nothing after the end is read)
            return b""
        for event in events:
            if isinstance(event, RequestFailed):
                return self._failed(event.failure, now)
            if isinstance(event, (ResponseStarted, Retrying, ModelsListed)):
                continue
            self.events_forwarded += event.count if type(event) is TextRun else 1
            if type(event) is BlockStopped and self._other_block(event):
                continue
            try:
                fold.add(event)
            except AnswerTooLarge as exc:
                failure = Failure(kind=FailureKind.UNEXPECTED, message=str(exc), code="too_large")
                return self._failed(attrs.evolve(failure, status=502), now)
            if fold.ended is not None:
                self._whole = _ANSWERED  # what it holds goes (attack 37 F8: a whole answer that
                return self._answer(fold, now, problems)  # waited for its client held it twice)
        return b""

    def _answer(self, fold: AnswerFold, now: int, problems: tuple[str, ...]) -> bytes:
        """The whole answer of a stream that ended (Rule 2), or its failure (Rule 5)."""
        result = fold.result()
        if result.error is not None:  # one status for its kind whatever the client's dialect
            # (attack 74 F2: a server error in the stream was 502 to an OpenAI client, 500, the
            # gateway's own failure, to an Anthropic or Gemini one): Rule 5's, a stream's too
            error = result.error
            return self._failed(attrs.evolve(error, status=error.status or error.kind.status), now)
        if not result.done or (not result.complete and _empty(result)):
            # an answer that never began (an upstream that said only its end marker) is a
            # status, as its stream is (`upstream`): not a 200 with nothing in it (attack 62)
            return self._failed(_CUT, now)
        spec = self._answered_in()
        assert spec.answer is not None
        rid = fold.response_id or self.request_id or ""
        lost: list[str] = []
        body = spec.answer(
            result, fold.model or self._model, rid, fold.created or now, request=self._asked,
            lost=lost,
        )  # fmt: skip
        if isinstance(body, Failure):
            return self._failed(attrs.evolve(body, status=502), now)
        self.outcome = "ok" if result.complete else "failed"
        self._mode = "answered"
        said = [*problems, *self._said, *lost]  # what the decoder did not carry, the gateway
        if said:  # did not pass on, and the answer could not write: said with the translation's
            self.noted += len(said)
            room = max(MAX_LOST - len(self._lost), 1)
            self._lost = self._lost + _header_values(said)[:room]
        return self._response(200, [("Content-Type", "application/json")], body, close=False)

    def _encode(self, event: ExchangeEvent, now: int) -> bytes:
        """A stream event in the client's dialect, unframed (`upstream` encodes a `TextDelta`
        itself, once the encoder exists: nothing here changes one). A `TextRun` is its texts'
        JSON copied as it came for an LLM-Stream client (`OpenAIToLLMStream.encode_run`), its
        deltas one by one for any other."""
        if type(event) is TextRun:
            self.events_forwarded += event.count
            out = self._encoder(now)
            if type(out) is OpenAIToLLMStream:
                return out.encode_run(event)
            return b"".join(map(out.encode, event.deltas()))
        self.events_forwarded += 1
        if type(event) is StreamStarted:
            event = self._named(event)
        elif type(event) is BlockStopped and self._other_block(event):
            return b""
        undeclared = isinstance(event, ToolCall) and event.declared is False
        if undeclared and self.dialect == "llm-stream":  # Rule 6, draft 8.2
            assert isinstance(event, ToolCall)
            event = StreamFailed(
                error=Failure(
                    kind=FailureKind.REJECTED,
                    message=f"the model called {event.name!r}, which the request did not "
                    "declare; the gateway does not pass it on (draft section 8.2)",
                    code="undeclared_tool",
                )
            )
        return self._encoder(now).encode(event)  # type: ignore[arg-type]

    def _other_block(self, event: BlockStopped) -> bool:
        """Whether the end of a block of an LLM-Stream upstream's answer other than its primary
        (0) is not for this client: one of a dialect with one text does not get it (the
        block's text is in that one text, each dialect's decoder reads it so), but is told
        (attack 69 F6: a Chat client got two ``finish_reason`` chunks, unsaid). An LLM-Stream
        client gets every block's stop (`OpenAIToLLMStream`)."""
        if self.dialect == "llm-stream":
            return False
        if len(self._said) <= MAX_LOST:  # (what is said has a bound: attack 73 F1)
            self._said.append(
                f"the upstream's answer has a block {event.index} beside its primary one: its "
                f"text is in the answer's one text, and its own stop ({event.raw[:64]}) is not "
                "written"
            )
        return True

    def _named(self, event: StreamStarted) -> StreamStarted:
        """The upstream's names as the answer's encoder is given them: one past `MAX_NAME`
        characters is not (the gateway's own id, the model the client asked for, go instead),
        and that is said at the stream's end. A translated answer repeats them in its every
        event (a Chat chunk's ``id`` and ``model``, a Responses item's id): one long name,
        sent once, multiplied every event after it (attack 43 F1: 0.43 MB of answer became
        400 MB). A relayed answer repeats nothing, and keeps them (review 43 M3)."""
        rid, model = event.response_id, event.model
        if len(rid) <= MAX_NAME and len(model) <= MAX_NAME:
            return event
        for what, name in (("response id", rid), ("model name", model)):
            if len(name) > MAX_NAME:
                self._said.append(
                    f"the upstream's {what} ({len(name)} characters, past {MAX_NAME}) is not "
                    "repeated in every event: the gateway's own goes instead"
                )
        return attrs.evolve(
            event,
            response_id=rid if len(rid) <= MAX_NAME else "",
            model=model if len(model) <= MAX_NAME else "",
        )

    def _encoder(self, now: int, sequence: int | None = None) -> DialectStreamEncoder:
        """The client's encoder, made once. In a relayed stream that began (the relay wrote
        no event of ours: this encoder writes its end only), it goes on from the upstream's
        start, numbered on from ``sequence`` (`upstream_broken`)."""
        if self._out is None:
            spec = self._answered_in()
            # the model asked for, until the upstream names its own (llama.cpp's Responses
            # stream names none: an OpenAI client's chunks said "")
            model, rid, created, begun = self._model, self.request_id or "", now, None
            started = self._begun if self._relaying else None
            if started is not None:
                model, rid = started.model or model, started.response_id or rid
                created, begun = started.created or now, sequence or 0
            if self._framer is not None:  # the relay's elements, which its failure's follow
                begun = self._framer.written
            self._out = spec.encoder(
                model, rid, created, self._declared, request=self._asked, routed=self._routed,
                begun=begun,
            )  # fmt: skip
            if hasattr(self._out, "max_output_size"):  # an encoder that holds the answer
                self._out.max_output_size = self.config.max_answer
        return self._out

    def _ids(self) -> list[tuple[str, str]]:
        """The request's own headers on an answer the gateway makes: its id's (Rule 7),
        ``X-Request-Id`` first, and Anthropic's ``request-id`` too for a client of its dialect
        (which the anthropic SDK reads); then what its translation lost (Rule 8)."""
        if self.request_id is None:
            return []
        ids = [("X-Request-Id", self.request_id)]
        if self._vendor == "messages":
            ids.append(("request-id", self.request_id))
        return ids + [("Svir-Lost", note) for note in self._lost]

    def _stream_head(
        self, status: int = 200, headers: list[tuple[str, str]] | None = None
    ) -> bytes:
        self._head_sent = True
        if headers is None:  # the gateway's own stream (a JSON array: `_array`)
            head = [*(_ARRAY_HEAD if self._array else _SSE_HEAD), *self._ids()]
        else:  # a relayed answer: the upstream's own ids are among its headers
            head = [*headers, *self._ids()[:1]]
        out = self._side.head(status, reason(status), head)  # a relayed value's obs-text as is
        # a body with no length is chunked (HTTP/1.1) or ends with the connection (HTTP/1.0);
        # chunks are framed here, inline, on every event's path
        self._chunked = self._side.framing == "chunked"
        return out

    def _end_stream(self, data: bytes, complete: bool) -> bytes:
        """The last events; a stream that was cut stays cut (Rule 5): no end of body, so the
        client sees the connection close before the chunked body's end."""
        out = self._chunk(data)
        self._mode = "answered"
        marker = self._out is not None and self._out.done
        if complete or marker:
            self.outcome = "ok" if complete else "failed"
            out += self._end_of_body()
        else:
            self.outcome = "cut"
            self._side.failed()
        return out

    def _failed(self, failure: Failure, now: int) -> bytes:
        """An upstream failure before the answer began (Rules 4 and 5): an HTTP error; or,
        once a keep-alive sent the stream's head, an error in the stream."""
        if self._head_sent:
            return self._in_stream(failure, now)
        self.outcome = "failed"
        self.upstream_failure = failure.kind
        self._mode = "answered"
        if failure.kind is FailureKind.AUTHENTICATION or failure.status in (401, 403):
            failure = attrs.evolve(  # Rule 4: never the client's 401
                failure,
                message=f"the upstream refused the gateway's credentials: {failure.message}",
                code="upstream_authentication",
                status=502,
            )
        spec = self._answered_in()
        headers = [("Content-Type", "application/json")]
        if failure.retry_after is not None:
            headers.append(("Retry-After", str(max(0, round(failure.retry_after)))))
        if failure.code == "too_large":  # the same request would pass the bound again: the
            headers.append(("x-should-retry", "false"))  # SDKs read this (openai, anthropic)
        body = spec.error_body(failure)  # Rule 5: the client's dialect's error object
        return self._response(spec.error_status(failure), headers, body, close=False)

    def _listed(self, listed: ModelsListed) -> bytes:
        """A listing read from the upstream's API, written in the client's (`_listing`); that
        the upstream had more models than its answer held is said (Rule 8)."""
        self._mode = "answered"
        self.outcome = "ok"
        api = self._answered_in().models
        assert api is not None
        if listed.more:
            n = len(listed.models)
            more = f"the upstream has more models than one answer of it holds: its first {n} are"
            self._lost = [*self._lost, *_header_values([more])][:MAX_LOST]
        if api.name == "gemini":  # (google-genai names a model in its path)
            unnamed = sum(not path_id(m.id, one=True) for m in listed.models)
            if unnamed:
                said = f"{unnamed} of the models have ids a Gemini path cannot name ('/' or "
                said += "':' in them): they are listed with no generation methods"
                self._lost = [*self._lost, *_header_values([said])][:MAX_LOST]
        body = api.write(listed.models, one=self.request_kind == "model")
        return self._response(200, [("Content-Type", "application/json")], body, close=False)

    def relayed_start(self, started: StreamStarted) -> None:
        """A relayed stream's start went out (the upstream's, as it came): an error the
        gateway ends the stream with follows it, in the same response (`upstream_broken`)."""
        self._begun = started

    def upstream_broken(
        self,
        reason: str,
        *,
        kind: FailureKind = FailureKind.TRANSIENT,
        now: int = 0,
        problems: tuple[str, ...] = (),
        sequence: int | None = None,
    ) -> bytes:
        """The upstream stalled, dropped, broke the protocol or could not be reached, or the
        gateway is stopping: the client's last bytes, an error in its dialect (Rule 5), the
        answer marked partial. Call it only where an event ends (`relay_data` tells).
        ``problems``: what the upstream's decoder noted so far, said as at a stream's end;
        ``sequence``: for a relayed stream whose events are numbered (Responses'), the number
        its next event takes (the upstream decoder's ``next_sequence``)."""
        if self._mode == "answered":
            return b""  # the answer is whole already
        wait = 1.0 if kind is FailureKind.OVERLOADED else None  # the gateway's own: soon again
        # the same status in a stream's error as in a whole answer's (a Gemini client reads it
        # in both: attack 69 F7, 503 in a stream where a whole answer said 502)
        failure = Failure(
            kind=kind, message=reason, code=kind.value, retry_after=wait, status=kind.status
        )
        if not self._head_sent:
            return self._failed(failure, now)
        return self._in_stream(failure, now, problems, sequence)

    def _in_stream(
        self,
        failure: Failure,
        now: int,
        problems: tuple[str, ...] = (),
        sequence: int | None = None,
    ) -> bytes:
        """A failure once the stream's head went out: its error and end marker (Rule 5), or a
        cut for an answer that is not a stream of ours, or that its client did not ask for (an
        upstream that streamed to a request for JSON: the client reads no events). In a
        relayed stream that began, the error ends the upstream's response, not one of its own
        (attack 67 F1: a Responses client got a second lifecycle, another id, numbered from
        0 again)."""
        self.upstream_failure = failure.kind
        if (
            self.head_only
            or self.request_kind not in _COMPLETIONS
            or self._relaying == "raw"
            or not self.streaming_request
        ):
            self.outcome = "cut"
            self._mode = "answered"
            self._side.failed()
            return b""
        self.events_forwarded += 1
        encoder = self._encoder(now, sequence)
        data = encoder.encode(StreamFailed(error=failure))
        data += encoder.encode(StreamEnded(complete=False, done=True))
        if not self._relaying:  # (review 43 M5: before its error, which ends it; a relayed
            data = self._noted(problems) + data  # answer's events went as they came)
        self.outcome = "failed"
        self._mode = "answered"
        return self._chunk(data) + self._end_of_body()

    def timeout(self, what: str) -> bytes:
        """The request's head or body did not come in time (`GatewayConfig`): 408, or a cut if
        an answer had begun. The connection is to be closed."""
        self.outcome = "rejected"
        if self._head_sent:
            self._mode = "answered"
            self._side.failed()
            return b""
        self._release()
        self._mode = "answered"
        body = self._refusal(408, f"the request's {what} did not arrive in time", "request_timeout")
        return self._response(408, [("Content-Type", "application/json")], body, close=True)

    def keepalive(self) -> bytes:
        """An SSE comment for a client that waits (`GatewayConfig.keepalive`), or an empty line
        for a dialect whose clients read no comment (`BLANK_LINE`), the stream's head first if
        it was not sent; ``b""`` for an answer that is not a stream of ours."""
        if (
            self._mode == "answered"
            or self.request_kind not in _COMPLETIONS
            or self._relaying == "raw"
            or self._whole is not None
        ):
            return b""
        head = b"" if self._head_sent else self._stream_head()
        comments = self._answered_in().comments
        return head + self._chunk(KEEPALIVE if comments else BLANK_LINE)

    def _end_of_body(self) -> bytes:
        return self._side.end()

    # -- the upstream's answer, relayed -------------------------------------------------------

    def relay_head(self, status: int, headers: tuple[tuple[str, str], ...]) -> bytes:
        """The head of an answer relayed as the upstream sent it (`PassThrough.relay`): its
        status and its end-to-end headers (an upstream 401 or 403 is never relayed: Rule 4;
        call `upstream` with its failure instead)."""
        kind = length = None
        chunked = False
        named: list[str] = []  # what the upstream's Connection names: hop-by-hop too
        for k, v in headers:  # the first of each (a repeated Content-Length came as one)
            if k == "content-type":
                kind = v if kind is None else kind
            elif k == "content-length":
                length = v if length is None else length
            elif k == "transfer-encoding":
                chunked = True
            elif k == "connection":
                named += (t.strip().lower() for t in v.split(","))
        media = (kind or "").split(";")[0].strip().lower()
        stream = media == "text/event-stream"
        ok = 200 <= status < 300
        if status == 205 and not self._head_sent:  # no content (RFC 9110 15.3.6), whatever
            # came (attack 49 F1): as a HEAD's answer, whole at its head, the rest dropped (a
            # keep-alive that sent our head made it a stream's failure: review 49 3a)
            self.head_only, ok = True, False
        self._relaying = "stream" if stream and ok else "raw"
        spec = self._answered_in()
        self._uncommented = self._relaying == "stream" and not spec.comments
        self._fresh = self._relaying == "stream"  # (`relay_events`: its byte order mark)
        routed = self._routed
        if self._relaying == "stream" and spec.reframe is not None and routed is not None:
            self._framer = spec.reframe(routed)  # (the client's form, if not SSE)
        unreadable = ok and self.streaming_request and media not in _ANSWERS
        if self._head_sent or unreadable:
            # a keep-alive sent the stream's head (the stream goes on in it), or a stream was
            # asked and this is neither a stream nor JSON (a server that ignored ``stream``):
            # a failure the server reads, then answers with (Rule 5)
            if self._relaying == "raw":
                self._relaying = "late"
            return b""
        drop = _NOT_RELAYED_STREAM if stream else _NOT_RELAYED
        if named:  # RFC 9110 7.6.1: the fields Connection names are this hop's
            drop = drop.union(named)
        keep = [(k, v) for k, v in headers if k not in drop]
        if self._framer is not None:  # the form the client asked for, not the upstream's
            keep = [_ARRAY_HEAD[0], *(item for item in keep if item[0] != "content-type")]
        if stream:
            keep += _SSE_HEAD[1:]
        # RFC 9112 6.3: Transfer-Encoding wins, and "an intermediary ... MUST first remove the
        # received Content-Length"
        # RFC 9110 8.6: a 204 has no Content-Length (a 304's says what the GET would get)
        if length is not None and not chunked and self._relaying == "raw" and status != 204:
            keep.append(("Content-Length", length))
        self._relayed_failure = status >= 400  # its outcome once its body is whole
        return self._stream_head(status, keep)

    def relay_data(self, data: bytes) -> bytes:
        """A piece of the relayed body, as the upstream sent it: framed for the client (one
        chunk), nothing else changed. The same function as `_chunk` (every event's path)."""
        if not data or self.head_only:
            return b""
        if self._chunked:
            return b"%x\r\n%b\r\n" % (len(data), data)
        return self._side.data(data)

    _chunk = relay_data

    def relay_events(self, data: bytes) -> bytes:
        """`relay_data` for whole events of a relayed stream (or what is left of one at its
        end): without the upstream's comment lines for a client of a dialect whose clients
        read none (`DialectSpec.comments`: attack 62 F5, a Gemini upstream's ``: keep-alive``
        reached google-genai, which reads any line but ``data:`` as JSON and raises). A
        comment carries nothing: the events are the same. A client that asked for them in
        another form than SSE gets that form (`DialectSpec.reframe`: Gemini's JSON array). A
        byte order mark that begins the body is no content (WHATWG), and is not passed on: a
        keep-alive of ours may have gone first, after which a reader takes it for the first
        line's (attack 77 F2: the first event was lost)."""
        if self._fresh:
            self._fresh = False
            data = data.removeprefix(b"\xef\xbb\xbf")
        if self._framer is not None:
            return self.relay_data(self._framer.events(data))
        if self._uncommented and (data[:1] == b":" or b"\n:" in data or b"\r:" in data):
            lines = data.splitlines(keepends=True)
            # a comment the body ended inside (its last bytes, at its end) is a cut the client
            # would not see once the comment is gone (attack 77: its body looked whole)
            self._stripped_cut = lines[-1][:1] == b":" and lines[-1][-1:] not in b"\r\n"
            kept: list[bytes] = []
            for line in lines:
                if line[:1] == b":":
                    continue
                if line == b"\n" and kept and kept[-1][-1:] == b"\r":
                    # a CR, a comment, then a blank line's LF: without the comment, the CR and
                    # the LF were one line end, and the blank line ending an event was gone
                    # (attack 80 F2: two events reached the client as one)
                    line = b"\r"
                kept.append(line)
            data = b"".join(kept)
        return self.relay_data(data)

    def relay_end(self, *, complete: bool) -> bytes:
        """The relayed body ended: where its framing said (``complete``), or cut; or, in the
        client's other form than SSE, inside an event (its framer's `cut`): a cut too."""
        if self._mode == "answered":
            return b""
        self._mode = "answered"
        framer = self._framer
        end = b"" if framer is None or not complete else self.relay_data(framer.end())
        if self._stripped_cut or (framer is not None and framer.cut):
            complete = False  # (`StreamReframer.cut`, `relay_events`)
        if complete:
            self.outcome = self.outcome or ("failed" if self._relayed_failure else "ok")
            return end + self._end_of_body()
        self.outcome = "cut"
        self._side.failed()
        return b""

    # -- the next request on this connection -------------------------------------------------

    @property
    def reusable(self) -> bool:
        """The answer is whole and the client may send another request."""
        return self._side.reusable

    def finish_request(self) -> None:
        """The current request is over for the server (answered, cut, or cancelled): give back
        its stream slot and what it held of the body budget."""
        self._release()

    def let_go(self) -> None:
        """The connection is closed: let go of what made its answer (its encoder, which may
        hold the whole answer, a whole answer's fold, the client's request), which the close,
        lingering for what the client has still to take, would keep (attack 51 F4)."""
        self._out = None
        if self._whole is not None:
            self._whole = _ANSWERED  # (nothing more is read into it)
        self._asked = None
        self._body = bytearray()

    def start_next_cycle(self) -> None:
        if not self.reusable:
            raise CallerProtocolError("the client connection is not reusable: close it")
        self._release()
        self._side.start_next_cycle()  # the next head's first bytes may be here already
        self._reset()
        self._queue = []
        self._qpos = 0
        self._terminal = None
        self._terminated = False
        self._dirty = True


_ANSWERED: Final = AnswerFold(max_size=1)
"""`GatewayConnection._whole` once the whole answer is made: its fold, which holds the answer's
text again, is let go while the answer waits for its client."""

MAX_LOST: Final = 16
"""`Svir-Lost` header fields an answer has at most (the last says how many more there were)."""


def _empty(result: Completion) -> bool:
    """Whether an answer has nothing a client reads: no text, reasoning, refusal or call."""
    return not (result.text or result.reasoning or result.refusal or result.tool_calls)


def _header_values(notes: list[str]) -> list[str]:
    """What a translation could not carry as ``Svir-Lost`` field values: each an RFC 9651
    string (quoted, ``"`` and ``\\`` escaped), so that a client that joins the fields with
    ", " (httpx, fetch: RFC 9110 5.3) can split them again (review 37); visible ASCII only
    (the rest as ``?``: a metadata key may be any text), 256 characters of each note,
    `MAX_LOST` of them."""
    if len(notes) > MAX_LOST:
        notes = [*notes[: MAX_LOST - 1], f"and {len(notes) - MAX_LOST + 1} more"]
    out = []
    for note in notes:
        text = "".join(c if " " <= c <= "~" else "?" for c in note[:256])
        out.append('"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"')
    return out


def _origin(target: str) -> tuple[str, str | None]:
    """A request target's path (no query) and, for the absolute form, its authority (RFC 9112
    3.2.2: a server MUST accept it, and takes the host from it, not from ``Host``)."""
    scheme, sep, rest = target.partition("://")
    authority = None
    if sep and scheme.lower() in ("http", "https"):
        slash = rest.find("/")
        authority, target = (rest, "/") if slash < 0 else (rest[:slash], rest[slash:])
    return target.split("?", 1)[0], authority


def _route(target: str) -> tuple[Kind | None, tuple[str, ...]]:
    known = _ROUTES.get(target)
    if known is not None:
        return known
    owns = dialect("gemini").owns
    assert owns is not None
    if owns(target):  # (before a model's: ``/v1/models/M:generateContent``)
        return "gemini", ("POST",)
    if target.startswith("/v1/models/") and path_id(target[len("/v1/models/") :]):
        return "model", ("GET", "HEAD")
    version, _, rest = target[1:].partition("/models/")
    if f"/{version}/" in _GEMINI_VERSIONS and path_id(rest, one=True):
        return "model", ("GET", "HEAD")  # Gemini's: one segment, no method (`gemini.endpoint`)
    return None, ()


def _vendor_of(kind: Kind | None, target: str, headers: dict[str, str]) -> ClientDialect | None:
    """Whose API a path is, when it is a vendor's (its refusals are in that API's shape, its
    SDK's key header is taken, Rule 4): a vendor's own completion path; the model listing's
    under Gemini's versions; on ``/v1/models``, which Gemini's API has too, a request with
    Gemini's key header or the header google-genai names itself in is Gemini's, one with
    ``anthropic-version`` (the anthropic SDK sends it on every request) Anthropic's, any
    other OpenAI's (``None``)."""
    if kind in _COMPLETIONS:
        return _VENDORS.get(kind)
    if kind not in ("models", "model"):
        return None
    if target.startswith(_GEMINI_VERSIONS) or not _GEMINI_HEADERS.isdisjoint(headers):
        return "gemini"
    return "messages" if "anthropic-version" in headers else None


def _rewritten(source: str, target: str, asked: list[tuple[str, str]]) -> list[str]:
    """What a listing read in the ``source`` API and written in the ``target`` API loses
    (`GatewayConnection._listing`), a sentence each (Rule 8)."""
    out = [
        f"the listing is {source}'s, written in {target}'s: what a model's entry says beyond "
        "its id, name, creation time and token limits (a description, capabilities, methods, "
        "owner, versions) is not written"
    ]
    if source == "gemini":
        out.append("the upstream's API gives no creation times: 0 (1970) is written for each")
    if asked:
        names = ", ".join(sorted({k for k, _ in asked}))
        out.append(f"the page asked ({names}) is not served: the answer lists every model")
    return out


def _id_header(request_id: str) -> tuple[tuple[str, str]]:
    """The request id's header, sent upstream with a request (Rule 7)."""
    return (("X-Request-Id", request_id),)


class _Preparation:
    """`_prepare` of one body, for a worker thread; once its client left (``wanted`` is
    ``False``: set by the loop, read by the thread) it does nothing: queued behind others, the
    work of clients that sent and left is not done for nobody."""

    __slots__ = ("body", "given", "routed", "to", "wanted")

    def __init__(
        self, body: bytes, given: DialectName, to: DialectName, routed: Routed | None
    ) -> None:
        self.body = body
        self.given = given
        self.to = to
        self.routed = routed
        self.wanted = True

    def __call__(self) -> object:
        body, self.body = self.body, b""
        return _prepare(body, self.given, self.to, self.routed, self) if self.wanted else None


def _prepare(
    body: bytes,
    given: DialectName,
    to: DialectName,
    routed: Routed | None = None,
    job: _Preparation | None = None,
) -> object:
    """Parse a request of dialect ``given`` and translate it through the hub to dialect ``to``:
    ``(the neutral request, the upstream's request, whether the client asked for a stream,
    the client's request as far as the upstream is asked it (`as_sent`), the Svir-Lost values
    of what the translation lost, the upstream request's body)``, or the error that refuses
    it. Pure: safe to run in a worker thread; between its steps it stops (``None``) once
    ``job``'s client left. ``routed``: what the path said of the model and the stream, for a
    dialect whose path says them (Gemini's)."""
    spec = dialect(given)
    try:
        # (the answer's dialect is checked in `prepared`)
        request, stream = spec.read(body) if routed is None else spec.read(body, routed)
        if job is not None and not job.wanted:
            return None
        hub = spec.to_hub(request)
        if job is not None and not job.wanted:
            return None
        lost: list[str] = []
        upstream = translate_request(request, to, neutral=hub, lost=lost)
        if job is not None and not job.wanted:
            return None
        asked = as_sent(request, to, neutral=hub)  # what the answer repeats (attack 46 G4)
        if given == to:  # parsed to be checked, not changed: the client's bytes go (review 64
            # F3: written again, an LLM-Stream request lost the fields its type does not keep)
            encoded = RequestBody([body], content_type=dialect(to).content_type)
            return hub, upstream, stream, asked, [], encoded
        return hub, upstream, stream, asked, _header_values(lost), upstream.body()
    except RequestError as exc:
        return exc
    except ValueError as exc:  # what ``to`` cannot carry: named as the request names it
        return exc
    except TypeError as exc:  # a value of a type no check foresaw: the request's fault still
        return ValueError(f"the request is not valid: {exc}")  # (attack round 32, F1)
    except RecursionError:  # a walk of ours deeper than Python's stack: the request's nesting
        return ValueError(  # (attack 69 F1: the connection closed with no answer)
            "the request nests too deep to be translated (the parser takes 512 levels; "
            "some of its fields are walked at two or more Python calls a level)"
        )


def _counter() -> Callable[[], str]:
    """Request ids for a connection with no server behind it (tests, fuzzing)."""
    n = 0

    def new_id() -> str:
        nonlocal n
        n += 1
        return f"svir-{n}"

    return new_id
