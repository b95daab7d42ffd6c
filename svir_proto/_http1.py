"""HTTP/1.1 message heads (RFC 9112 sections 2-6), read and written by us: the per-request path.

h11 read and wrote every head the gateway and the clients handle, and it cost more per request
than everything else the gateway did before the first token (its events, state machine and
per-header validation, four times a request). This module reads a head with two C-level passes
(the blank line's search, one regular expression over the whole head) and writes one with a
format and one check. It applies h11 0.16's rules, so that what h11 accepted is accepted and
what it refused is refused; a property test holds the two to the same verdicts and values.

Rule 1 (h11's head grammar, `h11._abnf`): a start line, then ``name ":" OWS value OWS`` field
    lines, then a blank line; a line ends at LF, a CR before it dropped; the head ends at the
    first ``LF [CR] LF``. A name is a token; a value is visible characters and obs-text with
    single runs of SP/HTAB inside; a line that begins with SP or HTAB continues the one before
    (obs-fold, unfolded with one SP: the caller decides whether to refuse it). A status line
    is ``HTTP/d.d SP 3DIGIT [SP reason]``, a request line ``token SP 1*VCHAR SP HTTP/d.d``.
Rule 2 (h11's framing fields): every Content-Length value, split at commas, is one run of at
    most 20 digits, the same in every field; Transfer-Encoding appears once and is exactly
    ``chunked`` (case aside), else 501 (h11: only chunked is supported).
Rule 3 (the fast lane): a head whose every line ends with CRLF, none folded, is checked by one
    match of the whole head, decoded once (Latin-1: every byte its own character) and split;
    any other head takes the slow lane, line by line, which says what is wrong. Both lanes give
    the same result for a head both accept. A head's fields are text, its names lower-cased.
Rule 4 (writing): a head we write is checked by one match of its field lines (names tokens,
    values h11's field values, ASCII): a bad value is a `ValueError` naming the field, before
    a byte is written. Host goes first (RFC 9112 3.2).

It never does I/O, and it does not decide what a head means (the connections do).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final, NamedTuple

__all__: list[str] = []

_TOKEN: Final = rb"[-!#$%&'*+.^_`|~0-9a-zA-Z]+"
_WORDS: Final = rb"[^\x00\s]+(?:[ \t]+[^\x00\s]+)*"
_VALUE: Final = rb"(?:%s)?" % _WORDS
FIELD_LINE: Final = rb"%s:[ \t]*(?:%s[ \t]*)?" % (_TOKEN, _WORDS)
"""A field line: its blanks go either before its value or after it, one way only. With a blank
both before and after an empty value (``[ \t]*%s[ \t]*``), the blanks of each line could be
split in as many ways as they are long, and a head of blank values that fails on its last
line tried every split of every line: seconds for 200 bytes, hours for 250 (attack 27)."""
_VERSION: Final = rb"HTTP/[0-9]\.[0-9]"
_STATUS_LINE: Final = re.compile(rb"HTTP/([0-9]\.[0-9]) ([0-9]{3})(?: ((?:[ \t]|[^\x00\s])*))?")
_REQUEST_LINE: Final = re.compile(rb"(%s) ([\x21-\x7e]+) HTTP/([0-9]\.[0-9])" % _TOKEN)
_FIELD: Final = re.compile(rb"(%s):[ \t]*(?:(%s)[ \t]*)?" % (_TOKEN, _WORDS))
_FAST_RESPONSE: Final = re.compile(
    rb"%s [0-9]{3}(?: (?:[ \t]|[^\x00\s])*)?\r\n(?:%s\r\n)*\r\n" % (_VERSION, FIELD_LINE)
)
_FAST_REQUEST: Final = re.compile(
    rb"%s [\x21-\x7e]+ %s\r\n(?:%s\r\n)*\r\n" % (_TOKEN, _VERSION, FIELD_LINE)
)
_WRITTEN_LINE: Final = rb"%s: %s\r\n" % (_TOKEN, _VALUE)
_WRITTEN: Final = re.compile(rb"(?:%s)*" % _WRITTEN_LINE)
_BLANK: Final = re.compile(rb"\n\r?\n")
_FOLD: Final = re.compile(rb"[ \t]+")
_LENGTH: Final = re.compile(r"[0-9]{1,20}")
_TARGET: Final = re.compile(r"[\x21-\x7e]+")
_METHOD: Final = re.compile(r"[-!#$%&'*+.^_`|~0-9a-zA-Z]+")

Fields = list[tuple[str, str]]
"""A head's fields in order, as Latin-1 text (RFC 9110 5.5: obs-text is kept, byte for byte):
names lower-cased, values without their surrounding blanks."""


class BadHead(ValueError):
    """A head that breaks Rule 1 or Rule 2: ``status`` is what a server answers it with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class ResponseHead(NamedTuple):
    status: int
    reason: str
    version: str
    fields: Fields
    named: dict[str, str]  # each name's value (the last, for a name that repeats)


