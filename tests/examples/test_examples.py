"""The typed example programs (examples/*.py) run against our replay server: an agent loop with
tools under asyncio and trio, a proxy on an httpx client, the sans-IO connection on a socket.
They are type-checked with ``mypy --strict`` here and, against the installed wheel, by the
packaging test; the live suite runs them against llama.cpp."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from svir_proto.openai import ChatRequest, UserMessage
from svir_proto.transports import blocking
from tests.helpers import ROOT
from tests.transports.server import ReplayServer

EXAMPLES = ROOT / "examples"
ENV = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}


@pytest.fixture(scope="module")
def server() -> Iterator[ReplayServer]:
    s = ReplayServer()
    yield s
    s.close()


def example(name: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=ENV,
        timeout=timeout,
    )


def test_the_examples_type_check_strictly() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", *map(str, sorted(EXAMPLES.glob("*.py")))],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_agent_runs_its_tools_and_sends_the_results_back(
    server: ReplayServer, backend: str
) -> None:
    # the recording calls a tool on every turn: the loop runs its turns, then gives up
    before = len(server.requests)
    base = server.base("replay", "wire-3.3-tool-calls", "chunked")
    out = example("agent.py", "--base-url", base, "--backend", backend, "what is it?")
    assert out.returncode == 1, out.stderr  # no answer in words after four turns
    assert "[calling lookup(" in out.stdout
    sent = [json.loads(r.body) for r in server.requests[before:] if r.method == "POST"]
    assert len(sent) == 4
    last = sent[-1]["messages"]
    assert last[1]["role"] == "assistant"
    assert last[1]["tool_calls"][0]["function"]["name"] == "lookup"
    assert last[2] == {
        "role": "tool",
        "tool_call_id": "call-a",
        "content": '{"error": "no tool named lookup"}',
    }


def test_the_agent_answers_in_words(server: ReplayServer) -> None:
    base = server.base("replay", "vllm-reasoning-and-content", "chunked")
    out = example("agent.py", "--base-url", base, "hello")
    assert out.returncode == 0, out.stderr
    assert "Answer." in out.stdout


def test_the_agent_says_what_the_server_refused(server: ReplayServer) -> None:
    out = example("agent.py", "--base-url", server.base("status", "401", "openai"), "hi")
    assert out.returncode == 1
    assert "the server said no: authentication (HTTP 401)" in out.stderr


def test_the_sans_io_example_keeps_the_connection_or_opens_another(server: ReplayServer) -> None:
    before = server.connections
    kept = example(
        "sans_io_socket.py", server.base("replay", "wire-3.3-tool-calls", "chunked"), "m"
    )
    assert kept.returncode == 0, kept.stderr
    assert server.connections == before + 1  # both requests on one connection
    closed = example("sans_io_socket.py", server.base("close-after", "wire-3.3-tool-calls"), "m")
    assert closed.returncode == 0, closed.stderr
    assert server.connections == before + 3  # closed after the first: a second one


@contextmanager
def proxy_example(upstream: str) -> Iterator[str]:
    """examples/proxy_httpx.py running on a free port in front of ``upstream``: its base URL."""
    script = str(EXAMPLES / "proxy_httpx.py")
    proc = subprocess.Popen(
        [sys.executable, script, "--listen", "127.0.0.1:0", "--upstream", upstream],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=ENV,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("listening on 127.0.0.1:"), (
            line + (proc.stderr or io.StringIO()).read()
        )
        yield f"http://{line.split()[-1]}/v1"
    finally:
        proc.kill()
        proc.communicate()


def test_the_proxy_relays_answers_on_its_httpx_client(server: ReplayServer) -> None:
    with proxy_example(server.base("replay", "wire-3.3-tool-calls", "chunked")) as base:
        before = len(server.requests)
        request = ChatRequest(model="m", messages=[UserMessage(content="hi")])
        with blocking.stream_chat(base, request, api_key="sk-caller") as stream:
            list(stream)
        assert stream.result.complete
        assert [c.name for c in stream.result.tool_calls] == ["lookup", "lookup"]
        assert server.requests[before].headers["authorization"] == "Bearer sk-caller"
        bad = urllib.request.Request(base + "/chat/completions", data=b'{"model": "m"}')
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(bad, timeout=30)
        assert refused.value.code == 400
        assert "messages" in refused.value.read().decode()


def test_every_example_is_tested() -> None:
    tested = Path(__file__).read_text()
    for path in EXAMPLES.glob("*.py"):
        assert path.name in tested, path.name
