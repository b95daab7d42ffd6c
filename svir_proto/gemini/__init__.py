"""The Google Gemini dialect: ``streamGenerateContent?alt=sse`` requests and streams, both ways.

`GeminiRequest` (with `GeminiRequest.parse` for a server), `GeminiStreamDecoder` (a client),
`GeminiStreamEncoder` (a gateway answering Gemini clients), the failures of `status`, and
`svir_proto.gemini.hub` (``to_hub``/``from_hub``: the neutral request).
"""

from __future__ import annotations

from . import encoder, endpoint, hub, parts, request, status, stream
from .encoder import *  # noqa: F403
from .endpoint import *  # noqa: F403
from .hub import *  # noqa: F403
from .parts import *  # noqa: F403
from .request import *  # noqa: F403
from .status import *  # noqa: F403
from .stream import *  # noqa: F403

__all__ = [
    *encoder.__all__,
    *endpoint.__all__,
    *hub.__all__,
    *parts.__all__,
    *request.__all__,
    *status.__all__,
    *stream.__all__,
]
