"""Gemini's stream without ``alt=sse``: one JSON array of ``GenerateContentResponse`` objects,
each element written as the model goes (``[{...}``, then ``,`` and the next, then ``]``).
`ElementFramer` finds the elements, whole, as the bytes come, for `GeminiStreamDecoder`:

Rule 1: an element is first offered where the framer holds it (`Held`): one that repeats the
    decoder's learned envelope is whole by its match, and read there, with no search for its
    end and no copy (where it begins after a comma, once more when the next read comes to one
    that was cut, and at each end a try finds). Else it is found without a parser when it can
    be: where the bytes new to it hold a ``}`` that may end it (`_ENDS`: one before a line with
    the comma or the ``]``, Google's layout; before ``,`` and a line that begins the next, an
    encoder's; before the end of what came, a live stream's read), the element up to it is
    offered to the decoder as one that may not be whole (`Element`), which reads it as it reads
    any chunk (the one parse it needs anyway, or none when the held read could not take it but
    the envelope can: a long hole); if it is one whole object, it is the element, read. The
    last `LOOKBACK` bytes of the read before are looked at again, so that a ``}`` whose next
    bytes came in the next read is one too. A read that brings a ``}`` but none of those counts
    as a try that failed. After `MAX_TRIES` tries failed (a ``}`` where no element ends, a
    layout of another kind), once what it holds is past the bound (Rule 3), once the tries
    would parse more than twice the bytes received (review 65: an element that none found, then
    many after it, each tried at one far ``}``, were parsed again a read at a time), or once
    the body ended, the element's brackets are counted outside its strings instead, from where
    the count left off, a string or a bracket at a time (C-level searches for quotes and
    brackets); and once an element so counted ends where `_ENDS` sees no end (compact ``},{``,
    an indented list: review 66, such elements waited for the body's end), every element after
    it is counted from its first byte. The tries parse at most twice the body, and the count
    looks at each byte once, however the reads cut it. The common case (a comma, then an
    element that repeats the envelope, or else one whole at the first ``}`` that may end it) is
    read at once: one pattern for the gap, then the held read, or one search for the end of an
    element (`ElementFramer.read`).
Rule 2: what the array holds besides its elements is its grammar, checked: blanks, ``[``
    first, ``,`` between elements, ``]`` last, and only blanks after it; an element is an
    object (``{``). Anything else is a `PeerProtocolError` with its byte offset; the elements
    before it are given first.
Rule 3: an element is at most ``max_element`` bytes (the decoder's ``max_event_size``): past
    it, a `PeerProtocolError`. The framer holds the element not yet whole, and nothing else;
    how deep it nests is the parser's to judge (`svir_proto._json`), once it is whole.
Rule 4: the body is `whole` when it ended after the array's ``]``; one that ended before it
    (inside an element, or between two) is cut.

No I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

from ..errors import PeerProtocolError

__all__: list[str] = []

MAX_TRIES: Final = 4
"""Parses an element may be tried at (Rule 1) before its brackets are counted."""
LOOKBACK: Final = 4
"""Bytes of the read before that `_ENDS` looks at again (``},\r\n{`` less its ``{``)."""
_ENDS: Final = re.compile(rb"\}(?=\r?\n[,\]]|,\r?\n\{|\][ \t\r\n]*\Z|[ \t\r\n]*\Z)")
"""A ``}`` that may end an element (Rule 1): no line end is in a JSON string, and an indented
element's own lines begin with blanks, so a line that begins with ``,``, ``]`` or ``{`` is
the array's."""
_BLANKS: Final = re.compile(rb"[ \t\r\n]*")
_GAP: Final = re.compile(rb"[ \t\r\n]*,[ \t\r\n]*\{").match
"""What is between two elements, and the next one's ``{`` (Rule 2's common case)."""
_STRUCTURE: Final = re.compile(rb'["{}\[\]]')
_OPEN, _FIRST, _NEXT, _ELEMENT, _CLOSED = range(5)
"""Where the reading is between elements (Rule 2): before the ``[``; after it (an element or
``]``); after an element (``,`` or ``]``); after a comma (an element); after the ``]``."""

