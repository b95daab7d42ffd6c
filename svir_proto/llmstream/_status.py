"""An LLM-Stream server's HTTP errors, both directions: the draft's error body is OpenAI's
error object (draft 7.3), whose ``code`` is the draft's error code.

Rule 1: `error_body` writes a failure so, with what the draft's code does not say (the
    failure's own kind and code) under ``vendor:svir`` in the object, as on an ``error``
    event (`svir_proto.llmstream._wire`): a gateway in front of a svir server reads them back.
Rule 2: `body_outcome` reads a body as OpenAI's reading does (`svir_proto.openai.status`),
    and then a svir peer's ``vendor:svir`` kind and code (`_wire.failure_in`): review 64, a
    Chat client's ``timeout`` came through two gateways as ``internal_error``. A success that
    is no stream stays one, whatever its body says.

No I/O.
"""

from __future__ import annotations

import attrs

from .._json import canonical
from ..errors import Failure, FailureKind
from ..events import RequestFailed
from ..openai import status as openai
from ._wire import SVIR_EXTENSION, error_code, failure_in, failure_out

__all__: list[str] = []  # (the dialect registry takes them: `svir_proto.dialects`)

error_status = openai.error_status
"""The HTTP status for a failure: OpenAI's (the draft's errors are OpenAI's shape)."""


def error_body(failure: Failure) -> bytes:
    """Rule 1."""
    return openai.error_json(
        failure.message,
        error_code(failure.kind),
        kind=failure.kind.value,
        **{SVIR_EXTENSION: failure_out(failure)},
    )


def body_outcome(
    status: int, headers: openai.Headers, body: bytes, *, now: float | None = None
) -> RequestFailed:
    """Rule 2."""
    failed = openai.body_outcome(status, headers, body, now=now)
    failure = failed.failure
    if failure.kind is FailureKind.NOT_A_STREAM:
        return failed
    try:
        doc = canonical(body[: openai.MAX_ERROR_BODY])
    except (ValueError, RecursionError):
        return failed
    error = doc.get("error") if isinstance(doc, dict) else None
    ext = error.get(SVIR_EXTENSION) if isinstance(error, dict) else None
    if ext is None:
        return failed
    kind, code = failure_in(ext, failure.kind, failure.code)
    return RequestFailed(failure=attrs.evolve(failure, kind=kind, code=code))
