"""`GatewaySession`: one client connection of a gateway and the upstream requests it makes,
sans-IO. The server's event loop moves bytes; everything the gateway decides is decided here.

A server creates one session per accepted connection and calls it with what happened, each
call taking ``now`` (monotonic seconds): `client_data` (``b""``: the client closed),
`upstream_connected`, `upstream_data` (``b""``: the upstream closed), `upstream_failed`,
`client_paused`/`client_resumed` (its socket's write buffer), `upstream_paused`/
`upstream_resumed` (the upstream's, while the client's body goes to it), `worked` (a `Work` done),
`tick` (a deadline passed), `shutdown`, and `client_gone` once the connection is gone. Each
returns the bytes to write to the client, and may leave actions in `actions` (take them after
each call): `Connect`, `ToUpstream`, `Release`, `PauseUpstream`, `ResumeUpstream`,
`PauseClient`, `ResumeClient`, `Work`, `Close`, `Abort`, `Done`.
`deadline` says when `tick` is due next; the server need not call it before. A `Done` is
counted and logged by the server with `record`: at once, or, when the connection closes with
the answer still to send, once it is sent, or as `unsent` when the client did not take it
within the close's deadline.

Rule 1 (relay or translate, issue 17): an OpenAI client of an OpenAI upstream gets the
    upstream's bytes as they came (each read one HTTP chunk), watched by the decoder as they
    pass (the end marker, usage, failures, progress), so nothing the gateway need not change
    is changed: ``null`` stays ``null``, unknown keys, usage details, ``system_fingerprint``,
    ``timings`` stay. What the upstream sends after its end marker goes on to the client as
    it came, up to the end of the upstream's body, whatever the reads (a client may read past
    ``[DONE]``, as the AI SDK does); within ``drain_limit`` bytes and ``connect_timeout``
    seconds of the marker, after which the client's answer ends there and the upstream
    connection is closed. An LLM-Stream client gets the events translated (draft 7.1): the
    upstream connection gives runs of plain text deltas at once (``text_runs``), whose JSON
    the translator copies (`GatewayConnection.upstream`).
Rule 2 (isolation): whatever a peer sends, a session only ever raises for its own bugs; a
    client that breaks HTTP is answered or closed, an upstream that breaks it ends that
    request with an error in the client's dialect. An answer framed both by Content-Length
    and by Transfer-Encoding is such a break (RFC 9112 6.3).
Rule 3 (deadlines, `GatewayConfig`): a head within ``head_timeout`` of its first byte (or of
    the connection), a body with no silence over ``body_timeout`` (and, once another
    connection or request was refused for want of what a body being read holds, within
    ``body_timeout`` plus what came of it over ``body_rate`` from its head's first byte), an idle
    kept-alive connection within ``idle_timeout``: else 408 or a close. An upstream with no
    progress for ``progress_timeout`` ends the stream with an error and the end marker, however
    many keep-alive comments it sends; a client that reads nothing for ``send_timeout`` loses
    its stream, and its upstream request is cancelled.
Rule 4 (keep-alive): a streaming client that has received nothing for ``keepalive`` seconds
    gets an SSE comment, sent only where an event ends; before the upstream answered, the first
    one also sends the response head.
Rule 5 (flow): the upstream is not read while the client's socket is full, nor the client
    (a client that sends requests and reads no answer piles nothing up), the client is not
    read while the upstream's is, and a client that has sent more than ``max_head_size`` bytes
    while its answer is made (a pipelined request) is not read again until that answer is
    whole: the next request is read then, whatever the reads its bytes came in. An answer
    made whole before it is sent (a whole answer, read from the upstream to its end whatever
    the client reads) that fills the client's socket holds a stream slot until the client
    takes it, so ``max_streams`` bounds what such answers hold, as it bounds streams. What
    waits in a client's socket (the server says how much, `client_paused`) is held past
    `PARTIAL_ALLOWANCE` against ``max_partial``, with the upstream events not whole yet, until
    the client takes it: when the budget has no room, the clients that have held such bytes
    longest lose their connections to make it (`GatewayState.evict_unread`), and where that
    cannot, the client that asks loses its own at once (`Abort`; attack 43 F4: whole events
    written to clients that read nothing were outside every bound, some ``max_streams`` x
    ``max_event`` in all).
Rule 6 (upstream connections): a request whose body the gateway holds (or built) may use a
    kept-alive upstream connection, and is sent again once, on a new one, if that connection
    turns out closed before any byte of the answer, within `_RETRY_WITHIN` of the request going
    on it (an idle connection the upstream closed as the request crossed; later, the upstream
    had it, and may have run it: the client gets a 502); a request whose body streams through
    from its client always gets a new one. A kept-alive connection that sent bytes after its
    last answer (an answer to no request, junk) is treated as a closed one: it is not pooled
    when they came before it went back (`ClientConnection.reusable`), and the server does not
    take it from the pool when they came while it was there. Bytes that come once the next
    request is on it are read as that request's answer: bytes that are no answer fail, and the
    request is sent again, unless they began as an answer does (a status line: the upstream had
    the request, and a second would run it twice; attack 50 F1: a head too large, or framed
    wrong, sent it again); a whole HTTP answer among them is taken for the request's (HTTP/1.1
    cannot tell them apart: every proxy that keeps connections alive shares this), and the
    answers on that connection shift by one (attack 33). ``pool_size=0`` is for such an
    upstream. A connection goes back to the pool only after a whole answer to a whole request;
    after a failure or a cancel it is closed. A whole answer whose body has not ended yet (the
    upstream's last chunk still to come) is read to its end, within ``drain_limit`` bytes and
    ``connect_timeout`` seconds, even after its client has gone (`draining`): a client that
    closes as soon as its answer ends, as most do, leaves a connection to reuse. Drains are
    bounded in number too (`_drain`): past the bound such a connection is closed.

This module never does I/O and reads no clock.
"""

from __future__ import annotations

import errno
import json
import re
from collections.abc import Callable
from contextlib import suppress
from typing import Final, Literal, final

import attrs

from .._progress import news
from .._pull import NEED_DATA
from ..connection import ClientConnection
from ..errors import FailureKind, SvirProtocolError
from ..events import RequestFailed, ResponseStarted, StreamEnded, StreamStarted, Usage
from ..exchange import Exchange, ExchangeEvent, PassThrough
from ..openai._toolcalls import ToolCallError
from ..openai.status import MAX_ERROR_BODY, body_outcome
from ..openai.watch import ChatStreamWatcher
from .config import MIN_TAKEN, PARTIAL_ALLOWANCE, GatewayState
from .connection import (
    Forward,
    ForwardBody,
    ForwardEnd,
    GatewayConnection,
    Interim,
    LocalRequest,
    Prepare,
    Reply,
)

__all__ = [
    "Abort",
    "Close",
    "Connect",
    "Done",
    "PIPELINED",
    "GatewaySession",
    "More",
    "PauseClient",
    "PauseUpstream",
    "Release",
    "ResumeClient",
    "ResumeUpstream",
    "SessionAction",
    "ToUpstream",
    "Work",
    "record",
    "starved",
    "unsent",
]

