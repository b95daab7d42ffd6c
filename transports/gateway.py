"""The gateway server, for ``svir gateway``: `GatewaySession` (sans-IO, where every decision
is) on asyncio's protocols (`_gateway_asyncio`, the fast path: uvloop when it is installed) or
on anyio for trio (`_gateway_anyio`). Both move bytes only; the same contract and hostile
tests hold them to the same behaviour.

It also runs what a server has and a session does not: the listener, the pool of upstream
connections, the sweep of deadlines, the readiness probe of ``/readyz`` (the upstream's
``/v1/models``, every ``probe_interval`` seconds in the background, never per request), the
log line per request, SIGTERM's drain within ``grace``.

Stateless: no request depends on another, so several instances behind any HTTP load balancer
serve as one. It logs one line per request (method, path, dialect, outcome, time, events,
request id) and never a prompt or an answer (draft 8.1).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import ssl
import sys
import time
from collections.abc import Callable
from typing import Any, Final

from .._pull import NEED_DATA
from ..connection import ClientConnection
from ..dialects import dialect
from ..errors import SvirProtocolError
from ..events import RequestFailed
from ..exchange import ModelsListed, ModelsRequest
from ..gateway.config import GatewayConfig, GatewayState, Metrics
from ..openai.endpoint import Endpoint
from ._shared import Timeouts

__all__ = ["GatewayServer", "Metrics", "serve_forever"]

log: Final = logging.getLogger("svir.gateway")
PROBE_TIMEOUT: Final = 10.0


class GatewayServer:
    """Serve the gateway in front of ``upstream``.

    Args:
        upstream: the server to relay to (with the gateway's own key for it), or a whole
            `GatewayConfig`.
        token, max_streams, max_body: as in `GatewayConfig` (shortcuts).
        timeouts: the older way to say ``connect_timeout`` and ``progress_timeout`` (its
            ``connect``, and its ``read``, else its ``first_byte``).
        grace: seconds open streams may finish in after SIGTERM, before they are ended.
        ssl_context: for an https upstream.
        probe_interval: seconds between two probes of the upstream for ``/readyz``.
        probe_timeout: seconds a probe may take, whole (an upstream that drips its listing
            is not ready), and each of its connect and reads.
        options: any other `GatewayConfig` field.
    """

    def __init__(
        self,
        upstream: Endpoint | GatewayConfig,
        *,
        token: str | None = None,
        max_streams: int | None = None,
        max_body: int | None = None,
        timeouts: Timeouts | None = None,
        grace: float = 10.0,
        ssl_context: ssl.SSLContext | None = None,
        probe_interval: float = 5.0,
        probe_timeout: float = PROBE_TIMEOUT,
        **options: Any,
    ) -> None:
        fields: dict[str, Any] = dict(options)
        if token is not None:
            fields["token"] = token
        if max_streams is not None:
            fields["max_streams"] = max_streams
        if max_body is not None:
            fields["max_body"] = max_body
        if timeouts is not None:
            if timeouts.connect is not None:
                fields["connect_timeout"] = timeouts.connect
            wait = timeouts.read if timeouts.read is not None else timeouts.first_byte
            if wait is not None:
                fields["progress_timeout"] = wait
        if isinstance(upstream, GatewayConfig):
            config = upstream.__class__(**{**_fields(upstream), **fields})
        else:
            config = GatewayConfig(upstream=upstream, **fields)
        self.config: Final = config
        self.upstream: Final = config.upstream
        self.grace = grace
        self.probe_interval = probe_interval
        self.probe_timeout = probe_timeout
        self.state: Final = GatewayState(
            config, new_id=_new_id, wall=lambda now: int(now + _WALL_OFFSET)
        )
        self._ssl = ssl_context
        self._stop: Callable[[], None] | None = None
        self._probing = True  # until the server stops (`_probe_loop`)
        self._impl: Any = None
        self.port = 0

    @property
    def metrics(self) -> Metrics:
        return self.state.metrics

    # -- running ------------------------------------------------------------------------------

    async def serve(
        self, host: str = "127.0.0.1", port: int = 0, *, task_status: Any = None
    ) -> None:
        """Accept clients until cancelled or `stop`; ``task_status`` (anyio's) gets the port.

        On asyncio it runs on asyncio's protocols; on trio, on anyio.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            await self._serve_anyio(host, port, task_status)
        else:
            await self._serve_asyncio(host, port, task_status)

    def _started(self, port: int, task_status: Any) -> None:
        self.port = port
        if task_status is not None:
            task_status.started(port)

    async def _serve_asyncio(self, host: str, port: int, task_status: Any) -> None:
        from ._asyncio_socket import Listener
        from ._gateway_asyncio import Server

        loop = asyncio.get_running_loop()
        impl = Server(self.state, self._ssl)
        self._impl = impl
        previous = loop.get_exception_handler()
        loop.set_exception_handler(impl.exception_handler(previous))
        listener: Any
        if isinstance(loop, asyncio.selector_events.BaseSelectorEventLoop):
            listener = Listener.open(loop, impl.protocol, impl.accept_paused, host, port, 1024)
        else:  # uvloop: its own server is in C
            listener = await loop.create_server(impl.protocol, host, port, backlog=1024)
        stopped = asyncio.Event()
        self._stop = stopped.set
        self._close_listener = listener.close
        self._started(listener.sockets[0].getsockname()[1], task_status)
        sweep = loop.create_task(impl.sweep())
        probe = loop.create_task(self._probe_loop(asyncio.sleep))
        try:
            await stopped.wait()
        finally:
            listener.close()
            sweep.cancel()
            self._probing = False
            probe.cancel()
            impl.abort_all()
            await asyncio.sleep(0)  # the transports' own closing callbacks run
            loop.set_exception_handler(previous)

    async def _serve_anyio(self, host: str, port: int, task_status: Any) -> None:
        import anyio

        from ._gateway_anyio import Server

        impl = Server(self.state, self._ssl)
        self._impl = impl
        stopped = anyio.Event()
        self._stop = stopped.set
        self._close_listener = lambda: None
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._probe_loop, anyio.sleep)
            await impl.serve(host, port, lambda p: self._started(p, task_status), stopped)
            tg.cancel_scope.cancel()

    async def run(self, host: str, port: int) -> None:
        """`serve` until SIGTERM or SIGINT, then `stop` within ``grace``."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            await self._run_anyio(host, port)
            return
        serving = loop.create_task(self.serve(host, port))
        signalled = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, signalled.set)
        while not self.port and not serving.done():
            await asyncio.sleep(0.01)
        if serving.done():
            serving.result()  # the listener could not be opened: raise why
        self._announce(host)
        await signalled.wait()
        await self.stop()
        await serving

    async def _run_anyio(self, host: str, port: int) -> None:
        import anyio

        async with anyio.create_task_group() as tg:
            await tg.start(self.serve, host, port)
            self._announce(host)
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    await self.stop()
                    return

    def _announce(self, host: str) -> None:
        ep = self.upstream
        path = dialect(self.state.config.upstream_dialect).path
        where = (  # Gemini's names the model, and its API version
            ep.prefix + path
            if path is not None
            else ep.prefix.removesuffix("/v1") + "/v1beta/models/{model}:streamGenerateContent"
        )
        log.warning(
            "svir gateway on http://%s:%d/v1 in front of %s://%s%s",
            host,
            self.port,
            ep.scheme,
            ep.authority,
            where,
        )

    async def stop(self) -> None:
        """Stop accepting, let open streams finish within ``grace``, then end the rest with a
        proper end (an error in the client's dialect, then its end marker)."""
        self.state.stopping = True
        close = getattr(self, "_close_listener", None)
        if close is not None:
            close()
        sleep = _sleep()
        deadline = time.monotonic() + self.grace
        while self.state.streams and time.monotonic() < deadline:
            await sleep(0.05)
        if self._impl is not None:
            self._impl.shutdown()
        await sleep(0.05)  # the last bytes go out
        if self._stop is not None:
            self._stop()

    # -- readiness -------------------------------------------------------------------------

    async def _probe_loop(self, sleep: Callable[[float], Any]) -> None:
        """Probe until the server stops: cancelled, or, where a cancel was lost (asyncio's
        ``wait_for`` before Python 3.12 can return a result that came as it was cancelled,
        and the loop went on probing, which held the event loop's close for ever), at the
        next turn."""
        while self._probing:
            try:
                ready, reason = await self._probe()
            except Exception as exc:
                ready, reason = False, f"the probe failed: {exc!r}"
            self.state.readiness.update(ready, reason, time.monotonic())
            await sleep(self.probe_interval)

    async def _probe(self) -> tuple[bool, str]:
        """The upstream's listing (``GET /v1/models``; Anthropic's with its key header,
        Gemini's ``GET /v1beta/models``) on a connection of its own: ready if it lists."""
        ep = self.upstream
        timeout = self.probe_timeout
        deadline = time.monotonic() + timeout
        try:
            reader, writer = await _open(ep, self._ssl, timeout)
        except (OSError, TimeoutError) as exc:
            return False, f"the upstream cannot be reached: {exc or 'timeout'}"
        conn = ClientConnection(ep)
        try:
            asked = ModelsRequest(dialect=self.config.upstream_dialect)
            writer(b"".join(conn.send(asked)))
            while True:
                event = conn.next_event()
                if event is NEED_DATA:
                    if time.monotonic() > deadline:  # each read within the timeout, and all
                        return False, f"the upstream's answer to the probe took over {timeout} s"
                    data = await reader()
                    conn.receive_data(data)
                    continue
                if isinstance(event, ModelsListed):
                    return True, f"the upstream lists {len(event.models)} models"
                if isinstance(event, RequestFailed):
                    f = event.failure
                    return False, f"the upstream answered {f.status or ''} {f.kind.value}: " + (
                        f.message[:200]
                    )
        except (OSError, TimeoutError, SvirProtocolError) as exc:
            return False, f"the upstream's answer to the probe is broken: {exc}"
        finally:
            await _close(writer)


async def _open(
    ep: Endpoint, context: ssl.SSLContext | None, timeout: float
) -> tuple[Callable[[], Any], Callable[[bytes], None]]:
    """A tiny connection for the probe, on whichever loop runs: (receive, send)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        import anyio

        with anyio.fail_after(timeout):
            if ep.scheme == "https":
                stream: Any = await anyio.connect_tcp(
                    ep.host, ep.port, tls=True, tls_hostname=ep.host,
                    ssl_context=context or ssl.create_default_context(),
                )  # fmt: skip
            else:
                stream = await anyio.connect_tcp(ep.host, ep.port)
        pending: list[bytes] = []

        async def receive_anyio() -> bytes:
            if pending:
                await stream.send(b"".join(pending))
                pending.clear()
            with anyio.fail_after(timeout):
                try:
                    return bytes(await stream.receive(65536))
                except anyio.EndOfStream:
                    return b""

        def send_anyio(data: bytes) -> None:
            pending.append(data)

        send_anyio.stream = stream  # type: ignore[attr-defined]
        return receive_anyio, send_anyio
    sslctx = (context or ssl.create_default_context()) if ep.scheme == "https" else None
    r, w = await _within(asyncio.open_connection(ep.host, ep.port, ssl=sslctx), timeout)

    async def receive() -> bytes:
        data: bytes = await _within(r.read(65536), timeout)
        return data

    def send(data: bytes) -> None:
        w.write(data)

    send.writer = w  # type: ignore[attr-defined]
    return receive, send


async def _within(awaitable: Any, timeout: float) -> Any:
    """``await awaitable``, for at most ``timeout`` seconds (`TimeoutError`): with
    `asyncio.timeout` where there is one (3.11), which never loses a cancel."""
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(timeout):
            return await awaitable
    return await asyncio.wait_for(awaitable, timeout)  # pragma: no cover - Python 3.10


async def _close(send: Callable[[bytes], None]) -> None:
    writer = getattr(send, "writer", None)
    if writer is not None:
        writer.close()
        return
    stream = getattr(send, "stream", None)
    if stream is not None:
        import anyio

        await anyio.aclose_forcefully(stream)


def _sleep() -> Callable[[float], Any]:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        import anyio

        return anyio.sleep
    return asyncio.sleep


def _fields(config: GatewayConfig) -> dict[str, Any]:
    import attrs

    return attrs.asdict(config, recurse=False)


_WALL_OFFSET: Final = time.time() - time.monotonic()


def _new_id() -> str:
    return "req-" + os.urandom(12).hex()


def serve_forever(server: GatewayServer, host: str, port: int, backend: str) -> int:
    """Run ``server`` on ``backend`` until SIGTERM or SIGINT (``svir gateway``); 0 then."""
    if backend == "trio":
        import anyio

        anyio.run(server.run, host, port, backend="trio")
        return 0
    _asyncio_runner()(server.run(host, port))  # outside the except: no chained context
    return 0


def _asyncio_runner() -> Callable[[Any], object]:
    """uvloop's ``run`` if it is installed, else asyncio's (a traceback while serving was
    chained to the ``ModuleNotFoundError`` when the server ran inside the except clause)."""
    try:
        import uvloop  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return asyncio.run
    return uvloop.run  # type: ignore[no-any-return]  # pragma: no cover - an extra
