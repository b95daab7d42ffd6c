"""`ClientConnection`: h11 in the client role under an `Exchange`, one request at a time.

h11 (itself sans-IO) does the HTTP/1.1 framing: it writes the request head and frames the body,
and it reads the response head and a body framed by Content-Length or by the server closing the
connection. A chunked body, the framing LLM servers use with one chunk per SSE event, is read by
`_chunked.ChunkedReader`, which applies h11's rules (held to h11's verdicts by a property test)
at a fraction of h11's per-chunk cost. The `Exchange` decides what the response means and the
dialect's decoder sees the body bytes only.

Rule 1 (bytes out): `send` gives the head, then the body in pieces as the `RequestBody`
    produces them, framed by its exact Content-Length (never chunked: not every server takes a
    chunked body, wire reference 2.3). h11 checks that the body is as long as it said.
Rule 2 (bytes in): the pull API (``receive_data``/``next_event``, ``feed``/``close``) gives
    `ResponseStarted`, then `RequestFailed`, `ModelsListed` or the stream's events through
    `StreamEnded`. ``receive_data(b"")`` says the server closed the connection.
Rule 3 (bounds): the response head may take ``max_head_size`` bytes, checked by h11 while it is
    incomplete and by the exchange, on its exact size, once it is complete, so the verdict does
    not depend on how the bytes were split (h11 #182); the bound is named in the error. An error
    body is bounded by the exchange too (``max_error_body``).
Rule 4 (an early end): a server that closes the connection in the middle of a body ends it for
    the decoder, which keeps what arrived (``Completion.interrupted`` says why); so does
    `interrupt`, which a transport calls when it gives up (a timeout, a cancel).
Rule 5 (keep-alive): after a whole response to a whole request, `reusable` is true and
    `start_next_cycle` readies the connection for the next request (unless the server said
    ``Connection: close`` or spoke HTTP/1.0). After an interruption, a failed send or an error
    it is false: close the connection.
Rule 6 (the keep-alive race, RFC 9112 9.3.1): a server may close an idle connection just as the
    next request goes out (llama.cpp closes every one after a stream, while it advertises
    keep-alive). On a reused connection that ends without a byte of a response, the error is
    `StaleConnection` (a `PeerProtocolError`): nothing was processed, so the request may go
    again on a new connection. On a fresh connection the same end is a plain
    `PeerProtocolError`: the server refused this request.

This module never does I/O: a transport moves the bytes (``svir_proto.transports``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Final

import h11

from ._chunked import ChunkedReader
from ._pull import PullDecoder
from .errors import CallerProtocolError, PeerProtocolError, StaleConnection, SvirProtocolError
from .events import Completion, RequestFailed
from .exchange import (
    DEFAULT_MAX_HEAD_SIZE,
    Exchange,
    ExchangeEvent,
    ExchangeOptions,
    PassThrough,
    Request,
    TargetForm,
    check_options,
)
from .openai.endpoint import Endpoint, HeaderItems, merge_headers, request_headers

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["ClientConnection"]


class ClientConnection(PullDecoder[ExchangeEvent]):
    """One HTTP/1.1 connection to ``endpoint``, as the client; see the module docstring.

    Args:
        endpoint: the server.
        headers: the caller's own headers, sent with every request (`Exchange`).
        target_form: ``"absolute"`` when the connection goes to an HTTP proxy (`Exchange`).
        options: `ExchangeOptions`, passed to each `Exchange` (``user_agent``,
            ``max_head_size``, the decoders' bounds, ``think_opened``...); ``max_head_size``
            bounds h11's reading of the head too (Rule 3).

    Raises:
        TypeError, ValueError: an unknown option, or a value of the wrong type or range.
    """

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        headers: HeaderItems | None = None,
        target_form: TargetForm = "origin",
        **options: Unpack[ExchangeOptions],
    ) -> None:
        super().__init__()
        check_options(options, where="ClientConnection()")
        self.endpoint: Final = endpoint
        self.headers: Final = request_headers(headers)
        self.max_head_size: Final = options.get("max_head_size", DEFAULT_MAX_HEAD_SIZE)
        self._target_form: TargetForm = target_form
        self._options = options
        self._cycles = 0  # responses this connection served before the current one
        self._h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=self.max_head_size)
        self._exchange: Exchange | None = None
        self._fed = 0  # bytes received in all, for the head's size
        self._head_at = 0  # where the response being read began
        self._lead: int | None = None  # its first byte, once it has come
        self._broken = False
        self._chunked: ChunkedReader | None = None  # reads the body of a chunked response
        self._pending: list[bytes] = []  # bytes for the chunked reader
        self._eof = False
        self._ended = False  # the chunked body's end was passed on
        self._keep_alive = True

    # -- sending ------------------------------------------------------------------------------

    def send(self, request: Request, *, headers: HeaderItems | None = None) -> Iterator[bytes]:
        """Start an exchange: returns the bytes to write, head first, then the body (Rule 1).

        The request is checked and encoded now; the body's files are read as the iterator is
        consumed. For a `PassThrough` request the iterator gives the head only: send the body
        with `send_data` and `send_end`. If writing fails, call `send_failed`.

        Args:
            headers: headers for this request only: they replace the connection's own headers
                of the same name.

        Raises:
            CallerProtocolError: an exchange is under way, or the connection cannot take another
                request (see `reusable` and `start_next_cycle`).
            ValueError: a header that is malformed or one svir-proto sets itself.
        """
        if self._exchange is not None or self._h11.our_state is not h11.IDLE:
            raise CallerProtocolError(
                f"cannot send a request in state {self._h11.our_state!r}: "
                "one exchange at a time (start_next_cycle after a reusable response)"
            )
        exchange = Exchange(
            self.endpoint,
            request,
            headers=merge_headers(self.headers, headers),
            target_form=self._target_form,
            **self._options,
        )
        self._exchange = exchange
        self._head_at = self._head_end()
        self._held_lead()
        return self._bytes(exchange)

    def _bytes(self, exchange: Exchange) -> Iterator[bytes]:
        h = self._h11
        yield h.send(
            h11.Request(method=exchange.method, target=exchange.target, headers=exchange.headers)
        )
        if isinstance(exchange.request, PassThrough):
            return  # the caller sends the body: send_data, then send_end
        if exchange.body is not None:
            for piece in exchange.body:
                yield h.send(h11.Data(data=piece))
        self.send_end()

    def send_data(self, data: bytes) -> bytes:
        """A piece of a `PassThrough` request's body: the bytes to write.

        Raises:
            CallerProtocolError: the body would be longer than its Content-Length said, or the
                request is not a `PassThrough` under way.
        """
        try:
            return self._h11.send(h11.Data(data=data)) or b""
        except h11.LocalProtocolError as exc:
            raise CallerProtocolError(f"cannot send body data: {exc}") from exc

    def send_end(self) -> bytes:
        """The end of the request's body (h11 checks it was as long as it said)."""
        try:
            return self._h11.send(h11.EndOfMessage()) or b""
        except h11.LocalProtocolError as exc:
            raise CallerProtocolError(f"cannot end the body: {exc}") from exc

    def send_failed(self) -> None:
        """Writing the request failed: the connection cannot be reused. A response the server
        sent before it stopped reading (an early 413 or 401) can still be received."""
        self._h11.send_failed()
        self._broken = True

    # -- receiving ----------------------------------------------------------------------------

    @property
    def exchange(self) -> Exchange | None:
        """The exchange under way (or just finished), or ``None``."""
        return self._exchange

    @property
    def result(self) -> Completion:
        """The current exchange's `Completion` (see `Exchange.result`)."""
        if self._exchange is None:
            raise CallerProtocolError("no request was sent")
        return self._exchange.result

    @property
    def reusable(self) -> bool:
        """Rule 5: both sides finished the exchange and neither asked to close."""
        if self._broken or self._error is not None or self._h11.our_state is not h11.DONE:
            return False
        if self._chunked is not None:
            return self._chunked.done and self._keep_alive
        return self._h11.their_state is h11.DONE

    @property
    def finishing(self) -> bool:
        """The exchange is over (its terminal event came) but the response body has not ended
        yet: reading on until `reusable` lets the connection serve the next request. ``False``
        after a failure, whose body may be long or stalled (close the connection instead)."""
        terminal = None if self._exchange is None else self._exchange.terminal
        return (
            terminal is not None
            and not isinstance(terminal, RequestFailed)
            and not self._broken
            and self._error is None
            and (
                not self._chunked.done
                if self._chunked is not None
                else self._h11.their_state is h11.SEND_BODY
            )
        )

    @property
    def body_ended(self) -> bool:
        """The response body ended where its framing said: its last chunk, its length, or the
        close that delimits it (``False`` for a body cut short)."""
        if self._chunked is not None:
            return self._chunked.done
        return self._h11.their_state in (h11.DONE, h11.MUST_CLOSE, h11.CLOSED)

    def start_next_cycle(self) -> None:
        """Ready a `reusable` connection for the next request.

        Raises:
            CallerProtocolError: the connection is not reusable.
        """
        if not self.reusable:
            raise CallerProtocolError("the connection is not reusable: close it")
        if self._chunked is not None:  # h11 did not read that body: a fresh one takes over
            leftover = self._chunked.leftover
            self._h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=self.max_head_size)
            if leftover:
                self._h11.receive_data(leftover)
            self._chunked = None
        else:
            self._h11.start_next_cycle()
        self._cycles += 1
        self._exchange = None
        self._queue = []
        self._qpos = 0
        self._terminal = None
        self._terminated = False
        self._dirty = True  # bytes of the next response may be here already

    def interrupt(self, reason: str) -> list[ExchangeEvent]:
        """The client gives up on the response (Rule 4): returns the events that end the
        exchange as far as it got, and marks its result ``interrupted`` with ``reason``. The
        connection is then not reusable."""
        self._broken = True
        exchange = self._exchange
        if exchange is None or self._terminated:
            return []  # a finished exchange keeps its result as it was
        out = self._queue[self._qpos :]
        self._queue = []
        self._qpos = 0
        if self._error is None:
            out += exchange.interrupt(reason)
        self._mark_terminal(out)
        return out

    def _held_lead(self) -> None:
        """The response head begins at ``_head_at``: its first byte, if h11 holds it already."""
        held = self._h11.trailing_data[0]
        self._lead = held[0] if held else None

    def _receive(self, data: bytes) -> None:
        if self._lead is None and data:
            self._lead = data[0]  # nothing of this head was held: it begins here
        self._fed += len(data)
        if self._chunked is None:
            self._h11.receive_data(data)
        elif data:
            self._pending.append(data)
        else:
            self._eof = True

    def _fill(self) -> None:
        if self._chunked is not None:
            self._fill_chunked()
            return
        exchange = self._exchange
        h = self._h11
        queue = self._queue
        try:
            while True:
                try:
                    event = h.next_event()
                except h11.RemoteProtocolError as exc:
                    self._framing_error(exc, queue)
                    break
                kind = type(event)
                if kind is h11.Data:
                    queue += exchange.receive_body(event.data)  # type: ignore[union-attr]
                    failed = exchange.error  # type: ignore[union-attr]
                    if failed is not None:  # it came first: before any later framing error
                        raise failed
                elif event is h11.NEED_DATA or event is h11.PAUSED:
                    break
                elif exchange is None:
                    raise PeerProtocolError(
                        "the server sent a response to no request", offset=self._head_at
                    )
                elif kind is h11.Response:
                    queue += exchange.receive_head(
                        event.status_code,  # type: ignore[union-attr]
                        event.headers,  # type: ignore[union-attr]
                        size=self._head_end() - self._head_at,
                    )
                    if self._take_chunked(event):  # type: ignore[arg-type]
                        self._mark_terminal(queue)
                        self._fill_chunked()
                        return
                elif kind is h11.EndOfMessage:
                    queue += exchange.end_of_body()
                elif kind is h11.InformationalResponse:
                    self._head_at = self._head_end()  # the response proper begins after it
                    self._held_lead()
                else:  # ConnectionClosed, after a whole response (h11 raises before one)
                    break
        except SvirProtocolError as exc:
            queue += exc.pending_events  # type: ignore[arg-type]
            exc.pending_events = ()  # they are returned now: raised again, it brings none
            self._deferred = exc
        self._mark_terminal(queue)

    def _take_chunked(self, response: h11.Response) -> bool:
        """A chunked body is read by our reader, not h11's: take what h11 holds of it."""
        headers = response.headers
        self._keep_alive = response.http_version == b"1.1" and not any(
            name == b"connection" and b"close" in value.lower() for name, value in headers
        )
        if response.status_code in (204, 304) or not any(
            name == b"transfer-encoding"
            for name, _ in headers  # h11 allows only "chunked"
        ):
            return False
        self._chunked = ChunkedReader(max_line=self.max_head_size)
        self._ended = False
        held, closed = self._h11.trailing_data
        self._pending = [held] if held else []
        self._eof = closed
        return True

    def _fill_chunked(self) -> None:
        exchange = self._exchange
        reader = self._chunked
        assert exchange is not None
        assert reader is not None
        queue = self._queue
        data = b"".join(self._pending) if len(self._pending) != 1 else self._pending[0]
        self._pending = []
        try:
            if data:
                body = reader.feed(data)
                if body:
                    queue += exchange.receive_body(body)
                    if exchange.error is not None:  # it came first: before the framing error
                        raise exchange.error
                if reader.error is not None:
                    raise reader.error
                if reader.done and not self._ended:  # the decoder hears so, even after [DONE]
                    self._ended = True
                    queue += exchange.end_of_body()
            if self._eof and not reader.done:  # Rule 4
                self._broken = True
                if not exchange.finished:
                    why = "the connection closed before the body ended (incomplete chunked read)"
                    queue += exchange.interrupt(why)
        except SvirProtocolError as exc:
            queue += exc.pending_events  # type: ignore[arg-type]
            exc.pending_events = ()  # they are returned now: raised again, it brings none
            self._deferred = exc
        self._mark_terminal(queue)

    def _mark_terminal(self, events: list[ExchangeEvent]) -> None:
        exchange = self._exchange
        if self._terminal is None and exchange is not None:
            terminal = exchange.terminal
            if terminal is not None and events and events[-1] is terminal:
                self._terminal = terminal

    def _head_size(self) -> int:
        """The response head's length as far as h11 read it: what it consumed of this head (a
        whole head it then refused), else what it holds (one it is still waiting for)."""
        consumed = self._head_end() - self._head_at
        return consumed if consumed > 0 else len(self._h11.trailing_data[0])

    def _head_end(self) -> int:
        """Where the bytes h11 has consumed end: after a head, its end."""
        return self._fed - len(self._h11.trailing_data[0])

    def _framing_error(self, exc: h11.RemoteProtocolError, queue: list[ExchangeEvent]) -> None:
        exchange = self._exchange
        closed = self._h11.trailing_data[1]
        headed = exchange is not None and exchange.status is not None
        if closed and headed:  # Rule 4: the server closed the connection inside the body
            assert exchange is not None
            self._broken = True
            if not exchange.finished:
                queue += exchange.interrupt(f"the connection closed before the body ended ({exc})")
            return
        if closed and exchange is not None:
            if self._fed == self._head_at and self._cycles:  # Rule 6
                raise StaleConnection(
                    "the server had closed the kept-alive connection before this request "
                    "reached it (nothing of a response came): send it again on a new connection",
                    offset=self._fed,
                ) from exc
            what = "a response" if self._fed == self._head_at else "a whole response head"
            raise PeerProtocolError(
                f"the server closed the connection without {what}", offset=self._fed
            ) from exc
        # h11's "Receive buffer too long" (431), or a head past the bound that h11 saw whole
        # and found invalid: too large either way, however the bytes came; but one whose first
        # byte is a space or a control character is invalid however long it is (h11 says so
        # as soon as that byte comes, before it can know the size)
        if not headed and (
            exc.error_status_hint == 431
            or (
                self._head_size() > self.max_head_size
                and self._lead is not None
                and self._lead > 0x20
            )
        ):
            raise PeerProtocolError(
                f"the response head is larger than max_head_size ({self.max_head_size} bytes)",
                offset=self._head_at,
                limit="max_head_size",
                limit_value=self.max_head_size,
            ) from exc
        # h11 says what broke, not where: no offset rather than one that depends on the reads
        raise PeerProtocolError(f"bad HTTP from the server: {exc}") from exc
