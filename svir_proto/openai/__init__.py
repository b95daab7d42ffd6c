"""The OpenAI-compatible Chat Completions dialect (wire reference: every server's quirks)."""

from __future__ import annotations

from . import stream
from ._toolcalls import DEFAULT_MAX_TOOL_CALLS, ToolCallError
from .stream import *  # noqa: F403

__all__ = ["DEFAULT_MAX_TOOL_CALLS", "ToolCallError", *stream.__all__]
