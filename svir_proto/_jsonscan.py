"""Read a few small facts from a JSON request body while it passes through, piece by piece.

A gateway forwards an OpenAI request body to its upstream as it arrives (a request with large
images is never held whole), yet it needs to know the model, whether ``stream`` is true,
whether usage was asked for, and which tools were declared (draft section 8.2).
`RequestScanner` tokenises the pieces and keeps only the values at those paths:

Rule 1: strings are skipped with C-level searches for the next quote, so a megabyte of base64
    or of escapes costs a few scans, not a loop per byte or per escape: each piece is first
    read with its escapes that could hide a quote or a backslash spelled as plain bytes
    (`_unescaped`: the same length, in two C-level passes); so are runs of blanks, and
    every container no wanted path goes through (``messages``, say): its depth is followed in
    C-level matches (`_FLAT`, `_brackets`), so that thirty megabytes of any shape cost it a
    second or two, not a Python step per value (attack 27: forty seconds of the event loop).
Rule 2: a value is kept only at a wanted path, and only a string of at most `MAX_VALUE` bytes
    (no wanted key is longer, and a model or tool name that long is no fact: a cut could split
    a character or an escape, attack 38), and at most `MAX_TOOLS` tool names; nesting is
    bounded by `SKIPPED_DEPTH` (more than any upstream's parser takes), and the containers the
    scanner descends into by `MAX_MEMBERS` members each (past either, it stops: Rule 3; thirty
    megabytes of top-level members cost a Python step each). Everything else is skipped. A
    number or literal longer than `MAX_VALUE` (none that long is ``true`` or a string) is held
    as no more than that, whatever its length across pieces.
Rule 3: the scanner does not judge the JSON (the upstream does): on bytes that cannot be JSON it
    stops and sets `broken`; the facts found before stay.
Rule 4 (a whole body, `RequestScanner.whole`): one parse by ``json`` (in C) gives the same facts
    when the body is one the scanner reads to its end without a doubt: UTF-8 JSON whose top
    level is an object, no object with a key twice (the scanner would see both), nesting within
    `MAX_DEPTH`, fewer commas than `MAX_MEMBERS`, and every string the scanner would keep (the
    keys of the first four levels, the values at the wanted paths) short enough that
    `MAX_VALUE` cannot cut it, and ``n`` absent, null or the integer 1 (any other is judged by
    its text). Any other body is scanned (Rules 1 to 3): the facts are the scanner's either
    way, ten times sooner for a small request.

This module never does I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from itertools import accumulate, count
from operator import sub
from typing import Final

from ._json import MAX_REQUEST_VALUES, canonical

__all__: list[str] = []

MAX_VALUE: Final = 256
MAX_TOOLS: Final = 128
MAX_DEPTH: Final = 64
"""Nesting of a whole body parsed at once (Rule 4); deeper, it is scanned."""
SKIPPED_DEPTH: Final = 1024
"""Nesting the scan follows in a container it skips (Rule 1): past it the scan stops (Rule 3).
Python's ``json`` (vLLM's) stops short of 1,000 levels, orjson at 1,024: a body nested deeper
is refused upstream anyway (attack 38: 70 levels stopped it)."""
MAX_MEMBERS: Final = 1024
"""Members of an object, or elements of an array, that the scanner descends into (the top
level, ``stream_options``, ``metadata``, ``tools`` and each tool): a request has a few dozen."""
_SCALAR: Final = re.compile(rb"[^\s,:\]}]*")
_SPACE: Final = b" \t\r\n"
_BOM: Final = b"\xef\xbb\xbf"
"""A body's UTF-8 byte order mark, which Python's ``json.loads`` of bytes, and so vLLM, and
llama.cpp's parser skip (RFC 8259 section 8.1: a parser may ignore it)."""
_SPACES: Final = re.compile(rb"[ \t\r\n]*")
_NESTING: Final = re.compile(rb'["\[\]{}]')
_ITEM: Final = rb'[^"\[\]{}]|"[^"]*"'


