"""Record what llama.cpp answers on ``POST /v1/responses`` for the Responses cases of
`tests.live.cases`, as conformance fixtures for the offline suite:

    .venv/bin/python -m tests.live.record_responses

As `tests.live.record` does for Chat Completions: it starts llama-server, sends each request
with the standard library's http.client (not our code: the bytes are the server's, unchanged)
and writes under tests/conformance/responses/, named with the build:

- ``BUILD-NAME.sse``: a streamed body, with ``BUILD-NAME.json`` giving its source, the decoder
  options the request implies, and the expected events and result (produced by the decoder,
  then read by hand against the API reference before committing);
- ``BUILD-NAME.error.json``: an error response (status, content type, body) and the failure
  kind it must be typed as;
- ``BUILD-NAME.response.json``: a non-streamed answer (``stream: false``): its body.
"""

from __future__ import annotations

import http.client
import json
import sys
from typing import Any

from svir_proto.openai import Endpoint, body_outcome
from svir_proto.responses import ResponsesRequest, ResponsesStreamDecoder, responses_target
from tests.conformance.openai_results import summary
from tests.helpers import CONFORMANCE
from tests.live import cases
from tests.live.conftest import llama_server
from tests.live.record import SOURCE

OUT = CONFORMANCE / "responses"


def fetch(base: str, request: ResponsesRequest) -> tuple[int, str, bytes]:
    ep = Endpoint.parse(base)
    conn = http.client.HTTPConnection(ep.host, ep.port, timeout=120)
    body = request.body()
    headers = dict(ep.headers(content_length=body.content_length))
    conn.request("POST", responses_target(ep), body=body.read(), headers=headers)
    response = conn.getresponse()
    data = response.read()  # http.client undoes the chunked framing: the body, byte for byte
    conn.close()
    return response.status, response.getheader("Content-Type") or "", data


def options(request: ResponsesRequest) -> dict[str, Any]:
    return {"declared_tools": sorted(request.tool_names)} if request.tool_names else {}


def write(name: str, data: dict[str, Any]) -> None:
    (OUT / name).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", "utf-8")


def source(name: str) -> str:
    return (
        SOURCE.format(name=name)
        .replace("tests/live/record.py", "tests/live/record_responses.py")
        .replace("cases.py ", "cases.py (the Responses cases) ")
        + " (POST /v1/responses)"
    )


def main() -> int:
    paths = llama_server.installed()
    if paths is None:
        return 1
    OUT.mkdir(exist_ok=True)
    build = llama_server.BUILD
    with llama_server.LlamaServer(*paths, ctx=512) as server:
        for name, request in cases.RESPONSES_STREAMS.items():
            status, media, body = fetch(server.base_url, request)
            if status != 200 or not media.startswith("text/event-stream"):
                raise RuntimeError(f"{name}: HTTP {status} {media}: {body[:200]!r}")
            (OUT / f"{build}-{name}.sse").write_bytes(body)
            opts = options(request)
            decoder = ResponsesStreamDecoder(**opts)
            events = decoder.feed(body) + decoder.close()
            expected = summary(events, decoder.result)
            write(
                f"{build}-{name}.json",
                {"source": source(name), "options": opts, "expected": expected},
            )
            print(f"{name}: {len(body)} bytes, {decoder.result.finish_raw}", file=sys.stderr)
        for name, request in cases.RESPONSES_WHOLES.items():
            status, media, body = fetch(server.base_url, request)
            if status != 200 or not media.startswith("application/json"):
                raise RuntimeError(f"{name}: HTTP {status} {media}: {body[:200]!r}")
            record = {"source": source(name), "body": body.decode("utf-8")}
            write(f"{build}-{name}.response.json", record)
            print(f"{name}: {len(body)} bytes", file=sys.stderr)
        for name, request in cases.RESPONSES_FAILURES.items():
            status, media, body = fetch(server.base_url, request)
            failure = body_outcome(status, [("content-type", media)], body).failure
            record = {
                "source": source(name),
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
