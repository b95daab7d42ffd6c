"""Names of release 0.1 that were renamed, kept for one release: each warns when it is used.

A module that renamed something defines ``__getattr__ = renamed(__name__, {old: new}, globals())``
(PEP 562), so the old name still resolves, to the very same object, with a `DeprecationWarning`
that names the new one.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__: list[str] = []


def renamed(
    module: str, names: Mapping[str, str], namespace: Mapping[str, Any]
) -> Callable[[str], object]:
    """A module ``__getattr__`` that resolves each old name in ``names`` to its new one."""

    def __getattr__(name: str) -> object:
        new = names.get(name)
        if new is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(
            f"{module}.{name} is now {new}; the old name goes in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return namespace[new]

    return __getattr__
