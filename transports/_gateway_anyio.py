"""The gateway on anyio (trio, or asyncio through anyio): `GatewaySession` decides, this moves
bytes.

One task group per client connection: a reader of the client, a writer to it (so writes keep
their order whatever task produced them), and, while a request is upstream, a reader and a
writer of the upstream. Every call into the session is synchronous and the loop runs one
thread, so the session needs no lock. Deadlines are read by one sweep per server. A client
whose writes do not finish is reported to the session as paused (its ``send_timeout`` then
runs). A request whose answer was whole but whose upstream body has not ended when its client
goes keeps its upstream task until the session releases it (`GatewaySession.draining`: to the
pool, or closed at its deadline). Whatever happens in one connection's tasks ends that
connection only (a bug met by the sweep too: `_Client.fail`): the listener's accept loop backs
off and goes on when descriptors run out (as trio's ``serve_listeners``).
"""

from __future__ import annotations

import contextlib
import logging
import socket
import ssl
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Final

import anyio
import anyio.abc
import anyio.streams.tls

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
from ._asyncio_socket import CAPACITY, RETRY, queued, reset_unsent
from ._gateway_asyncio import BUSY  # (at import: a refusal comes when descriptors are short)

__all__: list[str] = []

log: Final = logging.getLogger("svir.gateway")
READ: Final = 64 * 1024
SWEEP: Final = 0.25
LINGER: Final = 2.0  # as the asyncio server's
LINGER_BYTES: Final = 1024 * 1024
HIGH_WATER: Final = 256 * 1024
"""Bytes waiting for a client's writer past which the session hears that the client is full
(asyncio's transports say so from their own buffer: ``pause_writing``); without it, a client
that never reads let the upstream's flood pile up here for the whole ``send_timeout``. The
other way too: past it in an upstream's outbox, the client is not read until it drains (a body
passed through to an upstream that does not read it is not held)."""
STUCK: Final = 1.0
"""Seconds a write to a client may take before the session hears that the client is full."""
SLICE: Final = 256 * 1024
"""Bytes a write sends at a time once it is longer: what the client read shows as it reads."""


class _Outbox:
    """Bytes to write to one stream, in order, by one task; with ``raw`` (a plain socket's),
    what the socket takes at once is written at once, while nothing waits before it."""

    def __init__(self, raw: socket.socket | None = None) -> None:
        self.items: list[bytes] = []
        self.size = 0  # bytes in items
        self.held = 0  # bytes put and not yet given to the stream's sends
        self.wake = anyio.Event()
        self.since: float | None = None  # a write under way since
        self.handed = 0  # bytes given to the stream's sends so far
        self.sending = 0  # bytes of the send under way (the kernel may have some of them)
        self.raw = raw

    def put(self, data: bytes) -> None:
        if data and self.raw is not None and not self.items and self.since is None:
            # An upstream's request, written now (as asyncio's transports write): the task's
            # send would be done only when it next runs, and a connection whose send is under
            # way is not pooled (attack round 33: trio pooled one connection in three)
            with contextlib.suppress(OSError):  # (BlockingIOError too) the task's send says
                data = data[self.raw.send(data) :]
        if data:
            self.items.append(data)
            self.size += len(data)
            self.held += len(data)
            self.wake.set()

    def unsent(self, raw: socket.socket | None) -> int:
        """Bytes the peer has still to take: waiting, and what the kernel holds on ``raw``, its
        socket (the send under way's counted once: review 45)."""
        return self.held - self.sending + queued(raw)

    def left(self) -> bool:
        """Whether bytes are still to send: waiting, or in a send under way."""
        return bool(self.items) or self.since is not None

    async def run(self, stream: anyio.abc.ByteStream, on_idle: Callable[[], None]) -> None:
        while True:
            await self.wake.wait()
            self.wake = anyio.Event()
            while self.items:
                data = b"".join(self.items)
                self.items.clear()
                self.size = 0
                self.since = time.monotonic()
                for at in range(0, len(data), SLICE):  # each a sign the client reads (`_flush`)
                    piece = data[at : at + SLICE]  # (the whole, not a copy, when it is short)
                    self.sending = len(piece)
                    await stream.send(piece)
                    self.sending = 0
                    self.handed += len(piece)
                    self.held -= len(piece)
                self.since = None
            on_idle()


