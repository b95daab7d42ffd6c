"""`ChunkedReader`: each rule by name, whole, byte by byte, and with what follows the body."""

from __future__ import annotations

import pytest

from svir_proto._chunked import ChunkedReader
from svir_proto.errors import PeerProtocolError
from tests.helpers import bytewise


def read(data: bytes, *, mode: str = "whole", max_line: int = 1024) -> tuple[bytes, ChunkedReader]:
    reader = ChunkedReader(max_line=max_line)
    out = b""
    for piece in [data] if mode == "whole" else bytewise(data):
        out += reader.feed(piece)
        if reader.error is not None:  # as ClientConnection does: raise it at once
            raise reader.error
    return out, reader


MODES = ["whole", "bytewise"]


@pytest.mark.parametrize("mode", MODES)
def test_plain_chunks_extensions_spaces_and_a_trailer(mode: str) -> None:
    body = b"3\r\nabc\r\n2;ext=1\r\nde\r\n01 \t\r\nf\r\n"
    body += b"0\r\nX-A: 1\r\nX-B: two\r\n  folded\r\n\r\nNEXT"
    out, reader = read(body, mode=mode)
    assert out == b"abcdef"
    assert reader.done
    assert reader.leftover == b"NEXT"  # what follows the body is kept, never read as body


@pytest.mark.parametrize("trailer", [b"\r\n", b"\n", b"X: y\n\n"])
@pytest.mark.parametrize("mode", MODES)
def test_the_trailer_ends_as_h11_reads_it(trailer: bytes, mode: str) -> None:
    out, reader = read(b"1\r\nz\r\n0\r\n" + trailer, mode=mode)
    assert (out, reader.done, reader.leftover) == (b"z", True, b"")


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"g\r\nabc\r\n", "illegal chunk header"),
        (b"3\r\nabcXY", "malformed chunk footer"),  # h11 0.16: exactly CRLF, never 2 bytes
        (b"3\r\nabc\rX", "footer: b'X' where"),
        (b"0\r\nbad line\r\n\r\n", "illegal trailer line"),
        (b"0\r\n folded first\r\n\r\n", "a trailer begins folded"),
        (b"123456789012345678901\r\n", "illegal chunk header"),  # 21 digits
    ],
)
@pytest.mark.parametrize("mode", MODES)
def test_bad_framing_is_rejected_never_repaired(body: bytes, words: str, mode: str) -> None:
    with pytest.raises(PeerProtocolError, match=words):
        read(body, mode=mode)


def test_the_bytes_before_a_fault_come_out_and_the_error_waits() -> None:
    reader = ChunkedReader(max_line=1024)
    assert reader.feed(b"2\r\nok\r\n2\r\nnoXY") == b"okno"
    assert reader.error is not None
    with pytest.raises(PeerProtocolError, match="malformed chunk footer"):
        reader.feed(b"more")


@pytest.mark.parametrize(
    "body",
    [
        b"1" * 40,
        b"0\r\nX-Long: " + b"a" * 40,
        b"0\r\nX: " + b"a" * 40 + b"\r\n\r\n",
        b"5;" + b"e" * 40 + b"\r\n",
    ],
)
@pytest.mark.parametrize("mode", MODES)
def test_header_lines_and_trailers_are_bounded(body: bytes, mode: str) -> None:
    with pytest.raises(PeerProtocolError) as info:
        read(body, mode=mode, max_line=32)
    assert (info.value.limit, info.value.limit_value) == ("max_head_size", 32)


def test_a_lone_cr_after_the_last_chunk_waits_for_its_lf() -> None:
    reader = ChunkedReader(max_line=1024)
    assert reader.feed(b"1\r\nq\r\n0\r\n\r") == b"q"
    assert not reader.done
    reader.feed(b"\n")
    assert reader.done


def test_the_bulk_lane_stops_at_a_crlf_inside_data_and_at_the_last_chunk() -> None:
    events = [b"data: %d\n\n" % i for i in range(40)]
    tricky = b"a\r\nb"
    body = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events[:20])
    body += b"%x\r\n%s\r\n" % (len(tricky), tricky)
    body += b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events[20:]) + b"0\r\n\r\n"
    out, reader = read(body)
    assert out == b"".join(events[:20]) + tricky + b"".join(events[20:])
    assert reader.done


