"""A test server of our own: real sockets on loopback, h11 reading the requests, and responses
written byte by byte so that every framing, fault and server's error style can be replayed.

The scenario is the first part of the base URL's path, so one server serves every test at once:
``http://127.0.0.1:PORT/<scenario>/<arg>.../v1``. `ReplayServer.base(...)` builds one.

Scenarios (each replays the conformance recording named by its argument, unless it says not):

- ``replay/<fixture>/<framing>``: ``length`` (Content-Length), ``chunked`` (chunks cut at points
  seeded by the fixture's name), ``close`` (delimited by closing the connection), ``drip``
  (chunked, a few bytes at a time with a pause between).
- ``llm/<fixture>``: an LLM-Stream recording (tests/conformance/llmstream), chunked.
- ``openai-only/<fixture>``: answers ``application/llm-request+json`` with 415 (draft 7.2),
  anything else with the OpenAI recording.
- ``stall-first/<seconds>/<fixture>``: waits before the head, then replays.
- ``stall-mid/<fixture>``: sends the head and half the body, then nothing (until the client
  goes).
- ``drop-mid/<fixture>``: sends half the body (Content-Length framing), then closes.
- ``stall-401``: a 401 head announcing a body that never comes.
- ``status/<code>/<style>``: an error in one server's style (`ERROR_BODIES`); 429 and 503 carry
  ``Retry-After: 0``.
- ``flaky/<key>/<n>/<code>/<fixture>``: the first ``n`` requests to this path (``key`` keeps
  tests apart) get ``<code>`` (with ``Retry-After: 0``), then the recording.
- ``strict/<fixture>``: 400 to a request with ``stream_options`` or ``reasoning_effort``.
- ``json-200``: a success that is ``application/json``.
- ``huge-head``: a head of more than 16 KiB.
- ``close-after/<fixture>``: replays with a keep-alive head, then closes the connection as
  llama.cpp does after every stream.

- ``garbage``: a stream whose second event is not JSON.
- ``controls``: a whole answer, and a model list, with terminal escape sequences and other
  control characters in what the server says (`CONTROLS`).
- ``bad-chunk/<fault>``: a chunked stream whose framing breaks after a good event:
  ``header`` (a chunk size that is not hex) or ``footer`` (chunk data not followed by CRLF).
- ``gzip``: a stream sent with ``Content-Encoding: gzip`` although ``identity`` was asked.
- ``echo-id``: a recording, with the request's ``X-Request-Id`` (or ``req-replay``) as the
  response's ``x-request-id``.

- ``listing/<api>`` (``openai``, ``llama-cpp``, ``anthropic``, ``gemini``; ``-paged``: the
  server says it has more; ``openai-ms``: its times in milliseconds): ``GET .../models``
  answers that API's listing
  (``tests/interop/recordings/<api>-models.json``) and ``GET .../models/<id>`` its model of
  that id, or a 404 in the API's own error shape (`LISTING_ERRORS`).

``GET .../v1/models`` answers a listing in LM Studio's shape with a chat, an embedding and a
speech model (only an embedding model under ``embeddings-only``, only a chat model under
``chat-only``; the error under ``status``). Every request is recorded (`requests`).
"""

from __future__ import annotations

import hashlib
import json
import random
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from typing import Final, NamedTuple

import h11

from tests.helpers import CONFORMANCE
from tests.sockets import wake

ERROR_BODIES: Final = {
    # wire reference section 5, each server's own shape
    "openai": b'{"error":{"message":"You exceeded your current quota.","type":"requests",'
    b'"param":null,"code":"rate_limit_exceeded"}}',
    "overflow": b'{"error":{"message":"This model\'s maximum context length is 8192 tokens.",'
    b'"type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}',
    "llamacpp": b'{"error":{"code":400,"message":"request (731 tokens) exceeds the available '
    b'context size (512 tokens), try increasing it","type":"exceed_context_size_error",'
    b'"n_prompt_tokens":731,"n_ctx":512}}',
    "lmstudio": b'{"error":"Invalid tool_choice type: \'object\'. Supported string values: none,'
    b' auto, required"}',
    "azure-filter": b'{"error":{"message":"The response was filtered due to the prompt triggering'
    b' Azure OpenAI\'s content management policy.","type":null,"param":"prompt",'
    b'"code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation",'
    b'"content_filter_result":{"hate":{"filtered":false,"severity":"safe"},"jailbreak":'
    b'{"detected":true,"filtered":true}}}}}',
    "vllm": b'{"object":"error","message":"The model does not exist.","type":"NotFoundError",'
    b'"param":null,"code":404}',
    "text": b"upstream connect error or disconnect/reset before headers",
    "empty": b"",
}