class _Client:
    def __init__(self, server: Server, stream: anyio.abc.SocketStream) -> None:
        self.server = server
        self.stream = stream
        self.session = GatewaySession(server.state, time.monotonic())
        self.out = _Outbox()
        self.scope = anyio.CancelScope()
        self.read_scope = anyio.CancelScope()
        self.tg: anyio.abc.TaskGroup | None = None
        self.reading = anyio.Event()
        self.reading.set()
        self.paused: set[str] = set()
        self.up: _Up | None = None
        self.reported = False  # the session heard that the client is full
        self.ended: Done | None = None  # the last request's, said once its answer is out

    async def run(self) -> None:
        with self.scope:
            async with anyio.create_task_group() as tg:
                self.tg = tg
                tg.start_soon(self.out.run, self.stream, self._drained)
                with self.read_scope:  # cancelled when the session closes (`act`)
                    while not self.session.closed:
                        await self.reading.wait()
                        try:
                            data = await self.stream.receive(READ)
                        except (anyio.EndOfStream, anyio.BrokenResourceError):
                            data = b""
                        self.out.put(self.session.client_data(data, time.monotonic()))
                        self.act()
                        if not data:
                            break
                await self._close_soon()
                up = self.up
                if up is not None and self.session.draining:  # it reads its body's end, then
                    # goes to the pool (the sweep keeps the deadline); the client's connection
                    await _let_go(self.stream)  # is over: it goes now
                    self.session.client_gone(time.monotonic())
                    await up.ended.wait()
                tg.cancel_scope.cancel()

    async def _flush(self) -> None:
        """What the session wrote last goes out before the connection closes, while the
        client takes `MIN_TAKEN` of it every ``send_timeout`` (attack 41 F7: a steady reader of
        a long answer's last events was cut at one fixed deadline); the connection's deadline
        (`Close`) moves with it."""
        timeout = self.server.state.config.send_timeout
        out = self.out
        raw = self.stream.extra(anyio.abc.SocketAttribute.raw_socket, None)
        mark, taken = time.monotonic(), 0
        kernel, handed = queued(raw), out.handed
        while out.left() or queued(raw):  # (the kernel's too: `_let_go`)
            now = time.monotonic()
            queue = queued(raw)  # what left the kernel for the client: given less kept
            taken += out.handed - handed - (queue - kernel)
            kernel, handed = queue, out.handed
            if now - mark > timeout:
                if taken < MIN_TAKEN:
                    return
                mark, taken = now, 0
            left = mark + timeout - now + LINGER
            self.scope.deadline = max(self.scope.deadline, anyio.current_time() + left)
            await anyio.sleep(0.01 if out.left() else 0.1)  # (the kernel's: review 46 L3)

    def _drained(self) -> None:
        if self.reported:
            self.reported = False
            self.session.client_resumed(time.monotonic())
            self.act()

    def stuck(self, now: float) -> None:
        """The sweep saw a write to the client take long: the session's send deadline runs;
        and at each sweep after, while it waits, the session hears what waits now (what the
        client took moves its deadline, and its hold)."""
        out = self.out
        since = out.since
        if self.reported:
            raw = self.stream.extra(anyio.abc.SocketAttribute.raw_socket, None)
            self.session.client_paused(now, out.held, out.unsent(raw))
            self.act()
        elif since is not None and now - since > STUCK:
            self.reported = True
            self.session.client_paused(since, out.held)
            self.act()

    def fail(self, exc: BaseException) -> None:
        """A bug met outside this connection's tasks (the sweep called its session, which
        raised): this connection ends, with a log line; the server and every other stream go
        on (its task's ``finally`` gives its slot back)."""
        log.error("client connection failed: %r", exc, exc_info=exc)
        self.session.actions.clear()
        self.scope.cancel()

    def pause(self, why: str) -> None:
        self.paused.add(why)
        self.reading = anyio.Event()

    def resume(self, why: str) -> None:
        self.paused.discard(why)
        if not self.paused:
            self.reading.set()

    def act(self) -> None:
        if self.out.size > HIGH_WATER and not self.reported:  # the client reads slower than
            self.reported = True  # the upstream sends: the session pauses the upstream
            self.session.client_paused(time.monotonic(), self.out.held)
        actions = self.session.actions
        while actions:
            action = actions.pop(0)
            kind = type(action)
            if kind is ToUpstream:
                up = self.up
                if up is not None:
                    up.out.put(action.data)  # type: ignore[union-attr]
                    if up.out.size > HIGH_WATER:  # the upstream reads the body slower than
                        self.pause("upstream")  # the client sends it: its outbox drains first
                        up.told(time.monotonic())
            elif kind is Connect:
                assert self.tg is not None
                self.tg.start_soon(self._connect, action.fresh)  # type: ignore[union-attr]
            elif kind is Release:
                self._release(action.connection)  # type: ignore[union-attr]
            elif kind is PauseUpstream:
                if self.up is not None:
                    self.up.reading = anyio.Event()
            elif kind is ResumeUpstream:
                if self.up is not None:
                    self.up.reading.set()
            elif kind is PauseClient:
                self.pause("session")
            elif kind is ResumeClient:
                self.resume("session")
            elif kind is Work:
                assert self.tg is not None
                self.tg.start_soon(self._work, action.run)  # type: ignore[union-attr]
            elif kind is More:  # after the other connections' turn
                assert self.tg is not None
                self.tg.start_soon(self._more)
            elif kind is Abort:  # (the task's end closes the stream at once)
                self.scope.cancel()
            elif kind is Close:
                self.reading.set()  # the reader sees the session closed and ends
                limit = self.server.state.config.send_timeout + LINGER
                self.scope.deadline = min(self.scope.deadline, anyio.current_time() + limit)
                if self.up is not None and not self.session.draining:
                    self._release(None)
                self.read_scope.cancel()  # the reader ends, and the connection is closed
            elif kind is Done:
                if self.session.closed and self.out.left():
                    self.ended = action  # type: ignore[assignment]  # (`Server._client`)
                else:
                    self.server.done(action)  # type: ignore[arg-type]

    async def _close_soon(self) -> None:
        """Send what is left, end our side, and read (and drop) what the client still sends
        for a while: closing with unread bytes resets the connection, and a reset can destroy
        an answer the client has not read yet (nginx's ``lingering_close``)."""
        await self._flush()
        with anyio.move_on_after(LINGER), contextlib.suppress(Exception):
            await self.stream.send_eof()
            dropped = 0
            while dropped < LINGER_BYTES:
                dropped += len(await self.stream.receive(READ))

    async def _more(self) -> None:
        self.out.put(self.session.client_more(time.monotonic()))
        self.act()

    async def _work(self, run: Callable[[], object]) -> None:
        try:  # a thread is not cancelled: a cancel comes once ``run`` is over
            result = await anyio.to_thread.run_sync(run)
        except BaseException:
            self.session.work_dropped()
            raise
        self.out.put(self.session.worked(result, time.monotonic()))
        self.act()

    async def _connect(self, fresh: bool) -> None:
        server = self.server
        pooled = None if fresh else server.take()
        if pooled is not None:
            stream, conn = pooled
            up = _Up(self, stream)
            self.up = up
            assert self.tg is not None
            self.tg.start_soon(up.run)
            self.out.put(self.session.upstream_connected(time.monotonic(), conn))
            self.act()
            return
        try:
            stream = await server.connect()
        except (OSError, anyio.BrokenResourceError, ssl.SSLError) as exc:
            reason = str(exc) or type(exc).__name__
            self.out.put(self.session.upstream_failed(reason, _mono(), starved=starved(exc)))
            self.act()
            return
        if self.session.closed:
            await anyio.aclose_forcefully(stream)
            return
        up = _Up(self, stream)
        self.up = up
        assert self.tg is not None
        self.tg.start_soon(up.run)
        self.out.put(self.session.upstream_connected(time.monotonic()))
        self.act()

    def _release(self, conn: ClientConnection | None) -> None:
        up, self.up = self.up, None
        if up is None:
            return
        # pooled only once all the request's bytes are written: the cancel below would cut a
        # write under way, and the next request would be read as the rest of this one's body
        # (an upstream may answer before it read the body; attack round 32, F2)
        if conn is not None and not up.broken and not up.out.items and up.out.since is None:
            up.pooled = True  # its task ends without closing it
            self.server.give(up.stream, conn)
        up.scope.cancel()  # its task closes it, unless pooled
        self.resume("upstream")


