"""A chunked response body (RFC 9112 section 7.1) to its bytes: exactly what h11 accepts, fast.

h11 de-chunks a body one chunk per event, and LLM servers send one chunk per SSE event: h11's
per-chunk cost was more than the whole decoder's (benchmarks/transport.py). `ChunkedReader` reads
a chunked body with the rules h11 0.16 applies, and reads a run of plain chunks in bulk: one
``split`` of the piece, then C-level checks over all its chunks at once.

Rule 1 (h11's chunk header): ``1*20HEXDIG [ ";" ext ] *( SP / HTAB ) CRLF``, the line ending at
    the first CRLF; ``ext`` is anything but LF. Size 0 is the last chunk. With ``strict`` (a
    server reading a request, RFC 9112 7.1.1): ``1*20HEXDIG [ BWS ";" ext ] CRLF``, blank only
    before the ``;`` and no CR or LF in ``ext``: what a proxy in front might read otherwise
    (a line that an LF alone ends is refused at that LF, whatever follows it);
    and all the body's extensions within ``max_line`` bytes, as a head's fields are bounded
    (they carry no data, so nothing else bounds the bytes a client sends with them).
Rule 2 (h11 0.16, the chunk-footer fix of CVE-2025-43859): chunk data is followed by exactly
    CRLF; anything else is rejected, never repaired.
Rule 3 (h11's trailer): after the last chunk, header lines until a blank line (LF or CRLF line
    ends, obsolete folding allowed), each a valid ``name: value`` field; an empty trailer is an
    immediate CRLF or LF. With ``strict``: no folding (a request's head may not fold either;
    LF line ends are read as in a head, RFC 9112 2.2).
Rule 4 (bounds): a chunk header or the trailer may take ``max_line`` bytes (h11 bounds them by
    its incomplete-event size); chunk data is never held: it is returned as it arrives. A line
    that comes in pieces is joined once, when a piece may bring its end (a chunk header's CRLF,
    a trailer's blank line, each perhaps across two pieces): never scanned again per piece.
Rule 5 (the bulk lane): from a chunk boundary, a piece is split on CRLF; while the segments
    alternate plain hex sizes and data of exactly those sizes, the chunks are taken all at once.
    The first chunk that is not plain (an extension, a CRLF inside the data, the last chunk, the
    piece's end) stops the lane, and the exact path goes on from there. Data that contains a CRLF
    always comes out shorter than its size, so the lane cannot misread it. The lane is tried at
    most `_LANE_TRIES` times a piece: each try splits the rest of the piece, so chunks that stop
    it one after the other (every event with CRLF line ends, or a hostile body of extensions)
    would cost the piece's length per chunk.
Rule 6 (the one-chunk express): a piece that is exactly one chunk, its size in lowercase hex
    without leading zeros and no extension, its data that long and then CRLF, is that data:
    what the exact path reads of it, in one comparison.
Rule 7 (the walk): where the lane stops, the chunks whose size is plain hex and that are whole
    in the piece, footer included, are taken one by one, a ``find`` and a few slices each;
    only the rest (an extension, the last chunk, a chunk cut by the piece's end, a fault) goes
    through the exact path's states. Chunks whose data holds CRLF, which stop the lane (every
    SSE event with CRLF line ends), cost a fifth of what the states cost (attack 44 F1: a
    request body of chunks of CRLF cost 0.4 us of the loop a byte sent, 15x plain chunks).

The property tests feed random bodies to this reader and to h11, whole and split anywhere, and
require the same bytes and the same verdict. This module never does I/O.
"""

from __future__ import annotations

import re
from itertools import compress, count, repeat
from typing import Final

from ._http1 import FIELD_LINE, unfold
from .errors import PeerProtocolError

__all__: list[str] = []

_HEX: Final = b"0123456789abcdefABCDEF"
_HEADER: Final = re.compile(rb"([0-9A-Fa-f]{1,20})(?:;[^\n]*|[ \t]*)\r\n")
"""A chunk header as h11 reads it: the size, then an extension (whose ``[^\n]*`` takes the
blanks before the CRLF too) or blanks. Blanks matched after the extension as well could be
split between the two in as many ways as they are long: quadratic on a long extension of
blanks that ends in a bare LF (attack 27)."""
_PLAIN: Final = re.compile(rb"([0-9A-Fa-f]{1,20})\r\n")
"""A chunk header that is a size alone (Rule 7)."""
_STRICT_HEADER: Final = re.compile(rb"([0-9A-Fa-f]{1,20})(?:[ \t]*;[^\r\n]*)?\r\n")
_FIELD: Final = re.compile(FIELD_LINE)  # a trailer line
_BLANK: Final = re.compile(rb"\n\r?\n")
_LANE_MIN: Final = 4  # pairs of segments below which the lane costs more than it saves
_LANE_TRIES: Final = 3  # Rule 5: lane tries a piece, so that a piece costs its length a few times

HEADER, DATA, FOOTER, TRAILER, DONE = range(5)


