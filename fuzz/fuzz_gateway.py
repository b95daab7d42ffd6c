"""Atheris target for `GatewayConnection`'s request side: ``python fuzz/fuzz_gateway.py CORPUS
fuzz/corpus/gateway``.

Whatever a client sends, the gateway must not raise (a bad request is a 4xx `Reply`, never an
exception), and the events must not depend on how the bytes were split. Seeds: requests of both
dialects, chunked and not, and the gateway's refusals.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import check, fuzz

from svir_proto import GatewayConnection


def make() -> GatewayConnection:
    return GatewayConnection(token=None, max_body=4096, max_head_size=1024)


def test_one_input(data: bytes) -> None:
    check(make, data)


if __name__ == "__main__":
    fuzz(test_one_input)
