"""`Notes`: the problems a decoder says of a stream (`Completion.problems`), bounded.

A problem note names what the peer sent (an unknown event type, a stop reason, a part's key),
so a peer chooses both how many notes there are and how long each is (attack 34: fifty thousand
unknown event types took ten seconds of a linear ``not in`` each; three hundred types of a
megabyte each held 300 MB). So:

Rule 1: a note is said once, however often it happens (a set answers whether it was said).
Rule 2: a note is cut to `MAX_NOTE` characters, an ellipsis ending it.
Rule 3: at most `MAX_NOTES` notes are kept; past them one last note counts the problems that
    were not noted (each time one came: past the bound nothing is remembered, so a repeat
    counts again), so that none goes unsaid.

This module never does I/O.
"""

from __future__ import annotations

from typing import Final

__all__: list[str] = []

MAX_NOTES: Final = 64
MAX_NOTE: Final = 300


class Notes(list[str]):
    """A list of problem notes whose `append` keeps Rules 1 to 3; ``tuple(notes)`` gives them."""

    def __init__(self) -> None:
        super().__init__()
        self._said: set[str] = set()
        self._more = 0

    def append(self, note: str, /) -> None:
        if len(note) > MAX_NOTE:
            note = note[: MAX_NOTE - 3] + "..."
        if note in self._said:
            return
        if len(self._said) < MAX_NOTES:
            self._said.add(note)
            super().append(note)
            return
        self._more += 1
        more = f"{self._more} more problems were not noted (at most {MAX_NOTES} notes are kept)"
        if self._more == 1:
            super().append(more)
        else:
            self[-1] = more
