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
    match of the whole head and split with ``bytes.split``; any other head takes the slow lane,
    line by line, which says what is wrong. Both lanes give the same result for a head both
    accept.
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
_VALUE: Final = rb"(?:[^\x00\s]+(?:[ \t]+[^\x00\s]+)*)?"
_FIELD_LINE: Final = rb"%s:[ \t]*%s[ \t]*" % (_TOKEN, _VALUE)
_VERSION: Final = rb"HTTP/[0-9]\.[0-9]"
_STATUS_LINE: Final = re.compile(rb"HTTP/([0-9]\.[0-9]) ([0-9]{3})(?: ((?:[ \t]|[^\x00\s])*))?")
_REQUEST_LINE: Final = re.compile(rb"(%s) ([\x21-\x7e]+) HTTP/([0-9]\.[0-9])" % _TOKEN)
_FIELD: Final = re.compile(rb"(%s):[ \t]*(%s)[ \t]*" % (_TOKEN, _VALUE))
_FAST_RESPONSE: Final = re.compile(
    rb"%s [0-9]{3}(?: (?:[ \t]|[^\x00\s])*)?\r\n(?:%s\r\n)*\r\n" % (_VERSION, _FIELD_LINE)
)
_FAST_REQUEST: Final = re.compile(
    rb"%s [\x21-\x7e]+ %s\r\n(?:%s\r\n)*\r\n" % (_TOKEN, _VERSION, _FIELD_LINE)
)
_WRITTEN_LINE: Final = rb"%s: %s\r\n" % (_TOKEN, _VALUE)
_WRITTEN: Final = re.compile(rb"(?:%s)*" % _WRITTEN_LINE)
_BLANK: Final = re.compile(rb"\n\r?\n")
_FOLD: Final = re.compile(rb"[ \t]+")
_LENGTH: Final = re.compile(rb"[0-9]{1,20}")
_OWS: Final = b" \t"
_TARGET: Final = re.compile(r"[\x21-\x7e]+")
_METHOD: Final = re.compile(r"[-!#$%&'*+.^_`|~0-9a-zA-Z]+")

Fields = list[tuple[bytes, bytes]]
"""A head's fields in order: names lower-cased, values without their surrounding blanks."""


