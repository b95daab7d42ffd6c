"""What a gateway is allowed to hold and for how long, and the state its connections share.

`GatewayConfig` names every bound and deadline (issue 16: "every resource a peer can make the
gateway hold has a bound and a deadline"); each default is commented with a precedent, most of
them nginx's (its ``client_header_timeout``, ``client_body_timeout``, ``send_timeout``,
``keepalive_timeout``, ``large_client_header_buffers``, ``client_max_body_size``).

`GatewayState` is what the connections of one gateway share: the streams being relayed, the
bytes of request bodies held whole (a budget across all clients), the counters of
``/metrics``, the upstream's readiness, and whether the gateway is stopping. It is a plain
object: the server owns it and runs one event loop, so nothing here locks.

This module does no I/O and reads no clock: times are passed in.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Final, Literal, Protocol, final

import attrs

from ..openai.endpoint import Endpoint
from ..sse import DEFAULT_MAX_EVENT_SIZE

__all__ = [
    "DEFAULT_MAX_BODY",
    "MIN_TAKEN",
    "PARTIAL_ALLOWANCE",
    "UNREAD_GRACE",
    "GatewayConfig",
    "GatewayState",
    "Metrics",
    "Readiness",
]

DEFAULT_MAX_BODY: Final = 32 * 1024 * 1024
"""Bytes a request body may take (32 MiB): a few full-size photos as base64, the most a chat
turn carries; OpenAI's own limit for a request is of that order (nginx's
``client_max_body_size`` defaults to 1 MiB, for web forms)."""
PARTIAL_ALLOWANCE: Final = 128 * 1024
"""What each stream holds of its event not whole yet before it takes of ``max_partial``: a
relay holds it twice (its copy, and its watcher's), a translation once (its decoder's), and a
decoder counts `svir_proto.sse.framer.LINE_COST` for each data line after the event's first;
an event of up to 64 KiB, what nearly every event is, is never refused (nginx's
``proxy_buffer_size``, what it holds of a response's start, is 4 or 8 KiB)."""

MIN_TAKEN: Final = 64 * 1024
"""Bytes a client whose socket is full must take each ``send_timeout`` to keep its connection,
while its answer goes and at the close: one that trickles a segment a deadline held it for days
(review 41), and one that reads steadily is not cut because a long event takes longer than
that to go (attack 45 F3)."""

UNREAD_GRACE: Final = 1.0
"""Seconds a client may hold bytes waiting in its socket (past `PARTIAL_ALLOWANCE`) before
they can be taken back from it, its connection ended, to make room in ``max_partial`` for
another stream (`GatewayState.evict_unread`), counted from when it began to hold them,
whatever it took since (it only moves in the line): long enough for a client that reads to
take an answer of some megabytes written at once, short against the send timeout a client
that reads nothing would otherwise keep them for."""


class _Unread(Protocol):
    """What holds bytes waiting in a client's socket against ``max_partial``."""

    @property
    def held(self) -> int:
        """Bytes of ``max_partial`` it holds for them."""

    def evict(self) -> int:
        """Give up the hold (the client loses its connection soon): the bytes it held."""


UpstreamDialect = Literal["chat", "messages", "responses", "gemini", "llm-stream"]


@final
@attrs.frozen(kw_only=True)
class GatewayConfig:
    """The gateway's bounds, deadlines and policies; seconds and bytes.

    Attributes:
        upstream: the server requests go to, with the gateway's own key for it.
        upstream_dialect: what the upstream speaks.
        token: the bearer token clients must send (``None``: no token; then only the
            ``allowed_hosts`` may be named in ``Host``).
        allowed_hosts: the host names (lower case, no port) a request's ``Host`` may name;
            ``None``: any (a gateway behind a proxy that checks, or one with a token).
        public_metrics: ``/metrics`` without the token.
        max_head_size: bytes of a request head (431 past it; h11's default, nginx's
            ``large_client_header_buffers`` is 4 x 8 KiB); also what a client may send while its
            answer streams (a pipelined head) before the connection is closed.
        max_body: bytes of a request body (413 before a byte of it is read, when its length
            says so; as it comes, when chunked).
        max_buffered: bytes of request bodies held whole at once, across all clients (503 past
            it, once the bytes that came would pass it: not as a length says; 413 before a byte
            is read for a length that alone passes it): bodies are held to be translated, or
            while they are small; a body to translate holds what parsing it builds
            (`_cost.BodyCost`), until its preparation ends.
        hold_below: a body up to this size is read whole before it goes upstream, so the
            gateway knows all of it (the request id, ``stream``); a larger one goes upstream
            piece by piece as it comes.
        max_streams: requests relayed at once (503 with ``Retry-After`` past it): a body
            held whole takes its slot once whole, a body passed through with its head.
        max_connections: client connections at once; past it a new one is answered 503 and
            closed at once, never queued.
        max_requests: requests one connection may make: the answer to the last says
            ``Connection: close``, and nothing more is read (Apache's
            ``MaxKeepAliveRequests``, 100, nginx's ``keepalive_requests``), so that a client
            pipelining thousands of requests it never reads the answers to costs a bounded
            share of the loop (attack 36, F1: 300 connections of pipelined ``/metrics`` kept a
            new client waiting 22 s on trio; 10 s at 1,000 requests, 0.4 s at 100).
        head_timeout: from the first byte of a request (or the connection) to the end of its
            head (408; nginx ``client_header_timeout`` 60 s).
        body_timeout: silence between two reads of a request body (408; nginx
            ``client_body_timeout`` 60 s).
        body_rate: bytes a second that a body must come at, beyond ``body_timeout``, once
            another connection or request was refused for want of what a body being read
            holds (a descriptor, a connection or stream slot, a share of ``max_buffered``): it
            must then keep up, by ``body_timeout`` plus what came of it over this after its
            head began (whatever its length says: attack 43 F2), else 408 and what it held is
            given back
            (Apache's ``mod_reqtimeout`` ``MinRate``), so that bodies trickled a byte at a time
            cannot hold the gateway's slots or budget for ever, while a slow client keeps its
            time when nobody waits.
        idle_timeout: a kept-alive connection with no request (closed; nginx
            ``keepalive_timeout`` 75 s).
        send_timeout: a client that reads nothing of its answer for this long loses it, and its
            upstream request is cancelled (nginx ``send_timeout`` 60 s).
        connect_timeout: to reach the upstream.
        progress_timeout: no progress from the upstream (no content, reasoning, tool call,
            finish or usage: keep-alive comments are not progress) for this long ends the
            stream with an error and the end marker (``--timeout``; five minutes: a CPU reads a
            long prompt for minutes before its first token).
        keepalive: while a streaming client waits with nothing to receive, an SSE comment
            every this many seconds (``--keepalive``; 0: never), so proxies and idle timers do
            not cut it. Before the upstream answered, the first one also sends the response's
            head: a failure after it is an error in the stream, no longer an HTTP status.
        max_answer: characters of an answer the gateway holds: for a client that asked for
            no stream (its whole answer, sent once the stream has ended), or for a client's
            encoder to write its final events (the Responses API's carry the whole answer:
            text, reasoning and arguments), and of tool calls' arguments the upstream's
            decoder assembles to check them at the stream's end; past it the stream ends
            with an error (a 502 for a whole answer, which nothing was sent of yet). 2 Mi:
            about 500,000 tokens, several times any model's longest answer; it is held at
            about its size (1 to 4 bytes a character, however the upstream cut it), and
            writing it at the end briefly takes some 10 times that, and up to about 100
            bytes a character for text JSON escapes to 6 bytes (control characters), a
            Responses client's last events carrying it four times (attack 44 F3).
        max_event: bytes of one event of the upstream's stream (the stream ends with an error
            past it): an event not yet whole is held until it is, by the upstream's decoder,
            and by a relay a second time (only whole events go on to its client), so that
            streams at once may hold up to twice this each (attack 36, F2: 30 relayed streams
            of an endless 8 MiB event held 490 MB). 8 MiB: a Responses upstream's last events
            carry the whole answer, up to ``max_answer`` characters of 1 to 4 bytes.
        max_partial: bytes of upstream events not whole yet, held at once across all streams:
            twice the length of each relayed one (the relay's copy and its watcher's), once
            each translated one (its decoder's), a decoder's data lines after an event's first
            at `svir_proto.sse.framer.LINE_COST` more each, past the first `PARTIAL_ALLOWANCE`
            of each stream's, which is never refused; a stream whose event does not fit ends with an
            error (attack 36 F2: 16 MiB a relayed stream, by no option; attack 37: 8 MiB a
            translated one). Apart from ``max_buffered``, so that what clients' bodies hold
            never ends a stream (review 37). 256 MiB, as ``max_buffered``: room for 16 streams
            at once of the longest event ``max_event`` allows, where nearly every event is under
            64 KiB. And what was written to a client and waits for it to take it (the server
            says how much when the client's socket fills: `GatewaySession.client_paused`),
            past the first `PARTIAL_ALLOWANCE` of each: where the budget has no room, the
            clients that have held such bytes longest, `UNREAD_GRACE` at least, lose their
            connections to make it, and where that cannot, the client that asks loses its own
            (attack 43 F4: clients that read nothing held some ``max_streams`` x ``max_event``
            in all; review 44 M2: with the budget full of them, clients reading at line rate
            were aborted, and long events refused).
        drain_limit: bytes read after a whole answer to reach the end of its body, so the
            upstream connection can be reused.
        pool_size: idle upstream connections kept for reuse.
        pool_idle: seconds an idle upstream connection is kept.
    """

    upstream: Endpoint
    upstream_dialect: UpstreamDialect = "chat"
    token: str | None = None
    allowed_hosts: frozenset[str] | None = None
    public_metrics: bool = False
    max_head_size: int = 16 * 1024
    max_body: int = DEFAULT_MAX_BODY
    max_buffered: int = 256 * 1024 * 1024
    hold_below: int = 64 * 1024
    max_streams: int = 256
    max_connections: int = 1024
    max_requests: int = 100
    head_timeout: float = 30.0
    body_timeout: float = 30.0
    body_rate: float = 256 * 1024
    idle_timeout: float = 60.0
    send_timeout: float = 30.0
    connect_timeout: float = 10.0
    progress_timeout: float = 300.0
    keepalive: float = 15.0
    drain_limit: int = 64 * 1024
    max_event: int = DEFAULT_MAX_EVENT_SIZE
    max_partial: int = 256 * 1024 * 1024
    max_answer: int = 2 * 1024 * 1024
    pool_size: int = 64
    pool_idle: float = 4.0

    def __attrs_post_init__(self) -> None:
        for name in (
            "max_head_size", "max_body", "max_buffered", "max_streams", "max_answer",
            "max_requests", "max_event", "max_partial",
        ):  # fmt: skip
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise ValueError(f"{name} must be a positive int, not {value!r}")
        for name in ("hold_below", "max_connections", "drain_limit", "pool_size"):
            value = getattr(self, name)
            if type(value) is not int or value < 0:
                raise ValueError(f"{name} must be an int >= 0, not {value!r}")
        for name in (
            "head_timeout", "body_timeout", "idle_timeout", "send_timeout", "connect_timeout",
            "progress_timeout", "pool_idle",
        ):  # fmt: skip
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{name} must be a number of seconds > 0, not {value!r}")
        if not isinstance(self.body_rate, (int, float)) or not self.body_rate > 0:
            raise ValueError(f"body_rate must be bytes a second > 0, not {self.body_rate!r}")
        if not isinstance(self.keepalive, (int, float)) or self.keepalive < 0:
            raise ValueError(f"keepalive must be seconds >= 0, not {self.keepalive!r}")


@final
class Metrics:
    """The gateway's counters, in Prometheus' text exposition format (version 0.0.4)."""

    def __init__(self, state: GatewayState) -> None:
        self._state = state
        self.requests: Counter[tuple[str, str]] = Counter()
        self.upstream_failures: Counter[str] = Counter()
        self.refused: Counter[str] = Counter()
        self.events_forwarded = 0
        self.connections_total = 0

    def render(self) -> bytes:
        state = self._state
        lines = [
            "# HELP svir_gateway_requests_total Requests, by the client's dialect and outcome.",
            "# TYPE svir_gateway_requests_total counter",
            *(
                f'svir_gateway_requests_total{{dialect="{d}",outcome="{o}"}} {n}'
                for (d, o), n in sorted(self.requests.items())
            ),
            "# HELP svir_gateway_active_streams Streams being relayed now.",
            "# TYPE svir_gateway_active_streams gauge",
            f"svir_gateway_active_streams {state.streams}",
            "# HELP svir_gateway_connections Client connections open now.",
            "# TYPE svir_gateway_connections gauge",
            f"svir_gateway_connections {state.connections}",
            "# HELP svir_gateway_connections_total Client connections accepted.",
            "# TYPE svir_gateway_connections_total counter",
            f"svir_gateway_connections_total {self.connections_total}",
            "# HELP svir_gateway_buffered_bytes Bytes of request bodies held whole now (with what "
            "parsing those to translate builds).",
            "# TYPE svir_gateway_buffered_bytes gauge",
            f"svir_gateway_buffered_bytes {state.buffered}",
            "# HELP svir_gateway_partial_bytes Bytes of upstream events not whole yet (twice a "
            "relayed one), and of answers waiting for their clients to take them, held now, "
            "past each stream's allowance.",
            "# TYPE svir_gateway_partial_bytes gauge",
            f"svir_gateway_partial_bytes {state.partial}",
            "# HELP svir_gateway_refused_total Connections and requests refused, by reason.",
            "# TYPE svir_gateway_refused_total counter",
            *(
                f'svir_gateway_refused_total{{reason="{r}"}} {n}'
                for r, n in sorted(self.refused.items())
            ),
            "# HELP svir_gateway_upstream_failures_total Upstream failures, by kind.",
            "# TYPE svir_gateway_upstream_failures_total counter",
            *(
                f'svir_gateway_upstream_failures_total{{kind="{k}"}} {n}'
                for k, n in sorted(self.upstream_failures.items())
            ),
            "# HELP svir_gateway_events_forwarded_total Upstream events relayed to clients.",
            "# TYPE svir_gateway_events_forwarded_total counter",
            f"svir_gateway_events_forwarded_total {self.events_forwarded}",
            "# HELP svir_gateway_upstream_ready Whether the upstream answered its last probe.",
            "# TYPE svir_gateway_upstream_ready gauge",
            f"svir_gateway_upstream_ready {1 if state.readiness.ready else 0}",
        ]
        return ("\n".join(lines) + "\n").encode()


@final
@attrs.define
class Readiness:
    """What the last probe of the upstream found (``/readyz``): ``ready`` and, when it is not,
    ``reason``; ``None`` until a probe has run."""

    ready: bool = False
    reason: str = "the upstream has not been probed yet"
    checked: float | None = None

    def update(self, ready: bool, reason: str, now: float) -> None:
        self.ready, self.reason, self.checked = ready, reason, now


def _preload() -> None:
    """Load now every module a request may need: an import opens files, and a flood that has
    taken every descriptor made a request whose dialect was not loaded yet fail with no answer
    at all (attack round 31, F2)."""
    import email.utils  # noqa: F401  # `openai.status`: an upstream's Retry-After date

    from ..dialects import DIALECTS, dialect
    from ..openai import _from_openai  # noqa: F401  # `ChatRequest.from_openai`

    for name in DIALECTS:
        dialect(name)


class GatewayState:
    """What the connections of one gateway share (see the module docstring).

    Args:
        config: the gateway's configuration.
        new_id: makes a request id when a request brings none (the server's randomness: the
            core has none).
        wall: seconds since the epoch for a monotonic time (for ``created`` fields).
    """

    def __init__(
        self,
        config: GatewayConfig,
        *,
        new_id: Callable[[], str],
        wall: Callable[[float], int] = lambda now: int(now),
    ) -> None:
        _preload()
        self.config: Final = config
        self.new_id: Final = new_id
        self.wall: Final = wall
        self.metrics: Final = Metrics(self)
        self.readiness: Final = Readiness()
        self.streams = 0
        self.connections = 0
        self.buffered = 0
        self.partial = 0  # of `GatewayConfig.max_partial`
        self.unread: dict[_Unread, float] = {}  # what holds bytes waiting in clients' sockets
        # of it, and since when, in the line `evict_unread` takes them in
        self.draining = 0  # upstream connections read to their body's end (at most pool_size)
        self.stopping = False

    def stream_free(self) -> bool:
        """Whether a stream slot is free and the gateway is not stopping."""
        return not self.stopping and self.streams < self.config.max_streams

    def admit_stream(self) -> bool:
        """Take a stream slot, if one is free and the gateway is not stopping."""
        if not self.stream_free():
            return False
        self.streams += 1
        return True

    def release_stream(self) -> None:
        self.streams -= 1

    def hold(self, n: int) -> bool:
        """Take ``n`` bytes of the body budget (`GatewayConfig.max_buffered`), if it has them."""
        if self.buffered + n > self.config.max_buffered:
            return False
        self.buffered += n
        return True

    def unhold(self, n: int) -> None:
        self.buffered -= n

    def unhold_partial(self, n: int) -> None:
        self.partial -= n

    def rehold_partial(self, held: int, size: int, now: float, asking: object = None) -> int | None:
        """Move a hold of `GatewayConfig.max_partial` from ``held`` bytes to what ``size``
        bytes take of it, past `PARTIAL_ALLOWANCE`: the new hold, or ``None`` (``held`` kept)
        when the budget has not the room, even once the clients that have held bytes in
        their sockets longest, `UNREAD_GRACE` at least, have lost theirs (`evict_unread`;
        ``asking``, what asks, is never one of them)."""
        want = max(0, size - PARTIAL_ALLOWANCE)
        over = self.partial + want - held - self.config.max_partial
        if want > held and over > 0 and not self.evict_unread(over, now, asking):
            return None
        self.partial += want - held
        return want

    def evict_unread(self, need: int, now: float, asking: object = None) -> bool:
        """Make ``need`` bytes of room in ``max_partial`` by taking back what waits in the
        sockets of the clients that have held it for `UNREAD_GRACE` at least, but
        ``asking``'s, in their line's order: those that took nothing for longest first (one
        that takes `MIN_TAKEN` goes to its end; review 44 M2: connections that read nothing
        filled the budget, and a client reading at line rate was then aborted as soon as an
        answer of a few megabytes was written to it at once); none is taken where that would
        not make the room. Their connections end at their session's next deadline
        (`_Unread.evict`)."""
        victims: list[_Unread] = []
        freed = 0
        cutoff = now - UNREAD_GRACE
        for holder, since in self.unread.items():
            if freed >= need:
                break
            if since <= cutoff and holder is not asking:
                victims.append(holder)
                freed += holder.held
        if freed < need:
            return False
        for holder in victims:
            del self.unread[holder]
            self.partial -= holder.evict()
        return True
