"""HTTP/1.1 in the server role (RFC 9112): the client's requests read, the answers framed.

What h11's server role did for the gateway, with h11's rules (`_http1` reads the heads):
reading a request head, then its body by its framing; keep-alive; ``Expect: 100-continue``;
framing each answer as h11 frames it. `GatewayConnection` decides what the requests mean.

Rule 1 (a request, RFC 9112 6.3): empty lines before it ignored (2.2; counted with its head),
    its head within ``max_head_size`` bytes, whole or not yet
    whole (431 past it, unless its first byte is a space or a control character: 400, as h11
    says at once); then a body framed by ``Transfer-Encoding: chunked`` (read strictly,
    `_chunked` Rule 1: what a proxy in front might read otherwise is refused), else by its
    Content-Length, else none. The connection closing inside a head or a body is a bad request
    (400), at its idle start a close.
Rule 2 (keep-alive, RFC 9112 9.3): an HTTP/1.1 request without ``Connection: close`` keeps the
    connection, unless it is the connection's ``max_requests``-th (nginx's
    ``keepalive_requests``); after any other, or after an answer that says ``close``, nothing
    more is read; nor after an answer that began before its request's body was whole (what is
    left of the body is dropped as it comes, and the answer says ``close``).
    Bytes that follow a whole request wait (a pipelined request): `held` counts them.
Rule 3 (``Expect: 100-continue``, RFC 9110 10.1.1): an HTTP/1.1 request that asks it waits for
    ``100 Continue`` until its answer begins or its body does.
Rule 4 (an answer's framing, as h11 frames it): by its Content-Length; with none, chunked to an
    HTTP/1.1 client and delimited by closing to any other (``Connection: close`` then said);
    no body at all for HEAD, 204, 205 and 304; a 205's Content-Length says 0 (RFC 9110
    15.3.6: it has no content; without a length its close would delimit it).
    ``Connection: close`` goes out whenever the connection will not be kept. Writing more
    than the framing allows raises.

It never does I/O.
"""

from __future__ import annotations

import re
from typing import Final, Literal

from .._chunked import ChunkedReader
from .._http1 import (
    BadHead,
    RequestHead,
    blank_start,
    has_token,
    head_end,
    read_request,
    response_head,
)
from ..errors import CallerProtocolError, PeerProtocolError

__all__: list[str] = []

END: Final = "end"
"""`ServerSide.next_event`: the request's body is whole."""
CLOSED: Final = "closed"
"""`ServerSide.next_event`: the client closed the connection between requests."""
CONTINUE: Final = b"HTTP/1.1 100 Continue\r\n\r\n"
_FRAMING: Final = ("content-length", "transfer-encoding")
"""The fields that frame a body: an answer's own framing replaces them (Rule 4)."""
_EMPTY_LINES: Final = re.compile(rb"(?:\r?\n)+")

Theirs = Literal["idle", "body", "done", "must_close", "closed", "error"]
Ours = Literal["idle", "body", "done", "failed"]


