"""The distribution as a user gets it: the wheel and the sdist built from a clean copy, each
installed into a clean virtual environment with no extra and with each extra alone, and there
``svir --help``, ``svir decode``, and the transport that extra is for, against our replay
server; the examples type-checked with ``mypy --strict`` against the installed wheel.

Installing needs the package index (the dependencies: attrs, h11 and each extra's); the venvs
share pip's cache, so a second run is quick.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.test_packaging import CLEAN
from tests.transports.server import ReplayServer

pytestmark = pytest.mark.slow

RECORDING = ROOT / "examples" / "tool-calls.sse"

# What each extra must make work, run in its venv with the replay server's base URL as argv[1].
CHAT = (
    "from svir_proto.openai import ChatRequest, UserMessage\n"
    "REQ = ChatRequest(model='m', messages=[UserMessage(content='hi')])\n"
)
RUNS = {
    "": CHAT + "import sys\n"
    "from svir_proto.transports.blocking import stream_chat\n"
    "with stream_chat(sys.argv[1], REQ) as s:\n"
    "    list(s)\n"
    "assert s.result.complete, s.result\n"
    "for module, extra in [('anyio', 'async'), ('httpcore', 'httpcore'), ('httpx', 'httpx')]:\n"
    "    try:\n"
    "        __import__('svir_proto.transports.' + module)\n"
    "    except ModuleNotFoundError as exc:\n"
    '        assert f"svir-proto[{extra}]" in str(exc), exc\n'
    "    else:\n"
    "        raise AssertionError(module + ' imported without its extra')\n",
    "fast": "from svir_proto import _json\nassert _json.BACKEND == 'orjson', _json.BACKEND\n",
    "async": CHAT + "import sys, anyio\n"
    "from svir_proto.transports.anyio import stream_chat\n"
    "async def main() -> None:\n"
    "    async with stream_chat(sys.argv[1], REQ) as s:\n"
    "        [e async for e in s]\n"
    "    assert s.result.complete\n"
    "anyio.run(main)\n",
    "trio": CHAT + "import sys, anyio\n"
    "from svir_proto.transports.anyio import stream_chat\n"
    "async def main() -> None:\n"
    "    async with stream_chat(sys.argv[1], REQ) as s:\n"
    "        [e async for e in s]\n"
    "    assert s.result.complete\n"
    "anyio.run(main, backend='trio')\n",
    "httpcore": CHAT + "import sys, anyio, httpcore, h2\n"
    "from svir_proto.transports.httpcore import AsyncClient, Client\n"
    "with Client(sys.argv[1], httpcore.ConnectionPool(http2=True)) as c:\n"
    "    with c.stream_chat(REQ) as s:\n"
    "        list(s)\n"
    "    assert s.result.complete\n"
    "async def main() -> None:\n"
    "    async with AsyncClient(sys.argv[1]) as c, c.stream_chat(REQ) as s:\n"
    "        [e async for e in s]\n"
    "    assert s.result.complete\n"
    "anyio.run(main)\n",
    "httpx": CHAT + "import sys, anyio, httpx\n"
    "from svir_proto.transports.httpx import AsyncClient, Client\n"
    "with httpx.Client() as http, Client(sys.argv[1], http).stream_chat(REQ) as s:\n"
    "    list(s)\n"
    "assert s.result.complete\n"
    "async def main() -> None:\n"
    "    async with AsyncClient(sys.argv[1]) as c, c.stream_chat(REQ) as s:\n"
    "        [e async for e in s]\n"
    "    assert s.result.complete\n"
    "anyio.run(main)\n",
    "http2": "import h2, httpcore\nhttpcore.ConnectionPool(http2=True).close()\n",
}


@pytest.fixture(scope="module")
def server() -> Iterator[ReplayServer]:
    s = ReplayServer()
    yield s
    s.close()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The wheel and the sdist, built from a clean copy of the checkout."""
    tmp = tmp_path_factory.mktemp("dist")
    copy = tmp / "src"
    shutil.copytree(ROOT, copy, symlinks=True, ignore=CLEAN)
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp), str(copy)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp.glob("svir_proto-*.whl")
    (sdist,) = tmp.glob("svir_proto-*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


def venv(where: Path, target: str) -> Path:
    """A clean venv at ``where`` with ``target`` (a wheel or sdist, with extras) installed."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", target],
        check=True,
        capture_output=True,
        timeout=900,
    )
    return python


def svir_works(python: Path, server: ReplayServer, cwd: Path) -> None:
    svir = python.parent / "svir"
    assert "decode" in subprocess.run([svir, "--help"], capture_output=True, text=True).stdout
    decoded = subprocess.run(
        [svir, "decode", str(RECORDING)], capture_output=True, text=True, cwd=cwd
    )
    assert decoded.returncode == 0, decoded.stderr
    assert "call call-a: lookup(" in decoded.stdout


def test_the_wheel_and_the_sdist_carry_the_license_and_no_stray_tests(
    built: dict[str, Path],
) -> None:
    names = set(zipfile.ZipFile(built["wheel"]).namelist())
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), sorted(names)
    assert {"svir_proto/docs/openai-chat-completions-wire.md", "svir_proto/py.typed"} <= names
    with tarfile.open(built["sdist"]) as sdist:
        members = {m.split("/", 1)[1] for m in sdist.getnames() if "/" in m}
    assert "LICENSE" in members
    assert not any(m.startswith(("tests/", "fuzz/", "benchmarks/")) for m in members), members
    assert "examples/agent.py" in members
    meta = zipfile.ZipFile(built["wheel"]).read(
        next(n for n in names if n.endswith(".dist-info/METADATA"))
    )
    assert b"Project-URL: " in meta
    assert b"Classifier: Typing :: Typed" in meta
    assert b"License-Expression: MIT" in meta


@pytest.mark.parametrize("extra", sorted(RUNS))
def test_the_wheel_with_each_extra_alone(
    built: dict[str, Path], server: ReplayServer, tmp_path: Path, extra: str
) -> None:
    target = f"{built['wheel']}[{extra}]" if extra else str(built["wheel"])
    python = venv(tmp_path / "venv", target)
    svir_works(python, server, tmp_path)
    script = tmp_path / "check.py"
    script.write_text(RUNS[extra])
    out = subprocess.run(
        [python, str(script), server.base("replay", "wire-3.3-tool-calls", "chunked")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr


def test_the_sdist_builds_and_runs(
    built: dict[str, Path], server: ReplayServer, tmp_path: Path
) -> None:
    python = venv(tmp_path / "venv", str(built["sdist"]))
    svir_works(python, server, tmp_path)


def test_the_examples_type_check_against_the_installed_wheel(
    built: dict[str, Path], tmp_path: Path
) -> None:
    python = venv(tmp_path / "venv", f"{built['wheel']}[trio,httpx]")
    examples = sorted(str(p) for p in (ROOT / "examples").glob("*.py"))
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--python-executable", str(python), *examples],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # not the checkout: svir_proto must come from the venv's wheel
    )
    assert out.returncode == 0, out.stdout + out.stderr
