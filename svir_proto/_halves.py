"""The halves of a surrogate pair that a server cut between two payloads, joined.

A server that counts text in UTF-16 units (a JavaScript one) may end one delta with the high
half of a pair (``"A\\ud83d"``) and begin the next with the low half (``"\\ude00B"``): each
payload is valid JSON, and a JavaScript client joins the halves when it joins the deltas. The
JSON policy (`svir_proto._json` Rule 4) refuses each payload alone, as it refuses any lone
surrogate, since no text that cannot be written as UTF-8 may leave a decoder.

`Halves` lets a decoder read such a stream as a JavaScript client does, and still let nothing
unwritable out:

Rule 1: only text is joined: a string under one of the dialect's text keys (its deltas:
    ``content``, ``arguments``, ``text``, ``delta``, ...). A lone half anywhere else (an id, a
    model, a key) leaves the payload refused, as before.
Rule 2: a text that ends with a high half gives the text before it; the half is held, by the
    text's place in the payload: its path of keys and indices, and at each object on the way
    what tells channels apart (`MARKS`: a block's ``index``, a part's ``thought``, an output's
    ``item_id`` and indices), so that a half is never joined to another channel's text. In a
    dialect whose lists are runs of one channel's pieces (Gemini's ``parts``: ``runs``), an
    item's index is no part of its place: the next piece may be the next item, in this
    payload or the next one's first (attack 41 F6); a payload's texts are read in order.
Rule 3: a text at a place where a half is held must begin with a low half: the two are one
    character, which begins that text. Anything else, and a lone surrogate anywhere else in the
    text, leaves the payload refused.
Rule 4: a half still held when the stream ends is the error that payload would have been.
Rule 5: at most `MAX_HELD` halves are held at once, from payloads of `MAX_MENDED` bytes at
    most, at places no deeper than `MAX_PLACE` (deeper text is only checked).

Only payloads that Rule 4 of `_json` refused come here (the rare path): a chunk that repeats a
learned envelope is read by a decoder's fast lane without it, so a plain delta of the same
channel between the two halves is read before the character they make, which the server's
stream, being broken there, does not say otherwise.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Final

from ._json import SURROGATE, has_surrogate
from .errors import PeerProtocolError

__all__ = ["MARKS", "MAX_HELD", "MAX_MENDED", "MAX_PLACE", "Halves"]

MAX_HELD: Final = 8
"""Halves held at once (Rule 5): a stream has a few text channels, each with one at most."""

MAX_MENDED: Final = 64 * 1024
"""Bytes a payload may have to be mended (Rule 5): a delta a server cut is short, and the walk
of a longer one would cost more than reading it."""

MAX_PLACE: Final = 12
"""Steps of a place (keys, indices and marks) at most (Rule 5): a Chat tool call's arguments
are nine deep; a deeper container is only checked for surrogates, so that the walk of a payload
nested hundreds of levels builds no place for each of its strings (review 40: 145 times the
read)."""

MARKS: Final = ("index", "output_index", "content_index", "summary_index", "item_id", "thought")
"""The fields of an object that tell its text's channel from another's at the same path."""

_MARKED: Final = frozenset(MARKS)
_UNMARKED: Final = (*(None for _ in MARKS[:-1]), False)  # no mark but a thought of false
_HIGH: Final = ("\ud800", "\udbff")
_LOW: Final = ("\udc00", "\udfff")

Place = tuple[object, ...]


class Halves:
    """The high halves a stream's texts ended with, held for the next ones.

    Args:
        texts: the keys of the dialect's text (Rule 1).
        runs: the keys of the lists whose items are pieces of one channel, in order (Rule 2):
            an item that holds one of ``texts`` as its own text.
    """

    def __init__(self, texts: Collection[str], *, runs: Collection[str] = ()) -> None:
        self.texts = frozenset(texts)
        self.runs = frozenset(runs)
        self.held: dict[Place, tuple[str, PeerProtocolError]] = {}
        """Each held half by its place, with the error of the payload that ended with it."""

    def mend(self, value: object, error: PeerProtocolError) -> bool:
        """Join, in place, the halves that ``value`` (a payload read with its lone surrogates
        kept, which ``error`` refused) holds at its texts' ends with those held, and hold those
        it ends with. ``False``, holding nothing new: a lone surrogate is left, or too many
        halves would be held."""
        if not isinstance(value, (dict, list)):
            return False  # (a payload that is one string: no text of a place)
        held = dict(self.held)
        lasts = {place[-1] for place in held}  # a text elsewhere needs no place built
        texts, runs = self.texts, self.runs
        stack: list[tuple[dict[str, Any] | list[Any], Place]] = [(value, ())]
        while stack:
            item, place = stack.pop()
            run = bool(runs) and type(item) is list and bool(place) and place[-1] in runs
            pairs: Any = enumerate(item)
            if isinstance(item, dict):
                if not _MARKED.isdisjoint(item):
                    marks = _marks(item)
                    if marks != _UNMARKED:  # (a thought of false is no mark)
                        place = (*place, marks)
                pairs = item.items()
            inner: list[tuple[dict[str, Any] | list[Any], Place]] = []
            for key, child in pairs:
                if isinstance(child, str):
                    lone = not child.isascii() and SURROGATE.search(child) is not None
                    if key in texts and (lone or key in lasts):
                        text = _joined(child, (*place, key), held, error)
                        if text is None:
                            return False
                        item[key] = text
                        lasts.add(key)  # (a half it ended with: the next text here is read)
                    elif lone:
                        return False  # (not text: Rule 1)
                elif isinstance(child, (dict, list)):
                    if len(place) < MAX_PLACE:
                        step = key
                        if run and type(child) is dict and not texts.isdisjoint(child):
                            step = None  # a piece of the run: its index is no channel
                        inner.append((child, (*place, step)))
                    elif has_surrogate(child):
                        return False  # (text too deep to be a place: Rule 5)
                if type(key) is str and not key.isascii() and SURROGATE.search(key):
                    return False
            stack += reversed(inner)  # (read in order: a run's pieces join in order)
        if len(held) > MAX_HELD:
            return False
        self.held = held
        return True

    def lone(self) -> PeerProtocolError | None:
        """The error of the first payload whose half is still held (Rule 4), if any."""
        return next(iter(self.held.values()))[1] if self.held else None


def _marks(item: dict[str, Any]) -> tuple[object, ...]:
    """What tells ``item``'s channel from another's (`MARKS`), or, if a mark is no scalar (a
    broken stream), what type each is: a place is a key of a dict."""
    marks = (*map(item.get, MARKS[:-1]), item.get("thought") is True)  # (false or none: text)
    try:
        hash(marks)
    except TypeError:
        return tuple(type(mark).__name__ for mark in marks)
    return marks


def _joined(
    text: str,
    place: Place,
    held: dict[Place, tuple[str, PeerProtocolError]],
    error: PeerProtocolError,
) -> str | None:
    """``text`` with a half held at ``place`` joined to its beginning and a high half at its
    end held in ``held``; ``None`` if a lone surrogate is left (Rules 2 and 3)."""
    high = held.pop(place, None)
    if high is not None:
        if not (text and _LOW[0] <= text[0] <= _LOW[1]):
            return None
        pair = (high[0] + text[0]).encode("utf-16-le", "surrogatepass").decode("utf-16-le")
        text = pair + text[1:]
    if text and _HIGH[0] <= text[-1] <= _HIGH[1]:
        held[place] = (text[-1], error)
        text = text[:-1]
    if not text.isascii() and SURROGATE.search(text):
        return None
    return text
