"""The invariants of ARCHITECTURE.md that code can check: no I/O in the core, honest exports."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import svir_proto

CORE = Path(svir_proto.__file__).resolve().parent
# urllib.parse only parses; urllib.request and http.client do I/O.
FORBIDDEN_MODULES = {"urllib.request", "urllib.response", "http.client", "http.server"}
FORBIDDEN = {
    "socket",
    "ssl",
    "select",
    "selectors",
    "asyncio",
    "trio",
    "anyio",
    "httpcore",
    "threading",
    "time",
    "random",
    "subprocess",
}
# The cli package is the one part of the core allowed to reach the transports (ARCHITECTURE.md
# module map), and the clock a person's screen needs.
ALLOWED_IO = {"cli", "transports"}


def core_files() -> list[Path]:
    return sorted(p for p in CORE.rglob("*.py") if not ALLOWED_IO & set(p.relative_to(CORE).parts))


def imported(tree: ast.AST) -> set[str]:
    """Every absolute module named by an import, and each of its parents."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            full = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            full = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        for name in full:
            parts = name.split(".")
            names |= {".".join(parts[: i + 1]) for i in range(len(parts))}
    return names


def test_core_files_are_found() -> None:
    names = {p.name for p in core_files()}
    assert {"framer.py", "events.py", "errors.py"} <= names


@pytest.mark.parametrize("path", core_files(), ids=lambda p: str(p.relative_to(CORE)))
def test_core_imports_no_io(path: Path) -> None:
    tree = ast.parse(path.read_text("utf-8"))
    bad = imported(tree) & (FORBIDDEN | FORBIDDEN_MODULES)
    assert not bad, f"{path.name} imports {bad}: the core must stay free of I/O"
    for node in ast.walk(tree):  # nor reaches for the OS's randomness
        if isinstance(node, ast.Attribute) and node.attr == "urandom":
            pytest.fail(f"{path.name} calls urandom")


def test_the_scan_catches_an_import() -> None:
    names = imported(
        ast.parse("import time\nfrom socket import socket\nfrom urllib import request")
    )
    assert {"time", "socket", "urllib.request"} <= names
    assert not imported(ast.parse("from urllib.parse import urlsplit")) & FORBIDDEN_MODULES


def public_modules() -> list[str]:
    names = ["svir_proto"]
    for info in pkgutil.walk_packages(svir_proto.__path__, "svir_proto."):
        leaf = info.name.rsplit(".", 1)[-1]
        if not leaf.startswith("_") and ".transports" not in info.name and ".cli" not in info.name:
            names.append(info.name)
    return names


@pytest.mark.parametrize("name", public_modules())
def test_all_matches_public_names(name: str) -> None:
    module = importlib.import_module(name)
    declared = getattr(module, "__all__", None)
    assert declared is not None, f"{name} has no __all__"
    assert len(set(declared)) == len(declared), f"{name}.__all__ has duplicates"
    for item in declared:
        assert hasattr(module, item), f"{name}.__all__ names {item}, which does not exist"
    defined_here = {
        n
        for n, v in vars(module).items()
        if not n.startswith("_") and getattr(v, "__module__", None) == name and isinstance(v, type)
    }
    missing = defined_here - set(declared)
    assert not missing, f"{name} defines public classes not in __all__: {missing}"


def test_package_reexports_every_public_module() -> None:
    # a vendor dialect's package keeps its names (svir_proto._DIALECTS); its modules, to it
    dialects = tuple(f"svir_proto.{d}" for d in svir_proto._DIALECTS)
    for name in public_modules()[1:]:
        module = importlib.import_module(name)
        if name in dialects:
            continue  # each has its own to_hub, Tool, body_outcome...: not flattened
        if name.count(".") > 1 and not name.endswith("__init__"):
            parent = importlib.import_module(name.rsplit(".", 1)[0])
            exported = set(getattr(parent, "__all__", ()))
        else:
            exported = set(svir_proto.__all__)
        assert set(module.__all__) <= exported, f"{name}: {set(module.__all__) - exported}"
        for item in module.__all__:
            assert getattr(svir_proto if name.count(".") == 1 else parent, item) is getattr(
                module, item
            )


def test_py_typed_ships() -> None:
    assert (CORE / "py.typed").is_file()
