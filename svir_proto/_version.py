"""The distribution's version, in one place (``__init__`` and the User-Agent read it)."""

from __future__ import annotations

VERSION = "0.1.0"
