"""What the gateway benchmark puts in front of its upstream, and how it measures them.

Each contender is its own process (or tree of them) listening on loopback: ``svir gateway`` on
plain asyncio, on uvloop (when it is installed) and on trio; nginx with ``proxy_buffering off``
when an ``nginx`` binary is found (its configuration written to a temporary directory, run in
the foreground with ``daemon off`` and ``master_process off``, so its one process is its
worker; its listen backlog raised from 511 to 4096, the upstream's, for a thousand connects at
once); LiteLLM's proxy when ``litellm`` can be imported by the Python it is given (the upstream
as an OpenAI-compatible model, and as the probes' model). The benchmark installs neither nginx
nor LiteLLM (``scripts/install-bench-peers`` does).

A contender's CPU is read from ``/proc/PID/stat`` (user and system time) for its processes
only, and its peak resident memory from ``VmHWM`` in ``/proc/PID/status``, reset before every
run by writing ``5`` to ``/proc/PID/clear_refs`` so each run's peak is its own.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

TICK = os.sysconf("SC_CLK_TCK")
NGINX_PATHS = ("/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx")


# -- /proc ------------------------------------------------------------------------------------


def descendants(pid: int) -> list[int]:
    """``pid`` and every live process below it."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, ()))
    return out


def cpu_seconds(pids: list[int]) -> float:
    """User and system time of ``pids`` (``/proc/PID/stat``, in clock ticks: 10 ms)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime + stime
    return total / TICK


def cpu_ns(pids: list[int]) -> int:
    """Time on a CPU of the live threads of ``pids`` (``/proc/PID/task/TID/schedstat``, ns)."""
    total = 0
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                total += int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue
    return total


class CPU:
    """CPU time of some processes between two reads: ``/proc/PID/stat``'s user and system
    time, which counts threads that ended but only in 10 ms ticks, refined by the threads'
    ``schedstat`` (nanoseconds) when the two agree within what a tick explains."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids
        self.ticks, self.ns = cpu_seconds(pids), cpu_ns(pids)

    def seconds(self) -> float:
        coarse = cpu_seconds(self.pids) - self.ticks
        fine = (cpu_ns(self.pids) - self.ns) / 1e9
        return fine if abs(fine - coarse) <= 3 / TICK + 0.02 * coarse else coarse


def peak_rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                total += int(line.split()[1])
    return total / 1024


