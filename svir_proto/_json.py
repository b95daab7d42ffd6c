"""The JSON parser, and one policy whatever parser is installed.

orjson is used when it is installed (the ``fast`` extra), the standard library otherwise. The
two disagree on some inputs; svir-proto reads every input the same way with either, so that the
same bytes give the same events, errors and results:

Rule 1: ``NaN``, ``Infinity``, ``-Infinity`` and numbers beyond the float range (``1e400``) are
    not JSON (RFC 8259 section 6): an error. (The standard library reads them as nan and inf.)
Rule 2: an integer outside the 64-bit range (-2^63 to 2^64-1) reads as a float, as orjson reads
    it; a token count of 30 digits is then no count. (The standard library keeps it exact.)
Rule 3: JSON on the wire is UTF-8 (RFC 8259 section 8.1): a BOM, UTF-16 or UTF-32 is an error.
    (The standard library detects and accepts them.)
Rule 4: a lone surrogate, escaped (``"\\ud800"``) or encoded, is an error with its offset, like
    invalid UTF-8; with ``errors="replace"`` it becomes U+FFFD, like invalid UTF-8, and with
    ``errors="surrogates"`` an escaped one does while invalid UTF-8 is still an error (a relay's
    policy: an escaped lone surrogate is valid JSON). No text that cannot be encoded as UTF-8
    leaves a decoder (the standard library keeps it); under ``"strict"`` a decoder joins the
    halves of a pair a server cut between two payloads (`LoneSurrogateError`, `_halves`).
Rule 5: nesting deeper than `MAX_DEPTH` (512) is an error. (The standard library's limit
    depends on the Python stack, orjson's is 1024.)
Rule 6: a payload longer than `LONG` holds at most `MAX_VALUES` values, counted before it is
    parsed as its commas, colons and opening brackets outside its strings (`too_many`): each
    value but the first in its container follows a comma or a colon, and each container is
    one. Parsing costs a third of a microsecond a container with orjson, and a microsecond or
    more a value on the standard library's path (a hook a number, a walk for a lone
    surrogate): 8 MiB of ``[],`` took 1.8 s of a gateway's event loop (attack 80 F1), 8 MiB of
    ``1,`` with one lone surrogate 4 s (attack 81 F1). (Neither parser has a bound.)
Duplicate keys agree already: the last one wins in both.

`loads` is the fast parser as it is, for the hot path: it follows every rule but Rule 5 on its
own (orjson accepts deeper nesting), and the decoders check the depth of the few payloads long
enough to break it (`too_deep`). When `loads` fails, the decoders call `canonical`, the standard
library under these rules, for the one error both backends report, offset included.
Decoders read ``loads`` from this module when they are constructed, so a test can switch
backends with `use` and exercise both paths in one process.
"""

from __future__ import annotations

import json
import json.decoder
import math
import re
from collections.abc import Callable
from itertools import accumulate
from types import ModuleType
from typing import Any, Final, Literal, cast

__all__ = [
    "BACKEND",
    "LONG",
    "MAX_REQUEST_VALUES",
    "MAX_VALUES",
    "MAX_DEPTH",
    "SURROGATE",
    "LoneSurrogateError",
    "brackets",
    "dumps",
    "has_surrogate",
    "loads",
    "string_at",
    "string_body",
    "too_many",
    "use",
]

Backend = Literal["orjson", "json"]
Loads = Callable[[bytes | bytearray | str], object]

MAX_DEPTH: Final = 512
"""Nesting a JSON value may have (Rule 5): far beyond any chunk or request (a dozen levels),
and below the standard library's own limit wherever the decoder is called from."""

