"""Atheris target for a translating gateway's request side: ``python
fuzz/fuzz_gateway_dialects.py CORPUS fuzz/corpus/gateway_dialects``.

The input's first byte picks the upstream's dialect (chat, messages, responses, gemini,
llm-stream); the rest is what a client sends: any request on any route, so that Anthropic's,
the Responses API's and OpenAI's bodies are parsed and translated through the hub to another
dialect. Whatever
comes, the gateway must not raise (a bad body is a 400 naming its JSON path, an unknown route a
404), and the events must not depend on how the bytes were split. Seeds: a request of each
ingress to each upstream, and the refusals.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import check, fuzz

from svir_proto import GatewayConfig, GatewayConnection
from svir_proto.openai import Endpoint

UPSTREAMS = ("chat", "messages", "responses", "gemini", "llm-stream")
ENDPOINT = Endpoint.parse("http://upstream.invalid")


def make_for(upstream: str) -> GatewayConnection:
    config = GatewayConfig(
        upstream=ENDPOINT,
        upstream_dialect=upstream,
        max_body=8192,
        max_head_size=1024,  # type: ignore[arg-type]
    )
    return GatewayConnection(config)


def test_one_input(data: bytes) -> None:
    upstream = UPSTREAMS[data[0] % len(UPSTREAMS)] if data else "chat"
    check(lambda: make_for(upstream), data[1:])


if __name__ == "__main__":
    fuzz(test_one_input)