def test_the_bulk_lane_stops_at_a_size_that_is_too_long() -> None:
    events = [b"x" * 9 for _ in range(10)]
    body = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events)
    padded = b"0" * 19 + b"9\r\n" + b"y" * 9 + b"\r\n"  # 20 digits: allowed, not plain
    out, reader = read(body + padded + body + b"0\r\n\r\n")
    assert out == b"x" * 90 + b"y" * 9 + b"x" * 90
    assert reader.done


def test_feeding_after_the_end_keeps_it_for_the_next_response() -> None:
    reader = ChunkedReader(max_line=1024)
    reader.feed(b"0\r\n\r\nHTTP/1.1")
    assert reader.feed(b" 200 OK") == b""
    assert reader.leftover == b"HTTP/1.1 200 OK"


def test_the_bulk_lane_stops_before_a_size_of_21_digits_which_is_then_refused() -> None:
    good = b"".join(b"9\r\n%s\r\n" % (b"x" * 9) for _ in range(10))
    reader = ChunkedReader(max_line=1024)
    out = reader.feed(good + b"0" * 20 + b"9\r\n" + b"y" * 9 + b"\r\n")
    assert out == b"x" * 90  # the run before the bad header comes out
    assert reader.error is not None
    assert "illegal chunk header" in str(reader.error)


def test_the_bulk_lane_gives_way_when_its_first_chunk_is_not_plain() -> None:
    """A run whose very first chunk holds a CRLF in its data: the lane takes nothing, and the
    exact path reads every chunk."""
    tricky = b"a\r\nb"
    rest = [b"data: %d\n\n" % i for i in range(8)]
    body = b"%x\r\n%s\r\n" % (len(tricky), tricky)
    body += b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in rest) + b"0\r\n\r\n"
    out, reader = read(body)
    assert out == tricky + b"".join(rest)
    assert reader.done


def test_the_bulk_lane_checks_sizes_as_servers_write_them_at_once() -> None:
    """Lowercase hex without leading zeros (what every server writes) is checked by writing the
    data's lengths; a size in capitals, with a leading zero, or of empty data (the last chunk,
    whose size is 0) takes the exact checks, with the same bytes."""
    events = [b"data: %d %s\n\n" % (i, b"x" * (i * 7)) for i in range(12)]
    plain = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events)
    upper = b"".join(b"%X\r\n%s\r\n" % (len(e), e) for e in events)
    zeros = b"".join(b"0%x\r\n%s\r\n" % (len(e), e) for e in events)
    for body in (plain, upper, zeros, plain + b"0\r\n\r\n"):
        reader = ChunkedReader(max_line=1024)
        out = reader.feed(body + b"5\r\nab")
        assert out == b"".join(events) + (b"ab" if not body.endswith(b"0\r\n\r\n") else b"")
        assert reader.done == body.endswith(b"0\r\n\r\n")


def _counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    calls: list[int] = []
    real = getattr(ChunkedReader, name)

    def counted(self: ChunkedReader, *args: object) -> object:
        calls.append(1)
        return real(self, *args)

    monkeypatch.setattr(ChunkedReader, name, counted)
    return calls


@pytest.mark.parametrize("strict", [False, True])
def test_the_bulk_lane_is_tried_a_few_times_a_piece_whatever_stops_it(
    monkeypatch: pytest.MonkeyPatch, strict: bool
) -> None:
    """Rule 5 (a review of this round): each try splits the rest of the piece, and chunks that
    stop the lane one after the other made a piece cost its length per chunk (a 64 KiB body of
    ``1;\\r\\nX\\r\\n`` took 5 s). Events with CRLF line ends stop it at every chunk, and so
    does a plain chunk before each extension."""
    tries = _counting(monkeypatch, "_lane")
    crlf_events = [b"data: %d\r\n\r\n" % i for i in range(3000)]
    bodies = [
        (b"1;\r\nX\r\n" * 3000, b"X" * 3000),
        (b"1\r\nY\r\n1;\r\nX\r\n" * 1500, b"YX" * 1500),
        (b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in crlf_events), b"".join(crlf_events)),
    ]
    for body, expected in bodies:
        tries.clear()
        reader = ChunkedReader(max_line=1 << 16, strict=strict)
        assert reader.feed(body + b"0\r\n\r\n") == expected
        assert reader.done
        assert 0 < len(tries) <= 3