class ChunkedReader:
    """Read a chunked body: `feed` returns the body bytes each piece completes; `done` once
    the last chunk and the trailer are read, after which `leftover` holds what followed.

    When a piece breaks the framing (Rules 1 to 3) or a bound (Rule 4), `feed` returns the body
    bytes before the fault and sets `error`; the next `feed` raises it. Nothing that arrived
    whole is lost, and the caller can raise the error at once.
    """

    def __init__(self, *, max_line: int, strict: bool = False) -> None:
        self.max_line = max_line
        self._strict = strict
        self._header_line = _STRICT_HEADER if strict else _HEADER
        self._peer = "client" if strict else "server"  # strict: a server reads a request
        self._extensions = 0  # strict: bytes of the chunk headers past their sizes, so far
        self.done = False
        self.leftover = b""
        self.error: PeerProtocolError | None = None
        self._state = HEADER
        self._held: list[bytes] = []  # an incomplete chunk header or trailer, in pieces
        self._held_size = 0
        self._tail = b""
        self._left = 0  # bytes of chunk data still to come
        self._footer = 0  # bytes of the CRLF after the data already matched

    def feed(self, data: bytes) -> bytes:
        if self.error is not None:
            raise self.error
        if self.done:
            self.leftover += data
            return b""
        if self._state == HEADER and not self._held and data.endswith(b"\r\n"):
            # Rule 6: a piece that is one whole chunk as a server writes it (a live stream's
            # every read): its data, read off the size it states
            end = data.find(b"\r\n")
            size = len(data) - end - 4
            if size > 0 and data[:end] == b"%x" % size:
                return data[end + 2 : -2]
        out: list[bytes] = []
        try:
            self._read(data, out)
        except PeerProtocolError as exc:
            self.error = exc
            if not out:
                raise
        return b"".join(out)

    def _read(self, data: bytes, out: list[bytes]) -> None:
        if self._held:  # Rule 4: joined once a piece may bring the end
            tail = self._tail + data
            ends = (
                b"\r\n" in tail or (self._strict and b"\n" in data)  # a chunk header's end
                if self._state == HEADER
                else self._held_size <= 2 or _BLANK.search(tail) is not None  # a trailer's end
            )
            self._held.append(data)
            self._held_size += len(data)
            if not ends:
                if self._held_size > self.max_line:
                    self._too_long("a chunk header" if self._state == HEADER else "the trailer")
                self._tail = tail[-2:]
                return
            data = b"".join(self._held)
            self._held = []
        pos = 0
        n = len(data)
        tries = _LANE_TRIES
        while pos < n:
            state = self._state
            if state == DATA:
                end = pos + self._left
                if end > n:
                    end = n
                out.append(data[pos:end])
                self._left -= end - pos
                pos = end
                if not self._left:
                    self._state = FOOTER
            elif state == FOOTER:  # Rule 2
                need = b"\r\n"[self._footer :]
                got = data[pos : pos + len(need)]
                if got != need[: len(got)]:  # named by its first wrong byte, whatever the reads
                    k = 0 if got[:1] != need[:1] else 1
                    raise PeerProtocolError(
                        f"bad HTTP from the {self._peer}: malformed chunk footer: "
                        f"{got[k : k + 1]!r} where {need[k : k + 1]!r} belongs (expected CRLF)"
                    )
                pos += len(got)
                self._footer += len(got)
                if self._footer == 2:
                    self._footer = 0
                    self._state = HEADER
                    if n - pos > 64 and tries:
                        tries -= 1
                        pos = self._lane(data, pos, out)
            elif state == HEADER:
                if pos == 0 and n > 64:
                    tries -= 1
                    pos = self._lane(data, 0, out)
                    if pos == n:
                        break
                pos = self._walk(data, pos, out)
                if pos == n:
                    break
                pos = self._header(data, pos)
                if pos < 0:
                    break
            elif state == TRAILER:
                pos = self._trailer(data, pos)
                if pos < 0:
                    break
            else:
                self.leftover = data[pos:]
                break

    def _lane(self, data: bytes, pos: int, out: list[bytes]) -> int:
        """Rule 5: take the run of plain chunks at ``pos``; return where the exact path goes on.

        Every check is one C-level pass over all the chunks; the run stops before the first
        chunk that is not plain, whose header the exact path then reads."""
        segments = (data[pos:] if pos else data).split(b"\r\n")
        stop = (len(segments) - 1) // 2  # (header, data) pairs ended by CRLF
        if stop < _LANE_MIN:
            return pos
        heads = segments[0 : 2 * stop : 2]
        lengths = list(map(len, segments[1 : 2 * stop : 2]))
        # What a server writes: each size in lowercase hex without leading zeros, and no data
        # empty (a size 0 is the last chunk): checked by writing those sizes, in one call.
        if min(lengths) and (b"%x\r\n" * stop) % tuple(lengths) == b"\r\n".join(heads) + b"\r\n":
            out.append(b"".join(segments[1 : 2 * stop : 2]))
            return pos + sum(map(len, heads)) + sum(lengths) + 4 * stop
        if b"".join(heads).translate(None, _HEX):  # an extension, spaces, not hex, a trailer
            stop = next(compress(count(), map(bytes.translate, heads, repeat(None), repeat(_HEX))))
        sizes = list(map(len, heads[:stop]))
        if sizes and (max(sizes) > 20 or not min(sizes)):
            stop = next(i for i, k in enumerate(sizes) if not 0 < k <= 20)
        head_bytes = sum(sizes[:stop])
        sizes = list(map(int, heads[:stop], repeat(16)))
        if 0 in sizes:  # the last chunk: its trailer is the exact path's
            stop = sizes.index(0)
            del sizes[stop:]
            head_bytes = sum(map(len, heads[:stop]))
        del lengths[stop:]
        if lengths != sizes:  # a CRLF inside some data: stop before that chunk
            stop = next(i for i, (a, b) in enumerate(zip(lengths, sizes, strict=False)) if a != b)
            head_bytes = sum(map(len, heads[:stop]))
        if not stop:
            return pos
        out.append(b"".join(segments[1 : 2 * stop : 2]))
        return pos + head_bytes + sum(lengths[:stop]) + 4 * stop

    def _walk(self, data: bytes, pos: int, out: list[bytes]) -> int:
        """Rule 7: take the plain chunks at ``pos`` one by one, each whole in ``data``; return
        where the exact path goes on (the first chunk that is not plain, or not whole)."""
        n = len(data)
        plain = _PLAIN.match
        append = out.append
        while (head := plain(data, pos)) is not None:
            start = head.end()
            stop = start + int(head[1], 16)
            if stop == start or stop + 2 > n or data[stop : stop + 2] != b"\r\n":
                return pos  # the last chunk, a chunk not whole here, or a bad footer
            append(data[start:stop])
            pos = stop + 2
        return pos

    def _header(self, data: bytes, pos: int) -> int:
        """Rule 1: the chunk header at ``pos``; -1 when it is not whole yet (held)."""
        end = data.find(b"\r\n", pos)
        if self._strict and (lf := data.find(b"\n", pos, end if end >= 0 else len(data))) >= 0:
            # a line that ends in LF alone is refused at that LF, not when a CRLF comes, if
            # one does (attack 74 F1: a body of LF line ends waited for --body-timeout)
            line = data[pos : lf + 1]
            raise PeerProtocolError(
                f"bad HTTP from the {self._peer}: a chunk header ends in LF without CR "
                f"(RFC 9112 7.1): {line[:64]!r}"
            )
        if end < 0:
            self._hold(data, pos, "a chunk header")
            return -1
        if end + 2 - pos > self.max_line:
            self._too_long("a chunk header")
        match = self._header_line.fullmatch(data, pos, end + 2)
        if match is None:
            line = data[pos : end + 2]
            raise PeerProtocolError(
                f"bad HTTP from the {self._peer}: illegal chunk header {line!r}"
            )
        if self._strict and end - pos > len(match[1]):  # Rule 1: the extensions' bound
            self._extensions += end - pos - len(match[1])
            if self._extensions > self.max_line:
                self._too_long("the text of the chunk extensions")
        size = int(match[1], 16)
        if size:
            self._left = size
            self._state = DATA
        else:
            self._state = TRAILER
        return end + 2

    def _trailer(self, data: bytes, pos: int) -> int:
        """Rule 3: the trailer at ``pos``; -1 when it is not whole yet (held)."""
        if data[pos : pos + 1] == b"\n":
            end = pos + 1
        elif data[pos : pos + 2] == b"\r\n":
            end = pos + 2
        elif data[pos:] == b"\r":  # a CR alone: its LF may follow
            self._hold(data, pos, "the trailer")
            return -1
        else:
            blank = _BLANK.search(data, pos)
            if blank is None:
                self._hold(data, pos, "the trailer")
                return -1
            end = blank.end()
            if end - pos > self.max_line:
                self._too_long("the trailer")
            self._fields(data[pos : blank.start() + 1])
        self._state = DONE
        self.done = True
        return end

    def _fields(self, block: bytes) -> None:
        """Rule 3's field lines, with h11's unfolding of obsolete continuation lines."""
        lines = [line.removesuffix(b"\r") for line in block.split(b"\n")[:-1]]
        fields = unfold(lines)
        if fields is None:
            raise PeerProtocolError(f"bad HTTP from the {self._peer}: a trailer begins folded")
        if self._strict and len(fields) < len(lines):
            raise PeerProtocolError(
                f"bad HTTP from the {self._peer}: a folded trailer line (RFC 9112 5.2)"
            )
        for field in fields:
            if _FIELD.fullmatch(field) is None:
                raise PeerProtocolError(
                    f"bad HTTP from the {self._peer}: illegal trailer line {field!r}"
                )

    def _hold(self, data: bytes, pos: int, what: str) -> None:
        held = data[pos:]
        if len(held) > self.max_line:
            self._too_long(what)
        self._held = [held]
        self._held_size = len(held)
        self._tail = held[-2:]  # where an end that spans pieces begins

    def _too_long(self, what: str) -> None:
        raise PeerProtocolError(
            f"bad HTTP from the {self._peer}: {what} is longer than {self.max_line} bytes",
            limit="max_head_size",
            limit_value=self.max_line,
        )