class _Up:
    """One upstream connection in use by a client's request."""

    def __init__(self, client: _Client, stream: anyio.abc.ByteStream) -> None:
        self.client = client
        self.stream = stream
        self.out = _Outbox(_plain_socket(stream))
        self.scope = anyio.CancelScope()
        self.reading = anyio.Event()
        self.reading.set()
        self.broken = False
        self.pooled = False
        self.ended = anyio.Event()  # its task is over

    def told(self, now: float) -> None:
        """The session hears what of the client's body waits for the upstream (its deadline is
        the upstream's, `GatewaySession.upstream_paused`): when it fills, and at each sweep."""
        self.client.session.upstream_paused(now, self.out.unsent(self.out.raw))

    def _drained(self) -> None:
        """What the client sent went out: its reader goes on (`_Client.act` paused it)."""
        if self.client.up is self:
            self.client.session.upstream_resumed(time.monotonic())
            self.client.resume("upstream")

    async def run(self) -> None:
        try:
            await self._run()
        finally:
            self.ended.set()
            if not self.pooled:
                with anyio.CancelScope(shield=True):
                    await _let_go(self.stream)

    async def _run(self) -> None:
        client = self.client
        session = client.session
        with self.scope:
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self.out.run, self.stream, self._drained)
                    while True:
                        await self.reading.wait()
                        try:
                            data = await self.stream.receive(READ)
                        except anyio.EndOfStream:
                            data = b""
                        if client.up is not self:
                            return
                        client.out.put(session.upstream_data(data, time.monotonic()))
                        client.act()
                        if not data:
                            return
            except Exception as exc:  # alone, or in the task group's ExceptionGroup
                if not _expected(exc):
                    raise
                self.broken = True
                if client.up is self:
                    leaf = _leaf(exc)
                    reason = str(leaf) or str(leaf.__cause__ or "") or type(leaf).__name__
                    client.out.put(session.upstream_failed(reason, time.monotonic()))
                    client.act()


