"""Hypothesis: our chunked reader against h11's, the framing authority (STYLE.md 5).

Random chunked bodies (sizes in any case and with leading zeros, extensions, spaces, data with
CRLFs inside, trailers, and random corruptions) go to h11 whole and to `ChunkedReader` in any
split. Both must give the same body bytes, and the same verdict: whole, not yet whole, or bad.
"""

from __future__ import annotations

import h11
from hypothesis import given
from hypothesis import strategies as st

from svir_proto._chunked import ChunkedReader
from svir_proto.errors import PeerProtocolError
from tests.helpers import splits

HEAD = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
LIMIT = 16 * 1024


@st.composite
def chunk(draw: st.DrawFn) -> bytes:
    data = draw(
        st.binary(min_size=1, max_size=40) | st.sampled_from([b"a\r\nb", b"\r\n", b"data: x\n\n"])
    )
    size = b"%x" % len(data)
    padded = [b"0" + size, b"00" + size, size.rjust(20, b"0"), size.rjust(21, b"0")]
    size = draw(st.sampled_from([size, size.upper(), *padded]))
    ext = draw(st.sampled_from([b"", b";name=value", b"; x", b";\r", b';a="q"']))
    space = draw(st.sampled_from([b"", b" ", b"\t", b"  "]))
    return size + ext + space + b"\r\n" + data + b"\r\n"


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    chunks = draw(st.lists(chunk(), max_size=12))
    last = draw(st.sampled_from([b"0\r\n", b"000\r\n", b"0;e\r\n", b""]))
    trailer = draw(
        st.sampled_from(
            [
                b"\r\n",
                b"\n",
                b"X-T: 1\r\n\r\n",
                b"X-T: 1\n\n",
                b"X: a\r\n  b\r\n\r\n",
                b"bad\r\n\r\n",
                b" x: y\r\n\r\n",
                b"",
            ]
        )
    )
    body = b"".join(chunks) + last + (trailer if last else b"")
    if draw(st.booleans()):  # a corruption anywhere
        at = draw(st.integers(0, max(len(body) - 1, 0)))
        byte = draw(st.binary(min_size=1, max_size=1))
        body = body[:at] + byte + body[at + 1 :]
    return body


def with_h11(body: bytes) -> tuple[bytes, str]:
    conn = h11.Connection(h11.CLIENT)
    conn.send(h11.Request(method="GET", target="/", headers=[("Host", "x")]))
    conn.send(h11.EndOfMessage())
    conn.receive_data(HEAD + body)
    out = b""
    try:
        while True:
            event = conn.next_event()
            if isinstance(event, h11.Data):
                out += event.data
            elif isinstance(event, h11.EndOfMessage):
                return out, "whole"
            elif event is h11.NEED_DATA:
                return out, "more"
    except h11.RemoteProtocolError:
        return out, "bad"


def with_ours(pieces: list[bytes]) -> tuple[bytes, str]:
    reader = ChunkedReader(max_line=LIMIT)
    out = b""
    try:
        for piece in pieces:
            out += reader.feed(piece)
            if reader.error is not None:
                return out, "bad"
    except PeerProtocolError:
        return out, "bad"
    return out, "whole" if reader.done else "more"


@given(bodies(), st.data())
def test_same_bytes_and_verdict_as_h11_however_split(body: bytes, data: st.DataObject) -> None:
    assert with_ours(data.draw(splits(body))) == with_h11(body)


@given(st.lists(st.binary(min_size=1, max_size=300), min_size=1, max_size=300), st.data())
def test_long_runs_take_the_bulk_lane_and_agree(datas: list[bytes], data: st.DataObject) -> None:
    body = b"".join(b"%x\r\n%s\r\n" % (len(d), d) for d in datas) + b"0\r\n\r\nrest"
    got = with_ours(data.draw(splits(body)))
    assert got == (b"".join(datas), "whole")
    reader = ChunkedReader(max_line=LIMIT)
    reader.feed(body)
    assert reader.leftover == b"rest"
