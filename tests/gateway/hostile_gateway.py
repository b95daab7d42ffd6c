"""The real ``svir gateway`` process for the hostile battery, and the clients that attack it
and check it afterwards.

`Gateway` runs ``python -m svir_proto.cli gateway`` (its log in a file, its descriptors bounded
if asked) and knows its port. `Raw` is a client socket that sends whatever bytes it is told and
reads what comes, with a deadline. `responses` cuts what a gateway answered into responses.
`healthy` is the check after every attack: the process lives, the openai package and an
LLM-Stream client each get a whole answer, no stream slot or body budget is left held, and the
log holds no traceback.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import resource
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

from svir_proto.llmstream import LLMStreamDecoder
from tests.gateway.hostile_upstream import OK_TEXT

ROOT: Final = Path(__file__).resolve().parent.parent.parent
# small deadlines, so that a test waits seconds for each, not minutes
QUICK: Final = {
    "--head-timeout": "2",
    "--body-timeout": "2",
    "--idle-timeout": "4",
    "--send-timeout": "3",
    "--timeout": "4",
    "--keepalive": "1",
    "--connect-timeout": "3",
    "--grace": "1",
}
BAD_LOG: Final = re.compile(
    r"Traceback|Fatal error|Exception in callback|exception was never retrieved|"
    r"client connection failed|preparing a request failed|Unhandled|Error:",
)


class Gateway:
    """One ``svir gateway`` process in front of ``upstream``: ``options`` are its flags
    (`QUICK` unless given), ``nofile`` its bound on descriptors, ``memory_mb`` on its address
    space (``RLIMIT_AS``), each its own, not the test's."""

    def __init__(
        self,
        upstream: str,
        backend: str,
        *,
        nofile: int | None = None,
        memory_mb: int | None = None,
        env: dict[str, str] | None = None,
        **options: str | None,
    ) -> None:
        self.backend = backend
        args = {**QUICK, **options}
        argv = [
            sys.executable, "-m", "svir_proto.cli", "gateway", "--upstream", upstream,
            "--listen", "127.0.0.1:0", "--backend", backend,
        ]  # fmt: skip
        for name, value in args.items():
            if value is None:
                continue
            flag = name if name.startswith("--") else "--" + name.replace("_", "-")
            argv += [flag] if value == "" else [flag, value]
        fd, name = tempfile.mkstemp(prefix=f"svir-gw-{backend}-", suffix=".log")
        self.log = Path(name)
        self._log_file = os.fdopen(fd, "wb")

        def limit() -> None:  # in the child only: the test's own limits stay
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
            if memory_mb is not None:  # what it would take past it is a MemoryError in it
                size = memory_mb * 1024 * 1024
                resource.setrlimit(resource.RLIMIT_AS, (size, size))

        self.proc = subprocess.Popen(
            argv,
            stdout=subprocess.DEVNULL,
            stderr=self._log_file,
            stdin=subprocess.DEVNULL,
            cwd=ROOT,
            env={**os.environ, **(env or {})},
            preexec_fn=limit,
        )
        self.port = self._wait_port()
        self.host = f"127.0.0.1:{self.port}"
        self.base = f"http://{self.host}/v1"
        self.mark = 0

    def _wait_port(self) -> int:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            found = re.search(rb"svir gateway on http://[^:]+:(\d+)/v1", self.log.read_bytes())
            if found:
                return int(found.group(1))
            if self.proc.poll() is not None:
                raise AssertionError(f"the gateway exited: {self.log.read_text()}")
            time.sleep(0.05)
        raise AssertionError(f"the gateway did not start: {self.log.read_text()}")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_since_mark(self) -> str:
        return self.log.read_bytes()[self.mark :].decode("utf-8", "replace")

    def set_mark(self) -> None:
        self.mark = len(self.log.read_bytes())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._log_file.close()
        self.log.unlink(missing_ok=True)

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def fds(self) -> int:
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def metrics(self, token: str | None = None) -> dict[str, float]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        status, _, body = request(self, "GET", "/metrics", headers=headers)
        assert status == 200, (status, body)
        out = {}
        for line in body.decode().splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                out[name] = float(value)
        return out