class ServerSide:
    """One client connection's HTTP/1.1; see the module docstring."""

    def __init__(self, max_head_size: int, max_requests: int = 100) -> None:
        self.max_head_size = max_head_size
        self.max_requests = max_requests
        self.requests = 0  # heads read on this connection (Rule 2: the last says close)
        self.theirs: Theirs = "idle"
        self.ours: Ours = "idle"
        self.version: str | None = None  # the last request's HTTP version
        self.method = ""
        self.keep_alive = True
        self.waiting_100 = False  # Rule 3
        self.buf = bytearray()  # what came and was not read yet
        self.eof = False
        self._search = 0  # where the head's blank line may begin
        self._blank = 0  # empty lines before the request line, ignored but counted
        self._left = 0  # bytes of a Content-Length body still to come
        self._chunks: ChunkedReader | None = None
        self.framing: Literal["length", "chunked", "close"] = "length"
        self._out_left = 0  # bytes of an answer framed by its length still to write

    @property
    def begun(self) -> bool:
        """A request has begun: its head's first bytes came, or empty lines before it (which
        count against the head's bound and its deadline)."""
        return bool(self.buf) or self._blank > 0

    @property
    def held(self) -> int:
        """Bytes that came and wait unread (a head being read, or a pipelined request)."""
        return len(self.buf)

    @property
    def reusable(self) -> bool:
        return self.ours == "done" and self.theirs == "done" and self.keep_alive

    def receive_data(self, data: bytes) -> None:
        if data:
            self.buf += data
        else:
            self.eof = True

    # -- reading ------------------------------------------------------------------------------

    def next_event(self) -> RequestHead | bytes | str | None:
        """The next thing the client's bytes complete: a `RequestHead`, a piece of its body
        (``bytes``), `END`, `CLOSED`, or ``None`` (more bytes needed, or nothing more is read:
        a request is whole and its answer is not).

        Raises:
            BadHead: the request breaks HTTP/1.1 (``status``: what to answer it with).
        """
        theirs = self.theirs
        try:
            if theirs == "idle":
                return self._head()
            if theirs == "body":
                return self._body()
        except BadHead:
            self.theirs = "error"
            raise
        if theirs == "done" and self.eof and not self.buf and self.keep_alive:
            self.theirs = "closed"
            return CLOSED
        return None

    def _head(self) -> RequestHead | str | None:
        buf = self.buf
        if not buf:
            if self.eof:
                self.theirs = "closed"
                return CLOSED
            return None
        if blank_start(buf):  # RFC 9112 2.2: empty lines before a request line are ignored
            lead = _EMPTY_LINES.match(buf).end()  # type: ignore[union-attr]
            self._blank += lead
            if self._blank > self.max_head_size:
                raise BadHead("request head too large", 431)
            del buf[:lead]
            self._search = 0
            if not buf:
                return self._head()
        if buf[0] < 0x21:  # Rule 1: no head begins with a blank or a control character
            if buf == b"\r" and not self.eof:
                return None  # an empty line's CR: its LF may follow
            raise BadHead("a bad first byte")
        end = head_end(buf, self._search)
        if end < 0:
            if len(buf) > self.max_head_size:
                raise BadHead("request head too large", 431)
            if self.eof:
                raise BadHead("the connection closed inside a request head")
            self._search = max(0, len(buf) - 2)
            return None
        if end > self.max_head_size:
            raise BadHead("request head too large", 431)
        head = bytes(buf[:end])
        del buf[:end]
        self._search = self._blank = 0
        request = read_request(head)
        fields, index = request.fields, request.named
        version = request.version
        self.version = version
        self.method = request.method
        modern = version >= "1.1"
        self.requests += 1
        self.keep_alive = (
            modern
            and self.requests < self.max_requests
            and not has_token(fields, index, "connection", "close")
        )
        self.waiting_100 = modern and has_token(fields, index, "expect", "100-continue")
        self.theirs = "body"
        if "transfer-encoding" in index:
            self._chunks = ChunkedReader(max_line=self.max_head_size, strict=True)
        else:
            self._chunks = None
            self._left = int(index.get("content-length", 0))
        return request

    def _body(self) -> bytes | str | None:
        buf = self.buf
        chunks = self._chunks
        if chunks is not None:
            if not buf:
                if self.eof:
                    raise BadHead("the connection closed inside a request body")
                return None
            data = bytes(buf)
            buf.clear()
            try:
                out = chunks.feed(data)
                error = chunks.error
            except PeerProtocolError as exc:  # a fault before any of the piece's body
                error, out = exc, b""
            if error is not None:
                raise BadHead(f"bad chunked framing: {error}", 431 if error.limit else 400)
            if chunks.done:
                buf += chunks.leftover
                self._chunks = None
                self._left = 0
            if out:
                self.waiting_100 = False
                return out
            return self._body() if chunks.done else None
        left = self._left
        if not left:
            self._ended()
            return END
        if not buf:
            if self.eof:
                raise BadHead("the connection closed inside a request body")
            return None
        if len(buf) <= left:
            data = bytes(buf)
            buf.clear()
        else:
            data = bytes(buf[:left])
            del buf[:left]
        self._left = left - len(data)
        self.waiting_100 = False
        return data

    def _ended(self) -> None:
        self.waiting_100 = False
        self.theirs = "done" if self.keep_alive else "must_close"  # Rule 2: nothing more read

    # -- writing ------------------------------------------------------------------------------

    def interim(self) -> bytes:
        """``100 Continue`` (Rule 3)."""
        self.waiting_100 = False
        return CONTINUE

    def head(self, status: int, reason: bytes, fields: list[tuple[str, str]]) -> bytes:
        """An answer's head, framed as Rule 4 says (its Content-Length, if any, among
        ``fields``), its fields in h11's order: a framing or ``Connection`` field it sets
        goes last."""
        if self.ours != "idle":
            raise CallerProtocolError(f"an answer's head when the answer is {self.ours!r}")
        self.waiting_100 = False
        head_only = self.method == "HEAD"
        if status == 205:
            fields = [f for f in fields if f[0].lower() not in _FRAMING]
            fields.append(("Content-Length", "0"))
        length: str | None = None
        connection = close = False  # close: said here, last (else a field of ours says it)
        for name, value in fields:
            low = name.lower()
            if low == "content-length":
                length = value if length is None else length
            elif low == "connection":
                connection = True
        out = fields
        if status in (204, 304) or length is not None:
            self.framing, self._out_left = "length", int(length or 0)
        else:
            out = [f for f in fields if f[0].lower() not in _FRAMING]
            if self.version is not None and self.version >= "1.1":
                self.framing = "chunked"
                out.append(("Transfer-Encoding", "chunked"))
            else:  # an HTTP/1.0 client (or none known): the close delimits the body
                self.framing = "close"
                close = not head_only
        if head_only or status in (204, 304):
            self.framing, self._out_left = "length", 0
        if self.theirs == "body":  # the answer came before the request's body was whole (an
            # upstream's early answer): the rest of the body is read and dropped, and the
            # connection is not kept after it, so the answer says so (Rule 2)
            close = True
        if close or not self.keep_alive:
            tokens = {"close"}
            for name, value in out:
                if name.lower() == "connection":
                    tokens.update(t.strip().lower() for t in value.split(","))
            tokens.discard("keep-alive")
            out = [f for f in out if f[0].lower() != "connection"]
            out += [("Connection", token) for token in sorted(tokens)]
            self.keep_alive = False
        elif connection and any(k.lower() == "connection" and _says_close(v) for k, v in out):
            self.keep_alive = False
        self.ours = "body"
        return response_head(status, reason.decode("ascii"), out)

    def data(self, data: bytes) -> bytes:
        """A piece of the answer's body, framed."""
        if self.ours != "body":
            raise CallerProtocolError(f"body bytes when the answer is {self.ours!r}")
        framing = self.framing
        if framing == "chunked":
            return b"%x\r\n%b\r\n" % (len(data), data) if data else b""
        if framing == "length":
            if len(data) > self._out_left:
                raise CallerProtocolError(
                    f"{len(data)} bytes where {self._out_left} were left of the Content-Length"
                )
            self._out_left -= len(data)
        return data

    def end(self) -> bytes:
        """The answer's body is whole."""
        if self.ours != "body":
            raise CallerProtocolError(f"cannot end an answer that is {self.ours!r}")
        if self.framing == "length" and self._out_left:
            raise CallerProtocolError(f"the answer is {self._out_left} bytes short")
        self.ours = "done"
        return b"0\r\n\r\n" if self.framing == "chunked" else b""

    def failed(self) -> None:
        """The answer was cut: the connection cannot be reused."""
        self.ours = "failed"

    def start_next_cycle(self) -> None:
        self.theirs = "idle"
        self.ours = "idle"
        self.method = ""
        self.waiting_100 = False


def _says_close(value: str) -> bool:
    return "close" in (token.strip().lower() for token in value.split(","))
