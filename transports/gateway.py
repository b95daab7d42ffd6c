"""The gateway server: `GatewayConnection` on anyio (asyncio or trio), for ``svir gateway``.

It moves bytes between clients and the upstream and does the rest by the gateway's events: one
task per client connection; for each request, one upstream connection (a `ClientConnection`),
the client's body relayed piece by piece as it arrives, each upstream read relayed to the client
at once. A second task watches the client while its answer streams: a client that goes away
cancels the upstream request at once. It also keeps the counters of ``/metrics`` (Prometheus'
text format) and answers ``/healthz``.

Stateless: no request depends on another, so several instances behind any HTTP load balancer
serve as one. It logs one line per request (method, path, dialect, outcome, time, events) and
never a prompt or an answer (draft 8.1).
"""

from __future__ import annotations

import contextlib
import logging
import math
import signal
import ssl
import time
from collections import Counter
from typing import Any, Final

import anyio
import anyio.abc

from .._pull import NEED_DATA
from ..connection import ClientConnection
from ..errors import FailureKind, SvirProtocolError
from ..exchange import PassThrough
from ..gateway import (
    DEFAULT_MAX_BODY,
    ClientClosed,
    Forward,
    ForwardBody,
    ForwardEnd,
    GatewayConnection,
    GatewayEvent,
    LocalRequest,
    Reply,
)
from ..openai.endpoint import Endpoint
from ._shared import READ_SIZE, Timeouts

__all__ = ["GatewayServer", "Metrics"]

log: Final = logging.getLogger("svir.gateway")
CLIENT_IDLE: Final = 60.0  # seconds a kept-alive client connection may stay silent
UPSTREAM_READ: Final = 16 * 1024
"""Bytes read from an upstream at a time: what one read brings is held in a few forms at once
(framed, decoded, encoded), per stream; 16 KiB keeps 200 streams well under 100 MB while a read
still carries dozens of events."""


class Metrics:
    """The gateway's counters, in Prometheus' text exposition format (version 0.0.4)."""

    def __init__(self) -> None:
        self.requests: Counter[tuple[str, str]] = Counter()
        self.upstream_failures: Counter[str] = Counter()
        self.events_forwarded = 0
        self.active = 0

    def observe(self, gw: GatewayConnection) -> None:
        self.requests[(gw.dialect or "none", gw.outcome or "cancelled")] += 1
        if gw.upstream_failure is not None:
            self.upstream_failures[gw.upstream_failure.value] += 1
        self.events_forwarded += gw.events_forwarded

    def render(self) -> bytes:
        lines = [
            "# HELP svir_gateway_requests_total Requests, by the client's dialect and outcome.",
            "# TYPE svir_gateway_requests_total counter",
            *(
                f'svir_gateway_requests_total{{dialect="{d}",outcome="{o}"}} {n}'
                for (d, o), n in sorted(self.requests.items())
            ),
            "# HELP svir_gateway_active_streams Streams being relayed now.",
            "# TYPE svir_gateway_active_streams gauge",
            f"svir_gateway_active_streams {self.active}",
            "# HELP svir_gateway_upstream_failures_total Upstream failures, by kind.",
            "# TYPE svir_gateway_upstream_failures_total counter",
            *(
                f'svir_gateway_upstream_failures_total{{kind="{k}"}} {n}'
                for k, n in sorted(self.upstream_failures.items())
            ),
            "# HELP svir_gateway_events_forwarded_total Upstream events relayed to clients.",
            "# TYPE svir_gateway_events_forwarded_total counter",
            f"svir_gateway_events_forwarded_total {self.events_forwarded}",
        ]
        return ("\n".join(lines) + "\n").encode()


