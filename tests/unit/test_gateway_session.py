"""`GatewaySession`, sans-IO: a client's bytes and an upstream's bytes in, the client's bytes
and the server's actions out, time passed in. A small in-memory driver plays the server (it
does what each action says) and h11 reads what the client would see."""

from __future__ import annotations

import errno
import json
import os
from typing import Any, Final

import h11
import pytest

from svir_proto.connection import ClientConnection
from svir_proto.gateway import (
    PIPELINED,
    Abort,
    Close,
    Connect,
    Done,
    GatewayConfig,
    GatewaySession,
    GatewayState,
    More,
    PauseClient,
    PauseUpstream,
    Release,
    ResumeClient,
    ResumeUpstream,
    ToUpstream,
    Work,
    starved,
)
from svir_proto.gateway._cost import BodyCost
from svir_proto.gateway._serverside import ServerSide
from svir_proto.gateway.config import MIN_TAKEN, PARTIAL_ALLOWANCE
from svir_proto.llmstream import LLMStreamDecoder
from svir_proto.openai import ChatStreamDecoder, Endpoint
from svir_proto.responses import ResponsesStreamDecoder
from tests.helpers import CONFORMANCE

UPSTREAM = Endpoint.parse("http://upstream.test:8000")
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
TEXT = b'data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\n'
TEXT += b"data: [DONE]\n\n"
TOOLS = (CONFORMANCE / "openai" / "wire-3.3-tool-calls.sse").read_bytes()
LLM_MEDIA = "application/llm-request+json"
"""A client of the translated stream: its answer ends at the upstream's end marker, and the
upstream's body drains on (a relay's goes on to its client: the trailing tests)."""
LLM = json.dumps(
    json.loads((CONFORMANCE / "llmstream" / "draft-4-all-fields.request.json").read_text())[
        "request"
    ]
).encode()


def openai_body(*, stream: bool = True, **extra: Any) -> bytes:
    doc = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    return json.dumps({**doc, **extra}).encode()


def post(body: bytes, *, media: str = "application/json", **headers: str) -> bytes:
    head = {"Host": "gw", "Content-Type": media, "Content-Length": str(len(body)), **headers}
    lines = ["POST /v1/chat/completions HTTP/1.1", *(f"{k}: {v}" for k, v in head.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def get(target: str, method: str = "GET") -> bytes:
    return f"{method} {target} HTTP/1.1\r\nHost: gw\r\n\r\n".encode()


def sse_response(body: bytes, *, chunked: bool = True, status: int = 200) -> bytes:
    media = "text/event-stream" if status == 200 else "application/json"
    if not chunked:
        return (
            f"HTTP/1.1 {status} X\r\nContent-Type: {media}\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode() + body
    head = f"HTTP/1.1 {status} X\r\nContent-Type: {media}\r\nTransfer-Encoding: chunked\r\n\r\n"
    return head.encode() + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)


class Driver:
    """Plays the server: does what the session's actions say, and keeps what it wrote."""

    def __init__(self, state: GatewayState | None = None, **options: Any) -> None:
        """``state``: another driver's (a connection beside it); else a gateway of its own,
        with ``options``."""
        if state is None:
            config = GatewayConfig(upstream=UPSTREAM, **options)
            n = iter(range(1, 1000))
            state = GatewayState(config, new_id=lambda: f"id-{next(n)}", wall=lambda t: 1000)
        self.state = state
        self.session = GatewaySession(self.state, 0.0)
        self.client = bytearray()  # what the client received
        self.upstream = bytearray()  # what the upstream received
        self.seen: list[Any] = []  # every action, in order
        self.closed = False
        self.connecting = False
        self.released: list[ClientConnection | None] = []
        self.work: list[Work] = []
        self.more = 0  # `More` actions not yet acted on

    def run(self, data: bytes) -> None:
        self.client += data
        for action in self.session.actions:
            self.seen.append(action)
            if isinstance(action, ToUpstream):
                self.upstream += action.data
            elif isinstance(action, Connect):
                self.connecting = True
            elif isinstance(action, Release):
                self.released.append(action.connection)
            elif isinstance(action, Close):
                self.closed = True
            elif isinstance(action, Work):
                self.work.append(action)
            elif isinstance(action, More):
                self.more += 1
        self.session.actions.clear()

    def pipelined(self, now: float = 1.0) -> int:
        """Call `client_more` while the session asks (`More`), as a server's loop does on
        its next turn; how many times."""
        turns = 0
        while self.more:
            self.more -= 1
            turns += 1
            self.run(self.session.client_more(now))
        return turns

    def send(self, data: bytes, now: float = 1.0) -> None:
        self.run(self.session.client_data(data, now))

    def connect(self, now: float = 1.0, conn: ClientConnection | None = None) -> None:
        assert self.connecting
        self.connecting = False
        self.run(self.session.upstream_connected(now, conn))

    def answer(self, data: bytes, now: float = 2.0) -> None:
        self.run(self.session.upstream_data(data, now))

    def tick(self, now: float) -> None:
        self.run(self.session.tick(now))

    def kinds(self) -> list[str]:
        return [type(a).__name__ for a in self.seen]

    def done(self) -> list[Done]:
        return [a for a in self.seen if isinstance(a, Done)]


def read(data: bytes, method: str = "POST") -> list[tuple[int, dict[str, str], bytes, bool]]:
    """Every response in what the client received: status, headers, body, whether it ended."""
    conn = h11.Connection(h11.CLIENT)
    out: list[tuple[int, dict[str, str], bytes, bool]] = []
    conn.send(h11.Request(method=method, target="/", headers=[("Host", "gw")]))
    conn.send(h11.EndOfMessage())
    conn.receive_data(bytes(data))
    status, headers, body = 0, {}, b""
    while True:
        try:
            event = conn.next_event()
        except h11.RemoteProtocolError:
            break
        if isinstance(event, h11.InformationalResponse):
            continue
        if isinstance(event, h11.Response):
            status = event.status_code
            headers = {k.decode(): v.decode() for k, v in event.headers}
            body = b""
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            out.append((status, headers, body, True))
            if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                return out
            conn.start_next_cycle()
            conn.send(h11.Request(method=method, target="/", headers=[("Host", "gw")]))
            conn.send(h11.EndOfMessage())
        else:
            break
    if status and (not out or out[-1][0] != status or out[-1][2] != body):
        out.append((status, headers, body, False))
    return out


def relayed(body: bytes, **options: Any) -> Driver:
    d = Driver(**options)
    d.send(post(openai_body()))
    d.connect()
    d.answer(sse_response(body))
    return d


# -- relay and translation (Rule 1) ------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["wire-3.3-tool-calls", "azure-async", "keepalive-and-ping", "openai-refusal"]
)
def test_an_openai_client_gets_the_upstreams_bytes_as_they_came(name: str) -> None:
    body = (CONFORMANCE / "openai" / f"{name}.sse").read_bytes()
    d = relayed(body)
    ((status, headers, got, ended),) = read(d.client)
    assert (status, got, ended) == (200, body, True)  # byte for byte
    assert headers["x-request-id"] == "id-1"
    assert headers["content-type"] == "text/event-stream"
    assert b"X-Request-Id: id-1\r\n" in d.upstream
    assert d.done()[0].outcome == "ok"
    assert d.state.streams == 0
    assert d.released  # the upstream connection was given back, or closed


def test_null_and_usage_details_are_what_the_upstream_sent() -> None:
    chunk = (
        b'data: {"id":"c","object":"chat.completion.chunk","system_fingerprint":"fp",'
        b'"choices":[{"index":0,"delta":{"role":"assistant","content":null},'
        b'"finish_reason":null}]}\n\n'
        b'data: {"id":"c","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1,'
        b'"total_tokens":6,"prompt_tokens_details":{"cached_tokens":4},'
        b'"completion_tokens_details":{"reasoning_tokens":0}},"timings":{"x":1}}\n\n'
        b"data: [DONE]\n\n"
    )
    d = relayed(chunk)
    ((_, _, got, _),) = read(d.client)
    assert b'"content":null' in got
    assert b'"cached_tokens":4' in got
    assert b'"timings":{"x":1}' in got
    assert got == chunk


def to_llm_stream(answer: bytes, **extra: Any) -> tuple[Driver, dict[str, str], LLMStreamDecoder]:
    """An LLM-Stream client's request (``extra``: more of it), translated to Chat; the
    upstream's ``answer``; and what the client got, decoded."""
    doc = {
        "version": "1.0", "stream": True, "model": "m",
        "messages": [{"role": "user", "content": "hi"}], **extra,
    }  # fmt: skip
    d = Driver()
    d.send(post(json.dumps(doc).encode(), media="application/llm-request+json"))
    assert b"/chat/completions" in d.upstream or d.connecting
    d.connect()
    d.answer(sse_response(answer))
    ((status, headers, got, ended),) = read(d.client)
    assert (status, ended) == (200, True)
    decoder = LLMStreamDecoder()
    decoder.feed(got)
    decoder.close()
    return d, headers, decoder


def test_an_llm_stream_client_gets_the_events_translated() -> None:
    tools = [{"name": "lookup", "description": "", "parameters": {}}]
    _, headers, decoder = to_llm_stream(TOOLS, tools=tools)
    assert decoder.result.complete
    assert decoder.result.usage is not None
    assert [c.name for c in decoder.result.tool_calls] == ["lookup", "lookup"]
    assert headers["x-request-id"] == "id-1"


def test_a_partial_event_waits_for_the_rest() -> None:
    d = Driver()
    d.send(post(openai_body()))
    d.connect()
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    first = b'data: {"choices":[{"delta":{"content":"a"}}]}\n\ndata: {"choi'
    d.answer(head + b"%x\r\n%s\r\n" % (len(first), first))
    ((_, _, got, _),) = read(d.client)
    assert got == first[: first.index(b"\n\n") + 2]  # only the whole event went out
    rest = b'ces":[{"delta":{"content":"b"}}]}\n\n'
    d.answer(b"%x\r\n%s\r\n" % (len(rest), rest))
    ((_, _, got, _),) = read(d.client)
    assert got == first + rest


@pytest.mark.parametrize("ending", [b"\r\n\r\n", b"\r\r", b"\n\r\n"])
def test_every_line_end_ends_an_event(ending: bytes) -> None:
    event = b'data: {"choices":[{"delta":{"content":"a"}}]}' + ending
    d = Driver()
    d.send(post(openai_body()))
    d.connect()
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    d.answer(head + b"%x\r\n%s\r\n" % (len(event), event))
    ((_, _, got, _),) = read(d.client)
    assert got == event


def test_a_crlf_blank_line_split_before_its_lf_waits_for_it() -> None:
    """A read that ends ``\\r\\n\\r`` may end an event (CR is a line end) or hold the first
    half of a CRLF: the relay waits for the next byte, so that the LF is never the first byte
    of the client's next piece, after something of ours (found by the relay's property test)."""
    event = b'data: {"choices":[{"delta":{"content":"a"}}]}\r\n\r\n'
    d = Driver()
    d.send(post(openai_body()))
    d.connect()
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    d.answer(head + b"%x\r\n%s\r\n" % (len(event) - 1, event[:-1]))
    ((_, _, got, _),) = read(d.client)
    assert got == b""
    d.answer(b"%x\r\n%s\r\n" % (len(event), b"\n" + event[:-1]))
    ((_, _, got, _),) = read(d.client)
    assert got == event


def test_a_cut_upstream_stays_a_cut_for_the_client() -> None:
    d = Driver()
    d.send(post(openai_body()))
    d.connect()
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    d.answer(head + b"%x\r\n%s\r\n" % (300, TOOLS[:300]))
    d.answer(b"")  # the upstream closed inside the body
    (response,) = read(d.client)
    assert response[3] is False  # no end of body: the client sees the cut
    assert d.closed
    assert d.done()[0].outcome == "cut"


def test_an_upstream_that_resets() -> None:
    d = Driver()
    d.send(post(openai_body()))
    d.connect()
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    d.answer(head)
    d.run(d.session.upstream_failed("connection reset", 3.0))
    assert d.closed
    assert read(d.client)[0][3] is False


@pytest.mark.parametrize("waited", [False, True])
def test_an_upstream_that_resets_before_any_byte(waited: bool) -> None:
    """Attack (hostile battery ``rst-head``): a reset before the answer's head ended the
    exchange with no event at all, so the client heard nothing until the progress deadline
    (a timeout, not what happened). Now: a 502, or, once a keep-alive sent the stream's head,
    an error and the end marker."""
    d = Driver(keepalive=1.0)
    d.send(post(openai_body()))
    d.connect()
    if waited:
        d.tick(2.5)  # a keep-alive: the stream's head went out
        assert b": keep-alive" in bytes(d.client)
    d.run(d.session.upstream_failed("reset by peer", 2.6))
    ((status, _, body, ended),) = read(d.client)
    assert ended
    if waited:
        decoder = ChatStreamDecoder()
        decoder.feed(body)
        decoder.close()
        assert decoder.result.error is not None
        assert "reset by peer" in decoder.result.error.message
        assert body.endswith(b"data: [DONE]\n\n")
    else:
        assert status == 502
        assert "reset by peer" in json.loads(body)["error"]["message"]
    assert d.released == [None]
    assert [x.outcome for x in d.done()] == ["failed"]


def test_an_upstream_that_breaks_the_protocol_ends_with_an_error_in_the_stream() -> None:
    d = relayed(b'data: {"choices":[{"delta":{"content":"a"}}]}\n\ndata: {bad\n\n')
    ((status, _, got, ended),) = read(d.client)
    assert (status, ended) == (200, True)
    assert b"data: {bad" not in got  # the event that broke it is not passed on
    decoder = ChatStreamDecoder()
    decoder.feed(got)
    decoder.close()
    assert decoder.result.text == "a"
    assert decoder.result.error is not None
    assert "protocol" in decoder.result.error.message


@pytest.mark.parametrize("delta", [b'"\xc3\x28"', b"5"])  # (not UTF-8; not a string, once
@pytest.mark.parametrize("at", [3, 6])  # its number was read)
def test_a_relayed_responses_stream_that_breaks_ends_in_the_upstreams_response(
    at: int, delta: bytes
) -> None:
    """Attack 67 F1: the error that ends a relayed Responses stream the upstream broke was a
    second lifecycle (``response.created`` of another id, numbered from 0 again); it is the
    upstream's response's end, numbered on from its last event the client got."""
    events = (CONFORMANCE / "responses" / "openai-text.sse").read_bytes().split(b"\n\n")
    broken = b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta",'
    broken += b'"sequence_number":%d,"delta":%b}' % (at, delta)
    body = b"\n\n".join([*events[:at], broken, *events[at:]])
    d = Driver(upstream_dialect="responses")
    d.send(post(json.dumps({"model": "m", "stream": True, "input": "hi"}).encode()).replace(
        b"/v1/chat/completions", b"/v1/responses"))  # fmt: skip
    d.connect()
    d.answer(sse_response(body))
    ((status, _, got, ended),) = read(d.client)
    assert (status, ended) == (200, True)
    assert got.startswith(b"\n\n".join(events[:at]) + b"\n\n")  # as they came
    decoder = ResponsesStreamDecoder()
    out = decoder.feed(got) + decoder.close()  # (no sequence gap: it would raise)
    assert [type(e).__name__ for e in out].count("StreamStarted") == 1
    tail = [json.loads(line[6:]) for line in got.splitlines() if line.startswith(b"data: ")]
    assert [(e["type"], e["sequence_number"]) for e in tail[at:]] == [
        ("error", at),
        ("response.failed", at + 1),
    ]
    assert tail[-1]["response"]["id"] == tail[0]["response"]["id"]
    assert decoder.result.error is not None
    assert "protocol" in decoder.result.error.message


CUT_PAIR = (
    b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"A\\ud83d"}}]}\n\n'
    b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"\\ude00B"}}]}\n\n'
    b'data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)
"""A surrogate pair a server cut in UTF-16 units, in two chunks."""


def test_a_surrogate_pair_split_across_two_relayed_chunks_goes_on_as_it_came() -> None:
    """Audit 36: a surrogate pair a server cut in UTF-16 units, in two chunks (valid JSON,
    which a JavaScript client joins) ended a relayed stream with the gateway's own error in
    the upstream's bytes. Bytes that are not UTF-8 are not JSON: they still fail (the hostile
    battery's ``invalid-utf8``)."""
    body = CUT_PAIR
    d = relayed(body)
    ((status, _, got, ended),) = read(d.client)
    assert (status, got, ended) == (200, body, True)  # byte for byte
    assert d.done()[0].outcome == "ok"


def test_a_surrogate_pair_split_across_two_chunks_is_one_character_translated() -> None:
    """Audit 36 r07, the translated half: the pair above, to an LLM-Stream client, is the one
    character a JavaScript client would show (`svir_proto._halves`), not an error."""
    d, _, decoder = to_llm_stream(CUT_PAIR)
    assert decoder.result.text == "A\U0001f600B"
    assert decoder.result.complete
    assert d.done()[0].outcome == "ok"


