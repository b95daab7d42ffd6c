"""The gateway benchmark's clients: many streams at once from their own process, on raw sockets.

    python -m benchmarks._clients

reads one JSON command a line on standard input,
``{"port": P, "dialect": "openai" | "llmstream", "streams": N, "chunks": C, "timeout": S}``
(and optionally ``"key"``, a bearer token to send; ``"close"``, to send ``Connection: close``;
``"sequential"``, ``N`` probes one after the other instead; ``"probes": K``, up to ``K``
probes one after the other while the ``N`` streams run), and answers each with one JSON line.
A command opens ``N`` connections to ``127.0.0.1:P`` at once, sends each the same request and
reads every answer to the end of its body (or of the connection), in one epoll loop that only
moves bytes; a probe asks for the model `PROBE_MODEL`, whose answer is short, once every
stream has had its first bytes (under load), and its time to first token is reported apart.
The loop keeps each answer's bytes and the times of its first reads, nothing else, so the
clients cost little beside what they measure (their CPU during the run is reported).

Once every stream has ended, each answer is decoded by `ClientConnection` (the HTTP framing and
the dialect's decoder, as our transports decode it) and compared with the answer decoded
directly from the upstream's bytes: its text deltas in order, its finish reason, its usage and
a complete end. An answer that differs is counted as lost (some of it missing, or it failed or
was cut), duplicated, reordered, or otherwise different. Time to first token is from the
``connect`` to the read that carried the first text (the decoder says which read it was).
"""

from __future__ import annotations

import errno
import json
import select
import socket
import sys
import time
from collections import Counter
from typing import Any

from benchmarks._upstream import PROBE_CHUNKS, PROBE_MODEL
from benchmarks.streams import openai_stream
from svir_proto import LLMMessage, LLMRequest
from svir_proto.connection import ClientConnection
from svir_proto.events import (
    Finished,
    RequestFailed,
    StreamEnded,
    StreamFailed,
    TextDelta,
    Usage,
)
from svir_proto.openai import ChatRequest, ChatStreamDecoder, Endpoint, UserMessage

FIRST_READS = 16  # reads whose times are kept: the first token comes in one of them
UNKNOWN, CHUNKED, TO_CLOSE = -1, -2, -3  # a response's framing (or its whole length, >= 0)