MAX_VALUES: Final = 1 << 17
"""Values a payload may hold (Rule 6): 131,072, at most some 0.2 s of parsing here on the
slowest path. An event holds a few dozen; a Responses answer's last event, with each token's
20 most likely alternatives (``top_logprobs``), some 110 a token: 1,200 tokens."""
MAX_REQUEST_VALUES: Final = 1 << 20
"""Values a request may hold (Rule 6, ``max_values`` of the request parsers): 1,048,576. A
long request is parsed off the event loop (the gateway's worker threads), where the C scanner
holds the GIL some 80 ms for as many; an agent's request of thousands of messages and tools
holds a few hundred thousand."""
LONG: Final = MAX_VALUES
"""Payloads longer than this may break Rule 6 (what it counts are characters): only they are
counted."""

orjson: ModuleType | None
try:
    import orjson
except ImportError:  # pragma: no cover - exercised by a subprocess test without orjson
    orjson = None

_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89abcdefABCDEF]")
# a \uD800-\uDFFF escape that is not an escaped backslash followed by "u"
_ESCAPED_SURROGATE: Final = re.compile(r"(?<!\\)(\\+)u([dD][89abcdefABCDEF][0-9a-fA-F]{2})")
# a run of backslashes, then a \uD800-\uDFFF escape's "u": an escape when the run is odd (its
# last backslash not escaped); one repeat of one character, which keeps no frame per backslash
# (a group of two did: 300 MB for a chunk of 3.9 million, attack 37)
SURROGATE: Final = re.compile("[\ud800-\udfff]")
"""A surrogate in a string (Rule 4's test of a value's text)."""
_I64_MIN: Final = -(2**63)
_U64_MAX: Final = 2**64 - 1


class JSONPolicyError(ValueError):
    """What the rules refuse; ``pos`` is a character offset into the text, as in
    `json.JSONDecodeError`."""

    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.pos = pos


class LoneSurrogateError(JSONPolicyError):
    """Rule 4's error (strict); ``value`` is what was read, its lone surrogates kept, for a
    decoder that joins the halves of a pair a server cut between two payloads
    (`svir_proto._halves`)."""

    def __init__(self, message: str, pos: int, value: object) -> None:
        super().__init__(message, pos)
        self.value = value


def _constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")  # Rule 1


def _float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        shown = text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"
        raise ValueError(f"{shown} is beyond the float range")  # Rule 1
    return value


def _int(text: str) -> int | float:
    if len(text) <= 20:  # (every 64-bit integer; ``int`` refuses one past 4,300 digits)
        value = int(text)
        if _I64_MIN <= value <= _U64_MAX:
            return value
    return _float(text)  # Rule 2


_DECODER: Final = json.JSONDecoder(parse_float=_float, parse_int=_int, parse_constant=_constant)
_SCAN: Final[Callable[[str, int], tuple[object, int]]] = _DECODER.scan_once  # type: ignore[attr-defined]
_SCAN_PLAIN: Final[Callable[[str, int], tuple[object, int]]] = json.JSONDecoder(
    parse_constant=_constant
).scan_once  # type: ignore[attr-defined]
"""The scanner for a text whose numbers Rules 1 and 2 cannot touch (`_plain_numbers`): the C
scanner reads them itself, where ``_SCAN`` calls a Python function for every number (a
payload of logprobs or timings holds dozens)."""
_NUMERALS: Final = bytes(
    0x30 if 0x30 <= b <= 0x39 else 0x65 if b in b"Ee" else b for b in range(256)
)
_LONG_DIGITS: Final = b"0" * 19
_SHORT: Final = 256
"""A payload this short holds few numbers: the hooks cost less than looking for them."""


def _plain_numbers(raw: bytes | bytearray) -> bool:
    """Whether no number in ``raw`` can be past Rule 1 or Rule 2: it holds no run of 19 digits
    (any integer of 18 digits is in the 64-bit range, and any float whose digits come in runs
    of 18 at most, with an exponent of two digits at most, is below 1e309) and no exponent of
    three digits. Digits read as ``0`` and ``E`` as ``e``, and signs are taken out, so that
    such an exponent is ``0e000`` (`_exponent`).

    What strings hold may only make it answer no (``"1e300 m"``), which costs the hooks, never
    a different value; ids in hex or with dashes seldom do (`_exponent`)."""
    mapped = raw.translate(_NUMERALS, b"+-")
    if _LONG_DIGITS in mapped:
        return False
    return b"0e000" not in mapped or not _exponent(mapped)


