"""A function call whose arguments stream as ``partialArgs`` (Vertex AI's
``functionCallingConfig.streamFunctionCallArguments``; the ``google-genai`` SDK's
``types.PartialArg``, "not supported in Gemini API"): the values, each at a JSON path, built
into the arguments object.

Rule 1: a path is RFC 9535's normalized form: ``$``, then ``.name``, ``['name']``/``["name"]``
    or ``[N]`` segments; anything else is a `PeerProtocolError`.
Rule 2: a partial argument holds one of ``stringValue``, ``numberValue``, ``boolValue`` or
    ``nullValue``; a string whose ``willContinue`` is true continues in the next partial
    argument for the same path (its pieces are joined).
Rule 3: an array index is an existing element or the next one: a gap would let a few bytes
    claim gigabytes (``[1000000000]``), so it is an error.
Rule 4: a path has at most `MAX_SEGMENTS` segments, and each object or array a path builds is
    charged `NODE_SIZE` characters against the decoder's size bound: a path of a million
    ``.a`` built a million nested objects (630 MB and 10 s from one 6 MB event), and a deep
    one made the arguments too deep to write (attack 28).

The arguments are given out whole, as compact JSON, when the call closes (its last part has no
``willContinue``).
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from .._pieces import Pieces
from ..errors import PeerProtocolError

__all__: list[str] = []

_SEGMENT: Final = re.compile(
    r"\.([A-Za-z_][A-Za-z0-9_]*)|\['((?:[^'\\]|\\.)*)'\]|\[\"((?:[^\"\\]|\\.)*)\"\]|\[(0|[1-9][0-9]{0,8})\]"
)
_ESCAPE: Final = re.compile(r"\\(.)")
_VALUES: Final = ("stringValue", "numberValue", "boolValue", "nullValue")
MAX_SEGMENTS: Final = 64
"""Segments a path may have (Rule 4): arguments nest a few levels, never dozens."""
NODE_SIZE: Final = 64
"""Characters an object or array a path builds counts for against the size bound (Rule 4)."""


def path_of(text: object, at: int) -> tuple[str | int, ...]:
    """Rule 1: a JSON path's segments (names and indices)."""
    if not isinstance(text, str) or not text.startswith("$"):
        raise PeerProtocolError(
            f"partialArgs jsonPath must be a JSON path, not {text!r}", offset=at
        )
    out: list[str | int] = []
    pos = 1
    while pos < len(text):
        m = _SEGMENT.match(text, pos)
        if m is None:
            raise PeerProtocolError(f"partialArgs jsonPath {text!r} is not one we read", offset=at)
        name, single, double, index = m.groups()
        if index is not None:
            out.append(int(index))
        else:
            raw = name if name is not None else single if single is not None else double
            out.append(_ESCAPE.sub(r"\1", raw))
        pos = m.end()
        if len(out) > MAX_SEGMENTS:
            raise PeerProtocolError(
                f"partialArgs jsonPath has over {MAX_SEGMENTS} segments", offset=at
            )
    if not out:
        raise PeerProtocolError("partialArgs jsonPath '$' names no argument", offset=at)
    return tuple(out)


class PartialCall:
    """The arguments of one streamed call as they arrive (Rules 1 to 3)."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.root: dict[str, Any] = {}
        self._continuing: tuple[str | int, ...] | None = None  # Rule 2: the string's path
        self._raw: object = None  # its path as it came
        self._pieces = Pieces()  # and its pieces, at about their size

    def add(self, arg: object, at: int) -> int:
        """Apply one partial argument; returns the characters it added (for the size bound)."""
        if not isinstance(arg, dict):
            raise PeerProtocolError("a partial argument must be an object", offset=at)
        raw = arg.get("jsonPath")
        piece = arg.get("stringValue")
        if (  # the string going on, as nearly every piece of a long argument is
            raw is not None
            and raw == self._raw
            and type(piece) is str
            and len(arg) == 3
            and arg.get("willContinue") is True
        ):
            self._pieces.append(piece)
            return len(raw) + len(piece)
        path = path_of(raw, at)
        given = [k for k in _VALUES if k in arg]
        if len(given) != 1:
            raise PeerProtocolError(
                f"a partial argument needs exactly one value, not {given}", offset=at
            )
        key = given[0]
        value: Any = arg[key]
        if key == "nullValue":
            value = None
        elif (
            (key == "stringValue" and not isinstance(value, str))
            or (key == "boolValue" and not isinstance(value, bool))
            or (key == "numberValue" and (type(value) not in (int, float)))
        ):
            raise PeerProtocolError(
                f"partial argument {key} {value!r} has the wrong type", offset=at
            )
        size = len(arg["jsonPath"]) + (len(value) if isinstance(value, str) else 8)
        more = key == "stringValue" and arg.get("willContinue") is True
        if key == "stringValue" and self._continuing == path:
            self._pieces.append(value)
            if not more:
                self._settle()
            return size
        self._settle()
        size += NODE_SIZE * self._set(path, value, at)  # a continued string's place is taken
        # now, its text later
        if more:
            self._continuing = path
            self._raw = raw
            self._pieces = Pieces()
            self._pieces.append(value)
        return size

    def _settle(self) -> None:
        """The continued string, joined, in its place."""
        path = self._continuing
        if path is not None:
            self._continuing = self._raw = None
            node: Any = self.root
            for seg in path[:-1]:
                node = node[seg]
            node[path[-1]] = self._pieces.text()
            self._pieces = Pieces()

    def _set(self, path: tuple[str | int, ...], value: object, at: int) -> int:
        """Set ``value`` at ``path``; returns how many objects and arrays it built."""
        built = 0
        node: Any = self.root
        for seg, nxt in zip(path, [*path[1:], None], strict=True):
            fresh: object = value if nxt is None else ([] if isinstance(nxt, int) else {})
            if isinstance(seg, int):
                if not isinstance(node, list) or seg > len(node):
                    raise PeerProtocolError(
                        f"partial argument index [{seg}] does not follow its array", offset=at
                    )
                if seg == len(node):
                    node.append(fresh)
                    built += nxt is not None
                elif nxt is None:
                    node[seg] = value
            else:
                if not isinstance(node, dict):
                    raise PeerProtocolError(
                        f"partial argument key {seg!r} is inside a non-object", offset=at
                    )
                if seg not in node or nxt is None:
                    node[seg] = fresh
                    built += nxt is not None
            node = node[seg]
        return built

    def arguments(self) -> str:
        self._settle()
        return json.dumps(self.root, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