MODELS: Final = json.dumps(
    {
        "object": "list",
        "data": [
            {"id": "text-embedding-nomic-embed-text-v1.5", "object": "model"},
            {"id": "qwen3-8b", "object": "model"},
            {"id": "whisper-large-v3", "object": "model"},
        ],
    }
).encode()


CONTROLS: Final = "\x1b]0;owned\x07\x1b[2JHi\rthere\u009b31m\x00\tend"
"""Text with an OSC title change, a clear-screen, a CR, a C1 CSI, a NUL, and a tab to keep."""
EMBEDDINGS_ONLY: Final = b'{"data":[{"id":"bge-m3"}]}'
CHAT_ONLY: Final = b'{"data":[{"id":"qwen3-8b"}]}'


class Recorded(NamedTuple):
    method: str
    target: str
    headers: dict[str, str]
    body: bytes


LISTING_ERRORS: Final = {
    "anthropic": {"type": "error", "error": {"type": "not_found_error", "message": "no %s"}},
    "gemini": {"error": {"code": 404, "message": "no %s", "status": "NOT_FOUND"}},
    "openai": {"error": {"message": "no %s", "type": "invalid_request_error", "code": None}},
}
"""The 404 of each API for a model it does not have (``%s``: the id)."""


def listed(api: str, target: str) -> tuple[int, bytes]:
    """What ``listing/<api>`` answers ``target`` (a listing, or one of its models)."""
    name, paged = api.removesuffix("-paged"), api.endswith("-paged")
    name, milliseconds = name.removesuffix("-ms"), name.endswith("-ms")
    doc = json.loads(
        (CONFORMANCE.parent / "interop" / "recordings" / f"{name}-models.json").read_bytes()
    )
    if milliseconds:  # (a server that writes its times in milliseconds)
        for entry in doc["data"]:
            entry["created"] *= 1000
    path = target.split("?", 1)[0]
    if "/models/" not in path:
        if paged:
            doc.update({"has_more": True} if name == "anthropic" else {"nextPageToken": "p2"})
        return 200, json.dumps(doc).encode()
    wanted = path.rsplit("/models/", 1)[1]
    for entry in doc.get("data") or doc.get("models"):
        if wanted in (entry.get("id"), entry.get("name", "").removeprefix("models/")):
            return 200, json.dumps(entry).encode()
    error = json.dumps(LISTING_ERRORS.get(name, LISTING_ERRORS["openai"]))
    return 404, error.replace("%s", wanted).encode()


def fixture(name: str) -> bytes:
    for folder in ("openai", "llmstream", "llamacpp", "anthropic", "responses", "gemini"):
        path = CONFORMANCE / folder / f"{name}.sse"
        if path.exists():
            return path.read_bytes()
    raise KeyError(name)


def cuts(body: bytes, seed: str) -> list[bytes]:
    """The body cut at points a seed fixes (1..64 bytes apart): chunk boundaries anywhere."""
    rng = random.Random(int(hashlib.sha256(seed.encode()).hexdigest()[:8], 16))
    out = []
    i = 0
    while i < len(body):
        n = rng.randint(1, 64)
        out.append(body[i : i + n])
        i += n
    return out


def chunked(pieces: list[bytes]) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces if p) + b"0\r\n\r\n"


