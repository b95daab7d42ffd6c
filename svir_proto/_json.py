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

__all__ = ["BACKEND", "dumps", "loads", "use"]

Backend = Literal["orjson", "json"]
Loads = Callable[[bytes | bytearray | str], object]

orjson: ModuleType | None
try:
    import orjson
except ImportError:  # pragma: no cover - exercised by a subprocess test without orjson
    orjson = None

BACKEND: Backend = "orjson" if orjson is not None else "json"
loads: Loads = orjson.loads if orjson is not None else json.loads


def dumps(value: object) -> bytes:
    """Compact JSON as UTF-8 (non-ASCII written as itself): orjson when it is installed, whose
    bytes equal the standard library's for every valid string, else the standard library (and
    for what orjson refuses, a lone surrogate). For the encoders' hot paths."""
    if orjson is not None:
        try:
            return orjson.dumps(value)  # type: ignore[no-any-return]
        except TypeError:
            pass
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8", "surrogatepass")


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