def _exponent(mapped: bytes | bytearray) -> bool:
    """Whether a ``0e000`` in ``mapped`` (`_plain_numbers`) begins an exponent of three digits
    or more: its digits end where a number may (a comma, a bracket, a brace, whitespace or the
    end of the text), as those of an id in hex (``"...5e452a..."``) do not; ``True`` past
    `_LOOKS` of them, so that the looking stays bounded."""
    at = mapped.find(b"0e000")
    for _ in range(_LOOKS):
        if at < 0:
            return False
        end = _ZEROS(mapped, at + 5).end()  # type: ignore[union-attr]  # (it always matches)
        if mapped[end : end + 1] in b",]} \t\n\r":  # (the end of the text: empty, in it too)
            return True
        at = mapped.find(b"0e000", end)
    return True


_ZEROS: Final = re.compile(b"0*").match
_LOOKS: Final = 8


_UNPARSED: Final = object()
_scanstring: Final[Callable[[str, int], tuple[str, int]]] = json.decoder.scanstring  # type: ignore[attr-defined]
_WHITESPACE: Final = re.compile(r"[ \t\n\r]*").match  # json.decoder's


def too_deep(
    data: bytes | bytearray | str, value: object = _UNPARSED, brackets: int | None = None
) -> bool:
    """Rule 5 for a payload: nested deeper than `MAX_DEPTH`. Cheap for short payloads (no
    value shorter than 2 * MAX_DEPTH characters can break it), and for long ones: the brackets
    are counted in C, and only if there are more than `MAX_DEPTH` (a call's arguments, a JSON
    text or code in a string, hold thousands that nest nothing) is the payload's ``value``, if
    the caller parsed it, walked a level at a time (its containers, a few per kilobyte of
    text; `_deeper`, which may not tell), or else its strings cut out and its brackets
    followed."""
    if len(data) <= 2 * MAX_DEPTH:
        return False
    raw = data.encode() if isinstance(data, str) else data
    if brackets is None:
        brackets = raw.count(b"[") + raw.count(b"{")
    if brackets <= MAX_DEPTH:
        return False
    if value is not _UNPARSED:
        deeper = _deeper(value, brackets, raw)
        if deeper is not None:
            return deeper
    outside = _outside_strings(raw, value is not _UNPARSED)
    if outside.count(b"[") + outside.count(b"{") <= MAX_DEPTH:
        return False
    return max(accumulate(map(_STEP.__getitem__, outside))) > MAX_DEPTH


def brackets(raw: bytes | bytearray) -> int:
    """The opening brackets of ``raw``, in strings or not: counted in C, for `too_many` and
    `too_deep` (``brackets``), which then count them only if there are enough."""
    return raw.count(b"[") + raw.count(b"{")


def too_many(
    data: bytes | bytearray | str, brackets: int | None = None, limit: int = MAX_VALUES
) -> bool:
    """Rule 6: more than ``limit`` values. Counted in C (the opening brackets given as
    ``brackets``, if they were counted), and for a payload whose commas, colons and brackets
    are that many, counted again outside its strings (a text holds thousands of commas that
    separate no values)."""
    if len(data) <= limit:  # (`LONG`)
        return False
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if brackets is None:
        brackets = raw.count(b"[") + raw.count(b"{")
    if brackets + raw.count(b",") + raw.count(b":") <= limit:
        return False
    return len(_outside_strings(raw, False, values=True)) > limit


