"""`GatewayConnection`: one client connection of a gateway (draft section 7), h11 in the server
role, sans-IO: it speaks LLM-Stream and OpenAI to its client and OpenAI to its upstream.

From the client's bytes it gives the server (`svir_proto.transports.gateway`) events: forward
this request upstream (`Forward`, then the body's pieces as they come for an OpenAI-dialect
request, `ForwardBody` and `ForwardEnd`), answer this yourself (`LocalRequest`: health,
metrics), write these bytes (`Reply`: an answer the gateway made itself), the client went away
(`ClientClosed`). From the upstream's events (`upstream`) it makes the client's bytes.

Rule 1 (routes): ``POST /v1/chat/completions`` and ``GET /v1/models`` go upstream;
    ``GET /healthz`` and ``GET /metrics`` are the server's; a known path with another method is
    405 with ``Allow``; any other path is 404.
Rule 2 (dialects, draft 7.2 and 7.3): ``application/llm-request+json`` is an LLM-Stream request
    and gets an LLM-Stream response; ``application/json`` is an OpenAI request, answered in
    OpenAI's dialect, or in LLM-Stream's when ``Accept`` carries ``profile="llm-stream-1.0"``;
    any other media type is 415 with ``Accept-Post``.
Rule 3 (bounds): a head over ``max_head_size`` is 431; a body over ``max_body`` is 413 before a
    byte of it is read; a malformed LLM-Stream request is 400 naming the JSON path; an OpenAI
    request that does not set ``stream`` to true is 400 (this gateway relays streams). An
    OpenAI request's body goes upstream piece by piece as it arrives, never held whole; an
    LLM-Stream request is read whole (bounded) to be translated.
Rule 4 (authentication, wire reference 5): the gateway's own token, if it has one, is checked
    first (401 with ``WWW-Authenticate``); the upstream's key is the server's, never the
    client's, and an upstream 401 or 403 reaches the client as 502 ``upstream_authentication``,
    never as its own 401.
Rule 5 (failures in the client's dialect): an upstream failure, or an upstream that stalls or
    breaks, is an LLM-Stream ``error`` with the draft's code and then exactly one
    ``stream.end``, or OpenAI's error object (an HTTP error before the stream, an error chunk
    within it). A cut upstream stays a cut for the client: no end marker.
Rule 6 (draft 8.1 and 8.2): nothing here logs a prompt or an answer; a tool call of a tool the
    request did not declare is not passed to an LLM-Stream client (an ``error`` instead).

It never does I/O and reads no clock: the server passes ``now`` where a timestamp is needed.
"""

from __future__ import annotations

import hmac
import json
from typing import Any, Final, Literal, final

import attrs
import h11

from ._jsonscan import RequestScanner
from ._pull import PullDecoder
from .errors import CallerProtocolError, Failure, FailureKind
from .events import (
    RequestFailed,
    ResponseStarted,
    Retrying,
    StreamEnded,
    StreamFailed,
    ToolCall,
)
from .exchange import ExchangeEvent, ModelsListed, ModelsRequest, PassThrough
from .llmstream._lifecycle import State
from .llmstream.negotiate import Dialect, request_dialect, response_dialect, unsupported_media_type
from .llmstream.request import LLMRequest, RequestError
from .openai.encoder import ChatStreamEncoder
from .openai.request import ChatRequest
from .translate import OpenAIToLLMStream, llm_to_openai

__all__ = [
    "DEFAULT_MAX_BODY",
    "ClientClosed",
    "Forward",
    "ForwardBody",
    "ForwardEnd",
    "GatewayConnection",
    "GatewayEvent",
    "LocalRequest",
    "Reply",
]

DEFAULT_MAX_BODY: Final = 32 * 1024 * 1024
"""Bytes a request body may take (32 MiB): a few full-size photos as base64, the most a chat
turn carries; OpenAI's own limit for a request is of that order."""

Outcome = Literal["ok", "failed", "rejected", "cut", "cancelled"]
_ROUTES: Final = {
    "/v1/chat/completions": "POST",
    "/v1/models": "GET",
    "/healthz": "GET",
    "/metrics": "GET",
}
_SSE_HEAD: Final = [
    ("Content-Type", "text/event-stream"),
    ("Cache-Control", "no-cache"),
    ("X-Accel-Buffering", "no"),
]


@final
@attrs.frozen(kw_only=True)
class Reply:
    """Bytes to write to the client: a whole answer the gateway made itself. ``close``: close
    the connection after writing them (the request's body was not read)."""

    data: bytes
    close: bool


