"""The ``svir`` command: what svir-proto sees in a stream, shown to a person.

``svir decode FILE`` reads a recorded response body (``-`` for standard input) and prints what
the decoders make of it, piece by piece as a network would deliver it. This is the one core
module allowed to reach the transports (ARCHITECTURE.md module map); ``decode`` needs none.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .errors import ProtocolError
from .sse import EndOfStream, SSEComment, SSEDecoder

__all__ = ["main"]


def _read(path: str) -> bytes:
    return sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()


def decode(path: str, *, piece: int, out: list[str]) -> int:
    body = _read(path)
    decoder = SSEDecoder()
    items = []
    try:
        for i in range(0, len(body), piece):
            items += decoder.feed(body[i : i + piece])
        items += decoder.close()
    except ProtocolError as exc:
        for item in items:
            out.append(_show(item))
        out.append(f"error: {exc}")
        return 1
    for item in items:
        out.append(_show(item))
    return 0


def _show(item: object) -> str:
    if isinstance(item, SSEComment):
        return f": {item.text}"
    if isinstance(item, EndOfStream):
        return "end of body" + (" (an incomplete event was discarded)" if item.incomplete else "")
    return repr(item)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="svir", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    dec = sub.add_parser("decode", help="decode a recorded response body and show its events")
    dec.add_argument("file", help="a recorded body (text/event-stream), or - for stdin")
    dec.add_argument(
        "--piece", type=int, default=64, help="feed the body in pieces of this many bytes"
    )
    args = parser.parse_args(argv)
    lines: list[str] = []
    status = decode(args.file, piece=max(1, args.piece), out=lines)
    print("\n".join(lines))
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
