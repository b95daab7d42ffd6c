"""The gateway on asyncio's `Protocol` callbacks: `GatewaySession` decides, this moves bytes.

One `_Client` protocol per client connection, one `_Upstream` per upstream connection, one
sweep a server for every deadline (a session's `deadline` is read, never scheduled: a timer
per stream reset on every event would cost more than the event). Writes go straight to the
transport; reading stops only while the other side's transport says it is full (asyncio's
``pause_writing``), which is backpressure both ways. Kept-alive upstream connections wait in a
bounded pool; one the upstream closes leaves it at once (``connection_lost``).

A bug met in one connection (an exception out of its session, which Rule 2 of the session
says cannot happen) ends that connection only, with a log line (`_Client.fail`): never the
sweep, so never every other connection's deadlines.

asyncio's own accept loop survives running out of descriptors (it waits a second and accepts
again; what it reports of it, a traceback for each connection in the backlog, is counted and
logged once in a while: `Server.exception_handler`); a connection past ``max_connections`` is
answered 503 and closed at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Final

from ..connection import ClientConnection
from ..gateway.config import MIN_TAKEN, GatewayState
from ..gateway.session import (
    Abort,
    Close,
    Connect,
    Done,
    GatewaySession,
    More,
    PauseClient,
    PauseUpstream,
    Release,
    ResumeClient,
    ResumeUpstream,
    ToUpstream,
    Work,
    record,
    starved,
    unsent,
)
from ._asyncio_socket import CAPACITY, queued, reset_unsent, unread

__all__: list[str] = []

log: Final = logging.getLogger("svir.gateway")
LINGER: Final = 2.0
"""Seconds a closed connection still reads (and drops) what its client sends: closing a socket
with unread bytes makes the kernel reset it, and the reset can destroy an answer not yet read
(a 401 sent before the body came). nginx's ``lingering_close`` does the same."""
LINGER_BYTES: Final = 1024 * 1024
SWEEP: Final = 0.25
CAPACITY_LOG_EVERY: Final = 10.0
"""Seconds between two log lines saying accepting is paused (asyncio reports it once for each
connection waiting in the backlog, with a traceback: thousands a second)."""
"""Seconds between two looks at every session's deadline: deadlines are seconds long."""
BUSY: Final = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    b"Retry-After: 1\r\nConnection: close\r\nContent-Length: 81\r\n\r\n"
    b'{"error":{"message":"the gateway holds all the connections it may","code":"busy"}}'
)


class _Upstream(asyncio.Protocol):
    def __init__(self, server: Server) -> None:
        self.server = server
        self.owner: _Client | None = None
        self.transport: asyncio.Transport | None = None
        self.conn: ClientConnection | None = None  # while pooled
        self.idle_since = 0.0
        self.lost = False
        self.full = False  # its write buffer is past its high-water mark

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def abort(self) -> None:
        """Close the connection now: what the kernel still held for the upstream (a request's
        body it did not read) is dropped with a reset (attack 47 H1)."""
        if self.transport is not None:
            _reset(self.transport)

    def data_received(self, data: bytes) -> None:
        owner = self.owner
        if owner is None:  # an idle pooled connection does not speak: drop it
            self.server.drop(self)
            return
        try:  # `_Client.write` and `act`, inline: this is every event's path
            session = owner.session
            out = session.upstream_data(data, _monotonic())
            if out and not owner.transport.is_closing():
                owner.transport.write(out)
            if session.actions:
                owner.act()
        except Exception as exc:
            owner.fail(exc)

    def eof_received(self) -> bool:
        owner = self.owner
        if owner is None:
            self.server.drop(self)
            return False
        try:
            owner.write(owner.session.upstream_data(b"", time.monotonic()))
            owner.act()
        except Exception as exc:
            owner.fail(exc)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        owner = self.owner
        if owner is None:
            self.server.drop(self)
            return
        try:
            if exc is not None:
                assert self.transport is not None  # (made before it is lost)
                answer = _unread(self.transport)
                if answer:  # (what came before the reset: `unread`)
                    owner.write(owner.session.upstream_data(answer, _now()))
                reason = str(exc) or type(exc).__name__
                owner.write(owner.session.upstream_failed(reason, _now()))
            else:
                owner.write(owner.session.upstream_data(b"", _now()))
            owner.act()
        except Exception as error:
            owner.fail(error)

    def pause_writing(self) -> None:  # the upstream does not take the client's body that fast
        self.full = True
        if self.owner is not None:
            self.owner.pause_reading("upstream")
            self.told()

    def told(self) -> None:
        """The session hears what of the client's body waits for the upstream (its deadline is
        the upstream's, `GatewaySession.upstream_paused`): when it fills, and at each sweep."""
        owner, transport = self.owner, self.transport
        if owner is None or transport is None:
            return
        try:
            owner.session.upstream_paused(_now(), _unsent(transport))
        except Exception as exc:
            owner.fail(exc)

    def resume_writing(self) -> None:
        self.full = False
        owner = self.owner
        if owner is not None:
            try:
                owner.session.upstream_resumed(_now())
            except Exception as exc:
                owner.fail(exc)
                return
            owner.resume_reading("upstream")