async def _let_go(stream: anyio.abc.ByteStream) -> None:
    """Close a connection, a client's or an upstream's: with a reset if the kernel still holds
    bytes for its peer, which it did not take in time (`reset_unsent`: attack 46 G1, and 47 H1:
    a request's body an upstream did not read)."""
    reset_unsent(stream.extra(anyio.abc.SocketAttribute.raw_socket, None))
    await anyio.aclose_forcefully(stream)


def _plain_socket(stream: anyio.abc.ByteStream) -> socket.socket | None:
    """The socket under ``stream`` if the bytes on it are the stream's own (not TLS)."""
    if isinstance(stream, anyio.streams.tls.TLSStream):
        return None
    sock: socket.socket | None = stream.extra(anyio.abc.SocketAttribute.raw_socket, None)
    return sock


def _quiet(stream: anyio.abc.ByteStream) -> bool:
    """Whether an idle pooled connection has nothing to read: one the upstream closed, or on
    which it sent bytes out of turn, is not taken (asyncio's server hears both as they come).
    A TLS stream cannot be told (a session ticket is readable too): taken."""
    sock = _plain_socket(stream)
    if sock is None:
        return True
    try:
        sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except BlockingIOError:
        return True
    except OSError:
        return False
    return False  # a byte, or the end