def test_bad_http_from_the_upstream() -> None:
    d = Driver()
    d.send(post(openai_body()))
    d.connect()
    d.answer(b"NONSENSE\r\n\r\n")
    ((status, _, body, _),) = read(d.client)
    assert status == 502
    assert "protocol" in json.loads(body)["error"]["message"]


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("dialect", ["openai", "llm-stream"])
def test_an_upstream_answer_framed_twice_is_a_failure(stream: bool, dialect: str) -> None:
    """Attack (hostile battery ``both-framing``, fuzz seed
    ``crash-relayed-content-length-beside-chunked``): an upstream answer with Content-Length
    and Transfer-Encoding both was relayed with its Content-Length and a chunked body, and
    `relay_data` raised (h11: too much data). RFC 9112 6.3: handled as an error."""
    d = Driver()
    if dialect == "openai":
        d.send(post(openai_body(stream=stream)))
    else:
        doc = {**json.loads(LLM), "tools": []}
        d.send(post(json.dumps(doc).encode(), media="application/llm-request+json"))
        for work in d.work:
            d.run(d.session.worked(work.run(), 1.0))
    d.connect()
    two = sse_response(TEXT).replace(b"\r\n\r\n", b"\r\nContent-Length: 5\r\n\r\n", 1)
    d.answer(two)
    ((status, _, body, ended),) = read(d.client)
    assert status == 502
    assert ended
    assert "Content-Length and Transfer-Encoding" in json.loads(body)["error"]["message"]
    assert d.released == [None]
    assert d.state.streams == 0


def test_a_connection_closed_by_the_client_reads_nothing_after() -> None:
    """Attack (fuzz seed ``crash-pipelined-after-a-closing-local-request``): HTTP/1.0 (or
    ``Connection: close``) and then another request in the same bytes: h11 raised for the
    bytes after a request that ends its connection, and the session answered twice (h11
    refused the second answer). RFC 9112 9.6: what follows is dropped."""
    for first in (
        b"GET /healthz HTTP/1.0\r\nHost: gw\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n",
    ):
        d = Driver()
        d.send(first + get("/healthz") + post(openai_body()))
        got = read(d.client)
        assert [g[0] for g in got] == [200]
        assert d.closed
        assert not d.connecting


@pytest.mark.parametrize("waited", [False, True])
def test_an_answer_that_is_no_stream_to_a_stream_request_is_a_failure(waited: bool) -> None:
    """Attack (hostile battery ``html``): a 200 ``text/html`` to a request that asked for a
    stream was relayed as it came, a success the client cannot read. It is what the decoder
    says of it (not a stream), in the client's dialect; ``waited``: after a keep-alive."""
    d = Driver(keepalive=1.0)
    d.send(post(openai_body()))
    d.connect()
    if waited:
        d.tick(2.5)
    page = b"<html><body>hello</body></html>"
    d.answer(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n%s"
        % (len(page), page)
    )
    ((status, _, body, ended),) = read(d.client)
    assert ended
    if waited:
        decoder = ChatStreamDecoder()
        decoder.feed(body)
        decoder.close()
        assert decoder.result.error is not None
        assert "text/html" in decoder.result.error.message
    else:
        assert status >= 500
        assert "text/html" in json.loads(body)["error"]["message"]
    assert [x.outcome for x in d.done()] == ["failed"]


def test_a_stream_nobody_asked_for_that_breaks_is_a_cut() -> None:
    """Attack (hostile battery ``bad-chunk`` to a request for JSON): the upstream streamed
    anyway and then broke the chunk framing; the client, which reads no events, got an error
    event and ``[DONE]`` in a whole body, as if the answer were whole. It is a cut now."""
    d = Driver()
    d.send(post(openai_body(stream=False)))
    d.connect()
    event = b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'
    d.answer(HEAD + b"%x\r\n%s\r\nzz\r\n" % (len(event), event))
    ((status, _, body, ended),) = read(d.client)
    assert status == 200
    assert body == event
    assert not ended
    assert d.done()[0].outcome == "cut"


@pytest.mark.parametrize("status", [401, 403])
def test_an_upstream_401_is_never_the_clients(status: int) -> None:
    d = Driver()
    d.send(post(openai_body()))
    d.connect()
    d.answer(sse_response(b'{"error":{"message":"bad key"}}', status=status))
    ((got, _, body, _),) = read(d.client)
    assert got == 502
    assert json.loads(body)["error"]["code"] == "upstream_authentication"


def test_a_non_stream_answer_is_relayed_as_it_came() -> None:
    answer = b'{"id":"x","object":"chat.completion","choices":[{"message":{"content":null}}]}'
    d = Driver()
    d.send(post(openai_body(stream=False)))
    d.connect()
    d.answer(sse_response(answer, chunked=False, status=200).replace(b"text/event-stream", b""))
    ((status, headers, body, ended),) = read(d.client)
    assert (status, body, ended) == (200, answer, True)
    assert headers["content-length"] == str(len(answer))
    d.tick(10_000.0)  # no keep-alive goes into a JSON answer
    assert read(d.client)[0][2] == answer


def test_an_upstream_error_body_is_relayed_with_its_status() -> None:
    error = b'{"error":{"message":"no such model","code":"model_not_found"}}'
    d = Driver()
    d.send(post(openai_body()))
    d.connect()
    d.answer(sse_response(error, chunked=False, status=404))
    ((status, _, body, _),) = read(d.client)
    assert (status, body) == (404, error)
    assert d.done()[0].outcome == "failed"


def test_an_upstream_error_whose_body_comes_in_a_later_read_is_relayed_whole() -> None:
    """Client round 29: the exchange ended at an error's head (its outcome was set there), and
    the body that came in the next read was lost."""
    error = b'{"error":{"message":"no such model","code":"model_not_found"}}'
    whole = sse_response(error, chunked=False, status=404)
    head, body = whole.split(b"\r\n\r\n", 1)
    d = Driver()
    d.send(post(openai_body()))
    d.connect()
    d.answer(head + b"\r\n\r\n")
    assert d.done() == []  # not over before its body
    d.answer(body, now=2.5)
    ((status, _, got, ended),) = read(d.client)
    assert (status, got, ended) == (404, error, True)
    assert d.done()[0].outcome == "failed"


@pytest.mark.parametrize("pieces", [1, 2])
def test_a_relay_whose_calls_fail_the_checks_at_done_ends_as_the_upstream_ended_it(
    pieces: int,
) -> None:
    """Attack 29: a call with no id made the checks at ``[DONE]`` fail, and the gateway's
    error and a second ``[DONE]`` followed the upstream's. Nothing of ours follows it now."""
    call = b'{"index":0,"id":"","type":"function","function":{"name":"f","arguments":"{}"}}'
    body = (
        b'data: {"id":"c","choices":[{"index":0,"delta":{"tool_calls":[%s]}}]}\n\n' % call
        + b'data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n'
        + b"data: [DONE]\n\n"
    )
    d = Driver()
    d.send(post(openai_body()))
    d.connect()
    whole = sse_response(body)
    if pieces == 1:
        d.answer(whole)
    else:
        cut = whole.index(b"data: [DONE]")
        d.answer(whole[:cut])
        d.answer(whole[cut:], now=2.5)
    ((status, _, got, ended),) = read(d.client)
    assert (status, got, ended) == (200, body, True)
    assert d.done()[0].outcome == "ok"


@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_the_model_listing_and_one_model_are_relayed(method: str) -> None:
    listing = b'{"object":"list","data":[{"id":"a","created":1,"owned_by":"me"}]}'
    for target in ("/v1/models", "/v1/models/a"):
        d = Driver()
        d.send(get(target, method))
        d.connect()
        assert d.upstream.startswith(f"GET {target} ".encode())  # a HEAD as a GET
        d.answer(sse_response(listing, chunked=False).replace(b"text/event-stream", b"x/json"))
        ((status, headers, body, ended),) = read(d.client, method)
        assert (status, ended) == (200, True)
        assert body == (listing if method == "GET" else b"")
        assert headers["content-length"] == str(len(listing))


# -- keep-alives and liveness (Rules 3 and 4) ----------------------------------------------------


def test_keep_alive_comments_are_not_progress() -> None:
    d = Driver(progress_timeout=30.0, keepalive=0.0)
    d.send(post(openai_body()))
    d.connect()
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    d.answer(head, now=2.0)
    for t in range(3, 40, 3):
        d.answer(b"%x\r\n%s\r\n" % (len(b": ping\n\n"), b": ping\n\n"), now=float(t))
        d.tick(float(t))
    assert [done.upstream_failure for done in d.done()] == ["timeout"]
    ((_, _, body, ended),) = read(d.client)
    assert ended
    decoder = ChatStreamDecoder()
    decoder.feed(body)
    decoder.close()
    assert decoder.result.error is not None
    assert "no progress" in decoder.result.error.message


def _chunk(delta: object, *, id: str = "c1") -> bytes:
    """A relayed chunk: ``delta`` its content (a string), its delta (a dict), or ``None``
    for a chunk of no choice."""
    if isinstance(delta, str):
        delta = {"content": delta}
    choices = [] if delta is None else [{"index": 0, "delta": delta}]
    doc = {"id": id, "object": "chat.completion.chunk", "created": 1, "model": "m"}
    return b"data: " + json.dumps({**doc, "choices": choices}).encode() + b"\n\n"


_PING: Final = "ping"  # an event of a type with no meaning in Chat Completions
_CARRIED: Final = [
    "x",
    {"function_call": {"arguments": '{"a": 1'}},  # the legacy functions' calls
    {"audio": {"id": "a1", "data": "UklGRg==", "transcript": "hi"}},
]


@pytest.mark.parametrize("per_read", [1, 3])
@pytest.mark.parametrize("content", ["", None, _PING, *_CARRIED])
def test_a_relayed_chunk_that_carries_nothing_is_no_progress(
    per_read: int, content: object
) -> None:
    """Attack round 31, F3: an upstream that sends a chunk of empty content, or of no choice,
    or an ``event: ping`` (the review of round 32), every few seconds held a relayed stream
    past ``--timeout``, which a translated one does not outlive; a chunk of content keeps it,
    and so does one of what the decoder gives no event for but the client reads (a legacy
    function call, audio). After a first chunk of content, so that the watcher learned the
    envelope the empty ones repeat."""
    d = Driver(progress_timeout=30.0, keepalive=0.0)
    d.send(post(openai_body()))
    d.connect()
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    first = _chunk("Hello")
    d.answer(head + b"%x\r\n%s\r\n" % (len(first), first), now=2.0)
    for t in range(3, 60, 3):
        one = b"event: ping\ndata: {}\n\n" if content == _PING else _chunk(content)
        body = one * per_read
        d.answer(b"%x\r\n%s\r\n" % (len(body), body), now=float(t))
        d.tick(float(t))
    failures = [done.upstream_failure for done in d.done()]
    assert failures == ([] if content in _CARRIED else ["timeout"])


def _usage_chunk(completion: int) -> bytes:
    usage = {"prompt_tokens": 1, "completion_tokens": completion, "total_tokens": 1 + completion}
    doc = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    return b"data: " + json.dumps({**doc, "choices": [], "usage": usage}).encode() + b"\n\n"


_OPENED: Final = {"tool_calls": [{"index": 0, "id": "t", "type": "function",
                                  "function": {"name": "f", "arguments": ""}}]}  # fmt: skip
_EMPTY_PIECE: Final = {"tool_calls": [{"index": 0, "function": {"arguments": ""}}]}


@pytest.mark.parametrize("client", ["relayed", "translated"])
@pytest.mark.parametrize("shape", ["usage", "piece", "new usage"])
def test_a_keep_alive_in_the_shape_of_usage_or_an_empty_piece_is_no_progress(
    client: str, shape: str
) -> None:
    """Attack 35, F3: a chunk of no choice whose usage is the last one again, and an empty
    piece of a call's arguments, held a stream past ``--timeout``, relayed or translated (any
    event counted): they are no progress (`svir_proto._progress`); a usage that changes is."""
    d = Driver(progress_timeout=30.0, keepalive=0.0)
    if client == "relayed":
        d.send(post(openai_body()))
    else:
        d.send(post(LLM, media="application/llm-request+json"))
    d.connect()
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    first = _chunk("Hello") + (_chunk(_OPENED) if shape == "piece" else b"")
    d.answer(head + b"%x\r\n%s\r\n" % (len(first), first), now=2.0)
    for t in range(3, 60, 3):
        if shape == "piece":
            one = _chunk(_EMPTY_PIECE)
        else:
            one = _usage_chunk(t if shape == "new usage" else 0)
        d.answer(b"%x\r\n%s\r\n" % (len(one), one), now=float(t))
        d.tick(float(t))
    failures = [done.upstream_failure for done in d.done()]
    assert failures == ([] if shape == "new usage" else ["timeout"])


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 204 No Content\r\nContent-Type: text/event-stream\r\n\r\n",
    ],
)
def test_a_stream_cut_before_its_first_event_is_a_status(answer: bytes) -> None:
    """Attack 35, F4: an empty stream (a 200 of no bytes, a 204 that says event-stream) went
    to a translated streaming client as a 200 head and then a broken connection: nothing of
    it had gone out, so it is a 502 in the client's dialect, as for a whole answer."""
    d = Driver()
    d.send(post(LLM, media="application/llm-request+json"))
    d.connect()
    d.answer(answer, now=2.0)
    ((status, _, body, ended),) = read(d.client)
    assert (status, ended) == (502, True)
    assert b"cut before its end" in body or b"not_a_stream" in body, body


def test_a_waiting_stream_gets_keep_alives_and_then_its_head() -> None:
    d = Driver(keepalive=5.0)
    d.send(post(openai_body()))
    d.connect()
    assert d.session.deadline == pytest.approx(6.0)
    d.tick(6.0)
    ((status, _, body, _),) = read(d.client)
    assert (status, body) == (200, b": keep-alive\n\n")
    d.answer(sse_response(TOOLS), now=7.0)
    ((status, _, body, ended),) = read(d.client)
    assert (status, ended) == (200, True)
    assert body == b": keep-alive\n\n" + TOOLS


def test_a_failure_after_a_keep_alive_is_an_error_in_the_stream() -> None:
    d = Driver(keepalive=5.0)
    d.send(post(openai_body()))
    d.connect()
    d.tick(6.0)
    d.answer(sse_response(b'{"error":{"message":"slow down"}}', status=429), now=7.0)
    ((status, _, body, ended),) = read(d.client)
    assert (status, ended) == (200, True)
    decoder = ChatStreamDecoder()
    decoder.feed(body)
    decoder.close()
    assert decoder.result.error is not None
    assert decoder.result.error.message == "slow down"


def test_an_llm_stream_client_gets_keep_alives_too() -> None:
    d = Driver(keepalive=5.0)
    d.send(post(LLM, media="application/llm-request+json"))
    d.connect()
    d.tick(6.0)
    assert read(d.client)[0][2] == b": keep-alive\n\n"


def test_no_keep_alive_for_a_request_that_does_not_stream() -> None:
    d = Driver(keepalive=5.0)
    d.send(post(openai_body(stream=False)))
    d.connect()
    assert d.session.deadline == pytest.approx(1.0 + 300.0)


def test_an_upstream_that_makes_no_progress_before_its_head() -> None:
    d = Driver(progress_timeout=10.0, keepalive=0.0)
    d.send(post(openai_body()))
    d.connect()
    d.tick(5.0)
    assert not d.client
    d.tick(11.5)
    ((status, _, body, _),) = read(d.client)
    assert status == 504
    assert "no progress" in json.loads(body)["error"]["message"]


def test_an_upstream_that_cannot_be_reached_in_time() -> None:
    d = Driver(connect_timeout=3.0)
    d.send(post(openai_body()))
    assert d.connecting
    d.tick(5.0)
    ((status, _, _, _),) = read(d.client)
    assert status == 504
    d2 = Driver()
    d2.send(post(openai_body()))
    d2.run(d2.session.upstream_failed("connection refused", 1.5))
    ((status, _, body, _),) = read(d2.client)
    assert status == 502
    assert "refused" in json.loads(body)["error"]["message"]


@pytest.mark.parametrize("number", [errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM])
def test_a_connect_the_gateway_had_no_resources_for_is_a_503(number: int) -> None:
    """Attack 71 F2: out of descriptors, the gateway answered 502 "cannot reach its upstream"
    (the upstream blamed, no ``Retry-After``): its own overload is a 503, as a full
    ``max_streams`` is, and is counted."""
    failed = OSError(number, os.strerror(number))
    assert starved(failed)
    d = Driver()
    d.send(post(openai_body()))
    d.run(d.session.upstream_failed(str(failed), 1.5, starved=starved(failed)))
    ((status, headers, body, _),) = read(d.client)
    assert (status, headers["retry-after"]) == (503, "1")
    error = json.loads(body)["error"]
    assert "short of its own resources" in error["message"]
    assert error["code"] == "overloaded"
    assert d.state.metrics.refused["starved"] == 1


