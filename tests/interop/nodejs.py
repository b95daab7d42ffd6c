"""Running the Node clients of tests/interop/node (the Vercel AI SDK, eventsource-parser).

The packages are installed by scripts/install-node-deps (``.ci/run`` runs it), at the versions
tests/interop/node/package-lock.json pins; it leaves a stamp with the hash of package.json and
the lock file in node_modules. Without Node 20 or newer, or without that stamp (nothing
installed, or installed from another lock file), a test that needs them is skipped with the
reason, and fails under CI (``CI`` set): CI must never pass without having run the clients.

Each script takes a JSON array of specs (each with an ``id``) as its one argument and prints
one JSON object per spec, one a line, in order; `run` gives them by ``id``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Final

import pytest

NODE_DIR: Final = Path(__file__).parent / "node"
STAMP: Final = NODE_DIR / "node_modules" / ".svir-installed"
MIN_NODE: Final = 20
TIMEOUT: Final = 300.0
"""Seconds a script may run: generous, for llama.cpp on a loaded machine; no test relies on
it except to stop a hung client."""


def installed_hash() -> str:
    """The hash scripts/install-node-deps writes to `STAMP` (it computes the same)."""
    digest = hashlib.sha256()
    for name in ("package.json", "package-lock.json"):
        digest.update((NODE_DIR / name).read_bytes())
    return digest.hexdigest()


def missing() -> str | None:
    """Why the Node clients cannot run here, or ``None`` when they can."""
    node = shutil.which("node")
    if node is None:
        return "node is not installed (Node 20 or newer runs tests/interop/node)"
    done = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=60)
    version = done.stdout.strip().lstrip("v")
    if not version.split(".")[0].isdigit() or int(version.split(".")[0]) < MIN_NODE:
        return f"node {version or '?'} is too old: the interop clients need Node {MIN_NODE}+"
    if not STAMP.exists() or STAMP.read_text().strip() != installed_hash():
        return (
            "the Node packages of tests/interop/node are not installed (or are not those "
            "package-lock.json pins): run scripts/install-node-deps"
        )
    return None


def require() -> str:
    """The path of ``node``; skip the test (fail it under CI) when the clients cannot run."""
    reason = missing()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI runs the Node interop clients: {reason}")
        pytest.skip(reason)
    node = shutil.which("node")
    assert node is not None
    return node


def run(script: str, specs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Run ``node tests/interop/node/SCRIPT SPECS``; its results by their spec's ``id``. The
    process is killed in a ``finally`` whatever happens."""
    node = require()
    proc = subprocess.Popen(
        [node, str(NODE_DIR / script), json.dumps(specs)],
        cwd=NODE_DIR,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, f"{script} exited with {proc.returncode}: {err.decode()[-4000:]}"
    results = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    assert [r["id"] for r in results] == [s["id"] for s in specs], err.decode()[-4000:]
    return {r["id"]: r for r in results}