class RequestHead(NamedTuple):
    method: str
    target: str
    version: str
    fields: Fields
    named: dict[str, str]
    folded: bool  # a field line was folded (obs-fold): a server refuses it (RFC 9112 5.2)


def head_end(data: bytes | bytearray, start: int = 0) -> int:
    """Where the head at the start of ``data`` ends (after its blank line), or -1 while it is
    incomplete. ``start``: where to resume the search (a blank line cannot begin before it)."""
    found = _BLANK.search(data, start)
    return -1 if found is None else found.end()


def blank_start(data: bytes | bytearray) -> bool:
    """``data`` begins with a blank line: h11 takes it as a head with no start line."""
    return data[:1] == b"\n" or data[:2] == b"\r\n"


def read_response(head: bytes) -> ResponseHead:
    """A whole response head (up to and including its blank line).

    Raises:
        BadHead: Rule 1 or 2 broken.
    """
    if _FAST_RESPONSE.fullmatch(head) is not None:  # Rule 3
        lines = head.decode("latin-1").split("\r\n")
        start = lines[0]  # "HTTP/d.d ddd[ reason]", as the match said
        version, code, reason = start[5:8], start[9:12], start[13:]
        fields = _fast_fields(lines)
    else:
        blines = _lines(head)
        matched = _STATUS_LINE.fullmatch(blines[0])
        if matched is None:
            raise BadHead(f"illegal status line: {_show(blines[0])}")
        version, code, reason = (g.decode("latin-1") for g in matched.groups(b""))
        fields = _slow_fields(blines)[0]
    if code < "100":  # h11's InformationalResponse begins at 100
        raise BadHead(f"status code {code} is below 100")
    fields, index = _framing(fields)
    return ResponseHead(int(code), reason, version, fields, index)


def read_request(head: bytes) -> RequestHead:
    """A whole request head (up to and including its blank line).

    Raises:
        BadHead: Rule 1 or 2 broken.
    """
    folded = False
    if _FAST_REQUEST.fullmatch(head) is not None:  # Rule 3
        lines = head.decode("latin-1").split("\r\n")
        method, target, version = lines[0].split(" ")  # as the match said
        version = version[5:]
        fields = _fast_fields(lines)
    else:
        blines = _lines(head)
        matched = _REQUEST_LINE.fullmatch(blines[0])
        if matched is None:
            raise BadHead(f"illegal request line: {_show(blines[0])}")
        method, target, version = (g.decode("latin-1") for g in matched.groups())
        fields, folded = _slow_fields(blines)
    fields, index = _framing(fields)
    if len(index) == len(fields):  # RFC 9112 3.2, as h11 checks it
        hosts = 1 if "host" in index else 0
    else:
        hosts = sum(1 for name, _ in fields if name == "host")
    if hosts > 1:
        raise BadHead("more than one Host field")
    if hosts == 0 and version == "1.1":
        raise BadHead("an HTTP/1.1 request without a Host field")
    return RequestHead(method, target, version, fields, index, folded)


def _fast_fields(lines: list[str]) -> Fields:
    """Rule 3: CRLF lines the whole-head match accepted (``lines`` ends with two blanks)."""
    out = []
    for line in lines[1:-2]:
        name, _, value = line.partition(":")
        out.append((name.lower(), value.strip(" \t")))
    return out


def _lines(head: bytes) -> list[bytes]:
    if head[:1] == b"\n" or head[:2] == b"\r\n":
        raise BadHead("no start line received")
    lines = head.split(b"\n")
    del lines[-2:]  # the blank line's
    return [line[:-1] if line.endswith(b"\r") else line for line in lines]


def unfold(lines: Sequence[bytes]) -> list[bytes] | None:
    """Field lines with obsolete folding (RFC 9112 5.2) undone as h11 undoes it: a line that
    begins with blanks continues the one before, after one space; ``None`` when the first
    line is such. Each field is joined once, however many lines it takes."""
    parts: list[list[bytes]] = []
    for line in lines:
        fold = _FOLD.match(line)
        if fold is None:
            parts.append([line])
        elif not parts:
            return None
        else:
            parts[-1].append(line[fold.end() :])
    return [b" ".join(field) for field in parts]


def _slow_fields(lines: list[bytes]) -> tuple[Fields, bool]:
    """Rule 1, line by line: folded lines joined, each field line matched."""
    joined = unfold(lines[1:])
    if joined is None:
        raise BadHead("continuation line at start of headers")
    folded = len(joined) < len(lines) - 1
    out = []
    for line in joined:
        matched = _FIELD.fullmatch(line)
        if matched is None:
            raise BadHead(f"illegal header line: {_show(line)}")
        value = matched[2] or b""  # None: an empty value
        out.append((matched[1].decode("latin-1").lower(), value.decode("latin-1")))
    return out, folded