def _nested(item: bytes, levels: int) -> bytes:
    """``item``, or an object or array of what this gives one level less, ``levels`` deep."""
    for _ in range(levels):
        item = rb"%s|\{(?:%s)*\}|\[(?:%s)*\]" % (item, item, item)
    return item


_FLAT: Final = re.compile(rb"(?:%s)*" % _nested(_ITEM, 3), re.DOTALL)
"""A skipped container's bytes that leave its depth as it was (Rule 1): scalars, whole
strings, and whole objects and arrays of those three levels deep (``{"a":[1]},`` a million
times), in one C-level match. One way only: each alternative begins with its own byte, and a
string ends at its first quote (read `_unescaped`: no escape hides one); a match gives back
only what it tried past the last whole item (a string or a group the piece cuts, a group nested
deeper), once. Deeper nesting goes a window at a time (`_brackets`)."""
_MEMBERS: Final = re.compile(
    rb'(?:"(?!(?:model|stream|stream_options|include_usage|metadata|request_id|tools|function'
    rb'|name|n)")[^"\\]*"[ \t\r\n]*:[ \t\r\n]*(?:"[^"]*"|[^\s,:\[\]{}"]+)[ \t\r\n]*,[ \t\r\n]*)*'
)
"""A run of an object's members, each followed by a comma, whose key is no wanted path's (and
spelled with no escape) and whose value is a string or a scalar: a tool's or a function's
``description``, ``type`` or ``strict``, a request's options: skipped in one C-level match,
not a Python step each (attack 38: 31 MB of tools of a thousand members cost 12 s), and not
counted against `MAX_MEMBERS`. One way only, a window at a time (a frame each member)."""
_STRING_KEYS: Final = frozenset(("model", "request_id", "name", "n"))
"""The last keys of the paths whose strings are kept."""
_VALUE_KEYS: Final = _STRING_KEYS | {"stream", "include_usage", "n"}
"""The last keys of every wanted path."""
_LONG_KEY: Final = "\x00long"
"""The key of a member whose key is longer than `MAX_VALUE`: no wanted path goes through it."""
_LONG: Final = b"0"
"""What a scalar longer than `MAX_VALUE` stands as (Rule 2): a number; ``n`` so long asks for
other than one choice, however the pieces cut it."""


