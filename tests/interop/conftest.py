"""The interop tests' servers: our replay server with the ``interop`` scenario (one per module,
always closed), and llama.cpp's llama-server (the live tests' `llama` fixture: skipped without
the install, failed under CI)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.interop.upstream import InteropUpstream
from tests.live.conftest import llama

__all__ = ["llama", "upstream"]


@pytest.fixture(scope="module")
def upstream() -> Iterator[InteropUpstream]:
    """One per module: full runs saw a module's first requests to a session-wide one answered
    by the replay server's 404 for an unknown scenario (stop 23's CI: the first test of
    test_openai_gateway; two gates: every request of test_llm_stream_parser's fixture), the
    cause not found; a module's own server is fresh, and closed at its end."""
    server = InteropUpstream()
    try:
        yield server
    finally:
        server.close()
