"""`ClientConnection`: HTTP/1.1 in the client role under an `Exchange`, one request at a time.

The request head is written and the response head read by `_http1` (h11's rules, at a fraction
of h11's cost: a head is the per-request cost that matters most); the response body is framed
by its Content-Length, by chunks (`_chunked.ChunkedReader`, LLM servers send one chunk per SSE
event), or by the server closing the connection (RFC 9112 6.3). The `Exchange` decides what the
response means and the dialect's decoder sees the body bytes only.

Rule 1 (bytes out): `send` gives the head, then the body in pieces as the `RequestBody`
    produces them, framed by its exact Content-Length (never chunked: not every server takes a
    chunked body, wire reference 2.3). The body must be as long as it said.
Rule 2 (bytes in): the pull API (``receive_data``/``next_event``, ``feed``/``close``) gives
    `ResponseStarted`, then `RequestFailed`, `ModelsListed` or the stream's events through
    `StreamEnded`. ``receive_data(b"")`` says the server closed the connection. Informational
    (1xx) answers are skipped, within ``max_head_size`` bytes in all (an endless run of them
    breaks the protocol: attack 46); a 101 nobody asked for breaks the protocol, and so does
    a status line of a version other than 1.x.
Rule 3 (bounds): the response head may take ``max_head_size`` bytes, whole or not yet whole,
    so the verdict does not depend on how the bytes were split (h11 #182); the bound is named
    in the error. A head whose first byte is a space or a control character is bad HTTP however
    long it is (h11 says so as soon as that byte comes). An error body is bounded by the
    exchange (``max_error_body``).
Rule 4 (an early end): a server that closes the connection in the middle of a body ends it for
    the decoder, which keeps what arrived (``Completion.interrupted`` says why); so does
    `interrupt`, which a transport calls when it gives up (a timeout, a cancel).
Rule 5 (keep-alive): after a whole response to a whole request, `reusable` is true and
    `start_next_cycle` readies the connection for the next request (unless either side said
    ``Connection: close``, the server spoke HTTP/1.0, or it closed). After an interruption, a
    failed send or an error it is false: close the connection. So it is when bytes follow a
    response before the next request went out: a server said more than it was asked (a body
    longer than its framing, a 408 before a close), and a pool that reused the connection
    would hand them to another request as its answer.
Rule 6 (the keep-alive race, RFC 9112 9.3.1): a server may close an idle connection just as the
    next request goes out (llama.cpp closes every one after a stream, while it advertises
    keep-alive). On a reused connection that ends without a byte of a response, the error is
    `StaleConnection` (a `PeerProtocolError`): nothing was processed, so the request may go
    again on a new connection. On a fresh connection the same end is a plain
    `PeerProtocolError`: the server refused this request.

This module never does I/O: a transport moves the bytes (``svir_proto.transports``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Final, Literal

from ._chunked import ChunkedReader
from ._http1 import BadHead, blank_start, has_token, head_end, read_response, request_head
from ._pull import PullDecoder
from .body import RequestBody
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

_ODD_SPACE: Final = re.compile(rb"[\x1c-\x1f\x85\xa0]")
Ours = Literal["idle", "body", "done", "failed"]
Theirs = Literal["head", "body", "done"]
Framing = Literal["length", "chunked", "close"]


class ClientConnection(PullDecoder[ExchangeEvent]):
    """One HTTP/1.1 connection to ``endpoint``, as the client; see the module docstring.

    Args:
        endpoint: the server.
        headers: the caller's own headers, sent with every request (`Exchange`).
        target_form: ``"absolute"`` when the connection goes to an HTTP proxy (`Exchange`).
        options: `ExchangeOptions`, passed to each `Exchange` (``user_agent``,
            ``max_head_size``, the decoders' bounds, ``think_opened``...); ``max_head_size``
            bounds the head while it is read too (Rule 3).

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
        self._exchange: Exchange | None = None
        self._ours: Ours = "idle"
        self._to_send = 0  # bytes of the request's body still to send
        self._close_asked = False  # the request said Connection: close
        self._theirs: Theirs = "head"
        self._framing: Framing = "close"
        self._left = 0  # bytes of a Content-Length body still to come
        self._buf = bytearray()  # a head being read, or what followed a whole response
        self._search = 0  # where the head's blank line may begin, in _buf
        self._pending: list[bytes] = []  # body bytes not read yet
        self._fed = 0  # bytes received in all
        self._head_at = 0  # where the response being read began
        self._asked_at = 0  # where the answer to the request under way begins (a 1xx's, say)
        self._broken = False
        self._chunked: ChunkedReader | None = None  # reads the body of a chunked response
        self._keep_alive = True

    # -- sending ------------------------------------------------------------------------------

    def send(
        self,
        request: Request,
        *,
        headers: HeaderItems | None = None,
        body: RequestBody | None = None,
    ) -> Iterator[bytes]:
        """Start an exchange: returns the bytes to write, head first, then the body (Rule 1).

        The request is checked and encoded now (unless ``body`` is given); the body's files are
        read as the iterator is consumed. For a `PassThrough` request the iterator gives the
        head only: send the body with `send_data` and `send_end`. If writing fails, call
        `send_failed`.

        Args:
            headers: headers for this request only: they replace the connection's own headers
                of the same name.
            body: ``request.body()``, made beforehand: encoding a long conversation takes a
                while, which a server's event loop may want spent in a worker thread.

        Raises:
            CallerProtocolError: an exchange is under way, or the connection cannot take another
                request (see `reusable` and `start_next_cycle`).
            ValueError: a header that is malformed or one svir-proto sets itself.
        """
        if self._exchange is not None or self._ours != "idle":
            raise CallerProtocolError(
                f"cannot send a request while the last one is {self._ours!r}: "
                "one exchange at a time (start_next_cycle after a reusable response)"
            )
        asked = merge_headers(self.headers, headers) if headers else self.headers
        exchange = Exchange(
            self.endpoint, request, body=body, headers=asked, target_form=self._target_form,
            **self._options,
        )  # fmt: skip
        head = request_head(exchange.method, exchange.target, exchange.headers)
        self._exchange = exchange
        self._head_at = self._asked_at = self._fed - len(self._buf) - sum(map(len, self._pending))
        self._to_send = exchange.content_length
        extra = (*asked, *request.headers) if isinstance(request, PassThrough) else asked
        self._close_asked = bool(extra) and any(  # only a caller's headers say Connection
            name.lower() == "connection"
            and "close" in (v.strip().lower() for v in value.split(","))
            for name, value in extra
        )
        return self._bytes(exchange, head)

    def _bytes(self, exchange: Exchange, head: bytes) -> Iterator[bytes]:
        self._ours = "body"
        yield head
        if isinstance(exchange.request, PassThrough):
            return  # the caller sends the body: send_data, then send_end
        if exchange.body is not None:
            for piece in exchange.body:
                yield self.send_data(piece)
        self.send_end()

    def send_data(self, data: bytes) -> bytes:
        """A piece of a `PassThrough` request's body: the bytes to write.

        Raises:
            CallerProtocolError: the body would be longer than its Content-Length said, or the
                request is not a `PassThrough` under way.
        """
        if self._ours != "body":
            raise CallerProtocolError(f"cannot send body data while the request is {self._ours!r}")
        if len(data) > self._to_send:
            self._ours = "failed"
            raise CallerProtocolError(
                f"cannot send body data: {len(data)} bytes where {self._to_send} were left of "
                "the Content-Length"
            )
        self._to_send -= len(data)
        return data if type(data) is bytes else bytes(data)

    def send_end(self) -> bytes:
        """The end of the request's body (which must be as long as it said)."""
        if self._ours != "body":
            raise CallerProtocolError(f"cannot end the body while the request is {self._ours!r}")
        if self._to_send:
            self._ours = "failed"
            raise CallerProtocolError(
                f"cannot end the body: {self._to_send} bytes of its Content-Length are missing"
            )
        self._ours = "done"
        return b""

    def send_failed(self) -> None:
        """Writing the request failed: the connection cannot be reused. A response the server
        sent before it stopped reading (an early 413 or 401) can still be received."""
        self._ours = "failed"
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
        """Rule 5: both sides finished the exchange, neither asked to close, nor did the
        server close, and nothing came after the response."""
        return (
            self._ours == "done"
            and self._theirs == "done"
            and self._keep_alive
            and not self._broken
            and not self._eof
            and self._error is None
            and not self._buf
            and not self._pending
        )

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
            and self._theirs == "body"
        )

    @property
    def body_ended(self) -> bool:
        """The response body ended where its framing said: its last chunk, its length, or the
        close that delimits it (``False`` for a body cut short)."""
        return self._theirs == "done" and self._exchange is not None

    def start_next_cycle(self) -> None:
        """Ready a `reusable` connection for the next request.

        Raises:
            CallerProtocolError: the connection is not reusable.
        """
        if not self.reusable:
            raise CallerProtocolError("the connection is not reusable: close it")
        self._cycles += 1
        self._fast = None
        self._exchange = None
        self._ours = "idle"
        self._theirs = "head"
        self._chunked = None
        self._search = 0
        self._queue = []
        self._qpos = 0
        self._terminal = None
        self._terminated = False
        self._dirty = True  # the next cycle's first look reads afresh

    def interrupt(self, reason: str) -> list[ExchangeEvent]:
        """The client gives up on the response (Rule 4): returns the events that end the
        exchange as far as it got, and marks its result ``interrupted`` with ``reason``. The
        connection is then not reusable."""
        self._broken = True
        self._fast = None
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

    def feed(self, data: bytes | bytearray | memoryview) -> list[ExchangeEvent]:
        """`PullDecoder.feed`, with a lane for a chunked body under way while nothing is
        pending (``_fast``): a live stream's every read goes to the chunked reader and the
        exchange at once."""
        if self._fast and type(data) is bytes and data:
            self._fed += len(data)
            self._pending = [data]
            self._fill_chunked()
            return self._lane_out()  # (a body's end brings its terminal event)
        out = PullDecoder.feed(self, data)
        if (
            self._chunked is not None
            and self._terminal is None
            and self._error is None
            and not self._eof
        ):
            self._fast = True  # nothing is pending: feed returned it all, and raised nothing
        return out

    def _receive(self, data: bytes) -> None:
        self._fed += len(data)
        if self._theirs == "body":
            if data:
                self._pending.append(data)
        else:
            self._buf += data

    def _fill(self) -> None:
        if self._chunked is not None:
            self._fill_chunked()
            return
        queue = self._queue
        try:
            while self._theirs == "head" and self._read_head(queue):
                pass
            if self._theirs == "body":
                if self._framing == "chunked":
                    self._fill_chunked()
                    return
                self._read_body(queue)
        except SvirProtocolError as exc:
            queue += exc.pending_events  # type: ignore[arg-type]
            exc.pending_events = ()  # they are returned now: raised again, it brings none
            self._deferred = exc
        self._mark_terminal(queue)

    def _read_head(self, queue: list[ExchangeEvent]) -> bool:
        """A response head from ``_buf`` if it is whole (Rules 2 and 3): whether one was read."""
        buf = self._buf
        exchange = self._exchange
        if not buf:
            if self._eof and exchange is not None:
                self._closed_early()
            return False
        if exchange is None:
            raise PeerProtocolError(
                "the server sent a response to no request", offset=self._head_at
            )
        if buf[0] < 0x21:  # h11's first-byte check: no head begins with a blank or a control
            raise PeerProtocolError(
                "bad HTTP from the server: "
                + ("no status line" if blank_start(buf) else f"the head begins with {buf[:1]!r}"),
                offset=self._head_at,
            )
        end = head_end(buf, self._search)
        if end < 0:
            if len(buf) > self.max_head_size:
                raise self._too_large()
            if self._eof:
                self._closed_early()
            self._search = max(0, len(buf) - 2)
            return False
        if end > self.max_head_size:
            raise self._too_large()
        head = bytes(buf[:end])
        del buf[:end]
        self._search = 0
        try:
            parsed = read_response(head)
        except BadHead as exc:
            raise PeerProtocolError(
                f"bad HTTP from the server: {exc}", offset=self._head_at
            ) from exc
        if parsed.version[:2] != "1.":  # (attack 49: an HTTP/2.0 answer was read as HTTP/1.1)
            raise PeerProtocolError(
                f"bad HTTP from the server: an HTTP/{parsed.version} status line on an HTTP/1.1 "
                "connection",
                offset=self._head_at,
            )
        status = parsed.status
        if status < 200:  # informational: the response proper begins after it
            if status == 101:
                raise PeerProtocolError(
                    "bad HTTP from the server: 101 Switching Protocols, which no request asked",
                    offset=self._head_at,
                )
            self._head_at += end
            if self._head_at - self._asked_at > self.max_head_size:
                raise PeerProtocolError(
                    "the server's informational (1xx) responses are larger than "
                    f"max_head_size ({self.max_head_size} bytes) in all",
                    offset=self._head_at,
                    limit="max_head_size",
                    limit_value=self.max_head_size,
                )
            return True
        fields, index = parsed.fields, parsed.named
        # values stripped of blanks as HTTP strips them; as str.strip() strips them too, unless
        # the head holds one of the other characters str.strip() takes
        normal = _ODD_SPACE.search(head) is None
        queue += exchange.receive_head(status, fields, size=end, normal=normal)
        self._keep_alive = (
            parsed.version >= "1.1"
            and not self._close_asked
            and not has_token(fields, index, "connection", "close")
        )
        self._theirs = "body"
        if buf:
            self._pending.append(bytes(buf))
            buf.clear()
        length = index.get("content-length")
        if status in (204, 304) or exchange.method == "HEAD":  # RFC 9112 6.3: no body,
            # whatever the fields say
            self._end_body(queue)
        elif "transfer-encoding" in index:  # chunked (_http1 Rule 2)
            self._chunked = ChunkedReader(max_line=self.max_head_size)
            self._framing = "chunked"
        elif length is None:
            self._framing = "close"
        elif int(length):  # "00" is as empty as "0"
            self._framing, self._left = "length", int(length)
        else:
            self._end_body(queue)
        return False

    def _read_body(self, queue: list[ExchangeEvent]) -> None:
        """A body framed by its Content-Length, or by the connection's close."""
        exchange = self._exchange
        assert exchange is not None
        pending = self._pending
        if pending:
            data = pending[0] if len(pending) == 1 else b"".join(pending)
            self._pending = []
            if self._framing == "length":
                take = self._left
                if len(data) > take:
                    self._buf += data[take:]
                    data = data[:take]
                self._left -= len(data)
            queue += exchange.receive_body(data)
            if exchange.error is not None:  # it came first: before any later framing error
                raise exchange.error
            if self._framing == "length" and not self._left:
                self._end_body(queue)
                return
        if self._eof:
            if self._framing == "close":
                self._end_body(queue)
                return
            self._broken = True  # Rule 4
            if not exchange.finished:
                queue += exchange.interrupt(
                    f"the connection closed before the body ended ({self._left} bytes of its "
                    "Content-Length missing)"
                )

    def _end_body(self, queue: list[ExchangeEvent]) -> None:
        exchange = self._exchange
        assert exchange is not None
        self._theirs = "done"
        if self._pending:  # what follows the body: the next response's
            self._buf += b"".join(self._pending)
            self._pending = []
        queue += exchange.end_of_body()

    def _fill_chunked(self) -> None:
        exchange = self._exchange
        reader = self._chunked
        assert exchange is not None
        assert reader is not None
        queue = self._queue
        pending = self._pending
        data = pending[0] if len(pending) == 1 else b"".join(pending)
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
                if reader.done:  # the decoder hears so, even after [DONE]
                    self._chunked = None
                    self._buf += reader.leftover
                    self._end_body(queue)
                    self._mark_terminal(queue)
                    return
            if self._eof:  # Rule 4
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
        if events and self._terminal is None and exchange is not None:
            terminal = exchange.terminal
            if terminal is not None and events and events[-1] is terminal:
                self._terminal = terminal

    def _too_large(self) -> PeerProtocolError:
        return PeerProtocolError(
            f"the response head is larger than max_head_size ({self.max_head_size} bytes)",
            offset=self._head_at,
            limit="max_head_size",
            limit_value=self.max_head_size,
        )

    def _closed_early(self) -> None:
        """The server closed the connection before a whole response head (Rule 6)."""
        if self._fed == self._asked_at and self._cycles:  # not even an informational answer
            raise StaleConnection(
                "the server had closed the kept-alive connection before this request "
                "reached it (nothing of a response came): send it again on a new connection",
                offset=self._fed,
            )
        what = "a response" if self._fed == self._head_at else "a whole response head"
        raise PeerProtocolError(
            f"the server closed the connection without {what}", offset=self._fed
        )