def _deeper(value: object, brackets: int, raw: bytes | bytearray) -> bool | None:
    """Whether ``value``, parsed from ``raw``, which holds ``brackets`` brackets, nests deeper
    than `MAX_DEPTH`: its containers walked a level at a time, the brackets of its strings
    counted. ``None`` when the walk cannot tell: a duplicate key's earlier value is in the bytes
    and not in the value (the last one wins), and the bytes hold enough brackets the walk did
    not see (as containers, in strings, or as ``\\u00`` escapes, which may have written a
    string's brackets) for such a value, below the value's deepest level, to nest deeper; or
    the value holds more than `_WALKED` containers, whose depth the bytes' brackets tell for
    less (a walk costs a microsecond a container: 0.5 s for an event of tiny objects, attack
    41 F3)."""
    level: list[Any] = [value] if type(value) is dict or type(value) is list else []
    depth = seen = walked = 0
    while level:
        depth += 1
        if depth > MAX_DEPTH:
            return True
        walked += len(level)
        if walked > _WALKED:
            return None
        below: list[Any] = []
        for item in level:
            seen += 1
            for child in item.items() if type(item) is dict else (item,):
                for c in child:
                    if type(c) is str:
                        seen += c.count("[") + c.count("{")
                    elif type(c) is dict or type(c) is list:
                        below.append(c)
        level = below
    # what the walk did not see holds at most this many containers, nested at most `depth`
    # levels down (an escape that wrote a string's bracket, "\u005b" or "\u007b", is counted
    # in ``seen`` but not in ``brackets``: each "\u00" is taken for one; a four-byte count
    # skips further than "\u", which a text of code holds often)
    if depth + brackets - seen + raw.count(b"\\u00") <= MAX_DEPTH:
        return False
    return None


_WALKED: Final = 4096
"""Containers `_deeper` walks at most."""
_NOT_STRUCTURE: Final = bytes(b for b in range(256) if b not in b'"[]{}')
_NOT_BRACKETS: Final = bytes(b for b in range(256) if b not in b"[]{}")
_NOT_VALUE_STRUCTURE: Final = bytes(b for b in range(256) if b not in b'"[{,:')
_NOT_VALUES: Final = bytes(b for b in range(256) if b not in b"[{,:")
_SLICE: Final = 1 << 20


_STRING: Final = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
"""A string, to its closing quote (or the end, if it has none): what `too_deep` skips. Written
as runs between escapes, which the matcher takes a run at a time, keeping a frame for each
escape: for a payload of at most `_FEW_ESCAPES` (`_outside_strings`)."""
_FEW_ESCAPES: Final = 4096


def _outside_strings(raw: bytes | bytearray, parsed: bool, *, values: bool = False) -> bytes:
    """The brackets of ``raw`` that are outside its strings, in order, for `too_deep`. For
    JSON that was ``parsed``, or with more than `_FEW_ESCAPES` backslashes, no pattern: one
    that matched a string's escapes kept a frame for each (570 MB for a payload of 5 million,
    attack 37's class), and one that matched each of many tiny strings costs three times the
    passes below (attack 41 F3), so its escaped backslashes and quotes are taken out, then all
    but quotes and brackets, then what is between a quote and the next, a slice at a time
    (the same brackets, but where a backslash stands outside a string: no JSON, and so only
    where the parse succeeded or the pattern would cost too much). With ``values``, the
    opening brackets, commas and colons instead, in no order (`too_many`)."""
    if not parsed and raw.count(b"\\") <= _FEW_ESCAPES:
        return _STRING.sub(b"", raw).translate(None, _NOT_VALUES if values else _NOT_BRACKETS)
    plain = bytes(raw).replace(b"\\\\", b"").replace(b'\\"', b"")
    skeleton = plain.translate(None, _NOT_VALUE_STRUCTURE if values else _NOT_STRUCTURE)
    out = []
    inside = False
    for start in range(0, len(skeleton), _SLICE):
        pieces = skeleton[start : start + _SLICE].split(b'"')
        out.append(b"".join(pieces[1 if inside else 0 :: 2]))
        inside ^= len(pieces) % 2 == 0  # an odd count of quotes
    return b"".join(out)


