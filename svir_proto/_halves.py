"""The halves of a surrogate pair that a server cut between two payloads, joined.

A server that counts text in UTF-16 units (a JavaScript one) may end one delta with the high
half of a pair (``"A\\ud83d"``) and begin the next with the low half (``"\\ude00B"``): each
payload is valid JSON, and a JavaScript client joins the halves when it joins the deltas. The
JSON policy (`svir_proto._json` Rule 4) refuses each payload alone, as it refuses any lone
surrogate, since no text that cannot be written as UTF-8 may leave a decoder.

`Halves` lets a decoder read such a stream as a JavaScript client does, and still let nothing
unwritable out:

Rule 1: a string that ends with a high half gives the text before it; the half is held, by the
    string's place in the payload (its path of keys and indices: ``choices``, ``0``, ``delta``,
    ``content``), for the next string at that place.
Rule 2: a string at a place where a half is held must begin with a low half: the two are one
    character, which begins that string. Anything else, and a lone surrogate anywhere else
    (in the middle of a string, or in a key), leaves the payload refused, as before.
Rule 3: a half still held when the stream ends is the error that payload would have been.
Rule 4: at most `MAX_HELD` halves are held at once, from payloads of `MAX_MENDED` bytes at most.

Only payloads that Rule 4 of `_json` refused come here (the rare path): a chunk that repeats a
learned envelope is read by a decoder's fast lane without it, so a plain delta between the two
halves is read before the character they make, which the server's stream, being broken there,
does not say otherwise.
"""

from __future__ import annotations

import re
from typing import Any, Final

from .errors import PeerProtocolError

__all__ = ["MAX_HELD", "MAX_MENDED", "Halves"]

MAX_HELD: Final = 8
"""Halves held at once (Rule 4): a stream has a few text channels, each with one at most."""

MAX_MENDED: Final = 64 * 1024
"""Bytes a payload may have to be mended: a delta a server cut is short, and the walk of a
longer one (every string, by its place) would cost more than reading it."""

_HIGH: Final = ("\ud800", "\udbff")
_LOW: Final = ("\udc00", "\udfff")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


class Halves:
    """The high halves a stream's payloads ended strings with, held for the next ones."""

    def __init__(self) -> None:
        self.held: dict[tuple[object, ...], tuple[str, PeerProtocolError]] = {}
        """Each held half by its place, with the error of the payload that ended with it."""

    def mend(self, value: object, error: PeerProtocolError) -> bool:
        """Join, in place, the halves that ``value`` (a payload read with its lone surrogates
        kept, which ``error`` refused) holds at its strings' ends with those held, and hold
        those it ends with. ``False``, holding nothing new: a lone surrogate is left, or too
        many halves would be held."""
        if not isinstance(value, (dict, list)):
            return False  # (a payload that is one string: no place to hold a half by)
        held = dict(self.held)
        stack: list[tuple[dict[Any, Any] | list[Any], tuple[object, ...]]] = [(value, ())]
        while stack:
            item, path = stack.pop()
            for key, child in item.items() if isinstance(item, dict) else enumerate(item):
                if type(key) is str and _SURROGATE.search(key):
                    return False  # (a key is no text to join)
                if isinstance(child, str):
                    text = _joined(child, (*path, key), held, error)
                    if text is None:
                        return False
                    item[key] = text
                elif isinstance(child, (dict, list)):
                    stack.append((child, (*path, key)))
        if len(held) > MAX_HELD:
            return False
        self.held = held
        return True

    def lone(self) -> PeerProtocolError | None:
        """The error of the first payload whose half is still held (Rule 3), if any."""
        return next(iter(self.held.values()))[1] if self.held else None


def _joined(
    text: str,
    path: tuple[object, ...],
    held: dict[tuple[object, ...], tuple[str, PeerProtocolError]],
    error: PeerProtocolError,
) -> str | None:
    """``text`` with a half held at ``path`` joined to its beginning and a high half at its
    end held in ``held``; ``None`` if a lone surrogate is left (Rules 1 and 2)."""
    high = held.pop(path, None)
    if high is not None:
        if not (text and _LOW[0] <= text[0] <= _LOW[1]):
            return None
        pair = (high[0] + text[0]).encode("utf-16-le", "surrogatepass").decode("utf-16-le")
        text = pair + text[1:]
    if text and _HIGH[0] <= text[-1] <= _HIGH[1]:
        held[path] = (text[-1], error)
        text = text[:-1]
    if not text.isascii() and _SURROGATE.search(text):
        return None
    return text