@final
@attrs.frozen(kw_only=True)
class LocalRequest:
    """A request the server answers itself (``healthz``, ``metrics``): call `reply_local`."""

    name: Literal["healthz", "metrics"]


@final
@attrs.frozen(kw_only=True)
class Forward:
    """Send ``request`` upstream. For a `PassThrough`, the body follows as `ForwardBody`
    pieces and a `ForwardEnd`, as the client sends it."""

    request: ChatRequest | PassThrough | ModelsRequest
    dialect: Dialect  # the client's response dialect


@final
@attrs.frozen(kw_only=True)
class ForwardBody:
    """A piece of a `PassThrough` request's body, to send upstream at once."""

    data: bytes


@final
@attrs.frozen
class ForwardEnd:
    """The `PassThrough` body is whole."""


@final
@attrs.frozen
class ClientClosed:
    """The client closed its connection: cancel whatever is under way for it."""


GatewayEvent = Reply | LocalRequest | Forward | ForwardBody | ForwardEnd | ClientClosed


def _json_error(status: int, message: str, code: str, **extra: Any) -> bytes:
    return json.dumps(
        {"error": {"message": message, "type": code, "code": code, **extra}}, ensure_ascii=False
    ).encode()


class GatewayConnection(PullDecoder[GatewayEvent]):
    """One client connection; see the module docstring's rules.

    Args:
        token: the bearer token a client must send; ``None``: no check.
        max_body: bytes a request body may take (Rule 3).
        max_head_size: bytes a request head may take (h11's own default, 16 KiB).

    The server reads `method`, `target`, `dialect`, `outcome`, `upstream_failure` and
    `events_forwarded` for its log line and its metrics: never a prompt or an answer.
    """

    def __init__(
        self,
        *,
        token: str | None = None,
        max_body: int = DEFAULT_MAX_BODY,
        max_head_size: int = 16 * 1024,
    ) -> None:
        super().__init__()
        self.token = token
        self.max_body = max_body
        self.max_head_size = max_head_size
        self._h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=max_head_size)
        self._fed = 0  # bytes received in all, for the head's size
        self._head_at = 0  # where the request being read began
        self._lead: int | None = None  # its first byte, once it has come
        self._reset()

    def _reset(self) -> None:
        self.outcome: Outcome | None = None
        """How the current request ended, once it has: for the server's metrics."""
        self.method = ""
        self.target = ""
        self.upstream_failure: FailureKind | None = None
        self.dialect: Dialect | None = None  # the client's response dialect
        self.request_kind: Literal["chat", "models", "local"] | None = None
        self.events_forwarded = 0
        self._mode: Literal["idle", "llm-body", "pass-body", "forwarded", "answered"] = "idle"
        self._body = bytearray()
        self._pass: PassThrough | None = None
        self._scanner: RequestScanner | None = None
        self._request_id: str | None = None
        self._model = ""
        self._declared: frozenset[str] | None = None
        self._head_sent = False
        self._llm: OpenAIToLLMStream | None = None
        self._openai: ChatStreamEncoder | None = None

    # -- the client's request ---------------------------------------------------------------

    def _receive(self, data: bytes) -> None:
        if self._lead is None and data:
            self._lead = data[0]  # nothing of this head was held: it begins here
        self._fed += len(data)
        self._h11.receive_data(data)

    def _head_size(self) -> int:
        """The request head's length as far as h11 read it: what it consumed of this request
        (a whole head it then refused), else what it holds (one it is still waiting for)."""
        consumed = self._consumed() - self._head_at
        return consumed if consumed > 0 else len(self._h11.trailing_data[0])

    def _consumed(self) -> int:
        return self._fed - len(self._h11.trailing_data[0])

    def _fill(self) -> None:
        h = self._h11
        queue = self._queue
        while self._terminal is None:  # after the terminal event nothing more is read
            try:
                event = h.next_event()
            except h11.RemoteProtocolError as exc:
                if self._mode == "idle" or not self._head_sent:
                    # h11's words quote what it had read, which depends on the reads: not kept.
                    # A head past the bound is too large whether h11 saw all of it (and found
                    # it invalid) or only the part that filled its buffer; but one whose first
                    # byte is a space or a control character is invalid however long it is
                    # (h11 says so as soon as that byte comes, before it can know the size).
                    status = exc.error_status_hint
                    if (
                        status != 431
                        and self._head_size() > self.max_head_size
                        and (self._lead is None or self._lead > 0x20)
                    ):
                        status = 431
                    what = "request head too large" if status == 431 else "not valid HTTP/1.1"
                    self._reject(status, what, "invalid_request", close=True)
                else:
                    queue.append(ClientClosed())
                return
            kind = type(event)
            if event is h11.NEED_DATA or event is h11.PAUSED:
                return
            if kind is h11.Request:
                self._request(event)  # type: ignore[arg-type]
            elif kind is h11.Data:
                self._data(bytes(event.data))  # type: ignore[union-attr]
            elif kind is h11.EndOfMessage:
                self._end()
            else:  # ConnectionClosed: a server's h11 gives nothing else
                queue.append(ClientClosed())
                self._terminal = queue[-1]
                return

    def _request(self, req: h11.Request) -> None:
        if self._consumed() - self._head_at > self.max_head_size:  # h11 bounds only a partial one
            return self._reject(431, "request head too large", "invalid_request", close=True)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in req.headers}
        target = req.target.decode("latin-1").split("?", 1)[0]
        method = req.method.decode("latin-1")
        self.method, self.target = method, target
        allowed = _ROUTES.get(target)
        if allowed is None:
            return self._reject(404, f"no such path: {target}", "not_found", close=True)
        if method != allowed:
            return self._reject(
                405, f"{target} takes {allowed}", "method_not_allowed", close=True,
                headers=[("Allow", allowed)],
            )  # fmt: skip
        if target in ("/healthz", "/metrics"):
            self.request_kind = "local"
            self._mode = "answered"
            self._queue.append(LocalRequest(name=target[1:]))  # type: ignore[arg-type]
            return None
        if self.token is not None and not hmac.compare_digest(
            headers.get("authorization", "").encode(), f"Bearer {self.token}".encode()
        ):
            return self._reject(
                401, "the gateway's token is missing or wrong", "authentication", close=True,
                headers=[("WWW-Authenticate", 'Bearer realm="svir-gateway"')],
            )  # fmt: skip
        if target == "/v1/models":
            self.request_kind = "models"
            self.dialect = "openai"
            self._mode = "forwarded"
            self._queue.append(Forward(request=ModelsRequest(), dialect="openai"))
            return None
        self.request_kind = "chat"
        length = headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body:
            return self._reject(
                413, f"the body is larger than {self.max_body} bytes", "request_too_large",
                close=True,
            )  # fmt: skip
        dialect = request_dialect(headers.get("content-type"))
        if dialect is None:
            status, extra, body = unsupported_media_type(headers.get("content-type"))
            return self._reply(status, extra, body, close=True, outcome="rejected")
        self.dialect = response_dialect(dialect, headers.get("accept"))
        if dialect == "llm-stream" or length is None:
            self._mode = "llm-body" if dialect == "llm-stream" else "pass-body"
            self._pass = None  # held whole: a chunked body has no length to forward with
            if dialect == "openai":
                self._scanner = RequestScanner()
            return None
        self._scanner = RequestScanner()
        self._pass = PassThrough(content_length=int(length))
        self._mode = "pass-body"
        self._queue.append(Forward(request=self._pass, dialect=self.dialect))
        return None

    def _data(self, data: bytes) -> None:
        if self._mode == "llm-body" or (self._mode == "pass-body" and self._pass is None):
            self._body += data
            if len(self._body) > self.max_body:
                self._reject(
                    413, f"the body is larger than {self.max_body} bytes", "request_too_large",
                    close=True,
                )  # fmt: skip
            elif self._scanner is not None:
                self._scanner.feed(data)
        elif self._mode == "pass-body":  # the body goes upstream as it comes
            assert self._scanner is not None
            self._scanner.feed(data)
            self._queue.append(ForwardBody(data=data))
        # else a body on a GET (the model listing, /healthz, /metrics): it means nothing, and
        # is read and dropped; nothing is read at all after a reply that closes

    def _end(self) -> None:
        if self._mode == "llm-body":
            self._mode = "forwarded"
            self._llm_request(bytes(self._body))
        elif self._mode == "pass-body":
            scanner = self._scanner
            assert scanner is not None
            if scanner.stream is not True:
                self._mode = "answered"
                message = "this gateway relays streams: send the request with stream set to true"
                # if the upstream has the head already, the server cancels that request
                self._reject(400, message, "invalid_request", close=self._pass is not None)
                return
            self._model = scanner.model or ""
            self._declared = frozenset(scanner.tools) if scanner.tools else None
            if self._pass is None:  # held whole (no Content-Length): forward it now
                self._pass = PassThrough(content_length=len(self._body))
                self._pass.declared_tools = self._declared
                self._pass.include_usage = scanner.include_usage
                self._mode = "forwarded"
                self._queue.append(Forward(request=self._pass, dialect=self.dialect or "openai"))
                self._queue.append(ForwardBody(data=bytes(self._body)))
                self._body = bytearray()
            else:
                self._pass.declared_tools = self._declared
                self._pass.include_usage = scanner.include_usage
                self._mode = "forwarded"
            self._queue.append(ForwardEnd())

    def _llm_request(self, body: bytes) -> None:
        try:
            request = LLMRequest.parse(body)
        except RequestError as exc:
            return self._reject(400, exc.message, "invalid_request", param=exc.path)
        try:
            chat = llm_to_openai(request)
        except ValueError as exc:
            return self._reject(400, str(exc), "invalid_request")
        self._request_id = request.request_id
        self._model = request.model
        self._declared = request.tool_names if request.tools else None
        self._queue.append(Forward(request=chat, dialect=self.dialect or "llm-stream"))
        return None

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
        body = _json_error(status, message, code, **extra)
        head = [("Content-Type", "application/json"), *(headers or [])]
        self._reply(status, head, body, close=close, outcome="rejected")

    def _reply(
        self,
        status: int,
        headers: list[tuple[str, str]],
        body: bytes,
        *,
        close: bool,
        outcome: Outcome,
    ) -> None:
        data = self._response(status, headers, body, close=close)
        self._mode = "answered"
        self.outcome = outcome
        self._queue.append(Reply(data=data, close=close))
        self._terminal = self._queue[-1]

    def _response(
        self, status: int, headers: list[tuple[str, str]], body: bytes, *, close: bool
    ) -> bytes:
        """A whole response with its Content-Length (and ``Connection: close`` if asked)."""
        head = [*headers, ("Content-Length", str(len(body)))]
        if close:  # h11 lets a server answer before the body, or after a bad request
            head.append(("Connection", "close"))
        h = self._h11
        out = h.send(h11.Response(status_code=status, headers=head)) or b""
        out += (h.send(h11.Data(data=body)) or b"") if body else b""
        out += h.send(h11.EndOfMessage()) or b""
        self._head_sent = True
        return out

    def busy(self, retry_after: int) -> bytes:
        """503 with ``Retry-After``: the server holds as many streams as it may."""
        self._mode = "answered"
        self.outcome = "rejected"
        body = _json_error(503, "the gateway holds as many streams as it may", "overloaded")
        head = [("Content-Type", "application/json"), ("Retry-After", str(retry_after))]
        return self._response(503, head, body, close=True)

    def reply_local(self, status: int, content_type: str, body: bytes) -> bytes:
        """The bytes of the server's own answer to a `LocalRequest`."""
        self.outcome = "ok"
        return self._response(status, [("Content-Type", content_type)], body, close=False)

    # -- the upstream's answer ------------------------------------------------------------------

    def upstream(self, events: list[ExchangeEvent], *, now: int = 0) -> bytes:
        """The client's bytes for events from the upstream's `Exchange`, in order (Rule 5).
        The stream events of one read go out as one HTTP chunk.

        Args:
            now: seconds since the epoch, for ``stream.start``'s ``created`` when the upstream
                gives none.
        """
        out: list[bytes] = []
        pending: list[bytes] = []  # the stream's bytes of these events, framed once
        for event in events:
            if isinstance(event, (ResponseStarted, Retrying)):
                continue
            if isinstance(event, RequestFailed):
                out.append(self._failed(event.failure, now))
            elif isinstance(event, ModelsListed):
                out.append(self._listing(event))
            else:
                if not self._head_sent:
                    out.append(self._stream_head())
                pending.append(self._encode(event, now))
                if isinstance(event, StreamEnded):
                    out.append(self._end_stream(b"".join(pending), event.complete))
                    pending = []
        if pending:
            out.append(self._chunk(b"".join(pending)))
        return b"".join(out)

    def _encode(self, event: ExchangeEvent, now: int) -> bytes:
        """A stream event in the client's dialect, unframed."""
        self.events_forwarded += 1
        if self.dialect == "llm-stream":
            if isinstance(event, ToolCall) and event.declared is False:  # Rule 6, draft 8.2
                event = StreamFailed(
                    error=Failure(
                        kind=FailureKind.REJECTED,
                        message=f"the model called {event.name!r}, which the request did not "
                        "declare; the gateway does not pass it on (draft section 8.2)",
                        code="undeclared_tool",
                    )
                )
            return self._translator(now).feed(event)  # type: ignore[arg-type]
        return self._encoder().encode(event)  # type: ignore[arg-type]

    def _listing(self, event: ModelsListed) -> bytes:
        body = json.dumps(
            {
                "object": "list",
                "data": [
                    {"id": m.id, "object": "model", "owned_by": "upstream"} for m in event.models
                ],
            }
        ).encode()
        self.outcome = "ok"
        return self._response(200, [("Content-Type", "application/json")], body, close=False)

    def _translator(self, now: int) -> OpenAIToLLMStream:
        if self._llm is None:
            self._llm = OpenAIToLLMStream(
                model=self._model, request_id=self._request_id, created=now
            )
        return self._llm

    def _encoder(self) -> ChatStreamEncoder:
        if self._openai is None:
            self._openai = ChatStreamEncoder(tool_call_deltas=True)
        return self._openai

    def _stream_head(self) -> bytes:
        self._head_sent = True
        return self._h11.send(h11.Response(status_code=200, headers=_SSE_HEAD)) or b""

    def _chunk(self, data: bytes) -> bytes:
        return (self._h11.send(h11.Data(data=data)) or b"") if data else b""

    def _end_stream(self, data: bytes, complete: bool) -> bytes:
        """The last events; a stream that was cut stays cut (Rule 5): no end of body, so the
        client sees the connection close before the chunked body's end."""
        out = self._chunk(data)
        self._mode = "answered"
        if self._llm is not None:
            marker = self._llm.encoder.state is State.ENDED
        else:
            marker = self._openai is not None and self._openai.done
        if complete or marker:
            self.outcome = "ok" if complete else "failed"
            out += self._h11.send(h11.EndOfMessage()) or b""
        else:
            self.outcome = "cut"
            self._h11.send_failed()
        return out

    def _failed(self, failure: Failure, now: int) -> bytes:
        """An upstream failure before the stream (Rules 4 and 5)."""
        self.outcome = "failed"
        self.upstream_failure = failure.kind
        self._mode = "answered"
        if failure.kind is FailureKind.AUTHENTICATION:  # Rule 4: never the client's 401
            failure = attrs.evolve(
                failure,
                message=f"the upstream refused the gateway's credentials: {failure.message}",
                code="upstream_authentication",
                status=502,
            )
        if self.dialect == "llm-stream":
            translator = self._translator(now)
            data = translator.feed(StreamFailed(error=failure))
            data += translator.feed(StreamEnded(complete=False, done=True))
            return self._stream_head() + self._chunk(data) + self._end_of_body()
        status = failure.status if failure.status and failure.status >= 400 else 502
        headers = [("Content-Type", "application/json")]
        if failure.retry_after is not None:
            headers.append(("Retry-After", str(max(0, round(failure.retry_after)))))
        body = _json_error(status, failure.message, failure.code or failure.kind.value)
        return self._response(status, headers, body, close=False)

    def upstream_broken(
        self, reason: str, *, kind: FailureKind = FailureKind.TRANSIENT, now: int = 0
    ) -> bytes:
        """The upstream stalled, dropped or could not be reached, or the gateway is stopping:
        the client's last bytes, an error in its dialect (Rule 5), the answer marked partial."""
        if self._mode == "answered":
            return b""  # the answer is whole already
        failure = Failure(kind=kind, message=reason, code=kind.value)
        self.upstream_failure = kind
        if not self._head_sent:
            if self.dialect == "llm-stream" or self.request_kind != "chat":
                return self._failed(attrs.evolve(failure, status=None), now)
            status = 504 if kind is FailureKind.TIMEOUT else 502
            return self._failed(attrs.evolve(failure, status=status), now)
        self.events_forwarded += 1
        if self.dialect == "llm-stream":
            translator = self._translator(now)
            data = translator.feed(StreamFailed(error=failure))
            data += translator.feed(StreamEnded(complete=False, done=True))
        else:
            data = self._encoder().encode(StreamFailed(error=failure))
        self.outcome = "failed"
        self._mode = "answered"
        return self._chunk(data) + self._end_of_body()

    def _end_of_body(self) -> bytes:
        return self._h11.send(h11.EndOfMessage()) or b""

    # -- the next request on this connection -------------------------------------------------

    @property
    def reusable(self) -> bool:
        """The answer is whole and the client may send another request."""
        h = self._h11
        return h.our_state is h11.DONE and h.their_state is h11.DONE

    def start_next_cycle(self) -> None:
        if not self.reusable:
            raise CallerProtocolError("the client connection is not reusable: close it")
        self._h11.start_next_cycle()
        self._head_at = self._consumed()
        held = self._h11.trailing_data[0]  # the next head's first bytes may be here already
        self._lead = held[0] if held else None
        self._reset()
        self._queue = []
        self._qpos = 0
        self._terminal = None
        self._terminated = False
        self._dirty = True
