"""Transports: move bytes between a socket and the sans-IO core (`ClientConnection`,
`Exchange`), with timeouts, retries, keep-alive and cancellation.

Each transport is a module with the same API (a ``Client``, and for the socket ones
``stream_chat`` and ``list_models`` functions); import the one you use, so that only its
library is loaded:

==============================  ===========================================  ===================
module                          for                                          extra
==============================  ===========================================  ===================
`svir_proto.transports.blocking`  threads and scripts: ``socket`` and ``ssl``  none
`svir_proto.transports.anyio`     asyncio and trio                            ``async``/``trio``
`svir_proto.transports.httpcore`  httpcore's pools: HTTP/2, connection reuse  ``httpcore``
`svir_proto.transports.httpx`     your configured httpx client                ``httpx``
==============================  ===========================================  ===================

This package holds what they share: `Timeouts`, the stream objects (`ChatStream`,
`AsyncChatStream`), and the errors a transport raises (all `SvirError`, defined in
`svir_proto.errors`). A transport reads on ``NEED_DATA``, writes what ``send`` returned,
signals end of body, and applies timeouts and cancellation; it never parses or decides.
"""

from __future__ import annotations

from .._deprecated import renamed
from ..errors import (
    ConnectionFailedError,
    IncompleteStreamError,
    RequestFailedError,
    StaleConnection,
    StreamTimeout,
    SvirTransportError,
    TimeoutPhase,
)
from ._shared import DEFAULT_TIMEOUTS, AsyncChatStream, ChatStream, Timeouts, UploadProgress

__all__ = [
    "DEFAULT_TIMEOUTS",
    "AsyncChatStream",
    "ChatStream",
    "ConnectionFailedError",
    "IncompleteStreamError",
    "RequestFailedError",
    "StaleConnection",
    "StreamTimeout",
    "SvirTransportError",
    "TimeoutPhase",
    "Timeouts",
    "UploadProgress",
]

RENAMED = {"TransportError": "SvirTransportError", "ConnectError": "ConnectionFailedError"}
__getattr__ = renamed(__name__, RENAMED, globals())