class RequestScanner:
    """Feed the body's pieces (`feed`), then read `model`, `stream`, `include_usage`,
    `request_id` (``metadata.request_id``), `tools` (the declared tool names, in order) and
    `choices` (``n``: more than one choice asked for, which the relay's watcher cannot
    follow)."""

    def __init__(self) -> None:
        self.model: str | None = None
        self.request_id: str | None = None  # metadata.request_id
        self.stream: bool | None = None
        self.include_usage = False
        self.choices = False  # n asks for other than one choice: a number not 1, or long
        self.tools: list[str] = []
        self.broken = False
        # the container stack: ("{", key) or ("[", index); the path of a value is read off it
        self._stack: list[list[object]] = []
        self._expect_key = False
        self._in_string = False
        self._string: bytearray | None = None  # the string being kept, if it is kept
        self._escape = False
        self._cut = False  # the string being kept is longer than MAX_VALUE
        self._opening: bytes | None = b""  # the body's first bytes, while a BOM may begin it
        self._scalar = bytearray()  # a number or literal not yet ended
        self._skipped = 0  # the depth of the container being skipped (Rule 1), if any
        self._done = False

    @classmethod
    def whole(cls, body: bytes) -> RequestScanner:
        """The facts of a whole body, exactly as `feed` would find them (Rule 4)."""
        scanner = cls()
        if not scanner._parse(body):
            scanner.feed(body)
        return scanner

    def _parse(self, body: bytes) -> bool:
        """Rule 4: set the facts from one parse, if the body is one the scanner would read to
        its end without a doubt; ``False`` (nothing set) if it is not."""
        if body.count(b",") >= MAX_MEMBERS:  # a container may have more: the scan says
            return False
        body = body[3:] if body.startswith(_BOM) else body
        try:
            text = body.decode()
            if _keys_once(body):  # no object can hold a wanted key twice: no hook needed
                doc = json.loads(text)
            else:
                doc = json.loads(text, object_pairs_hook=_unique)
        except (ValueError, RecursionError, _Twice):  # UnicodeDecodeError is a ValueError
            return False
        if type(doc) is not dict:
            return False
        plain = b"\\" not in body  # no escapes: a string is as long as its UTF-8 bytes
        deep = body.count(b"{") + body.count(b"[") > MAX_DEPTH
        if not _readable(doc, 1, plain, deep):
            return False
        model = doc.get("model")
        rid = doc.get("metadata")
        rid = rid.get("request_id") if type(rid) is dict else None
        options = doc.get("stream_options")
        tools = doc.get("tools")
        names: list[str] = []
        for tool in tools.values() if type(tools) is dict else tools if type(tools) is list else ():
            function = tool.get("function") if type(tool) is dict else None
            name = function.get("name") if type(function) is dict else None
            if type(name) is str and len(names) < MAX_TOOLS:
                if not _short(name, plain):
                    return False
                names.append(name)
        kept = [v for v in (model, rid) if type(v) is str]
        if not all(_short(v, plain) for v in kept):
            return False
        self.model = model if type(model) is str else None
        self.request_id = rid if type(rid) is str and rid else None
        stream = doc.get("stream", _ABSENT)
        if stream is not _ABSENT and type(stream) not in (str, dict, list):  # a scalar
            self.stream = stream is True
        if type(options) is dict:
            self.include_usage = options.get("include_usage") is True
        n = doc.get("n")
        if not (n is None or (type(n) is int and n == 1)):  # its text decides: the scan reads it
            return False
        self.tools = names
        self._done = True
        return True

    def feed(self, data: bytes) -> None:
        if self.broken or self._done or not data:
            return
        if self._opening is not None:  # the body's first bytes: a BOM there is read past
            data = self._opening + data
            if len(data) < len(_BOM) and _BOM.startswith(data):
                self._opening = data
                return
            self._opening = None
            if data.startswith(_BOM):
                data = data[len(_BOM) :]
        try:
            self._feed(data)
        except (ValueError, IndexError, UnicodeDecodeError, RecursionError):
            self.broken = True

    def _feed(self, data: bytes) -> None:
        pos = 0
        n = len(data)
        text = _unescaped(data, self._escape)  # the piece's structure; a kept string's are data's
        while pos < n:
            if self._in_string:
                pos = self._string_part(data, text, pos)
                continue
            if self._skipped:
                pos = self._skip(text, pos)
                continue
            if self._scalar:
                m = _SCALAR.match(text, pos)
                assert m is not None
                self._hold(m.group())
                pos = m.end()
                if pos < n:
                    self._value(bytes(self._scalar) if len(self._scalar) <= MAX_VALUE else _LONG)
                    self._scalar.clear()
                continue
            c = text[pos]
            if c in _SPACE:
                pos = _SPACES.match(text, pos).end()  # type: ignore[union-attr]
            elif c == 0x22:  # '"'
                if self._expect_key:  # members no wanted path goes through, at once (Rule 1)
                    end = _MEMBERS.match(text, pos, min(n, pos + _WINDOW)).end()  # type: ignore[union-attr]
                    if end > pos:
                        pos = end
                        continue
                self._in_string = True
                self._string = bytearray() if self._wanted(string=True) else None
                pos += 1
            elif c in b"{[":  # the stack holds the four levels of wanted paths at most
                if self._stack and not self._descends():
                    self._skipped = 1
                else:
                    self._stack.append([chr(c), None if c == 0x7B else 0, 1])
                    self._expect_key = c == 0x7B
                pos += 1
            elif c in b"}]":
                self._stack.pop()
                self._expect_key = False
                pos += 1
                if not self._stack:
                    self._done = True
                    return
            elif c == 0x3A:  # ':'
                self._expect_key = False
                pos += 1
            elif c == 0x2C:  # ','
                top = self._stack[-1]
                if top[0] == "{":
                    self._expect_key = True
                else:
                    top[1] = int(top[1]) + 1  # type: ignore[call-overload]
                top[2] = members = int(top[2]) + 1  # type: ignore[call-overload]
                if members > MAX_MEMBERS:
                    raise ValueError("too many members")
                pos += 1
            else:
                m = _SCALAR.match(text, pos)
                assert m is not None
                if m.end() < n:
                    self._value(m.group())
                else:
                    self._hold(m.group())
                pos = m.end() if m.end() > pos else pos + 1

    def _hold(self, piece: bytes) -> None:
        """Hold a scalar's piece, to `MAX_VALUE` and one byte more (Rule 2)."""
        room = MAX_VALUE + 1 - len(self._scalar)
        if room > 0:
            self._scalar += piece[:room]

    def _skip(self, data: bytes, pos: int) -> int:
        """Rule 1: the skipped container's bytes from ``pos``, to its end or the piece's (or a
        string the piece cuts); past its end, the scanner reads on."""
        n = len(data)
        depth = self._skipped
        limit = SKIPPED_DEPTH - len(self._stack)
        search = _NESTING.search
        flat = _FLAT.match
        whole = _WHOLE.match
        while depth:
            m = search(data, pos)
            if m is None:
                pos = n
                break
            pos = m.start()
            c = data[pos]
            if c != 0x5D and c != 0x7D:  # not a closer: what leaves the depth, at once
                pos = flat(data, pos).end()  # type: ignore[union-attr]
                if pos == n:
                    break
                c = data[pos]
                if c == 0x22:  # a string the piece cuts: not kept, and not a key
                    self._in_string = True
                    self._string = None
                    pos += 1
                    break
            if pos + _WINDOW <= n:  # a window of whole strings and all else, at once
                end = whole(data, pos, pos + _WINDOW).end()  # type: ignore[union-attr]
                if end - pos >= _WINDOW // 2:
                    got = _brackets(_STRINGS.sub(b"", data[pos:end]), depth, limit)
                    if got is not None:  # the container goes on past these bytes
                        depth = got
                        pos = end
                        continue
            pos += 1
            if c == 0x7B or c == 0x5B:  # '{' or '['
                depth += 1
                if depth > limit:
                    raise ValueError("nested too deeply")
            else:
                depth -= 1
        self._skipped = depth
        return pos

    def _descends(self) -> bool:
        """Whether a wanted path goes through the container that opens here (Rule 1): the top
        level, ``stream_options``, ``metadata``, ``tools``, a tool and its ``function``."""
        path = self._path()
        if path[0] == "tools":
            return len(path) <= 2 or (len(path) == 3 and path[2] == "function")
        return len(path) == 1 and path[0] in ("stream_options", "metadata")

    def _string_part(self, data: bytes, text: bytes, pos: int) -> int:
        """The string's bytes from ``pos`` (``text``: the piece `_unescaped`): to its first
        quote, which ends it, or to the piece's end (a backslash there escapes the next
        piece's first byte)."""
        if self._escape:  # the byte after a backslash, in the previous piece
            self._escape = False
            self._keep(data[pos : pos + 1])
            return pos + 1
        end = text.find(b'"', pos)
        if end < 0:
            self._keep(data[pos:])
            self._escape = text.endswith(b"\\")
            return len(data)
        self._keep(data[pos:end])
        self._in_string = False
        kept = self._string
        self._string = None
        if self._cut:  # longer than MAX_VALUE: no wanted key, and a value not kept (Rule 2)
            self._cut = False
            if self._expect_key:
                self._stack[-1][1] = _LONG_KEY
                self._expect_key = False
            elif self._path() == ("n",):  # a string of a number that long: other than one
                self._value(_LONG)  # (vLLM's pydantic reads "000...2" as 2: review 39)
            return end + 1
        if self._expect_key:
            assert kept is not None  # a key of the four levels the stack holds: kept
            if 0x5C in kept:  # escapes: the parser reads them
                key = json.loads(b'"' + bytes(kept) + b'"')
            else:  # as it is: a name that is not UTF-8 is no wanted name either way
                key = kept.decode("utf-8", "replace")
            self._stack[-1][1] = key
            self._expect_key = False
        elif kept is not None:
            self._value(b'"' + bytes(kept) + b'"')
        return end + 1

    def _keep(self, piece: bytes) -> None:
        kept = self._string
        if kept is not None:
            room = MAX_VALUE - len(kept)
            if len(piece) > room:
                self._cut = True  # (a cut may split a character or an escape: not read)
            kept += piece[:room]

    def _path(self) -> tuple[object, ...]:
        return tuple(level[1] for level in self._stack)

    def _wanted(self, *, string: bool) -> bool:
        if self._expect_key:
            return True  # the keys of the levels the stack holds are the path
        stack = self._stack
        if not stack or stack[-1][1] not in _STRING_KEYS:  # at once, for nearly every value
            return False
        return self._path() in (("model",), ("metadata", "request_id"), ("n",)) or (
            self._is_tool_name()
        )

    def _is_tool_name(self) -> bool:
        path = self._path()
        return len(path) == 4 and path[0] == "tools" and path[2] == "function" and path[3] == "name"

    def _value(self, raw: bytes) -> None:
        stack = self._stack
        if not stack or stack[-1][1] not in _VALUE_KEYS:  # at once, for nearly every value
            return
        path = self._path()
        if path == ("model",):
            value = json.loads(raw)
            self.model = value if isinstance(value, str) else None
        elif path == ("metadata", "request_id"):
            value = json.loads(raw)
            self.request_id = value if isinstance(value, str) and value else None
        elif path == ("stream",):
            self.stream = raw == b"true"
        elif path == ("stream_options", "include_usage"):
            self.include_usage = raw == b"true"
        elif path == ("n",):  # a number past MAX_VALUE is one, whatever cut it (Rule 2)
            raw = _LONG if len(raw) > MAX_VALUE else raw
            self.choices = raw not in (b"1", b"null") and _choices(json.loads(raw))
        elif self._is_tool_name() and len(self.tools) < MAX_TOOLS:
            name = json.loads(raw)
            if isinstance(name, str):
                self.tools.append(name)