@contextlib.contextmanager
def gateway(upstream: str, backend: str, **options: Any) -> Iterator[Gateway]:
    gw = Gateway(upstream, backend, **options)
    try:
        yield gw
    finally:
        gw.stop()


# -- clients -----------------------------------------------------------------------------


class Raw:
    """A client socket that sends what it is told and reads with a deadline."""

    def __init__(self, gw: Gateway | int, *, rcvbuf: int | None = None) -> None:
        port = gw if isinstance(gw, int) else gw.port
        self.sock = socket.socket()
        if rcvbuf is not None:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(30)
        self.sock.connect(("127.0.0.1", port))
        self._got = bytearray()
        self.eof = False

    @property
    def got(self) -> bytes:
        """Everything read so far."""
        return bytes(self._got)

    def tail(self, n: int) -> bytes:
        return bytes(self._got[-n:])

    def add(self, data: bytes) -> None:
        self._got += data

    def send(self, data: bytes) -> bool:
        """Whether the gateway took the bytes (``False``: it had closed or reset)."""
        try:
            self.sock.sendall(data)
        except OSError:
            return False
        return True

    def read(
        self, seconds: float = 15.0, *, until: Callable[[bytearray], bool] | None = None
    ) -> bytes:
        """Read until the gateway closes, ``until(everything read)`` holds, or ``seconds``."""
        deadline = time.monotonic() + seconds
        while not self.eof and (until is None or not until(self._got)):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                break
            except OSError:  # a reset: what came is kept
                self.eof = True
                break
            if not data:
                self.eof = True
                break
            self._got += data
        return self.got

    def closed_by_peer(self, seconds: float = 15.0) -> bool:
        """Whether the gateway closes the connection within ``seconds`` (reading what comes)."""
        self.read(seconds)
        return self.eof

    def reset(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()

    def __enter__(self) -> Raw:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Response:
    def __init__(self, status: int, reason: str, headers: list[tuple[str, str]], body: bytes):
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
        self.complete = True

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name), None)

    def __repr__(self) -> str:
        return f"Response({self.status} {self.reason!r}, {self.body[:200]!r})"


def responses(data: bytes | bytearray, heads: tuple[bool, ...] = ()) -> list[Response]:
    """The responses in ``data``, in order (``heads[i]``: the i-th answers a HEAD, no body).
    A last response cut short is kept with ``complete`` false."""
    out: list[Response] = []
    while data:
        end = data.find(b"\r\n\r\n")
        if end < 0:
            break
        lines = data[:end].decode("latin-1").split("\r\n")
        data = data[end + 4 :]
        _version, _, rest = lines[0].partition(" ")
        code, _, reason = rest.partition(" ")
        headers = []
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers.append((k.strip(), v.strip()))
        r = Response(int(code), reason, headers, b"")
        out.append(r)
        if 100 <= r.status < 200:
            continue
        head_only = len(out) <= len(heads) and heads[len(out) - 1]
        if head_only or r.status in (204, 304):
            continue
        length = r.header("content-length")
        if (r.header("transfer-encoding") or "").lower() == "chunked":
            body = []
            while True:
                eol = data.find(b"\r\n")
                if eol < 0:
                    r.complete = False
                    data = b""
                    break
                size = int(data[:eol].split(b";")[0], 16)
                if size == 0:
                    trailer = data.find(b"\r\n\r\n", eol)
                    data = data[trailer + 4 :] if trailer >= 0 else b""
                    break
                piece = data[eol + 2 : eol + 2 + size]
                body.append(piece)
                if len(piece) < size:
                    r.complete = False
                    data = b""
                    break
                data = data[eol + 2 + size + 2 :]
            r.body = b"".join(body)
        elif length is not None:
            n = int(length)
            r.body, data = data[:n], data[n:]
            r.complete = len(r.body) == n
        else:  # delimited by the close
            r.body, data = data, b""
    return out


def request(
    gw: Gateway,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    *,
    timeout: float = 30,
) -> tuple[int, dict[str, str], bytes]:
    """One ordinary request with http.client; (status, headers, body de-chunked)."""
    conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        try:
            data = r.read()
        except http.client.IncompleteRead as exc:
            data = exc.partial
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data
    finally:
        conn.close()


