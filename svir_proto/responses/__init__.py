"""The OpenAI Responses API dialect (``POST /v1/responses``): requests, the stream both ways,
a whole answer, the hub."""

from __future__ import annotations

from . import answer, encoder, hub, request, stream
from .answer import *  # noqa: F403
from .encoder import *  # noqa: F403
from .hub import *  # noqa: F403
from .request import *  # noqa: F403
from .stream import *  # noqa: F403

__all__ = [*answer.__all__, *encoder.__all__, *hub.__all__, *request.__all__, *stream.__all__]
