"""Atheris target for `GatewaySession`, sans-IO: ``python fuzz/fuzz_gateway_session.py CORPUS
fuzz/corpus/gateway_session``.

The input is a script for a lawful server driving one session: bytes from the client, the
upstream connection opening (new, or a kept-alive one the session gave back), bytes from the
upstream, either side closing or breaking, the client's socket filling and draining, time
passing and deadlines ticking, prepared work coming back, the gateway stopping. Whatever the
script, only `SvirError` may escape a call, every call returns bytes, `deadline` stays a float
(never NaN), the shared counters never go below zero, what waits in the client's socket is held
within ``max_partial`` (or the client is aborted), and once the client has gone every stream
slot, byte of the body budget, of ``max_partial`` and connection the session took is given
back. A script whose first step is ``gemini-upstream`` drives a gateway of a Gemini upstream
(whose clients may ask for the stream as one JSON array, relayed event by event).

Each step is one byte ``op`` (its value modulo the number of ops) and, for the ops that carry
bytes, a two-byte big-endian length and that many bytes (cut short by the input's end). `script`
builds one from readable steps, for the seeds (``--seeds`` writes them).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parent))

from svir_proto.errors import SvirError
from svir_proto.gateway import GatewayConfig, GatewaySession, GatewayState
from svir_proto.gateway.config import PARTIAL_ALLOWANCE
from svir_proto.gateway.session import Abort, Connect, More, Release, Work
from svir_proto.openai import Endpoint

OPS = (
    "client",
    "client-eof",
    "connected",
    "upstream",
    "upstream-eof",
    "upstream-failed",
    "pause",
    "resume",
    "tick",
    "advance",
    "work",
    "shutdown",
    "more",
    "neighbour",
    "upstream-full",  # (last: `script`'s seeds keep their ops; the files the fuzzer found are
    "upstream-took",  # read modulo the number of ops: they are re-encoded, step by step, when
    # one is added)
    "gemini-upstream",  # as the first step: the upstream is Gemini's (else nothing)
)
CARRY = frozenset({"client", "upstream", "advance", "neighbour", "upstream-full"})
CONFIG = GatewayConfig(
    upstream=Endpoint.parse("http://127.0.0.1:1"),
    allowed_hosts=frozenset({"x", "localhost", "127.0.0.1"}),
    max_head_size=2048,
    max_body=8192,
    max_buffered=16384,
    hold_below=512,
    max_streams=4,
    max_connections=4,
    head_timeout=2.0,
    body_timeout=2.0,
    idle_timeout=4.0,
    send_timeout=3.0,
    connect_timeout=3.0,
    progress_timeout=5.0,
    keepalive=1.0,
    drain_limit=1024,
    max_partial=65536,
)
GEMINI_CONFIG = attrs.evolve(CONFIG, upstream_dialect="gemini")


def steps(data: bytes) -> list[tuple[str, bytes]]:
    out = []
    i = 0
    while i < len(data):
        op = OPS[data[i] % len(OPS)]
        i += 1
        payload = b""
        if op in CARRY:
            n = int.from_bytes(data[i : i + 2], "big")
            payload = data[i + 2 : i + 2 + n]
            i += 2 + n
        out.append((op, payload))
    return out


def script(*steps_: tuple[str, bytes] | str) -> bytes:
    """The input for readable steps: ``("client", b"GET ...")``, ``"connected"``..."""
    out = bytearray()
    for step in steps_:
        op, payload = (step, b"") if isinstance(step, str) else step
        out.append(OPS.index(op))
        if op in CARRY:
            out += len(payload).to_bytes(2, "big") + payload
    return bytes(out)


class Driver:
    """A lawful server: it does what the session's actions say, and calls what the script
    says only when it may (bytes from an upstream only while one is connected). Beside it, a
    neighbour: another connection of the same gateway whose client's socket fills and drains
    (``neighbour``), which the session may take the budget back from, or it from the session
    (`GatewayState.evict_unread`); the server's sweep aborts it once it lost its hold."""

    def __init__(self, config: GatewayConfig = CONFIG) -> None:
        self.state = GatewayState(config, new_id=lambda: "req-1")
        self.now = 1000.0
        self.session = GatewaySession(self.state, self.now)
        self.connecting: Connect | None = None
        self.connected = False
        self.pool: list[object] = []
        self.work: list[Work] = []
        self.more = 0  # `More` asked, not yet acted on
        self.aborted = False  # the session said `Abort`: the connection is gone
        self.waiting = 0  # bytes written to the client since it last took them all
        self.neighbour = GatewaySession(self.state, self.now)
        self.neighbour_full = False
        self.neighbour_gone = False  # it said `Abort`

    def call(self, name: str, *args: object) -> None:
        try:
            out = getattr(self.session, name)(*args)
        except SvirError:
            return
        assert out is None or isinstance(out, bytes), (name, out)
        self.waiting += len(out or b"")
        self.take()
        self.check()

    def take(self) -> None:
        actions, self.session.actions = self.session.actions, []
        for action in actions:
            if isinstance(action, Connect):
                self.connecting = action
                self.connected = False
            elif isinstance(action, Release):
                self.connected = False
                self.connecting = None
                if action.connection is not None:
                    self.pool.append(action.connection)
            elif isinstance(action, Work):
                self.work.append(action)
            elif isinstance(action, More):
                self.more += 1
            elif isinstance(action, Abort):
                self.aborted = True

    def tick_neighbour(self) -> None:
        """The server's sweep: a neighbour whose hold was taken back is aborted at once."""
        neighbour = self.neighbour
        if self.neighbour_gone or self.now < neighbour.deadline:
            return
        evicted = neighbour.deadline == -math.inf
        assert neighbour.tick(self.now) == b""  # (it sent no request)
        aborted = any(isinstance(a, Abort) for a in neighbour.actions)
        neighbour.actions.clear()
        assert aborted or not evicted, "a neighbour whose hold was taken back stayed"
        if aborted:
            self.neighbour_gone = True
            neighbour.client_gone(self.now)

    def check(self) -> None:
        self.tick_neighbour()
        deadline = self.session.deadline
        assert isinstance(deadline, float), deadline
        assert not math.isnan(deadline), deadline
        state = self.state
        assert state.streams >= 0, (
            state.streams,
            state.buffered,
            state.connections,
        )
        assert state.buffered >= 0, (
            state.streams,
            state.buffered,
            state.connections,
        )
        assert state.connections >= 0, (
            state.streams,
            state.buffered,
            state.connections,
        )
        assert 0 <= state.partial <= CONFIG.max_partial, state.partial
        # one stream, and a slot for a whole answer the client has not read yet: a read under
        # way when the session paused the client (trio's) can bring the next request in
        assert state.streams <= 2
        assert state.connections <= 2
        held = sum(h.held for h in state.unread)
        assert held <= state.partial, (held, state.partial)

    def step(self, op: str, payload: bytes) -> None:
        s = self.session
        if self.aborted:  # the server calls nothing more but the connection's loss (`finish`)
            return
        if op == "client":
            self.call("client_data", payload, self.now)
        elif op == "client-eof":
            self.call("client_data", b"", self.now)
        elif op == "connected" and self.connecting is not None:
            pooled = None if self.connecting.fresh or not self.pool else self.pool.pop()
            self.connecting = None
            self.connected = True
            self.call("upstream_connected", self.now, pooled)
        elif op == "upstream" and self.connected:
            self.call("upstream_data", payload, self.now)
        elif op == "upstream-eof" and self.connected:
            self.call("upstream_data", b"", self.now)
        elif op == "upstream-full" and self.connected:  # it does not take the body that fast:
            self.call("upstream_paused", self.now, int.from_bytes(payload[:3], "big"))  # this
            # much of it waits
        elif op == "upstream-took" and self.connected:
            self.call("upstream_resumed", self.now)
        elif op == "upstream-failed" and (self.connected or self.connecting is not None):
            self.connected = False
            self.connecting = None
            self.call("upstream_failed", "reset by peer", self.now)
        elif op == "pause":  # what it was written since it last took all waits in its socket
            waiting, partial = self.waiting, self.state.partial
            self.call("client_paused", self.now, waiting)
            if self.aborted:
                assert self.session.closed, "an aborted client's session stayed open"
                assert waiting - PARTIAL_ALLOWANCE > CONFIG.max_partial - partial
        elif op == "resume":
            self.waiting = 0
            self.call("client_resumed", self.now)
        elif op == "tick":
            if math.isfinite(s.deadline):
                self.now = max(self.now, s.deadline)
            self.call("tick", self.now)
        elif op == "advance":
            self.now += (payload[0] if payload else 1) / 8
            self.call("tick", self.now)
        elif op == "work" and self.work:
            work = self.work.pop(0)
            self.call("worked", work.run(), self.now)
        elif op == "shutdown":
            self.state.stopping = True
            self.call("shutdown", self.now)
        elif op == "more" and self.more:
            self.more -= 1
            self.call("client_more", self.now)
        elif op == "neighbour" and not self.neighbour_gone:
            neighbour = self.neighbour
            if self.neighbour_full:  # it took what waited
                neighbour.client_resumed(self.now)
            else:  # its socket fills with 1 KiB a payload byte past the allowance
                neighbour.client_paused(self.now, PARTIAL_ALLOWANCE + 1024 * sum(payload))
            self.neighbour_full = not self.neighbour_full
            neighbour.actions.clear()
            self.check()

    def finish(self) -> None:
        """The client goes: nothing may stay held (its pipelined requests answered first, in
        the loop's turns)."""
        self.call("client_data", b"", self.now)
        self.call("client_gone", self.now)  # (what it held went with it)
        while self.more:
            self.more -= 1
            self.call("client_more", self.now)
        assert self.session.closed, "the session outlived its client"
        neighbour = self.neighbour
        if not self.neighbour_gone:
            neighbour.client_data(b"", self.now)
            neighbour.client_gone(self.now)
        assert neighbour.closed
        state = self.state
        assert state.unread == {}, state.unread
        assert state.streams == 0, f"a stream slot left held: {state.streams}"
        assert state.buffered == 0, f"body budget left held: {state.buffered}"
        assert state.connections == 0, f"a connection left counted: {state.connections}"
        assert state.partial == 0, f"max_partial left held: {state.partial}"