def reset_peak(pids: list[int]) -> bool:
    """Reset each process's VmHWM to its current RSS (Linux 4.0+); False if it could not."""
    ok = True
    for pid in pids:
        try:
            Path(f"/proc/{pid}/clear_refs").write_text("5")
        except OSError:
            ok = False
    return ok


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(port: int, proc: subprocess.Popen[bytes] | None, seconds: float, name: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{name} exited with status {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{name}: nothing listens on {port} after {seconds:.0f} s")


# -- contenders -------------------------------------------------------------------------------


class Running:
    """A contender started in front of the upstream: where it listens, and its processes."""

    def __init__(
        self, name: str, port: int, proc: subprocess.Popen[bytes] | None, log: IO[bytes] | None
    ) -> None:
        self.name, self.port, self.proc, self._log = name, port, proc, log
        self.key: str | None = None  # the bearer token its clients send, if it wants one
        self.logs: list[Path] = []  # what it writes, for when something goes wrong

    def tail(self, lines: int = 3) -> list[str]:
        """The last lines of each of its logs."""
        out = []
        for path in self.logs:
            try:
                text = path.read_text(errors="replace").splitlines()
            except OSError:
                continue
            out += [f"{path.name}: {line}" for line in text[-lines:]]
        return out

    def pids(self) -> list[int]:
        return [] if self.proc is None else descendants(self.proc.pid)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._log is not None:
            self._log.close()


def spawn(
    name: str,
    argv: list[str],
    port: int,
    tmp: Path,
    *,
    startup: float = 30.0,
    env: dict[str, str] | None = None,
) -> Running:
    path = tmp / f"{name.replace(' ', '-')}.log"
    log = path.open("wb")
    proc = subprocess.Popen(
        argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=tmp
    )
    running = Running(name, port, proc, log)
    running.logs.append(path)
    try:
        wait_for(port, proc, startup, name)
    except BaseException:
        running.stop()
        raise
    return running


NO_UVLOOP = (
    "import sys; sys.modules['uvloop'] = None; "  # import uvloop fails: plain asyncio
    "from svir_proto.cli import main; sys.exit(main(sys.argv[1:]))"
)


def svir(
    loop: str,
    upstream: int,
    max_streams: int,
    tmp: Path,
    python: str = sys.executable,
    base: str | None = None,
) -> Running:
    """``svir gateway`` on ``loop``: ``trio``, ``uvloop`` (asyncio on uvloop, which the
    gateway takes when it is installed: ``python`` is one that imports it) or ``asyncio``
    (plain asyncio even so); ``base``, a source tree whose ``svir_proto`` runs instead of
    this one's (``PYTHONPATH``: another commit, measured beside this one)."""
    port = free_port()
    launch = ["-c", NO_UVLOOP] if loop == "asyncio" else ["-m", "svir_proto.cli"]
    argv = [
        python, *launch, "gateway",
        "--upstream", f"http://127.0.0.1:{upstream}", "--listen", f"127.0.0.1:{port}",
        "--backend", "trio" if loop == "trio" else "asyncio",
        "--max-streams", str(max_streams + 16),
        "--max-connections", str(2 * max_streams + 64),
    ]  # fmt: skip
    if base is None:
        return spawn(f"svir {loop}", argv, port, tmp)
    tree = str(Path(base).resolve())
    if not (Path(tree) / "svir_proto" / "__init__.py").exists():
        raise SystemExit(f"--base: no svir_proto in {tree}")
    env = {**os.environ, "PYTHONPATH": tree}
    return spawn("svir base", argv, port, tmp, env=env)


UVLOOP_VENV = Path(__file__).resolve().parent.parent / ".venv-uvloop"


def find_uvloop(option: str | None) -> str | None:
    """The Python that runs the gateway on uvloop: ``option`` (a Python, or a venv's
    directory), else ``$SVIR_BENCH_UVLOOP``, else this Python if it imports uvloop, else
    ``.venv-uvloop``'s (`scripts/install-bench-peers` makes it: uvloop stays out of the
    development venv, whose ``mypy --strict`` it would change); ``none``: no uvloop lane."""
    return _find_python(option, "SVIR_BENCH_UVLOOP", UVLOOP_VENV, "import uvloop, svir_proto.cli")


def _find_python(
    option: str | None,
    variable: str,
    venv: Path,
    probe: str,
    *,
    timeout: float = 60,
    env: dict[str, str] | None = None,
) -> str | None:
    """The first Python that runs ``probe``: ``option``, else ``$variable``, else this one,
    else ``venv``'s (a venv's directory stands for its Python); ``none``: no Python."""
    choice = option or os.environ.get(variable)
    if choice == "none":
        return None
    for python in [choice] if choice else [sys.executable, str(venv)]:
        if os.path.isdir(python):
            python = os.path.join(python, "bin", "python")
        try:
            ran = subprocess.run(
                [python, "-c", probe], capture_output=True, timeout=timeout, env=env
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if ran.returncode == 0:
            return os.path.abspath(python) if python != sys.executable else python
    return None


def find_nginx(option: str | None) -> str | None:
    """The nginx binary to run: ``option`` if given (``none``: no nginx), else on PATH."""
    if option == "none":
        return None
    if option:
        return os.path.abspath(option) if os.access(option, os.X_OK) else None
    found = shutil.which("nginx")
    if found:
        return found
    return next((p for p in NGINX_PATHS if os.access(p, os.X_OK)), None)


NGINX_CONF = """\
daemon off;
master_process off;
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log warn;
worker_rlimit_nofile {files};
events {{ worker_connections {connections}; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    upstream model {{ server 127.0.0.1:{upstream}; keepalive 64; }}
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        location / {{
            proxy_pass http://model;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
            proxy_read_timeout 300s;
        }}
    }}
}}
"""


def nginx(binary: str, upstream: int, max_streams: int, tmp: Path) -> Running:
    port = free_port()
    conf = tmp / "nginx.conf"
    conf.write_text(
        NGINX_CONF.format(
            tmp=tmp,
            upstream=upstream,
            port=port,
            connections=4 * max_streams + 256,  # clients, upstreams, closing ones
            files=8 * max_streams + 512,
        )
    )
    argv = [binary, "-p", str(tmp), "-c", str(conf), "-e", str(tmp / "nginx-error.log")]
    running = spawn("nginx", argv, port, tmp)
    running.logs.append(tmp / "nginx-error.log")
    return running


LITELLM_VENV = UVLOOP_VENV.parent / ".venv-litellm"


def find_litellm(option: str | None) -> str | None:
    """The Python that imports LiteLLM's proxy: ``option`` (a venv's python, or the venv's
    directory), else ``$SVIR_BENCH_LITELLM``, else this Python if it imports it, else
    ``.venv-litellm``'s (`scripts/install-bench-peers` makes it); ``none``: no LiteLLM."""
    return _find_python(
        option, "SVIR_BENCH_LITELLM", LITELLM_VENV, "import litellm.proxy.proxy_cli",
        timeout=120, env=litellm_env(),
    )  # fmt: skip


def litellm_env() -> dict[str, str]:
    """LiteLLM offline: its model cost map from the package, no telemetry, quiet logs."""
    return {
        **os.environ,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_TELEMETRY": "False",
        "LITELLM_LOG": "ERROR",
        "DISABLE_SCHEMA_UPDATE": "True",
        "NO_DOCS": "True",
        "NO_REDOC": "True",
    }


LITELLM_CONF = """\
model_list:
  - model_name: m
    litellm_params:
      model: openai/m
      api_base: http://127.0.0.1:{upstream}/v1
      api_key: sk-bench
  - model_name: probe
    litellm_params:
      model: openai/probe
      api_base: http://127.0.0.1:{upstream}/v1
      api_key: sk-bench
litellm_settings:
  telemetry: false
  drop_params: true
"""


def litellm(python: str, upstream: int, tmp: Path) -> Running:
    port = free_port()
    conf = tmp / "litellm.yaml"
    conf.write_text(LITELLM_CONF.format(upstream=upstream))
    argv = [python, "-m", "litellm.proxy.proxy_cli", "--config", str(conf),
            "--host", "127.0.0.1", "--port", str(port), "--num_workers", "1"]  # fmt: skip
    key = "sk-" + secrets.token_hex(32)  # LiteLLM refuses to start without a master key
    running = spawn(
        "LiteLLM", argv, port, tmp, startup=180.0, env={**litellm_env(), "LITELLM_MASTER_KEY": key}
    )
    running.key = key
    return running


def litellm_version(python: str) -> str:
    out = subprocess.run(
        [python, "-c", "import importlib.metadata as m; print(m.version('litellm'))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return out.stdout.strip() or "?"


def nginx_version(binary: str) -> str:
    out = subprocess.run([binary, "-v"], capture_output=True, text=True, timeout=30)
    return (out.stderr or out.stdout).strip().rpartition("/")[2] or "?"
