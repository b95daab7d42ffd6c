"""The blocking transport: `socket` and `ssl` under a `ClientConnection`, for threads and scripts.

It moves bytes only: writes what the connection gives it, reads when it needs data, applies the
timeouts (`Timeouts`) and closes the socket when the stream ends early. What the bytes mean,
whether to retry and what to send instead are the core's (`next_attempt`). TLS is verified by
default; pass an `ssl.SSLContext` for anything else. Proxies: ``proxy=`` or the environment's
(``HTTPS_PROXY``, ``HTTP_PROXY``, ``NO_PROXY``; `svir_proto.transports._proxy` says how).

    with Client("http://localhost:8080") as client:
        with client.stream_chat(request) as stream:
            for event in stream:
                ...
        print(stream.result)
"""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from ..connection import ClientConnection
from ..errors import ConnectionFailedError, StaleConnection, StreamTimeout, SvirProtocolError
from ..exchange import ExchangeOptions, check_options
from ..llmstream.request import LLMRequest
from ..openai.endpoint import Endpoint, HeaderItems, ModelInfo
from ..openai.request import ChatRequest
from ._proxy import Proxy, Tunnel, proxy_for
from ._shared import (
    DEFAULT_TIMEOUTS,
    DRAIN_LIMIT,
    READ_SIZE,
    Batches,
    ChatStream,
    Phase,
    Settings,
    SyncClientBase,
    Timeouts,
    UploadProgress,
    attempts,
    dropped,
    limit,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["Client", "list_models", "stream_chat"]


class Client(SyncClientBase):
    """A connection to one server, kept alive between requests when the server allows it.

    Args:
        endpoint: an `Endpoint`, or a base URL (with ``api_key``).
        api_key: the bearer token, for a base URL given as a string.
        headers: sent with every request (organisation and project ids, ``traceparent``, a
            gateway's own); each replaces svir-proto's of the same name.
        timeouts: see `Timeouts`.
        retries: how many times a failed request may be sent again (`next_attempt`); 0: never.
        raise_on_failure: raise a failure the server reported, as its kind's
            `RequestFailedError`, once its events are out (and `IncompleteStreamError` for a
            stream cut short), instead of leaving it in ``result.error``.
        ssl_context: for https; the default verifies the server's certificate.
        proxy: an ``http://[user:password@]host:port`` proxy for every request; without it the
            environment's is used, unless ``trust_env`` is false.
        trust_env: read ``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY`` and ``NO_PROXY``.
        on_upload: called with (bytes sent, Content-Length) while a body is written.
        sleep: waits between retries (a test's clock).
        options: `ExchangeOptions` for each exchange (``user_agent``, the decoders' bounds,
            ``think_opened``...).

    Raises:
        TypeError, ValueError: an unknown argument or a bad value, now rather than at the
            first request.
    """

    def __init__(
        self,
        endpoint: Endpoint | str,
        *,
        api_key: str | None = None,
        headers: HeaderItems | None = None,
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
        retries: int = 2,
        raise_on_failure: bool = False,
        ssl_context: ssl.SSLContext | None = None,
        proxy: str | None = None,
        trust_env: bool = True,
        on_upload: UploadProgress | None = None,
        sleep: Callable[[float], None] = time.sleep,
        **options: Unpack[ExchangeOptions],
    ) -> None:
        self.endpoint = (
            endpoint if isinstance(endpoint, Endpoint) else Endpoint.parse(endpoint, api_key)
        )
        self.settings = Settings(
            timeouts=timeouts,
            retries=retries,
            headers=headers,
            raise_on_failure=raise_on_failure,
            where="Client()",
        )
        self._options = check_options(options, where="Client()")
        self._ssl = ssl_context
        self._proxy = None if proxy is None else Proxy.parse(proxy)
        self._trust_env = trust_env
        self._on_upload = on_upload
        self._sleep = sleep
        self._sock: socket.socket | None = None
        self._conn: ClientConnection | None = None
        self.connections = 0
        """How many connections this client has opened (keep-alive shows in it)."""

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
        self._sock = self._conn = None

    # -- the loop: attempts, then one exchange ------------------------------------------------

    def _run(self, stream: ChatStream) -> Batches:
        return attempts(stream, self._attempt, sleep=self._sleep)

    def _attempt(self, stream: ChatStream, deadline: float | None) -> Batches:
        try:
            yield from self._exchange(stream, deadline, fresh=False)  # batches
            return
        except StaleConnection:  # a kept-alive connection found closed: once more, anew
            self.close()
        yield from self._exchange(stream, deadline, fresh=True)

    def _exchange(self, stream: ChatStream, deadline: float | None, *, fresh: bool) -> Batches:
        sock, conn, reused = self._ready(stream, deadline, fresh)
        pieces = conn.send(stream.request, headers=stream.headers_sent)
        stream.exchange = conn.exchange
        heard = False
        try:
            self._write(stream, sock, conn, pieces, deadline, reused)
            while conn.terminal is None:
                data = self._read(stream, sock, "read" if heard else "first_byte", deadline)
                heard = True
                yield conn.feed(data)  # StaleConnection for a kept-alive connection closed
                if conn.error is not None:  # the events before it went out: now the error
                    raise conn.error
                if not data:
                    break
        except StreamTimeout as exc:
            yield conn.interrupt(str(exc))
            self.close()
            raise
        except BaseException as exc:  # a cancel, the caller leaving the stream, a bad stream
            why = (
                "the caller left the stream"
                if isinstance(exc, GeneratorExit)
                else f"cancelled ({type(exc).__name__})"
            )
            conn.interrupt(why)
            self.close()
            raise
        self._finish(stream, sock, conn, deadline)

    def _finish(
        self,
        stream: ChatStream,
        sock: socket.socket,
        conn: ClientConnection,
        deadline: float | None,
    ) -> None:
        """Read what is left of a finished response (a chunked body's last chunk), a little
        at most, so that the connection serves the next request; else close it."""
        left = DRAIN_LIMIT
        try:
            while conn.finishing and left > 0:
                data = self._read(stream, sock, "read", deadline)
                left -= len(data) or left
                conn.feed(data)
        except (SvirProtocolError, StreamTimeout, OSError):
            pass
        if not conn.reusable:
            self.close()

    def _ready(
        self, stream: ChatStream, deadline: float | None, fresh: bool
    ) -> tuple[socket.socket, ClientConnection, bool]:
        """An open connection: the kept-alive one if the server left it open, else a new one;
        and whether it was reused."""
        conn = self._conn
        if (
            not fresh
            and conn is not None
            and conn.reusable
            and self._sock is not None
            and not dropped(self._sock)
        ):
            conn.start_next_cycle()
            return self._sock, conn, True
        self.close()
        ep = self.endpoint
        proxy = proxy_for(ep, proxy=self._proxy, trust_env=self._trust_env)
        host, port = (ep.host, ep.port) if proxy is None else (proxy.host, proxy.port)
        timeout, phase, seconds = limit(stream.timeouts, "connect", deadline)
        try:
            sock = socket.create_connection((host, port), timeout=timeout)
            try:
                if proxy is not None and ep.scheme == "https":
                    self._tunnel(sock, Tunnel(ep, proxy))
                if ep.scheme == "https":
                    context = self._ssl or ssl.create_default_context()
                    sock = context.wrap_socket(sock, server_hostname=ep.host)
            except BaseException:
                sock.close()
                raise
        except TimeoutError:
            raise StreamTimeout(phase, seconds) from None
        except OSError as exc:  # refused, unknown host, TLS verification
            raise ConnectionFailedError(f"cannot connect to {host}:{port}: {exc}") from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock = sock
        if proxy is None or ep.scheme == "https":
            conn = ClientConnection(ep, **self._options)
        else:  # an http server through the proxy: the whole URL as the target
            conn = ClientConnection(
                ep, headers=proxy.headers, target_form="absolute", **self._options
            )
        self._conn = conn
        self.connections += 1
        return sock, conn, False

    @staticmethod
    def _tunnel(sock: socket.socket, tunnel: Tunnel) -> None:
        """A proxy's CONNECT tunnel, within the connect timeout set on ``sock``."""
        sock.sendall(tunnel.request)
        while not tunnel.receive(sock.recv(READ_SIZE)):
            pass

    def _write(
        self,
        stream: ChatStream,
        sock: socket.socket,
        conn: ClientConnection,
        pieces: Iterator[bytes],
        deadline: float | None,
        reused: bool,
    ) -> None:
        exchange = conn.exchange
        total = exchange.body.content_length if exchange is not None and exchange.body else 0
        sent = 0
        try:
            for piece in pieces:
                timeout, phase, seconds = limit(stream.timeouts, "write", deadline)
                sock.settimeout(timeout)
                try:
                    sock.sendall(piece)
                except TimeoutError:
                    raise StreamTimeout(phase, seconds) from None
                sent += len(piece)
                if self._on_upload is not None and total:
                    self._on_upload(min(sent, total), total)
        except (BrokenPipeError, ConnectionResetError):
            if reused and not sent:
                raise StaleConnection("the server had closed the kept-alive connection") from None
            conn.send_failed()  # the server stopped reading: it may have answered already

    def _read(
        self, stream: ChatStream, sock: socket.socket, phase: Phase, deadline: float | None
    ) -> bytes:
        timeout, phase, seconds = limit(stream.timeouts, phase, deadline)
        sock.settimeout(timeout)
        try:
            return sock.recv(READ_SIZE)
        except TimeoutError:
            raise StreamTimeout(phase, seconds) from None
        except (ConnectionResetError, ssl.SSLError):
            return b""  # the server dropped the connection: the end of what it sent


def stream_chat(
    endpoint: Endpoint | str,
    request: ChatRequest | LLMRequest,
    *,
    api_key: str | None = None,
    headers: HeaderItems | None = None,
    timeouts: Timeouts = DEFAULT_TIMEOUTS,
    retries: int = 2,
    raise_on_failure: bool = False,
    ssl_context: ssl.SSLContext | None = None,
    proxy: str | None = None,
    trust_env: bool = True,
    on_upload: UploadProgress | None = None,
    **options: Unpack[ExchangeOptions],
) -> ChatStream:
    """One streamed answer on a connection of its own, closed with the stream; the arguments
    are `Client`'s."""
    client = Client(
        endpoint,
        api_key=api_key,
        headers=headers,
        timeouts=timeouts,
        retries=retries,
        raise_on_failure=raise_on_failure,
        ssl_context=ssl_context,
        proxy=proxy,
        trust_env=trust_env,
        on_upload=on_upload,
        **options,
    )

    def run(stream: ChatStream) -> Batches:
        try:
            yield from client._run(stream)
        finally:
            client.close()

    settings = client.settings.for_request(timeouts=None, retries=None, headers=None)
    return ChatStream(request, run, **settings)


def list_models(
    endpoint: Endpoint | str,
    *,
    api_key: str | None = None,
    headers: HeaderItems | None = None,
    timeouts: Timeouts = DEFAULT_TIMEOUTS,
    retries: int = 2,
    ssl_context: ssl.SSLContext | None = None,
    proxy: str | None = None,
    trust_env: bool = True,
    **options: Unpack[ExchangeOptions],
) -> tuple[ModelInfo, ...]:
    """``GET /v1/models`` (chat models first); the arguments are `Client`'s."""
    with Client(
        endpoint,
        api_key=api_key,
        headers=headers,
        timeouts=timeouts,
        retries=retries,
        ssl_context=ssl_context,
        proxy=proxy,
        trust_env=trust_env,
        **options,
    ) as client:
        return client.list_models()