def test_one_input(data: bytes) -> None:
    script_ = steps(data)
    gemini = bool(script_) and script_[0][0] == "gemini-upstream"
    driver = Driver(GEMINI_CONFIG if gemini else CONFIG)
    for op, payload in script_:
        driver.step(op, payload)
    driver.finish()


# -- seeds ---------------------------------------------------------------------------------

BODY = b'{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}'
LLM = (
    b'{"version":"1.0","stream":true,"model":"m","messages":[{"role":"user","content":"hi"}],'
    b'"metadata":{"request_id":"r-1"}}'
)


def _post(
    body: bytes,
    kind: bytes = b"application/json",
    extra: bytes = b"",
    path: bytes = b"/v1/chat/completions",
) -> bytes:
    return (
        b"POST "
        + path
        + b" HTTP/1.1\r\nHost: x\r\nContent-Type: "
        + kind
        + b"\r\nContent-Length: %d\r\n" % len(body)
        + extra
        + b"\r\n"
        + body
    )


EVENT = (
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\n'
)
SSE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    + b"%x\r\n%s\r\n" % (len(EVENT), EVENT)
    + b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n"
)
SSE_HEAD = SSE[: SSE.index(b"\r\n\r\n") + 4]
SSE_END = SSE[len(SSE_HEAD) :]
_LONG = b'data: {"choices":[{"index":0,"delta":{"content":"%s"}}]}\n\n' % (b"a" * 60_000)
LONG = b"%x\r\n%s\r\n" % (len(_LONG), _LONG)
"""An HTTP chunk of one whole event of about 60 KB."""
_GEMINI = (
    b'data: {"candidates":[{"content":{"parts":[{"text":"hi"}],"role":"model"},"index":0}],'
    b'"modelVersion":"g"}\r\n\r\n'
)
GEM = SSE_HEAD + b"%x\r\n%s\r\n" % (len(_GEMINI), _GEMINI) * 2 + b"0\r\n\r\n"
"""A Gemini upstream's stream of two events."""
_ARRAY = _post(
    b'{"contents":[{"parts":[{"text":"hi"}]}]}', path=b"/v1beta/models/g:streamGenerateContent"
)
"""A Gemini client's request for the stream as one JSON array (no ``alt=sse``)."""
WHOLE = b'{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}'
"""A Messages request that asks for no stream: translated, answered whole."""
SEEDS = {
    "openai-stream": script(("client", _post(BODY)), "connected", ("upstream", SSE)),
    "whole-answer": script(
        ("client", _post(WHOLE, path=b"/v1/messages")), "connected", ("upstream", SSE)
    ),
    "whole-answer-stalls": script(
        ("client", _post(WHOLE, path=b"/v1/messages")), "connected", "tick", ("upstream", SSE)
    ),
    "whole-answer-cut": script(
        ("client", _post(WHOLE, path=b"/v1/messages")),
        "connected",
        ("upstream", SSE[:150]),
        "upstream-eof",
    ),
    "whole-answer-paused": script(
        ("client", _post(WHOLE, path=b"/v1/messages") + _post(WHOLE, path=b"/v1/messages")),
        "connected",
        "pause",
        ("upstream", SSE),
        ("advance", b"\x40"),
        "resume",
        "connected",
        ("upstream", SSE),
    ),
    "llm-stream": script(
        ("client", _post(LLM, b"application/llm-request+json")), "connected", ("upstream", SSE)
    ),
    "keepalive-then-timeout": script(
        ("client", _post(BODY)), "connected", "tick", "tick", ("advance", b"\xff"), "tick"
    ),
    "upstream-reset": script(
        ("client", _post(LLM, b"application/llm-request+json")),
        "connected",
        ("upstream", SSE[:150]),
        "upstream-failed",
    ),
    "client-full": script(
        ("client", _post(BODY)),
        "connected",
        "pause",
        ("upstream", SSE[:150]),
        ("advance", b"\x40"),
        "resume",
    ),
    "client-full-holds-its-socket": script(
        ("client", _post(BODY)),
        "connected",
        ("upstream", SSE_HEAD),
        *[("upstream", LONG)] * 3,  # 180 KB waiting: some of the budget
        "pause",
        ("advance", b"\x10"),
        "resume",
        ("upstream", SSE_END),
    ),
    "client-full-past-the-budget": script(
        ("client", _post(BODY)),
        "connected",
        ("upstream", SSE_HEAD),
        *[("upstream", LONG)] * 2,
        "pause",  # 120 KB waiting: within the allowance
        *[("upstream", LONG)] * 2,
        "pause",  # 240 KB: past the budget, aborted
        ("upstream", SSE_END),
    ),
    "pooled-twice": script(
        ("client", _post(BODY)),
        "connected",
        ("upstream", SSE),
        ("client", _post(BODY)),
        "connected",
        "upstream-eof",
        "connected",
        ("upstream", SSE),
    ),
    "head-slowloris": script(("client", b"POST /v1/chat"), ("advance", b"\x20"), "tick"),
    "expect-continue": script(
        (
            "client",
            _post(b"", extra=b"Expect: 100-continue\r\n").replace(
                b"Length: 0", b"Length: %d" % len(BODY)
            ),
        ),
        ("client", BODY),
        "connected",
        ("upstream", SSE),
    ),
    "head-and-pipeline": script(
        (
            "client",
            b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
        )
    ),
    "cl-and-te": script(("client", _post(BODY, extra=b"Transfer-Encoding: chunked\r\n"))),
    "models": script(
        ("client", b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"),
        "connected",
        ("upstream", b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"),
    ),
    "bad-request-id": script(
        (
            "client",
            _post(BODY.replace(b'"stream"', b'"metadata":{"request_id":"a\\r\\nb"},"stream"')),
        ),
        "connected",
        ("upstream", SSE),
    ),
    "big-llm-work": script(
        (
            "client",
            _post(LLM.replace(b'"hi"', b'"' + b"h" * 600 + b'"'), b"application/llm-request+json"),
        ),
        "work",
        "connected",
        ("upstream", SSE),
        "shutdown",
    ),
    "a-neighbour-makes-room": script(
        ("neighbour", bytes([40])),  # 40 KiB of the 64 KiB budget waits in its socket
        ("client", _post(BODY)),
        "connected",
        ("upstream", SSE_HEAD),
        *[("upstream", LONG)] * 3,
        ("advance", b"\x10"),  # 2 s later
        "pause",  # 180 KB waiting: room once the neighbour's hold is taken back
        ("advance", b"\x10"),
        "resume",
        ("upstream", SSE_END),
    ),
    "upstream-full": script(  # a body going through that the upstream stops taking
        ("client", _post(b'{"model":"m","stream":true,"pad":"' + b"x" * 600 + b'"}')[:400]),
        "connected",
        ("upstream-full", (300_000).to_bytes(3, "big")),
        ("advance", b"\x10"),
        ("upstream-full", (200_000).to_bytes(3, "big")),  # (it took some)
        "tick",
        "upstream-took",
    ),
    "error-status": script(
        ("client", _post(BODY)),
        "connected",
        (
            "upstream",
            b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nContent-Length: 2\r\n\r\n{}",
        ),
    ),
    "gemini-array": script("gemini-upstream", ("client", _ARRAY), "connected", ("upstream", GEM)),
    "gemini-array-keepalive-then-broken": script(
        "gemini-upstream",
        ("client", _ARRAY),
        "connected",
        "tick",
        ("upstream", GEM[: len(SSE_HEAD) + 40]),
        ("upstream", GEM[len(SSE_HEAD) + 40 : -7]),
        "upstream-failed",
    ),
    "gemini-array-cut": script(
        "gemini-upstream", ("client", _ARRAY), "connected", ("upstream", GEM[:-30]), "upstream-eof"
    ),
}


def write_seeds() -> None:
    folder = Path(__file__).resolve().parent / "corpus" / "gateway_session"
    folder.mkdir(exist_ok=True)
    for name, data in SEEDS.items():
        (folder / name).write_bytes(data)


if __name__ == "__main__":
    if sys.argv[1:] == ["--seeds"]:
        write_seeds()
    else:
        from _harness import fuzz

        fuzz(test_one_input)