def framing(buf: bytearray) -> int:
    """How the response in ``buf`` ends: `CHUNKED`, `TO_CLOSE`, or its whole length in bytes
    (`UNKNOWN` while its head is incomplete). Only to know when to stop reading: the decoder
    checks the framing itself afterwards."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return UNKNOWN
    length = TO_CLOSE
    for line in bytes(buf[:end]).lower().split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name, value = name.strip(), value.strip()
        if name == b"transfer-encoding" and value.endswith(b"chunked"):
            return CHUNKED
        if name == b"content-length" and value.isdigit():
            length = end + 4 + int(value)
    return length


def request(dialect: str, model: str = "m") -> ChatRequest | LLMRequest:
    if dialect == "llmstream":
        return LLMRequest(model=model, messages=[LLMMessage(role="user", content="hi")])
    return ChatRequest(model=model, messages=[UserMessage(content="hi")], include_usage=True)


class Answer:
    """What one answer looks like once decoded: its text deltas, finish, usage, end."""

    __slots__ = ("complete", "failure", "finish", "first_read", "texts", "usage")

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.finish: str | None = None
        self.usage: tuple[int | None, int | None, int | None] | None = None
        self.complete = False
        self.failure: str | None = None
        self.first_read: int | None = None  # the index of the read that carried the first text

    def take(self, events: list[Any], read: int) -> None:
        for e in events:
            if isinstance(e, TextDelta):
                if e.text:
                    if self.first_read is None:
                        self.first_read = read
                    self.texts.append(e.text)
            elif isinstance(e, Finished):
                self.finish = e.reason.value
            elif isinstance(e, Usage):
                self.usage = (e.prompt_tokens, e.completion_tokens, e.total_tokens)
            elif isinstance(e, StreamEnded):
                self.complete = e.complete
            elif isinstance(e, StreamFailed | RequestFailed):
                failure = e.error if isinstance(e, StreamFailed) else e.failure
                self.failure = f"{failure.kind.value}: {failure.message}"[:120]


def expected_answer(chunks: int) -> Answer:
    decoder = ChatStreamDecoder()
    answer = Answer()
    answer.take(decoder.feed(openai_stream(chunks)), 0)
    answer.take(decoder.close(), 0)
    return answer


def is_subsequence(short: list[str], long: list[str]) -> bool:
    it = iter(long)
    return all(any(x == y for y in it) for x in short)


def verdict(got: Answer, want: Answer, error: str | None) -> tuple[str, str | None]:
    """(``ok`` | ``lost`` | ``duplicated`` | ``reordered`` | ``differs``, why)."""
    why = error or got.failure
    if got.texts == want.texts or "".join(got.texts) == "".join(want.texts):
        if why is None and not got.complete:
            why = "no complete end"
        if why is not None:
            return "lost", why
        if got.finish != want.finish:
            return "differs", f"finish {got.finish} (upstream: {want.finish})"
        if got.usage != want.usage:
            return "lost" if got.usage is None else "differs", f"usage {got.usage}"
        return "ok", None
    if len(got.texts) < len(want.texts) and is_subsequence(got.texts, want.texts):
        return "lost", why or f"{len(want.texts) - len(got.texts)} text events missing"
    if len(got.texts) > len(want.texts) and is_subsequence(want.texts, got.texts):
        return "duplicated", f"{len(got.texts) - len(want.texts)} text events too many"
    if Counter(got.texts) == Counter(want.texts):
        return "reordered", why
    return "differs", why or "text differs"


class Stream:
    __slots__ = ("buf", "done", "end", "error", "framing", "offsets", "probe", "sock", "start",
                 "times")  # fmt: skip

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setblocking(False)
        self.buf = bytearray()
        self.times: list[float] = []
        self.offsets: list[int] = []
        self.start = 0.0
        self.end = 0.0
        self.error: str | None = None
        self.done = False
        self.framing = UNKNOWN
        self.probe = False  # a short request sent under load, for its time to first token


def drive(
    port: int, wire: bytes, count: int, timeout: float, probe: bytes = b"", probes: int = 0
) -> tuple[list[Stream], list[Stream]]:
    """Open ``count`` streams at once and read each to its end (or the deadline): the end of
    its body, or the server closing the connection. Once every one of them has had its first
    bytes, send ``probe`` (a request for a short answer) up to ``probes`` times, one after the
    other, while they last: the time to first token of a request that comes in under load.
    Returns the streams and the probes."""
    ep = select.epoll()
    streams: dict[int, Stream] = {}  # by file descriptor, while open (a closed one's is reused)
    loads: list[Stream] = []
    probing: list[Stream] = []
    sent: set[int] = set()
    start = time.monotonic()
    deadline = start + timeout

    def open_one(s: Stream) -> bool:
        fd = s.sock.fileno()
        streams[fd] = s
        s.start = time.monotonic()
        rc = s.sock.connect_ex(("127.0.0.1", port))
        if rc not in (0, errno.EINPROGRESS):
            s.error, s.done, s.end = f"connect: {errno.errorcode.get(rc, rc)}", True, s.start
            s.sock.close()
            return False
        ep.register(fd, select.EPOLLOUT)
        return True

    for _ in range(count):
        loads.append(Stream())
        open_one(loads[-1])
    load = sum(1 for s in loads if not s.done)  # load streams still running
    waiting = load  # load streams that have not had their first bytes
    probe_fd = -1  # the probe running, if any
    while load or probe_fd >= 0:
        if probe_fd < 0 and probes > len(probing) and load and not waiting:
            p = Stream()
            p.probe = True
            probing.append(p)
            if open_one(p):
                probe_fd = p.sock.fileno()
        wait = deadline - time.monotonic()
        if wait <= 0:
            break
        for fd, _ in ep.poll(min(wait, 1.0)):
            s = streams[fd]
            if fd not in sent:
                err = s.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if err:
                    s.error = f"connect: {errno.errorcode.get(err, err)}"
                else:
                    try:
                        s.sock.sendall(probe if s.probe else wire)  # small: taken whole
                    except OSError as exc:
                        s.error = f"send: {exc}"
                if s.error is None:
                    sent.add(fd)
                    ep.modify(fd, select.EPOLLIN)
                    continue
            else:
                try:
                    data = s.sock.recv(262144)
                except BlockingIOError:
                    continue
                except OSError as exc:
                    data, s.error = b"", f"recv: {exc}"
                if data:
                    buf = s.buf
                    if not buf and not s.probe:
                        waiting -= 1
                    buf += data
                    if len(s.times) < FIRST_READS:
                        s.times.append(time.monotonic())
                        s.offsets.append(len(buf))
                    if s.framing == UNKNOWN:
                        s.framing = framing(buf)
                    f = s.framing
                    if f == CHUNKED:
                        if not buf.endswith(b"\r\n0\r\n\r\n"):
                            continue
                    elif f < 0 or len(buf) < f:
                        continue
            if not s.buf and not s.probe:
                waiting -= 1
            s.end = time.monotonic()
            s.done = True
            if s.probe:
                probe_fd = -1
            else:
                load -= 1
            ep.unregister(fd)
            sent.discard(fd)
            del streams[fd]
            s.sock.close()
    for s in streams.values():
        s.error, s.end = "timed out", time.monotonic()
        s.sock.close()
    ep.close()
    return loads, probing


def decode(
    s: Stream, endpoint: Endpoint, req: ChatRequest | LLMRequest, headers: list[tuple[str, str]]
) -> Answer:
    conn = ClientConnection(endpoint)
    for _ in conn.send(req, headers=headers):
        pass
    answer = Answer()
    view = memoryview(s.buf)
    at = 0
    try:
        for i, end in enumerate(s.offsets):
            answer.take(conn.feed(view[at:end]), i)
            at = end
        if at < len(view):
            answer.take(conn.feed(view[at:]), len(s.offsets))
        answer.take(conn.close(), len(s.offsets))
    except Exception as exc:  # a contender that sent bytes we cannot read
        answer.failure = f"{type(exc).__name__}: {exc}"[:120]
    return answer


def judge(
    streams: list[Stream],
    want: Answer,
    endpoint: Endpoint,
    req: ChatRequest | LLMRequest,
    headers: list[tuple[str, str]],
    outcomes: Counter[str],
    reasons: Counter[str],
) -> list[float]:
    """Decode and compare each answer (into ``outcomes`` and ``reasons``); their times to
    first token, ms."""
    ttft = []
    for s in streams:
        got = decode(s, endpoint, req, headers)
        outcome, why = verdict(got, want, s.error)
        outcomes[outcome] += 1
        if why is not None:
            reasons[why] += 1
        if got.first_read is not None and got.first_read < len(s.times):
            ttft.append((s.times[got.first_read] - s.start) * 1000)
    return ttft


def run(command: dict[str, Any]) -> dict[str, Any]:
    port, count, chunks = int(command["port"]), int(command["streams"]), int(command["chunks"])
    endpoint = Endpoint.parse(f"http://127.0.0.1:{port}/v1")
    req, probe_req = request(command["dialect"]), request(command["dialect"], PROBE_MODEL)
    headers = [("Connection", "close")] if command.get("close") else []
    if command.get("key"):
        headers.append(("Authorization", f"Bearer {command['key']}"))
    wire = b"".join(ClientConnection(endpoint).send(req, headers=headers))
    probe = b"".join(ClientConnection(endpoint).send(probe_req, headers=headers))
    timeout = float(command["timeout"])
    cpu = time.process_time()
    if command.get("sequential"):  # probes one at a time: the latency a contender adds
        streams: list[Stream] = []
        probes = [s for _ in range(count) for s in drive(port, probe, 1, timeout)[0]]
    else:
        streams, probes = drive(port, wire, count, timeout, probe, int(command.get("probes", 0)))
    cpu = time.process_time() - cpu
    outcomes: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    ttft = judge(streams, expected_answer(chunks), endpoint, req, headers, outcomes, reasons)
    probe_ttft = judge(
        probes, expected_answer(PROBE_CHUNKS), endpoint, probe_req, headers, outcomes, reasons
    )
    every = streams + probes
    return {
        "start": min(s.start for s in every),
        "end": max(s.end for s in every),
        "cpu": cpu,
        "ttft": ttft,
        "probe_ttft": probe_ttft,
        "outcomes": dict(outcomes),
        "reasons": dict(reasons.most_common(3)),
        "bytes": sum(len(s.buf) for s in every),
    }


def main() -> None:
    for line in sys.stdin:
        result = run(json.loads(line))
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