_NO_WATCH: Final[tuple[Exchange, ChatStreamWatcher | None]] = (None, None)  # type: ignore[assignment]
PIPELINED: Final = 16
"""Requests of one client the gateway answers itself (``/healthz``, ``/metrics``, refusals) in
one go: the rest of what it pipelined waits for `More`, and for the client to take what it was
given (attack 36, F1: 256 KiB of pipelined ``GET /healthz`` on each of 100 connections held
the event loop for seconds, and every other client's stream with it)."""
_RETRY_WITHIN: Final = 1.0
"""Seconds after a request goes on a kept-alive upstream connection within which that
connection's end, before any byte of an answer, is taken for the close of an idle connection
crossing the request (Rule 6): later, the upstream had the request and may have run it, and it
is not sent twice (RFC 9110 9.2.2: a POST; attack 69 F3, an upstream that worked 3 s on a
request, then closed, was sent it again)."""
_UNSENT_LIMIT: Final = 1024 * 1024
"""Bytes of a client's body held for an upstream connection still being opened: past it the
client is not read until the connection is there (Rule 5)."""


@final
@attrs.frozen
class Connect:
    """Open a connection to the upstream (``fresh``: a new one, not one from the pool); then
    call `GatewaySession.upstream_connected` or `GatewaySession.upstream_failed`."""

    fresh: bool


@final
@attrs.frozen
class ToUpstream:
    """Write ``data`` to the upstream connection."""

    data: bytes


@final
@attrs.frozen
class Release:
    """The request is done with its upstream connection: keep it for a next request with
    ``connection`` (its `ClientConnection`, to give back to `upstream_connected`), or close it
    (``connection`` ``None``)."""

    connection: ClientConnection | None


@final
@attrs.frozen
class PauseUpstream:
    """Stop reading the upstream until `ResumeUpstream`."""


@final
@attrs.frozen
class ResumeUpstream:
    pass


@final
@attrs.frozen
class PauseClient:
    """Stop reading the client until `ResumeClient`."""


@final
@attrs.frozen
class ResumeClient:
    pass


@final
@attrs.frozen
class Work:
    """Run ``run()`` (off the event loop if you like), then give what it returns to
    `GatewaySession.worked`."""

    run: Callable[[], object]


@final
@attrs.frozen
class More:
    """Call `GatewaySession.client_more` soon, once the loop has let other connections have
    their turn: requests the client pipelined wait for their answers (`PIPELINED`)."""


@final
@attrs.frozen
class Close:
    """Close the client connection once what was written to it is sent."""


@final
@attrs.frozen
class Abort:
    """End the client connection now, dropping what was written to it and not sent: it
    does not take its answer, and the gateway has no room to hold it (Rule 5)."""


@final
@attrs.frozen(kw_only=True)
class Done:
    """A request ended: what the server logs and counts (never a prompt or an answer)."""

    method: str
    target: str
    dialect: str
    outcome: str
    upstream_failure: str | None
    events: int
    seconds: float
    request_id: str | None
    lost: int = 0
    """What the upstream's decoder noticed and the answer could not carry (`Svir-Lost` values
    or comments the client got)."""


def record(state: GatewayState, done: Done) -> None:
    """Count a request that ended, by its client's dialect and its outcome (`Done`): the
    server's, when it says it."""
    state.metrics.requests[(done.dialect if done.dialect != "-" else "none", done.outcome)] += 1


_STARVED: Final = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


def starved(exc: BaseException) -> bool:
    """Whether a connect failed for want of the gateway's own resources (no descriptor left to
    the process or the system, no buffer, no memory), not for anything of the upstream's:
    `GatewaySession.upstream_failed`'s ``starved``. A connect that tried several addresses
    (anyio's "All connection attempts failed") says why in its cause, or in its group's."""
    if isinstance(exc, OSError) and exc.errno in _STARVED:
        return True
    inner = [*getattr(exc, "exceptions", ()), exc.__cause__]
    return any(e is not None and e is not exc and starved(e) for e in inner)


def unsent(done: Done) -> Done:
    """``done``, for a request whose answer the client did not take within the close's
    deadline: an answer that was whole is cut there (attack 41 F7: such a cut was logged
    ``ok``); one that had failed, or was cancelled, stays so."""
    return attrs.evolve(done, outcome="cut") if done.outcome == "ok" else done


SessionAction = (
    Abort
    | Connect
    | ToUpstream
    | Release
    | PauseUpstream
    | ResumeUpstream
    | PauseClient
    | ResumeClient
    | Work
    | More
    | Close
    | Done
)

Upstream = Literal["none", "connecting", "sending", "streaming", "draining"]


