"""What every module of the hostile battery shares: its upstream and its gateways as module
fixtures, and the watch that tells a wedged gateway from a live one.

A battery module declares its processes in three lines::

    up = upstream_fixture(HostileUpstream)
    _gateways, gw = gateway_fixtures(lambda up, backend: Gateway(up.base, backend), watch=True)
    _no_anomaly = anomaly_fixture()

``up`` is one upstream for the module's tests, closed after them. ``gw`` is the shared gateway
of each backend of `BACKENDS` (the test runs once per backend), made when first asked and made
again when an earlier test killed it; with ``watch``, `Watch.check` runs after every test, and
a gateway the test wedged fails it (an error in its teardown) and is replaced. ``_no_anomaly``
holds every test to the upstream's record: whatever a test did, the upstream never saw a
request no gateway may make (its ``anomalies``).
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar

import pytest

from tests.gateway.hostile_gateway import Gateway, llm_body, llm_result, request

BACKENDS = ["asyncio", "trio"]
LLM = "application/llm-request+json"


class Upstream(Protocol):
    base: str
    anomalies: list[Any]

    def close(self) -> None: ...


U = TypeVar("U", bound=Upstream)
G = TypeVar("G", bound=Gateway)


def tag(name: str) -> str:
    """A request id that picks the upstream's scenario ``name``, unique to this test."""
    return f"{name}~{uuid.uuid4().hex[:10]}"


class Watch:
    """What tells a wedged gateway from a live one between attacks: a normal request after each
    test (a gateway that no longer answers is wedged, by the test just run), and a sentinel
    connection that sent half a head and must be closed within ``--head-timeout`` (one still
    open long after it means the deadlines stopped, during one of the tests run since it was
    opened)."""

    PATIENCE = 30.0  # far more than the 2 s head timeout: the machine is shared

    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        self.sentinel: socket.socket | None = None
        self.since = 0.0
        self.tests: list[str] = []
        self.arm()

    def arm(self) -> None:
        self.close()
        self.sentinel = socket.create_connection(("127.0.0.1", self.gw.port), timeout=10)
        self.sentinel.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        self.sentinel.setblocking(False)
        self.since = time.monotonic()
        self.tests = []

    def close(self) -> None:
        if self.sentinel is not None:
            self.sentinel.close()
            self.sentinel = None

    def sentinel_closed(self) -> bool:
        assert self.sentinel is not None
        try:
            while self.sentinel.recv(65536):  # the 408, then the close
                pass
        except BlockingIOError:
            return False
        except OSError:
            return True
        return True

    def check(self, test: str) -> str | None:
        """Why the gateway is wedged after ``test``, or ``None``."""
        self.tests.append(test)
        if not self.gw.alive():
            return None  # a death is found by the test itself, and the fixture restarts it
        try:
            status, _, _ = request(self.gw, "GET", "/healthz", timeout=20)
            assert status == 200, status
            s, _, body = request(
                self.gw, "POST", "/v1/chat/completions", llm_body("ok"),
                {"Content-Type": LLM}, timeout=30,
            )  # fmt: skip
            assert s == 200, (s, body[:300])
            assert llm_result(body).complete, body[-300:]
        except (AssertionError, OSError) as exc:
            return f"a normal request failed after {test}: {exc!r}"
        if self.sentinel_closed():
            self.arm()
        elif time.monotonic() - self.since > self.PATIENCE:
            return (
                f"the head deadline stopped being enforced: a half head sent "
                f"{time.monotonic() - self.since:.0f} s ago is still open, after one of "
                f"{self.tests}"
            )
        return None


class Gateways:
    """The shared gateway of each backend: made by ``make(up, backend)`` when first asked, and
    again when the last one died (or, with ``watch``, was wedged)."""

    def __init__(self, make: Callable[[Any, str], Gateway], watch: bool) -> None:
        self.make = make
        self.watch = watch
        self.running: dict[str, Gateway] = {}
        self.watches: dict[str, Watch] = {}

    def take(self, up: Any, backend: str) -> Gateway:
        current = self.running.get(backend)
        if current is None or not current.alive():
            self.drop(backend)
            current = self.running[backend] = self.make(up, backend)
            if self.watch:
                self.watches[backend] = Watch(current)
        current.set_mark()
        return current

    def check(self, backend: str, test: str) -> None:
        """`Watch.check` after ``test``: a wedged gateway is stopped (the next test gets a new
        one) and fails the test."""
        watch = self.watches.get(backend)
        wedged = None if watch is None else watch.check(test)
        if wedged is not None:
            self.drop(backend)
            raise AssertionError(f"the gateway ({backend}) is wedged: {wedged}")

    def drop(self, backend: str) -> None:
        gw = self.running.pop(backend, None)
        if gw is not None:
            gw.stop()
        watch = self.watches.pop(backend, None)
        if watch is not None:
            watch.close()

    def close(self) -> None:
        for backend in list(self.running):
            self.drop(backend)


def upstream_fixture(make: Callable[[], U]) -> Any:
    """A module fixture ``up``: the upstream ``make()`` starts, closed after the module."""

    @pytest.fixture(scope="module")
    def up() -> Iterator[U]:
        server = make()
        try:
            yield server
        finally:
            server.close()

    return up


def gateway_fixtures(make: Callable[[Any, str], G], *, watch: bool = False) -> tuple[Any, Any]:
    """The module fixture ``_gateways`` (`Gateways`) and the fixture ``gw``, the shared gateway
    of each of `BACKENDS`; see the module docstring."""
    shared = Gateways(make, watch)

    @pytest.fixture(scope="module")
    def _gateways() -> Iterator[Gateways]:
        try:
            yield shared
        finally:
            shared.close()

    @pytest.fixture(params=BACKENDS)
    def gw(request: pytest.FixtureRequest, up: Any, _gateways: Gateways) -> Iterator[Gateway]:
        backend = request.param
        yield _gateways.take(up, backend)
        _gateways.check(backend, request.node.nodeid)

    return _gateways, gw


def anomaly_fixture() -> Any:
    """An autouse fixture: the test fails if the upstream saw a request no gateway may make."""

    @pytest.fixture(autouse=True)
    def _no_anomaly(up: Upstream) -> Iterator[None]:
        before = len(up.anomalies)
        yield
        assert up.anomalies[before:] == []

    return _no_anomaly
