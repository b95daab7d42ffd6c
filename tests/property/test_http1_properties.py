"""Hypothesis: our HTTP/1.1 heads against h11's, the authority the gateway and the clients used.

Random heads, built from the grammar's pieces and its near misses (versions, status codes,
reasons with tabs and obs-text, names that are not tokens, values with blanks around them,
control characters, folded lines, LF line ends, the framing fields in every form h11 takes or
refuses, Host counts), go to h11 and to `_http1`: both must accept or refuse the same heads,
with the same values, and h11's status hint where one refuses. Then answers: whatever the
request (version, method, ``Connection``), whatever the answer's status, fields and body,
`ServerSide` writes exactly the bytes h11 wrote.
"""

from __future__ import annotations

import h11
from hypothesis import given
from hypothesis import strategies as st

from svir_proto._http1 import BadHead, head_end, read_request, read_response, request_head
from svir_proto.gateway._serverside import ServerSide

NAMES = [b"Host", b"X-A", b"content-type", b"Connection", b"Expect", b"X_b", b"a b", b"", b"X:"]
VALUES = [
    b"v", b"a b", b"a  \t b", b" lead", b"trail ", b"\tt\t", b"", b"caf\xe9", b"x\x00y",
    b"x\x7fy", b"close", b"keep-alive, Close", b"100-continue", b"x\ry", b"x\x0cy",
]  # fmt: skip
LENGTHS = [b"5", b" 5 ", b"5, 5", b"5,6", b"", b"+5", b"05", b"1" * 20, b"1" * 21, b"x"]
CODINGS = [b"chunked", b"Chunked", b"gzip", b"chunked, chunked", b"gzip, chunked", b""]


@st.composite
def field_lines(draw: st.DrawFn) -> list[bytes]:
    lines = []
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["any", "length", "coding", "fold", "raw"]))
        if kind == "length":
            lines.append(b"Content-Length: " + draw(st.sampled_from(LENGTHS)))
        elif kind == "coding":
            lines.append(b"Transfer-Encoding: " + draw(st.sampled_from(CODINGS)))
        elif kind == "fold":
            lines.append(draw(st.sampled_from([b" folded", b"\tmore", b"  "])))
        elif kind == "raw":
            lines.append(draw(st.binary(max_size=12).filter(lambda b: b"\n" not in b)))
        else:
            name = draw(st.sampled_from(NAMES))
            colon = draw(st.sampled_from([b": ", b":", b" : ", b":\t"]))
            lines.append(name + colon + draw(st.sampled_from(VALUES)))
    return lines


def head(start: bytes, lines: list[bytes], crlf: list[bool]) -> bytes:
    ends = [b"\r\n" if crlf[i % len(crlf)] else b"\n" for i in range(len(lines) + 2)]
    out = start + ends[0]
    for line, end in zip(lines, ends[1:], strict=False):
        out += line + end
    return out + ends[-1]


starts = st.sampled_from(
    [b"HTTP/1.1 200 OK", b"HTTP/1.0 404 Not Found", b"HTTP/1.1 200", b"HTTP/1.1 200 ",
     b"HTTP/1.1 204 No\tContent", b"HTTP/1.1 200 caf\xe9", b"HTTP/2.0 200 OK", b"HTTP/1.1 99 x",
     b"HTTP/1.1 2000 OK", b"HTTP/1.1 100 Continue", b"HTTP/1.1 103 Early", b"HTTP/1.1 200 O\x00K",
     b"http/1.1 200 OK", b"HTTP/1.1  200 OK", b"HTTP/11 200 OK", b" HTTP/1.1 200 OK"]
)  # fmt: skip
request_starts = st.sampled_from(
    [b"GET / HTTP/1.1", b"POST /v1/chat/completions HTTP/1.1", b"GET / HTTP/1.0",
     b"HEAD /x?y=1 HTTP/1.1", b"GET http://gw/v1/models HTTP/1.1", b"GET / HTTP/1.2",
     b"GET / HTTP/2.0", b"GET  / HTTP/1.1", b"GET /a b HTTP/1.1", b"G@T / HTTP/1.1",
     b"GET /caf\xe9 HTTP/1.1", b"GET / HTTP/1.1 ", b"GET /", b"get / HTTP/1.1"]
)  # fmt: skip


def text(*values: bytes) -> tuple[str, ...]:
    return tuple(v.decode("latin-1") for v in values)


def h11_response(data: bytes) -> tuple[object, ...]:
    conn = h11.Connection(h11.CLIENT)
    conn.send(h11.Request(method="GET", target="/", headers=[("Host", "x")]))
    conn.send(h11.EndOfMessage())
    conn.receive_data(data)
    try:
        event = conn.next_event()
    except h11.RemoteProtocolError as exc:
        return ("bad", exc.error_status_hint)
    assert isinstance(event, (h11.Response, h11.InformationalResponse)), event
    fields = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in event.headers]
    return ("ok", event.status_code, *text(event.reason, event.http_version), fields)


def ours_response(data: bytes) -> tuple[object, ...]:
    try:
        parsed = read_response(data[: head_end(data)])
    except BadHead as exc:
        return ("bad", exc.status)
    return ("ok", parsed.status, parsed.reason, parsed.version, parsed.fields)


