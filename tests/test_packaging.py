"""The distribution's layout works three ways: editable install, the repo root, the wheel.

``svir_proto.transports`` is built from the top-level ``transports/`` folder (a ``package-dir``
mapping in pyproject.toml; ``svir_proto/transports`` is a symlink to it for the source tree).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import svir_proto.transports
from tests.helpers import ROOT

PROBE = (
    "import svir_proto, svir_proto.transports, svir_proto.sse, svir_proto.cli;"
    "print(svir_proto.__file__); print(svir_proto.transports.__file__)"
)


def test_editable_install_maps_transports_to_the_top_level_folder() -> None:
    assert Path(svir_proto.transports.__file__).resolve() == ROOT / "transports" / "__init__.py"


# A clean copy of the checkout: what git ignores (a build/ folder that would hide a package
# pyproject.toml forgot, the fuzzers' scratch corpora, which change while they run) left out.
CLEAN = shutil.ignore_patterns(
    ".venv",
    ".venv-*",
    ".git",
    "build",
    "*.egg-info",
    ".work",
    ".hypothesis",
    "*_cache",
    "__pycache__",
)


def test_runs_from_a_source_tree_without_install(tmp_path: Path) -> None:
    copy = tmp_path / "src"
    shutil.copytree(ROOT, copy, symlinks=True, ignore=CLEAN)
    env = {**os.environ, "PYTHONPATH": str(copy)}
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=copy, env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out[0].startswith(str(copy)), out
    assert Path(out[1]).resolve() == (copy / "transports" / "__init__.py").resolve()


def source_modules() -> set[str]:
    """Every module of the package as the source tree holds it, as wheel paths."""
    core = ROOT / "svir_proto"
    found = {f"svir_proto/{p.relative_to(core)}" for p in core.rglob("*.py")}
    found |= {f"svir_proto/transports/{p.name}" for p in (ROOT / "transports").glob("*.py")}
    return {n for n in found if "__pycache__" not in n}


@pytest.mark.slow
def test_built_wheel_contains_and_imports_the_layout(tmp_path: Path) -> None:
    # Built from a clean copy: a build/ folder left in the checkout would hide a package that
    # pyproject.toml forgot (it did, for the cli and sse packages).
    copy = tmp_path / "src"
    shutil.copytree(ROOT, copy, symlinks=True, ignore=CLEAN)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(tmp_path),
            str(copy),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("svir_proto-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {
        "svir_proto/py.typed",
        "svir_proto/sse/framer.py",
        "svir_proto/cli/__init__.py",
    } <= names
    modules = {n for n in names if n.startswith("svir_proto/") and n.endswith(".py")}
    assert modules == source_modules()
    assert not any(n.startswith(("transports/", "tests/", "benchmarks/")) for n in names)
    env = {**os.environ, "PYTHONPATH": str(wheel)}
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out[0].startswith(str(wheel)), out
    assert out[1].startswith(str(wheel)), out