class _Client(asyncio.Protocol):
    def __init__(self, server: Server) -> None:
        self.server = server
        self.session = GatewaySession(server.state, _now())
        self.transport: asyncio.Transport
        self.up: _Upstream | None = None
        self._paused: set[str] = set()
        self._connecting: asyncio.Task[None] | None = None
        self._lingering = -1  # bytes dropped since the close, or -1: not closed
        self._lost = False  # connection_lost came: the transport is gone
        self._late: asyncio.TimerHandle | None = None  # the close's deadline (`_abort_late`)
        self._unsent = 0  # bytes still to send at the close's last deadline
        self._ended: Done | None = None  # the last request's, said once its answer is out
        self._cut = False  # the transport was aborted with bytes still to send
        self.full = False  # between ``pause_writing`` and ``resume_writing``

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.server.clients.add(self)

    def data_received(self, data: bytes) -> None:
        if self._lingering >= 0:  # closed: what comes is dropped, for a while
            self._lingering += len(data)
            if self._lingering > LINGER_BYTES:
                self._abort()
            return
        try:
            self.write(self.session.client_data(data, _now()))
            self.act()
        except Exception as exc:
            self.fail(exc)

    def eof_received(self) -> bool:
        if self._lingering < 0:
            try:
                self.write(self.session.client_data(b"", _now()))
                self.act()
            except Exception as exc:
                self.fail(exc)
        # closed (now, by the session, or before) unless the client has still to take what was
        # written: then `_close_taken` closes, or `_abort_late` (review 46 H1: a half-close
        # left what the kernel held to an orphan)
        return self._lingering >= 0 and self._left() > 0

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self.full = False
        if self._late is not None:  # its callback held this client, its session and their
            self._late.cancel()  # requests for send_timeout after the close (attack 39 F5)
            self._late = None
        ended, self._ended = self._ended, None
        if ended is not None:  # its answer went out, or the client did not take it
            self.server.done(unsent(ended) if self._cut or exc is not None else ended)
        session = self.session
        try:
            if not session.closed:
                session.client_data(b"", _now())
                self.act()
        except Exception as error:
            self.fail(error)
        finally:  # what it held went with it (after a failure too: review 44)
            session.client_gone(_now())
        if self.up is not None and session.draining:
            return  # a whole answer's connection reads its end, then goes to the pool
        self.server.clients.discard(self)  # (kept till then: the sweep keeps its deadline)
        if self.up is not None:  # a request the client left: its upstream is cancelled
            self._detach(reuse=None)

    def pause_writing(self) -> None:
        self.full = True
        self.told()

    def told(self) -> None:
        """The session hears what waits in the client's socket (`GatewaySession.client_paused`):
        when it fills, and again at each sweep while it stays full."""
        try:
            waiting = self.transport.get_write_buffer_size()
            self.session.client_paused(_now(), waiting, self._left())
            self.act()
        except Exception as exc:
            self.fail(exc)

    def resume_writing(self) -> None:
        self.full = False
        try:
            self.session.client_resumed(_now())
            self.act()
        except Exception as exc:
            self.fail(exc)

    def fail(self, exc: BaseException) -> None:
        """A bug met in this connection (its session raised): this connection ends, with a
        log line, and its upstream connection with it; the server and every other stream go
        on. The session is told the client left, so that its slot and budget are given back."""
        if isinstance(exc, OSError):  # the client reset while we wrote: a peer's doing
            log.debug("client connection ended: %r", exc)
        else:
            log.error("client connection failed: %r", exc, exc_info=exc)
        self.server.clients.discard(self)
        session = self.session
        with contextlib.suppress(Exception):
            if not session.closed:
                session.client_data(b"", _now())
            if session.draining:  # its upstream connection goes too: the drain is over
                session.upstream_failed("the client connection failed", _now())
        session.actions.clear()
        if self._connecting is not None:
            self._connecting.cancel()
            self._connecting = None
        up, self.up = self.up, None
        if up is not None:
            up.owner = None
            up.abort()
        self._lingering = 0  # what still comes is dropped
        self._abort()

    def _abort(self) -> None:
        """End the connection now; a request whose answer was still to send ended cut, and
        what the kernel still held for the client is dropped with a reset (`reset_unsent`)."""
        self._cut = self._cut or self._left() > 0  # (the kernel's too: review 46 L2)
        _reset(self.transport)

    # -- moving bytes -------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        if data and not self.transport.is_closing():
            self.transport.write(data)

    def pause_reading(self, why: str) -> None:
        if not self._paused and not self.transport.is_closing():
            self.transport.pause_reading()
        self._paused.add(why)

    def resume_reading(self, why: str) -> None:
        self._paused.discard(why)
        if not self._paused and not self.transport.is_closing():
            self.transport.resume_reading()

    def act(self) -> None:
        """Do what the session asked, in order."""
        session = self.session
        actions = session.actions
        while actions:
            action = actions.pop(0)
            kind = type(action)
            if kind is ToUpstream:
                up = self.up
                if up is not None and up.transport is not None and not up.lost:
                    up.transport.write(action.data)  # type: ignore[union-attr]
            elif kind is Connect:
                self._connect(action.fresh)  # type: ignore[union-attr]
            elif kind is Release:
                self._detach(reuse=action.connection)  # type: ignore[union-attr]
            elif kind is PauseUpstream:
                if self.up is not None and self.up.transport is not None:
                    self.up.transport.pause_reading()
            elif kind is ResumeUpstream:
                if self.up is not None and self.up.transport is not None:
                    self.up.transport.resume_reading()
            elif kind is PauseClient:
                self.pause_reading("session")
            elif kind is ResumeClient:
                self.resume_reading("session")
            elif kind is Work:
                self._work(action.run)  # type: ignore[union-attr]
            elif kind is More:  # after the other connections' turn
                asyncio.get_running_loop().call_soon(self._more)
            elif kind is Close:
                self._close()
            elif kind is Abort:
                self._abort()
            elif kind is Done:
                if self.session.closed and not self._lost and self._left():
                    self._ended = action  # type: ignore[assignment]  # (`connection_lost`)
                else:
                    self.server.done(action)  # type: ignore[arg-type]

    def _more(self) -> None:
        try:  # (a client gone by now: its closed session answers nothing)
            self.write(self.session.client_more(_now()))
            self.act()
        except Exception as exc:
            self.fail(exc)

    def _connect(self, fresh: bool) -> None:
        pooled = None if fresh else self.server.take()
        if pooled is not None:
            self.up = pooled
            pooled.owner = self
            conn, pooled.conn = pooled.conn, None
            self.write(self.session.upstream_connected(_now(), conn))  # in `act`'s guard
            self.act()
            return
        self._connecting = asyncio.get_running_loop().create_task(self._open())

    async def _open(self) -> None:
        server = self.server
        ep = server.state.config.upstream
        loop = asyncio.get_running_loop()
        try:
            if ep.scheme == "https":
                context = server.ssl_context or ssl.create_default_context()
                _, up = await loop.create_connection(
                    lambda: _Upstream(server), ep.host, ep.port, ssl=context,
                    server_hostname=ep.host,
                )  # fmt: skip
            else:
                _, up = await loop.create_connection(lambda: _Upstream(server), ep.host, ep.port)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if not self.session.closed:
                try:
                    reason = str(exc) or type(exc).__name__
                    self.write(self.session.upstream_failed(reason, _now(), starved=starved(exc)))
                    self.act()
                except Exception as error:
                    self.fail(error)
            return
        finally:
            self._connecting = None
        if self.session.closed:
            if up.transport is not None:
                up.transport.close()
            return
        up.owner = self
        self.up = up
        try:
            self.write(self.session.upstream_connected(_now()))
            self.act()
        except Exception as exc:
            self.fail(exc)

    def _detach(self, *, reuse: ClientConnection | None) -> None:
        """The request is done with its upstream connection: to the pool, or closed."""
        if self._connecting is not None:
            self._connecting.cancel()
            self._connecting = None
        up, self.up = self.up, None
        if self._lost:  # the client had gone: only this connection's drain kept it
            self.server.clients.discard(self)
        if up is None:
            return
        up.owner = None
        transport = up.transport
        if (
            reuse is not None
            and not up.lost
            and transport is not None
            and not transport.get_write_buffer_size()  # the request's bytes are all written
        ):  # (else the next request would wait behind what this one's upstream did not read)
            transport.resume_reading()
            self.server.give(up, reuse)
        else:
            up.abort()  # cancelled or broken: nothing more is read or written
        self.resume_reading("upstream")

    def _work(self, run: object) -> None:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[object] = loop.run_in_executor(None, run)  # type: ignore[arg-type]

        def finished(f: asyncio.Future[object]) -> None:
            exc = None if f.cancelled() else f.exception()
            if f.cancelled() or exc is not None:  # pragma: no cover - a bug in the core's parse
                log.error("preparing a request failed: %r", exc)
                self.session.work_dropped()
                self._abort()
                return
            try:  # even once the client left: what its body held is given back
                self.write(self.session.worked(f.result(), _now()))
                self.act()
            except Exception as error:
                self.fail(error)

        future.add_done_callback(finished)

    def _close(self) -> None:
        """Close once what was written is sent (asyncio's ``close``), after a lingering read
        (`LINGER`); a client that reads nothing for ``send_timeout`` cannot hold its connection
        (`_abort_late`)."""
        transport = self.transport
        if transport.is_closing() or self._lingering >= 0:
            return
        self._lingering = 0
        loop = asyncio.get_running_loop()
        if transport.can_write_eof():
            self._paused.clear()
            transport.resume_reading()
            try:
                transport.write_eof()  # the client sees the end; its last bytes are still read
            except OSError:  # it reset already (ENOTCONN): nothing more can reach it
                self._abort()
                return
            loop.call_later(LINGER, self._close_taken)
        else:  # pragma: no cover - TLS transports cannot half-close
            self._close_taken()
        deadline = self.server.state.config.send_timeout + LINGER
        self._unsent = self._left()
        self._late = loop.call_later(deadline, self._abort_late)

    def _close_taken(self) -> None:
        """The linger is over: the socket closes once the client took all that was written
        (the kernel's queue too: closed before, the queue outlived the connection in an
        orphaned socket, attack 46 G1); until then `_abort_late` watches it being taken."""
        if self._lost:
            return
        if self._left():
            asyncio.get_running_loop().call_later(LINGER, self._close_taken)
            return
        self.transport.close()

    def _left(self) -> int:
        """Bytes the client has still to take: ours, and the kernel's (`queued`)."""
        return _unsent(self.transport)

    def _abort_late(self) -> None:
        """The close's deadline: unless the client took `MIN_TAKEN` of what is left since the
        last one (then another ``send_timeout``: a steady reader of a long answer's last events
        is not cut, attack 41 F7). A transport asyncio has finished with raises if aborted (its
        loop is gone), with a traceback in the log for each connection that closed in time."""
        if self._lost:
            return
        unsent = self._left()
        if unsent and self._unsent - unsent >= MIN_TAKEN:
            self._unsent = unsent
            timeout = self.server.state.config.send_timeout
            self._late = asyncio.get_running_loop().call_later(timeout, self._abort_late)
            return
        self._cut = self._cut or unsent > 0  # (what the kernel holds too)
        self._abort()