@pytest.mark.parametrize(
    "error", [OSError(errno.ECONNREFUSED, "refused"), OSError("no errno"), ValueError("x")]
)
def test_a_connect_that_failed_for_the_upstream_is_not_starved(error: BaseException) -> None:
    assert not starved(error)


def test_a_connect_to_several_addresses_is_starved_by_its_cause() -> None:
    """anyio's connect to a host of several addresses raises "All connection attempts failed"
    from a group of each attempt's error (attack 73: read, a 502 still)."""

    class Group(Exception):
        def __init__(self, *errors: BaseException) -> None:
            self.exceptions = errors

    failed = OSError("All connection attempts failed")
    failed.__cause__ = Group(OSError(errno.ECONNREFUSED, "refused"), OSError(errno.EMFILE, "x"))
    assert starved(failed)
    failed.__cause__ = Group(OSError(errno.ECONNREFUSED, "refused"))
    assert not starved(failed)


def test_a_connection_that_comes_too_late_is_given_back() -> None:
    d = Driver(connect_timeout=3.0)
    d.send(post(openai_body()))
    d.tick(5.0)  # the attempt is given up...
    d.connect(now=6.0)  # ...and a connection that comes anyway is not used
    assert d.released == [None, None]


# -- deadlines on the client (Rule 3) ------------------------------------------------------------


def test_a_head_that_does_not_come_in_time_is_408() -> None:
    d = Driver(head_timeout=10.0)
    d.send(b"POST /v1/chat/completions HTTP/1.1\r\nHo", now=1.0)
    assert d.session.deadline == pytest.approx(11.0)
    d.send(b"st: gw\r\n", now=9.0)  # trickling does not move the deadline
    d.tick(11.5)
    ((status, _, _, _),) = read(d.client)
    assert status == 408
    assert d.closed


def test_a_silent_new_connection_and_an_idle_kept_alive_one_are_closed() -> None:
    d = Driver(head_timeout=10.0, idle_timeout=20.0)
    assert d.session.deadline == 10.0
    d.tick(10.5)
    assert d.closed
    assert not d.client
    k = Driver(head_timeout=10.0, idle_timeout=20.0)
    k.send(get("/healthz"), now=1.0)
    assert read(k.client)[0][0] == 200
    assert k.session.deadline == pytest.approx(21.0)
    k.tick(15.0)
    assert not k.closed
    k.tick(21.5)
    assert k.closed


def test_a_body_that_stops_coming_is_408() -> None:
    d = Driver(body_timeout=5.0, body_rate=1.0)  # its rate's deadline is far: silence counts
    whole = post(openai_body())
    d.send(whole[:-10], now=1.0)
    assert d.session.deadline == pytest.approx(6.0)
    d.send(whole[-10:-5], now=4.0)  # silence is measured between reads
    assert d.session.deadline == pytest.approx(9.0)
    d.tick(9.5)
    ((status, _, _, _),) = read(d.client)
    assert status == 408


def test_a_held_body_trickled_is_408_by_its_rate_and_gives_its_share_back() -> None:
    """Attack 24: a body held whole holds a share of the budget; trickled a byte at a time, no
    silence ever lasted ``body_timeout``. Once another waits for the budget, it must keep up:
    by ``body_timeout`` plus what came of it over ``body_rate`` from its head's first byte,
    whatever its length says (attack 43 F2: a long length declared bought minutes)."""
    length = len(openai_body())
    d = Driver(body_timeout=5.0, body_rate=10.0, max_buffered=length + 10)
    whole = post(openai_body())
    start = len(whole) - length
    d.send(whole[: start + 20], now=1.0)
    assert d.state.buffered == 20  # (what came: not its length)
    d.send(whole[start + 20 : start + 21], now=6.5)  # nobody waits: silence only
    assert d.session.deadline == pytest.approx(11.5)
    other = GatewaySession(d.state, 6.5)  # a request refused for want of the budget
    ((status, _, _, _),) = read(other.client_data(post(openai_body()), 6.5))
    assert status == 503
    got = 21
    assert d.session.deadline == pytest.approx(1.0 + 5.0 + got / 10.0)
    now = 6.5
    for i in range(start + 21, len(whole) - 1):  # a byte a second: never 5 s of silence
        now += 1.0
        if now >= 1.0 + 5.0 + got / 10.0:
            break
        d.send(whole[i : i + 1], now=now)
        got += 1
        assert d.session.deadline == pytest.approx(min(now + 5.0, 1.0 + 5.0 + got / 10.0))
    due = 1.0 + 5.0 + got / 10.0
    assert now + 5.0 > due  # silence alone would not have ended it
    d.tick(due)
    ((status, _, _, _),) = read(d.client)
    assert status == 408
    assert d.state.buffered == 0
    passed = Driver(body_timeout=5.0, body_rate=10.0, hold_below=10)  # not held: silence only
    passed.send(whole[: start + 1], now=1.0)
    assert passed.state.buffered == 0
    assert passed.session.deadline == pytest.approx(6.0)


def test_any_body_trickled_is_408_by_its_rate_once_others_wait_for_what_it_holds() -> None:
    """Attack 35, F1: the rate deadline held only for a body that holds a share of the budget,
    and only once the budget was refused; bodies trickled a byte at a time held every stream
    slot (and a passed-through one its upstream connection) for ever, and bodies on local
    requests every connection slot. Any body being read now keeps its rate once a connection
    or request was refused for want of a connection, a stream slot or the budget."""
    whole = post(openai_body())
    length = len(openai_body())
    start = len(whole) - length
    due = 1.0 + 5.0 + 2 / 100.0  # (what came of it, two bytes, whatever its length says)
    for options in ({}, {"hold_below": 10}):  # held whole, and passed through
        d = Driver(body_timeout=5.0, body_rate=100.0, max_streams=1, **options)
        d.send(whole[: start + 1], now=1.0)
        if options:
            d.connect(now=1.0)
        assert d.session.deadline == pytest.approx(6.0)  # nobody waits: silence only
        taken = not options  # (a held body holds no slot till whole: another stream has it)
        d.state.streams += taken
        other = GatewaySession(d.state, 2.0)  # a request refused for want of a stream slot
        ((status, _, _, _),) = read(other.client_data(post(openai_body()), 2.0))
        assert status == 503
        d.state.streams -= taken
        d.send(whole[start + 1 : start + 2], now=4.0)
        assert due < 9.0
        assert d.session.deadline == pytest.approx(due)  # before silence's
        d.tick(due)
        ((status, _, _, _),) = read(d.client)
        assert status == 408, options
        assert d.state.streams == 0
        if options:
            assert None in d.released  # its upstream connection is closed
    # a body on a local request, on a connection: the same once a connection was refused
    d = Driver(body_timeout=5.0, body_rate=10.0)
    d.send(b"GET /healthz HTTP/1.1\r\nHost: gw\r\nContent-Length: 20\r\n\r\nx", now=1.0)
    assert d.session.deadline == pytest.approx(6.0)
    d.state.metrics.refused["connections"] += 1  # (the server counts them)
    d.send(b"x", now=4.0)
    assert d.session.deadline == pytest.approx(1.0 + 5.0 + 2 / 10.0)
    # a chunked body's too: a trickle falls behind the rate
    d = Driver(body_timeout=5.0, body_rate=10.0)
    head = (
        post(openai_body())
        .split(b"\r\n\r\n", 1)[0]
        .replace(b"Content-Length: %d" % length, b"Transfer-Encoding: chunked")
    )
    d.send(head + b"\r\n\r\n1\r\n{\r\n", now=1.0)
    d.state.metrics.refused["streams"] += 1
    d.send(b"1\r\n \r\n", now=4.0)
    assert d.session.deadline == pytest.approx(1.0 + 5.0 + 2 / 10.0)


def test_a_large_body_that_stops_coming_after_the_answer_began_is_cut() -> None:
    d = Driver(body_timeout=5.0, hold_below=10)
    whole = post(openai_body())
    d.send(whole[:-10], now=1.0)
    d.connect(now=1.0)
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    d.answer(head, now=2.0)
    d.tick(10.0)
    assert d.closed
    assert None in d.released


def test_a_client_that_reads_nothing_loses_its_stream() -> None:
    d = Driver(send_timeout=10.0)
    d.send(post(openai_body()))
    d.connect()
    d.session.client_paused(3.0)
    d.run(b"")
    # neither the upstream nor the client is read (a client that reads nothing piles nothing up)
    assert [type(a) for a in d.seen[-2:]] == [PauseUpstream, PauseClient]
    d.session.client_resumed(4.0)
    d.run(b"")
    assert [type(a) for a in d.seen[-2:]] == [ResumeUpstream, ResumeClient]
    d.session.client_paused(5.0)
    d.session.client_paused(6.0)  # once is enough
    d.run(b"")
    assert d.session.deadline == pytest.approx(15.0)
    d.tick(15.5)
    assert d.closed
    assert d.released == [None]
    assert d.done()[0].outcome == "cancelled"


def test_a_client_that_floods_while_its_answer_streams_is_not_read_until_it_is_whole() -> None:
    """Rule 5: past ``max_head_size`` sent while its answer is made, the client is not read;
    its answer goes on, whole; then what it sent is read as its next request (here: a head past
    the bound, 431 and a close)."""
    d = Driver(max_head_size=1024)
    d.send(post(openai_body()))
    d.connect()
    d.send(b"x" * 500)
    assert PauseClient() not in d.seen
    d.send(b"x" * 600)
    assert d.seen[-1] == PauseClient()
    assert not d.closed
    d.answer(sse_response(TEXT))
    answers = read(d.client)
    assert [a[0] for a in answers] == [200, 431]
    assert answers[0][3]  # whole
    assert d.closed


def test_a_client_that_goes_away_cancels_its_upstream() -> None:
    d = Driver()
    d.send(post(openai_body()))
    d.connect()
    d.send(b"")
    assert d.closed
    assert d.released == [None]
    assert d.done()[0].outcome == "cancelled"
    assert d.state.streams == 0
    assert d.state.connections == 1  # till the server says its connection is gone
    d.session.client_gone(2.0)
    assert d.state.connections == 0
    d.session.client_gone(2.0)  # (once)
    assert d.state.connections == 0


def test_a_client_that_leaves_before_the_upstream_is_reached() -> None:
    d = Driver()
    d.send(post(openai_body()))
    d.send(b"")
    d.connect()
    assert d.released == [None, None]


# -- flow (Rule 5) and the upstream connection (Rule 6) ------------------------------------------


