"""The test servers stop whole (`tests.sockets`): once closed, nothing listens on their port,
and a connection each was serving sees its end at once. Closed from another thread while its
own thread waited in ``accept``, a listener kept listening and took the next connection; a
connection stayed open with nothing answering on it (CI: a gateway answered by another test
server's 404, stop 37)."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.gateway.hostile_upstream import HostileUpstream
from tests.gateway.hub_upstream import HubUpstream
from tests.gateway.test_gateway_pool import EarlyUpstream, Upstream
from tests.transports.proxy import Proxy
from tests.transports.server import ReplayServer

SERVERS: dict[str, Callable[[], Any]] = {
    "replay": ReplayServer,
    "proxy": Proxy,
    "hostile": HostileUpstream,
    "hub": HubUpstream,
    "pool": Upstream,
    "pool-early": EarlyUpstream,
}


@pytest.mark.parametrize("name", SERVERS)
def test_a_closed_server_neither_listens_nor_holds_a_connection(name: str) -> None:
    server = SERVERS[name]()
    held = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    try:
        held.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n")  # a head it never finishes
        served = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        served.close()
        time.sleep(0.3)  # its threads wait in accept and recv by now: the case to stop
    finally:
        server.close()
    try:
        data = held.recv(65536)
        while data:  # what it answered before the close, then the end
            data = held.recv(65536)
    except ConnectionResetError:
        pass  # (an end too)
    finally:
        held.close()
    with socket.socket() as late:
        late.settimeout(30)
        with pytest.raises(ConnectionRefusedError):
            late.connect(("127.0.0.1", server.port))
