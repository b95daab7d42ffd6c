"""Atheris target for `LLMRequest.parse` (the server side of a request):
``python fuzz/fuzz_llmrequest.py CORPUS fuzz/corpus/llmrequest``.

Invariant: any bytes either parse, or raise `RequestError` (a `RemoteProtocolError` naming a
JSON path); a request that parses encodes to a body of its exact length that parses back to an
equal request.
"""

from __future__ import annotations

from svir_proto.llmstream import LLMRequest, RequestError


def test_one_input(data: bytes) -> None:
    try:
        request = LLMRequest.parse(data)
    except RequestError as exc:
        if not exc.path.startswith("$"):
            raise AssertionError(f"a request error without a JSON path: {exc}") from exc
        return
    body = request.body(piece_size=64)
    raw = body.read()
    assert len(raw) == body.content_length
    assert LLMRequest.parse(raw) == request


def main() -> None:
    import sys

    import atheris  # only the fuzzer needs it

    atheris.instrument_all()
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
