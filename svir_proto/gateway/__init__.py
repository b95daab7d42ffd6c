"""The gateway, sans-IO (draft section 7): `GatewayConnection` reads a client's requests and
writes its answers; `GatewaySession` joins it to the upstream requests it makes and decides
every deadline and bound (`GatewayConfig`). The servers in `svir_proto.transports.gateway`
only move bytes.
"""

from __future__ import annotations

from . import config, connection, session
from .config import *  # noqa: F403
from .connection import *  # noqa: F403
from .session import *  # noqa: F403

__all__ = [*config.__all__, *connection.__all__, *session.__all__]
