"""The LLM-Stream 1.0 dialect (draft-spk-agentproto-llm-stream-00): requests, events,
negotiation."""

from __future__ import annotations

from .._deprecated import renamed
from . import encoder, negotiate, request, stream
from .encoder import *  # noqa: F403
from .negotiate import *  # noqa: F403
from .request import *  # noqa: F403
from .stream import *  # noqa: F403

__all__ = [*encoder.__all__, *negotiate.__all__, *request.__all__, *stream.__all__]
RENAMED = {"StreamDecoder": "LLMStreamDecoder", "StreamEncoder": "LLMStreamEncoder"}
__getattr__ = renamed(__name__, RENAMED, globals())
