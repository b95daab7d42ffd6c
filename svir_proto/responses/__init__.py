"""The OpenAI Responses API dialect (``POST /v1/responses``): requests, the stream decoder,
the stream encoder, and the hub adapter (`svir_proto.responses.hub`, not re-exported: every
dialect's hub module has the same two names)."""

from __future__ import annotations

from . import encoder, request, stream
from .encoder import *  # noqa: F403
from .request import *  # noqa: F403
from .stream import *  # noqa: F403

__all__ = [*encoder.__all__, *request.__all__, *stream.__all__]