_WINDOW: Final = 4096
"""Bytes of a skipped container that `_brackets` takes at once (its whole strings taken out)."""
_STRINGS: Final = re.compile(rb'"[^"]*"')
_WHOLE: Final = re.compile(rb'[^"]*(?:"[^"]*"[^"]*)*')
"""Bytes up to a string the window cuts (one way only, as `_FLAT`; a repetition a string)."""
_PLAIN_ESCAPE: Final = b"__"


def _unescaped(data: bytes, escaped: bool) -> bytes:
    """``data`` with each escape that could hide a quote or a backslash from a search,
    ``\\\\`` and ``\\"``, spelled as two plain bytes (and its first byte too, if ``escaped``:
    a backslash ending the previous piece escapes it). Backslashes pair from the start of
    their run, as JSON reads them; what is left of one escapes the byte after it. The same
    length as ``data``, so that a position in one is the same in the other, and a quote in it
    begins or ends a string (Rule 1)."""
    if 0x5C not in data:
        return data
    head = b""
    if escaped:
        head, data = b"_", data[1:]
    return head + data.replace(b"\\\\", _PLAIN_ESCAPE).replace(b'\\"', _PLAIN_ESCAPE)


_PARENS: Final = bytes.maketrans(b"[{]}", b"(())")
_NOT_BRACKETS: Final = bytes(b for b in range(256) if b not in b"[]{}")


