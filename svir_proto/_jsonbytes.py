"""JSON strings read straight from a payload's bytes, for the decoders' templates.

Each dialect's fast path (`svir_proto.openai._envelope`, `svir_proto.anthropic._envelope`,
`svir_proto.gemini._envelope`, `svir_proto.responses._fast`) finds a delta's string between
bytes it learned, and reads its text here without a parser:

Rule 1: a body with nothing escaped is its text (one C-level pass finds any byte a string
    holds only escaped); a body whose only escapes are ``\\"`` (a call's JSON arguments) is
    its text with those replaced; any other goes through the JSON string scanner with its
    quotes (`svir_proto._json.string_at`: orjson's, when it is the parser, else the standard
    library's), which refuses what is not one string.
Rule 2: padding (OpenAI's ``obfuscation``) is a value of ASCII letters and digits only; a
    template leaves it open as a hole (`padding_hole`) and checks each event's (`is_padding`).
Rule 3: counts (a usage object's, which change on every chunk) are holes too: each number of
    the learned value, outside its strings, becomes a group that takes any JSON integer of at
    most 18 digits (`counts_pattern`; `svir_proto._json` Rule 2 reads longer ones as floats).
Rule 4: a template is learned from at most `MAX_LEARNED` bytes around its holes: a pattern
    made of a peer's bytes costs about a millisecond and 18 KiB to compile for each KiB, and
    stays in ``re``'s cache (attack 37: a 7 MB key in a usage stalled the loop 22 s and kept
    hundreds of MB). Real envelopes are a few hundred bytes.
Rule 5: a pattern that repeats a group for each escape of a string keeps a frame of about 130
    bytes for each, so one is applied to bytes with at most `MAX_ESCAPES` backslashes
    (`few_escapes`); others are read the general way (attack 37: 3.5 million escaped newlines
    in one chunk took 610 MB).

This module never does I/O.
"""

from __future__ import annotations

import json
import re
from typing import Final

from ._json import string_at

__all__ = [
    "NOT_PLAIN",
    "LONG_HOLE",
    "MAX_ESCAPES",
    "MAX_LEARNED",
    "PAD",
    "after_space",
    "counts_pattern",
    "few_escapes",
    "from_end",
    "is_padding",
    "padding_hole",
    "string_text",
    "value_end",
]

NOT_PLAIN: Final = bytes(range(0x20)) + b'"\\'
"""The bytes a JSON string holds only escaped (Rule 1)."""
PAD: Final = b'"obfuscation":"'
"""How OpenAI's padding value opens (Rule 2)."""
_SPACE: Final = (b" ", b"\t", b"\n", b"\r")
_RAW: Final = json.JSONDecoder()
_TOKEN: Final = re.compile(rb'"(?:[^"\\]|\\.)*"|[0-9]+')
"""A JSON string, or a run of digits outside one (Rule 3)."""
_INTEGER: Final = rb"(0|[1-9][0-9]{0,17})"
_LONG: Final = 128
"""A string body this long pays more for the checks of Rule 1 than for looking at its first
escape first (tokens and arguments' pieces are shorter)."""
LONG_HOLE: Final = 256
"""A hole (a delta's body) this long is found from the end of its payload (`from_end`): a
pattern walks a string a byte at a time, some 5 ns a byte, where for a shorter one the pattern
costs less than the search."""
_KEY: Final = 16
MAX_ESCAPES: Final = 4096
"""Backslashes in the bytes a pattern that repeats a group per escape is applied to (Rule 5)."""
MAX_LEARNED: Final = 2048
"""Bytes of a payload's envelope (what is not its holes' values) a template is learned from
at most (Rule 4)."""