_STEP: Final = [1 if b in b"[{" else -1 if b in b"]}" else 0 for b in range(256)]


def canonical(
    data: bytes | bytearray | str,
    *,
    errors: Literal["strict", "replace", "surrogates"] = "strict",
    max_values: int = MAX_VALUES,
) -> object:
    """Parse by the rules with the standard library: the reference both backends follow
    (``max_values``: Rule 6's bound, `MAX_REQUEST_VALUES` for a request).

    Raises:
        UnicodeDecodeError: the bytes are not UTF-8 (strict).
        json.JSONDecodeError, JSONPolicyError, ValueError: not JSON by the rules; ``pos`` where.
    """
    if too_many(data, limit=max_values):  # Rule 6, before anything is parsed: whatever else
        raise JSONPolicyError(f"holds more than {max_values} values", 0)  # is wrong with it
    codec = "replace" if errors == "replace" else "strict"  # ("surrogates": strict for bytes)
    text = data if isinstance(data, str) else bytes(data).decode("utf-8", codec)  # Rule 3
    # (a text's numbers are looked at as its bytes: a hook for each number of a long
    # payload costs a microsecond a number, attack 81 F2, F3)
    plain = len(data) > _SHORT and _plain_numbers(
        data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    )
    # Rule 5 first: a payload too deep is that error, whatever else is wrong with it; read
    # from the value when there is one (its containers), from the bytes only when the parse
    # failed (a pattern over every string: a long answer's text costs it milliseconds)
    try:
        value = _decode(text, _SCAN_PLAIN if plain else _SCAN)
    except (ValueError, RecursionError):
        if too_deep(data):
            raise JSONPolicyError(f"nested deeper than {MAX_DEPTH} levels", 0) from None
        if plain:  # the error the hooks find first (review 40: "1e400x"), not the scan's
            _decode(text)
        raise
    if too_deep(data, value):
        raise JSONPolicyError(f"nested deeper than {MAX_DEPTH} levels", 0)
    if "\\u" in text and _SURROGATE_ESCAPE.search(text) and has_surrogate(value):  # Rule 4
        if errors != "strict":
            return _replace_surrogates(value)
        raise LoneSurrogateError("a lone surrogate escape is not text", _lone_at(text), value)
    return value


def _decode(text: str, scan: Callable[[str, int], tuple[object, int]] = _SCAN) -> object:
    """``_DECODER.decode(text)``, the same value and the same errors, without its wrappers
    (``decode`` and ``raw_decode`` cost a microsecond a chunk, as much as the C scanner)."""
    at = 0 if text[:1] == "{" else _WHITESPACE(text, 0).end()  # type: ignore[union-attr]
    try:
        value, end = scan(text, at)
    except StopIteration as exc:
        raise json.JSONDecodeError("Expecting value", text, exc.value) from None
    if end != len(text):
        end = _WHITESPACE(text, end).end()  # type: ignore[union-attr]
        if end != len(text):
            raise json.JSONDecodeError("Extra data", text, end)
    return value


def string_body(quoted: bytes | bytearray) -> str | None:
    """The text of a JSON string from its body and closing quote (the string without its
    opening quote), for the decoders' parser-free paths; ``None`` when that is not exactly one
    valid string, or its text would hold a surrogate (Rule 4 is then the general path's).

    Raises:
        UnicodeDecodeError: the bytes are not UTF-8.
    """
    text = quoted.decode()
    try:
        value, end = _scanstring(text, 0)
    except ValueError:  # an invalid escape, a control character, no closing quote
        return None
    if end != len(text) or (not value.isascii() and "\\u" in text and SURROGATE.search(value)):
        return None  # an unescaped quote ended it early; or a lone surrogate
    return value