def _brackets(window: bytes, depth: int, limit: int) -> int | None:
    """The depth after ``window`` (its strings taken out) of a skipped container ``depth`` deep, if
    it surely neither ends in it nor nests past ``limit``; else ``None`` (a bracket at a time
    then). Every pair that opens and closes in it is taken out, a level per pass, in C: what is
    left is closers, then openers; the container ends in the window only if the closers reach
    its depth, and the window nests no deeper than its openers and its passes on top. Past
    `_PASSES` passes (a window nested deeper than that), each bracket's level, in C."""
    shape = window.translate(_PARENS, _NOT_BRACKETS)
    passes = 0
    while b"()" in shape:
        if passes == _PASSES:
            return _levels(shape, depth, limit)
        shape = shape.replace(b"()", b"")
        passes += 1
    closers = len(shape) - len(shape.lstrip(b")"))
    openers = len(shape) - closers
    if closers >= depth or depth + openers + passes > limit:
        return None
    return depth - closers + openers


_PASSES: Final = 16
_OPENERS: Final = bytes.maketrans(b"()", b"\x02\x00")


def _levels(shape: bytes, depth: int, limit: int) -> int | None:
    """`_brackets` for a window nested deep: ``shape`` its brackets as parentheses; the level
    after each is twice the openers up to it less its count, in C (`accumulate`, `map`)."""
    levels: list[int] = list(map(sub, accumulate(shape.translate(_OPENERS)), count(1)))
    if depth + min(levels) <= 0 or depth + max(levels) > limit:
        return None
    return depth + levels[-1]