def head(status: int, headers: list[tuple[str, str]]) -> bytes:
    reason = {200: "OK", 401: "Unauthorized", 415: "Unsupported Media Type"}.get(status, "Status")
    lines = [f"HTTP/1.1 {status} {reason}"] + [f"{k}: {v}" for k, v in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


SSE: Final = ("Content-Type", "text/event-stream")


class ReplayServer:
    """The server; a thread accepts, and one thread serves each connection."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self._tls = tls  # serve https with this context
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.requests: list[Recorded] = []
        self.closed: list[tuple[str, float]] = []  # (target, when) a held connection was closed
        self.connections = 0
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def base(self, *parts: str) -> str:
        scheme = "http" if self._tls is None else "https"
        return f"{scheme}://127.0.0.1:{self.port}/" + "/".join(parts) + "/v1"

    def close(self) -> None:
        """Stop: the threads close their own sockets (`tests.sockets`)."""
        self._stop.set()
        wake(self._listener)
        with self._lock:
            for s in list(self._open):
                wake(s)

    def _accept(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    sock, _ = self._listener.accept()
                except OSError:
                    return
                with self._lock:
                    if self._stop.is_set():  # accepted as it closed: not served
                        sock.close()
                        return
                    self._open.add(sock)
                    self.connections += 1
                threading.Thread(target=self._serve, args=(sock,), daemon=True).start()
        finally:
            self._listener.close()

    def _serve(self, sock: socket.socket) -> None:
        leftover = b""
        try:
            if self._tls is not None:  # registered before its handshake: a close wakes it
                raw = sock
                sock = self._tls.wrap_socket(raw, server_side=True, do_handshake_on_connect=False)
                with self._lock:
                    self._open.discard(raw)
                    self._open.add(sock)
                    if self._stop.is_set():
                        return
                sock.do_handshake()
            while True:
                request, leftover = self._read_request(sock, leftover)
                if request is None:
                    return
                with self._lock:
                    self.requests.append(request)
                if not self._answer(sock, request):
                    return
        except OSError:
            pass
        finally:
            with self._lock:
                self._open.discard(sock)
            sock.close()

    def _read_request(self, sock: socket.socket, leftover: bytes) -> tuple[Recorded | None, bytes]:
        conn = h11.Connection(h11.SERVER)
        if leftover:  # (b"" would say the client closed)
            conn.receive_data(leftover)
        req: h11.Request | None = None
        body = bytearray()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = sock.recv(65536)
                conn.receive_data(data)
                if not data and req is None:
                    return None, b""
                continue
            if isinstance(event, h11.Request):
                req = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                assert req is not None
                headers = {k.decode().lower(): v.decode() for k, v in req.headers}
                recorded = Recorded(req.method.decode(), req.target.decode(), headers, bytes(body))
                return recorded, conn.trailing_data[0]
            else:
                return None, b""

    def _answer(self, sock: socket.socket, r: Recorded) -> bool:
        """Write the answer; ``False`` when the connection is to be closed."""
        parts = r.target.strip("/").split("/")
        at_v1 = parts.index("v1") if "v1" in parts else len(parts)
        scenario, args = (parts[0], parts[1:at_v1]) if parts and parts[0] != "v1" else ("", [])
        if scenario == "listing":
            status, body = listed(args[0], r.target)
            return self._send(sock, status, [("Content-Type", "application/json")], body)
        if r.target.endswith("/v1/models"):
            if scenario == "status":
                return self._error(sock, int(args[0]), args[1])
            if scenario == "stall-first":
                time.sleep(float(args[0]))
            if scenario == "garbage":
                return self._send(sock, 200, [("Content-Type", "text/html")], b"<html>")
            if scenario == "controls":
                listing = json.dumps({"data": [{"id": "qwen\x1b[2J"}]}).encode()
                return self._send(sock, 200, [("Content-Type", "application/json")], listing)
            listing = {"embeddings-only": EMBEDDINGS_ONLY, "chat-only": CHAT_ONLY}.get(
                scenario, MODELS
            )
            return self._send(sock, 200, [("Content-Type", "application/json")], listing)
        if scenario == "controls":
            chunk = {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {}}]}
            body = b""
            for delta, finish in (({"content": CONTROLS}, None), ({}, "stop")):
                chunk["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
                body += b"data: " + json.dumps(chunk).encode() + b"\n\n"
            return self._replay(sock, body + b"data: [DONE]\n\n", "length", "controls")
        if scenario == "bad-chunk":
            event = (
                b'data: {"id":"b","model":"m","choices":[{"index":0,"delta":{"content":"ok"}}]}\n\n'
            )
            good = chunked([event])[:-5]  # without the last chunk
            fault = b"zz\r\nxx\r\n" if args[0] == "header" else b"2\r\nokXX"
            sock.sendall(head(200, [SSE, ("Transfer-Encoding", "chunked")]) + good + fault)
            self._hold(sock, r.target)
            return False
        if scenario == "gzip":
            headers = [SSE, ("Content-Encoding", "gzip"), ("Content-Length", "20")]
            return self._send_raw(sock, 200, headers, b"\x1f\x8b" + bytes(18))
        if scenario == "echo-id":
            rid = r.headers.get("x-request-id", "req-replay")
            body = fixture(args[0])
            extra = [SSE, ("x-request-id", rid), ("Content-Length", str(len(body)))]
            sock.sendall(head(200, extra) + body)
            return True
        if scenario == "garbage":  # a stream whose second event is not JSON
            body = (
                b'data: {"id":"g","model":"m","choices":[{"index":0,"delta":{"content":"ok"}}]}\n\n'
            )
            return self._replay(sock, body + b"data: {not json\n\n", "length", "garbage")
        if scenario == "replay":
            name, framing = args[:2]  # a path that names its API version (Gemini's) goes on
            return self._replay(sock, fixture(name), framing, name)
        if scenario == "llm":
            return self._replay(sock, fixture(args[0]), "chunked", args[0])
        if scenario == "openai-only":
            if r.headers.get("content-type", "").startswith("application/llm-request+json"):
                body = b'{"error":{"code":"unsupported_media_type","message":"not served"}}'
                extra = [("Accept-Post", "application/json")]
                return self._send(sock, 415, [("Content-Type", "application/json"), *extra], body)
            return self._replay(sock, fixture(args[0]), "chunked", args[0])
        if scenario == "stall-first":
            time.sleep(float(args[0]))
            return self._replay(sock, fixture(args[1]), "chunked", args[1])
        if scenario == "stall-mid":
            body = fixture(args[0])
            sock.sendall(head(200, [SSE, ("Transfer-Encoding", "chunked")]))
            sock.sendall(chunked([body[: len(body) // 2]])[:-5])  # no last chunk
            self._hold(sock, r.target)
            return False
        if scenario == "drop-mid":
            body = fixture(args[0])
            sock.sendall(head(200, [SSE, ("Content-Length", str(len(body)))]))
            sock.sendall(body[: len(body) // 2])
            return False
        if scenario == "stall-401":
            sock.sendall(
                head(401, [("Content-Type", "application/json"), ("Content-Length", "100")])
            )
            self._hold(sock, r.target)
            return False
        if scenario == "status":
            code, style = int(args[0]), args[1]
            return self._error(sock, code, style)
        if scenario == "flaky":
            n, code = int(args[1]), int(args[2])
            key = "/".join(parts[:at_v1])
            with self._lock:
                seen = self._counts[key] = self._counts.get(key, 0) + 1
            if seen <= n:
                return self._error(sock, code, "openai")
            return self._replay(sock, fixture(args[3]), "chunked", args[3])
        if scenario == "strict":  # a strict server: the optional fields are a 400 (wire ref 2.5)
            doc = json.loads(r.body)
            if "stream_options" in doc or "reasoning_effort" in doc:
                body = b'{"error":{"message":"Unrecognized request argument supplied: '
                body += b'stream_options","type":"invalid_request_error","code":null}}'
                return self._send(sock, 400, [("Content-Type", "application/json")], body)
            return self._replay(sock, fixture(args[0]), "chunked", args[0])
        if scenario == "json-200":
            body = b'{"id":"x","choices":[{"message":{"content":"not streamed"}}]}'
            return self._send(sock, 200, [("Content-Type", "application/json")], body)
        if scenario == "huge-head":
            sock.sendall(head(200, [SSE, ("X-Padding", "a" * 20000), ("Content-Length", "0")]))
            return False
        if scenario == "close-after":
            self._replay(sock, fixture(args[0]), "chunked", args[0])
            return False
        return self._error(sock, 404, "text")

    def _error(self, sock: socket.socket, code: int, style: str) -> bool:
        body = ERROR_BODIES[style]
        media = "text/plain" if style in ("text", "empty") else "application/json"
        headers = [("Content-Type", media)]
        if code in (429, 503):
            headers.append(("Retry-After", "0"))
        return self._send(sock, code, headers, body)

    def _send(
        self, sock: socket.socket, status: int, headers: list[tuple[str, str]], body: bytes
    ) -> bool:
        sock.sendall(head(status, [*headers, ("Content-Length", str(len(body)))]) + body)
        return True

    def _send_raw(
        self, sock: socket.socket, status: int, headers: list[tuple[str, str]], body: bytes
    ) -> bool:
        sock.sendall(head(status, headers) + body)
        return True

    def _replay(self, sock: socket.socket, body: bytes, framing: str, seed: str) -> bool:
        if framing == "length":
            sock.sendall(head(200, [SSE, ("Content-Length", str(len(body)))]) + body)
            return True
        if framing == "close":
            sock.sendall(head(200, [SSE, ("Connection", "close")]) + body)
            return False
        sock.sendall(head(200, [SSE, ("Transfer-Encoding", "chunked")]))
        for piece in self._pieces(body, framing, seed):
            sock.sendall(piece)
            if framing == "drip":
                time.sleep(0.002)
        return True

    @staticmethod
    def _pieces(body: bytes, framing: str, seed: str) -> Iterator[bytes]:
        data = chunked(cuts(body, seed))
        step = 7 if framing == "drip" else len(data)
        for i in range(0, len(data), step):
            yield data[i : i + step]

    def _hold(self, sock: socket.socket, target: str) -> None:
        """Send nothing more until the client closes (or the server stops); note when."""
        sock.settimeout(0.005)
        while not self._stop.is_set():
            try:
                if not sock.recv(1024):
                    break
            except TimeoutError:
                continue
            except OSError:
                break
        with self._lock:
            self.closed.append((target, time.monotonic()))