def string_at(data: bytes | bytearray, opened: int, closed: int) -> str | None:
    """`string_body` of ``data[opened : closed + 1]``, a string whose quotes are at
    ``opened - 1`` and ``closed``, read in one pass by orjson when it is the parser: it refuses
    all that `string_body` refuses (an early quote, a control character, a lone surrogate, bytes
    that are not UTF-8), and what it refuses `string_body` judges, so both give the same text,
    the same ``None`` and the same errors.

    Raises:
        UnicodeDecodeError: the bytes are not UTF-8.
    """
    if loads is not _stdlib_loads and opened and data[opened - 1] == 0x22:
        try:
            return cast(str, loads(data[opened - 1 : closed + 1]))  # (a quote begins it)
        except ValueError:
            pass
    return string_body(data[opened : closed + 1])


def _lone_at(text: str) -> int:
    """The offset of the first escape that is a lone surrogate: a high half not followed at once
    by a low one, or a low half alone."""
    pending: int | None = None  # a high half waiting for its low half
    for m in _ESCAPED_SURROGATE.finditer(text):
        if len(m[1]) % 2 == 0:
            continue  # an escaped backslash, then a "u": no escape
        at = m.start(2) - 2  # where its "\\u" begins (after any escaped backslashes)
        if int(m.group(2), 16) <= 0xDBFF:
            if pending is not None:
                return pending
            pending = at
        elif pending is not None and at == pending + 6:
            pending = None
        else:
            return pending if pending is not None else at
    return pending if pending is not None else 0


def has_surrogate(value: object) -> bool:
    """Whether a string of ``value``, a key's too, holds a surrogate (Rule 4's test)."""
    # iterative: a value nested MAX_DEPTH deep must not meet the Python recursion limit
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if SURROGATE.search(item) is not None:
                return True
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _replace_surrogates(value: object) -> object:
    """`value` with each surrogate in its strings (keys too) replaced by U+FFFD; iterative,
    like `has_surrogate`. Containers are rebuilt in place of the parser's own."""
    if isinstance(value, str):
        return SURROGATE.sub("\ufffd", value)
    assert isinstance(value, (dict, list))  # what `has_surrogate` found one in
    stack: list[dict[str, object] | list[object]] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            pairs = list(item.items())
            item.clear()
            for key, child in pairs:
                if isinstance(child, str):
                    child = SURROGATE.sub("\ufffd", child)
                elif isinstance(child, (dict, list)):
                    stack.append(child)
                item[SURROGATE.sub("\ufffd", key)] = child
        else:
            for i, child in enumerate(item):
                if isinstance(child, str):
                    item[i] = SURROGATE.sub("\ufffd", child)
                elif isinstance(child, (dict, list)):
                    stack.append(child)
    return value


def _stdlib_loads(data: bytes | bytearray | str) -> object:
    return canonical(data)


BACKEND: Backend = "orjson" if orjson is not None else "json"
loads: Loads = orjson.loads if orjson is not None else _stdlib_loads


def dumps(value: object) -> bytes:
    """Compact JSON as UTF-8 (non-ASCII written as itself): orjson when it is installed, whose
    bytes equal the standard library's for every valid string, else the standard library (and
    for what orjson refuses, a lone surrogate). For the encoders' hot paths."""
    if orjson is not None:
        try:
            return orjson.dumps(value)  # type: ignore[no-any-return]
        except TypeError:
            pass
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8", "surrogatepass")


def use(backend: Backend) -> None:
    """Select the parser that decoders constructed from now on will use."""
    global BACKEND, loads
    if backend == "orjson":
        if orjson is None:
            raise ValueError("orjson is not installed (pip install 'svir-proto[fast]')")
        loads = orjson.loads
    elif backend == "json":
        loads = _stdlib_loads
    else:
        raise ValueError(f"backend must be 'orjson' or 'json', not {backend!r}")
    BACKEND = backend
