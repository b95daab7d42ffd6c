"""HTTP proxies for the transports that open their own sockets (blocking, anyio).

Rule 1 (which proxy): one given to the client (``proxy=``) is used for every request; else,
    unless ``trust_env=False``, the environment's, as curl, requests and httpx read it:
    ``https_proxy``/``HTTPS_PROXY`` for an https server, ``http_proxy``/``HTTP_PROXY`` for http,
    ``all_proxy``/``ALL_PROXY`` for either, and none for a host ``no_proxy``/``NO_PROXY`` names
    (a comma-separated list of host names, domain suffixes, ``*`` for all; the standard
    library's ``urllib.request`` reading, which ignores ``HTTP_PROXY`` under CGI).
Rule 2 (how): only ``http://`` proxies, optionally with ``user:password@`` (sent as
    ``Proxy-Authorization: Basic``). An https server is reached through a ``CONNECT`` tunnel
    (RFC 9110 9.3.6), then TLS inside it to the server itself; an http server gets its request
    in absolute form (RFC 9112 3.2.2). Any other proxy scheme (``https://``, ``socks5://``) is
    a `ValueError` for ``proxy=`` and a `ConnectionFailedError` for the environment's, which
    says so: use the httpx or httpcore transport, which support them.
Rule 3: a proxy that refuses the tunnel is a `ConnectionFailedError` naming its status; the
    tunnel's reply head is bounded like any head (16 KiB) and read by h11.
"""

from __future__ import annotations

import base64
from typing import Final, final
from urllib.parse import unquote, urlsplit

import attrs
import h11

from ..errors import ConnectionFailedError
from ..exchange import DEFAULT_MAX_HEAD_SIZE
from ..openai.endpoint import Endpoint

__all__ = ["Proxy", "Tunnel", "proxy_for"]


@final
@attrs.frozen(kw_only=True)
class Proxy:
    """An HTTP proxy: where to connect, and its credentials (as a header), if any."""

    host: str
    port: int
    authorization: str | None = attrs.field(default=None, repr=False)

    @classmethod
    def parse(cls, url: str) -> Proxy:
        """Raises ValueError for a proxy URL svir-proto cannot use (Rule 2)."""
        parts = urlsplit(url if "://" in url else f"http://{url}")
        if parts.scheme != "http":
            raise ValueError(
                f"proxy {url!r}: only http:// proxies are supported by this transport "
                "(use the httpx or httpcore transport for https:// or socks proxies)"
            )
        if not parts.hostname:
            raise ValueError(f"proxy {url!r} has no host")
        try:
            port = parts.port or 80
        except ValueError as exc:
            raise ValueError(f"proxy {url!r}: bad port: {exc}") from exc
        authorization = None
        if parts.username is not None:
            pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
            authorization = "Basic " + base64.b64encode(pair.encode()).decode()
        return cls(host=parts.hostname, port=port, authorization=authorization)

    @property
    def headers(self) -> tuple[tuple[str, str], ...]:
        return () if self.authorization is None else (("Proxy-Authorization", self.authorization),)


def proxy_for(endpoint: Endpoint, *, proxy: Proxy | None, trust_env: bool) -> Proxy | None:
    """The proxy to reach ``endpoint`` through, if any (Rule 1).

    Raises:
        ConnectionFailedError: the environment names a proxy this transport cannot use.
    """
    if proxy is not None:
        return proxy
    if not trust_env:
        return None
    import urllib.request  # it loads the email package: only once a connection is opened

    proxies = urllib.request.getproxies_environment()
    url = proxies.get(endpoint.scheme) or proxies.get("all")
    # proxy_bypass_environment is public in CPython, missing from typeshed's stubs
    bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]
    if not url or bypass(endpoint.host, proxies):
        return None
    try:
        return Proxy.parse(url)
    except ValueError as exc:
        raise ConnectionFailedError(f"the environment's proxy cannot be used: {exc}") from exc


class Tunnel:
    """The ``CONNECT`` exchange that opens a tunnel to ``endpoint`` (Rules 2 and 3), sans-IO:
    write `request`, feed what the proxy answers to `receive` until it returns ``True``; what
    came after the reply's head is then in `leftover` (a proxy sends nothing there)."""

    MAX_HEAD: Final = DEFAULT_MAX_HEAD_SIZE

    def __init__(self, endpoint: Endpoint, proxy: Proxy) -> None:
        self._target = f"{endpoint.host}:{endpoint.port}"
        if ":" in endpoint.host:
            self._target = f"[{endpoint.host}]:{endpoint.port}"
        self._proxy = proxy
        self._h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=self.MAX_HEAD)
        self.leftover = b""

    @property
    def request(self) -> bytes:
        headers = [("Host", self._target), *self._proxy.headers]
        out = self._h11.send(h11.Request(method="CONNECT", target=self._target, headers=headers))
        return out or b""

    def receive(self, data: bytes) -> bool:
        """Whether the tunnel is open, after ``data`` (``b""``: the proxy closed).

        Raises:
            ConnectionFailedError: the proxy refused, closed, or answered with bad HTTP.
        """
        where = f"the proxy {self._proxy.host}:{self._proxy.port}"
        self._h11.receive_data(data)
        try:
            event = self._h11.next_event()
            while isinstance(event, h11.InformationalResponse):
                event = self._h11.next_event()
        except h11.RemoteProtocolError as exc:
            raise ConnectionFailedError(
                f"{where} answered the tunnel with bad HTTP: {exc}"
            ) from exc
        if event is h11.NEED_DATA:
            return False
        if isinstance(event, h11.Response) and 200 <= event.status_code < 300:
            self.leftover = self._h11.trailing_data[0]
            return True
        status = event.status_code if isinstance(event, h11.Response) else "no answer"
        raise ConnectionFailedError(f"{where} refused the tunnel to {self._target}: {status}")
