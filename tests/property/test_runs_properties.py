"""Hypothesis: runs of text deltas (`ChatStreamRuns`, `TextRun`, `LLMStreamEncoder.deltas`)
change the gateway's speed, never its bytes.

Streams shaped like the servers' (the envelope repeated around content, for long runs) with
everything that must go the general way now and then: text whose JSON one backend or the other
would write differently (``\\u00e9``, ``\\/``, upper-case ``\\u001F``, ``\\u0008``, a lone
surrogate's escape, an escaped pair), text past U+FFFF, invalid UTF-8, raw control characters,
``<think>`` markers and their pieces, empty deltas, role chunks (with text), reasoning, tool
calls of a declared tool and of another, a refusal, a finish, usage, an error chunk or
``event: error``, ``[DONE]`` anywhere, a chunk that is not JSON, a second choice, an id that
changes, Azure's filter verdicts, padding, a data line cut in two. Whatever the stream and its
split, the JSON backend and the UTF-8 policy:

- `ChatStreamRuns` gives `ChatStreamDecoder`'s events (``keep_text=False``), runs expanded,
  its result and its error, at the same offset;
- `OpenAIToLLMStream` writes the same LLM-Stream bytes from either;
- a `GatewaySession` translating the stream for an LLM-Stream client, the upstream's answer
  chunked and read at any points, sends its client the very bytes it sent before runs.
"""

from __future__ import annotations

import json
from typing import Any
from unittest import mock

import h11
from hypothesis import given
from hypothesis import strategies as st

from svir_proto import PeerProtocolError, SvirProtocolError, TextRun, _json
from svir_proto.connection import ClientConnection
from svir_proto.gateway import GatewayConfig, GatewaySession, GatewayState
from svir_proto.gateway import session as session_module
from svir_proto.openai import ChatStreamDecoder, Endpoint
from svir_proto.openai._runs import ChatStreamRuns
from svir_proto.translate import OpenAIToLLMStream
from tests.helpers import CONFORMANCE, split_at, splits

BACKENDS = ["orjson", "json"] if _json.orjson is not None else ["json"]

