"""The example programs against the real llama.cpp server (their replay-server runs are in
tests/examples): the agent loop under both backends, the proxy, the sans-IO connection, whose
second request meets llama.cpp closing the connection after every stream."""

from __future__ import annotations

import pytest

from svir_proto.openai import ChatRequest, UserMessage
from svir_proto.transports import blocking
from tests.examples.test_examples import example, proxy_example
from tests.live import cases


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_agent_against_llama(llama: str, backend: str) -> None:
    out = example("agent.py", "--base-url", llama, "--backend", backend, "What is 2 plus 3?")
    # a 135M model may answer in words or keep calling tools: either way the loop ends
    assert out.returncode in (0, 1), out.stderr
    assert "Traceback" not in out.stderr


def test_the_sans_io_connection_against_llama(llama: str) -> None:
    out = example("sans_io_socket.py", llama, cases.MODEL)
    assert out.returncode == 0, out.stderr  # llama.cpp closed after the first: StaleConnection


def test_the_proxy_against_llama(llama: str) -> None:
    with proxy_example(llama) as base:
        request = ChatRequest(
            model=cases.MODEL, messages=[UserMessage(content="Say hi.")], max_tokens=16
        )
        with blocking.stream_chat(base, request) as stream:
            list(stream)
        assert stream.result.done, stream.result