def llm_body(rid: str = "ok", *, tools: tuple[str, ...] = (), **extra: Any) -> bytes:
    doc: dict[str, Any] = {
        "version": "1.0",
        "stream": True,
        "model": rid,  # the upstream reads the scenario here too (and in X-Request-Id)
        "messages": [{"role": "user", "content": "hi"}],
        "metadata": {"request_id": rid},
        **extra,
    }
    if tools:
        doc["tools"] = [
            {"name": t, "description": "", "parameters": {"type": "object"}} for t in tools
        ]
    return json.dumps(doc).encode()


def openai_body(rid: str | None = None, *, stream: bool = True, **extra: Any) -> bytes:
    doc: dict[str, Any] = {
        "model": rid or "m",
        "stream": stream,
        "messages": [{"role": "user", "content": "hi"}],
        **extra,
    }
    if rid is not None:
        doc["metadata"] = {"request_id": rid}
    return json.dumps(doc).encode()


def post(body: bytes, *, host: str = "127.0.0.1", kind: str = "application/json",
         extra: str = "", version: str = "1.1") -> bytes:  # fmt: skip
    """A whole POST to the chat path, as bytes."""
    return (
        f"POST /v1/chat/completions HTTP/{version}\r\nHost: {host}\r\nContent-Type: {kind}\r\n"
        f"Content-Length: {len(body)}\r\n{extra}\r\n"
    ).encode() + body


def llm_result(body: bytes) -> Any:
    d = LLMStreamDecoder()
    d.feed(body)
    d.close()
    return d.result


def openai_result(body: bytes) -> Any:
    from svir_proto.openai import ChatStreamDecoder

    d = ChatStreamDecoder()
    d.feed(body)
    d.close()
    return d.result


def wait_until(check: Callable[[], bool], seconds: float = 20.0, every: float = 0.1) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(every)
    return check()


# -- the check after every attack ----------------------------------------------------------


def openai_client_gets_a_whole_answer(gw: Gateway, token: str | None = None) -> None:
    import openai

    client = openai.OpenAI(base_url=gw.base, api_key=token or "none", max_retries=0, timeout=60)
    try:
        stream = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        parts, finish = [], None
        for c in stream:
            if c.choices:
                parts.append(c.choices[0].delta.content or "")
                finish = c.choices[0].finish_reason or finish
        assert "".join(parts) == OK_TEXT, parts
        assert finish == "stop"
        whole = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
        assert whole.choices[0].message.content == OK_TEXT
    finally:
        client.close()


def llm_client_gets_a_whole_answer(gw: Gateway, token: str | None = None) -> None:
    headers = {"Content-Type": "application/llm-request+json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    status, _, body = request(gw, "POST", "/v1/chat/completions", llm_body("ok"), headers)
    assert status == 200, (status, body[:500])
    result = llm_result(body)
    assert result.complete, body[-500:]
    assert result.text == OK_TEXT


def nothing_held(gw: Gateway, token: str | None = None, seconds: float = 20.0) -> dict[str, float]:
    """Wait for every stream slot and byte of the body budget to be given back."""
    last: dict[str, float] = {}

    def quiet() -> bool:
        nonlocal last
        last = gw.metrics(token)
        return last["svir_gateway_active_streams"] == 0 and last["svir_gateway_buffered_bytes"] == 0

    assert wait_until(quiet, seconds), f"held after the attack: {last}"
    return last


def healthy(gw: Gateway, token: str | None = None) -> None:
    """After an attack: alive, both clients served whole, nothing held, a clean log."""
    assert gw.alive(), f"the gateway died:\n{gw.log.read_text()[-3000:]}"
    openai_client_gets_a_whole_answer(gw, token)
    llm_client_gets_a_whole_answer(gw, token)
    nothing_held(gw, token)
    assert gw.alive()
    log = gw.log_since_mark()
    bad = [line for line in log.splitlines() if BAD_LOG.search(line)]
    assert not bad, "the gateway logged a failure:\n" + log[-4000:]
