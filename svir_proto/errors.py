"""Errors and failures: who broke the protocol, and where.

Every exception svir-proto raises on purpose is a `SvirError`, in three trees:

- *protocol errors* (`SvirProtocolError`): the bytes from the network were malformed or
  exceeded a limit (`PeerProtocolError`; a kept-alive connection the server had closed before
  answering is its subclass `StaleConnection`), or the caller used an object out of order
  (`CallerProtocolError`);
- *transport errors* (`SvirTransportError`), raised by `svir_proto.transports` only: the bytes
  could not be moved (`ConnectionFailedError`, `StreamTimeout`);
- *failure errors* (`RequestFailedError`, one subclass per `FailureKind`): a failure the server
  reported, raised only where the caller asked for it (``raise_for_failure()``,
  ``raise_on_failure=True``) or where the answer is a value, not a stream (``list_models``);
  `IncompleteStreamError` for a stream that ended without its end, once asked to raise.

*Failures* are values: the protocol itself reported that the request failed (an HTTP 4xx/5xx,
an `{"error": ...}` chunk, an `event: error`, an LLM-Stream `error` event). A failure travels
inside an event (`StreamFailed`, `RequestFailed`) and never raises by itself.

The names differ from h11's, httpcore's and httpx's (``RemoteProtocolError``,
``TransportError``, ``ConnectError``), so a program that imports both never mistakes one for
the other; the old names of release 0.1 still resolve, with a `DeprecationWarning`.

This module imports nothing from the rest of the package but `_deprecated` (which imports
nothing): every other module imports it.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Final, Literal, final

import attrs

from ._deprecated import renamed

__all__ = [
    "AnswerTooLarge",
    "AuthenticationFailedError",
    "CallerProtocolError",
    "ConnectionFailedError",
    "ContentFilterError",
    "ContextOverflowError",
    "Failure",
    "FailureKind",
    "FilterResult",
    "IncompleteStreamError",
    "NotAStreamError",
    "OverloadedError",
    "PeerProtocolError",
    "RateLimitedError",
    "RequestFailedError",
    "RequestRejectedError",
    "ServerFailureError",
    "ServerTimedOutError",
    "StaleConnection",
    "StreamTimeout",
    "SvirError",
    "SvirProtocolError",
    "SvirTransportError",
    "TimeoutPhase",
    "TransientFailureError",
    "UnexpectedFailureError",
    "failure_error",
]


class SvirError(Exception):
    """Base class of every exception svir-proto raises on purpose: catch it to catch them all.

    Bad argument values stay `ValueError` and `TypeError`, as everywhere in Python.
    """


class SvirProtocolError(SvirError):
    """Base class of the protocol errors; never raised itself.

    Attributes:
        offset: the byte offset in the received stream where the problem was found, counted from
            the first byte passed to ``receive_data``, or ``None`` when no byte position applies.
        limit: the name of the limit that was exceeded (for example ``"max_event_size"``), or
            ``None`` when the error is not about a limit.
        limit_value: the value that limit had.
        pending_events: events decoded before the error that the call which raised it had not
            returned yet (set by ``close()``, which never returns without the terminal event,
            so that nothing decoded is dropped).
    """

    def __init__(
        self,
        message: str,
        *,
        offset: int | None = None,
        limit: str | None = None,
        limit_value: int | None = None,
    ) -> None:
        if type(self) is SvirProtocolError:
            raise TypeError(
                "SvirProtocolError is abstract: raise PeerProtocolError or CallerProtocolError"
            )
        super().__init__(message)
        self.message: Final = message
        self.offset: Final = offset
        self.limit: Final = limit
        self.limit_value: Final = limit_value
        self.pending_events: tuple[object, ...] = ()

    def __str__(self) -> str:
        if self.offset is None:
            return self.message
        return f"{self.message} (at byte {self.offset})"


class PeerProtocolError(SvirProtocolError):
    """The peer sent bytes that break the protocol, or that exceed one of our limits.

    h11, httpcore and httpx call theirs ``RemoteProtocolError``; this one has its own name so
    that a program importing both never mistakes one for the other.
    """


class StaleConnection(PeerProtocolError):
    """A kept-alive connection that the server had closed before this request reached it:
    nothing of a response arrived, so nothing was processed, and the request can go again on
    a new connection (the transports do so, once).

    Raised by `ClientConnection` on a connection that served a response before
    (``start_next_cycle``) when it ends without a byte of the next one: llama.cpp closes every
    connection after a stream although it advertises keep-alive.
    """


class CallerProtocolError(SvirProtocolError):
    """The caller broke sequencing: data after end of body, an event out of lifecycle order."""


class AnswerTooLarge(SvirError, ValueError):
    """An encoder that holds the answer for its final events (the Responses API's) was given
    more than its ``max_output_size``. What it wrote before stays valid, and it still encodes
    a `StreamFailed` after this, which ends its stream."""


class SvirTransportError(SvirError):
    """The bytes could not be moved (raised by `svir_proto.transports`). The stream's
    ``result`` keeps what arrived before."""


class ConnectionFailedError(SvirTransportError):
    """The connection could not be opened: refused, unknown host, TLS verification failed, a
    proxy that refused the tunnel."""


TimeoutPhase = Literal["connect", "write", "first_byte", "read", "total"]
"""Which wait a `StreamTimeout` was about."""

_PHASES: Final = {
    "connect": "to connect",
    "write": "to write the request (the server stopped reading)",
    "first_byte": "for the first byte of the response",
    "read": "for the next byte of the response (the stream stalled)",
    "total": "for the whole exchange",
}


class StreamTimeout(SvirTransportError, TimeoutError):
    """A wait took longer than its timeout.

    Attributes:
        phase: which wait (`TimeoutPhase`).
        seconds: the timeout that was exceeded, as configured (for ``total``, the whole
            exchange's, not what was left of it when the last wait began).
    """

    def __init__(self, phase: TimeoutPhase, seconds: float) -> None:
        super().__init__(f"{phase} timeout: waited {seconds:g} s {_PHASES[phase]}")
        self.phase: Final = phase
        self.seconds: Final = seconds


RENAMED: Final = {
    "ProtocolError": "SvirProtocolError",
    "RemoteProtocolError": "PeerProtocolError",
    "LocalProtocolError": "CallerProtocolError",
    "TransportError": "SvirTransportError",
    "ConnectError": "ConnectionFailedError",
}
__getattr__ = renamed(__name__, RENAMED, globals())


@final
class FailureKind(enum.Enum):
    """What went wrong, as far as the protocol lets us tell.

    The kinds follow the wire reference section 5 (HTTP errors) and 3.5 (errors in the stream).
    """

    AUTHENTICATION = "authentication"
    RATE_LIMITED = "rate_limited"
    TIMEOUT = "timeout"
    TRANSIENT = "transient"
    OVERLOADED = "overloaded"
    REJECTED = "rejected"
    CONTEXT_OVERFLOW = "context_overflow"
    CONTENT_FILTER = "content_filter"
    NOT_A_STREAM = "not_a_stream"
    SERVER_ERROR = "server_error"
    UNEXPECTED = "unexpected"

    @property
    def status(self) -> int:
        """The HTTP status a failure of this kind stands for when it came with none (one
        inside a stream): a rate limit is 429, which the SDKs retry; a context too long, a
        rejection or a filter 400, which they do not (fidelity 43 F07); an overload 503, a
        timeout 504, the credentials 401; 502 else (what a gateway says of its upstream's
        failure). One table for every dialect (attack 74 F2: a gateway's client got 502 or
        500 for the same failure, as its dialect's table said)."""
        return _STATUS_OF_KIND.get(self, 502)


_STATUS_OF_KIND: Final = {
    FailureKind.AUTHENTICATION: 401,
    FailureKind.RATE_LIMITED: 429,
    FailureKind.REJECTED: 400,
    FailureKind.CONTEXT_OVERFLOW: 400,
    FailureKind.CONTENT_FILTER: 400,
    FailureKind.OVERLOADED: 503,
    FailureKind.TIMEOUT: 504,
}

_RETRYABLE: Final = frozenset(
    {FailureKind.RATE_LIMITED, FailureKind.TIMEOUT, FailureKind.TRANSIENT, FailureKind.OVERLOADED}
)


@final
@attrs.frozen(kw_only=True)
class FilterResult:
    """One content-filter category's verdict (Azure ``content_filter_results``, wire ref 3.7).

    ``category`` is the key Azure used (``hate``, ``jailbreak``, ``custom_blocklists``...);
    list-valued categories (custom blocklists) give one result per entry, with its ``id``.
    """

    category: str
    filtered: bool
    detected: bool | None = None
    severity: str | None = None
    id: str | None = None


@final
@attrs.frozen(kw_only=True)
class Failure:
    """A failure the protocol reported: an HTTP error status or an error inside the stream.

    Attributes:
        kind: what went wrong.
        message: the server's own words, or ours when it gave none.
        code: the server's machine-readable code (``error.code`` or ``error.type``), if any.
        status: the HTTP status, or ``None`` for an error reported inside a 200 stream.
        retry_after: seconds to wait before retrying (from ``Retry-After``), if the server said.
        filter_results: the verdicts of a content-filter rejection (Azure ``innererror``).
    """

    kind: FailureKind
    message: str
    code: str | None = None
    status: int | None = None
    retry_after: float | None = None
    filter_results: tuple[FilterResult, ...] = ()

    @property
    def retryable(self) -> bool:
        """Whether sending the same request again may succeed.

        A content-filter rejection is never retryable: the prompt's evaluation is billed again.
        """
        return self.kind in _RETRYABLE


class RequestFailedError(SvirError):
    """A failure the server reported, raised: by ``list_models`` (whose answer is a value, not
    a stream), and by a stream's ``raise_for_failure()`` or a client made with
    ``raise_on_failure=True``. Each `FailureKind` has its own subclass (`failure_error` picks
    it), so ``except RateLimitedError`` needs no look at ``failure.kind``.

    Attributes:
        failure: what the server said (its kind, message, code, status, ``Retry-After``).
    """

    kind: FailureKind | None = None
    """The `FailureKind` of this class (``None`` on the base class)."""

    def __init__(self, failure: Failure) -> None:
        status = f" (HTTP {failure.status})" if failure.status is not None else ""
        super().__init__(f"{failure.kind.value}{status}: {failure.message}")
        self.failure: Final = failure


class AuthenticationFailedError(RequestFailedError):
    """401 or 403: the server refused the credentials (`FailureKind.AUTHENTICATION`)."""

    kind = FailureKind.AUTHENTICATION


class RateLimitedError(RequestFailedError):
    """429: rate limited; ``failure.retry_after`` says how long to wait, if the server did."""

    kind = FailureKind.RATE_LIMITED


class ServerTimedOutError(RequestFailedError):
    """408 or 504: the server (or a gateway before it) timed out. A wait of our own that ran
    out is a `StreamTimeout` instead."""

    kind = FailureKind.TIMEOUT


class TransientFailureError(RequestFailedError):
    """500, 502 or 503: a failure that may pass."""

    kind = FailureKind.TRANSIENT


class OverloadedError(RequestFailedError):
    """529, or a 503 that says so: the server is overloaded."""

    kind = FailureKind.OVERLOADED


class RequestRejectedError(RequestFailedError):
    """400, 413 or 422 (or a quota): the server rejected the request as it is."""

    kind = FailureKind.REJECTED


class ContextOverflowError(RequestFailedError):
    """The prompt does not fit the model's context, in any server's way of saying so."""

    kind = FailureKind.CONTEXT_OVERFLOW


class ContentFilterError(RequestFailedError):
    """A content filter rejected the prompt (never retried: its evaluation is billed)."""

    kind = FailureKind.CONTENT_FILTER


class NotAStreamError(RequestFailedError):
    """A success that is not a stream (not ``text/event-stream``, or not LLM-Stream)."""

    kind = FailureKind.NOT_A_STREAM


class ServerFailureError(RequestFailedError):
    """An error the server reported inside the stream, of no more precise kind."""

    kind = FailureKind.SERVER_ERROR


class UnexpectedFailureError(RequestFailedError):
    """A status this API does not use, or a body svir-proto cannot read (a content coding it
    did not ask for)."""

    kind = FailureKind.UNEXPECTED


_BY_KIND: Final[dict[FailureKind, type[RequestFailedError]]] = {
    cls.kind: cls
    for cls in (
        AuthenticationFailedError,
        RateLimitedError,
        ServerTimedOutError,
        TransientFailureError,
        OverloadedError,
        RequestRejectedError,
        ContextOverflowError,
        ContentFilterError,
        NotAStreamError,
        ServerFailureError,
        UnexpectedFailureError,
    )
    if cls.kind is not None
}


def failure_error(failure: Failure) -> RequestFailedError:
    """The exception for ``failure``: an instance of its kind's `RequestFailedError` subclass."""
    return _BY_KIND[failure.kind](failure)


class IncompleteStreamError(SvirError):
    """A stream that ended without its end (the connection dropped, the body was cut), raised
    where the caller asked for raising (``raise_for_failure()``, ``raise_on_failure=True``).

    Attributes:
        result: the `Completion` as far as it got (``interrupted`` or ``cut`` say why).
    """

    def __init__(self, message: str, result: Completion) -> None:
        super().__init__(message)
        self.result: Final = result


if TYPE_CHECKING:
    from .events import Completion
