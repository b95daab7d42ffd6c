"""Request bodies whose exact length is known before the first byte, read from disk in pieces.

A `RequestBody` is a JSON document cut into segments: literal bytes, and parts that come from
files or large buffers (base64 of an image, the JSON-escaped text of a text file). Each
segment knows its length in advance (wire reference 2.3):

Rule 1: base64 of ``n`` bytes is ``4 * ceil(n / 3)`` bytes long.
Rule 2: the JSON-escaped length of UTF-8 text is computed byte by byte: ``"``, ``\\``, LF, CR,
    TAB, backspace and form feed take 2 bytes, other bytes below 0x20 take 6 (``\\u00XX``),
    every other byte 1 (non-ASCII stays as UTF-8, as ``ensure_ascii=False`` writes it).
Rule 3: iterating a body yields its bytes in pieces, again on every iteration (a retry sends it
    again without rebuilding it); a file is read one piece at a time, so memory stays
    O(piece size) whatever the files weigh. ``async for`` gives the same pieces, for a client
    that wants an async body (``httpx.AsyncClient``, aiohttp): each file piece is read between
    two of the caller's writes, one ``piece_size`` read at a time.
Rule 4: a file whose size changed between measuring and sending, or a text file that is not
    UTF-8, raises `BodyChangedError` (a `ValueError`) instead of sending bytes whose length lies.

`splice` builds a body from a JSON value in which placeholders stand for the segments: the JSON
around them is serialised once with the standard library, so its escaping is the standard one.
This module reads files (it must: images stream from disk) and does no other I/O.
"""

from __future__ import annotations

import base64
import codecs
import json
import os
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Final, final

__all__ = [
    "DEFAULT_PIECE_SIZE",
    "Base64Bytes",
    "Base64File",
    "BodyChangedError",
    "JSONTextFile",
    "PlaceholderClash",
    "Placeholders",
    "RequestBody",
    "Segment",
    "encode_document",
    "escaped_length",
    "splice",
]

DEFAULT_PIECE_SIZE: Final = 48 * 1024
"""Bytes read from a file at a time: a multiple of 3 (so base64 pieces need no carry) near the
64 KiB socket buffers that transports write."""

_TWO: Final = b'"\\\n\r\t\b\f'
_SIX: Final = bytes(sorted(set(range(0x20)) - set(b"\n\r\t\b\f")))


class PlaceholderClash(ValueError):
    """A placeholder did not occur exactly once: the document's own text contains it."""


class BodyChangedError(ValueError):
    """A file changed between measuring it and sending it, or is not what it claimed to be; the
    body would have had another length than the Content-Length already sent."""


def escaped_length(data: bytes) -> int:
    """The length of ``data`` (UTF-8) once written inside a JSON string (Rule 2)."""
    n = len(data)
    return n + (n - len(data.translate(None, _TWO))) + 5 * (n - len(data.translate(None, _SIX)))


class Segment:
    """A part of a body that knows its length before it is read."""

    length: int

    def pieces(self, size: int) -> Iterator[bytes]:  # pragma: no cover - abstract
        raise NotImplementedError


