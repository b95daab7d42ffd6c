"""Atheris target for the model listing of every API through `ClientConnection`: ``python
fuzz/fuzz_models.py CORPUS fuzz/corpus/models``.

The connection has asked for a listing (`ModelsRequest`); the input's first byte chooses whose
API's (OpenAI's, Anthropic's, Gemini's, or one of their models), the rest is whatever the
server answers. Seeds: each API's listing and one of its models as a whole response, a page of
a longer listing, a 404 in the API's shape, and a body of another API's shape.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import check, fuzz

from svir_proto import ClientConnection, ModelsRequest
from svir_proto.openai import Endpoint

ENDPOINT = Endpoint.parse("http://127.0.0.1:1/v1", api_key="k")
ASKED = [
    ModelsRequest(),
    ModelsRequest(model="m"),
    ModelsRequest(dialect="messages"),
    ModelsRequest(dialect="messages", model="m"),
    ModelsRequest(dialect="gemini"),
    ModelsRequest(dialect="gemini", model="m"),
]


def test_one_input(data: bytes) -> None:
    if not data:
        return
    asked = ASKED[data[0] % len(ASKED)]

    def make() -> ClientConnection:
        conn = ClientConnection(ENDPOINT, max_head_size=1024, max_models_body=4096)
        for _ in conn.send(asked):
            pass
        return conn

    check(make, data[1:])


if __name__ == "__main__":
    fuzz(test_one_input)
