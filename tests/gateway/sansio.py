"""A gateway's sans-IO session driven by hand, for tests that need no sockets."""

from __future__ import annotations

from typing import Any


def opened(s: Any, data: bytes) -> bytes:
    """A request on a sans-IO session, prepared and connected upstream: what the client got."""
    from svir_proto.gateway.session import Work

    out: bytes = s.client_data(data, 0.0)
    for action in list(s.actions):
        if isinstance(action, Work):
            out += s.worked(action.run(), 0.0)
    s.actions.clear()
    out += s.upstream_connected(0.0)
    s.actions.clear()
    return out
