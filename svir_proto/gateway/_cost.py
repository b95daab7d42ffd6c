"""What translating a request body costs the gateway, estimated from its bytes as they come.

A translated body is parsed whole (JSON, then the dialect's typed request, then the hub's, then
the upstream's body), and parsing builds far more than the bytes: a hundred thousand small
messages, 4 MiB on the wire, are about 120 MiB of objects. The body budget
(``--max-buffered``) therefore holds, for such a body, what parsing it builds, not its length:
the estimate bounds both the memory and the work of all the bodies being prepared at once, and
decides which body is parsed on the event loop (`GatewayConnection`).

Rule 1 (the estimate): ``4 + 3 w`` bytes a byte, ``w`` the width of the body's widest
    character as Python stores text (PEP 393: 1 up to U+00FF, 2 up to U+FFFF, 4 past it): the
    body as it is read, its copy, the upstream's body and what sending it holds (4), and the
    decoded text, the parsed strings and what the translation builds of them (3, at ``w``
    bytes a character: Responses' ``instructions`` become a system message); then ``32`` a comma
    (an array's number or ``null``: an object and a pointer) and ``160`` an object, an array or
    a string (counted as its opening ``{`` or ``[``, and its quotes less the escaped ones):
    measured against `_prepare`'s peak (tracemalloc) and the gateway's peak RSS on small
    messages, tools, tool calls, number and string arrays, prose, and text with one character
    past U+FFFF. Brackets and commas inside strings are not counted (`outside`): they build
    nothing, and a string of them was 160 times its bytes.
Rule 2 (pieces, `BodyCost`): the estimate of a body is the sum of its pieces', so it is taken
    as the body comes, with C-speed counts and no parse; a quote escaped across two pieces
    counts once more, never less. The width is the widest seen so far (a lead byte of UTF-8,
    or a ``\\u`` escape, also across two pieces); once it grows, the bytes that came before
    are counted again at the new width.

This module does no I/O.
"""

from __future__ import annotations

import re
from typing import Final

__all__: list[str] = []

PER_BYTE: Final = 4
PER_WIDTH: Final = 3
PER_COMMA: Final = 32
PER_VALUE: Final = 160
_WIDE: Final = (
    (4, re.compile(rb"[\xf0-\xf4]|\\u[dD][89abAB]")),
    (2, re.compile(rb"[\xc4-\xef]|\\u(?:0[1-9a-fA-F]|[1-9a-fA-F])")),
)


def parse_cost(data: bytes, width: int = 1) -> int:
    """Rule 1: the bytes that parsing and translating ``data`` builds, about, its widest
    character ``width`` bytes as text (a piece of a body that begins outside a string:
    `BodyCost` carries where a piece ends)."""
    return _cost(data, outside(data)[0], width)


def _cost(data: bytes, out: bytes, width: int) -> int:
    """Rule 1 for ``data``, whose bytes outside its strings are ``out``."""
    containers = out.count(b"{") + out.count(b"[")
    quotes = data.count(b'"') - data.count(b'\\"')  # a string's two: half its cost each
    return (
        (PER_BYTE + PER_WIDTH * width) * len(data)
        + PER_COMMA * out.count(b",")
        + PER_VALUE * containers
        + PER_VALUE // 2 * quotes
    )


_STRING: Final = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_REST: Final = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)
"""A string, whole; the rest of one (each a run of plain bytes, then escapes and runs)."""


def outside(data: bytes, string: bool = False, escaped: bool = False) -> tuple[bytes, bool, bool]:
    """Rule 1: the bytes of ``data`` outside its strings, and whether it ends inside one
    (``string``) just after a backslash (``escaped``), given where the piece before ended: a
    string's commas and brackets build nothing (attack 43 F2: a string of ``{`` was counted
    160 bytes a byte, and 1.5 MB of it held most of the budget)."""
    if not data:
        return b"", string, escaped
    pos = 0
    if string:
        rest = _REST.match(data, 1 if escaped else 0)
        assert rest is not None  # (it matches nothing too)
        end = rest.end()
        if end == len(data) or data[end] != 0x22:  # the string goes on past the piece,
            return b"", True, end < len(data)  # its last byte a backslash when it stopped
        pos = end + 1
    out = _STRING.sub(b"", data[pos:] if pos else data)
    opened = out.find(b'"')
    if opened < 0:
        return out, False, False
    tail = out[opened + 1 :]
    return out[:opened], True, (len(tail) - len(tail.rstrip(b"\\"))) % 2 == 1


class BodyCost:
    """Rule 2: the estimate of one body, as its pieces come."""

    __slots__ = ("_escaped", "_string", "_tail", "size", "total", "width")

    def __init__(self) -> None:
        self.size = 0  # bytes so far
        self.total = 0  # their estimate
        self.width = 1
        self._tail = b""  # the end of the last piece: an escape may go on in the next
        self._string = False  # the last piece ended inside a string (`outside`)
        self._escaped = False  # ... just after a backslash

    def add(self, data: bytes) -> int:
        """Count one more piece: returns what the estimate grew by."""
        grown = 0
        if self.width < 4:
            seen = self._tail + data
            for width, pattern in _WIDE:
                if width <= self.width:
                    break
                if pattern.search(seen) is not None:
                    grown = PER_WIDTH * (width - self.width) * self.size  # Rule 2: again
                    self.width = width
                    break
            self._tail = seen[-5:]
        out, self._string, self._escaped = outside(data, self._string, self._escaped)
        grown += _cost(data, out, self.width)
        self.size += len(data)
        self.total += grown
        return grown