def test_a_body_for_an_upstream_being_reached_is_bounded() -> None:
    big = json.dumps({"model": "m", "stream": True, "pad": "a" * (2 * 1024 * 1024)}).encode()
    d = Driver()
    data = post(big)
    d.send(data[: len(data) * 3 // 4])
    assert PauseClient() in d.seen
    d.send(data[len(data) * 3 // 4 :])
    d.connect()
    assert ResumeClient() in d.seen
    assert d.upstream.endswith(big)  # all of it, in order, once it could go


def test_a_large_body_goes_upstream_piece_by_piece() -> None:
    d = Driver(hold_below=10)
    data = post(openai_body())
    d.send(data[:-20])
    assert Connect(fresh=True) in d.seen  # a body that streams through never takes the pool
    d.connect()
    d.send(data[-20:])
    assert d.upstream.endswith(openai_body())


def kept_alive() -> ClientConnection:
    """An upstream connection that answered a request whole: one the pool keeps."""
    pooled = ClientConnection(UPSTREAM)
    list(pooled.send(__import__("svir_proto").ModelsRequest()))
    pooled.feed(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n")
    pooled.feed(b'{"data":[]}')
    return pooled


def test_a_kept_alive_connection_the_upstream_closed_is_tried_once_more() -> None:
    d = Driver()
    d.send(post(openai_body()))
    pooled = kept_alive()
    assert pooled.reusable
    d.connect(conn=pooled)
    d.answer(b"")  # closed before any byte of the answer
    assert Connect(fresh=True) in d.seen
    d.connect()
    d.answer(sse_response(TOOLS))
    assert read(d.client)[0][2] == TOOLS


@pytest.mark.parametrize("late", [b"", b" GARBAGE\r\n\r\n"])
def test_a_kept_alive_connection_that_ends_long_after_the_request_is_not_tried_again(
    late: bytes,
) -> None:
    """Attack 69 F3: an upstream that worked 3 s on a request that came on a kept-alive
    connection, then closed it without an answer, was sent the request again on a new one: a
    POST run twice (RFC 9110 9.2.2). Only an end that comes within `_RETRY_WITHIN` of the
    request is an idle connection's close crossing it; later, the client gets the failure."""
    from svir_proto.gateway.session import _RETRY_WITHIN

    d = Driver()
    d.send(post(openai_body()))
    d.connect(now=1.0, conn=kept_alive())
    d.answer(late, now=1.0 + _RETRY_WITHIN + 0.01)
    assert Connect(fresh=True) not in d.seen
    ((status, _, _, ended),) = read(d.client)
    assert (status, ended) == (502, True)
    assert d.released == [None]


def test_a_kept_alive_connection_that_spoke_out_of_turn_is_tried_once_more() -> None:
    """Attack (hostile battery ``trailing-garbage``: a whole answer, then junk on the
    kept-alive connection): the next request that took that connection from the pool read the
    junk as its answer, a 502 for a client that had done nothing wrong. Such a connection is
    a closed one (Rule 6): the request goes again on a new one. Here the junk came after the
    connection went back; junk in the same read as the end of the last answer leaves the
    connection unusable, never pooled (`ClientConnection.reusable`)."""
    d = Driver()
    d.send(post(openai_body()))
    pooled = kept_alive()
    d.connect(conn=pooled)
    d.answer(b" GARBAGE\r\n\r\n")
    assert Connect(fresh=True) in d.seen
    assert d.released == [None]  # the one that spoke is closed
    d.connect()
    d.answer(sse_response(TOOLS))
    assert read(d.client)[0][2] == TOOLS
    junk = ClientConnection(UPSTREAM)
    list(junk.send(__import__("svir_proto").ModelsRequest()))
    junk.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n" + b'{"data":[]} GARBAGE\r\n\r\n')
    assert junk.body_ended
    assert not junk.reusable


@pytest.mark.parametrize(
    "head",
    [
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        b"HTTP/2.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n" + b"X-Pad: %s\r\n" % (b"p" * 100) * 200 + b"\r\n",
        b"\r\nHTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",  # (review 51 r5: a blank line first)
    ],
)
def test_a_kept_alive_connection_that_answered_wrong_is_not_tried_again(head: bytes) -> None:
    """Attack 50 F1: an answer on a kept-alive connection whose head the gateway refuses (too
    large, framed in a way it cannot read, not HTTP/1.x) broke the protocol on its first
    read, which Rule 6 took for junk before any answer: the request went again on a new
    connection, and the upstream ran it twice. An upstream that began a status line had the
    request: the client gets the failure, once."""
    d = Driver()
    d.send(post(openai_body()))
    pooled = kept_alive()
    d.connect(conn=pooled)
    d.answer(head)
    assert Connect(fresh=True) not in d.seen
    ((status, _, _, ended),) = read(d.client)
    assert (status, ended) == (502, True)
    assert d.released == [None]


def test_a_whole_answer_gives_its_connection_back_after_the_body_ends() -> None:
    d = Driver()
    d.send(post(LLM, media=LLM_MEDIA))
    d.connect()
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    d.answer(head + b"%x\r\n%s\r\n" % (len(TEXT), TEXT))  # [DONE], but not the body's end
    assert read(d.client)[0][3]  # the client's answer is whole at once
    assert not d.released
    d.answer(b"0\r\n\r\n")
    assert len(d.released) == 1
    assert d.released[0] is not None  # to the pool
    d2 = Driver()
    d2.send(post(LLM, media=LLM_MEDIA))
    d2.connect()
    d2.answer(head + b"%x\r\n%s\r\n" % (len(TEXT), TEXT))
    d2.answer(b"")
    assert d2.released == [None]


def test_a_draining_connection_that_sends_too_much_is_closed() -> None:
    d = Driver(drain_limit=10)
    d.send(post(LLM, media=LLM_MEDIA))
    d.connect()
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    d.answer(head + b"%x\r\n%s\r\n" % (len(TEXT), TEXT))
    d.answer(b"20\r\n" + b"x" * 32 + b"\r\n")
    assert d.released == [None]
    d2 = Driver()
    d2.send(post(LLM, media=LLM_MEDIA))
    d2.connect()
    d2.answer(head + b"%x\r\n%s\r\n" % (len(TEXT), TEXT))
    d2.tick(1000.0)  # a drain has a deadline too
    assert d2.released == [None]
    d3 = Driver()
    d3.send(post(LLM, media=LLM_MEDIA))
    d3.connect()
    d3.answer(head + b"%x\r\n%s\r\n" % (len(TEXT), TEXT))
    d3.answer(b"zz\r\n")  # bad framing while draining
    assert d3.released == [None]
    d4 = Driver()
    d4.send(post(LLM, media=LLM_MEDIA))
    d4.connect()
    d4.answer(head + b"%x\r\n%s\r\n" % (len(TEXT), TEXT))
    d4.run(d4.session.upstream_failed("reset", 3.0))
    assert d4.released == [None]


def test_pipelined_requests_are_answered_in_order() -> None:
    d = Driver()
    d.send(get("/healthz") + post(openai_body()))
    d.connect()
    d.answer(sse_response(TOOLS))
    first, second = read(d.client)
    assert (first[0], second[0], second[2]) == (200, 200, TOOLS)


# -- the server's own answers, big requests, shutdown ---------------------------------------------


def test_health_readiness_and_metrics() -> None:
    d = Driver()
    d.send(get("/readyz"))
    ((status, _, body, _),) = read(d.client)
    assert status == 503
    assert json.loads(body)["status"] == "not ready"
    d.state.readiness.update(True, "the upstream lists 3 models", 5.0)
    d.client.clear()
    d.send(get("/readyz"))
    assert read(d.client)[0][0] == 200
    d.client.clear()
    d.send(get("/metrics"))
    ((status, headers, body, _),) = read(d.client)
    assert status == 200
    assert headers["content-type"].startswith("text/plain")
    assert b"svir_gateway_upstream_ready 1" in body
    assert b"svir_gateway_connections 1" in body


def test_a_large_llm_stream_body_is_prepared_off_the_loop() -> None:
    doc = json.loads(LLM)
    doc["messages"][-1]["content"] = "x" * (300 * 1024)
    d = Driver()
    d.send(post(json.dumps(doc).encode(), media="application/llm-request+json"))
    (work,) = d.work
    d.run(d.session.worked(work.run(), 2.0))
    assert d.connecting
    bad = Driver()
    doc["version"] = "2.0"
    bad.send(post(json.dumps(doc).encode(), media="application/llm-request+json"))
    (work,) = bad.work
    bad.run(bad.session.worked(work.run(), 2.0))
    ((status, _, body, _),) = read(bad.client)
    assert status == 400
    assert json.loads(body)["error"]["param"] == "$.version"
    assert bad.state.buffered == 0


def test_a_body_being_prepared_holds_its_budget_until_its_preparation_ends() -> None:
    """Attack 22: clients that send a large translated body and leave gave its share of the
    body budget back at once, while its preparation went on for nobody; now the share is held
    until the preparation ends (`worked`, or `work_dropped` when it raised or was cancelled),
    and a preparation whose client left before it began does not parse at all."""
    doc = json.loads(LLM)
    doc["messages"][-1]["content"] = "x" * (300 * 1024)
    body = json.dumps(doc).encode()
    for begun in (False, True):
        d = Driver()
        d.send(post(body, media="application/llm-request+json"))
        (work,) = d.work
        held = BodyCost().add(body)  # what its parse builds, not its length
        assert d.state.buffered == held > 2 * len(body)
        result = work.run() if begun else None
        d.send(b"")  # the client leaves
        assert d.session.closed
        assert d.state.buffered == held, "given back before its preparation ended"
        if not begun:
            result = work.run()
            assert result is None  # not parsed: nobody wants it
        d.run(d.session.worked(result, 2.0))
        assert d.state.buffered == 0
        assert not d.connecting
    dropped = Driver()
    dropped.send(post(body, media="application/llm-request+json"))
    dropped.send(b"")
    dropped.session.work_dropped()  # its task was cancelled: run never returned
    assert dropped.state.buffered == 0


def test_shutdown_ends_a_stream_properly_and_closes_an_idle_connection() -> None:
    d = Driver()
    d.send(post(openai_body()))
    d.connect()
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    d.answer(head)
    d.run(d.session.shutdown(9.0))
    ((_, _, body, ended),) = read(d.client)
    assert ended
    decoder = ChatStreamDecoder()
    decoder.feed(body)
    decoder.close()
    assert decoder.result.error is not None
    assert d.closed
    idle = Driver()
    idle.run(idle.session.shutdown(1.0))
    assert idle.closed
    assert idle.session.deadline == float("inf")
    assert idle.session.shutdown(2.0) == b""


def test_a_closed_session_ignores_what_comes() -> None:
    d = Driver()
    d.send(b"")
    assert d.closed
    for call in (
        lambda: d.session.client_data(b"x", 2.0),
        lambda: d.session.upstream_data(b"x", 2.0),
        lambda: d.session.upstream_failed("x", 2.0),
        lambda: d.session.worked(None, 2.0),
        lambda: d.session.tick(99.0),
    ):
        assert call() == b""


def test_bytes_after_the_clients_own_eof_close_it() -> None:
    d = Driver()
    d.send(get("/healthz")[:5])
    d.session.conn.receive_data(b"")
    d.send(b"more")
    assert d.closed


# -- the rarer paths ------------------------------------------------------------------------------


def test_expect_100_continue_through_the_session() -> None:
    d = Driver()
    body = openai_body()
    head = post(body, Expect="100-continue")
    d.send(head[: -len(body)])
    assert bytes(d.client) == b"HTTP/1.1 100 Continue\r\n\r\n"
    d.send(body)
    assert d.connecting


def test_pauses_that_come_when_nothing_streams() -> None:
    d = Driver()
    d.session.client_paused(1.0)  # nothing upstream: only the client is not read
    d.session.client_resumed(1.5)
    d.session.client_resumed(1.6)  # not paused: nothing to resume
    d.run(b"")
    assert d.seen == [PauseClient(), ResumeClient()]
    d.send(post(openai_body()))
    d.session.client_paused(2.0)  # paused while the upstream is reached...
    d.connect(now=3.0)
    assert PauseUpstream() in d.seen  # ...the upstream is not read from the start
    d.session.conn.finish_request()


def test_a_pipelined_request_while_the_last_answers_body_drains() -> None:
    d = Driver()
    d.send(post(LLM, media=LLM_MEDIA))
    d.connect()
    d.answer(HEAD + b"%x\r\n%s\r\n" % (len(TEXT), TEXT))  # whole, its body not ended
    d.send(post(LLM, media=LLM_MEDIA))
    assert d.released == [None]  # the draining connection gives way to the next request
    assert d.connecting


def test_a_draining_connection_whose_end_comes_in_pieces() -> None:
    d = Driver()
    d.send(post(LLM, media=LLM_MEDIA))
    d.connect()
    d.answer(HEAD + b"%x\r\n%s\r\n" % (len(TEXT), TEXT))
    d.answer(b"0\r\n")
    assert d.released == []
    d.answer(b"\r\n")
    assert d.released[0] is not None


def test_the_drain_deadline_passes_while_the_next_body_comes() -> None:
    d = Driver(body_timeout=100.0)
    d.send(post(LLM, media=LLM_MEDIA))
    d.connect()
    d.answer(HEAD + b"%x\r\n%s\r\n" % (len(TEXT), TEXT), now=2.0)
    d.send(post(LLM, media=LLM_MEDIA)[:-5], now=3.0)  # the next request's body, not all there
    d.tick(50.0)  # the drain's deadline
    assert d.released == [None]
    assert not d.closed


def test_an_upstream_that_closes_without_a_response() -> None:
    d = Driver()
    d.send(post(LLM, media="application/llm-request+json"))
    d.connect()
    d.answer(b"")
    ((status, _, body, _),) = read(d.client)
    assert status == 502
    assert "without a response" in json.loads(body)["error"]["message"]


def test_a_late_failure_in_pieces() -> None:
    d = Driver(keepalive=5.0)
    d.send(post(openai_body()))
    d.connect()
    d.tick(6.0)
    error = b'{"error":{"message":"slow down"}}'
    head = b"HTTP/1.1 429 X\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    d.answer(head + b"%x\r\n%s\r\n" % (5, error[:5]), now=7.0)
    d.answer(b"%x\r\n%s\r\n0\r\n\r\n" % (len(error) - 5, error[5:]), now=7.5)
    decoder = ChatStreamDecoder()
    decoder.feed(read(d.client)[0][2])
    decoder.close()
    assert decoder.result.error is not None
    assert decoder.result.error.message == "slow down"


def test_shutdown_while_a_json_answer_is_relayed_cuts_it() -> None:
    d = Driver()
    d.send(post(openai_body(stream=False)))
    d.connect()
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    d.answer(head + b'{"id":')
    d.run(d.session.shutdown(5.0))
    assert d.closed
    assert read(d.client)[0][3] is False
    d.session._close()  # closing twice is closing once
    assert d.kinds().count("Close") == 1


def test_no_keep_alive_into_an_answer_that_is_not_a_stream() -> None:
    d = Driver(keepalive=5.0)
    d.send(post(openai_body()))  # it asked for a stream...
    d.connect()
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    d.answer(head + b'{"id":', now=2.0)  # ...and the upstream answers JSON: relayed as it is
    d.tick(20.0)
    assert b"keep-alive" not in d.client
    conn = d.session.conn
    assert conn.relay_end(complete=False) == b""
    assert conn.relay_end(complete=True) == b""  # ended once only


def test_a_json_answer_cut_midway_stays_cut() -> None:
    d = Driver()
    d.send(post(openai_body(stream=False)))
    d.connect()
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    d.answer(head + b'{"id":')
    d.run(d.session.upstream_failed("reset", 3.0))
    ((_, _, body, ended),) = read(d.client)
    assert (body, ended) == (b'{"id":', False)
    assert d.done()[0].outcome == "cut"


# -- values from the client that no upstream request may carry (Rule 2) --------------------


BAD_IDS = ["a\r\nX-Injected: 1", "a\x00b", "a\u2028b", "caf\u00e9", " lead", "trail ", "a" * 129]


@pytest.mark.parametrize("dialect", ["openai", "llm-stream"])
@pytest.mark.parametrize("rid", BAD_IDS)
def test_a_request_id_that_cannot_be_a_header_is_replaced(rid: str, dialect: str) -> None:
    """Attack (hostile battery, ``test_a_request_id_in_the_body_that_cannot_be_a_header``): a
    body's ``metadata.request_id`` with a CR LF, a NUL, non-ASCII, an edge space or over 128
    characters made building the upstream head raise out of `upstream_connected`, which wedged
    the connection (asyncio) or ended it with a traceback (trio). Such an id now gets the
    ``X-Request-Id`` header's check: it is not taken, and the gateway makes one."""
    d = Driver()
    if dialect == "openai":
        d.send(post(openai_body(metadata={"request_id": rid})))
    else:
        doc = {**json.loads(LLM), "tools": [], "metadata": {"request_id": rid}}
        d.send(post(json.dumps(doc).encode(), media="application/llm-request+json"))
        for work in d.work:  # a large body is prepared off the loop
            d.run(d.session.worked(work.run(), 1.0))
    d.connect()
    head = bytes(d.upstream).split(b"\r\n\r\n")[0]
    assert b"X-Injected" not in head
    assert b"X-Request-Id: id-1" in head  # a translated request carries it too (Rule 7)
    d.answer(sse_response(TEXT))
    got = read(d.client)
    assert got[0][0] == 200, got
    assert got[0][3], got
    assert "x-injected" not in got[0][1]
    assert got[0][1]["x-request-id"] == "id-1"


@pytest.mark.parametrize("value", [b"caf\xc3\xa9", b"\xff", b"a" * 129, b"a\x7fb"])
def test_an_x_request_id_header_that_cannot_go_upstream_is_replaced(value: bytes) -> None:
    """Attack: ``X-Request-Id: café`` (obs-text, which h11 takes) failed as an ASCII header
    upstream (UnicodeEncodeError); the header's check is ASCII-only now."""
    d = Driver()
    body = openai_body()
    d.send(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
        b"X-Request-Id: " + value + b"\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    )
    d.connect()
    assert b"X-Request-Id: id-1\r\n" in bytes(d.upstream)
    d.answer(sse_response(TEXT))
    assert read(d.client)[0][1]["x-request-id"] == "id-1"


def test_a_client_that_leaves_while_its_answers_body_drains_leaves_the_connection() -> None:
    """Most clients close as soon as their answer ends, often before the upstream's last chunk
    came: the connection still reads that chunk, then goes back for the next request."""
    d = Driver()
    d.send(post(LLM, media=LLM_MEDIA))
    d.connect()
    d.answer(HEAD + b"%x\r\n%s\r\n" % (len(TEXT), TEXT))  # whole, its body not ended
    d.send(b"")  # the client closes
    assert d.closed
    assert d.session.draining
    assert d.released == []
    assert d.session.deadline == 2.0 + d.state.config.connect_timeout  # the drain's
    d.tick(3.0)  # not yet due: nothing happens
    assert d.released == []
    d.answer(b"0\r\n\r\n")
    assert d.released[0] is not None
    assert d.released[0].reusable
    assert not d.session.draining
    assert d.session.deadline == float("inf")
    assert d.client.endswith(b"0\r\n\r\n")  # the client's answer was whole before it left


@pytest.mark.parametrize("how", ["deadline", "reset", "closed", "shutdown"])
def test_a_drain_after_the_client_left_still_ends_within_its_bounds(how: str) -> None:
    d = Driver()
    d.send(post(LLM, media=LLM_MEDIA))
    d.connect()
    d.answer(HEAD + b"%x\r\n%s\r\n" % (len(TEXT), TEXT))
    d.send(b"")
    assert d.session.draining
    if how == "deadline":
        d.tick(1000.0)
    elif how == "reset":
        d.run(d.session.upstream_failed("reset", 3.0))
    elif how == "closed":
        d.answer(b"")
    else:
        d.run(d.session.shutdown(3.0))
    assert d.released == [None]
    assert not d.session.draining
    d.run(d.session.shutdown(4.0))  # once released, nothing more
    assert d.released == [None]


# -- a relay after its end marker (Rule 1) --------------------------------------------------------

LATE = b'data: {"choices":[{"index":0,"delta":{"content":"late"}}]}\n\ndata: not json\n\n'


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def trailing(**options: Any) -> Driver:
    """A relayed answer whose ``[DONE]`` came, and not its body's end."""
    d = Driver(**options)
    d.send(post(openai_body()))
    d.connect()
    d.answer(HEAD + chunk(TEXT))
    ((status, _, body, ended),) = read(d.client)
    assert (status, body, ended) == (200, TEXT, False)
    return d


def test_a_relay_sends_what_follows_its_end_marker_until_the_upstreams_body_ends() -> None:
    d = trailing(keepalive=1.0)
    assert d.session.deadline == 2.0 + d.state.config.connect_timeout  # no keep-alive now
    d.tick(3.5)  # not due: nothing is sent
    assert read(d.client)[0][2] == TEXT
    d.answer(chunk(LATE[:30]), now=3.0)
    assert read(d.client)[0][2] == TEXT  # whole events at a time (Rule 4), as before it
    d.answer(chunk(LATE[30:]), now=3.0)
    assert read(d.client)[0][2:] == (TEXT + LATE, False)
    assert d.released == []
    d.answer(b"0\r\n\r\n", now=3.0)
    assert read(d.client)[0][2:] == (TEXT + LATE, True)
    assert d.released[0] is not None  # its connection goes back to the pool
    assert [(x.outcome, x.events) for x in d.done()] == [("ok", 2)]
    assert not d.closed  # the client's connection is kept alive, for its next request


@pytest.mark.parametrize(
    ("how", "ended"),
    [("too-much", True), ("deadline", True), ("shutdown", True), ("bad-framing", False),
     ("reset", False), ("closed", False)],
)  # fmt: skip
def test_what_follows_a_relays_end_marker_has_bounds(how: str, ended: bool) -> None:
    """Past ``drain_limit`` bytes or ``connect_timeout`` seconds after the marker, or when the
    gateway stops, the client's answer ends there; a body that breaks or is cut after the
    marker is cut for the client too. The upstream connection is closed."""
    d = trailing(drain_limit=100)
    if how == "too-much":
        d.answer(chunk(LATE), now=3.0)
        d.answer(chunk(LATE), now=3.0)
    elif how == "deadline":
        d.tick(2.0 + d.state.config.connect_timeout)
    elif how == "shutdown":
        d.run(d.session.shutdown(3.0))
    elif how == "bad-framing":
        d.answer(chunk(b"data: half") + b"zz\r\n", now=3.0)  # what came before it goes
    elif how == "reset":
        d.run(d.session.upstream_failed("reset", 3.0))
    else:
        d.answer(b"", now=3.0)
    ((_, _, body, got_end),) = read(d.client)
    assert got_end is ended
    assert body == TEXT + {"too-much": LATE * 2, "bad-framing": b"data: half"}.get(how, b"")
    assert d.released == [None]
    assert d.session.deadline != 2.0 + d.state.config.connect_timeout
    assert [x.outcome for x in d.done()] == ["ok" if ended else "cut"]
    assert b"error" not in body  # nothing of the gateway's own after the marker


def test_a_client_that_leaves_after_a_relays_end_marker_leaves_the_connection() -> None:
    d = trailing()
    d.send(b"", now=3.0)  # the client had read [DONE]
    assert d.closed
    assert d.session.draining
    assert [x.outcome for x in d.done()] == ["ok"]
    d.answer(chunk(LATE) + b"0\r\n\r\n", now=4.0)
    assert d.released[0] is not None


def test_a_pipelined_request_waits_for_the_relays_body_to_end() -> None:
    d = trailing()
    d.send(post(openai_body()), now=3.0)
    assert not d.connecting
    d.answer(chunk(LATE) + b"0\r\n\r\n", now=3.0)
    assert d.released[0] is not None
    assert d.connecting  # the next request goes on, now
    d.connect(now=4.0, conn=d.released[0])
    d.answer(HEAD + chunk(TEXT) + b"0\r\n\r\n", now=4.0)
    assert [r[2:] for r in read(d.client)] == [(TEXT + LATE, True), (TEXT, True)]


@pytest.mark.parametrize("framing", ["length", "close", "length-cut"])
def test_a_relays_body_after_its_marker_with_either_framing(framing: str) -> None:
    """A body framed by its length ends there (and is cut if the connection closes first); one
    delimited by the close ends with it."""
    d = Driver()
    d.send(post(openai_body()))
    d.connect()
    body = TEXT + LATE
    size = len(body) + (9 if framing == "length-cut" else 0)
    length = "Connection: close" if framing == "close" else f"Content-Length: {size}"
    d.answer(
        f"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n{length}\r\n\r\n".encode() + TEXT
    )
    assert read(d.client)[0][2:] == (TEXT, False)
    d.answer(LATE, now=3.0)
    if framing != "length":
        assert read(d.client)[0][2:] == (body, False)
        d.answer(b"", now=3.0)
    cut = framing == "length-cut"
    assert read(d.client)[0][2:] == (body, not cut)
    assert [x.outcome for x in d.done()] == ["cut" if cut else "ok"]


@pytest.mark.parametrize("translated", [False, True])
def test_drains_are_bounded_in_number(translated: bool) -> None:
    """A drain only takes the room clients leave (`max_connections`, this one counted): with
    none, a whole answer's connection whose body goes on is closed at once."""
    d = Driver(max_connections=1)
    d.send(post(LLM, media=LLM_MEDIA) if translated else post(openai_body()))
    d.connect()
    d.answer(HEAD + chunk(TEXT))
    if not translated:
        d.send(b"", now=3.0)  # the client leaves after [DONE]
    assert not d.session.draining
    assert d.released == [None]
    assert d.state.draining == 0
    ok = Driver()
    ok.send(post(openai_body()))
    ok.connect()
    ok.answer(HEAD + chunk(TEXT))
    ok.send(b"", now=3.0)
    assert ok.session.draining
    assert ok.state.draining == 1
    ok.answer(b"0\r\n\r\n", now=3.0)
    assert ok.state.draining == 0  # given back with the connection


def _listed(d: Driver) -> bytes:
    """The upstream connects and answers the model listing: its body."""
    d.connect()
    listing = b'{"object":"list","data":[]}'
    d.answer(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
        % (len(listing), listing)
    )
    return listing


def test_a_model_listing_with_a_body_is_answered() -> None:
    """Attack 22: a GET of the listing forwarded at its head, its 200,000-byte body counted as
    a pipelined backlog past ``max_head_size``, was cancelled without an answer; its body is
    read and dropped as it comes, and the listing answered."""
    d = Driver()
    n = 200_000
    d.send(f"GET /v1/models HTTP/1.1\r\nHost: gw\r\nContent-Length: {n}\r\n\r\n".encode())
    d.send(b"x" * (n // 2))
    assert not d.session.closed
    assert d.session.conn.backlog == 0
    listing = _listed(d)
    ((status, _, body, _),) = read(d.client, "GET")
    assert status == 200
    assert body == listing


def test_a_body_read_and_dropped_is_bounded_by_max_body() -> None:
    """A review of this round: a GET's body (which means nothing) was read and dropped without
    end, a flood held a connection for as long as it came. Past ``max_body``, a local answer
    is a 413 that closes, and a listing's client is not read while its answer is made."""
    chunk = b"%x\r\n%s\r\n" % (4096, b"x" * 4096)
    d = Driver(max_body=10_000)
    d.send(b"GET /healthz HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: chunked\r\n\r\n")
    d.send(chunk * 2)
    assert not d.client  # answered after its body, which is within the bound
    assert not d.closed
    d.send(chunk)
    ((status, _, _, _),) = read(d.client, "GET")
    assert status == 413
    assert d.closed
    d = Driver(max_body=10_000, max_head_size=1024)
    d.send(b"GET /v1/models HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: chunked\r\n\r\n")
    d.send(chunk * 2)
    assert d.session.conn.backlog == 0
    assert PauseClient() not in d.seen
    d.send(chunk * 2)
    assert d.session.conn.backlog == 4 * 4096 - 10_000
    assert PauseClient() in d.seen
    listing = _listed(d)
    ((status, _, body, _),) = read(d.client, "GET")
    assert (status, body) == (200, listing)
    assert d.closed  # its body never ended: the connection cannot serve another


def test_thousands_of_pipelined_requests_in_one_read_are_answered_in_a_loop() -> None:
    """Attack 26 (fuzz seed ``crash-a-thousand-pipelined-local-requests-recurse``): every
    answer the session made itself began the next request's cycle by calling the pump again,
    so 1,500 pipelined ``GET /healthz`` in one read raised RecursionError out of the session."""
    d = Driver(max_requests=1500)
    d.send(get("/healthz") * 1500)
    d.pipelined()
    assert d.client.count(b"HTTP/1.1 200 OK\r\n") == 1500
    assert d.closed  # the last the connection may make (`max_requests`)
    d = Driver(max_requests=1501)
    d.send(get("/healthz") * 1500)
    d.pipelined()
    assert d.client.count(b"HTTP/1.1 200 OK\r\n") == 1500
    assert not d.closed


def test_the_gateways_own_answers_waiting_in_a_full_socket_hold_no_stream_slot() -> None:
    """Attack 36, F4: connections that pipelined ``/metrics`` and read nothing were each
    counted a stream once full (Rule 5's slot for an upstream's whole answer waiting to be
    read): as many as ``--max-streams`` refused every stream. The gateway's own answers hold
    none (they go a few at a time, and none while the client takes none); an upstream's whole
    answer still does."""
    d = Driver(max_streams=1)
    d.send(get("/healthz") * 40)
    d.session.client_paused(1.0)
    assert d.state.streams == 0
    d.run(b"")
    assert d.pipelined() == 1  # asked again, and nothing answered while it takes nothing
    assert d.client.count(b"HTTP/1.1 200") == PIPELINED
    d.session.client_resumed(1.0)
    d.run(b"")
    d.pipelined()
    d.send(post(openai_body(stream=False)))  # then an upstream's whole answer
    d.connect()
    d.answer(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
    d.send(get("/healthz"))  # (and one of the gateway's own after it: review 36)
    d.session.client_paused(3.0)
    assert d.state.streams == 1  # waits in the socket: it holds its slot (Rule 5)


@pytest.mark.parametrize("passed", [False, True])
def test_an_llm_stream_answer_to_a_request_for_no_stream_is_refused_before_it_goes(
    passed: bool,
) -> None:
    """Attack 36, F3: an OpenAI body that asks for no stream with an LLM-Stream answer in
    ``Accept`` went upstream, and the upstream's whole answer was a 502 that blamed it. It is
    400 naming ``$.stream``, as a translated request is; ``passed``: a body past
    ``hold_below``, already on its way: its upstream request is cancelled."""
    d = Driver(hold_below=64 if passed else 64 * 1024)  # passed through, or held whole
    accept = 'text/event-stream; profile="llm-stream-1.0"'
    body = openai_body(stream=False, user="u" * (100 if passed else 1))
    whole = post(body, Accept=accept)
    if passed:
        d.send(whole[:-10])
        d.connect()
        assert d.upstream.count(b"POST ") == 1  # on its way
        d.send(whole[-10:])
        assert d.released == [None]  # cancelled: not pooled
    else:
        d.send(whole)
        assert d.upstream.count(b"POST ") == 0
    ((status, _, said, _),) = read(d.client)
    assert status == 400
    assert json.loads(said)["error"]["param"] == "$.stream"


@pytest.mark.parametrize("media", ["application/json", LLM_MEDIA])
def test_an_upstream_event_past_max_event_ends_the_stream(media: str) -> None:
    """Attack 36, F2: an event that never ends is held until it does (twice by a relay): an
    option bounds it (``--max-event``), past which the stream ends with an error, what came
    before it passed on, nothing of it."""
    d = Driver(max_event=4096)
    d.send(post(openai_body() if media != LLM_MEDIA else LLM, media=media))
    d.connect()
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    first = b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
    endless = b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"' + b"x" * 3000
    d.answer(head + b"%x\r\n%s\r\n" % (len(first), first))
    for _ in range(3):
        d.answer(b"%x\r\n%s\r\n" % (len(endless), endless), now=3.0)
    ((status, _, got, ended),) = read(d.client)
    assert (status, ended) == (200, True)
    assert b"x" * 100 not in got
    assert b"max_event_size" in got
    assert b"hi" in got
    (done,) = d.done()
    assert done.outcome != "ok"


OPENING = b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"'
CLOSING = b'"}}]}\n\n'
FIRST = OPENING + b"hi" + CLOSING


def streaming(state: GatewayState | None = None, **options: Any) -> Driver:
    d = Driver(state, **options)
    d.send(post(openai_body()))
    d.connect()
    d.answer(HEAD + chunk(FIRST))
    return d


@pytest.mark.parametrize("split", ["grows", "completes"])
def test_a_relayed_event_not_whole_yet_holds_the_budget(split: str) -> None:
    """Attack 36, F2: a relay holds an event that is not whole yet twice (its own copy and its
    watcher's), 16 MiB a stream by default, 4 GB across streams, bounded by no option. Past
    each stream's allowance (64 KiB of event), it is held against ``--max-partial``: given
    back once the event is whole, and past the budget the answer ends with an error, what
    came before it passed on. ``split``: the event that does not fit grows read by read, or
    begins in the read that completes another one."""
    d = streaming(max_partial=300_000)
    d.answer(chunk(OPENING + b"a" * 99_942))  # 100,000 bytes of event
    assert d.state.partial == 2 * 100_000 - PARTIAL_ALLOWANCE  # held, twice, past the allowance
    d.answer(chunk(CLOSING))
    assert d.state.partial == 0  # whole: gone on, given back
    if split == "grows":
        d.answer(chunk(OPENING + b"x" * 150_000))
        assert d.state.partial > 0
        d.answer(chunk(b"x" * 100_000))  # past the budget
    else:
        d.answer(chunk(OPENING + b"b" * 10))
        d.answer(chunk(CLOSING + OPENING + b"x" * 250_000))
    assert d.state.partial == 0
    ((status, _, got, ended),) = read(d.client)
    assert (status, ended) == (200, True)
    assert got.startswith(FIRST + OPENING + b"a" * 99_942 + CLOSING)
    assert b"x" * 100 not in got
    assert b"no room now for the rest of the upstream's event" in got
    assert (b"b" * 10 in got) == (split == "completes")  # the whole event before it went on
    (done,) = d.done()
    assert done.outcome != "ok"


def test_a_short_event_is_never_refused_and_bodies_take_nothing_from_events() -> None:
    """Review 37: held against ``--max-buffered``, which a client's body reserves as its head
    comes, every stream whose read ended inside an event (nearly every read) ended as soon as
    head-only clients filled it. The events have their own budget, and up to 64 KiB of an
    event is never refused, however full it is."""
    d = streaming(max_partial=1000, max_buffered=1000)
    d.state.buffered = d.state.partial = 1000  # both full (other clients, other streams)
    d.answer(chunk(OPENING + b"a" * 60_000))
    d.answer(chunk(CLOSING + TEXT) + b"0\r\n\r\n")
    ((status, _, got, ended),) = read(d.client)
    assert (status, ended) == (200, True)
    assert got == FIRST + OPENING + b"a" * 60_000 + CLOSING + TEXT
    assert d.state.partial == 1000


def test_what_waits_in_a_clients_socket_holds_the_budget() -> None:
    """Attack 43 F4: a whole event written to a client that reads nothing waited in its
    socket outside every bound, some ``max_streams`` x ``max_event`` in all. What the server
    says waits there (`client_paused`) is held against ``--max-partial`` past the allowance,
    until the client takes it (`client_resumed`); the stream goes on."""
    d = streaming(max_partial=300_000)
    d.session.client_paused(3.0, PARTIAL_ALLOWANCE + 200_000)
    d.run(b"")
    assert d.state.partial == 200_000
    assert not any(isinstance(a, Abort) for a in d.seen)
    d.session.client_paused(3.5, PARTIAL_ALLOWANCE + 100_000)  # told again: it took some
    assert d.state.partial == 100_000
    d.session.client_resumed(4.0)
    d.run(b"")
    assert d.state.partial == 0
    assert [type(a) for a in d.seen[-2:]] == [ResumeUpstream, ResumeClient]
    d.answer(chunk(TEXT) + b"0\r\n\r\n")
    ((status, _, got, ended),) = read(d.client)
    assert (status, ended) == (200, True)
    assert got.endswith(TEXT)
    assert d.done()[0].outcome == "ok"


def test_a_client_that_does_not_take_what_the_budget_has_no_room_for_is_aborted() -> None:
    """The budget full (the others' events and sockets), a client with more than the
    allowance waiting in its socket loses its connection at once (`Abort`, not a close that
    would keep what waits for ``send_timeout``), its upstream request cancelled, counted as
    refused ``unread``; what it held comes back once its connection is gone."""
    d = streaming(max_partial=300_000)
    d.session.client_paused(3.0, PARTIAL_ALLOWANCE + 100_000)
    assert d.state.partial == 100_000
    d.state.partial += 150_000  # another stream's event
    d.session.client_paused(3.5, PARTIAL_ALLOWANCE + 300_000)
    d.run(b"")
    assert isinstance(d.seen[-1], Abort)
    assert d.session.closed
    assert d.released == [None]
    assert d.done()[0].outcome == "cancelled"
    assert d.state.metrics.refused["unread"] == 1
    assert d.state.partial == 250_000  # its hold stays till the connection is gone
    d.session.client_resumed(4.0)  # (the server says so once it is)
    assert d.state.partial == 150_000
    assert d.state.streams == 0


def test_the_clients_that_held_their_sockets_longest_make_room() -> None:
    """Review 44 M2: with the budget full of what clients that read nothing let wait in their
    sockets, a client that reads at line rate was aborted as soon as an answer of some
    megabytes was written to it at once. Where the budget has no room, the clients that have
    held such bytes longest, `UNREAD_GRACE` at least, lose their hold at once and their
    connection at their next deadline (the sweep's), as many as make the room and no more;
    where they cannot make it, none does, and the client that asks is aborted as before."""
    old = streaming(max_partial=300_000)
    older = streaming(old.state)
    state = old.state
    older.session.client_paused(0.5, PARTIAL_ALLOWANCE + 100_000)
    old.session.client_paused(1.0, PARTIAL_ALLOWANCE + 150_000)
    assert state.partial == 250_000
    early = streaming(state)  # within the grace of both: nothing is taken back
    early.session.client_paused(1.2, PARTIAL_ALLOWANCE + 100_000)
    early.run(b"")
    assert isinstance(early.seen[-1], Abort)
    early.session.client_gone(1.3)
    assert state.partial == 250_000
    assert old.session.deadline != float("-inf")
    too_big = streaming(state)  # both could not make its room: neither is taken
    too_big.session.client_paused(9.0, PARTIAL_ALLOWANCE + 300_001)
    too_big.run(b"")
    assert isinstance(too_big.seen[-1], Abort)
    too_big.session.client_gone(9.0)
    assert state.partial == 250_000
    reader = streaming(state)  # the oldest alone makes its room
    reader.session.client_paused(9.0, PARTIAL_ALLOWANCE + 120_000)
    reader.run(b"")
    assert not any(isinstance(a, Abort) for a in reader.seen)
    assert state.partial == 150_000 + 120_000
    assert older.session.deadline == float("-inf")  # its connection ends at the next sweep
    assert old.session.deadline != float("-inf")
    older.session.client_resumed(9.1)  # it read, but too late: nothing more to give back
    older.session.client_paused(9.2, PARTIAL_ALLOWANCE + 1_000_000)  # nor to hold
    assert state.partial == 270_000
    older.tick(9.25)
    assert isinstance(older.seen[-1], Abort)
    assert older.session.closed
    assert older.done()[0].outcome == "cancelled"
    assert older.released == [None]  # its upstream request cancelled
    assert state.metrics.refused["unread"] == 3  # early, too_big, older
    older.tick(9.5)  # once
    assert state.metrics.refused["unread"] == 3
    assert older.session.deadline == float("inf")
    reader.session.client_resumed(9.3)
    reader.answer(chunk(TEXT) + b"0\r\n\r\n", now=9.3)
    ((status, _, got, ended),) = read(reader.client)
    assert (status, ended) == (200, True)
    assert got.endswith(TEXT)
    old.session.client_resumed(9.4)
    assert state.partial == 0
    assert state.unread == {}


def test_a_client_told_full_again_takes_room_from_others_not_itself() -> None:
    """A client whose socket holds more than when it filled (the server says so again) may
    take the room from another that has held its own long enough, never from itself: the
    oldest in the line, it is passed over."""
    first = streaming(max_partial=300_000)
    second = streaming(first.state)
    first.session.client_paused(0.5, PARTIAL_ALLOWANCE + 100_000)
    second.session.client_paused(1.0, PARTIAL_ALLOWANCE + 150_000)
    first.session.client_paused(5.0, PARTIAL_ALLOWANCE + 200_000)
    first.run(b"")
    assert not any(isinstance(a, Abort) for a in first.seen)
    assert first.session.held == 200_000
    assert first.state.partial == 200_000
    assert second.session.deadline == float("-inf")
    assert list(first.state.unread) == [first.session]


def test_a_client_that_reads_while_its_socket_stays_full_keeps_its_stream() -> None:
    """Attack 45 F3 and F2: the servers tell the session again, while the socket stays full,
    what waits there now. The hold follows it down (it kept what the client had taken since);
    a client that took `MIN_TAKEN` since its send deadline began reads, and its deadline
    begins again (a client reading an event longer than ``send_timeout`` takes to go was
    cut), and it goes to the end of the line of holders; one that trickles less is cut."""
    d = streaming(send_timeout=5.0)
    other = streaming(d.state)
    big = PARTIAL_ALLOWANCE + 1_000_000
    d.session.client_paused(3.0, big)
    other.session.client_paused(3.5, PARTIAL_ALLOWANCE + 10)
    assert d.session.deadline == 8.0
    d.session.client_paused(7.0, big - MIN_TAKEN + 1)  # a trickle: the deadline stays
    assert d.session.deadline == 8.0
    assert d.state.partial == 1_000_000 - MIN_TAKEN + 1 + 10  # the hold follows it down
    d.session.client_paused(7.5, big - MIN_TAKEN)  # MIN_TAKEN in all: it reads
    assert d.session.deadline == 12.5
    assert list(d.state.unread) == [other.session, d.session]  # the last in line now
    d.session.client_paused(8.0, big + 500)  # more written meanwhile: taken from there on
    d.session.client_paused(12.0, big + 500 - MIN_TAKEN + 1)
    assert d.session.deadline == 12.5
    d.tick(12.5)  # it took too little since
    assert d.closed
    assert d.done()[0].outcome == "cancelled"


def test_a_client_within_the_allowance_reads_and_holds_nothing() -> None:
    """What waits within `PARTIAL_ALLOWANCE` holds nothing and puts the client in no line;
    its send deadline still begins again as it takes `MIN_TAKEN` (the kernel's share)."""
    d = streaming(send_timeout=5.0)
    d.session.client_paused(1.0, 100, 300_000)
    d.session.client_paused(2.0, 100, 300_000 - MIN_TAKEN)
    assert d.session.deadline == 7.0
    assert (d.state.partial, d.state.unread) == (0, {})


def test_a_client_that_trickles_goes_to_the_end_of_the_line_not_out_of_it() -> None:
    """Attack 45 F2: clients that take `MIN_TAKEN` now and then kept the budget full. One that
    reads goes to the end of the line of holders, and is taken after those that read
    nothing; but its hold stays as old as it is, so a trickle does not make it young again
    (that would keep it out of reach for a second after each `MIN_TAKEN`)."""
    trickle = streaming(max_partial=300_000)
    idle = streaming(trickle.state)
    state = trickle.state
    trickle.session.client_paused(1.0, PARTIAL_ALLOWANCE + 150_000)
    idle.session.client_paused(2.0, PARTIAL_ALLOWANCE + 100_000)
    trickle.session.client_paused(9.9, PARTIAL_ALLOWANCE + 150_000 - MIN_TAKEN)
    assert list(state.unread) == [idle.session, trickle.session]
    first = streaming(state)  # the one that read nothing goes first
    first.session.client_paused(10.0, PARTIAL_ALLOWANCE + 150_000)
    assert idle.session.deadline == float("-inf")
    assert trickle.session.deadline != float("-inf")
    second = streaming(state)  # then the one that trickles, read 0.1 s ago
    second.session.client_paused(10.0, PARTIAL_ALLOWANCE + 100_000)
    second.run(b"")
    assert not any(isinstance(a, Abort) for a in second.seen)
    assert trickle.session.deadline == float("-inf")
    assert state.partial == 250_000


def test_an_evicted_client_is_read_for_no_more_and_counted_at_once() -> None:
    """Review 45: an evicted client that took what waited before the sweep came, then filled
    its socket again, had its upstream read on with nothing held (`client_paused` returned at
    once): its upstream stays paused till the sweep ends it, and its eviction is counted
    when it happens (a client gone before the sweep was never counted)."""
    old = streaming(max_partial=300_000)
    state = old.state
    old.session.client_paused(0.0, PARTIAL_ALLOWANCE + 250_000)
    old.run(b"")
    newcomer = streaming(state)
    newcomer.session.client_paused(2.0, PARTIAL_ALLOWANCE + 200_000)
    assert old.session.deadline == float("-inf")
    assert state.metrics.refused["unread"] == 1
    old.seen.clear()
    old.session.client_resumed(2.05)  # it took it all before the sweep
    old.run(b"")
    assert not any(isinstance(a, (ResumeUpstream, ResumeClient)) for a in old.seen)
    old.session.client_paused(2.1, PARTIAL_ALLOWANCE + 5_000_000)  # full again
    old.run(b"")
    assert state.partial == 200_000  # held nowhere: it ends at the sweep
    old.session.client_gone(2.2)  # (or gone first)
    old.tick(2.25)
    assert state.metrics.refused["unread"] == 1  # counted once


def test_a_gone_client_holds_nothing_more() -> None:
    """Review 45: anyio's sweep may tell a session its socket is full after the connection
    went (the drain path says it is gone first): nothing is held again."""
    d = streaming(max_partial=10_000_000)
    d.session.client_paused(1.0, PARTIAL_ALLOWANCE + 100_000)
    d.session.client_gone(2.0)
    d.session.client_paused(2.25, PARTIAL_ALLOWANCE + 100_000)
    assert (d.state.partial, d.state.unread) == (0, {})


def test_a_young_holder_at_the_front_of_the_line_is_passed_over() -> None:
    """Review 45: the line is in the order the holds came (anyio says a write's start, a
    second or more back), not in time: an old holder behind a young one is still taken."""
    young = streaming(max_partial=300_000)
    old = streaming(young.state)
    young.session.client_paused(9.5, PARTIAL_ALLOWANCE + 100_000)
    old.session.client_paused(1.0, PARTIAL_ALLOWANCE + 150_000)
    assert list(young.state.unread) == [young.session, old.session]
    asking = streaming(young.state)
    asking.session.client_paused(10.0, PARTIAL_ALLOWANCE + 100_000)
    assert old.session.deadline == float("-inf")
    assert young.session.deadline != float("-inf")


def test_a_long_event_takes_its_room_from_the_clients_that_hold_their_sockets() -> None:
    """Review 44 M2: such clients also refused other streams' long events; an event not whole
    yet takes its room from them too."""
    idle = streaming(max_partial=300_000)
    idle.session.client_paused(1.0, PARTIAL_ALLOWANCE + 290_000)
    d = streaming(idle.state)
    d.answer(chunk(OPENING + b"a" * 99_942), now=5.0)  # 100,000 bytes of event, held twice
    assert idle.session.deadline == float("-inf")
    assert d.state.partial == 2 * 100_000 - PARTIAL_ALLOWANCE
    d.answer(chunk(CLOSING + TEXT) + b"0\r\n\r\n", now=5.0)
    ((status, _, got, ended),) = read(d.client)
    assert (status, ended) == (200, True)
    assert got == FIRST + OPENING + b"a" * 99_942 + CLOSING + TEXT
    idle.tick(5.1)
    assert isinstance(idle.seen[-1], Abort)


def test_what_waits_in_a_socket_holds_the_budget_after_the_close() -> None:
    """An answer's last bytes go out with its connection's close: what waits of them in the
    socket stays held after the session closed, until the server says it went (taken, or
    gone with the connection); past the budget such a client is aborted too."""
    for room in (True, False):
        d = Driver(max_partial=1000 if room else 10)
        d.send(post(openai_body(), Connection="close"))
        d.connect()
        d.answer(HEAD + chunk(FIRST + TEXT) + b"0\r\n\r\n")
        assert d.closed
        d.session.client_paused(3.0, PARTIAL_ALLOWANCE + 500)
        d.run(b"")
        assert isinstance(d.seen[-1], Abort) is not room
        assert d.state.partial == (500 if room else 0)
        d.session.client_resumed(4.0)
        assert d.state.partial == 0


def test_a_closed_sessions_resume_asks_for_nothing() -> None:
    """Review 44: the servers call `client_resumed` once a connection is gone, to give back
    what waited in its socket; a closed session that had pipelined requests waiting asked for
    `More`, and anyio's server, whose task group had ended, raised on it."""
    d = Driver(send_timeout=5.0)
    d.send(get("/healthz") * (PIPELINED + 2))  # more than one go: the rest wait (`More`)
    d.session.client_paused(1.0, PARTIAL_ALLOWANCE + 10)
    d.run(b"")
    d.tick(7.0)  # it reads nothing: it loses its connection
    assert d.closed
    assert d.state.partial == 10
    d.session.client_resumed(8.0)
    assert d.session.actions == []
    assert d.state.partial == 0


def test_a_client_that_leaves_mid_event_gives_the_budget_back() -> None:
    d = streaming()
    d.answer(chunk(OPENING + b"x" * 100_000))
    assert d.state.partial > 0
    d.run(d.session.client_data(b"", 3.0))  # it closed
    assert d.closed
    assert d.state.partial == 0


def messages_event(name: str, doc: dict[str, Any]) -> bytes:
    return b"event: %s\ndata: %s\n\n" % (name.encode(), json.dumps(doc).encode())


MESSAGE = {"id": "m", "type": "message", "role": "assistant", "model": "m", "content": [],
           "usage": {"input_tokens": 1, "output_tokens": 0}}  # fmt: skip
MESSAGES_OPENING = messages_event(
    "message_start", {"type": "message_start", "message": MESSAGE}
) + messages_event(
    "content_block_start",
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
)
"""A Messages stream's first events, to its text block's start."""
_DELTA = messages_event(
    "content_block_delta",
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Z"}},
)
MESSAGES_DELTA = _DELTA[: _DELTA.index(b'Z"')]
"""A Messages text delta up to its text: the text, then ``"}}`` and a blank line, end it."""


def test_another_dialects_relay_gives_the_budget_back_once_whole() -> None:
    """Review 37: a relay with no watcher (a Messages, Responses or Gemini upstream) holds its
    events on another path (`_relay`); the budget comes back there too."""
    d = Driver(upstream_dialect="messages")
    body = json.dumps({"model": "m", "max_tokens": 8, "stream": True,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()  # fmt: skip
    d.send(post(body).replace(b"/v1/chat/completions", b"/v1/messages"))
    d.connect()
    delta = MESSAGES_DELTA
    d.answer(HEAD + chunk(MESSAGES_OPENING + delta + b"y" * 100_000))
    assert d.state.partial == 2 * (len(delta) + 100_000) - PARTIAL_ALLOWANCE
    d.answer(chunk(b'"}}\n\n'))
    assert d.state.partial == 0
    d.state.partial = d.state.config.max_partial  # the others' events took it all
    whole = delta + b'x"}}\n\n'  # a read that brings an event (`_relay`), then one too long
    d.answer(chunk(whole + delta + b"z" * 100_000))
    assert d.state.partial == d.state.config.max_partial
    ((status, _, got, _),) = read(d.client)
    assert status == 200
    assert b"z" * 100 not in got
    assert got.count(whole) == 1  # what came before it went on
    assert b"no room now for the rest of the upstream's event" in got


@pytest.mark.parametrize("whole", [False, True])
def test_a_translated_streams_unfinished_event_holds_the_budget(whole: bool) -> None:
    """Attack 37: a translated stream's event not whole yet is held by its decoder, up to
    ``--max-event`` (8 MiB) a stream, and was held against no budget. Past the allowance it
    is held against ``--max-partial``, once (no relay holds a copy): given back once whole,
    and past the budget the answer ends with an error. ``whole``: the client asked for no
    stream (its answer is written once the stream ends)."""
    d = Driver(upstream_dialect="messages", max_partial=300_000)
    d.send(post(openai_body(stream=not whole)))  # a Chat client: translated
    d.connect()
    d.answer(HEAD + chunk(MESSAGES_OPENING + MESSAGES_DELTA + b"y" * 200_000))
    assert d.state.partial == len(MESSAGES_DELTA) + 200_000 - PARTIAL_ALLOWANCE
    d.answer(chunk(b'"}}\n\n'))
    assert d.state.partial == 0  # whole: given back
    d.answer(chunk(MESSAGES_DELTA + b"z" * 300_000))
    d.answer(chunk(b"z" * 200_000))  # past the budget
    assert d.state.partial == 0
    ((status, _, got, ended),) = read(d.client)
    assert b"no room now for the rest of the upstream's event" in got
    assert b"z" * 100 not in got
    if whole:
        assert status == 502
    else:
        assert (status, ended) == (200, True)
        assert got.count(b"y" * 200_000) == 1  # what came before it went on
    (done,) = d.done()
    assert done.outcome != "ok"


@pytest.mark.parametrize("translated", [False, True])
def test_an_event_of_short_lines_holds_the_budget_at_what_it_costs(translated: bool) -> None:
    """Attack 38, F1: an event of 5-byte ``data`` lines was held at ten times its length by
    the decoder that reads it, and charged its length: 8 streams held 527-655 MB under a 64
    MiB budget. Each data line after an event's first counts `LINE_COST` more, in the bound
    and in the charge: 20,000 lines (100 KB on the wire) do not fit a budget of 1 MB."""
    from svir_proto.sse.framer import LINE_COST

    d = Driver(upstream_dialect="messages" if translated else "chat", max_partial=1_000_000)
    d.send(post(openai_body()))
    d.connect()
    lines = b"data\n" * 10_000
    if translated:
        d.answer(HEAD + chunk(MESSAGES_OPENING + b"event: content_block_delta\n" + lines))
    else:
        d.answer(HEAD + chunk(FIRST + lines))
    assert d.state.partial >= 9_999 * LINE_COST - PARTIAL_ALLOWANCE
    d.answer(chunk(lines))  # 20,000 lines: 1.6 MB counted
    assert d.state.partial == 0
    ((status, _, got, ended),) = read(d.client)
    assert (status, ended) == (200, True)
    assert b"no room now for the rest of the upstream's event" in got


def test_an_upstream_that_breaks_the_protocol_mid_event_holds_nothing_and_says_so() -> None:
    """Review 37: the bytes that broke the protocol, and all after them, were held against the
    budget (and, when they did not fit, blamed on it) although nothing of them goes on."""
    d = streaming(max_partial=1000)
    d.state.partial = 1000
    d.answer(chunk(b"data: {not json}\n\n" + OPENING + b"z" * 100_000))
    assert d.state.partial == 1000
    ((status, _, got, _),) = read(d.client)
    assert status == 200
    assert b"broke the protocol" in got
    assert b"no room now" not in got


def test_an_event_past_the_budget_after_the_end_marker_cuts_the_body_there() -> None:
    """Review 37: after the upstream's ``[DONE]``, its body going on (Rule 1: relayed as it
    came), an event that did not fit wrote the gateway's own error and a second ``[DONE]``;
    when the same read ended the body, the session raised. The body is cut there, as past
    ``drain_limit``, and nothing of ours follows the marker."""
    for last in (b"", b"0\r\n\r\n"):
        d = streaming(max_partial=1000, drain_limit=10_000_000)
        d.state.partial = 1000
        d.answer(chunk(b"data: [DONE]\n\n"))
        d.answer(chunk(OPENING + b"q" * 100_000) + last)
        ((status, _, got, ended),) = read(d.client)
        assert status == 200
        assert got == FIRST + b"data: [DONE]\n\n"
        assert not ended  # a cut, as the drain limit's
        assert d.state.partial == 1000


def test_a_whole_event_ending_lf_cr_goes_once_the_next_byte_is_not_lf() -> None:
    """Review 37: held until the next byte says whether its CR begins a CRLF, an event ending
    LF CR then waited for the next boundary when that byte began another event."""
    d = streaming()
    event = OPENING + b"cr" + b'"}}]}\n\r'
    d.answer(chunk(event))
    assert read(d.client)[0][2] == FIRST
    d.answer(chunk(OPENING + b"next"))
    assert read(d.client)[0][2] == FIRST + event


def test_what_a_translation_loses_is_said_on_the_answer() -> None:
    """ARCHITECTURE: what a target dialect has no field for is "listed as lost, never silently
    dropped" (audit 36: the gateway passed no list): a ``Svir-Lost`` header field each, on the
    translated answer only, and not on the next request's."""
    sse = (CONFORMANCE / "openai" / "usage-then-null.sse").read_bytes()
    d = Driver()  # a Chat upstream: a Messages client is translated
    body = json.dumps({"model": "m", "max_tokens": 8, "stream": True, "top_k": 3,
                       "metadata": {"user_id": "u"},
                       "messages": [{"role": "user", "content": "hi"}]}).encode()  # fmt: skip
    d.send(post(body).replace(b"/v1/chat/completions", b"/v1/messages"))
    d.connect()
    d.answer(sse_response(sse))
    ((status, _, _, ended),) = read(d.client)
    assert (status, ended) == (200, True)
    head = bytes(d.client).split(b"\r\n\r\n", 1)[0]
    assert b'\r\nSvir-Lost: "parameters.top_k has no field in the Chat API: not sent"' in head
    assert head.count(b"Svir-Lost") == 1  # the end user is carried (the Chat API's user)
    assert b'"user":"u"' in d.upstream
    d.released.clear()
    d.client.clear()
    d.send(post(openai_body()))  # the next request, relayed: nothing lost
    d.connect()
    d.answer(sse_response(sse))
    assert b"Svir-Lost" not in bytes(d.client)


def test_lost_notes_are_header_values_and_bounded() -> None:
    """Each an RFC 9651 string, which a client that joins the fields with ", " (httpx, fetch)
    can split again, and a note cut before a blank is no value with a blank at its end
    (which the head's writer refuses: review 37)."""
    from svir_proto.gateway.connection import MAX_LOST, _header_values

    assert _header_values(['metadata.caf\u00e9\r\n: x, "y" \\']) == [
        '"metadata.caf???: x, \\"y\\" \\\\"'
    ]
    many = _header_values([f"n{i}" for i in range(40)])
    assert len(many) == MAX_LOST
    assert many[-1] == f'"and {40 - MAX_LOST + 1} more"'
    cut = _header_values(["k" * 255 + " z"])[0]
    assert cut == '"' + "k" * 255 + ' "'
    head = ServerSide(16384, 100).head(200, b"OK", [("Svir-Lost", cut)])  # the writer takes it
    assert cut.encode() in head


def test_a_connection_makes_at_most_max_requests() -> None:
    """Attack 36, F1: a client may pipeline thousands of requests and read no answer. The
    answer to its ``max_requests``-th says ``Connection: close``, and nothing after it is read
    (nginx's ``keepalive_requests``)."""
    d = Driver(max_requests=3)
    d.send(get("/healthz") * 2)
    assert not d.closed
    d.send(get("/healthz") + post(openai_body()))
    answers = read(d.client, "GET")
    assert [a[0] for a in answers] == [200, 200, 200]
    assert [a[1].get("connection") for a in answers] == [None, None, "close"]
    assert d.closed
    assert not d.connecting  # the POST after it was never read


def test_pipelined_requests_the_gateway_answers_are_answered_a_few_at_a_time() -> None:
    """Attack 36, F1: 256 KiB of pipelined ``GET /healthz`` were all answered in one call, on
    100 connections at once: every other client's stream stood still for seconds. The session
    answers `PIPELINED` at a time, stops reading the client and asks for `More` (the loop lets
    the others have their turn first), and waits while the client does not take what it was
    given."""
    d = Driver()
    d.send(get("/healthz") * 50)
    assert d.client.count(b"HTTP/1.1 ") == PIPELINED
    assert d.kinds()[-2:] == ["PauseClient", "More"]
    d.more -= 1
    d.run(d.session.client_more(1.0))  # the loop's next turn
    assert d.client.count(b"HTTP/1.1 ") == 2 * PIPELINED
    d.session.client_paused(1.0)  # the client takes nothing more: nothing more is answered
    assert d.pipelined() == 1
    assert d.client.count(b"HTTP/1.1 ") == 2 * PIPELINED
    d.session.client_resumed(1.0)
    d.run(b"")
    assert d.more == 1  # once it does
    assert d.pipelined() == 2
    assert d.client.count(b"HTTP/1.1 200 OK\r\n") == 50
    holds = [k for k in d.kinds() if k in ("PauseClient", "ResumeClient")]
    assert holds[-1] == "ResumeClient"  # read again
    assert d.session.client_more(1.0) == b""  # nothing waits
    d.send(post(openai_body()))  # and the connection goes on
    assert d.connecting
    eof = Driver()  # a client that closed its side (or is gone: the servers cannot tell) while
    eof.send(get("/healthz") * 40)  # its requests wait: the rest is not answered, it ends now
    eof.send(b"")  # (review 36: a gone client's session answered on, and was never closed)
    assert eof.closed
    eof.session.client_gone(1.0)
    assert eof.state.connections == 0
    assert eof.pipelined() == 1  # (the turn asked before: nothing)
    assert eof.client.count(b"HTTP/1.1 200 OK\r\n") == PIPELINED


def test_pipelined_requests_that_wait_their_turn_are_not_late() -> None:
    """Review 36: while requests the client pipelined wait for their turn (`More`), a client
    that reads slowly got 408 (their heads came whole, long ago); the send timeout is what
    runs for a client that takes nothing."""
    d = Driver(head_timeout=1.0, send_timeout=30.0)
    d.send(get("/healthz") * 40, now=1.0)
    d.session.client_paused(1.0)
    d.tick(5.0)
    assert not d.closed
    d.session.client_resumed(6.0)
    d.run(b"")
    d.pipelined(6.0)
    assert d.client.count(b"HTTP/1.1 200 OK\r\n") == 40
    assert b" 408 " not in d.client
    d = Driver(head_timeout=1.0, send_timeout=30.0)
    d.send(get("/healthz") * 40, now=1.0)
    d.session.client_paused(1.0)
    d.tick(31.0)
    assert d.closed  # it took nothing for --send-timeout


@pytest.mark.parametrize("split", [False, True])
def test_a_pipelined_request_past_the_backlog_bound_whatever_the_reads(split: bool) -> None:
    """Attack 26: a pipelined POST larger than ``max_head_size`` behind a streaming request
    cancelled it when it came in a later read, and waited when it came in the same read. Either
    way now (Rule 5) the client is not read until the answer is whole, and then the pipelined
    request is served."""
    d = Driver(max_head_size=1024)
    big = post(openai_body() + b" " * 2000)
    if split:
        d.send(post(openai_body()))
        d.connect()
        d.send(big)
    else:
        d.send(post(openai_body()) + big)
        d.connect()
    assert PauseClient() in d.seen
    assert not d.closed
    d.answer(sse_response(TEXT))
    assert ResumeClient() in d.seen
    assert d.connecting  # the pipelined request goes upstream
    d.connect(conn=d.released[-1])
    d.answer(sse_response(TEXT))
    assert [a[0] for a in read(d.client)] == [200, 200]


def test_a_client_that_pipelines_and_reads_nothing_is_not_read() -> None:
    """Attack 26: pipelined ``GET /metrics`` from a client that reads nothing were all
    answered into its write buffer until ``send_timeout``; while its socket is full, the
    client is not read (Rule 5), so its answers do not pile up."""
    d = Driver()
    d.send(get("/healthz"))
    d.session.client_paused(2.0)
    d.run(b"")
    assert d.seen[-1] == PauseClient()
    d.session.client_resumed(3.0)
    d.run(b"")
    assert d.seen[-1] == ResumeClient()


def test_a_head_request_drops_the_upstreams_body_and_keeps_its_connection() -> None:
    """Attack 44 F2: the gateway asks the upstream for a HEAD's answer with GET (vLLM's
    FastAPI answers a HEAD 405, mlx-lm 501: review 44 M1), and read the whole body to drop
    it: 100 pipelined ``HEAD /v1/models`` pulled 200 MB of listings. Attack 45 F5: it then
    closed that connection once the head came, and every HEAD opened a new one. The body is
    read and dropped within ``drain_limit`` now, and its connection goes to the pool. The
    answer is whole at its head: a request pipelined behind it is answered at once (attack 47
    H5: it waited for the body, which an upstream that sends none made --timeout)."""
    d = Driver()
    d.send(get("/v1/models", "HEAD") + get("/healthz"))
    d.connect()
    assert d.upstream.startswith(b"GET /v1/models HTTP/1.1\r\n")
    listing = b'{"data":[%s]}' % b",".join([b'{"id":"m"}'] * 1000)
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
    d.answer(head % len(listing) + listing[:100])
    d.pipelined()
    first = read(d.client[: d.client.index(b"HTTP/1.1", 5)], "HEAD")
    assert [(r[0], r[1]["content-length"]) for r in first] == [(200, str(len(listing)))]
    second = read(d.client[d.client.index(b"HTTP/1.1", 5) :])
    assert second[0][0] == 200
    assert [x.outcome for x in d.done()] == ["ok", "ok"]
    assert d.released == []  # (it drains)
    d.answer(listing[100:5000])
    d.answer(listing[5000:])
    assert b'"data"' not in d.client  # (what was on its way goes nowhere)
    (pooled,) = d.released
    assert pooled is not None
    assert pooled.reusable


def test_a_head_requests_body_that_does_not_come_drains_for_connect_timeout() -> None:
    """Attack 47 H5: the body a HEAD drops, within ``drain_limit`` by its length, never comes:
    the client's answers went at once, and the upstream connection is closed at the drain's
    deadline (``connect_timeout``), not the stream's."""
    d = Driver(connect_timeout=3.0)
    d.send(get("/v1/models", "HEAD"))
    d.connect()
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    d.answer(head + b'{"data":', now=2.0)
    assert read(d.client, "HEAD")[0][0] == 200
    d.send(get("/healthz"), now=2.5)  # the next request, answered while it drains
    assert read(d.client[d.client.index(b"HTTP/1.1", 5) :])[0][0] == 200
    assert d.released == []
    assert d.session.deadline == pytest.approx(5.0)
    d.tick(5.0)
    assert d.released == [None]  # closed, not pooled


def test_a_head_client_that_leaves_at_the_head_leaves_the_connection_to_drain() -> None:
    """Review 46 L1: a client that closes once it has the head (as curl -I does) while the
    body to drop still comes: its answer was whole, and the body drains on to the pool."""
    d = Driver()
    d.send(get("/v1/models", "HEAD"))
    d.connect()
    listing = b'{"data":[%s]}' % b",".join([b'{"id":"m"}'] * 1000)
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
    d.answer(head % len(listing) + listing[:100])
    assert read(d.client, "HEAD")[0][0] == 200
    d.send(b"")  # it leaves
    assert [x.outcome for x in d.done()] == ["ok"]
    assert d.closed
    assert d.released == []
    d.answer(listing[100:])
    (pooled,) = d.released
    assert pooled is not None
    assert pooled.reusable


@pytest.mark.parametrize("kind", ["long", "chunked", "sse"])
def test_a_head_requests_connection_closes_unless_its_body_is_known_short(kind: str) -> None:
    """Only a body whose Content-Length is within ``drain_limit`` is read on to keep its
    connection: a longer one, a chunked one (of a length not known) or a stream is not, and
    the connection closes at the head (attack 44 F2: what the upstream pushed before the close
    is then all it costs; reading on would let it push more)."""
    d = Driver()
    d.send(get("/v1/models", "HEAD"))
    d.connect()
    framing = {
        "long": b"Content-Type: application/json\r\nContent-Length: %d" % (64 * 1024 + 1),
        "chunked": b"Content-Type: application/json\r\nTransfer-Encoding: chunked",
        "sse": b"Content-Type: text/event-stream\r\nContent-Length: 10",
    }
    d.answer(b"HTTP/1.1 200 OK\r\n%s\r\n\r\n" % framing[kind])
    assert read(d.client, "HEAD")[0][0] == 200
    assert d.released == [None]
    assert [x.outcome for x in d.done()] == ["ok"]


def test_a_model_listings_connection_goes_to_the_pool() -> None:
    """A ``GET /v1/models`` ended its request upstream (its empty body) only in the upstream's
    eyes: the connection was never `reusable`, and every listing opened a new one."""
    d = Driver()
    d.send(get("/v1/models"))
    d.connect()
    listing = b'{"data":[{"id":"m"}]}'
    d.answer(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(listing), listing))
    assert read(d.client, "GET")[0][2] == listing
    (pooled,) = d.released
    assert pooled is not None
    assert pooled.reusable


def test_an_upstream_204_is_relayed_without_its_content_length() -> None:
    """Attack 26: RFC 9110 8.6, a 204 has no Content-Length; an upstream's was relayed."""
    d = Driver()
    d.send(get("/v1/models"))
    d.connect()
    d.answer(b"HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n")
    assert b"HTTP/1.1 204 No Content\r\n" in d.client
    assert b"content-length" not in d.client.lower()


def test_the_fields_an_upstreams_connection_field_names_are_not_relayed() -> None:
    """Attack 26, RFC 9110 7.6.1: ``Connection: X-Hop`` makes ``X-Hop`` this hop's."""
    d = Driver()
    d.send(get("/v1/models"))
    d.connect()
    listing = b'{"data":[]}'
    d.answer(
        b"HTTP/1.1 200 OK\r\nConnection: X-Hop, keep-alive\r\nX-Hop: secret\r\nX-Kept: 1\r\n"
        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(listing), listing)
    )
    ((status, headers, body, ended),) = read(d.client, "GET")
    assert (status, body, ended) == (200, listing, True)
    assert "x-hop" not in headers
    assert headers["x-kept"] == "1"


def test_a_local_request_is_answered_once_its_body_is_read_whatever_the_reads() -> None:
    """Attack 26: a ``GET /healthz`` whose (meaningless) body came in a later read was answered
    at its head, and its connection then closed unannounced; it is answered once the body is
    read (and dropped), and the connection kept. One past ``max_body`` is 413."""
    head = b"GET /healthz HTTP/1.1\r\nHost: gw\r\nContent-Length: 3\r\n\r\n"
    d = Driver()
    d.send(head)
    assert d.client == b""
    assert d.session.conn.phase == "body"
    d.send(b"abc" + get("/healthz"))
    assert [a[0] for a in read(d.client, "GET")] == [200, 200]
    assert not d.closed
    big = Driver(max_body=2)
    big.send(head)
    assert [a[0] for a in read(big.client, "GET")] == [413]
    assert big.closed


def test_empty_lines_alone_are_a_head_that_never_comes() -> None:
    """RFC 9112 2.2 lets a server ignore empty lines before a request line, not for ever: they
    begin the head, whose deadline runs from the first of them."""
    d = Driver(head_timeout=2.0)
    d.send(b"\r\n", now=1.0)
    assert d.session.conn.phase == "head"
    d.send(b"\r\n", now=2.5)
    d.tick(3.5)
    assert d.closed


def test_the_arguments_the_upstreams_decoder_holds_are_bounded_by_max_answer() -> None:
    """The upstream's decoder keeps none of the text it passes on, but assembles each tool
    call's arguments to check the calls at the end: it held up to 64 Mi characters of them
    (at some 60 bytes a one-character piece) whatever --max-answer said."""
    call = {"index": 0, "id": "c", "type": "function",
            "function": {"name": "f", "arguments": "x" * 600}}  # fmt: skip
    event = (
        b"data: %s\n\n"
        % json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}).encode()
    )
    more = {"index": 0, "function": {"arguments": "y" * 600}}
    again = (
        b"data: %s\n\n"
        % json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [more]}}]}).encode()
    )
    d = relayed(event + again, max_answer=1000)
    ((status, _, got, ended),) = read(d.client)
    assert (status, ended) == (200, True)
    decoder = ChatStreamDecoder()
    decoder.feed(got)
    decoder.close()
    assert decoder.result.error is not None
    assert "1000" in decoder.result.error.message
    d = relayed(event + again, max_answer=2000)
    ((status, _, got, ended),) = read(d.client)
    assert (status, ended) == (200, True)
    assert got == event + again  # within the bound: relayed as it came


def test_a_whole_answer_lets_its_fold_go_once_made() -> None:
    """Attack 37, F8: a whole answer waiting for a client that reads nothing held its fold
    too (the answer's text again: 2.6 to 3 times the body for each such client, until
    ``--send-timeout``). Once the answer is made, the fold goes, and nothing more is read."""
    import gc
    import weakref

    body = json.dumps({"model": "m", "max_tokens": 8,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()  # fmt: skip
    sse = (CONFORMANCE / "openai" / "usage-then-null.sse").read_bytes()
    d = Driver()  # a Chat upstream: the Messages client is translated
    closing = post(body, Connection="close")  # its connection closes once it is answered
    d.send(closing.replace(b"/v1/chat/completions", b"/v1/messages"))
    d.connect()
    fold = weakref.ref(d.session.conn._whole)
    d.answer(sse_response(sse))
    ((status, _, _, ended),) = read(d.client)
    assert (status, ended) == (200, True)
    assert d.closed  # (and its answer waits for the client to take it, the session with it)
    gc.collect()
    assert fold() is None
    assert d.session.conn._gather([], 0) == b""  # (nothing after the end is read)


def test_a_whole_answer_the_client_does_not_take_holds_a_stream_slot() -> None:
    """A whole answer is read from the upstream to its end whatever the client reads, then
    written at once: 40 clients that read nothing were all admitted under --max-streams 4,
    each with an 8 MB answer in its socket (attack round 30, F4). Once the answer fills the
    client's socket, it holds a slot until the client takes it."""
    body = json.dumps({"model": "m", "max_tokens": 8,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()  # fmt: skip
    sse = (CONFORMANCE / "openai" / "usage-then-null.sse").read_bytes()
    d = Driver(max_streams=1)  # a Chat upstream: the Messages client is translated
    d.send(post(body).replace(b"/v1/chat/completions", b"/v1/messages"))
    d.connect()
    d.answer(sse_response(sse))
    ((status, headers, _, ended),) = read(d.client)
    assert (status, headers["content-type"], ended) == (200, "application/json", True)
    state = d.state
    assert state.streams == 0
    d.session.client_paused(3.0)  # the answer filled the client's socket
    assert state.streams == 1
    assert not state.admit_stream()  # a second client is refused while it waits there
    d.session.client_paused(3.5)  # (once)
    assert state.streams == 1
    d.session.client_resumed(4.0)  # taken
    assert state.streams == 0
    d.session.client_paused(5.0)
    assert state.streams == 1
    d.send(b"", 6.0)  # the client leaves (or only half-closes: the answer may still go)
    assert state.streams == 1  # it still waits in the socket (attack 45 F2: the slot came
    d.session.client_gone(7.0)  # back at the close, and such answers held no slot)
    assert state.streams == 0  # its connection is gone: the slot comes back


def _two_choices_all_but_its_end() -> tuple[GatewaySession, GatewayState, bytes]:
    """A session with a Chat request for two choices passed through (its body past the bound
    of one held) but for its last bytes, which it returns, and its upstream connected."""
    config = GatewayConfig(upstream=Endpoint.parse("http://upstream.test"))
    state = GatewayState(config, new_id=lambda: "id")
    session = GatewaySession(state, 0.0)
    body = json.dumps(
        {"model": "m", "messages": [{"role": "user", "content": "x" * 70_000}], "stream": True,
         "n": 2}
    ).encode()  # fmt: skip
    head = (
        "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    session.client_data(head + body[:-10], 0.1)
    session.upstream_connected(0.2)
    return session, state, body[-10:]


def test_an_answer_begun_before_a_two_choice_body_ended_goes_on() -> None:
    """The review of stop 32: a passed-through ``n: 2`` request whose upstream began answering
    before the client's body ended was refused at the body's end with a second head, and the
    session raised. That answer now goes on (its watcher cuts it at another choice's chunk);
    nothing is answered twice, and the session never raises."""
    session, state, rest = _two_choices_all_but_its_end()
    chunk = b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
    answer = session.upstream_data(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        + b"%x\r\n%s\r\n" % (len(chunk), chunk),
        0.3,
    )
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert session.client_data(rest, 0.4) == b""  # no second head
    other = b'data: {"id":"c","choices":[{"index":1,"delta":{"content":"yo"}}]}\n\n'
    cut = session.upstream_data(b"%x\r\n%s\r\n" % (len(other), other), 0.5)
    assert b"only one choice" in cut  # the watcher's cut, in the stream
    assert not session.closed or state.streams == 0


def test_a_refusal_of_a_passed_through_body_lets_its_upstream_go() -> None:
    """Attack round 33 (F5): a passed-through ``n: 2`` request refused at its body's end closed
    the client, but the upstream connection, which had the whole request, was held (asyncio
    read and dropped the answer until the client went). It is released, never to the pool."""
    session, state, rest = _two_choices_all_but_its_end()
    session.actions.clear()
    refused = session.client_data(rest, 0.3)
    assert refused.startswith(b"HTTP/1.1 400 ")
    kinds = [type(a).__name__ for a in session.actions]
    assert Release(connection=None) in session.actions, kinds
    assert kinds.index("Release") < kinds.index("Close")
    assert state.streams == 0


def test_a_translated_request_goes_upstream_as_its_preparation_encoded_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Review 41: the upstream body `_prepare` made (in the worker, attack 39 F1) is what
    goes upstream; the request is not encoded again on the loop."""
    from svir_proto.anthropic import MessagesRequest

    d = Driver(upstream_dialect="messages")
    body = json.dumps({"model": "m", "stream": True,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()  # fmt: skip
    d.send(post(body))

    def again(self: object, **_: object) -> object:
        raise AssertionError("encoded again")

    monkeypatch.setattr(MessagesRequest, "body", again)
    d.connect()
    head, sent = bytes(d.upstream).split(b"\r\n\r\n", 1)
    assert head.startswith(b"POST /v1/messages ")
    assert json.loads(sent)["messages"] == [{"role": "user", "content": "hi"}]


def test_an_answer_not_taken_by_the_close_is_counted_cut_once_said() -> None:
    """Attack 41 F7: `unsent` makes an answer that was whole, but that the client did not take
    by the close's deadline, cut; a failed or cancelled one stays so. `record` counts it as
    the server says it."""
    from svir_proto.gateway.session import Done, record, unsent

    def done(outcome: str, dialect: str = "openai") -> Done:
        return Done(method="POST", target="/v1/chat/completions", dialect=dialect,
                    outcome=outcome, upstream_failure=None, events=1, seconds=0.1,
                    request_id="r")  # fmt: skip

    assert [unsent(done(o)).outcome for o in ("ok", "failed", "cancelled", "cut")] == [
        "cut", "failed", "cancelled", "cut"
    ]  # fmt: skip
    d = Driver()
    record(d.state, unsent(done("ok")))
    record(d.state, done("rejected", "-"))
    assert d.state.metrics.requests == {("openai", "cut"): 1, ("none", "rejected"): 1}


def test_a_responses_answer_repeats_only_what_the_upstream_was_asked() -> None:
    """Attack 46 G4: a Responses response object repeats the request's options, in
    ``response.created``, ``response.in_progress`` and ``response.completed``. Those a Chat
    upstream was never sent (the API's own tools, ``include``, unknown ``text`` and
    ``reasoning`` keys, a ``tool_choice`` no neutral one is) are said lost and not repeated:
    the answer claims nothing no server was asked, and 8 MB of them is not 24 MB back. Nor
    those the Chat API has no field for, which Svir-Lost names (review 48 M3: ``metadata``
    without ``store``)."""
    sse = (CONFORMANCE / "openai" / "usage-then-null.sse").read_bytes()
    junk = "j" * 5000
    tool = {"type": "function", "name": "f", "parameters": {"type": "object"}}
    body = json.dumps({"model": "m", "input": "hi", "stream": True, "max_output_tokens": 9,
                       "tools": [tool, {"type": "web_search", "junk": junk}],
                       "tool_choice": {"type": "web_search", "junk": junk},
                       "include": ["reasoning.encrypted_content"],
                       "text": {"format": {"type": "text"}, "junk": junk},
                       "reasoning": {"effort": "low", "junk": junk},
                       "metadata": {"k": "v"}, "temperature": 0.5}).encode()  # fmt: skip
    d = Driver()  # a Chat upstream: a Responses client is translated
    d.send(post(body).replace(b"/v1/chat/completions", b"/v1/responses"))
    d.connect()
    d.answer(sse_response(sse))
    ((status, _, answer, ended),) = read(d.client)
    assert (status, ended) == (200, True)
    assert junk.encode() not in bytes(d.upstream)
    assert junk.encode() not in answer
    assert b"web_search" not in answer
    head = bytes(d.client).split(b"\r\n\r\n", 1)[0]
    for lost in (b"include", b"text.junk", b"reasoning.junk", b"tools (web_search)"):
        assert b'\r\nSvir-Lost: "' + lost + b": a field of the Responses API only" in head
    assert b'\r\nSvir-Lost: "metadata.k is not sent to the Chat API"' in head
    snapshots = [
        json.loads(line[6:])["response"]
        for line in answer.splitlines()
        if line.startswith(b"data: ") and b'"response":{' in line
    ]
    assert len(snapshots) == 3  # created, in progress, completed
    for snapshot in snapshots:
        assert [t["name"] for t in snapshot["tools"]] == ["f"]
        assert snapshot["tool_choice"] == "auto"  # what the upstream, asked none, did
        assert snapshot["text"] == {"format": {"type": "text"}}
        assert snapshot["reasoning"] == {"effort": "low"}
        assert (snapshot["max_output_tokens"], snapshot["temperature"]) == (9, 0.5)
        assert "include" not in snapshot
        assert not snapshot.get("metadata")


def test_a_body_the_upstream_does_not_take_is_the_upstreams_timeout() -> None:
    """Attack 47 H4: a body that goes upstream as it comes, which the upstream stopped taking
    (its socket full: the server stops reading the client, Rule 5), ran the client's body
    deadline: the client that sent it at line rate got 408, "did not arrive in time". While
    the upstream's socket is full, the deadline is the upstream's (504), moved by what it takes
    (review 48 M1: `MIN_TAKEN` each ``body_timeout``, as a client's send deadline is, and not
    by the server's buffer, which the kernel frees a third of its buffer at a time); once it
    takes all, the client's runs from then."""
    body = openai_body(messages=[{"role": "user", "content": "x" * 100_000}])
    whole = post(body)
    d = Driver(body_timeout=5.0, progress_timeout=8.0)  # (what it takes is progress too)
    d.send(whole[:50_000], now=1.0)
    d.connect(now=1.0)
    d.session.upstream_paused(2.0, 400_000)
    assert d.session.deadline == pytest.approx(7.0)
    d.session.upstream_paused(4.0, 400_000 - MIN_TAKEN + 1)  # (too little: the sweep's word)
    assert d.session.deadline == pytest.approx(7.0)
    d.session.upstream_paused(6.0, 400_000 - MIN_TAKEN)  # it takes: its deadline moves
    assert d.session.deadline == pytest.approx(11.0)
    d.session.upstream_resumed(20.0)  # it took what waited: the client is read again
    assert d.session.deadline == pytest.approx(25.0)
    d.send(whole[50_000:80_000], now=21.0)
    d.session.upstream_paused(22.0, 300_000)
    d.tick(26.9)
    assert not d.client
    d.tick(27.0)
    ((status, _, answer, _),) = read(d.client)
    assert status == 504
    assert b"the upstream took less than 64 KiB of the request's body in 5 s" in answer
    assert d.closed  # (the rest of the body is never read)
    assert [done.outcome for done in d.done()] == ["failed"]


def test_a_full_upstream_of_an_answer_that_drains_is_not_the_next_requests() -> None:
    """Review 48 M2: an upstream that answered while the body still filled its socket, its
    answer whole and its connection left to drain: the next request on the connection is not
    held to that upstream's deadline (a 504 for a request never sent upstream)."""
    d = Driver(body_timeout=5.0, connect_timeout=10.0)
    body = json.dumps({"model": "m", "max_tokens": 8, "stream": True,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()  # fmt: skip
    asked = post(body).replace(b"/v1/chat/completions", b"/v1/messages")
    d.send(asked, now=1.0)  # (held whole, then sent: translated)
    d.connect(now=1.0)
    d.session.upstream_paused(2.0, 400_000)  # the request fills the upstream's socket
    done = b'data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    d.answer(HEAD + chunk(FIRST) + chunk(done + b"data: [DONE]\n\n"), now=2.5)
    assert read(d.client)[0][3]  # whole: its upstream connection drains to its body's end
    d.send(asked[:-10], now=3.0)  # the next request, its body's last bytes to come
    assert d.session.deadline == pytest.approx(8.0)  # the client's own body deadline


def test_a_body_the_upstream_took_is_the_clients_to_send_in_time() -> None:
    """The same deadline, once the upstream took it all: the client's 408 again; and a pause
    outside a body going upstream changes nothing."""
    body = openai_body(messages=[{"role": "user", "content": "x" * 100_000}])
    d = Driver(body_timeout=5.0)
    d.session.upstream_paused(0.5, 1)  # (no request: no upstream to wait for)
    d.send(post(body)[:50_000], now=1.0)
    d.connect(now=1.0)
    d.session.upstream_paused(2.0, 100_000)
    d.session.upstream_resumed(3.0)
    d.session.upstream_resumed(3.5)  # (not full: nothing moves)
    assert d.session.deadline == pytest.approx(8.0)
    d.tick(8.0)
    ((status, _, _, _),) = read(d.client)
    assert status == 408


@pytest.mark.parametrize("framing", ["length", "chunked"])
@pytest.mark.parametrize("stream", [True, False])
def test_a_205_is_relayed_without_its_content(framing: str, stream: bool) -> None:
    """Attack 49 F1: an upstream 205 Reset Content that carried content went to the client
    with it (RFC 9110 15.3.6: a 205 has none; fetch reads it as null-body). Its head goes with
    ``Content-Length: 0``, whole at once as a HEAD's answer is, and what the upstream sent
    with it is dropped; the upstream connection drains to the pool when its length is known
    short (else it closes), and the client's next request is answered."""
    d = Driver()
    d.send(post(openai_body(stream=stream)))
    d.connect()
    content = b"data: {}\n\n"
    kind = b"text/event-stream" if stream else b"application/json"
    if framing == "length":
        d.answer(b"HTTP/1.1 205 Reset Content\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n"
                 % (kind, len(content)) + content[:4])  # fmt: skip
    else:
        d.answer(b"HTTP/1.1 205 Reset Content\r\nContent-Type: %s\r\nTransfer-Encoding: chunked"
                 b"\r\n\r\n%x\r\n%s\r\n" % (kind, len(content), content))  # fmt: skip
    ((status, headers, body, ended),) = read(d.client)
    assert (status, headers["content-length"], body, ended) == (205, "0", b"", True)
    assert b"transfer-encoding" not in d.client.lower()
    assert [x.outcome for x in d.done()] == ["ok"]  # (relayed as the upstream said it)
    if framing == "length":
        assert d.released == []  # (it drains)
        d.answer(content[4:])
        (pooled,) = d.released
        assert pooled is not None
        assert pooled.reusable
    else:
        assert d.released == [None]
    d.send(get("/healthz"))
    assert read(d.client[d.client.index(b"HTTP/1.1", 5) :])[0][0] == 200


@pytest.mark.parametrize("status", [204, 205])
@pytest.mark.parametrize("stream", [True, False])
def test_a_translated_client_gets_no_answer_from_a_response_with_no_content(
    status: int, stream: bool
) -> None:
    """Review 49 3b: a Chat upstream's 205 that carried a stream was decoded as the answer of
    a Messages client, which got a 200 with it, while a Chat client of the same bytes got an
    empty 205. A 204 or 205 carries no content (RFC 9110 15.3.5, 15.3.6): a translated client
    gets a 502 that says so."""
    d = Driver()
    body = json.dumps({"model": "m", "max_tokens": 8, "stream": stream,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()  # fmt: skip
    d.send(post(body).replace(b"/v1/chat/completions", b"/v1/messages"))
    d.connect()
    content = b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\ndata: [DONE]\n\n'
    d.answer(b"HTTP/1.1 %d X\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n"
             % (status, len(content)) + content)  # fmt: skip
    ((code, _, said, ended),) = read(d.client)
    assert (code, ended) == (502, True)
    assert b"carries no content" in said
    assert b"delta" not in said  # (nothing of the content)
    assert [x.outcome for x in d.done()] == ["failed"]


def test_a_205_after_a_keep_alive_sent_the_streams_head_is_the_streams_failure() -> None:
    """Review 49 3a: once a keep-alive sent our 200 stream's head, a 205 cannot be relayed as
    itself: it is what the upstream answered instead of the stream, an error event and the end
    marker, as any answer that is not the stream asked for (it was ended cleanly, as a HEAD's
    answer is)."""
    d = Driver(keepalive=1.0)
    d.send(post(openai_body(stream=True)))
    d.connect()
    d.tick(2.5)
    content = b'{"x":1}'
    head = b"HTTP/1.1 205 Reset Content\r\nContent-Type: application/json\r\nContent-Length: %d"
    d.answer(head % len(content) + b"\r\n\r\n" + content, 2.6)
    ((status, _, body, ended),) = read(d.client)
    assert (status, ended) == (200, True)
    assert b'"type": "not_a_stream"' in body
    assert body.rstrip().endswith(b"data: [DONE]")
    assert [x.outcome for x in d.done()] == ["failed"]


@pytest.mark.parametrize("stream", [True, False])
def test_a_broken_upstream_is_the_same_status_in_a_stream_and_a_whole_answer(stream: bool) -> None:
    """Attack 69 F7: a Gemini client, whose error chunk carries a status, got 503 for an
    upstream that broke the protocol in a stream, where a whole answer said 502."""
    d = Driver()
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    body = json.dumps({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}).encode()
    d.send(post(body).replace(b"/v1/chat/completions", f"/v1beta/models/m:{method}".encode()))
    d.connect()
    good = b'data: {"choices":[{"index":0,"delta":{"content":"ok"}}]}\n\n'
    d.answer(HEAD + chunk(good + b"data: {not json\n\n"))
    ((status, _, got, _),) = read(d.client)
    if stream:
        assert status == 200
        error = json.loads(got.split(b"data: ")[-1])["error"]
    else:
        assert status == 502
        error = json.loads(got)["error"]
    assert (error["code"], error["status"]) == (502, "UNAVAILABLE")
