"""`Pieces`: text held a piece at a time at about its own size, for what must keep a whole
answer or a tool call's arguments (a whole answer's fold, `svir_proto.answer`; the Responses
API's encoder, whose final events carry the answer; the decoders' `ToolCallAssembler` and the
Messages encoder's waiting calls, which hold a call's arguments until it is whole).

A string held alone costs some 50 bytes besides its characters, and a list 8 more for it: an
answer that came one character per piece, held as its pieces, would cost 50 to 100 times its
characters (an upstream decides how it cuts its deltas). `Pieces` joins every `JOIN` pieces
into one string, so what it holds is its characters plus about 60 bytes for every `JOIN`
pieces, and each character is copied twice at most. No I/O here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

__all__ = ["JOIN", "Pieces"]

JOIN: Final = 256
"""Pieces held apart before they are joined: a join costs one pass over them, and the held
pieces at most 256 times a piece's overhead (about 15 KiB)."""


class Pieces:
    """Text appended a piece at a time; `text` is the pieces joined.

    A hot path may append to `held` itself (a list's ``append`` costs no Python call) and call
    `squeeze` once ``len(held) >= JOIN``, which is what `append` does."""

    __slots__ = ("_joined", "_size", "held")

    def __init__(self) -> None:
        self._joined: list[str] = []  # runs of JOIN pieces, each joined once
        self._size = 0  # the characters of those runs
        self.held: list[str] = []  # the pieces since the last run (always this list)

    def append(self, piece: str) -> None:
        held = self.held
        held.append(piece)
        if len(held) >= JOIN:
            self.squeeze()

    def extend(self, pieces: Iterable[str]) -> None:
        held = self.held
        held.extend(pieces)
        if len(held) >= JOIN:
            self.squeeze()

    def squeeze(self) -> None:
        """Join the held pieces into one run."""
        held = self.held
        joined = "".join(held)
        self._joined.append(joined)
        self._size += len(joined)
        held.clear()

    def mark(self) -> int:
        """How many characters were appended so far: where the next piece will begin (the
        held pieces are joined, once, to count them)."""
        if self.held:
            self.squeeze()
        return self._size

    def text(self) -> str:
        """Every piece, joined (and kept joined: reading it again costs nothing more)."""
        whole = "".join(self._joined) + "".join(self.held)
        self._joined = [whole] if whole else []
        self._size = len(whole)
        self.held.clear()
        return whole

    def set(self, text: str) -> None:
        """Hold ``text`` instead of the pieces."""
        self._joined = [text] if text else []
        self._size = len(text)
        self.held.clear()

    def __bool__(self) -> bool:
        """Whether any piece is not empty."""
        return any(self.held) or any(self._joined)
