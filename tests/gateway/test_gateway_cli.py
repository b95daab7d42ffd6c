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
from typing import Any

import pytest

from tests.gateway.draft_check import check
from tests.gateway.test_gateway_server import llm_body, raw_post
from tests.helpers import ROOT
from tests.transports.server import ReplayServer


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


def wait_listening(port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)


@pytest.mark.parametrize("how", ["file", "env", "argv"])
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_token_from_a_file_the_environment_or_argv(
    replay: ReplayServer, tmp_path: Any, how: str, backend: str
) -> None:
    port = free_port()
    upstream = replay.base("replay", "wire-3.3-tool-calls", "chunked")
    args = ["--upstream", upstream, "--listen", f"127.0.0.1:{port}", "--backend", backend]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SVIR_"))}
    if how == "file":
        secret = tmp_path / "token"
        secret.write_text("s3cret\n")
        args += ["--token-file", str(secret)]
    elif how == "env":
        env["SVIR_GATEWAY_TOKEN"] = "s3cret"
    else:
        args += ["--token", "s3cret"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "svir_proto.cli", "gateway", *args],
        cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_listening(port)
        base = f"http://127.0.0.1:{port}/v1"
        body = json.dumps({"model": "m", "messages": [], "stream": True}).encode()
        media = {"Content-Type": "application/json"}
        assert raw_post(base, body, media)[0] == 401
        ok = raw_post(base, body, {**media, "Authorization": "bearer s3cret"})
        assert ok[0] == 200
        assert ok[2].endswith(b"data: [DONE]\n\n")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
    assert proc.returncode == 0, err
    assert ("visible to every local user" in err) is (how == "argv")


def test_an_empty_token_file_is_refused(tmp_path: Any) -> None:
    empty = tmp_path / "token"
    empty.write_text("\n")
    proc = svir_gateway("--upstream", "http://x", "--token-file", str(empty))
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert "is empty" in err


def test_without_a_token_a_foreign_host_is_refused(replay: ReplayServer) -> None:
    port = free_port()
    upstream = replay.base("replay", "wire-3.3-tool-calls", "chunked")
    proc = svir_gateway(
        "--upstream", upstream, "--listen", f"127.0.0.1:{port}", "--allow-host", "gw.test"
    )
    try:
        wait_listening(port)
        for host, status in (("evil.example", 421), ("gw.test", 200), ("localhost", 200)):
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                s.sendall(f"GET /healthz HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
                assert s.recv(100).startswith(f"HTTP/1.1 {status} ".encode()), host
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=60)
        finally:
            proc.kill()


@pytest.mark.parametrize(
    ("upstream_dialect", "where"),
    [
        ("chat", "http://up.test:8000/v1/chat/completions"),
        ("messages", "http://up.test:8000/v1/messages"),
        ("responses", "http://up.test:8000/v1/responses"),
        ("gemini", "http://up.test:8000/v1beta/models/{model}:streamGenerateContent"),
        ("llm-stream", "http://up.test:8000/v1/chat/completions"),
    ],
)
def test_the_start_line_names_the_endpoint_the_gateway_uses(
    upstream_dialect: str, where: str, caplog: pytest.LogCaptureFixture
) -> None:
    """It named the Chat Completions URL whatever --upstream-dialect said (client round 30)."""
    from svir_proto.gateway import GatewayConfig
    from svir_proto.openai import Endpoint
    from svir_proto.transports.gateway import GatewayServer

    config = GatewayConfig(
        upstream=Endpoint.parse("http://up.test:8000"), upstream_dialect=upstream_dialect
    )
    with caplog.at_level("WARNING"):
        GatewayServer(config)._announce("127.0.0.1")
    assert caplog.messages[-1].endswith(f"in front of {where}")