def h11_request(data: bytes) -> tuple[object, ...]:
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(data)
    try:
        event = conn.next_event()
    except h11.RemoteProtocolError as exc:
        return ("bad", exc.error_status_hint)
    assert isinstance(event, h11.Request), event
    fields = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in event.headers]
    return ("ok", *text(event.method, event.target, event.http_version), fields)


def ours_request(data: bytes) -> tuple[object, ...]:
    try:
        parsed = read_request(data[: head_end(data)])
    except BadHead as exc:
        return ("bad", exc.status)
    return ("ok", parsed.method, parsed.target, parsed.version, parsed.fields)


@given(starts, field_lines(), st.lists(st.booleans(), min_size=1, max_size=3))
def test_a_response_head_has_h11s_verdict_and_values(
    start: bytes, lines: list[bytes], crlf: list[bool]
) -> None:
    data = head(start, lines, crlf)
    if data.startswith(b"HTTP/1.1 101"):  # pragma: no cover - not among the starts
        return
    assert ours_response(data) == h11_response(data)


@given(request_starts, field_lines(), st.lists(st.booleans(), min_size=1, max_size=3))
def test_a_request_head_has_h11s_verdict_and_values(
    start: bytes, lines: list[bytes], crlf: list[bool]
) -> None:
    data = head(start, lines, crlf)
    assert ours_request(data) == h11_request(data)


ANSWER_FIELDS = [
    ("Content-Type", "application/json"),
    ("X-Request-Id", "r-1"),
    ("Cache-Control", "no-cache"),
    ("x-upstream", "caf\xe9"),
    ("Connection", "close"),
    ("Connection", "keep-alive, close"),
    ("Retry-After", "1"),
]


@given(
    st.sampled_from([b"1.1", b"1.0"]),
    st.sampled_from([b"GET", b"HEAD", b"POST"]),
    st.sampled_from([[], [("Connection", "close")], [("Connection", "keep-alive")]]),
    st.sampled_from([200, 204, 304, 400, 404, 413, 431, 502, 503]),
    st.lists(st.sampled_from(ANSWER_FIELDS), max_size=4),
    st.one_of(st.none(), st.binary(max_size=30)),
    st.lists(st.binary(min_size=1, max_size=10), max_size=3),
)
def test_an_answer_is_framed_and_written_as_h11_writes_it(
    version: bytes,
    method: bytes,
    asked: list[tuple[str, str]],
    status: int,
    fields: list[tuple[str, str]],
    sized: bytes | None,
    pieces: list[bytes],
) -> None:
    """``sized``: a body with its Content-Length; ``None``: ``pieces`` with no length."""
    request = b"%s / HTTP/%s\r\nHost: gw\r\n" % (method, version)
    request += b"".join(b"%s: %s\r\n" % (k.encode(), v.encode()) for k, v in asked) + b"\r\n"
    theirs = h11.Connection(h11.SERVER)
    theirs.receive_data(request)
    assert isinstance(theirs.next_event(), h11.Request)
    assert isinstance(theirs.next_event(), h11.EndOfMessage)
    ours = ServerSide(16384)
    ours.receive_data(request)
    assert ours.next_event() is not None
    assert ours.next_event() == "end"
    head_fields = list(fields)
    body = pieces
    if sized is not None or status in (204, 304):
        sized = b"" if status in (204, 304) or sized is None else sized
        head_fields.append(("Content-Length", str(len(sized))))
        body = [sized] if sized else []
    if method == b"HEAD" or status in (204, 304):
        body = []
    raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in head_fields]
    reason = b"Reason"
    expected = theirs.send(h11.Response(status_code=status, headers=raw, reason=reason)) or b""
    got = ours.head(status, reason, head_fields)
    for piece in body:
        expected += theirs.send(h11.Data(data=piece)) or b""
        got += ours.data(piece)
    expected += theirs.send(h11.EndOfMessage()) or b""
    got += ours.end()
    assert got == expected
    assert ours.reusable == (theirs.our_state is h11.DONE and theirs.their_state is h11.DONE)


REQUEST_FIELDS = st.lists(
    st.tuples(
        st.sampled_from(["X-A", "x-b", "Authorization", "Host", "HOST", "bad name", "X:y"]),
        st.sampled_from(["v", "a b", " lead", "trail ", "", "x\ty", "caf\xe9", "x\ry", "x\x00"]),
    ),
    max_size=5,
)


@given(
    st.sampled_from(["GET", "POST", "B@D"]),
    st.sampled_from(["/v1/chat/completions", "/a?b=c", "http://h/v1/x", "/a b", "/caf\xe9"]),
    REQUEST_FIELDS,
)
def test_a_request_head_is_written_as_h11_writes_it_or_refused_as_h11_refuses_it(
    method: str, target: str, fields: list[tuple[str, str]]
) -> None:
    fields = [("Host", "example.test"), *fields]
    try:
        expected: bytes | None = h11.Connection(h11.CLIENT).send(
            h11.Request(method=method, target=target, headers=fields)
        )
    except (h11.LocalProtocolError, UnicodeEncodeError):
        expected = None
    try:
        got: bytes | None = request_head(method, target, fields)
    except ValueError:
        got = None
    assert got == expected
