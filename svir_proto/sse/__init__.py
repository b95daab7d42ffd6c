"""Server-sent events: bytes to events (`SSEDecoder`) and events to bytes (`SSEEncoder`).

- `svir_proto.sse.framer`: the WHATWG rules from bytes to raw items, once for every decoder
  (`SSEFramer`), with the fast lanes for what LLM servers send; the rules are listed there.
- `svir_proto.sse.decoder`: `SSEDecoder`, the framer plus each event's data as text.
- `svir_proto.sse.encoder`: `SSEEncoder`, for servers and the gateway.

No module here does I/O.
"""

from __future__ import annotations

from .decoder import ServerSentEvent, SSEComment, SSEDecoder, SSEItem
from .encoder import SSEEncoder
from .framer import DEFAULT_MAX_EVENT_SIZE, EndOfStream, SSEFramer
from .framer import Errors as Errors  # for the dialect decoders, which share the framer
from .framer import RawItem as RawItem

__all__ = [
    "DEFAULT_MAX_EVENT_SIZE",
    "EndOfStream",
    "SSEComment",
    "SSEDecoder",
    "SSEEncoder",
    "SSEFramer",
    "SSEItem",
    "ServerSentEvent",
]
