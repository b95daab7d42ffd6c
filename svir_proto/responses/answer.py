"""A whole answer as a Responses API ``response`` object: what a Responses client that asked for
no stream reads (openai-python's ``responses.create()``, the AI SDK's ``generateText``), from
any upstream's `Completion` (`svir_proto.answer`).

The object is the one the stream's last event carries (``response.completed``, or
``response.incomplete`` with its ``incomplete_details``): the answer is replayed through the
stream encoder (`svir_proto.answer.replay`), whose rules make its output items, status and
usage, and whose final object is the answer, so that both ways of asking get the same response.
No I/O here.
"""

from __future__ import annotations

import sys

from .._json import dumps
from ..answer import replay
from ..events import Completion
from .encoder import ResponsesStreamEncoder
from .request import ResponsesRequest

__all__ = ["response"]


def response(
    result: Completion,
    *,
    response_id: str,
    model: str,
    created: int,
    request: ResponsesRequest | None = None,
    repeat_instructions: bool = True,
    lost: list[str] | None = None,
) -> bytes:
    """The ``response`` object for ``result``, as JSON; with ``request``, repeating its
    options (``tools``, ``tool_choice``, ``instructions``...), as the API does. ``lost``
    receives what the encoder could not write (`ResponsesStreamEncoder.lost`)."""
    encoder = ResponsesStreamEncoder(
        model=model,
        response_id=response_id,
        created=created,
        request=request,
        repeat_instructions=repeat_instructions,
        max_output_size=sys.maxsize,  # the answer is held already: nothing to bound
    )
    for event in replay(result):
        encoder.encode(event)
    if lost is not None:
        lost += encoder.lost
    return dumps(encoder.response())