@pytest.mark.parametrize("strict", [False, True])
def test_chunks_that_stop_the_lane_are_walked_not_read_through_the_states(
    monkeypatch: pytest.MonkeyPatch, strict: bool
) -> None:
    """Rule 7 (attack 44 F1): a request body of chunks whose data is CRLF stopped the lane at
    every chunk, and each went through the exact path's states: 0.4 us of the loop a byte
    sent, 15x plain chunks. Plain sizes whole in the piece are walked; the states read only
    what the walk cannot: an extension, the last chunk, a chunk the piece cut."""
    headers = _counting(monkeypatch, "_header")
    crlf_events = [b"data: %d\r\n\r\n" % i for i in range(3000)]
    bodies = [
        (b"2\r\n\r\n\r\n" * 3000, b"\r\n" * 3000, 1),
        (b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in crlf_events), b"".join(crlf_events), 1),
        (b"1\r\nY\r\n1;\r\nX\r\n" * 1500, b"YX" * 1500, 1501),  # (the extensions')
    ]
    for body, expected, states in bodies:
        headers.clear()
        reader = ChunkedReader(max_line=1 << 16, strict=strict)
        assert reader.feed(body + b"0\r\n\r\n") == expected
        assert reader.done
        assert len(headers) == states  # (the last chunk's, and each extension's)
    headers.clear()
    reader = ChunkedReader(max_line=1 << 16, strict=strict)
    body = b"2\r\n\r\n\r\n" * 100 + b"0\r\n\r\n"
    got = b"".join(reader.feed(body[i : i + 50]) for i in range(0, len(body), 50))
    assert got == b"\r\n" * 100  # cut anywhere: a chunk the piece cut goes through the states
    assert reader.done


