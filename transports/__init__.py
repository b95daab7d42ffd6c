"""Transports: move bytes between a socket (blocking, anyio, httpcore) and the sans-IO core.

A transport reads on ``NEED_DATA``, writes what ``send`` returned, signals end of body, and
applies timeouts and cancellation; it never parses or decides (STYLE.md section 1). The
transports themselves arrive with the live-chat issue; this package exists so that the
distribution's layout (``svir_proto.transports`` built from this folder) is fixed and tested.
"""

from __future__ import annotations

__all__: list[str] = []
