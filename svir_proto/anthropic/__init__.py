"""The Anthropic Messages API dialect: requests, the stream both ways, error bodies, the hub."""

from __future__ import annotations

from . import answer, encoder, hub, models, request, status, stream
from .answer import *  # noqa: F403
from .encoder import *  # noqa: F403
from .hub import *  # noqa: F403
from .models import *  # noqa: F403
from .request import *  # noqa: F403
from .status import *  # noqa: F403
from .stream import *  # noqa: F403

__all__ = [
    *answer.__all__,
    *encoder.__all__,
    *hub.__all__,
    *models.__all__,
    *request.__all__,
    *status.__all__,
    *stream.__all__,
]
