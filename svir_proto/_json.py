"""The JSON parser: orjson when it is installed (the ``fast`` extra), the standard library
otherwise. Both take ``bytes``, ``bytearray`` or ``str``.

Decoders read ``loads`` from this module when they are constructed, so a test can switch
backends with `use` and exercise both paths in one process.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from types import ModuleType
from typing import Literal

__all__ = ["BACKEND", "loads", "use"]

Backend = Literal["orjson", "json"]
Loads = Callable[[bytes | bytearray | str], object]

orjson: ModuleType | None
try:
    import orjson
except ImportError:  # pragma: no cover - exercised by a subprocess test without orjson
    orjson = None

BACKEND: Backend = "orjson" if orjson is not None else "json"
loads: Loads = orjson.loads if orjson is not None else json.loads


def use(backend: Backend) -> None:
    """Select the parser that decoders constructed from now on will use."""
    global BACKEND, loads
    if backend == "orjson":
        if orjson is None:
            raise ValueError("orjson is not installed (pip install 'svir-proto[fast]')")
        loads = orjson.loads
    elif backend == "json":
        loads = json.loads
    else:
        raise ValueError(f"backend must be 'orjson' or 'json', not {backend!r}")
    BACKEND = backend
