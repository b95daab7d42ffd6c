"""What translating a request body costs the gateway, estimated from its bytes as they come.

A translated body is parsed whole (JSON, then the dialect's typed request, then the hub's, then
the upstream's body), and parsing builds far more than the bytes: a hundred thousand small
messages, 4 MiB on the wire, are about 120 MiB of objects. The body budget
(``--max-buffered``) therefore holds, for such a body, what parsing it builds, not its length:
the estimate bounds both the memory and the work of all the bodies being prepared at once, and
decides which body is parsed on the event loop (`GatewayConnection`).

Rule 1 (the estimate): ``2`` bytes a byte (the body and the text parsed from it), ``32`` a comma
    (an array's number or ``null``: an object and a pointer) and ``160`` an object, an array or
    a string (counted as its opening ``{`` or ``[``, and its quotes less the escaped ones): measured
    within 1.0-1.1x of the peak of `_prepare` on small messages, tools, tool calls, number and
    string arrays and prose (tracemalloc, and the process's RSS for 4 MiB bodies). Brackets and
    commas inside strings are counted too: code in a prompt is overestimated (about 5x), never
    under.
Rule 2 (pieces): the estimate of a body is the sum of its pieces' (a quote escaped across two
    pieces counts once more, never less), so it is taken as the body comes, with C-speed
    counts and no parse.

This module does no I/O.
"""

from __future__ import annotations

from typing import Final

__all__: list[str] = []

PER_BYTE: Final = 2
PER_COMMA: Final = 32
PER_VALUE: Final = 160


def parse_cost(data: bytes) -> int:
    """Rule 1: the bytes that parsing and translating ``data`` builds, about (a piece of a body:
    Rule 2)."""
    containers = data.count(b"{") + data.count(b"[")
    quotes = data.count(b'"') - data.count(b'\\"')  # a string's two: half its cost each
    return (
        PER_BYTE * len(data)
        + PER_COMMA * data.count(b",")
        + PER_VALUE * containers
        + PER_VALUE // 2 * quotes
    )
