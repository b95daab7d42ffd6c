"""Framing server-sent events: bytes to raw items, the rules applied once for every decoder.

The framer follows the WHATWG HTML "interpreting an event stream" rules (section 9.2.6), from
bytes, in one pass:

Rule 1: a line ends at LF, CRLF or CR; a CR that ends one piece may meet its LF in the next, and
    that LF is not a second (blank) line.
Rule 2: one leading UTF-8 BOM is removed, at the byte level, before anything else.
Rule 3: a line starting with ``:`` is a comment: never dispatched as an event, but returned as
    `SSEComment` so keep-alives are visible.
Rule 4: a line without a colon is a field name with an empty value; one space after the colon
    is removed; several ``data`` lines join with ``\\n``; the type defaults to ``message``;
    ``id`` persists across events and an ``id`` containing NUL is ignored; ``retry`` counts only
    if it is ASCII digits; unknown fields are ignored.
Rule 5: a blank line dispatches the event, unless it had no ``data`` line.
Rule 6: at the end of the body an unterminated line and an undispatched event are discarded,
    and `EndOfStream` says so (``incomplete``).

Bounds and cost: everything since the last blank line (the event being assembled, comments and
an unterminated line included) is bounded by ``max_event_size``, and each data line of the event
after its first counts `LINE_COST` bytes more (what holding it costs besides its bytes: an event
of short lines held ten times its length, attack 38); past it a `PeerProtocolError` names the
limit, at the offset where that event began, however the input was split. Each byte is scanned
a constant number of times: N bytes in K pieces cost O(N + K).

Speed: two fast lanes take what LLM servers send: simple events (one ``data: `` line) and
typed events (one ``event: NAME`` line, NAME printable ASCII, then one ``data: `` line), all with
LF line ends or all with CRLF (the lane follows the line end of the last event the general way
dispatched). While nothing is pending (`SSEFramer.lane`), a decoder's ``feed`` takes a piece
that is exactly one such event (`SSEFramer.whole`, `SSEFramer.whole_typed`) with a few C-level
checks and no buffer (the express: a live stream's every read), and `SSEFramer.take` frames the
run of such events a piece completes with one split: simple events checked by counting LFs and
CRs against the separators, typed events by where their lines fall (each third line blank, each
line after an event line a data line). Anything else (another field, a comment, a lone CR, a
change of line end, simple and typed events in one run, the size bound, bytes that are not
UTF-8, an event type that is not printable ASCII) goes the general way, which applies the rules
line by line, or block by block while the buffer holds no CR; there the whole events a piece
completes, when they are a run of simple or typed events that begins a new event (a stream's
first read, say, which an unpaced upstream fills with hundreds), are framed as one item with the
lane's split and checks (`_batch`), the rest block by block. All paths give the same items,
offsets and verdicts: the property tests check the lanes against the general path and the
general path against a plain model of the algorithm, and the fuzz targets feed each body whole,
byte by byte and flushed. A dialect decoder, which reads no comment, makes its framer `quiet`:
then a piece that is one comment (a keep-alive) is taken by the express, and simple events with
comments between them by the lane (`Runs`), so that a server's pings keep a stream on its lane;
a run whose every event is followed by the same comment is one batch, its events a constant
stride apart (`_pinged`). While the lane holds the beginning of an event, a read that ends no
line (the middle of a long event) is only held (`SSEFramer.goes_on`): it makes nothing due.
Servers on axum (Hugging Face's TGI) write ``data:`` with no space: simple events with LF line
ends have a lane of that form too, which the general way opens when the last data line it
applied had no space (`SSEFramer.shift`).

Text: UTF-8 is decoded only on complete lines, where no character can be split (wire reference
3.1). Invalid UTF-8 is an error by default (``errors="strict"``, a `PeerProtocolError` with the
byte's offset), because a silent U+FFFD would change the model's text or a tool call's arguments
without notice; ``errors="replace"`` gives the browser's behaviour.

This module must never do I/O.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from itertools import repeat
from operator import is_
from typing import Final, Literal, final

import attrs

from ..errors import PeerProtocolError

__all__ = ["DEFAULT_MAX_EVENT_SIZE", "EndOfStream", "SSEFramer"]

DEFAULT_MAX_EVENT_SIZE: Final = 8 * 1024 * 1024
"""Bytes one event may take on the wire (8 MiB). httpx2's SSE decoder, the only other Python
decoder with a default bound, uses 1 MiB; an LLM-Stream ``tool.call`` carries a call's whole
arguments in one event, and a tool that writes a file can pass hundreds of KB, so we allow more."""

LINE_COST: Final = 80
"""Bytes each data line of an event but its first counts against ``max_event_size`` besides its
own (`SSEFramer.pending` says them too): the event holds it as a string, a list entry and an
offset until its blank line, some 50 to 80 bytes besides its value (a line ``data`` alone is 5
bytes on the wire): an event of short lines is held at 0.6 to 1 times what it counts. An event
of one data line, nearly every event, counts its bytes only."""
_MAX_RETRY_DIGITS: Final = 18  # fits an int64; longer values are ignored like non-digits
_NONE: Final = sys.maxsize  # "no such byte in the buffer" for the cached line-end positions
_BOM: Final = b"\xef\xbb\xbf"
SEPARATOR: Final = b"\n\ndata: "
"""What separates the payloads of consecutive simple events (LF line ends)."""
SEPARATOR_CRLF: Final = b"\r\n\r\ndata: "
SEPARATOR_BARE: Final = b"\n\ndata:"
"""With no space after the colon (`SSEFramer.shift`)."""
_SPACED: Final = b"\n\ndata: "  # an event the bare lane does not take
_EVENT: Final = b"event: "
_DATA: Final = b"data: "
_LF: Final = 10
_CR: Final = 13
MAX_LANE_TYPES: Final = 256
"""Entries the typed lane remembers (`_Types`), one or two per event type (its event line, which
runs look up, and its head, which the express does). The Responses API names about 50 types,
Anthropic's Messages API 8; a stream with more still takes the lane, checking the rest each
time."""
_MAX_TYPE_LINE: Final = 128  # longer ``event:`` lines are checked each time, not remembered

Errors = Literal["strict", "replace", "surrogates"]
"""What a decoder does with invalid UTF-8 and lone surrogates: ``"strict"`` an error,
``"replace"`` U+FFFD; ``"surrogates"`` an error for bytes that are not UTF-8 (not JSON text) and
U+FFFD for an escaped lone surrogate in a JSON string (valid JSON, RFC 8259 section 8.2: what
JavaScript writes of text it cut in UTF-16 units), for a relay that passes the bytes on."""


@final
@attrs.frozen(kw_only=True)
class EndOfStream:
    """The body ended. ``incomplete``: an event or a line had begun and was discarded (Rule 6).

    ``offset`` is where that discarded part began; it is not part of equality.
    """

    incomplete: bool
    offset: int = attrs.field(default=0, eq=False)


RawEvent = tuple[str | None, bytes, int | list[int], str, int | None, int]
"""A framed event before its data is decoded: (type or None, data, the offset of its data
line's value, or of each one's when there are several, last event id, retry, offset of the
event's first byte)."""
RawComment = tuple[str, int]
"""A framed comment: (text, offset)."""
RawBatch = tuple[int, list[bytearray], str, int]
"""A run of events that were each exactly ``data: <payload>`` and a blank line, all of type
``message`` with no retry: (offset of the first event, the payloads, the last event id, the
bytes around each payload: 8 with LF line ends, 10 with CRLF, more when the same comment
follows each event: `_pinged`). Event k begins at the first's offset plus ``len(payload) +
gap`` for each payload before it."""
RawTyped = tuple[int, list[str], list[bytes], str, int]
"""A run of events that were each exactly ``event: NAME``, ``data: <payload>`` and a blank line,
NAME non-empty printable ASCII (so as long in characters as in bytes), with no retry: (offset of
the first event, their types, their payloads, the last event id, the length of a line end: 1 for
LF, 2 for CRLF). Event k's data begins ``len(type) + 13 + eol`` bytes after the event begins
(``event: ``, NAME, a line end, ``data: ``), and event k + 1 begins ``len(payload) + 2 * eol``
bytes after that."""
RawItem = RawEvent | RawComment | RawBatch | RawTyped


Runs = dict[int, tuple[list[bytearray], int]]
"""Runs of simple events with comments between them, for a `SSEFramer.quiet` framer: each
run's offset from where the first begins, to its payloads (as a `RawBatch`'s) and the bytes
between one payload and the next (a `RawBatch`'s gap; in a run of `_pinged` events, plus the
comment's line and the blank line after it, between each two)."""


Taken = list[bytearray] | tuple[list[str], list[bytes]] | Runs
"""What `SSEFramer.take` frames: the payloads of a `RawBatch`, or the types and payloads of a
`RawTyped`, or `Runs`."""


class _Types(dict[bytes, str]):
    """The typed lane's event types: an ``event: NAME`` line, alone or with the line end and
    ``data: `` that follow it (a typed event's head), to NAME, for the NAMEs the lane takes
    (non-empty printable ASCII: no control character, nothing the UTF-8 policy could change).
    Any other key raises `KeyError`. One string per type, whose hash is computed once."""

    def __missing__(self, key: bytes) -> str:
        line = key
        if key.endswith(b"\ndata: "):
            line = key[:-8] if key.endswith(b"\r\ndata: ") else key[:-7]
        name = line[7:]
        if not (name and name.isascii() and line.startswith(_EVENT)):
            raise KeyError(key)
        text = name.decode("ascii")
        if not text.isprintable():  # a control character: CR and LF among them
            raise KeyError(key)
        if len(self) < MAX_LANE_TYPES and len(key) <= _MAX_TYPE_LINE:
            self[key] = text
        return text


class SSEFramer:
    """Rules 1 to 6 from bytes to raw items, with no object per event beyond a tuple.

    `SSEDecoder` and the dialect decoders share it, so the framing rules live in one place;
    the dialect decoders read the data bytes directly (a JSON parser takes bytes) and never
    build a `ServerSentEvent`.

    Args and limits as `SSEDecoder`.
    """

    def __init__(self, *, max_event_size: int = DEFAULT_MAX_EVENT_SIZE, errors: Errors = "strict"):
        if type(max_event_size) is not int or max_event_size < 1:
            raise ValueError(f"max_event_size must be a positive int, not {max_event_size!r}")
        if errors not in ("strict", "replace", "surrogates"):
            raise ValueError(f"errors must be 'strict', 'replace' or 'surrogates', not {errors!r}")
        self.max_event_size: Final = max_event_size
        self.errors: Final[Literal["strict", "replace"]] = (
            "replace" if errors == "replace" else "strict"  # (surrogates are JSON's: strict)
        )
        self.retry: int | None = None
        self.last_event_id = ""
        self.end: EndOfStream | None = None
        self.lane = False
        """The fast lane is open: the buffer begins where an event begins, nothing of that
        event is applied yet, the BOM is settled and the body goes on; with LF line ends the
        buffer holds no CR. Then `take` frames a run of simple events with a few C-level
        scans."""
        self.quiet = False
        """Comments need not be returned: the dialect decoders, which ignore them, set it. Then
        the lane also takes simple events with comments between them (`Runs`), and a piece
        that is one comment (`comment`), as a live stream's keep-alives come."""
        self.shift = 0
        """1 while the lane's data lines have no space after the colon (``data:{...}``, as
        servers on axum write them: Hugging Face's TGI), else 0. Then ``gap`` is 7 (LF only),
        and the offsets of a `RawBatch` count from one byte before each event, so that its
        payload still begins 6 bytes after it."""
        self.gap = 8
        """The lane's line end: 8 bytes around a simple event's payload with LF (``data: `` and
        two LFs), 10 with CRLF, whose CRs the cached positions below do not track."""
        # Positions are absolute (counted from the first byte received) unless named otherwise.
        self._buf = bytearray()  # unconsumed bytes; _buf[0] is at _base
        self._base = 0
        self._eof = False
        self._cr = _NONE  # the next CR, or _NONE: none in _buf
        self._scan = 0  # where the next search for a blank line may resume
        self._bom = True  # the BOM question is still open
        self._skip_lf = False  # the last line ended in a CR that ended a piece
        self._crlf = False  # the last blank line the general way applied ended in a CR
        self._event_start = 0  # absolute offset of the first byte after the last blank line
        self._fields = False  # a field line was seen since the last blank line
        self._data: list[bytes] = []
        self._data_at: list[int] = []
        self._type: str | None = None
        self._retry_here: int | None = None
        self._types = _Types()
        self._held = False  # `_hold` took back a beginning with CRLF line ends
        self._bare = False  # the last data line the general way applied was ``data:`` + no space

    def receive(self, data: bytes) -> None:
        """Append bytes; ``b""`` ends the body."""
        if not data:
            self._eof = True
            self.lane = False
            return
        buf = self._buf
        start = self._base + len(buf)
        buf += data
        if self._cr == _NONE and self.gap < 10:
            i = data.find(b"\r")
            if i >= 0:
                self._cr = start + i
                self.lane = False

    def whole(self, data: bytes) -> int:
        """Where the payload ends, if ``data`` is exactly one simple event with the lane's line
        ends (``data: <payload>``, or ``data:<payload>`` with `shift`, then a blank line, within
        the size bound), else 0: the express's test, for a decoder's ``feed`` while `lane` is
        open and the buffer empty. The payload begins at ``6 - shift``."""
        n = len(data)
        if self.gap < 10:
            if data.find(b"\n") != n - 2 or data[-1] != _LF or _CR in data:
                return 0
        elif not (
            data.find(b"\n") == n - 3 and data.find(b"\r") == n - 4 and data[-3:] == b"\n\r\n"
        ):
            return 0
        if n > self.max_event_size:
            return 0
        if self.shift:  # "data:" and no space: the general way would take one off
            return n - 2 if data[:5] == b"data:" and data[5:6] != b" " and n > 6 else 0
        if data[:6] != b"data: ":
            return 0
        return n - self.gap + 6

    def comment(self, data: bytes) -> bool:
        """``data`` is exactly one comment (`quiet`) with the lane's line ends, ASCII (nothing
        for the UTF-8 policy) and within the size bound: the express's test for a keep-alive,
        used as `whole` is. Its bytes are counted with `skip`."""
        n = len(data)
        if self.gap < 10:
            if data.find(b"\n") != n - 2 or data[-1] != _LF or _CR in data:
                return False
        elif not (
            data.find(b"\n") == n - 3 and data.find(b"\r") == n - 4 and data[-3:] == b"\n\r\n"
        ):
            return False
        return data[0] == 0x3A and self.quiet and data.isascii() and n <= self.max_event_size

    def whole_typed(self, data: bytes) -> tuple[str, int, int] | None:
        """If ``data`` is exactly one typed event with the lane's line ends (``event: NAME``,
        ``data: <payload>``, a blank line; NAME as `RawTyped` says; within the size bound): its
        type and where its payload begins and ends, else ``None``. The typed express's test,
        used as `whole` is."""
        n = len(data)
        if self.shift:
            return None  # (a stream of simple events)
        if self.gap == 8:
            line = data.find(b"\n")
            if data.find(b"\n", line + 1) != n - 2 or data[-1] != _LF or _CR in data:
                return None
            start = line + 7
        else:
            line = data.find(b"\r")  # its LF and "data: " follow if the head is one (below)
            if (
                data.find(b"\r", line + 2) != n - 4
                or data.find(b"\n", line + 2) != n - 3
                or data[-2:] != b"\r\n"
            ):
                return None
            start = line + 8
        if n > self.max_event_size:
            return None
        try:  # the head, up to the payload: the event line, its line end and "data: "
            return self._types[data[:start]], start, n - self.gap + 6
        except KeyError:
            return None

    def skip(self, n: int) -> None:
        """Count ``n`` bytes of whole events taken without this framer (`SSEDecoder.feed`'s
        express), while `lane` was open and the buffer empty."""
        self._base = self._event_start = self._scan = self._base + n

    def hold(self, piece: bytes) -> None:
        """Keep ``piece`` after `skip`, while `lane` is open and the buffer is empty: the
        caller has checked that it is the beginning of an event that gives nothing yet (an
        event line, perhaps the beginning of its data line; no other line end, no CR) and
        shorter than ``max_event_size``. `take` keeps such a piece too, unless the lane
        refuses its NAME; then the next read goes the general way, with the same items."""
        self._buf += piece

    def goes_on(self, data: bytes) -> bool:
        """For a decoder's ``feed`` while the lane holds the beginning of an event (a long one,
        in several reads; the caller knows it: its ``_fast`` is ``False``): keep ``data`` and
        say so if it ends no line (no LF, no CR) and keeps within the size bound. Such a read
        completes nothing and makes nothing due, whatever the buffer holds: `take` judges it
        all once a line ends (`_scan` is where it reads on from, each byte once). ``False``:
        nothing was done."""
        buf = self._buf
        if b"\n" in data or b"\r" in data or len(buf) + len(data) > self.max_event_size:
            return False
        buf += data
        return True

    def take(self, data: bytes) -> Taken | None:
        """`receive` non-empty ``data`` and, while `lane` is open, frame what it completes at
        once: the fast lane of `frame`.

        Returns the payloads of the simple events now complete (the `RawBatch` that `frame`
        would append; it begins at the offset ``_base`` had before), or the types and payloads
        of the typed events now complete (a `RawTyped`, likewise), or ``[]`` when none is
        complete yet. ``None``: the data was received, but what it completes needs `frame`
        (anything other than a run of simple events or of typed events, or a limit).
        """
        if self.gap < 10 and _CR in data:
            self.receive(data)  # which closes the lane
            return None
        self._buf += data
        payloads = self._run()
        if payloads is None:
            self.lane = False  # so that `frame` goes the general way at once (it reopens)
        return payloads

    def _run(self) -> Taken | None:
        """While `lane` is open: consume the run of simple events, or of typed events, the
        buffer begins with, if it is complete up to the buffer's last blank line; see `take` for
        what it returns."""
        buf = self._buf
        base = self._base
        n = len(buf)
        limit = self.max_event_size
        gap = self.gap
        blank, sep = (b"\n\n", SEPARATOR) if gap == 8 else (b"\r\n\r\n", SEPARATOR_CRLF)
        if gap == 7:
            blank, sep = b"\n\n", SEPARATOR_BARE
        scan = max(self._scan - base, 0)
        # the last blank line: with LF line ends, nearly always where the last LF (a one-byte
        # search, memrchr's speed) follows another; else the two-byte search finds it
        last = buf.rfind(b"\n", scan) if gap != 10 else -1
        end = last - 1 if last > scan and buf[last - 1] == _LF else buf.rfind(blank, scan)
        if end < 0:  # no event is complete, unless a line the lane does not take is
            if n > limit or not self._waiting(buf, 0, scan - 1 if scan else 0, gap == 10):
                return None
            self._scan = base + n - len(blank) + 1 if n else base
            return []
        # The run may not exceed the bound (a run that could goes the exact way, which finds
        # the event at fault), nor may what follows it.
        after = end + len(blank)
        if after - len(blank) // 2 > limit or n - after > limit:
            return None
        got: Taken | None
        if gap == 7:  # "data:" and no space: a run of simple events, or the general way
            if buf[:5] != b"data:" or buf[5:6] == b" " or buf.find(_SPACED, 0, end) >= 0:
                return None
            got = payloads = buf[5:end].split(sep)
            if _LF in b"".join(payloads):
                return None
        elif buf[:6] == b"data: " and (
            buf.find(b"\n", 6) == end
            if gap == 8
            else buf.find(b"\r", 6) == end == buf.find(b"\n", 6) - 1
        ):  # one event whose payload holds no line end (a memchr to the first): a long delta's
            got = [buf[6:end]]
        elif buf[:6] == b"data: ":
            got = payloads = buf[6:end].split(sep)
            # Each block is one line if no payload holds a line end of its own: an LF (or, with
            # CRLF, a CR; with LF line ends the buffer holds none), found by a memchr over them
            # joined, which costs less than counting them in the buffer.
            joined = b"".join(payloads)
            if (_LF in joined or (gap != 8 and _CR in joined)) and (
                not self.quiet
                or (got := _pinged(buf, end, blank, gap) or _runs(buf, end, blank)) is None
            ):
                return None
        elif buf[:1] == b":" and self.quiet:
            got = _pinged(buf, end, blank, gap) or _runs(buf, end, blank)
            if got is None:
                return None
        elif buf[:7] == _EVENT:
            line = buf.find(b"\n")  # one typed event, LF line ends (a long delta's): its event
            # line, then its data line up to the blank one (a memchr each), no split
            if gap == 8 and buf.find(b"\n", line + 1) == end and buf.startswith(_DATA, line + 1):
                try:
                    got = [self._types[bytes(buf[:line])]], [bytes(buf[line + 7 : end])]
                except KeyError:
                    return None
            else:
                got = self._typed(bytes(buf[:end]))
                if got is None:
                    return None
        else:
            return None
        if n > after and not self._waiting(buf, after, after, gap == 10):
            return None  # what follows the run is due now: all of it goes the general way
        del buf[:after]
        base += after
        self._base = self._event_start = base
        self._scan = base + n - after - len(blank) + 1 if n > after else base
        return got

    def _typed(self, region: bytes) -> tuple[list[str], list[bytes]] | None:
        """The types and payloads of ``region`` (the run, without its last blank line) if it is
        a run of typed events, else ``None``.

        Split at every line end, the run is typed events if every third line is blank, every
        line before a blank one a data line and every line before that an event line with a
        NAME the lane takes; with CRLF, the lines are those if every CR and LF is in a CRLF.
        """
        eol = b"\n" if self.gap == 8 else b"\r\n"
        line = region.find(eol)
        start = line + len(eol) + 6  # where the first payload begins
        if region.startswith(_DATA, line + len(eol)):
            # a run of one type (a stream's deltas): split at the next events' heads at once
            payloads = region[start:].split(eol + eol + region[:start])
            joined = b"".join(payloads)  # no line end of their own: one line each (a memchr)
            if _LF not in joined and (self.gap == 8 or _CR not in joined):
                try:
                    return [self._types[region[:line]]] * len(payloads), payloads
                except KeyError:
                    return None
        if self.gap == 8:
            lines = region.split(b"\n")  # with LF line ends the buffer holds no CR
        else:
            lines = region.split(b"\r\n")
            ends = len(lines) - 1
            if region.count(b"\r") != ends or region.count(b"\n") != ends:
                return None
        k = (len(lines) + 1) // 3
        if len(lines) != 3 * k - 1 or any(lines[2::3]):
            return None
        data = lines[1::3]
        payloads = list(map(bytes.removeprefix, data, repeat(_DATA)))
        if any(map(is_, payloads, data)):  # a line without the prefix comes back as it was
            return None
        try:
            return list(map(self._types.__getitem__, lines[0::3])), payloads
        except KeyError:
            return None

    def _waiting(self, buf: bytearray, begin: int, start: int, crlf: bool) -> bool:
        """``buf[begin:]`` holds no blank line: it is the beginning of an event a lane takes,
        which gives nothing yet: a simple event's data line, or a typed event's event line and
        perhaps its data line, the last line perhaps unfinished. Anything else (a comment,
        which is due as soon as its line ends; another field; a line end that is not the
        lane's: CRLF if ``crlf``, else LF, and then the caller knows there is no CR) goes the
        general way. Lines before ``start`` were seen already."""
        n = len(buf)
        head = buf[begin : begin + 7]
        if not crlf:
            end = buf.find(b"\n", start)
            if end < 0:
                return True
            if head[: 6 - self.shift] == _DATA[: 6 - self.shift] or (
                head[:1] == b":" and self.quiet
            ):
                return end == n - 1
            if head != _EVENT:
                return False
            line = buf.find(b"\n", begin)  # the event line's end, at or before `end`
            if not self._known(buf, begin, line):
                return False
            if line == n - 1:
                return True
            # the data line's end: no LF lies between its beginning and ``start`` (a call that
            # saw one there closed the lane), so a long line is not searched again
            end = end if end > line or start > line else buf.find(b"\n", line + 1)
            return end < 0 or (end == n - 1 and buf[line + 1 : line + 7] == b"data: ")
        end = buf.find(b"\r", start)
        if end >= 0:
            if head[:6] == b"data: " or (head[:1] == b":" and self.quiet):
                if not (end == n - 1 or (end == n - 2 and buf[-1] == _LF)):
                    return False
            elif head != _EVENT:
                return False
            else:
                line = buf.find(b"\r", begin)  # the event line's end, at or before `end`
                if not self._known(buf, begin, line):
                    return False
                if line < n - 2:  # its CRLF is whole, and its next line has begun
                    end = end if end > line or start > line else buf.find(b"\r", line + 2)
                    if end >= 0 and not (
                        (end == n - 1 or (end == n - 2 and buf[-1] == _LF))
                        and buf[line + 2 : line + 8] == b"data: "
                    ):
                        return False
        return _crlf_only(buf, start)

    def _known(self, buf: bytearray, begin: int, end: int) -> bool:
        """``buf[begin:end]`` is an event line whose NAME the typed lane takes."""
        try:
            self._types[bytes(buf[begin:end])]
        except KeyError:
            return False
        return True

    @property
    def pending(self) -> int:
        """Bytes of the event not whole yet that it holds, its data lines after the first at
        `LINE_COST` more each (what ``max_event_size`` bounds): what a server counts against
        what all its streams may hold at once."""
        return max(0, self._base + len(self._buf) - self._event_start) + self._lines_cost()

    def _lines_cost(self) -> int:
        """What the event's data lines but its first count besides their bytes."""
        lines = len(self._data)
        return LINE_COST * (lines - 1) if lines > 1 else 0

    def frame(self, out: list[RawItem]) -> None:
        """Append every item the buffer completes to ``out``; at the end of body set ``end``.

        Raises:
            PeerProtocolError: a limit was exceeded or text was not UTF-8; the items framed
                before the problem are in ``out`` already.
        """
        if self.lane:
            at = self._base
            got = self._run()
            if got is not None:
                if isinstance(got, tuple):
                    types, payloads = got
                    out.append((at, types, payloads, self.last_event_id, (self.gap - 6) // 2))
                elif type(got) is dict:
                    for start, (run, stride) in got.items():
                        out.append((at + start, run, self.last_event_id, stride))
                elif got:
                    out.append((at - self.shift, got, self.last_event_id, self.gap))  # type: ignore[arg-type]
                return
        self._held = False
        if self._bom and not self._eof:
            self._settle_bom()
        self.shift = 0
        if self.gap == 7:
            self.gap = 8
        elif self.gap != 8:  # the CRLF lane did not track CRs: find them again
            self.gap = 8
            buf = self._buf
            cr = buf.find(b"\r")
            self._cr = self._base + cr if cr >= 0 else _NONE
            self._scan = self._base
        try:
            if self._cr != _NONE or self._eof or self._skip_lf or self._bom:
                self._frame_lines(out)
            else:
                self._frame_blocks(out)
        finally:
            base = self._base
            if self._cr != _NONE and self._cr < base:  # past the CRs it knew of: any more?
                cr = self._buf.find(b"\r")
                self._cr = base + cr if cr >= 0 else _NONE
            self.lane = (
                (self._cr == _NONE or self._held)
                and self._event_start == base
                and not (self._fields or self._eof or self._skip_lf or self._bom)
            )
            if self.lane and self._crlf:
                self.gap = 10
            elif self.lane and self._bare:
                self.gap, self.shift = 7, 1

    def _settle_bom(self) -> None:
        """Rule 2 as soon as three bytes (or fewer that cannot begin a BOM) came, so that a
        stream's first read takes the block path (`_frame_blocks`) and opens the lanes, as
        every later read does; offsets stay those of the body as sent."""
        buf = self._buf
        if len(buf) < 3 and _BOM.startswith(buf):
            return  # the general path waits for more, or settles it at the end of body
        self._bom = False
        if buf.startswith(_BOM):
            del buf[:3]
            self._base += 3
            self._event_start = self._base
            self._scan = max(self._scan, self._base)

    def _frame_blocks(self, out: list[RawItem]) -> None:
        """No CR in the buffer, so every line ends in LF and every event in "\n\n": apply every
        complete event at once, then the rest's complete lines unless they only begin an event a
        lane takes (`_waiting`: nothing in them is due yet), which stay for later."""
        buf = self._buf
        base = self._base
        end = buf.rfind(b"\n\n", self._scan - base)
        scan = self._scan  # lines before it were seen (and applied, unless they were waiting)
        if end < 0 and buf[:1] == b"\n":
            # _buf always begins at a line start: a leading LF is a blank line on its own.
            self._lines([b""], base, out)
            del buf[:1]
            base = self._base = base + 1
        elif end >= 0:
            self._crlf = False
            if not self._batch(buf, end, base, out):
                self._blocks(bytes(buf[:end]), base, out)
            del buf[: end + 2]
            base = self._base = self._event_start = base + end + 2
            scan = base  # the rest was searched for a blank line only
        n = len(buf)
        if n and not self._waiting(buf, 0, max(scan - base, 0), False):  # due now: a comment
            last = buf.rfind(b"\n")
            self._lines(bytes(buf[:last]).split(b"\n"), base, out)
            del buf[: last + 1]
            base = self._base = base + last + 1
            n = len(buf)
        self._scan = base + n - 1 if n else base
        if base + n - self._event_start + self._lines_cost() > self.max_event_size:
            self._overflow(buf, out)

    def _frame_lines(self, out: list[RawItem]) -> None:
        """The general path: one line at a time, any line end; the BOM; the end of body."""
        buf = self._buf
        n = len(buf)
        pos = 0
        if self._bom:
            if n < 3 and _BOM.startswith(buf) and not self._eof:
                return
            self._bom = False
            if buf.startswith(_BOM):
                pos = self._event_start = 3
        base = self._base
        try:
            while pos < n:
                if self._skip_lf:
                    self._skip_lf = False
                    if buf[pos] == _LF:  # the LF of a CRLF split across pieces
                        if self._event_start == base + pos:
                            self._event_start += 1
                        pos += 1
                        continue
                # The lines that end in LF before the next CR, at once (as _frame_blocks does
                # without a CR): what a stream with a few CRs is mostly made of.
                cr = self._cr - base
                if cr < pos:
                    cr = buf.find(b"\r", pos)
                    self._cr = _NONE if cr < 0 else base + cr
                    cr = n if cr < 0 else cr
                last = buf.rfind(b"\n", pos, cr if cr < n else n)
                if last >= pos:
                    self._lines(bytes(buf[pos:last]).split(b"\n"), base + pos, out)
                    self._crlf = False
                    pos = last + 1
                    continue
                pos = self._line(buf, pos, n, out)
                if pos < 0:
                    pos = -pos - 1
                    break
            self._check_size(base + n)
            pos = self._hold(buf, pos)
        finally:
            if pos:
                del buf[:pos]
                self._base = base + pos
                self._scan = max(self._scan, base + pos)
        if self._eof:
            self.end = EndOfStream(incomplete=bool(buf) or self._fields, offset=self._event_start)

    def _hold(self, buf: bytearray, pos: int) -> int:
        """After `_frame_lines` applied every complete line: if the lines of the last event so far
        only begin an event a lane takes (`_waiting`, with the line end of the blank line before
        them), take them back, so that the lane opens now rather than at a piece that ends
        inside an event's first line. Returns where the bytes not applied begin."""
        start = self._event_start - self._base
        if self._eof or not self._fields or start < 0:
            return pos  # the end, nothing of the event applied, or its beginning consumed
        crlf = self._crlf
        if not (crlf or buf.find(b"\r", start) < 0) or not self._waiting(buf, start, start, crlf):
            return pos
        self._type = None  # all that an event line and a data line change
        self._data = []
        self._data_at = []
        self._fields = self._skip_lf = False
        self._held = crlf  # a lane that does not track CRs may open with some in the buffer
        return start

    def _line(self, buf: bytearray, pos: int, n: int, out: list[RawItem]) -> int:
        """Apply the line at ``pos``, which ends at the next CR (``_frame_lines`` applied the
        lines that end in LF before it, and found that CR); return the next position, or
        ``-pos-1`` when no CR is there: the line has not ended."""
        base = self._base
        cr = self._cr - base
        if cr >= n:
            return -pos - 1
        nxt = cr + 1
        if nxt < n:
            if buf[nxt] == _LF:
                nxt += 1
        else:
            self._skip_lf = True
        self._lines([bytes(buf[pos:cr])], base + pos, out)
        if cr == pos:  # a blank line: the event starts after its whole line end
            self._event_start = base + nxt
            self._crlf = True  # the lane's line end, when it opens again
        return nxt

    def _batch(self, buf: bytearray, end: int, at: int, out: list[RawItem]) -> bool:
        """`_frame_blocks`'s whole events, ``buf[:end]`` (the last blank line not included),
        as one item if they are a run of simple events (a `RawBatch`) or of typed events (a
        `RawTyped`) that begins a new event: what `take` frames, with its checks, for a read
        that went the general way (a stream's first read, say, or one that ends inside an
        event after the lane closed). ``False``, having appended nothing: `_blocks` applies
        them. An event of the run, and the run, is shorter than ``max_event_size``."""
        if self._fields or self._event_start != at or end >= self.max_event_size:
            return False
        if buf[:6] == b"data: ":
            payloads = buf[6:end].split(SEPARATOR)
            if _LF in b"".join(payloads):  # a block of two lines or more (the lane's check)
                return False
            out.append((at, payloads, self.last_event_id, 8))
            self._bare = False
        elif buf[:7] == _EVENT:
            got = self._typed(bytes(buf[:end]))
            if got is None:
                return False
            out.append((at, got[0], got[1], self.last_event_id, 1))
        else:
            return False
        self._event_start = at + end + 2
        return True

    def _blocks(self, region: bytes, at: int, out: list[RawItem]) -> None:
        """Apply a region of whole events: blocks of LF-terminated lines, each block followed by
        a blank line (the region's last one not included).

        Most events are one ``data: `` line: a run of them is framed with one split, checked
        by counting LFs, and every other block goes through `_lines`, which applies the rules
        line by line. Both give the same items and the same verdicts.
        """
        limit = self.max_event_size
        # The first block continues an event begun earlier (fields, or comments, already
        # applied): it goes through _lines, which counts those bytes too.
        pending = self._fields or self._event_start != at
        last_id = self.last_event_id
        for block in region.split(b"\n\n"):
            if not pending and block[:6] == b"data: " and _LF not in block and len(block) < limit:
                out.append((None, block[6:], at + 6, last_id, None, at))
                self._bare = False
            else:
                if not pending:
                    self._event_start = at
                pending = False
                lines = block.split(b"\n")
                lines.append(b"")
                self._lines(lines, at, out)
                last_id = self.last_event_id
            at += len(block) + 2
        self._event_start = at

    def _overflow(self, buf: bytearray, out: list[RawItem]) -> None:
        """The unprocessed rest exceeds the bound: apply its complete lines one by one (so what
        they emit, and where the error is found, match a body split any other way), then
        raise for the unterminated line."""
        last = buf.rfind(b"\n")
        if last >= 0:
            self._lines(bytes(buf[:last]).split(b"\n"), self._base, out)
        self._check_size(self._base + len(buf))

    def _lines(self, lines: list[bytes], at: int, out: list[RawItem]) -> None:
        """Apply complete lines, each counted as followed by one byte of line end; the hot loop
        of the whole package.

        The size bound is checked before each line is applied, against the bytes up to that
        line's end: the same lines pass or fail whatever way the body was split, and nothing of
        a line that fails is emitted.
        """
        data = self._data
        data_at = self._data_at
        limit = self.max_event_size
        limit_at = self._event_start + limit - self._lines_cost()  # (lines of an earlier read)
        for line in lines:
            nxt = at + len(line) + 1
            if not line:  # Rule 5: dispatch
                if at > limit_at:
                    self._check_size(at)
                if data:
                    out.append(
                        (
                            self._type,
                            data[0] if len(data) == 1 else b"\n".join(data),
                            data_at[0] if len(data_at) == 1 else data_at,
                            self.last_event_id,
                            self._retry_here,
                            self._event_start,
                        )
                    )
                    data = self._data = []
                    data_at = self._data_at = []
                self._type = self._retry_here = None
                self._fields = False
                self._event_start = nxt
                limit_at = nxt + limit
            else:
                if nxt > limit_at:
                    self._check_size(nxt)
                if line[:6] == b"data: ":
                    data.append(line[6:])
                    data_at.append(at + 6)
                    self._fields = True
                    self._bare = False
                    if len(data) > 1:
                        limit_at -= LINE_COST
                else:
                    before = len(data)
                    self._field(line, at, out)
                    if len(data) > before >= 1:  # a data line, not the event's first
                        limit_at -= LINE_COST
            at = nxt

    def _field(self, line: bytes, at: int, out: list[RawItem]) -> None:
        """Apply one non-blank line other than ``data: ...`` (Rules 3 and 4)."""
        colon = line.find(b":")
        if colon == 0:
            text = line[2:] if line[1:2] == b" " else line[1:]
            out.append((self._text(text, at + len(line) - len(text)), at))
            return
        self._fields = True
        if colon < 0:
            name = line
            value = b""
        else:
            name = line[:colon]
            value = line[colon + 2 :] if line[colon + 1 : colon + 2] == b" " else line[colon + 1 :]
        value_at = at + len(line) - len(value)
        if name == b"data":
            self._data.append(value)
            self._data_at.append(value_at)
            self._bare = colon == 4 and value_at == at + 5  # "data:" and no space (the lane's)
        elif name == b"event":
            self._type = self._text(value, value_at) or None
        elif name == b"id":
            if b"\0" not in value:
                self.last_event_id = self._text(value, value_at)
        elif name == b"retry" and value.isdigit() and len(value) <= _MAX_RETRY_DIGITS:
            self.retry = self._retry_here = int(value)

    def _check_size(self, upto: int) -> None:
        if upto - self._event_start + self._lines_cost() > self.max_event_size:
            raise PeerProtocolError(
                f"an event is larger than max_event_size ({self.max_event_size} bytes)",
                offset=self._event_start,
                limit="max_event_size",
                limit_value=self.max_event_size,
            )

    def _text(self, raw: bytes, at: int) -> str:
        try:
            return raw.decode("utf-8", self.errors)
        except UnicodeDecodeError as exc:
            raise PeerProtocolError(
                f"invalid UTF-8 in the event stream: {exc.reason}", offset=at + exc.start
            ) from exc

    def decode_data(self, data: bytes | bytearray, data_at: int | list[int]) -> str:
        """Decode an event's joined data; on invalid UTF-8, name the byte's offset."""
        try:
            return data.decode("utf-8", self.errors)
        except UnicodeDecodeError as exc:
            raise PeerProtocolError(
                f"invalid UTF-8 in an event's data: {exc.reason}",
                offset=offset_in_parts(data, data_at, exc.start),
            ) from exc


def _runs(buf: bytearray, end: int, blank: bytes) -> Runs | None:
    """The `Runs` of ``buf[:end]`` if each of its blocks (split at ``blank``) is one line, a
    simple event's (``data: ``) or an ASCII comment's, else ``None``."""
    blocks = buf[:end].split(blank)
    joined = b"".join(blocks)
    if b"\n" in joined or b"\r" in joined:
        return None
    runs: Runs = {}
    payloads: list[bytearray] | None = None
    pos = 0
    gap = len(blank) + 6
    for block in blocks:
        if block[:6] == b"data: ":
            if payloads is None:
                payloads = []
                runs[pos] = (payloads, gap)
            payloads.append(block[6:])
        elif block[:1] == b":" and block.isascii():
            payloads = None
        else:
            return None
        pos += len(block) + len(blank)
    return runs


def _pinged(buf: bytearray, end: int, blank: bytes, gap: int) -> Runs | None:
    """``buf[:end]`` as one run if it is simple events, each but perhaps the last followed by
    one comment, the same every time (a server that pings after every event), else ``None``:
    its events are then a constant stride apart, so one `RawBatch` with that stride holds them
    (the `_runs` of such a stream are an event each). A split at the ping and the next event's
    head takes them at once; a payload left holding a line end had no ping after it, or two."""
    start = 0
    if buf[:1] == b":":  # a read that begins with the ping of an event read before
        first = buf.find(blank, 0, end)  # that ping's end, where the first event begins
        if first < 0 or not _comment(buf[:first]):
            return None
        start = first + len(blank)
        if buf[start : start + 6] != b"data: ":
            return None
    at = buf.find(blank, start + 6, end)  # the first event's end: its ping follows
    if at < 0:
        return None
    stop = buf.find(blank, at + len(blank), end)  # the ping's end, or the run's
    ping = buf[at : end if stop < 0 else stop]  # the blank line, then the comment's line
    if not _comment(ping[len(blank) :]):
        return None
    payloads = buf[start + 6 : end].split(ping + blank + b"data: ")
    last = payloads[-1]
    if last.endswith(ping):
        payloads[-1] = last[: -len(ping)]
    joined = b"".join(payloads)
    if b"\n" in joined or b"\r" in joined:
        return None
    return {start: (payloads, gap + len(ping))}


def _comment(line: bytearray) -> bool:
    """``line`` is one comment's line, ASCII (nothing for the UTF-8 policy to change)."""
    return line[:1] == b":" and b"\n" not in line and b"\r" not in line and line.isascii()


def _crlf_only(buf: bytearray, start: int) -> bool:
    """Every line end in ``buf[start:]`` is CRLF, so the CRLF lane misses no blank line there.
    A CR at the very end may meet its LF later, unless it ends a blank line: a CR alone ends a
    line (Rule 1), so that event is complete now."""
    at = start
    for _ in range(8):  # few line ends (a long event's): each found by a memchr
        cr = buf.find(b"\r", at)
        lf = buf.find(b"\n", at)
        if lf < 0:  # no LF left: no CR either, but one at the very end
            return cr < 0 or (cr == len(buf) - 1 and not buf.endswith(b"\r\n\r"))
        if cr < 0 or cr != lf - 1:  # an LF without its CR, or a CR without its LF
            return False
        at = lf + 1
    crlf = buf.count(b"\r\n", at)  # many: counted (a two-byte count walks the buffer)
    return (
        buf.count(b"\n", at) == crlf
        and buf.count(b"\r", at) - (buf[-1:] == b"\r") == crlf
        and not buf.endswith(b"\r\n\r")
    )


def batch_offsets(at: int, payloads: Sequence[bytes | bytearray], gap: int) -> list[int]:
    """Where the data of each event of a `RawBatch` begins."""
    offsets = []
    for payload in payloads:
        offsets.append(at + 6)
        at += len(payload) + gap
    return offsets


def typed_offsets(
    at: int, types: Sequence[str], payloads: Sequence[bytes | bytearray], eol: int
) -> list[int]:
    """Where the data of each event of a `RawTyped` begins (`RawTyped` says how)."""
    offsets = []
    for sse_type, payload in zip(types, payloads, strict=True):
        at += len(sse_type) + 13 + eol
        offsets.append(at)
        at += len(payload) + 2 * eol
    return offsets


def offset_in_parts(data: bytes | bytearray, data_at: int | list[int], index: int) -> int:
    """Map an index in data joined from lines (``\\n`` between them) to its body offset."""
    if isinstance(data_at, int):
        return data_at + index
    start = 0
    for at in data_at:
        end = data.find(b"\n", start)
        if end < 0 or index < end:
            return at + index - start
        start = end + 1
    return data_at[-1] if data_at else 0  # pragma: no cover - index is always inside data