class GatewayServer:
    """Serve `GatewayConnection` in front of ``upstream``.

    Args:
        upstream: the OpenAI-compatible server, with the gateway's own key for it.
        token: the bearer token clients must send; ``None``: none.
        max_streams: streams relayed at once; over it, 503 with ``Retry-After``.
        timeouts: for the upstream (``first_byte``, ``read``: a stalled upstream).
        grace: seconds open streams may finish in after SIGTERM, before they are ended.
    """

    def __init__(
        self,
        upstream: Endpoint,
        *,
        token: str | None = None,
        max_streams: int = 256,
        max_body: int = DEFAULT_MAX_BODY,
        timeouts: Timeouts = Timeouts(),  # noqa: B008 - frozen, shared on purpose
        grace: float = 10.0,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.upstream = upstream
        self.token = token
        self.max_streams = max_streams
        self.max_body = max_body
        self.timeouts = timeouts
        self.grace = grace
        self.metrics = Metrics()
        self._ssl = ssl_context
        self._streams: dict[GatewayConnection, anyio.CancelScope] = {}
        self._stopping = False
        self.port = 0

    # -- running ------------------------------------------------------------------------------

    async def serve(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        task_status: anyio.abc.TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Accept clients until cancelled or `stop`; ``task_status`` gets the port."""
        listener = await anyio.create_tcp_listener(local_host=host, local_port=port)
        self.port = listener.extra(anyio.abc.SocketAttribute.local_port)
        self._listener = listener
        task_status.started(self.port)
        # our own accept loops (one per address): `stop` closes the listener, and the clients'
        # tasks, which belong to this task group and not to the listener's, go on
        async with listener, anyio.create_task_group() as clients:
            for one in listener.listeners:
                clients.start_soon(self._accept, one, clients)

    async def _accept(self, listener: Any, clients: anyio.abc.TaskGroup) -> None:
        while not self._stopping:
            try:
                client = await listener.accept()
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return
            clients.start_soon(self._client, client)

    async def run(self, host: str, port: int) -> None:
        """`serve` until SIGTERM or SIGINT, then `stop` within ``grace``."""
        async with anyio.create_task_group() as tg:
            port = await tg.start(self.serve, host, port)
            log.warning(
                "svir gateway on http://%s:%d/v1 in front of %s",
                host,
                port,
                self.upstream.chat_completions_url,
            )
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    await self.stop()
                    tg.cancel_scope.cancel()
                    return

    async def stop(self) -> None:
        """Stop accepting, let open streams finish within ``grace``, then end the rest with a
        proper end (an error in the client's dialect, then its end marker)."""
        self._stopping = True
        await self._listener.aclose()
        with anyio.move_on_after(self.grace):
            while self._streams:
                await anyio.sleep(0.05)
        for scope in list(self._streams.values()):
            scope.cancel()

    # -- one client connection ------------------------------------------------------------------

    async def _client(self, client: anyio.abc.SocketStream) -> None:
        gw = GatewayConnection(token=self.token, max_body=self.max_body)
        try:
            while True:
                event = await self._next(gw, client)
                start = time.monotonic()
                if isinstance(event, ClientClosed):
                    return
                if isinstance(event, Reply):
                    await client.send(event.data)
                    self._done(gw, start)
                    if event.close or not gw.reusable:
                        return
                elif isinstance(event, LocalRequest):
                    await client.send(self._local(gw, event))
                elif isinstance(event, Forward):
                    if self.metrics.active >= self.max_streams or self._stopping:
                        await client.send(gw.busy(retry_after=1))
                        self._done(gw, start)
                        return
                    await self._forward(gw, event, client)
                    self._done(gw, start)
                    if not gw.reusable:
                        return
                else:  # a body piece with no forward under way cannot happen: drop the client
                    return
                gw.start_next_cycle()
        except (
            anyio.EndOfStream,
            anyio.BrokenResourceError,
            anyio.ClosedResourceError,
            TimeoutError,
        ):
            pass
        except SvirProtocolError as exc:
            log.info("client connection dropped: %s", exc)
        finally:
            await anyio.aclose_forcefully(client)

    async def _next(self, gw: GatewayConnection, client: anyio.abc.SocketStream) -> GatewayEvent:
        while True:
            event = gw.next_event()
            if event is not NEED_DATA:
                return event
            with anyio.fail_after(CLIENT_IDLE):
                try:
                    data = await client.receive(READ_SIZE)
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    data = b""
            gw.receive_data(data)

    def _local(self, gw: GatewayConnection, event: LocalRequest) -> bytes:
        if event.name == "healthz":
            return gw.reply_local(200, "application/json", b'{"status":"ok"}')
        return gw.reply_local(
            200, "text/plain; version=0.0.4; charset=utf-8", self.metrics.render()
        )

    def _done(self, gw: GatewayConnection, start: float) -> None:
        self.metrics.observe(gw)
        log.info(
            "%s %s dialect=%s outcome=%s upstream_failure=%s events=%d %.3fs",
            gw.method,
            gw.target,
            gw.dialect,
            gw.outcome,
            gw.upstream_failure.value if gw.upstream_failure else "-",
            gw.events_forwarded,
            time.monotonic() - start,
        )

    # -- one request forwarded ------------------------------------------------------------------

    async def _forward(
        self, gw: GatewayConnection, forward: Forward, client: anyio.abc.SocketStream
    ) -> None:
        self.metrics.active += 1
        scope = anyio.CancelScope()
        self._streams[gw] = scope
        try:
            with scope:
                await self._relay(gw, forward, client, scope)
            if scope.cancelled_caught and gw.outcome is None:
                with anyio.CancelScope(shield=True):
                    if self._stopping:
                        data = gw.upstream_broken(
                            "the gateway is shutting down", kind=FailureKind.OVERLOADED, now=_now()
                        )
                        await _send_quietly(client, data)
                    else:
                        gw.outcome = "cancelled"
        finally:
            self.metrics.active -= 1
            del self._streams[gw]

    async def _relay(
        self,
        gw: GatewayConnection,
        forward: Forward,
        client: anyio.abc.SocketStream,
        scope: anyio.CancelScope,
    ) -> None:
        t = self.timeouts
        try:
            with anyio.fail_after(t.connect):
                upstream = await self._connect()
        except (OSError, TimeoutError) as exc:
            reason = f"the gateway cannot reach its upstream: {exc or 'connect timeout'}"
            await client.send(gw.upstream_broken(reason, kind=FailureKind.TRANSIENT, now=_now()))
            return
        async with upstream, anyio.create_task_group() as tg:
            conn = ClientConnection(self.upstream)
            for piece in conn.send(forward.request):
                await upstream.send(piece)
            if isinstance(forward.request, PassThrough) and not await self._pump(
                gw, client, conn, upstream
            ):
                return  # answered by the gateway, or the client left: the upstream is closed
            tg.start_soon(self._watch, gw, client, scope)
            heard = False
            while True:
                wait = t.read if heard else t.first_byte
                try:
                    with anyio.fail_after(wait):
                        data = await upstream.receive(UPSTREAM_READ)
                except TimeoutError:
                    phase = "read" if heard else "first byte"
                    reason = f"the upstream stalled ({phase}: no byte for {wait:g} s)"
                    await client.send(
                        gw.upstream_broken(reason, kind=FailureKind.TIMEOUT, now=_now())
                    )
                    break
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    data = b""
                heard = True
                try:
                    events = conn.feed(data)
                except SvirProtocolError as exc:
                    reason = f"the upstream broke the protocol: {exc}"
                    await client.send(gw.upstream_broken(reason, now=_now()))
                    break
                out = gw.upstream(events, now=_now())
                if out:
                    await client.send(out)
                if conn.error is not None:
                    reason = f"the upstream broke the protocol: {conn.error}"
                    await client.send(gw.upstream_broken(reason, now=_now()))
                    break
                if gw.outcome is not None or not data:
                    break
            tg.cancel_scope.cancel()  # the watcher

    async def _pump(
        self,
        gw: GatewayConnection,
        client: anyio.abc.SocketStream,
        conn: ClientConnection,
        upstream: anyio.abc.ByteStream,
    ) -> bool:
        """Relay the client's body upstream as it arrives; ``False`` if the request ended
        otherwise (the gateway answered it, or the client went away)."""
        while True:
            event = await self._next(gw, client)
            if isinstance(event, ForwardBody):
                await upstream.send(conn.send_data(event.data))
            elif isinstance(event, ForwardEnd):
                end = conn.send_end()
                if end:
                    await upstream.send(end)
                return True
            else:
                if isinstance(event, Reply):
                    await client.send(event.data)
                return False

    async def _watch(
        self, gw: GatewayConnection, client: anyio.abc.SocketStream, scope: anyio.CancelScope
    ) -> None:
        """A client that goes away while its answer streams cancels the upstream request."""
        while True:
            try:
                data = await client.receive(READ_SIZE)
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                data = b""
            gw.receive_data(data)
            if not data:
                scope.cancel()
                return

    async def _connect(self) -> anyio.abc.ByteStream:
        ep = self.upstream
        if ep.scheme == "https":
            return await anyio.connect_tcp(
                ep.host,
                ep.port,
                tls=True,
                ssl_context=self._ssl or ssl.create_default_context(),
                tls_hostname=ep.host,
                tls_standard_compatible=False,
            )
        return await anyio.connect_tcp(ep.host, ep.port)


def _now() -> int:
    return math.floor(time.time())


async def _send_quietly(client: anyio.abc.SocketStream, data: bytes) -> None:
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await client.send(data)


def serve_forever(server: GatewayServer, host: str, port: int, backend: str) -> int:
    """Run ``server`` on ``backend`` until SIGTERM or SIGINT (``svir gateway``); 0 then."""
    anyio.run(server.run, host, port, backend=backend)
    return 0
