"""The Google Gemini dialect: ``streamGenerateContent`` requests and streams (SSE, or one JSON
array without ``alt=sse``), both ways.

`GeminiRequest` (with `GeminiRequest.parse` for a server), `GeminiStreamDecoder` (a client),
`GeminiStreamEncoder` (a gateway answering Gemini clients) and `generate_content_response` (its
whole answer, for ``:generateContent``), `headers`, `target`, `is_target` and `parse_target`
(the model is in the path), the failures (`body_outcome`, `error_status`, `error_body`), and
`to_hub`/`from_hub` (the neutral request). A vendor dialect's names stay in its package:
``from svir_proto.gemini import ...``.
"""

from __future__ import annotations

from . import answer, encoder, endpoint, hub, models, parts, request, status, stream
from .answer import *  # noqa: F403
from .encoder import *  # noqa: F403
from .endpoint import *  # noqa: F403
from .hub import *  # noqa: F403
from .models import *  # noqa: F403
from .parts import *  # noqa: F403
from .request import *  # noqa: F403
from .status import *  # noqa: F403
from .stream import *  # noqa: F403

__all__ = [
    *answer.__all__,
    *encoder.__all__,
    *endpoint.__all__,
    *hub.__all__,
    *models.__all__,
    *parts.__all__,
    *request.__all__,
    *status.__all__,
    *stream.__all__,
]