class GatewaySession:
    """One client connection; see the module docstring's rules.

    Args:
        state: what the gateway's connections share (its `GatewayConfig` included).
        now: when the connection was accepted.
    """

    __slots__ = (
        "_answered",
        "_began",
        "_body_at",
        "_client_held",
        "_drain_by",
        "_drained",
        "_evicted",
        "_forward",
        "_gone",
        "_head_drains",
        "_late",
        "_late_head",
        "_late_size",
        "_more",
        "_own",
        "_partial",
        "_partial_held",
        "_paused_since",
        "_pooled",
        "_pooled_at",
        "_progress",
        "_queued_held",
        "_queued_mark",
        "_recorded",
        "_refusals",
        "_replay",
        "_sent",
        "_served",
        "_since",
        "_start",
        "_steady",
        "_stopping",
        "_taking_mark",
        "_taking_since",
        "_trail_by",
        "_unread",
        "_unsent",
        "_unsent_end",
        "_unsent_size",
        "_up",
        "_upstream",
        "_usage",
        "_watch",
        "actions",
        "closed",
        "config",
        "conn",
        "state",
    )

    def __init__(self, state: GatewayState, now: float) -> None:
        self.state: Final = state
        self.config: Final = state.config
        self.conn: Final = GatewayConnection(state.config, state)
        self.actions: list[SessionAction] = []
        """What the server must do, in order; take them after each call."""
        self.closed = False
        state.connections += 1
        state.metrics.connections_total += 1
        self._since = now  # when the client's current phase began (for its deadline)
        self._began = now  # when the current request's head began (its body's rate runs so)
        self._refusals = self._scarcity()  # when the current request began
        self._start = now  # when the current request began
        self._recorded = False  # the current request's `Done` went out
        self._served = False  # a request was answered on this connection (it is kept alive)
        self._stopping = False
        self._body_at = 0  # body bytes of the upstream's answer the client has been sent
        self._up: ClientConnection | None = None
        self._upstream: Upstream = "none"
        self._forward: Forward | None = None
        self._unsent: list[bytes] = []  # a body's pieces for an upstream being reached
        self._unsent_size = 0
        self._unsent_end = False
        self._replay: Forward | None = None  # Rule 6: sent again once on a closed connection
        self._pooled = False  # the upstream connection came from the pool
        self._pooled_at = 0.0  # when the request went on it
        self._answered = False  # a byte of the upstream's answer came
        self._progress = now
        self._usage: Usage | None = None  # the last usage the upstream gave (`_news`)
        self._sent = now  # the last bytes written to the client
        self._paused_since: float | None = None  # the client's socket is full since
        self._taking_since: float | None = None  # the upstream's, with a body (Rule 5)
        self._taking_mark = 0  # what of it waited when its deadline last began
        self._queued_held = 0  # of ``max_partial``, for what waits in it (`client_paused`)
        self._queued_mark = 0  # what waited there when its send deadline last began
        self._evicted = False  # that hold was taken back: the connection ends (`evict`)
        self._gone = False  # the server said the connection is gone (`client_gone`)
        self._head_drains = False  # a HEAD's answer, whole at its head: its body drains
        self._unread = False  # an answer made whole waits in the client's socket: a slot
        self._client_held: set[str] = set()  # why we stopped reading the client (Rule 5)
        self._more = False  # pipelined requests wait for `client_more` (`PIPELINED`)
        self._own = True  # no upstream's answer was written to this client: what may wait in
        # its socket is the gateway's own answers only
        self._partial = bytearray()  # a relayed event not whole yet (Rule 4)
        self._partial_held = 0  # of ``max_partial``, for it (`_hold_partial`)
        self._steady: ClientConnection | None = None  # its answer is a relayed stream, begun
        self._watch: tuple[Exchange, ChatStreamWatcher | None] = _NO_WATCH  # its, once begun
        self._late: list[bytes] = []  # a failure's body after a keep-alive sent the head
        self._late_size = 0  # its bytes so far
        self._late_head: tuple[int, tuple[tuple[str, str], ...]] = (0, ())
        self._drained = 0
        self._drain_by = 0.0
        self._trail_by: float | None = None  # a relay's end marker came, its body goes on (Rule 1)

    # -- the client's side ------------------------------------------------------------------

    def client_data(self, data: bytes, now: float) -> bytes:
        """Bytes from the client (``b""``: it closed its side)."""
        if self.closed:
            return b""
        conn = self.conn
        if not data and conn.phase == "answer":
            return self._cancel(now)  # h11 holds an EOF while it waits for the answer
        if not data and self._more:  # gone, or half-closed (the servers cannot tell): what it
            # pipelined is not answered, and it ends now (review 36: a gone client's session,
            # answering on, was never closed)
            self._more = False
            return self._cancel(now)
        before = conn.phase
        try:
            conn.receive_data(data)
        except SvirProtocolError:  # bytes after the client's own EOF
            return self._cancel(now)
        if before == "idle" and data:
            self._since = self._began = now  # the head's first byte: its deadline runs from here
            self._refusals = self._scarcity()
        return self._pump(now)

    def client_more(self, now: float) -> bytes:
        """Answer what the client pipelined (`More`), unless it does not take its answers:
        then once it does (`client_resumed`)."""
        if not self._more or self.closed or self._paused_since is not None:
            return b""
        self._more = False
        out = self._pump(now)  # (the client stays unread while its requests wait: a resume
        if not self._more:  # and a pause at once woke anyio's reader; review 36)
            self._hold_client("pipelined", False)
        return out

    def _pump(self, now: float) -> bytes:
        """Act on every event the client's bytes completed (the gateway's own answers to
        pipelined requests `PIPELINED` at a time)."""
        conn = self.conn
        out: list[bytes] = []
        answered = 0
        while not self.closed:
            if answered == PIPELINED:  # the rest after the others' turn (`More`)
                self._more = True
                self._hold_client("pipelined", True)
                self.actions.append(More())
                break
            event = conn.next_event()
            if event is NEED_DATA:
                break
            if type(event) is ForwardBody:
                self._up_send(event.data)
                self._since = now
            elif type(event) is ForwardEnd:
                self._up_send(None)
            elif type(event) is Forward:
                self._begin(event, now)
            elif type(event) is Interim:
                out.append(event.data)
            elif type(event) is Reply:  # then the loop reads a pipelined request, if any
                out.append(event.data)
                answered += 1
                self._done(now)
                if event.close or not conn.reusable:
                    if self._upstream in ("connecting", "sending", "streaming"):
                        self._release(reuse=False)  # a refusal of what went up: it is over
                    self._close()
                else:
                    self._new_cycle(now)
            elif type(event) is LocalRequest:
                self._start = now
                answered += 1
                out.append(self._local(event.name))
                self._done(now)
                self._new_cycle(now)
            elif type(event) is Prepare:
                self.actions.append(Work(run=event.run))
            else:  # ClientClosed
                out.append(self._cancel(now))
        if conn.phase == "body" and not out:
            self._since = now  # a body's deadline is silence between its reads
        elif conn.phase == "answer" and conn.backlog > self.config.max_head_size:
            self._hold_client("backlog", True)  # Rule 5: read again once the answer is whole
        return self._sent_at(out, now)

    def worked(self, result: object, now: float) -> bytes:
        """What a `Work`'s ``run`` returned; call it even once the client left (what the work
        held is given back then), or `work_dropped` if ``run`` raised or never ran."""
        if self.closed:
            self.conn.prepare_ended()
            return b""
        self.conn.prepared(result)
        return self._pump(now)

    def work_dropped(self) -> None:
        """A `Work` that will not be given to `worked` (its ``run`` raised, or its task was
        cancelled): what it held is given back."""
        self.conn.prepare_ended()

    def client_paused(self, now: float, queued: int = 0, left: int | None = None) -> None:
        """The client's socket stopped taking bytes: stop reading the upstream, and the client
        (Rule 5: a client that sends requests and reads no answer makes no answer pile up).
        ``queued``: bytes written to the client that it has not taken (the server's buffer of
        them), held against ``max_partial`` until `client_resumed`; where the budget has no
        room for them, even once the clients that have held such bytes longest lost theirs
        (`GatewayState.evict_unread`), this client loses its connection now (`Abort`), its
        request cancelled. Call it again while the socket stays full, with what waits now:
        the hold follows it, and a client that took `MIN_TAKEN` since its send deadline began
        (of ``left``, what it has still to take, the kernel's share too: the server's buffer
        does not move while it takes from the kernel's; ``queued`` if not given) reads: the
        deadline begins again, and it goes to the end of the line of holders (attack 45: a
        hold kept what the client had since taken, and a client reading an event longer
        than ``send_timeout`` takes to go was cut)."""
        if self._gone:  # (anyio's sweep may tell it once more)
            return
        state = self.state
        left = queued if left is None else left
        if not self._evicted:  # (evicted: its connection ends at the sweep, held nowhere)
            held = state.rehold_partial(self._queued_held, queued, now, self)
            if held is None:
                self._abort(now)
                return
            self._queued_held = held
            if self._paused_since is not None and left + MIN_TAKEN <= self._queued_mark:
                self._paused_since = now  # it reads: to the end of the line, its hold as old
                self._queued_mark = left
                since = state.unread.pop(self, None)
                if since is not None:
                    state.unread[self] = since
            self._queued_mark = max(self._queued_mark, left)
            if held:
                state.unread.setdefault(self, now)
            else:
                state.unread.pop(self, None)
        if self._paused_since is None:
            self._paused_since = now
            self._queued_mark = left
            if self._upstream in ("sending", "streaming"):
                self.actions.append(PauseUpstream())
            self._hold_client("full", True)
            if not self.conn.holds_stream and not self.closed and not self._own:
                # an answer made whole (a whole answer: the upstream was read to its end
                # whatever the client read) waits in the client's socket: it holds a stream
                # slot until the client takes it, as a stream it does not read holds its own,
                # so that --max-streams bounds what such answers hold too (Rule 5); not the
                # gateway's own answers (`_own`, attack 36 F4: connections that pipelined
                # /metrics and read nothing held every slot, and no stream could begin), which
                # it gives a few at a time, and no more while the client takes none (`More`)
                self._unread = True
                state.streams += 1

    def upstream_paused(self, now: float, left: int) -> None:
        """The upstream's socket does not take the client's body as fast as it comes, and
        ``left`` bytes of it wait (the server's and the kernel's): the server stops reading
        the client (Rule 5), and says so again at each sweep while it lasts. The body's
        deadline is then the upstream's: if it takes less than `MIN_TAKEN` of it in
        ``body_timeout``, the request ends with the upstream's timeout (504), not the client's
        408 (attack 47 H4: a client that sent its body at line rate was told it did not arrive
        in time; review 48 M1: what it takes, not the server's buffer, is its progress)."""
        if self._upstream != "sending" or self.conn.phase != "body":
            return  # (a body whole, or going nowhere, has no deadline of the upstream's)
        if self._taking_since is None or left + MIN_TAKEN <= self._taking_mark:
            if self._taking_since is not None:  # it takes the body: progress too
                self._progress = now
            self._taking_since, self._taking_mark = now, left

    def upstream_resumed(self, now: float) -> None:
        """The upstream took what waited: the client is read again, and its body's deadlines
        run again from now, less the time they stood."""
        since, self._taking_since = self._taking_since, None
        if since is not None:
            self._progress = now  # (it took what waited)
            self._since = max(self._since, now)
            self._began += now - since

    def client_resumed(self, now: float) -> None:
        """The client took what waited in its socket (`client_paused`): it is given back."""
        if self._queued_held:
            self.state.unread.pop(self, None)
            self.state.unhold_partial(self._queued_held)
            self._queued_held = 0
        if self._paused_since is not None:
            self._paused_since = None
            self._taken()
            if self.closed or self._evicted:  # nothing is read or answered any more (review
                return  # 44: a closed session's `More` woke a task group anyio had ended)
            if self._upstream in ("sending", "streaming"):
                self.actions.append(ResumeUpstream())
            self._hold_client("full", False)
            if self._more:  # pipelined requests waited for the client to take its answers
                self.actions.append(More())

    def client_gone(self, now: float) -> None:
        """The client's connection is gone (closed once its last bytes went, aborted, reset);
        call it after what told the session the client left (`client_data` with ``b""``,
        unless it closed already); once more does nothing. What the connection held until
        then comes back: its place in ``max_connections``, what waited in its socket, and the
        stream slot of a whole answer that waited there (attack 45 F1: a closed connection
        whose client took its answer's last bytes slowly counted in neither, and such
        connections held descriptors up to the process's limit)."""
        self.client_resumed(now)
        if not self._gone:
            self._gone = True
            self.state.connections -= 1

    @property
    def held(self) -> int:
        """Bytes of ``max_partial`` held for what waits in the client's socket."""
        return self._queued_held

    def evict(self) -> int:
        """`GatewayState.evict_unread` took back what this client's socket held of the budget
        (the state's account is the caller's): the connection ends at its next deadline, now
        (`tick`: the server's sweep acts on it); counted as refused ``unread`` now (it may be
        gone by then). Till then the upstream is not read (`client_paused`)."""
        held, self._queued_held = self._queued_held, 0
        self._evicted = True
        self.state.metrics.refused["unread"] += 1
        return held

    def _abort(self, now: float, *, counted: bool = False) -> None:
        """The client does not take what waits in its socket, and the budget has no room for
        it: its connection ends now, its request cancelled (Rule 5)."""
        if not counted:
            self.state.metrics.refused["unread"] += 1
        if not self.closed:
            self._cancel(now)  # (it returns no bytes: it closes)
        self.actions.append(Abort())

    def _taken(self) -> None:
        """The client took the answer that waited in its socket (or is gone): its slot back."""
        if self._unread:
            self._unread = False
            self.state.release_stream()

    def _hold_client(
        self, why: Literal["full", "unsent", "backlog", "pipelined"], hold: bool
    ) -> None:
        """Stop reading the client while any reason holds it (`PauseClient`, `ResumeClient`)."""
        holds = self._client_held
        before = bool(holds)
        if hold:
            holds.add(why)
        else:
            holds.discard(why)
        if bool(holds) != before:
            self.actions.append(PauseClient() if holds else ResumeClient())

    def _local(self, name: str) -> bytes:
        state = self.state
        conn = self.conn
        if name == "healthz":
            return conn.reply_local(200, "application/json", b'{"status":"ok"}')
        if name == "readyz":
            ready = state.readiness
            status = 200 if ready.ready else 503
            word = "ready" if ready.ready else "not ready"
            body = json.dumps({"status": word, "reason": ready.reason}).encode()
            return conn.reply_local(status, "application/json", body)
        return conn.reply_local(
            200, "text/plain; version=0.0.4; charset=utf-8", state.metrics.render()
        )

    # -- one request upstream ---------------------------------------------------------------

    def _begin(self, forward: Forward, now: float) -> None:
        self._forward = forward
        self._own = False
        self._start = now
        self._answered = False
        self._progress = now
        self._usage = None
        self._sent = now  # keep-alives count from the request
        request = forward.request
        held = not isinstance(request, PassThrough) or forward.body is not None or (
            request.method == "GET"
        )  # fmt: skip
        self._replay = forward if held else None
        self._open(fresh=not held, now=now)

    def _open(self, *, fresh: bool, now: float) -> None:
        if self._upstream == "draining":  # the next request came first: that one is closed
            self._release(reuse=False)
        self._up = None
        self._steady = None
        self._upstream = "connecting"
        self._since = now
        self.actions.append(Connect(fresh=fresh))

    def upstream_connected(self, now: float, conn: ClientConnection | None = None) -> bytes:
        """The upstream connection is open: ``conn`` is the `ClientConnection` a `Release`
        gave back with it if it came from the pool, ``None`` for a new one."""
        forward = self._forward
        if self.closed or self._upstream != "connecting" or forward is None:
            self.actions.append(Release(connection=None))  # not wanted any more
            return b""
        self._pooled, self._pooled_at = conn is not None, now
        if conn is not None:
            conn.start_next_cycle()
        up = (
            conn
            if conn is not None
            else ClientConnection(
                self.config.upstream,
                keep_text=False,  # what it passes on is not kept: only the calls' arguments
                max_result_size=self.config.max_answer,  # which it assembles, and holds
                max_event_size=self.config.max_event,
                text_runs=True,
            )
        )
        self._up = up
        self._upstream = "sending"
        self._progress = now
        pieces = list(  # every value from the client in it was checked
            up.send(forward.request, headers=forward.headers, body=forward.encoded)
        )
        if forward.body is not None:
            pieces += (up.send_data(forward.body), up.send_end())
        pieces += [up.send_data(piece) for piece in self._unsent]
        if self._unsent_end:
            pieces.append(up.send_end())
        self._unsent, self._unsent_size, self._unsent_end = [], 0, False
        self.actions.append(ToUpstream(b"".join(pieces)))
        self._hold_client("unsent", False)
        if self._paused_since is not None:
            self.actions.append(PauseUpstream())
        return b""

    def _up_send(self, data: bytes | None) -> None:
        """A piece of the client's body (``None``: its end), to the upstream as it comes."""
        up = self._up
        if up is None:  # still being reached: held, bounded (Rule 5)
            if data is None:
                self._unsent_end = True
                return
            self._unsent.append(data)
            self._unsent_size += len(data)
            if self._unsent_size > _UNSENT_LIMIT:
                self._hold_client("unsent", True)
            return
        piece = up.send_end() if data is None else up.send_data(data)
        if piece:
            self.actions.append(ToUpstream(piece))

    def upstream_failed(self, reason: str, now: float, *, starved: bool = False) -> bytes:
        """The upstream could not be reached, or its connection broke (a reset). ``starved``:
        the connect failed for want of the gateway's own resources (`starved`: descriptors,
        buffers), not the upstream's: 503 with ``Retry-After``, as any overload of the
        gateway's (attack 71 F2: it was 502, the upstream blamed)."""
        if self._upstream == "draining":
            self._release(reuse=False)
            return b""
        if self.closed or self._upstream == "none":
            return b""
        if self._upstream == "connecting":
            if starved:
                self.state.metrics.refused["starved"] += 1
                return self._broken(
                    f"the gateway is short of its own resources to reach its upstream ({reason})",
                    now,
                    kind=FailureKind.OVERLOADED,
                )
            return self._broken(f"the gateway cannot reach its upstream: {reason}", now)
        return self._upstream_end(now, f"the upstream connection broke: {reason}")

    def upstream_data(self, data: bytes, now: float) -> bytes:
        """Bytes from the upstream (``b""``: it closed the connection)."""
        up = self._steady
        if up is not None and data:  # a relayed stream under way: its every read, nearly
            steady, watch = self._watch
            seen = 0 if watch is None else watch.seen
            try:
                events = up.feed(data)
            except SvirProtocolError as exc:
                if self._trail_by is not None:
                    return self._trail(up, len(data), now, broke=True)
                return self._fed(up, [], exc, seen, now)
            if self._trail_by is not None:
                return self._trail(up, len(data), now, broke=up.error is not None)
            if events or up.error is not None:
                return self._fed(up, events, up.error, seen, now)
            if watch is not None and watch.seen != seen:
                self.conn.events_forwarded += watch.seen - seen
                self._progress = now
            return self._relay_more(steady.relayed, now)
        if self._upstream == "draining":  # also once the client left (Rule 6)
            return self._drained_data(data)
        if self.closed or self._upstream in ("none", "connecting"):
            return b""
        if not data:
            return self._upstream_end(now, None)
        up = self._up
        assert up is not None
        first, self._answered = not self._answered, True
        exchange = up.exchange
        assert exchange is not None
        seen = exchange.events_seen
        error: BaseException | None
        try:
            events = up.feed(data)
            error = up.error
        except SvirProtocolError as exc:
            events, error = [], exc
        if error is not None and not events and first and not _answering(data) and self._retry(now):
            return b""  # Rule 6: a kept-alive connection that spoke out of turn
        return self._fed(up, events, error, seen, now)

    def _news(self, events: list[ExchangeEvent]) -> bool:
        """Rule 3: whether a read's events are progress (`svir_proto._progress`)."""
        moved = False
        for event in events:
            moved = moved or news(event, self._usage)
            if type(event) is Usage:
                self._usage = event
        return moved

    def _fed(
        self,
        up: ClientConnection,
        events: list[ExchangeEvent],
        error: BaseException | None,
        seen: int,
        now: float,
    ) -> bytes:
        """What a read of the upstream brought: ``events`` (and ``error``, if it broke the
        protocol); ``seen``, the events the stream had carried before it."""
        exchange = up.exchange
        assert exchange is not None
        seen = exchange.events_seen - seen  # a relay's events: its watcher counts them
        if seen:
            self.conn.events_forwarded += seen
            self._progress = now
        elif events and self._news(events):
            self._progress = now
        if any(type(e) is ResponseStarted and _framed_twice(e.headers) for e in events):
            return self._broken(  # Rule 2: what may smuggle a response is not passed on
                "the upstream framed its answer with both Content-Length and Transfer-Encoding",
                now,
            )
        request = exchange.request
        if type(error) is ToolCallError and isinstance(request, PassThrough) and request.relay:
            # the checks at its end marker failed (a call with no id, or two with one): a
            # relayed answer is the upstream's, whole and as it came, and nothing of ours
            # follows its marker (Rule 1); its connection is not read past it
            return self._relayed(up, [*events, StreamEnded(complete=False, done=True)], now, None)
        out = self._relayed(up, events, now, error)
        if self.closed or self._up is not up:  # its answer ended
            return out
        if error is not None:
            return out + self._broken(f"the upstream broke the protocol: {error}", now)
        if not (isinstance(request, PassThrough) and request.relay) and self.conn.outcome is None:
            held = exchange.pending  # a translated stream's event not whole yet, in its decoder
            if (held > PARTIAL_ALLOWANCE or self._partial_held) and not self._hold_unfinished(
                held, now
            ):
                return out + self._too_long(now)
        return out

    def _upstream_end(self, now: float, broke: str | None) -> bytes:
        """The upstream connection ended: closed, or broken (``broke`` says how)."""
        up = self._up
        assert up is not None
        if self._trail_by is not None:  # after a relay's end marker: the body ends or is cut
            return self._trail_end(up, now, broke)
        if not self._answered and self._retry(now):
            return b""  # Rule 6: a kept-alive connection the upstream had closed
        try:
            events = up.close() if broke is None else up.interrupt(broke)
        except SvirProtocolError as exc:
            return self._broken(f"the upstream broke the protocol: {exc}", now)
        if not events:  # it ended before its head was whole: nothing to end the answer with
            return self._broken(broke or "the upstream closed before its answer", now)
        return self._relayed(up, events, now)

    def _retry(self, now: float) -> bool:
        """Rule 6: send the request once more, on a new connection, if it went on a kept-alive
        one (`_RETRY_WITHIN` ago at most) and may be sent again."""
        if not self._pooled or self._replay is None or now - self._pooled_at > _RETRY_WITHIN:
            return False
        self._forward, self._replay = self._replay, None
        self._release(reuse=False)
        self._open(fresh=True, now=now)
        return True

    def _relayed(
        self,
        up: ClientConnection,
        events: list[ExchangeEvent],
        now: float,
        error: BaseException | None = None,
    ) -> bytes:
        """The client's bytes for what the upstream's bytes brought (Rule 1); with ``error``,
        what came before the event that broke the protocol."""
        conn = self.conn
        exchange = up.exchange
        assert exchange is not None
        relayed = exchange.relayed
        if not (isinstance(exchange.request, PassThrough) and exchange.request.relay):
            ended = bool(events) and type(events[-1]) is StreamEnded  # (what it did not carry)
            problems = exchange.result.problems if ended else ()
            data = conn.upstream(events, now=self.state.wall(now), problems=problems)
        else:
            data = self._relay(up, relayed, events, now, error)
        relayed.clear()
        if data:
            self._sent = now
        if conn.outcome is not None and not self.closed:
            data += self._finished(now)
        return data

    def _relay(
        self,
        up: ClientConnection,
        relayed: list[bytes],
        events: list[ExchangeEvent],
        now: float,
        error: BaseException | None,
    ) -> bytes:
        conn = self.conn
        exchange = up.exchange
        assert exchange is not None
        out: list[bytes] = []
        end: StreamEnded | None = None
        if exchange.watcher is None:  # another dialect's decoder: its events are the count
            conn.events_forwarded += sum(type(e) not in _NOT_COUNTED for e in events)
        for event in events:
            if type(event) is RequestFailed:  # an upstream 401, a content coding not asked for
                exchange.relayed.clear()
                return conn.upstream([event], now=self.state.wall(now))
        started: ResponseStarted | None = None
        for event in events:
            if type(event) is ResponseStarted:
                started = event
                out.append(conn.relay_head(event.status, event.headers))
                if conn.relaying == "late":
                    self._late_head = (event.status, event.headers)
                elif conn.relaying == "stream" and error is None:
                    self._steady = self._up  # what follows, `_relay_more` may take
                    self._watch = (exchange, exchange.watcher)
            elif type(event) is StreamEnded:
                end = event
            elif type(event) is StreamStarted:
                conn.relayed_start(event)
        if (
            conn.head_only
            and started is not None
            and conn.relaying
            and end is None
            and error is None
        ):
            # a HEAD's answer is the head of the GET that asked for it (RFC 9110 9.3.2), whole
            # at once (attack 47 H5: a request pipelined behind it waited for a body that did
            # not come, for --timeout); that body drains to its end, to keep the connection
            # (attack 45 F5: it was closed, and each HEAD opened a new one), if its length says
            # it is within drain_limit. Else, or for a stream, the connection is closed at the
            # head (attack 44 F2: 100 pipelined HEADs of the model listing pulled 200 MB from
            # the upstream to be dropped; what it pushes before the close is all it costs then)
            self._head_drains = conn.relaying == "raw" and _short(started, self.config.drain_limit)
            out.append(conn.relay_end(complete=True))
            return b"".join(out)
        if conn.relaying == "late":  # a failure after a keep-alive sent our head
            self._late += relayed
            self._late_size += sum(map(len, relayed))  # (a running total: reads may be bytes)
            if end is None and self._late_size < MAX_ERROR_BODY:
                return b""
            status, headers = self._late_head
            failure = body_outcome(status, headers, b"".join(self._late)).failure
            self._late, self._late_size = [], 0
            return conn.upstream([RequestFailed(failure=failure)], now=self.state.wall(now))
        stream = conn.relaying == "stream"
        trail = (
            stream
            and end is not None
            and end.done
            and error is None
            and up.finishing
            and up.error is None  # (a decoder that refused the marker reads no more)
        )
        if trail:  # the marker came, the body goes on: so does the relay (Rule 1)
            self._trail_by = now + self.config.connect_timeout
            self._drained = 0
        if stream:  # Rule 4: only whole events go out, so that an
            # error or a keep-alive of ours never lands inside one of the upstream's
            data = b"".join(relayed) if len(relayed) != 1 else relayed[0]
            if self._partial:
                data = bytes(self._partial + data)
            if error is not None:  # what broke the protocol is not passed on, only what came first
                at = getattr(error, "offset", None)
                known = len(data) if at is None else max(0, at - self._body_at)
                cut = _last_boundary(data[:known])
            else:
                cut = len(data) if end is not None and not trail else _last_boundary(data)
            self._partial[:] = data[cut:]
            self._body_at += cut
            if cut:
                out.append(conn.relay_events(data if cut == len(data) else data[:cut]))
            if error is not None:  # what broke the protocol goes nowhere (`_broken` follows)
                self._drop_partial()
            elif (self._partial or self._partial_held) and not self._hold_partial(now):
                return b"".join(out) + self._too_long(now)
        else:
            out += [conn.relay_data(piece) for piece in relayed]
        if end is not None and not trail:
            # ended where the upstream ended it (its marker, or its body's end), else a cut;
            # a body that broke after its marker is cut too, as in a later read (`_trail`)
            whole = (end.done or exchange.result.interrupted is None) and error is None
            out.append(conn.relay_end(complete=whole))
        return b"".join(out)

    def _relay_more(self, relayed: list[bytes], now: float) -> bytes:
        """What `_relay` does with a read of a relayed stream that brought no event, the most
        of its reads (text the watcher does not read): its whole events go out, as they came."""
        data = relayed[0] if len(relayed) == 1 else b"".join(relayed)
        relayed.clear()
        held = self._partial
        if held:  # only the new bytes are looked at (and the held ones' last three, where a
            # blank line may begin), so that an event in a thousand reads costs its length
            edge = bytes(held[-3:])
            cut = _last_boundary(edge + data) - len(edge)
            if cut < 0:  # still inside the event (0: the held bytes are whole, LF CR ending
                # them, and the new ones begin the next)
                held += data
                return b"" if self._hold_partial(now) else self._too_long(now)
            held += data[:cut]
            data, held[:] = bytes(held), data[cut:]
            if not self._hold_partial(now):  # the next event, begun in this read
                return self.conn.relay_events(data) + self._too_long(now)
        else:
            cut = _last_boundary(data)
            if cut < len(data):
                held += data[cut:]
                if not self._hold_partial(now):
                    return self.conn.relay_events(data[:cut]) + self._too_long(now)
                if not cut:
                    return b""
                data = data[:cut]
        self._body_at += len(data)
        self._sent = now
        return self.conn.relay_events(data)

    def _hold_partial(self, now: float) -> bool:
        """Hold the relayed event that is not whole yet against ``max_partial``: its length,
        and what the decoder that watches it holds of it (its bytes, and `LINE_COST` a data
        line: attack 38); see `_hold_unfinished`."""
        up = self._up
        assert up is not None  # (a relay under way)
        exchange = up.exchange
        assert exchange is not None
        return self._hold_unfinished(len(self._partial) + exchange.pending, now)

    def _hold_unfinished(self, size: int, now: float) -> bool:
        """Hold ``size`` bytes of the upstream's event not whole yet against ``max_partial``,
        past `PARTIAL_ALLOWANCE`, so that what upstreams' long events hold across all streams
        has a bound (attack 36 F2: 16 MiB a relayed stream, 4 GB in all; 8 MiB a translated
        one, in its decoder); ``False`` when the budget has not the room, even once the
        clients that have held bytes in their sockets longest lost theirs (review 44 M2: such
        clients filled it, and long events were refused)."""
        held = self.state.rehold_partial(self._partial_held, size, now, self)
        if held is None:
            return False
        self._partial_held = held
        return True

    def _drop_partial(self) -> None:
        self._partial.clear()
        if self._partial_held:
            self.state.unhold_partial(self._partial_held)
            self._partial_held = 0

    def _too_long(self, now: float) -> bytes:
        """The upstream's unfinished event does not fit what the gateway may hold now: the
        answer ends with an error (what came before it went on); after its end marker, the
        body is cut there, as past ``drain_limit`` (nothing of ours follows the marker)."""
        self._drop_partial()
        if self._trail_by is not None:
            return self._end_trail(now, complete=False)
        return self._broken(
            "the gateway has no room now for the rest of the upstream's event (--max-partial)",
            now,
        )

    def _trail(self, up: ClientConnection, read: int, now: float, *, broke: bool) -> bytes:
        """A read of a relayed body after its end marker (Rule 1): its whole events on to the
        client as they came (but what broke the body's framing, which cuts the client's body as
        it cut the upstream's), until the body ends, or its reads (``read`` bytes this one, its
        framing counted) go over ``drain_limit``."""
        exchange = up.exchange
        assert exchange is not None
        relayed = exchange.relayed
        data = b"".join(relayed)
        relayed.clear()
        self._drained += read
        out = [self._relay_more([data], now)] if data else []
        if self._trail_by is None:  # it ended there (`_too_long`)
            return b"".join(out)
        if broke or not up.finishing or self._drained > self.config.drain_limit:
            out.append(self._end_trail(now, complete=not broke))
        return b"".join(out)

    def _trail_end(self, up: ClientConnection, now: float, broke: str | None) -> bytes:
        """The upstream connection ended (closed, or ``broke``: a reset) after a relay's end
        marker: the client's body ends where the upstream's did (the close that delimits it),
        else is cut as it was."""
        if broke is not None:
            return self._end_trail(now, complete=False)
        with suppress(SvirProtocolError):  # what broke is not passed on: the body is cut
            up.close()
        return self._end_trail(now, complete=up.body_ended)

    def _end_trail(self, now: float, *, complete: bool) -> bytes:
        """The end of a relayed body after its marker: what is left of an event goes too."""
        self._trail_by = None
        tail = bytes(self._partial)
        self._drop_partial()
        out = self.conn.relay_events(tail) if tail else b""
        return out + self.conn.relay_end(complete=complete) + self._finished(now, drain=False)

    def _finished(self, now: float, *, drain: bool = True) -> bytes:
        """The client's answer is whole (or cut): the request is over for the client; its
        upstream connection goes to the pool, drains to its body's end (``drain``), or closes."""
        up = self._up
        assert up is not None  # only an upstream's bytes finish an answer
        self._steady = None
        self._done(now)
        finishing, self._head_drains = up.finishing or self._head_drains, False
        if up.reusable:
            self._release(reuse=True)
        elif not (finishing and drain and self._drain(now + self.config.connect_timeout, 0)):
            self._release(reuse=False)
        return self._after_answer(now)

    def _drain(self, by: float, drained: int) -> bool:
        """Read a whole answer's upstream connection to its body's end, until ``by`` (Rule 6):
        whether it may. A drain is there to fill the pool, in the room clients leave: at most
        ``pool_size`` at once, and no more than ``max_connections`` with the client connections
        (this one counted). Its bytes go nowhere, so it is read even while the client is full."""
        state = self.state
        cfg = self.config
        if state.draining >= min(cfg.pool_size, cfg.max_connections - state.connections):
            return False
        state.draining += 1
        self._upstream, self._drain_by, self._drained = "draining", by, drained
        self._taking_since = None  # (review 48 M2: not the next request's)
        if self._paused_since is not None:
            self.actions.append(ResumeUpstream())
        return True

    def _drained_data(self, data: bytes) -> bytes:
        """Read the rest of a finished answer's body, to keep its connection (Rule 6)."""
        up = self._up
        assert up is not None
        self._drained += len(data)
        if not data or self._drained > self.config.drain_limit:
            self._release(reuse=False)
            return b""
        try:
            up.feed(data)
        except SvirProtocolError:
            self._release(reuse=False)
            return b""
        if up.reusable:
            self._release(reuse=True)
        return b""

    def _release(self, *, reuse: bool) -> None:
        self._steady = None
        self._trail_by = None
        self._taking_since = None
        if self._upstream == "draining":
            self.state.draining -= 1
        if self._upstream != "none":
            up = self._up if reuse and self._up is not None and self._up.reusable else None
            self.actions.append(Release(connection=up))
        self._upstream = "none"
        self._up = None

    def _after_answer(self, now: float) -> bytes:
        """The answer to the client is over: read the next request, or close (while an upstream
        connection drains, the next request waits for it only in the pool's count)."""
        if self.conn.reusable and not (self._stopping or self.state.stopping):
            return self._next_cycle(now)
        return self._close()

    def _next_cycle(self, now: float) -> bytes:
        self._new_cycle(now)
        return b"" if self.closed else self._pump(now)  # a pipelined request may be here already

    def _new_cycle(self, now: float) -> None:
        """Ready the client connection for its next request, or close it."""
        conn = self.conn
        if not conn.reusable:
            self._close()
            return
        conn.start_next_cycle()
        self._hold_client("backlog", False)
        self._forward = None
        self._recorded = False
        self._since = self._began = now
        self._refusals = self._scarcity()
        self._drop_partial()
        self._steady = None
        self._body_at = 0

    # -- endings ------------------------------------------------------------------------------

    def _broken(
        self, reason: str, now: float, *, kind: FailureKind = FailureKind.TRANSIENT
    ) -> bytes:
        """End the request with an error in the client's dialect and close the upstream
        connection (an event the upstream had half sent is lost: the error says why)."""
        conn = self.conn
        exchange = None if self._up is None else self._up.exchange
        problems = () if exchange is None else exchange.result.problems  # (said: review 43 M5)
        sequence = None if exchange is None else exchange.next_sequence
        out = conn.upstream_broken(
            reason, kind=kind, now=self.state.wall(now), problems=problems, sequence=sequence
        )
        self._release(reuse=False)
        self._done(now)
        if out:
            self._sent = now
        return out + self._after_answer(now)

    def _cancel(self, now: float) -> bytes:
        """The client went away or misbehaved: its upstream request is cancelled at once."""
        conn = self.conn
        trail_by, self._trail_by = self._trail_by, None
        if trail_by is not None:  # its answer was whole: the upstream's body may drain on
            conn.outcome = "ok"
            self._steady = None
            if not self._drain(trail_by, self._drained):
                self._release(reuse=False)
        if self._forward is not None and conn.outcome is None:
            conn.outcome = "cancelled"
        self._done(now)
        if self._upstream != "draining":  # a whole answer's connection drains on (Rule 6)
            self._release(reuse=False)
        return self._close()

    def _close(self) -> bytes:
        self._steady = None
        self._drop_partial()
        if not self.closed:
            self.closed = True
            self.conn.finish_request()
            self.conn.let_go()
            self._forward = self._replay = None
            self.actions.append(Close())
        return b""

    def _done(self, now: float) -> None:
        """The current request ended: count it and say so, once."""
        conn = self.conn
        if self._recorded or not conn.method:
            return
        self._recorded = True
        self._served = True
        metrics = self.state.metrics
        outcome = conn.outcome or "cancelled"
        failure = conn.upstream_failure
        if failure is not None:
            metrics.upstream_failures[failure.value] += 1
        metrics.events_forwarded += conn.events_forwarded
        self.actions.append(
            Done(
                method=conn.method,
                target=conn.target,
                dialect=conn.dialect or "-",
                outcome=outcome,
                upstream_failure=None if failure is None else failure.value,
                events=conn.events_forwarded,
                seconds=now - self._start,
                request_id=conn.request_id,
                lost=conn.noted,
            )
        )
        conn.finish_request()

    # -- time -----------------------------------------------------------------------------

    def _sent_at(self, out: list[bytes], now: float) -> bytes:
        data = b"".join(out)
        if data:
            self._sent = now
        return data

    @property
    def draining(self) -> bool:
        """Whether the session still reads its upstream connection although the client has
        gone: the answer was whole, its body's end has not come yet (Rule 6). The server keeps
        that connection (and calls `upstream_data`, `upstream_failed`, `tick`) until a
        `Release` says what becomes of it."""
        return self._upstream == "draining"

    @property
    def deadline(self) -> float:
        """When `tick` is due next (Rules 3 and 4); ``inf``: never."""
        if self._evicted:  # (`evict`)
            return float("-inf")
        if self.closed:
            return self._drain_by if self._upstream == "draining" else float("inf")
        cfg = self.config
        phase = self.conn.phase
        if self._more:  # pipelined requests, whole, wait for their turn: no head is late
            due = float("inf")  # (review 36: a slow reader's got a 408), the send timeout runs
        elif phase == "idle":
            due = self._since + (cfg.idle_timeout if self._served else cfg.head_timeout)
        elif phase == "head":
            due = self._since + cfg.head_timeout
        elif phase == "body":
            due = self._body_due()
        else:
            due = float("inf")
        up = self._upstream
        if up == "connecting":
            due = min(due, self._since + cfg.connect_timeout)
        elif self._trail_by is not None:  # no keep-alive after the marker
            due = min(due, self._trail_by)
        elif up in ("sending", "streaming"):
            due = min(due, self._progress + cfg.progress_timeout)
            if cfg.keepalive and self.conn.streaming_request:
                due = min(due, self._sent + cfg.keepalive)
        elif up == "draining":
            due = min(due, self._drain_by)
        if self._paused_since is not None:
            due = min(due, self._paused_since + cfg.send_timeout)
        return due

    def _body_due(self) -> float:
        """Rule 3: a body's deadline is its silence (``body_timeout`` from its last read) and,
        once another connection or request was refused for want of what a body being read
        holds (a connection, a stream slot, a share of the budget: `_scarcity`), its rate (by
        ``body_timeout`` plus what came of it over ``body_rate``, from its head's first byte,
        whatever its length says: attack 43 F2): a slow client keeps its time while nobody
        waits for what it holds (attack 35: bodies trickled a byte at a time held every
        stream slot, and the connections of local requests, for ever). While the upstream does
        not take it (`upstream_paused`), the gateway does not read it: the upstream's."""
        cfg = self.config
        if self._taking_since is not None:
            return self._taking_since + cfg.body_timeout
        due = self._since + cfg.body_timeout
        if self._scarcity() != self._refusals:
            due = min(due, self._began + cfg.body_timeout + self.conn.body_length / cfg.body_rate)
        return due

    def _scarcity(self) -> int:
        """Connections and requests refused so far for want of what a body being read holds:
        descriptors, connection and stream slots, the body budget."""
        refused = self.state.metrics.refused
        return refused["accept"] + refused["connections"] + refused["streams"] + refused["buffered"]

    def tick(self, now: float) -> bytes:
        """A deadline may have passed (Rules 3 and 4): act on it."""
        if now < self.deadline:
            return b""
        if self._evicted:
            self._evicted = False
            self._abort(now, counted=True)
            return b""
        if self.closed:  # only a draining upstream connection has a deadline left
            self._release(reuse=False)
            return b""
        cfg = self.config
        conn = self.conn
        if self._paused_since is not None and now >= self._paused_since + cfg.send_timeout:
            return self._cancel(now)  # a client that reads nothing loses its stream
        if self._upstream == "draining" and now >= self._drain_by:
            self._release(reuse=False)
        phase = conn.phase
        if phase == "idle":
            due = self._since + (cfg.idle_timeout if self._served else cfg.head_timeout)
            return self._close() if now >= due else b""
        if phase == "body" and self._taking_since is not None and now >= self._body_due():
            return self._broken(
                f"the upstream took less than {MIN_TAKEN // 1024} KiB of the request's body in "
                f"{cfg.body_timeout:g} s",
                now,
                kind=FailureKind.TIMEOUT,
            )
        if phase == "head" or (phase == "body" and now >= self._body_due()):
            out = conn.timeout("head" if phase == "head" else "body")
            self._release(reuse=False)
            self._done(now)
            return out + self._close()
        if self._upstream == "connecting":  # its deadline is the only one left that passed
            return self._broken(
                f"the gateway cannot reach its upstream (no connection in "
                f"{cfg.connect_timeout:g} s)",
                now,
                kind=FailureKind.TIMEOUT,
            )
        if self._trail_by is not None:  # the marker came long ago: the answer ends there
            return self._end_trail(now, complete=True) if now >= self._trail_by else b""
        if self._upstream not in ("sending", "streaming"):
            return b""
        if now >= self._progress + cfg.progress_timeout:
            return self._broken(
                f"the upstream made no progress for {cfg.progress_timeout:g} s",
                now,
                kind=FailureKind.TIMEOUT,
            )
        self._sent = now  # a keep-alive is due
        return conn.keepalive()

    def shutdown(self, now: float) -> bytes:
        """The gateway stops and its grace is over: an answer under way ends with an error in
        the client's dialect and its end marker; an idle connection just closes."""
        if self.closed:
            if self._upstream == "draining":
                self._release(reuse=False)
            return b""
        self._stopping = True
        if self._trail_by is not None:  # the answer was whole: it ends at once
            return self._end_trail(now, complete=True)
        if self._forward is not None and self.conn.outcome is None:
            return self._broken("the gateway is shutting down", now, kind=FailureKind.OVERLOADED)
        return self._cancel(now)


