"""Attack round 31, F2: a gateway whose descriptors a flood has taken must still answer.

The dialect modules were imported when a request first needed them; an import opens files, so
with every descriptor taken (``ulimit -n`` and half-sent requests) a request for a dialect not
used yet raised ``OSError(EMFILE)`` inside its session, which the transport took for the
client's reset: the client got no answer at all. `GatewayState` now loads every module a
request may need when it is made. Here, in a fresh interpreter, every import after that fails
as it would then, and a request of each dialect, to an upstream of each, must still get its
HTTP answer, through an upstream's error with a Retry-After date (`openai.status` reads it
with ``email.utils``) and through a streamed answer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = r"""
import importlib.abc, json, sys
from svir_proto.gateway import GatewayConfig, GatewaySession, GatewayState
from svir_proto.gateway.session import Work  # (loaded before imports fail)
from tests.gateway.sansio import opened
from svir_proto.llmstream.negotiate import ACCEPT_LLM_STREAM
from svir_proto.openai import Endpoint

states = {
    dialect: GatewayState(
        GatewayConfig(
            upstream=Endpoint.parse("http://127.0.0.1:1"),
            upstream_dialect=dialect,
            allowed_hosts=frozenset({"x"}),
        ),
        new_id=lambda: "r-1",
    )
    for dialect in ("chat", "messages", "responses", "gemini")
}


class NoDescriptors(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        raise OSError(24, "Too many open files", name)


sys.meta_path.insert(0, NoDescriptors())
user = [{"role": "user", "content": "hi"}]
asks = {
    "chat": ("/v1/chat/completions", {"model": "m", "messages": user, "stream": True}, ""),
    "chat-whole": ("/v1/chat/completions", {"model": "m", "messages": user}, ""),
    "llm-stream": (
        "/v1/chat/completions",
        {"model": "m", "messages": user, "stream": True},
        f"Accept: {ACCEPT_LLM_STREAM}\r\n",
    ),
    "messages": (
        "/v1/messages",
        {"model": "m", "max_tokens": 9, "messages": user, "stream": True},
        "",
    ),
    "messages-whole": ("/v1/messages", {"model": "m", "max_tokens": 9, "messages": user}, ""),
    "responses": ("/v1/responses", {"model": "m", "input": "hi", "stream": True}, ""),
    "responses-whole": ("/v1/responses", {"model": "m", "input": "hi"}, ""),
}
error = json.dumps({"error": {"message": "slow down", "type": "rate_limit_error"}}).encode()
refused = (
    b"HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\n"
    b"Retry-After: Wed, 21 Oct 2099 07:28:00 GMT\r\n"
    b"Content-Length: %d\r\n\r\n" % len(error) + error
)
answered = 0
for dialect, state in states.items():
    for name, (path, doc, extra) in asks.items():
        body = json.dumps(doc).encode()
        head = (
            f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{extra}"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        s = GatewaySession(state, 0.0)
        out = opened(s, head + body)
        out += s.upstream_data(refused, 0.0)
        assert out[:10] in (b"HTTP/1.1 4", b"HTTP/1.1 5"), (dialect, name, out[:300])
        answered += 1
print("answered", answered)
"""


def test_every_dialect_is_answered_when_no_module_can_be_loaded() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).parents[2],
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["answered", str(4 * 7)]
