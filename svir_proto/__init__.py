"""svir-proto: a sans-IO protocol engine for streaming LLM inference over HTTP.

The core turns response bytes into typed events (`svir_proto.events`) and typed requests into
bytes. It never does I/O: transports in `svir_proto.transports` move the bytes.
"""

from __future__ import annotations

from . import (
    body,
    connection,
    errors,
    events,
    exchange,
    gateway,
    gemini,
    hub,
    llmstream,
    openai,
    speed,
    sse,
    translate,
)
from ._deprecated import renamed
from ._pull import NEED_DATA, NeedData
from ._version import VERSION
from .body import *  # noqa: F403
from .connection import *  # noqa: F403
from .errors import *  # noqa: F403
from .events import *  # noqa: F403
from .exchange import *  # noqa: F403
from .gateway import *  # noqa: F403
from .gemini import *  # noqa: F403
from .hub import *  # noqa: F403
from .llmstream import *  # noqa: F403
from .openai import *  # noqa: F403
from .speed import *  # noqa: F403
from .sse import *  # noqa: F403
from .translate import *  # noqa: F403

__version__ = VERSION


__getattr__ = renamed(__name__, {**errors.RENAMED, **llmstream.RENAMED}, globals())


__all__ = [
    "NEED_DATA",
    "NeedData",
    "__version__",
    *body.__all__,
    *connection.__all__,
    *errors.__all__,
    *events.__all__,
    *exchange.__all__,
    *gateway.__all__,
    *gemini.__all__,
    *hub.__all__,
    *llmstream.__all__,
    *openai.__all__,
    *speed.__all__,
    *sse.__all__,
    *translate.__all__,
]