_NOT_COUNTED: Final = (ResponseStarted, StreamEnded, RequestFailed)
"""What a relayed answer brings that is not one of its stream's events."""


def _short(started: ResponseStarted, limit: int) -> bool:
    """Whether the body's Content-Length says it is at most ``limit`` (not for a longer one, a
    chunked one, or one the close delimits)."""
    length = next((v for k, v in started.headers if k == "content-length"), None)
    return length is not None and int(length) <= limit


_STATUS_LINE: Final = re.compile(rb"(?:\r?\n){0,8}HTTP/[0-9]\.[0-9] [0-9]{3}[ \r\n]")


def _answering(data: bytes) -> bool:
    """Whether an upstream's first bytes after a request begin as an answer does: a status
    line, whatever breaks after it, after a few blank lines too (review 51 r5: a server that
    wrote one after its last body had its answer taken for junk, and the request ran twice)
    (Rule 6)."""
    return _STATUS_LINE.match(data) is not None


def _framed_twice(headers: tuple[tuple[str, str], ...]) -> bool:
    """Whether a response head has both framings (RFC 9112 6.3: "ought to be handled as an
    error"; the sizes may differ, and a proxy between may read the other one)."""
    names = {k for k, _ in headers}
    return "content-length" in names and "transfer-encoding" in names


def _last_boundary(data: bytes) -> int:
    """Where the last whole SSE event of ``data`` ends: after its last blank line (WHATWG: LF,
    CRLF and CR line ends), or 0. A blank line that ends ``data`` with LF CR is not yet known
    whole: it is a CRLF one, split, when the next read begins with its LF, which would begin
    the next piece the client is sent, where a keep-alive or an error of ours could split it
    (a stream of CR line ends only ends its events with CR CR: those go at once)."""
    i = data.rfind(b"\n\n")
    end = i + 2 if i >= 0 else 0
    if b"\r" in data:
        for blank in (b"\r\r", b"\n\r\n", b"\r\n\r\n", b"\n\r"):
            j = data.rfind(blank)
            if j >= 0:
                end = max(end, j + len(blank))
        if end == len(data) and data.endswith(b"\n\r"):
            return _last_boundary(data[:-1])
    return end
