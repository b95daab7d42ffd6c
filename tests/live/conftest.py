"""The live tests' server: llama.cpp's llama-server with SmolLM2-135M on loopback, one per
session, always stopped. Installed by scripts/install-llama (scripts/test and .ci/run run it).

Without the install the live tests are skipped, except under CI, where they fail: CI must never
pass without having talked to the real server.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import ROOT

spec = importlib.util.spec_from_file_location("llama_server", ROOT / "scripts" / "llama_server.py")
assert spec is not None
assert spec.loader is not None
llama_server = importlib.util.module_from_spec(spec)
sys.modules["llama_server"] = llama_server
spec.loader.exec_module(llama_server)


@pytest.fixture(scope="session")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of a running llama-server (context 512 tokens, for the overflow case)."""
    paths = llama_server.installed()
    if paths is None:
        message = "llama-server is not installed: run scripts/install-llama"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    log = Path(tmp_path_factory.mktemp("llama")) / "llama-server.log"
    with llama_server.LlamaServer(*paths, ctx=512, log=log) as server:
        yield server.base_url
