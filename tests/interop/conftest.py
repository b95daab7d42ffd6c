"""The interop tests' servers: our replay server with the ``interop`` scenario (one per session,
always closed), and llama.cpp's llama-server (the live tests' `llama` fixture: skipped without
the install, failed under CI)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.interop.upstream import InteropUpstream
from tests.live.conftest import llama

__all__ = ["llama", "upstream"]


@pytest.fixture(scope="session")
def upstream() -> Iterator[InteropUpstream]:
    server = InteropUpstream()
    try:
        yield server
    finally:
        server.close()
