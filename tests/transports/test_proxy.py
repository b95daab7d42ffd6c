"""Proxies in the transports with sockets of their own (blocking, anyio): ``proxy=``, the
environment's (``HTTPS_PROXY``, ``HTTP_PROXY``, ``NO_PROXY``), a ``CONNECT`` tunnel to an https
server, an http server's request in absolute form, credentials, and the errors."""

from __future__ import annotations

import base64
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from svir_proto.openai import ChatRequest, Endpoint, UserMessage
from svir_proto.transports import ConnectionFailedError, blocking
from svir_proto.transports._proxy import Proxy as ProxySetting
from svir_proto.transports._proxy import Tunnel, proxy_for
from tests.transports.drivers import run
from tests.transports.proxy import Asked, Proxy
from tests.transports.server import ReplayServer

REQUEST = ChatRequest(model="m", messages=[UserMessage(content="hi")])
NAME = "wire-3.3-tool-calls"
SOCKETS = ["blocking", "anyio-asyncio", "anyio-trio"]
CREDENTIALS = "Basic " + base64.b64encode(b"me:s3cret").decode()


@pytest.fixture(scope="module")
def https(certificate: tuple[Path, Path]) -> Iterator[ReplayServer]:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*map(str, certificate))
    s = ReplayServer(tls=context)
    yield s
    s.close()


@pytest.fixture(scope="module")
def http() -> Iterator[ReplayServer]:
    s = ReplayServer()
    yield s
    s.close()


@pytest.fixture
def proxy() -> Iterator[Proxy]:
    p = Proxy(authorization=CREDENTIALS)
    yield p
    p.close()


@pytest.fixture(autouse=True)
def no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "REQUEST_METHOD"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


def client_context(certificate: tuple[Path, Path]) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(certificate[0]))


def with_credentials(proxy: Proxy) -> str:
    return f"http://me:s3cret@127.0.0.1:{proxy.port}"


@pytest.mark.parametrize("transport", SOCKETS)
def test_an_https_server_through_a_connect_tunnel_from_the_environment(
    https: ReplayServer,
    proxy: Proxy,
    certificate: tuple[Path, Path],
    transport: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", with_credentials(proxy))
    base = https.base("replay", NAME, "chunked")
    out = run(transport, base, REQUEST, ssl_context=client_context(certificate))
    assert out.error is None, out.error
    assert out.result.complete
    assert proxy.seen == [Asked("CONNECT", f"127.0.0.1:{https.port}", CREDENTIALS)]


@pytest.mark.parametrize("transport", SOCKETS)
def test_an_http_server_through_the_proxy_in_absolute_form(
    http: ReplayServer, proxy: Proxy, transport: str
) -> None:
    base = http.base("replay", NAME, "length")
    before = len(http.requests)
    out = run(transport, base, REQUEST, proxy=with_credentials(proxy))
    assert out.result.complete, out.error
    (asked,) = proxy.seen
    assert asked == Asked("POST", base + "/chat/completions", CREDENTIALS)
    assert "proxy-authorization" not in http.requests[before].headers  # the proxy's own


@pytest.mark.parametrize("transport", SOCKETS)
def test_no_proxy_and_trust_env(
    http: ReplayServer, proxy: Proxy, transport: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = http.base("replay", NAME, "length")
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.setenv("NO_PROXY", "example.test,127.0.0.1")
    assert run(transport, base, REQUEST).result.complete
    monkeypatch.delenv("NO_PROXY")
    assert run(transport, base, REQUEST, trust_env=False).result.complete
    assert proxy.seen == []  # neither went through it


@pytest.mark.parametrize("transport", SOCKETS)
def test_a_refused_tunnel_and_a_proxy_without_credentials(
    https: ReplayServer, proxy: Proxy, transport: str
) -> None:
    out = run(transport, https.base("replay", NAME, "chunked"), REQUEST, proxy=proxy.url)
    assert isinstance(out.error, ConnectionFailedError)
    assert f"refused the tunnel to 127.0.0.1:{https.port}: 407" in str(out.error)


def test_proxy_urls_this_transport_cannot_use(
    monkeypatch: pytest.MonkeyPatch, http: ReplayServer
) -> None:
    for url, match in [
        ("socks5://127.0.0.1:1080", "only http:// proxies"),
        ("http://", "has no host"),
        ("http://h:99999", "bad port"),
    ]:
        with pytest.raises(ValueError, match=match):
            blocking.Client(http.base("x"), proxy=url)
    monkeypatch.setenv("HTTP_PROXY", "socks5://127.0.0.1:1080")
    out = run("blocking", http.base("replay", NAME, "length"), REQUEST)
    assert isinstance(out.error, ConnectionFailedError)
    assert "the environment's proxy cannot be used" in str(out.error)


def test_which_proxy_and_the_tunnel_sans_io(monkeypatch: pytest.MonkeyPatch) -> None:
    ep = Endpoint.parse("https://[::1]:8443/v1")
    setting = ProxySetting.parse("proxy.test:3128")  # a scheme-less proxy is http
    assert (setting.host, setting.port, setting.authorization) == ("proxy.test", 3128, None)
    assert proxy_for(ep, proxy=setting, trust_env=False) is setting
    monkeypatch.setenv("ALL_PROXY", "http://all.test:8080")
    chosen = proxy_for(ep, proxy=None, trust_env=True)
    assert chosen is not None
    assert chosen.host == "all.test"
    tunnel = Tunnel(ep, setting)
    assert tunnel.request.startswith(b"CONNECT [::1]:8443 HTTP/1.1\r\nHost: [::1]:8443\r\n")
    assert not tunnel.receive(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n")
    assert tunnel.receive(b"\r\n")
    assert tunnel.leftover == b""
    closed = Tunnel(ep, setting)
    with pytest.raises(ConnectionFailedError, match="no answer"):
        closed.receive(b"")
    bad = Tunnel(ep, setting)
    with pytest.raises(ConnectionFailedError, match="bad HTTP"):
        bad.receive(b"NOT HTTP\r\n\r\n")