def _framing(fields: Fields) -> tuple[Fields, dict[str, str]]:
    """Rule 2, and the index of the fields as it leaves them: at once when no name repeats
    and the framing fields read plainly, else field by field (`_check_framing`)."""
    index = dict(fields)
    if len(index) == len(fields):
        length = index.get("content-length")
        coding = index.get("transfer-encoding")
        if (length is None or _LENGTH.fullmatch(length) is not None) and (
            coding is None or coding == "chunked"
        ):
            return fields, index
    fields = _check_framing(fields)
    return fields, dict(fields)


def _check_framing(fields: Fields) -> Fields:
    """Rule 2: the framing fields h11 refuses; those it takes, as h11 gives them (one
    Content-Length field with its one value, the coding lower-cased)."""
    length: str | None = None
    chunked = False
    out: Fields | None = None  # a copy, once a field reads otherwise than it came
    for at, (name, value) in enumerate(fields):
        if name == "content-length":
            values = {v.strip(" \t") for v in value.split(",")}
            if len(values) != 1:
                raise BadHead("conflicting Content-Length fields")
            (one,) = values
            if _LENGTH.fullmatch(one) is None:
                raise BadHead("bad Content-Length")
            if length is not None:
                if length != one:
                    raise BadHead("conflicting Content-Length fields")
                out = out if out is not None else fields[:at]
                continue
            length = one
            if one != value:
                out = out if out is not None else fields[:at]
                out.append((name, one))
                continue
        elif name == "transfer-encoding":
            if chunked:
                raise BadHead("multiple Transfer-Encoding fields", 501)
            if value.lower() != "chunked":
                raise BadHead("only Transfer-Encoding: chunked is supported", 501)
            chunked = True
            if value != "chunked":
                out = out if out is not None else fields[:at]
                out.append((name, "chunked"))
                continue
        if out is not None:
            out.append((name, value))
    return fields if out is None else out


def has_token(fields: Fields, index: dict[str, str], name: str, token: str) -> bool:
    """Whether a comma-separated field (all of its lines) lists ``token``, case aside."""
    if len(index) == len(fields):
        value = index.get(name)
        return value is not None and (
            value == token or token in [item.strip(" \t").lower() for item in value.split(",")]
        )
    return any(has_token([(k, v)], {k: v}, name, token) for k, v in fields if k == name)


def request_head(method: str, target: str, fields: Sequence[tuple[str, str]]) -> bytes:
    """An HTTP/1.1 request head (Rule 4): ASCII only, as h11 wrote one.

    Raises:
        ValueError: a method that is not a token, a target that is not visible ASCII, a Host
            field missing or repeated (RFC 9112 3.2), or a field as `_write` says.
    """
    if _TARGET.fullmatch(target) is None or _METHOD.fullmatch(method) is None:
        raise ValueError(f"not a request line: {method!r} {target!r}")
    head, hosts = _write(f"{method} {target} HTTP/1.1\r\n", fields, "ascii")
    if hosts != 1:
        raise ValueError("a request needs one Host field (RFC 9112 3.2)")
    return head


def response_head(status: int, reason: str, fields: Sequence[tuple[str, str]]) -> bytes:
    """An HTTP/1.1 response head (Rule 4); ``reason`` is ours (`gateway._http.reason`). A value
    may carry obs-text (a relayed field's bytes, as Latin-1 text: RFC 9110 5.5)."""
    return _write(f"HTTP/1.1 {status} {reason}\r\n", fields, "latin-1")[0]


def _write(start: str, fields: Sequence[tuple[str, str]], encoding: str) -> tuple[bytes, int]:
    """``start``, then ``fields``, Host first; and how many Host fields there were.

    Raises:
        ValueError: a field that ``encoding`` cannot write, a name that is not a token, or a
            value h11 would refuse (a CR, LF or NUL, blanks around it), named.
    """
    lines = [start]
    hosts = 0
    for k, v in fields:
        if k == "Host" or k.lower() == "host":
            hosts += 1
            lines.insert(hosts, f"{k}: {v}\r\n")
        else:
            lines.append(f"{k}: {v}\r\n")
    lines.append("\r\n")
    try:
        raw = "".join(lines).encode(encoding)
    except UnicodeEncodeError:
        raw = b""
    if not raw or _WRITTEN.fullmatch(raw, len(start), len(raw) - 2) is None:
        _name_bad_field(fields, encoding)
    return raw, hosts


def _name_bad_field(fields: Sequence[tuple[str, str]], encoding: str) -> None:
    one = re.compile(_WRITTEN_LINE)
    for name, value in fields:
        try:
            line = f"{name}: {value}\r\n".encode(encoding)
        except UnicodeEncodeError:
            raise ValueError(f"header {name!r}: not {encoding}") from None
        if one.fullmatch(line) is None:
            raise ValueError(f"header {name!r}: not a valid field line ({value!r})")
    raise AssertionError("unreachable: every field line matched")  # pragma: no cover


def _show(line: bytes, limit: int = 80) -> str:
    return repr(line[:limit]) + ("..." if len(line) > limit else "")
