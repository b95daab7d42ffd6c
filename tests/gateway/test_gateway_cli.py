"""``svir gateway`` as a user runs it: a real process in front of our replay server, spoken to
with raw HTTP (as curl does), stopped with SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from tests.gateway.draft_check import check
from tests.gateway.test_gateway_server import llm_body, raw_post
from tests.helpers import ROOT
from tests.transports.server import ReplayServer


@pytest.fixture(scope="module")
def replay() -> Iterator[ReplayServer]:
    s = ReplayServer()
    yield s
    s.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def svir_gateway(*args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    return subprocess.Popen(
        [sys.executable, "-m", "svir_proto.cli", "gateway", *args],
        cwd=ROOT,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_svir_gateway_serves_both_dialects_then_stops_on_sigterm(replay: ReplayServer) -> None:
    port = free_port()
    upstream = replay.base("replay", "wire-3.3-tool-calls", "chunked")
    proc = svir_gateway("--upstream", upstream, "--listen", f"127.0.0.1:{port}", "--token", "t")
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        base = f"http://127.0.0.1:{port}/v1"
        auth = {"Authorization": "Bearer t"}
        status, _, raw = raw_post(
            base, llm_body("cli"), {"Content-Type": "application/llm-request+json", **auth}
        )
        assert status == 200
        violations, parsed = check(raw)
        assert violations == []
        assert [e["name"] for e in parsed if e["type"] == "tool.call"] == ["lookup", "lookup"]
        body = json.dumps({"model": "m", "messages": [], "stream": True}).encode()
        status, headers, raw = raw_post(base, body, {"Content-Type": "application/json", **auth})
        assert (status, headers["content-type"]) == (200, "text/event-stream")
        assert raw.endswith(b"data: [DONE]\n\n")
        assert raw_post(base, body, {"Content-Type": "application/json"})[0] == 401
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert "svir gateway on http://127.0.0.1" in err
    assert "POST /v1/chat/completions dialect=llm-stream outcome=ok" in err


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--upstream", "ftp://x"), "scheme must be http or https"),
        (("--upstream", "http://x", "--listen", "nowhere"), "must be HOST:PORT"),
    ],
)
def test_svir_gateway_bad_arguments(args: tuple[str, ...], words: str) -> None:
    proc = svir_gateway(*args)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert words in err
