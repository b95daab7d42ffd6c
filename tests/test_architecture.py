"""The invariants of ARCHITECTURE.md that code can check: no I/O in the core, honest exports."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import svir_proto

CORE = Path(svir_proto.__file__).resolve().parent
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
    "urllib",
    "http",
}
# cli.py is the one core module allowed to reach the transports (ARCHITECTURE.md module map).
ALLOWED_IO = {"cli.py"}


def core_files() -> list[Path]:
    return sorted(
        p
        for p in CORE.rglob("*.py")
        if "transports" not in p.relative_to(CORE).parts and p.name not in ALLOWED_IO
    )


def imported_roots(tree: ast.AST) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_core_files_are_found() -> None:
    names = {p.name for p in core_files()}
    assert {"sse.py", "events.py", "errors.py"} <= names


@pytest.mark.parametrize("path", core_files(), ids=lambda p: str(p.relative_to(CORE)))
def test_core_imports_no_io(path: Path) -> None:
    tree = ast.parse(path.read_text("utf-8"))
    bad = imported_roots(tree) & FORBIDDEN
    assert not bad, f"{path.name} imports {bad}: the core must stay free of I/O"
    for node in ast.walk(tree):  # nor reaches for the OS's randomness
        if isinstance(node, ast.Attribute) and node.attr == "urandom":
            pytest.fail(f"{path.name} calls urandom")


def test_the_scan_catches_an_import() -> None:
    assert imported_roots(ast.parse("import time\nfrom socket import socket")) == {"time", "socket"}


def public_modules() -> list[str]:
    names = ["svir_proto"]
    for info in pkgutil.walk_packages(svir_proto.__path__, "svir_proto."):
        leaf = info.name.rsplit(".", 1)[-1]
        if not leaf.startswith("_") and ".transports" not in info.name and leaf != "cli":
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
    for name in public_modules()[1:]:
        module = importlib.import_module(name)
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