WORDS = [" the", " model", "🙂", " Grüße", " 東京", "\U0010ffff", "x" * 70]
TEXT = st.text(st.characters(codec="utf-8"), max_size=6) | st.sampled_from(
    [
        *WORDS,
        "",
        "line\n",
        'say "hi"',
        "a\\b",
        "\t\x00\x01\x1f\b\f\r",
        "\x7f\u2028\ufeff\ufffe",
        "<think>",
        "</think>",
        "<th",
        "ink>",
        "a < b",
        "50% %d %%",
        "é",
        "\ud800",
        "\udfff",
        "\ud83d\ude00",
    ]
)
NOT_AS_DUMPED = [  # bodies JSON allows that neither backend writes, or that are not JSON
    b"caf\\u00e9",
    b"a\\/b",
    b"\\u001F",
    b"\\u0008",
    b"\\u0041",
    b"\\ud83d\\ude00",
    b"\\ud800",
    b"\\udc00x",
    b"\xff",
    b"ab\xc3",
    b"\xed\xa0\x80",  # an encoded surrogate
    b"tab\there",
    b"nul\x00",
    b"\\q",
    b"x\\",
]


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    """A content string's body, as some server writes it."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from(NOT_AS_DUMPED))
    text = draw(TEXT)
    how = draw(st.sampled_from(["raw"] * 6 + ["ascii", "orjson", "orjson"]))
    if how == "orjson" and _json.orjson is not None:
        try:
            return bytes(_json.orjson.dumps(text))[1:-1]
        except TypeError:  # a lone surrogate: orjson writes none
            pass
    if how == "ascii":
        return json.dumps(text)[1:-1].encode()
    return json.dumps(text, ensure_ascii=False)[1:-1].encode("utf-8", "surrogatepass")


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    """A Chat Completions body: long runs of content chunks that repeat one envelope, and
    now and then anything else."""
    spaced = draw(st.integers(0, 5)) == 0
    pad = draw(st.sampled_from([None] * 6 + ["head", "tail"]))
    filters = draw(st.sampled_from([None] * 5 + ["same", "changing"]))

    def chunk(delta: bytes, cid: bytes = b"c1", index: int = 0, finish: bytes = b"null") -> bytes:
        head = b'{"id":"' + cid + b'","object":"chat.completion.chunk","created":1,"model":"m"'
        padding = b',"obfuscation":"' + draw(st.sampled_from([b"", b"Ab3", b"x"])) + b'"'
        choice = b'{"index":%d,"delta":%b' % (index, delta)
        if filters == "same" or (filters == "changing" and draw(st.booleans())):
            verdict = {"hate": {"filtered": False, "severity": "safe"}}
            if filters == "changing" and draw(st.booleans()):
                verdict["hate"]["severity"] = "low"
            choice += b',"content_filter_results":' + json.dumps(verdict).encode()
        choice += b',"logprobs":null,"finish_reason":' + finish + b"}"
        out = head + (padding if pad == "head" else b"") + b',"choices":[' + choice + b"]"
        out += (padding if pad == "tail" else b"") + b"}"
        if spaced:
            out = out.replace(b'":', b'": ')
        return b"data: " + out + b"\n\n"

    def content() -> bytes:
        return chunk(b'{"content":"' + draw(bodies()) + b'"}')

    events = [chunk(b'{"role":"assistant","content":""}')]
    for _ in range(draw(st.integers(0, 6))):
        events += [content() for _ in range(draw(st.sampled_from([0, 1, 3, 9, 20, 70])))]
        other = draw(
            st.sampled_from(
                ["none"] * 6
                + ["empty", "role", "reasoning", "call", "undeclared", "refusal", "usage"]
                + ["error"]
                + ["event-error", "done", "not-json", "choice-1", "id", "two-lines", "comment"]
            )
        )
        if other == "empty":
            events.append(chunk(b'{"content":""}'))
        elif other == "role":
            events.append(chunk(b'{"role":"assistant","content":"' + draw(bodies()) + b'"}'))
        elif other == "reasoning":
            events.append(chunk(b'{"reasoning_content":"' + draw(bodies()) + b'"}'))
        elif other in ("call", "undeclared"):
            name = b"get_weather" if other == "call" else b"other"
            events.append(
                chunk(
                    b'{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":'
                    b'{"name":"' + name + b'","arguments":"{\\"city\\":1}"}}]}'
                )
            )
        elif other == "refusal":
            events.append(chunk(b'{"refusal":"no"}'))
        elif other == "usage":
            events.append(b'data: {"id":"c1","choices":[],"usage":{"prompt_tokens":1}}\n\n')
        elif other == "error":
            events.append(b'data: {"error":{"message":"boom","type":"server_error"}}\n\n')
        elif other == "event-error":
            events.append(b'event: error\ndata: {"error":{"message":"overloaded"}}\n\n')
        elif other == "done":
            events.append(b"data: [DONE]\n\n")
        elif other == "not-json":
            events.append(b"data: {bad\n\n")
        elif other == "choice-1":
            events.append(chunk(b'{"content":"x"}', index=1))
        elif other == "id":
            events.append(chunk(b'{"content":"y"}', cid=b"c2"))
        elif other == "two-lines":
            line = content()
            cut = draw(st.integers(7, len(line) - 3))
            events.append(line[:cut] + b"\ndata: " + line[cut:])
        elif other == "comment":
            events.append(b": keep-alive\n\n")
    finish = draw(st.sampled_from([b'"stop"', b'"tool_calls"', b'"length"']))
    ending = [
        chunk(b"{}", finish=finish),
        b'data: {"id":"c1","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":9}}\n\n',
        b"data: [DONE]\n\n",
    ]
    events += ending[: draw(st.integers(0, 3))]
    return b"".join(events)


def outcome(decoder: ChatStreamDecoder, pieces: list[bytes], pull: list[bool]) -> Any:
    """The events (each run as its deltas), the error and where, and the result, for the
    pieces fed with ``feed`` or, where ``pull`` says so, ``receive_data`` and ``next_event``;
    and the LLM-Stream bytes `OpenAIToLLMStream` writes from the events as they came."""
    events: list[Any] = []
    error = None
    try:
        for piece, by_pull in zip(pieces, pull, strict=True):
            if by_pull:
                decoder.receive_data(piece)
                events += decoder.events()
            else:
                events += decoder.feed(piece)
        events += decoder.close()
    except SvirProtocolError as exc:
        events += exc.pending_events
        error = str(exc), exc.offset if isinstance(exc, PeerProtocolError) else None
    out = OpenAIToLLMStream(model="m", request_id="r", created=1)
    data = b"".join(out.encode_run(e) if type(e) is TextRun else out.feed(e) for e in events)
    expanded = [d for e in events for d in (e.deltas() if type(e) is TextRun else [e])]
    return expanded, error, decoder.result, data


@given(
    streams(),
    st.data(),
    st.sampled_from(BACKENDS),
    st.sampled_from(["strict", "replace"]),
    st.booleans(),
    st.booleans(),
)
def test_runs_give_the_decoders_events_and_the_encoders_bytes(
    body: bytes, data: st.DataObject, backend: str, errors: str, think: bool, opened: bool
) -> None:
    before = _json.BACKEND
    _json.use(backend)  # type: ignore[arg-type]
    try:
        options: dict[str, Any] = {"errors": errors, "think_tags": think, "think_opened": opened}
        pieces = data.draw(splits(body)) if data.draw(st.booleans()) else [body]
        pull = data.draw(st.lists(st.sampled_from([False] * 4 + [True]), min_size=len(pieces)))[
            : len(pieces)
        ]
        runs = outcome(ChatStreamRuns(**options), pieces, pull)
        plain = outcome(ChatStreamDecoder(keep_text=False, **options), pieces, pull)
        assert runs == plain
        whole = outcome(ChatStreamDecoder(keep_text=False, **options), [body], [False])
        assert runs[1:] == whole[1:]  # the split changes nothing, runs or not
    finally:
        _json.use(before)


def test_the_streams_make_runs() -> None:
    """The strategy's streams do make runs, of every kind of body that is copied."""
    body = b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"%b"}}]}\n\n'
    texts = [b" plain", b'\\n\\"\\\\\\t\\u001f', "🙂".encode(), b""] * 20
    decoder = ChatStreamRuns()
    events = decoder.feed(b"".join(body % t for t in texts))
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["StreamStarted", "TextDelta", "TextRun", "TextRun"]
    assert sum(e.count for e in events if type(e) is TextRun) == 59