class Server:
    """What the client connections of one gateway share: the state, the pool, the sweep."""

    def __init__(self, state: GatewayState, ssl_context: ssl.SSLContext | None) -> None:
        self.state = state
        self.ssl_context = ssl_context
        self.clients: set[_Client] = set()
        self.pool: deque[tuple[anyio.abc.ByteStream, ClientConnection, float]] = deque()
        self.listener: anyio.abc.Listener[Any] | None = None
        self.tg: anyio.abc.TaskGroup | None = None
        self.closing: set[anyio.abc.ByteStream] = set()

    async def serve(
        self, host: str, port: int, started: Callable[[int], None], stopped: anyio.Event
    ) -> None:
        listener = await anyio.create_tcp_listener(local_host=host, local_port=port)
        self.listener = listener
        started(listener.extra(anyio.abc.SocketAttribute.local_port))
        try:
            async with listener, anyio.create_task_group() as tg:
                self.tg = tg
                for one in listener.listeners:
                    tg.start_soon(self._accept, one, tg)
                tg.start_soon(self._sweep)
                await stopped.wait()
                tg.cancel_scope.cancel()
        finally:  # what is idle in the pool, or was being closed, is closed now
            with anyio.CancelScope(shield=True):
                for stream in [*self.closing, *(s for s, _, _ in self.pool)]:
                    await _let_go(stream)
            self.pool.clear()

    async def _accept(self, listener: Any, tg: anyio.abc.TaskGroup) -> None:
        backoff = 0.01
        while not self.state.stopping:
            try:
                stream = await listener.accept()
            except anyio.ClosedResourceError:
                return
            except (OSError, anyio.BrokenResourceError) as exc:
                # out of descriptors (anyio on trio says so as a BrokenResourceError from the
                # OSError, which ended this loop: the process lived on with no listener):
                # wait, as asyncio does (`CAPACITY`), then accept again
                cause = exc if isinstance(exc, OSError) else exc.__cause__
                short = getattr(cause, "errno", None) in CAPACITY
                if not short:
                    log.warning("accept failed: %r", cause or exc)
                self.state.metrics.refused["accept"] += 1
                await anyio.sleep(RETRY if short else backoff)
                backoff = min(backoff * 2, 1.0)
                continue
            backoff = 0.01
            if self.state.connections >= self.state.config.max_connections:
                self.state.metrics.refused["connections"] += 1
                tg.start_soon(self._refuse, stream)
                continue
            tg.start_soon(self._client, stream)

    async def _refuse(self, stream: anyio.abc.SocketStream) -> None:
        with anyio.move_on_after(1):
            with contextlib.suppress(anyio.BrokenResourceError, OSError):
                await stream.send(BUSY)
        await anyio.aclose_forcefully(stream)

    async def _client(self, stream: anyio.abc.SocketStream) -> None:
        client = _Client(self, stream)
        self.clients.add(client)
        try:
            await client.run()
        except Exception as exc:
            if not _expected(exc):
                log.error("client connection failed: %r", exc, exc_info=exc)
        finally:
            self.clients.discard(client)
            try:  # a bug here must not leave the server's task group
                if not client.session.closed:
                    client.session.client_data(b"", time.monotonic())
                    client.act()
                if client.session.draining:  # its deadline came first (the client's scope)
                    client.session.upstream_failed("the client connection ended", time.monotonic())
                    client.act()
            except Exception as exc:
                log.error("client connection failed: %r", exc, exc_info=exc)
            finally:  # what it held went with it (after a failure too)
                client.session.client_gone(time.monotonic())
            if client.up is not None:
                client._release(None)
            ended, client.ended = client.ended, None
            if ended is not None:  # its answer went out, or the client did not take it
                raw = stream.extra(anyio.abc.SocketAttribute.raw_socket, None)
                self.done(unsent(ended) if client.out.left() or queued(raw) else ended)
            await _let_go(stream)

    async def connect(self) -> anyio.abc.ByteStream:
        ep = self.state.config.upstream
        try:
            with anyio.fail_after(self.state.config.connect_timeout):
                if ep.scheme == "https":
                    return await anyio.connect_tcp(
                        ep.host, ep.port, tls=True,
                        ssl_context=self.ssl_context or ssl.create_default_context(),
                        tls_hostname=ep.host, tls_standard_compatible=False,
                    )  # fmt: skip
                return await anyio.connect_tcp(ep.host, ep.port)
        except OSError as exc:  # anyio's "All connection attempts failed": say the one that did,
            if isinstance(exc.__cause__, OSError):  # as asyncio does ("Too many open files")
                raise exc.__cause__ from None
            raise

    def take(self) -> tuple[anyio.abc.ByteStream, ClientConnection] | None:
        now = time.monotonic()
        while self.pool:
            stream, conn, since = self.pool.pop()
            if now - since < self.state.config.pool_idle and _quiet(stream):
                return stream, conn
            self.discard(stream)
        return None

    def give(self, stream: anyio.abc.ByteStream, conn: ClientConnection) -> None:
        if not self.state.config.pool_size:  # no pool: every request has its own connection
            self.discard(stream)
            return
        if len(self.pool) >= self.state.config.pool_size:
            self.discard(self.pool.popleft()[0])
        self.pool.append((stream, conn, time.monotonic()))

    def discard(self, stream: anyio.abc.ByteStream) -> None:
        """Close an idle upstream connection (in the background; at the latest when the server
        stops)."""
        self.closing.add(stream)
        if self.tg is not None:
            self.tg.start_soon(self._aclose, stream)

    async def _aclose(self, stream: anyio.abc.ByteStream) -> None:
        with anyio.CancelScope(shield=True):
            await _let_go(stream)
        self.closing.discard(stream)

    def done(self, done: Done) -> None:
        record(self.state, done)
        log.info(
            "%s %s dialect=%s outcome=%s upstream_failure=%s events=%d lost=%d id=%s %.3fs",
            done.method, done.target, done.dialect, done.outcome, done.upstream_failure or "-",
            done.events, done.lost, done.request_id or "-", done.seconds,
        )  # fmt: skip

    async def _sweep(self) -> None:
        while True:
            await anyio.sleep(SWEEP)
            now = time.monotonic()
            for client in list(self.clients):
                session = client.session
                try:
                    client.stuck(now)
                    if "upstream" in client.paused and client.up is not None:
                        client.up.told(now)  # (what the upstream took, its deadline)
                    if now >= session.deadline:
                        client.out.put(session.tick(now))
                        client.act()
                except Exception as exc:  # that connection ends; the sweep goes on
                    client.fail(exc)
            while self.pool and now - self.pool[0][2] >= self.state.config.pool_idle:
                self.discard(self.pool.popleft()[0])

    def shutdown(self) -> None:
        now = time.monotonic()
        for client in list(self.clients):
            try:
                client.out.put(client.session.shutdown(now))
                client.act()
            except Exception as exc:
                client.fail(exc)
        while self.pool:
            self.discard(self.pool.popleft()[0])


def _expected(exc: BaseException) -> bool:
    """What a peer can cause: a reset, a closed socket, a TLS failure (inside a group or
    alone)."""
    group = getattr(exc, "exceptions", None)
    if group is not None:
        return all(_expected(e) for e in group)
    return isinstance(
        exc,
        (
            OSError, ssl.SSLError, anyio.BrokenResourceError, anyio.ClosedResourceError,
            anyio.EndOfStream,
        ),
    )  # fmt: skip


def _leaf(exc: BaseException) -> BaseException:
    """The first exception inside a group (the one that says what happened)."""
    while (group := getattr(exc, "exceptions", None)) is not None and group:
        exc = group[0]
    return exc


def _mono() -> float:
    return time.monotonic()