def test_a_line_in_pieces_is_read_once_a_piece_brings_its_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rule 4: a chunk header that comes a byte at a time is held, not looked for again in all
    that came before at every byte (quadratic within ``max_line``); it is read once, when its
    line end comes, and its bound still holds."""
    reads = _counting(monkeypatch, "_header")
    reader = ChunkedReader(max_line=4096)
    for byte in bytewise(b"5;" + b"e" * 2000):
        assert reader.feed(byte) == b""
    assert len(reads) == 1  # the first byte's: it found no line end and held it
    assert reader.feed(b"\r\nhello\r\n0\r\n\r\n") == b"hello"
    assert len(reads) == 3  # the header, then the last chunk's
    assert reader.done
    reads.clear()
    reader = ChunkedReader(max_line=4096)
    for piece in [b"1;", *[b"\n"] * 1000]:  # bare LFs end no chunk header: still held
        assert reader.feed(piece) == b""
    assert len(reads) == 1
    with pytest.raises(PeerProtocolError, match="illegal chunk header"):
        reader.feed(b"\r\nX\r\n")  # the line is whole, and bad: as h11 says then
    trailer_reads = _counting(monkeypatch, "_trailer")
    reader = ChunkedReader(max_line=1 << 16)
    for piece in [b"1\r\nz\r\n0\r\n", *[b"a:b\r\n"] * 1000]:
        reader.feed(piece)
    assert len(trailer_reads) == 1  # the first line's piece: held since, its lines not read
    assert not reader.done
    reader.feed(b"\r")
    assert not reader.done
    reader.feed(b"\nNEXT")  # the blank line, across two pieces
    assert len(trailer_reads) == 2
    assert (reader.done, reader.leftover) == (True, b"NEXT")
    reader = ChunkedReader(max_line=100)
    with pytest.raises(PeerProtocolError, match="a chunk header is longer than 100 bytes"):
        _feed_all(reader, bytewise(b"5;" + b"e" * 200))
    reader = ChunkedReader(max_line=100)
    reader.feed(b"0\r\nX: 1")
    with pytest.raises(PeerProtocolError, match="the trailer is longer than 100 bytes"):
        _feed_all(reader, bytewise(b"e" * 200))


def _feed_all(reader: ChunkedReader, pieces: list[bytes]) -> None:
    for piece in pieces:
        reader.feed(piece)
        if reader.error is not None:
            raise reader.error


@pytest.mark.parametrize("mode", MODES)
def test_a_strict_reader_takes_no_folded_trailer_line(mode: str) -> None:
    """Rule 3 with ``strict`` (a review of this round): a request's trailer may not fold a
    line, as its head may not; LF line ends are read as in a head, and the lenient reader
    takes folding as h11 does."""
    body = b"1\r\nz\r\n0\r\nX: 1\r\n  folded\r\n\r\n"
    pieces = [body] if mode == "whole" else bytewise(body)
    with pytest.raises(PeerProtocolError, match="a folded trailer line"):
        _feed_all(ChunkedReader(max_line=1024, strict=True), pieces)
    out, reader = read(body, mode=mode)
    assert (out, reader.done) == (b"z", True)
    for trailer in (b"X: 1\r\nY: 2\r\n\r\n", b"X: 1\nY: 2\n\n", b"\n"):
        strict = ChunkedReader(max_line=1024, strict=True)
        assert strict.feed(b"1\r\nz\r\n0\r\n" + trailer + b"NEXT") == b"z"
        assert (strict.done, strict.leftover) == (True, b"NEXT")


def test_a_strict_reader_bounds_a_body_s_extensions_in_all() -> None:
    """Rule 1 with ``strict`` (a review of this round): a chunk's extension carries no data, so
    chunks of one byte each with 16 KiB of extension made the gateway read 16 KiB a byte of body,
    with no bound but ``max_body`` times that. A request body's extensions are bounded in all
    by ``max_line``, as a head's fields are; the lenient reader (an upstream's, h11's rules)
    bounds each line only."""
    body = b"1;" + b"e" * 90 + b"\r\nX\r\n"
    strict = ChunkedReader(max_line=1024, strict=True)
    assert strict.feed(body * 11) == b"X" * 11  # 11 x 91 = 1,001 bytes of extensions
    with pytest.raises(PeerProtocolError, match="chunk extensions is longer than 1024") as e:
        strict.feed(body)
    assert e.value.limit == "max_head_size"
    lenient = ChunkedReader(max_line=1024)
    assert lenient.feed(body * 100) == b"X" * 100
    spaced = ChunkedReader(max_line=1024, strict=True)
    assert spaced.feed(b"1 ;a\r\nX\r\n" * 300 + b"1\r\nY\r\n" * 10) == b"X" * 300 + b"Y" * 10


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "body", [b"4\nabcd\n0\n\n", b"4;x=1\nabcd\r\n0\r\n\r\n", b"1\r\nz\r\n4\n", b"\n"]
)
def test_a_strict_reader_refuses_a_chunk_header_that_lf_alone_ends_at_that_lf(
    mode: str, body: bytes
) -> None:
    """Rule 1 with ``strict`` (attack 74 F1): a request body whose chunk lines end in LF alone
    was held until a CRLF came, if one did: a body written with LF line ends got a 408 once
    ``--body-timeout`` passed, the same body with a CRLF later a 400 at once. It is refused at
    its first such LF, whatever follows, however the reads cut it; what came whole before it
    is given first. The lenient reader (an upstream's, h11's rules) still waits for a CRLF."""
    pieces = [body] if mode == "whole" else bytewise(body)
    got, error = _taken(ChunkedReader(max_line=1024, strict=True), pieces)
    assert error is not None
    assert "a chunk header ends in LF without CR" in str(error)
    assert got == (b"z" if body.startswith(b"1\r\nz") else b"")
    lenient = ChunkedReader(max_line=1024)
    if b"\r\n" not in body:
        assert (lenient.feed(body), lenient.error, lenient.done) == (b"", None, False)


def _taken(reader: ChunkedReader, pieces: list[bytes]) -> tuple[bytes, PeerProtocolError | None]:
    """What ``reader`` gives of ``pieces`` until its error, and the error."""
    got = b""
    for piece in pieces:
        try:
            got += reader.feed(piece)
        except PeerProtocolError as exc:
            return got, exc
        if reader.error is not None:
            return got, reader.error
    return got, None