class BadHead(ValueError):
    """A head that breaks Rule 1 or Rule 2: ``status`` is what a server answers it with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class ResponseHead(NamedTuple):
    status: int
    reason: bytes
    version: bytes
    fields: Fields


class RequestHead(NamedTuple):
    method: bytes
    target: bytes
    version: bytes
    fields: Fields
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
    fast = _FAST_RESPONSE.fullmatch(head) is not None
    lines = head.split(b"\r\n") if fast else _lines(head)
    matched = _STATUS_LINE.fullmatch(lines[0])
    if matched is None:
        raise BadHead(f"illegal status line: {_show(lines[0])}")
    version, code, reason = matched.groups()
    if code < b"100":  # h11's InformationalResponse begins at 100
        raise BadHead(f"status code {code.decode()} is below 100")
    fields = _check_framing(_fast_fields(lines) if fast else _slow_fields(lines)[0])
    return ResponseHead(int(code), reason or b"", version, fields)


def read_request(head: bytes) -> RequestHead:
    """A whole request head (up to and including its blank line).

    Raises:
        BadHead: Rule 1 or 2 broken.
    """
    fast = _FAST_REQUEST.fullmatch(head) is not None
    lines = head.split(b"\r\n") if fast else _lines(head)
    matched = _REQUEST_LINE.fullmatch(lines[0])
    if matched is None:
        raise BadHead(f"illegal request line: {_show(lines[0])}")
    method, target, version = matched.groups()
    fields, folded = (_fast_fields(lines), False) if fast else _slow_fields(lines)
    fields = _check_framing(fields)
    hosts = sum(1 for name, _ in fields if name == b"host")  # RFC 9112 3.2, as h11 checks it
    if hosts > 1:
        raise BadHead("more than one Host field")
    if hosts == 0 and version == b"1.1":
        raise BadHead("an HTTP/1.1 request without a Host field")
    return RequestHead(method, target, version, fields, folded)


def _fast_fields(lines: list[bytes]) -> Fields:
    """Rule 3: CRLF lines the whole-head match accepted (``lines`` ends with two blanks)."""
    out = []
    for line in lines[1:-2]:
        name, _, value = line.partition(b":")
        out.append((name.lower(), value.strip(_OWS)))
    return out


def _lines(head: bytes) -> list[bytes]:
    if head[:1] == b"\n" or head[:2] == b"\r\n":
        raise BadHead("no start line received")
    lines = head.split(b"\n")
    del lines[-2:]  # the blank line's
    return [line[:-1] if line.endswith(b"\r") else line for line in lines]


def _slow_fields(lines: list[bytes]) -> tuple[Fields, bool]:
    """Rule 1, line by line: folded lines joined, each field line matched."""
    joined: list[bytes] = []
    folded = False
    for line in lines[1:]:
        fold = _FOLD.match(line)
        if fold is None:
            joined.append(line)
            continue
        if not joined:
            raise BadHead("continuation line at start of headers")
        folded = True
        joined[-1] += b" " + line[fold.end() :]
    out = []
    for line in joined:
        matched = _FIELD.fullmatch(line)
        if matched is None:
            raise BadHead(f"illegal header line: {_show(line)}")
        out.append((matched[1].lower(), matched[2]))
    return out, folded


def _check_framing(fields: Fields) -> Fields:
    """Rule 2: the framing fields h11 refuses; those it takes, as h11 gives them (one
    Content-Length field with its one value, the coding lower-cased)."""
    length: bytes | None = None
    chunked = False
    out: Fields | None = None  # a copy, once a field reads otherwise than it came
    for at, (name, value) in enumerate(fields):
        if name == b"content-length":
            values = {v.strip(_OWS) for v in value.split(b",")}
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
        elif name == b"transfer-encoding":
            if chunked:
                raise BadHead("multiple Transfer-Encoding fields", 501)
            if value.lower() != b"chunked":
                raise BadHead("only Transfer-Encoding: chunked is supported", 501)
            chunked = True
            if value != b"chunked":
                out = out if out is not None else fields[:at]
                out.append((name, b"chunked"))
                continue
        if out is not None:
            out.append((name, value))
    return fields if out is None else out


def content_length(fields: Fields) -> int | None:
    """The body's length a read head's Content-Length says, if it has one."""
    for name, value in fields:
        if name == b"content-length":
            return int(value)
    return None


def has_token(fields: Fields, name: bytes, token: bytes) -> bool:
    """Whether a comma-separated field (all of its lines) lists ``token``, case aside."""
    for key, value in fields:
        if key == name:
            for item in value.split(b","):
                if item.strip(_OWS).lower() == token:
                    return True
    return False


def request_head(method: str, target: str, fields: Sequence[tuple[str, str]]) -> bytes:
    """An HTTP/1.1 request head (Rule 4): ASCII only, as h11 wrote one.

    Raises:
        ValueError: a method that is not a token, a target that is not visible ASCII, or a
            field as `_write` says.
    """
    if _TARGET.fullmatch(target) is None or _METHOD.fullmatch(method) is None:
        raise ValueError(f"not a request line: {method!r} {target!r}")
    if sum(1 for name, _ in fields if name.lower() == "host") != 1:
        raise ValueError("a request needs one Host field (RFC 9112 3.2)")
    return _write(f"{method} {target} HTTP/1.1\r\n", fields, "ascii")


def response_head(status: int, reason: str, fields: Sequence[tuple[str, str]]) -> bytes:
    """An HTTP/1.1 response head (Rule 4); ``reason`` is ours (`gateway._http.reason`). A value
    may carry obs-text (a relayed field's bytes, as Latin-1 text: RFC 9110 5.5)."""
    return _write(f"HTTP/1.1 {status} {reason}\r\n", fields, "latin-1")


def _write(start: str, fields: Sequence[tuple[str, str]], encoding: str) -> bytes:
    """``start``, then ``fields``, Host first.

    Raises:
        ValueError: a field that ``encoding`` cannot write, a name that is not a token, or a
            value h11 would refuse (a CR, LF or NUL, blanks around it), named.
    """
    lines = [start]
    lines += [f"{k}: {v}\r\n" for k, v in fields if k.lower() == "host"]
    lines += [f"{k}: {v}\r\n" for k, v in fields if k.lower() != "host"]
    lines.append("\r\n")
    try:
        raw = "".join(lines).encode(encoding)
    except UnicodeEncodeError:
        raw = b""
    if not raw or _WRITTEN.fullmatch(raw, len(start), len(raw) - 2) is None:
        _name_bad_field(fields, encoding)
    return raw


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
