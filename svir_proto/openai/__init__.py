"""The OpenAI-compatible Chat Completions dialect (wire reference: every server's quirks)."""

from __future__ import annotations

from . import answer, encoder, endpoint, models, parts, request, retry, status, stream, watch
from ._toolcalls import DEFAULT_MAX_TOOL_CALLS, ToolCallError
from .answer import *  # noqa: F403
from .encoder import *  # noqa: F403
from .endpoint import *  # noqa: F403
from .models import *  # noqa: F403
from .parts import *  # noqa: F403
from .request import *  # noqa: F403
from .retry import *  # noqa: F403
from .status import *  # noqa: F403
from .stream import *  # noqa: F403
from .watch import *  # noqa: F403

__all__ = [
    "DEFAULT_MAX_TOOL_CALLS",
    "ToolCallError",
    *answer.__all__,
    *encoder.__all__,
    *endpoint.__all__,
    *models.__all__,
    *parts.__all__,
    *request.__all__,
    *retry.__all__,
    *status.__all__,
    *stream.__all__,
    *watch.__all__,
]
