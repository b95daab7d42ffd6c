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

This module never does I/O.
"""

from __future__ import annotations

import json
import re
from typing import Final

from ._json import string_at

__all__ = [
    "NOT_PLAIN",
    "PAD",
    "after_space",
    "counts_pattern",
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


def string_text(payload: bytes | bytearray, opened: int, closed: int) -> str | None:
    """The text of the string whose body is ``payload[opened:closed]`` (its closing quote at
    ``closed``), or ``None`` when it is not one valid string (Rule 1).

    Raises:
        UnicodeDecodeError: the body is not UTF-8 (the caller's general way applies its policy).
    """
    raw = payload[opened:closed]
    if len(raw) > _LONG and 0x5C in raw:  # long text with an escape (a two-byte search, the
        at = raw.index(0x5C)  # count below, scans it ten times slower than a one-byte one)
        if raw[at + 1 : at + 2] != b'"':  # an escape other than a quote: the scanner's
            return string_at(payload, opened, closed)
    plain = len(raw.translate(None, NOT_PLAIN))
    if plain == len(raw):
        return raw.decode()  # nothing escaped: the bytes are the text
    escaped = raw.count(b'\\"')
    if plain + 2 * escaped == len(raw):  # each byte held escaped is in a \" pair
        return raw.replace(b'\\"', b'"').decode()  # arguments' JSON: quotes, nothing else
    return string_at(payload, opened, closed)  # a quote that ends it early: None there


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
