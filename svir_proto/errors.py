"""Errors and failures: who broke the protocol, and where.

Two families live here. *Protocol errors* are exceptions: the bytes from the network were
malformed or exceeded a limit (`PeerProtocolError`), or the caller used an object out of order
(`CallerProtocolError`). Every exception svir-proto raises on purpose is a `SvirError`: the
protocol errors here, and the transports' errors (`svir_proto.transports`).

*Failures* are values: the protocol itself reported that the request failed (an HTTP 4xx/5xx,
an `{"error": ...}` chunk, an `event: error`, an LLM-Stream `error` event). A failure travels
inside an event (`StreamFailed`, `RequestFailed`) and never raises.

This module imports nothing from the rest of the package but `_deprecated` (which imports
nothing): every other module imports it.
"""

from __future__ import annotations

import enum
from typing import Final, final

import attrs

from ._deprecated import renamed

__all__ = [
    "CallerProtocolError",
    "Failure",
    "FailureKind",
    "FilterResult",
    "PeerProtocolError",
    "SvirError",
    "SvirProtocolError",
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


class CallerProtocolError(SvirProtocolError):
    """The caller broke sequencing: data after end of body, an event out of lifecycle order."""


RENAMED: Final = {
    "ProtocolError": "SvirProtocolError",
    "RemoteProtocolError": "PeerProtocolError",
    "LocalProtocolError": "CallerProtocolError",
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