def string_text(payload: bytes | bytearray, opened: int, closed: int) -> str | None:
    """The text of the string whose body is ``payload[opened:closed]`` (its closing quote at
    ``closed``), or ``None`` when it is not one valid string (Rule 1).

    Raises:
        UnicodeDecodeError: the body is not UTF-8 (the caller's general way applies its policy).
    """
    raw = payload[opened:closed]
    # long text whose first escape is not a quote goes to the scanner at once (the two-byte
    # count below scans long text ten times slower than a one-byte search)
    if len(raw) > _LONG and (at := raw.find(0x5C)) >= 0 and raw[at + 1 : at + 2] != b'"':
        return string_at(payload, opened, closed)
    plain = len(raw.translate(None, NOT_PLAIN))
    if plain == len(raw):
        return raw.decode()  # nothing escaped: the bytes are the text
    escaped = raw.count(b'\\"')
    if plain + 2 * escaped == len(raw):  # each byte held escaped is in a \" pair
        return raw.replace(b'\\"', b'"').decode()  # arguments' JSON: quotes, nothing else
    return string_at(payload, opened, closed)  # a quote that ends it early: None there


def from_end(after: bytes) -> tuple[bytes, int]:
    """How a long hole's end is found from the end of its payload (`LONG_HOLE`), ``after`` the
    bytes that follow its closing quote: the needle, their last 16 bytes (a longer one costs
    the search its preparation on every payload: Gemini's safety ratings run to hundreds of
    bytes), and how far before the needle ``after`` begins; a pattern then checks all of
    ``after``. The hole ends where the last ``after`` begins: were it an earlier one, the body
    up to the last would hold an unescaped quote, and not be one string."""
    key = after[-_KEY:]
    return key, len(after) - len(key)


def padding_hole(part: bytes) -> tuple[bytes, bytes | None]:
    """Split ``part`` at its padding value: (up to the value, from its closing quote), or
    (``part``, ``None``) when it has no padding of letters and digits, or more than one."""
    at = part.find(PAD)
    if at < 0 or part.find(PAD, at + 1) >= 0:
        return part, None
    start = at + len(PAD)
    quote = part.find(b'"', start)
    if quote < 0 or not is_padding(part[start:quote]):
        return part, None
    return part[:start], part[quote:]


def is_padding(value: bytes | bytearray) -> bool:
    """``value`` may stand in a padding hole: empty, or ASCII letters and digits (Rule 2)."""
    return not value or value.isalnum()


def after_space(payload: bytes | bytearray, at: int) -> int:
    """Where the JSON whitespace at ``payload[at:]`` ends (Python's default separators put a
    space after each colon: mlx-lm's chunks, for one)."""
    while payload[at : at + 1] in _SPACE:
        at += 1
    return at


def value_end(payload: bytes | bytearray, start: int) -> int | None:
    """Where the JSON value that begins at ``payload[start]`` ends, or ``None`` when none does
    or the payload is not UTF-8 (a template learns only from bytes it can read back)."""
    try:
        text = bytes(payload).decode()
        first = len(payload[:start].decode())
        _, last = _RAW.raw_decode(text, first)
    except ValueError:  # UnicodeDecodeError included
        return None
    return start + len(text[first:last].encode())


def few_escapes(data: bytes | bytearray, start: int = 0, end: int | None = None) -> bool:
    """Whether ``data[start:end]`` may be given to a pattern that repeats a group per escape
    (Rule 5): short, or with at most `MAX_ESCAPES` backslashes."""
    stop = len(data) if end is None else end
    return stop - start <= 2 * MAX_ESCAPES or data.count(b"\\", start, stop) <= MAX_ESCAPES


def counts_pattern(value: bytes) -> tuple[bytes, int]:
    """The pattern of a JSON value whose numbers are holes (Rule 3): its bytes, each run of
    digits outside its strings a group, and how many groups it has."""
    out: list[bytes] = []
    at = groups = 0
    for m in _TOKEN.finditer(value):
        if value[m.start()] != 0x22:  # digits, not a string
            out += (re.escape(value[at : m.start()]), _INTEGER)
            at = m.end()
            groups += 1
    out.append(re.escape(value[at:]))
    return b"".join(out), groups