@final
class Base64Bytes(Segment):
    """Base64 of bytes already in memory, encoded a piece at a time."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.length = 4 * -(-len(data) // 3)  # Rule 1

    def pieces(self, size: int) -> Iterator[bytes]:
        step = max(3, size // 4 * 3)
        for i in range(0, len(self.data), step):
            yield base64.b64encode(self.data[i : i + step])


@final
class Base64File(Segment):
    """Base64 of a file's bytes, read from disk a piece at a time while sending."""

    def __init__(self, path: str | os.PathLike[str], size: int | None = None) -> None:
        self.path = os.fspath(path)
        self.size = os.stat(self.path).st_size if size is None else size
        self.length = 4 * -(-self.size // 3)  # Rule 1

    def pieces(self, size: int) -> Iterator[bytes]:
        step = max(3, size // 4 * 3)
        left = self.size
        with open(self.path, "rb") as f:
            while left:
                data = f.read(min(step, left))
                if not data:
                    raise BodyChangedError(
                        f"{self.path} is shorter than the {self.size} bytes measured before sending"
                    )
                left -= len(data)
                yield base64.b64encode(data)
            if f.read(1):
                raise BodyChangedError(
                    f"{self.path} is longer than the {self.size} bytes measured before sending"
                )


@final
class JSONTextFile(Segment):
    """A UTF-8 text file's contents, JSON-escaped (Rule 2), read a piece at a time.

    Measuring reads the file once (to count the bytes that need escaping and to check that it
    is UTF-8); sending reads it again and checks that it still gives the same length.
    """

    def __init__(self, path: str | os.PathLike[str], piece_size: int = DEFAULT_PIECE_SIZE) -> None:
        self.path = os.fspath(path)
        length = 0
        decoder = codecs.getincrementaldecoder("utf-8")()
        try:
            with open(self.path, "rb") as f:
                while data := f.read(piece_size):
                    decoder.decode(data)
                    length += escaped_length(data)
            decoder.decode(b"", final=True)
        except UnicodeDecodeError as exc:
            raise ValueError(f"{self.path} is not UTF-8 text: {exc.reason}") from exc
        self.length = length

    def pieces(self, size: int) -> Iterator[bytes]:
        decoder = codecs.getincrementaldecoder("utf-8")()
        sent = 0
        dumps = json.JSONEncoder(ensure_ascii=False).encode
        with open(self.path, "rb") as f:
            while True:
                data = f.read(size)
                try:
                    text = decoder.decode(data, final=not data)
                except UnicodeDecodeError as exc:
                    raise BodyChangedError(f"{self.path} is no longer UTF-8 text") from exc
                if text:
                    out = dumps(text)[1:-1].encode("utf-8")
                    sent += len(out)
                    if sent > self.length:
                        break
                    yield out
                if not data:
                    break
        if sent != self.length:
            raise BodyChangedError(
                f"{self.path} changed: its escaped text is no longer {self.length} bytes"
            )


@final
class RequestBody:
    """A body of known length whose bytes come in pieces (Rules 3 and 4).

    Attributes:
        content_length: the exact number of bytes iterating yields.
        content_type: the media type to send it with.
    """

    def __init__(
        self,
        segments: Sequence[bytes | Segment],
        *,
        content_type: str = "application/json",
        piece_size: int = DEFAULT_PIECE_SIZE,
    ) -> None:
        if piece_size < 3:
            raise ValueError(f"piece_size must be at least 3, not {piece_size}")
        self.segments = tuple(segments)
        self.content_type = content_type
        self.piece_size = piece_size
        self.content_length = sum(
            len(s) if isinstance(s, bytes) else s.length for s in self.segments
        )
        self._reading: Iterator[bytes] | None = None  # read(size) under way
        self._held = b""

    def __iter__(self) -> Iterator[bytes]:
        """The body's bytes in pieces of at most about ``piece_size``; again on every call."""
        size = self.piece_size
        for segment in self.segments:
            if isinstance(segment, bytes):
                for i in range(0, len(segment), size):
                    yield segment[i : i + size]
            else:
                sent = 0
                for piece in segment.pieces(size):
                    sent += len(piece)
                    yield piece
                if sent != segment.length:  # pragma: no cover - each segment checks itself
                    raise BodyChangedError(f"a segment gave {sent} bytes, not {segment.length}")

    async def __aiter__(self) -> AsyncIterator[bytes]:
        """The same pieces as iterating (Rule 3), for an async client's ``content=``: exact
        length still (send `content_length` as ``Content-Length``), files still read a piece
        at a time."""
        for piece in self:
            yield piece

    def read(self, size: int = -1) -> bytes:
        """The whole body at once (for tests and small bodies; it defeats Rule 3); or, given a
        ``size``, as a file's ``read``: the next ``size`` bytes at most, ``b""`` at the end, after
        which reading starts again from the first byte (so that a client that takes a body as a
        file, httpx's ``content=``, reads it piece by piece, and again for a retry)."""
        if size < 0:
            return b"".join(self)
        if self._reading is None:
            self._reading = iter(self)
        held = self._held
        while len(held) < size:
            piece = next(self._reading, None)
            if piece is None:
                break
            held += piece
        out, self._held = held[:size], held[size:]
        if not out:
            self._reading = None  # the end: a next read starts over
        return out


def splice(
    document: object,
    segments: dict[str, Segment],
    *,
    content_type: str = "application/json",
    piece_size: int = DEFAULT_PIECE_SIZE,
) -> RequestBody:
    """Serialise ``document`` as compact JSON and cut it where placeholder strings stand.

    Args:
        document: a JSON value in which some strings contain placeholders (keys of
            ``segments``), wherever in the string the segment's bytes belong.
        segments: what each placeholder stands for. A placeholder must be made of characters
            that JSON writes as themselves (letters, digits, ``_``, ``:``, ``-``) and must
            occur exactly once in the serialised document; the caller picks ones the
            document's own text cannot contain.
    """
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    raw = text.encode("utf-8")
    parts: list[bytes | Segment] = []
    positions = []
    for key, segment in segments.items():
        at = raw.find(key.encode())
        if at < 0 or raw.find(key.encode(), at + 1) >= 0:
            raise PlaceholderClash(f"placeholder {key!r} must occur exactly once in the document")
        positions.append((at, key, segment))
    last = 0
    for at, key, segment in sorted(positions):
        parts.append(raw[last:at])
        parts.append(segment)
        last = at + len(key)
    parts.append(raw[last:])
    return RequestBody(
        [p for p in parts if not isinstance(p, bytes) or p],
        content_type=content_type,
        piece_size=piece_size,
    )


class Placeholders:
    """Marker strings for segments, unique to one attempt (``salt``) at encoding a document."""

    def __init__(self, salt: int) -> None:
        self.salt = salt
        self.segments: dict[str, Segment] = {}

    def add(self, segment: Segment) -> str:
        """A new placeholder standing for ``segment``: letters, digits and ``_`` only."""
        key = f"svir_part_{self.salt}_{len(self.segments)}_"
        self.segments[key] = segment
        return key


def encode_document(
    build: Callable[[Placeholders], object],
    *,
    content_type: str = "application/json",
    piece_size: int = DEFAULT_PIECE_SIZE,
) -> RequestBody:
    """Build a document whose file parts are placeholders, and splice it into a body.

    ``build`` is called with fresh `Placeholders` until their markers occur nowhere in the
    document's own text (a prompt that quotes one only moves the salt along), so no input can
    confuse the splice.
    """
    for salt in range(1000):
        marks = Placeholders(salt)
        document = build(marks)
        try:
            return splice(
                document, marks.segments, content_type=content_type, piece_size=piece_size
            )
        except PlaceholderClash:
            continue
    raise ValueError("no placeholder salt below 1000 is free in this document")  # pragma: no cover