Element = Callable[[bytes, int, bool], bool]
"""What reads each element: given its bytes, the body's offset where it begins and whether it
may not be whole (Rule 1's tries), it reads it and says ``True``; or, only when it may not be
whole, says ``False`` (it is not one whole JSON object) having read nothing of it."""
Held = Callable[[bytearray, int, int, int], int]
"""What reads an element where the framer holds it, first (Rule 1): given the buffer, where
the element begins in it, the end it may not pass and the body's offset where it begins, it
reads the element and says where it ends, when it can tell from its bytes alone that the
element is whole (the decoder's learned envelope, `svir_proto.gemini._envelope`); else it says
-1, having read nothing of it, as it would at any end before that one."""


class ElementFramer:
    """Give it the body's bytes (`receive`; ``b""`` at its end), then `read` the elements that
    are whole."""

    __slots__ = (
        "_again", "_allowance", "_base", "_buf", "_counted", "_depth", "_escapes", "_fresh",
        "_in_string", "_pos", "_start", "_state", "_tries", "ended", "max_element",
    )  # fmt: skip

    def __init__(self, *, max_element: int, offset: int = 0) -> None:
        self.max_element = max_element
        self.ended = False
        self._buf = bytearray()
        self._base = offset  # the body's offset of the buffer's first byte
        self._state = _OPEN
        self._start = -1  # where the element being read begins in the buffer (-1: none)
        self._pos = 0  # where the reading goes on
        self._fresh = 0  # where the bytes the last `read` did not see begin
        self._tries = 0  # the element's parses tried (Rule 1)
        self._allowance = 0  # bytes the tries may still parse: twice those received (Rule 1)
        self._counted = False  # a layout `_ENDS` does not know: every element counted (Rule 1)
        self._depth = 0  # its brackets open, as far as they were counted
        self._in_string = False
        self._escapes = 0  # where a run of backslashes before a quote may begin
        self._again = False  # the element begun is offered to the held read again

    @property
    def pending(self) -> int:
        """Bytes it holds: of an element not whole yet, and what came after it."""
        return len(self._buf)

    @property
    def whole(self) -> bool:
        """The body ended after the array's ``]`` (Rule 4)."""
        return self.ended and self._state == _CLOSED

    def receive(self, data: bytes) -> None:
        if data:
            self._buf += data
            self._allowance += 2 * len(data)
        else:
            self.ended = True

    def read(self, element: Element, held: Held) -> None:
        """Give each element now whole, in order, to ``held`` (Rule 1's first way), or else to
        ``element``.

        Raises:
            PeerProtocolError: Rules 2 and 3 (after the elements before it).
        """
        buf = self._buf
        i = self._pos
        while True:
            start = self._start
            tried = False
            if start < 0:
                if i == len(buf):
                    self._pos = i
                    break
                if self._state == _NEXT and not self._counted and (gap := _GAP(buf, i)):
                    start = gap.end() - 1  # (the common case at once: a comma, the next
                    stop = held(buf, start, start + self.max_element, self._base + start)
                    if stop >= 0:
                        self._pos = i = stop
                        continue
                    self._begin(start)  # element, and its first try)
                    stop = self._try(buf, element, None, start + 1)
                    tried = True
                    if stop >= 0:
                        self._start, self._state, self._pos, i = -1, _NEXT, stop, stop
                        continue
                else:
                    i = self._between(buf, i)
                    if i < 0:
                        break
                    continue
            stop = -1
            if self.ended or len(buf) - start > self.max_element or self._counted:
                self._tries = MAX_TRIES  # (nothing more will come to end it, it may be past
                # the bound, which a try cannot tell, or no try finds ends: counted, Rule 1)
            if self._tries < MAX_TRIES and not tried:
                offer: Held | None = held
                if self._again:  # (it was cut: once more bytes came, most likely whole)
                    self._again = False
                    stop = held(buf, start, start + self.max_element, self._base + start)
                    offer = None  # (had it failed, it would at any end a try finds: `Held`)
                if stop < 0:
                    stop = self._try(buf, element, offer, max(self._fresh - LOOKBACK, start + 1))
            if stop < 0 and self._tries >= MAX_TRIES:
                stop = self._scan(buf)
                if stop >= 0:
                    self._bound(stop - start)  # (whole at once, as held a read at a time)
                    self._counted = self._counted or _ENDS.match(buf, stop - 1) is None
                    element(bytes(buf[start:stop]), self._base + start, False)
            if stop < 0:  # not whole yet: Rule 3's bound on what it holds
                self._bound(len(buf) - start)
                break
            self._start, self._state, self._pos, i = -1, _NEXT, stop, stop
        if self._start < 0:  # (all of it read: what is left of an element is held)
            self._base += self._pos
            buf.clear()
            self._pos = 0
        elif self._start:
            self._hold()
        self._fresh = len(buf)

    def _between(self, buf: bytearray, i: int) -> int:
        """Rule 2, from ``i``: where reading goes on (an element begun: `_start`), or -1."""
        i = _BLANKS.match(buf, i).end()  # type: ignore[union-attr]
        self._pos = i
        if i == len(buf):
            return -1
        byte, state = buf[i], self._state
        if state == _OPEN:
            self._expect(byte == 0x5B, "the body is neither server-sent events nor an array", i)
            self._state = _FIRST
        elif state == _CLOSED:
            self._expect(False, "bytes after the end of the stream's array", i)
        elif byte == 0x5D and state != _ELEMENT:
            self._state = _CLOSED
        elif state == _NEXT:
            self._expect(byte == 0x2C, "an element is followed by ',' or ']'", i)
            self._state = _ELEMENT
        else:
            self._expect(byte == 0x7B, "an element of the stream must be a JSON object", i)
            self._begin(i)
            return i
        return i + 1

    def _begin(self, i: int) -> None:
        """An element begins at ``i`` (its ``{``)."""
        self._start, self._pos, self._state = i, i, _ELEMENT
        self._tries, self._depth, self._in_string = 0, 0, False
        self._again = True  # (the held read, once more, when more bytes come)

    def _try(self, buf: bytearray, element: Element, held: Held | None, begin: int) -> int:
        """Rule 1: the element up to a ``}`` from ``begin`` (of the bytes new to it) that may
        end it, if that is one whole object (``element`` read it): its end; else -1."""
        start = self._start
        tried = self._tries
        search = _ENDS.search
        found = search(buf, begin)
        while found is not None:
            end = found.end()
            size = end - start
            if size > self.max_element or size > self._allowance or self._tries == MAX_TRIES:
                self._tries = MAX_TRIES  # (counted from now: Rules 1 and 3)
                return -1
            self._tries += 1
            self._allowance -= size
            if held is not None and (stop := held(buf, start, end, self._base + start)) >= 0:
                return stop
            if element(bytes(buf[start:end]), self._base + start, True):
                return end
            found = search(buf, end)
        if self._tries == tried and buf.find(b"}", max(self._fresh, start + 1)) >= 0:
            self._tries += 1  # (a } no try could take: a layout `_ENDS` may not know)
        return -1

    def _scan(self, buf: bytearray) -> int:
        """Rule 1: count the element's brackets outside its strings from where the count left
        off: the element's end, or -1."""
        i, end, depth = self._pos, len(buf), self._depth
        search = _STRUCTURE.search
        while True:
            if self._in_string:
                quote = buf.find(b'"', i)
                if quote < 0:
                    i = end
                    break
                run = buf[self._escapes : quote]  # (the backslashes right before it)
                i = quote + 1
                if (len(run) - len(run.rstrip(b"\\"))) % 2:  # escaped
                    self._escapes = i
                    continue
                self._in_string = False
            found = search(buf, i)
            if found is None:
                i = end
                break
            i = found.end()
            byte = buf[i - 1]
            if byte == 0x22:
                self._in_string = True
                self._escapes = i
            elif byte == 0x7B or byte == 0x5B:
                depth += 1
            else:
                depth -= 1
                if depth <= 0:
                    self._pos = i
                    return i
        self._pos, self._depth = i, depth
        return -1

    def _bound(self, size: int) -> None:
        """Rule 3, on the element being read (``size`` bytes of it)."""
        if size > self.max_element:
            raise PeerProtocolError(
                f"an element of the stream is longer than max_event_size ({self.max_element} "
                "bytes)",
                offset=self._base + self._start,
                limit="max_event_size",
                limit_value=self.max_element,
            )

    def _expect(self, ok: bool, message: str, at: int) -> None:
        if not ok:
            raise PeerProtocolError(message, offset=self._base + at)

    def _hold(self) -> None:
        """Let go of what was read before the element not whole yet."""
        cut = self._start
        del self._buf[:cut]
        self._base += cut
        self._pos -= cut
        self._start = 0
        self._escapes = max(self._escapes - cut, 0)
