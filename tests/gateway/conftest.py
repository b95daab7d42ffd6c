"""What the gateway's tests share: our replay server on loopback, one per test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.transports.server import ReplayServer


@pytest.fixture(scope="module")
def replay() -> Iterator[ReplayServer]:
    server = ReplayServer()
    try:
        yield server
    finally:
        server.close()
