"""Hypothesis: `ClientConnection` against whole HTTP responses cut anywhere.

The response is framed by Content-Length, by chunks cut at any points, or by the server closing
the connection; the bytes are then split into reads at any points. The events (deltas joined)
and the result must be those of decoding the body directly; random bytes may only ever raise
`PeerProtocolError`, at an offset that does not depend on the split.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from svir_proto import ClientConnection, PeerProtocolError, ResponseStarted
from svir_proto.openai import ChatRequest, ChatStreamDecoder, Endpoint, Tool, UserMessage
from tests.conformance.openai_results import summary
from tests.helpers import CONFORMANCE, run, split_at, splits

FIXTURES = sorted((CONFORMANCE / "openai").glob("*.sse")) + sorted(
    (CONFORMANCE / "llamacpp").glob("*.sse")
)
EP = Endpoint.parse("http://127.0.0.1:1")


@st.composite
def responses(draw: st.DrawFn, body: bytes) -> bytes:
    framing = draw(st.sampled_from(["length", "chunked", "close"]))
    head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
    if framing == "length":
        return f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body
    if framing == "close":
        return f"{head}Connection: close\r\n\r\n".encode() + body
    cuts = draw(st.lists(st.integers(0, len(body)), max_size=30))
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in split_at(body, cuts))
    return f"{head}Transfer-Encoding: chunked\r\n\r\n".encode() + chunks + b"0\r\n\r\n"


def connection(options: dict[str, object]) -> ClientConnection:
    request = ChatRequest(
        model="m",
        messages=[UserMessage(content="hi")],
        tools=[Tool(name=n) for n in options.get("declared_tools", ())],  # type: ignore[attr-defined]
        include_usage=bool(options.get("expect_usage", False)),
    )
    conn = ClientConnection(EP, think_opened=bool(options.get("think_opened", False)))
    b"".join(conn.send(request))
    return conn


@given(st.sampled_from(FIXTURES), st.data())
def test_any_framing_any_split_gives_the_body_decoded_directly(
    path: Path, data: st.DataObject
) -> None:
    options = json.loads(path.with_suffix(".json").read_text())["options"]
    body = path.read_bytes()
    direct = ChatStreamDecoder(**options)
    expected = summary(run(direct, [body]), direct.result)
    conn = connection(options)
    events = run(conn, data.draw(splits(data.draw(responses(body)))))
    assert isinstance(events[0], ResponseStarted)
    assert summary(events[1:], conn.result) == expected  # type: ignore[arg-type]


@given(st.binary(max_size=300), st.data())
def test_random_bytes_raise_only_remote_errors_the_same_way_however_split(
    raw: bytes, data: st.DataObject
) -> None:
    prefix = data.draw(
        st.sampled_from([b"", b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"])
    )
    stream = prefix + raw
    outcomes = []
    for pieces in ([stream] if stream else [], data.draw(splits(stream))):
        conn = connection({})
        try:
            events = run(conn, pieces)
            outcomes.append(("ok", conn.result, events[-1] if events else None))
        except PeerProtocolError as exc:
            outcomes.append(("error", exc.limit, exc.offset))
    assert outcomes[0] == outcomes[1]