# -- the gateway ------------------------------------------------------------------------------

LLM = json.dumps(
    json.loads((CONFORMANCE / "llmstream" / "draft-4-all-fields.request.json").read_text())[
        "request"
    ]
).encode()
REQUEST = (
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\n"
    b"Content-Type: application/llm-request+json\r\nContent-Length: %d\r\n\r\n%s" % (len(LLM), LLM)
)
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def client_view(data: bytes) -> tuple[bytes, bool]:
    """What the client read: the body, and whether it ended."""
    conn = h11.Connection(h11.CLIENT)
    conn.send(h11.Request(method="POST", target="/", headers=[("Host", "gw")]))
    conn.receive_data(data)
    pieces: list[bytes] = []
    while True:
        event = conn.next_event()
        if isinstance(event, h11.Data):
            pieces.append(bytes(event.data))
        elif isinstance(event, h11.EndOfMessage):
            return b"".join(pieces), True
        elif event is h11.NEED_DATA or isinstance(event, h11.ConnectionClosed):
            return b"".join(pieces), False


def translate(reads: list[bytes], *, runs: bool) -> tuple[bytes, bool, int]:
    """What an LLM-Stream client of the gateway reads of the upstream's ``reads``, and the
    events the gateway counted as forwarded; with ``runs`` as the gateway makes them, else
    with an upstream connection that gives none."""
    config = GatewayConfig(upstream=Endpoint.parse("http://upstream.test:8000"))
    state = GatewayState(config, new_id=lambda: "id-1", wall=lambda t: 1000)

    def connection(endpoint: Endpoint, **options: Any) -> ClientConnection:
        options["text_runs"] = runs
        return ClientConnection(endpoint, **options)

    with mock.patch.object(session_module, "ClientConnection", connection):
        session = GatewaySession(state, 0.0)
        out = bytearray(session.client_data(REQUEST, 1.0))
        out += session.upstream_connected(1.0)
        for data in reads:
            out += session.upstream_data(data, 2.0)
        if not session.closed and session.conn.outcome is None:
            out += session.upstream_data(b"", 3.0)  # the upstream closes
    return (*client_view(bytes(out)), session.conn.events_forwarded)


@given(streams(), st.data())
def test_the_gateway_sends_an_llm_stream_client_the_same_bytes(
    body: bytes, data: st.DataObject
) -> None:
    chunks = split_at(body, data.draw(st.lists(st.integers(0, len(body)), max_size=20)))
    wire = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in chunks if p) + b"0\r\n\r\n"
    cuts = data.draw(st.lists(st.integers(0, len(wire)), max_size=6))
    reads = split_at(HEAD + wire, cuts) if data.draw(st.booleans()) else [HEAD + wire]
    got = translate(reads, runs=True)
    assert got == translate(reads, runs=False)
    assert got[0].startswith(b"event: stream.start\n")
