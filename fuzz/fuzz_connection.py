"""Atheris target for `ClientConnection`'s response side: ``python fuzz/fuzz_connection.py CORPUS
fuzz/corpus/connection``.

The connection has sent a chat request; the input is whatever the server answers (a head and a
body in any framing, or garbage). Seeds: whole responses in each framing, error statuses, an
informational response, a cut body.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import check, fuzz

from svir_proto import ClientConnection
from svir_proto.openai import ChatRequest, Endpoint, UserMessage

ENDPOINT = Endpoint.parse("http://127.0.0.1:1")
REQUEST = ChatRequest(model="m", messages=[UserMessage(content="hi")], include_usage=True)


def make() -> ClientConnection:
    conn = ClientConnection(
        ENDPOINT, max_head_size=1024, max_event_size=4096, max_result_size=4096, max_error_body=512
    )
    for _ in conn.send(REQUEST):
        pass
    return conn


def test_one_input(data: bytes) -> None:
    check(make, data)


if __name__ == "__main__":
    fuzz(test_one_input)