class _Twice(Exception):
    """An object with a key twice: json keeps the last, the scanner sees both (Rule 4)."""


_ABSENT: Final = object()
_WANTED_KEY: Final = re.compile(
    rb'"(?:model|stream|stream_options|include_usage|metadata|request_id|tools|n)"'
)


def _keys_once(body: bytes) -> bool:
    """Rule 4's duplicate check, without a Python call per object: a key twice in an object
    changes the facts only where the scanner keeps a value, so a body in which no key is
    spelled with an escape, no tool is declared, and each key the scanner keeps appears at
    most once is read alike whatever json does with the keys it holds twice."""
    if b"\\u" in body:
        return False
    found = _WANTED_KEY.findall(body)
    return len(set(found)) == len(found) and b'"tools"' not in found


def parsed_choices(body: bytes) -> bool:
    """`RequestScanner.choices` of a whole body the scan could not read to ``n`` (`broken`: a
    thousand members or deep nesting before it; attack round 33), from one parse by the rules
    (`svir_proto._json.canonical`); ``False`` for a body that is not JSON (the upstream's to
    refuse)."""
    try:
        doc = canonical(body[3:] if body.startswith(_BOM) else body, max_values=MAX_REQUEST_VALUES)
    except (ValueError, RecursionError):
        return False
    return _choices(doc.get("n")) if type(doc) is dict else False


def _choices(n: object) -> bool:
    """Whether ``n``, read from at most `MAX_VALUE` bytes, asks for other than one choice: a
    number other than 1, or a string of one (a lenient server reads ``"2"`` as 2: vLLM's
    pydantic; attack round 33); anything else is the upstream's to refuse."""
    if type(n) is str:
        try:
            n = float(n)
        except ValueError:
            return False
    return type(n) in (int, float) and n != 1


def _unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
    doc = dict(pairs)
    if len(doc) != len(pairs):
        raise _Twice
    return doc


def _short(text: str, plain: bool) -> bool:
    """Whether `MAX_VALUE` cannot cut ``text`` as the body spells it (Rule 4): its UTF-8 bytes,
    in a body with no escapes; else the longest an escaped string of its length can be, 12
    bytes for each character (a surrogate pair as two ``\\uXXXX``)."""
    if plain:
        return len(text.encode("utf-8", "surrogatepass")) <= MAX_VALUE
    return 12 * len(text) <= MAX_VALUE


def _readable(value: dict[str, object] | list[object], depth: int, plain: bool, deep: bool) -> bool:
    """Whether the scanner reads ``value``, ``depth`` containers deep (the top level is 1), to
    its end without a doubt: within `MAX_DEPTH`, every key of the first four levels short (it
    keeps them: `_short`). Below the fourth level only a ``deep`` body is looked at (one with
    more brackets than `MAX_DEPTH` could nest too deeply)."""
    if depth > MAX_DEPTH:
        return False
    children: Iterable[object] = value
    if type(value) is dict:
        # a key of at most 64 characters (21 when escapes may spell it) is short whatever
        # they are: one C-level pass over the lengths decides for nearly every object
        if (
            depth <= 4
            and value
            and max(map(len, value)) * (4 if plain else 12) > MAX_VALUE
            and not all(_short(key, plain) for key in value)
        ):
            return False
        children = value.values()
    if depth >= 4 and not deep:
        return True
    for child in children:
        if (type(child) is dict or type(child) is list) and not _readable(
            child, depth + 1, plain, deep
        ):
            return False
    return True