class _Refused(asyncio.Protocol):
    """A connection past ``max_connections``: 503 at once, and closed."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.write(BUSY)  # type: ignore[attr-defined]
        transport.close()


class Server:
    """What the protocols of one gateway share: the state, the pool, the sweep."""

    def __init__(self, state: GatewayState, ssl_context: ssl.SSLContext | None) -> None:
        self.state = state
        self.ssl_context = ssl_context
        self.clients: set[_Client] = set()
        self.pool: deque[_Upstream] = deque()
        self.on_done: list[object] = []
        self._capacity_logged = -CAPACITY_LOG_EVERY

    def exception_handler(
        self, previous: Callable[[asyncio.AbstractEventLoop, dict[str, Any]], object] | None
    ) -> Callable[[asyncio.AbstractEventLoop, dict[str, Any]], None]:
        """The loop's exception handler while serving: an accept out of descriptors (asyncio
        retries it a second later by itself) is counted, and logged once in a while without a
        traceback; anything else goes to ``previous`` (or the loop's default)."""

        def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
            exc = context.get("exception")
            if isinstance(exc, OSError) and exc.errno in CAPACITY:
                self.accept_paused(exc)
                return
            if previous is not None:
                previous(loop, context)
            else:
                loop.default_exception_handler(context)

        return handle

    def accept_paused(self, exc: OSError) -> None:
        """Accepting ran out of descriptors or memory (and waits a second): counted, and
        logged once in a while without a traceback."""
        self.state.metrics.refused["accept"] += 1
        now = time.monotonic()
        if now - self._capacity_logged >= CAPACITY_LOG_EVERY:
            self._capacity_logged = now
            log.warning("accepting is paused (%s); it is tried again every second", exc)

    def take(self) -> _Upstream | None:
        now = _now()
        pool = self.pool
        while pool:
            up = pool.pop()  # the most recently used: the least likely to be closed
            if not up.lost and now - up.idle_since < self.state.config.pool_idle:
                return up
            self.drop(up)
        return None

    def give(self, up: _Upstream, conn: ClientConnection) -> None:
        if not self.state.config.pool_size:  # no pool: every request has its own connection
            self.drop(up)
            return
        if len(self.pool) >= self.state.config.pool_size:
            self.drop(self.pool.popleft())
        up.conn = conn
        up.idle_since = _now()
        self.pool.append(up)

    def drop(self, up: _Upstream) -> None:
        if up in self.pool:
            self.pool.remove(up)
        up.abort()

    def done(self, done: Done) -> None:
        record(self.state, done)
        log.info(
            "%s %s dialect=%s outcome=%s upstream_failure=%s events=%d lost=%d id=%s %.3fs",
            done.method, done.target, done.dialect, done.outcome, done.upstream_failure or "-",
            done.events, done.lost, done.request_id or "-", done.seconds,
        )  # fmt: skip

    async def sweep(self) -> None:
        """Every deadline, at most `SWEEP` late; and the pool's idle connections."""
        while True:
            await asyncio.sleep(SWEEP)
            now = _now()
            for client in list(self.clients):
                session = client.session
                if client.full:  # (what it took moves its deadline, and its hold)
                    client.told()
                up = client.up
                if up is not None and up.full:  # (what the upstream took, its deadline)
                    up.told()
                try:
                    if now >= session.deadline:
                        client.write(session.tick(now))
                        client.act()
                except Exception as exc:  # that connection ends; the sweep goes on
                    client.fail(exc)
            while self.pool and now - self.pool[0].idle_since >= self.state.config.pool_idle:
                self.drop(self.pool[0])

    def shutdown(self) -> None:
        now = _now()
        for client in list(self.clients):
            try:
                client.write(client.session.shutdown(now))
                client.act()
            except Exception as exc:
                client.fail(exc)
        while self.pool:
            self.drop(self.pool[0])

    def abort_all(self) -> None:
        """The server stops: every connection it holds is closed now."""
        for client in list(self.clients):
            if client._connecting is not None:
                client._connecting.cancel()
            if client.up is not None:
                client.up.abort()
            client._abort()
        while self.pool:
            self.drop(self.pool[0])

    def protocol(self) -> asyncio.Protocol:
        state = self.state
        if state.connections >= state.config.max_connections:
            state.metrics.refused["connections"] += 1
            return _Refused()
        return _Client(self)


_monotonic: Final = time.monotonic


def _unsent(transport: asyncio.Transport) -> int:
    """Bytes the peer of ``transport`` has still to take: ours, and the kernel's (`queued`)."""
    return transport.get_write_buffer_size() + queued(transport.get_extra_info("socket"))


def _reset(transport: asyncio.Transport) -> None:
    """Close ``transport`` now, with a reset if the kernel still holds bytes for its peer
    (`reset_unsent`)."""
    reset_unsent(transport.get_extra_info("socket"))
    transport.abort()


def _unread(transport: asyncio.BaseTransport) -> bytes:
    """What the upstream sent before it reset its connection (`unread`), on a plain one only:
    a TLS transport has let go of its socket by then, and what the kernel holds of one is
    records no one can read without its session (attack 71 F1: ``unread(None)`` raised, and
    the client got no answer at all)."""
    sock = transport.get_extra_info("socket")
    if sock is None or transport.get_extra_info("sslcontext") is not None:
        return b""
    return unread(sock)


def _now() -> float:
    return time.monotonic()
