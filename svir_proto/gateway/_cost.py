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
    past U+FFFF. Brackets and commas inside strings are counted too: code in a prompt is
    overestimated (about 3x), never under.
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
    character ``width`` bytes as text (a piece of a body: `BodyCost`)."""
    containers = data.count(b"{") + data.count(b"[")
    quotes = data.count(b'"') - data.count(b'\\"')  # a string's two: half its cost each
    return (
        (PER_BYTE + PER_WIDTH * width) * len(data)
        + PER_COMMA * data.count(b",")
        + PER_VALUE * containers
        + PER_VALUE // 2 * quotes
    )


class BodyCost:
    """Rule 2: the estimate of one body, as its pieces come."""

    __slots__ = ("_tail", "size", "total", "width")

    def __init__(self) -> None:
        self.size = 0  # bytes so far
        self.total = 0  # their estimate
        self.width = 1
        self._tail = b""  # the end of the last piece: an escape may go on in the next

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
        grown += parse_cost(data, self.width)
        self.size += len(data)
        self.total += grown
        return grown
