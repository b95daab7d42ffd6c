"""Hypothesis: any split of any stream decodes like the whole stream, and like a naive model."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from svir_proto import NEED_DATA, PeerProtocolError
from svir_proto._dialect import DialectDecoder
from svir_proto._pull import PullDecoder
from svir_proto.sse import (
    EndOfStream,
    Errors,
    ServerSentEvent,
    SSEComment,
    SSEDecoder,
    SSEEncoder,
    SSEFramer,
    SSEItem,
)
from svir_proto.sse.framer import (
    LINE_COST,
    RawItem,
    _crlf_only,
    batch_offsets,
    typed_offsets,
)
from tests.helpers import run, splits

_LINE_END = re.compile(rb"\r\n|\r|\n")
_DATA_LINE = re.compile(rb"(?:^|[\r\n])data")
TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=20
) | st.sampled_from(["", " ", "ü", "世界", "😀x", "[DONE]", '{"a":1}', "\x00", "\u2028"])
NAMES = st.sampled_from(["data", "data", "data", "event", "id", "retry", "foo", "DATA", ""])
TYPES = st.sampled_from(["x", "ping", "content_block_delta", "response.output_text.delta"]) | TEXT
END = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    parts: list[str] = []
    if draw(st.booleans()):
        parts.append("\ufeff")
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["field", "field", "comment", "blank", "nocolon", "retry"]))
        if kind == "field":
            name = draw(NAMES)
            value = draw(TYPES if name == "event" else TEXT)
            parts.append(f"{name}:{draw(st.sampled_from(['', ' ']))}{value}")
        elif kind == "comment":
            parts.append(f":{draw(TEXT)}")
        elif kind == "nocolon":
            parts.append(draw(NAMES))
        elif kind == "retry":
            parts.append(f"retry: {draw(st.integers(0, 10**6))}")
        parts.append(draw(END))
        if kind == "blank" or draw(st.booleans()):
            parts.append(draw(END))
    if draw(st.booleans()):
        parts.append(draw(TEXT))  # an unterminated tail
    return "".join(parts).encode("utf-8")


def model(body: bytes) -> list[SSEItem]:
    """The WHATWG algorithm, written as plainly as possible over the whole decoded text."""
    text = body.decode("utf-8")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = re.split(r"\r\n|\r|\n", text)
    tail = lines.pop()  # not terminated by an end-of-line: discarded
    out: list[SSEItem] = []
    data: list[str] = []
    etype = ""
    last_id = ""
    retry = None
    pending = False
    for line in lines:
        if line == "":
            if data:
                out.append(
                    ServerSentEvent(
                        event=etype or "message", data="\n".join(data), id=last_id, retry=retry
                    )
                )
            data, etype, retry, pending = [], "", None, False
            continue
        if line.startswith(":"):
            out.append(SSEComment(text=line[2:] if line[1:2] == " " else line[1:]))
            continue
        pending = True
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            etype = value
        elif name == "id" and "\0" not in value:
            last_id = value
        elif name == "retry" and value and all("0" <= c <= "9" for c in value) and len(value) <= 18:
            retry = int(value)
    out.append(EndOfStream(incomplete=pending or tail != ""))
    return out


@given(st.data())
def test_any_split_equals_whole_and_the_model(data: st.DataObject) -> None:
    body = data.draw(streams())
    whole = run(SSEDecoder(), [body])
    assert whole == model(body)
    assert run(SSEDecoder(), data.draw(splits(body))) == whole


def framed(pieces: list[bytes]) -> list[object]:
    framer = SSEFramer()
    out: list[object] = []
    for p in [*pieces, b""]:
        framer.receive(p)
        framer.frame(out)  # type: ignore[arg-type]
    assert framer.end is not None
    body = b"".join(pieces)
    items: list[object] = []
    for item in out:
        if len(item) == 4:  # a batch: the same events, framed in one step
            start, payloads, last_id, gap = item  # type: ignore[misc]
            for payload, at in zip(payloads, batch_offsets(start, payloads, gap), strict=True):
                # a batch of ``data:<payload>`` events (the framer's shift) counts from one
                # byte before each event, so that the payload is 6 bytes after it: the event
                # begins where its ``data:`` does
                begins = at - 6 if body[at - 6 : at] == b"data: " else at - 5
                items.append((None, bytes(payload), at, last_id, None, begins))
        elif len(item) == 5:  # typed events, likewise
            start, types, payloads, last_id, eol = item  # type: ignore[misc]
            offsets = typed_offsets(start, types, payloads, eol)
            for t, payload, at in zip(types, payloads, offsets, strict=True):
                items.append((t, payload, at, last_id, None, at - len(t) - 13 - eol))
        else:
            items.append(item)
    return [*items, framer.end.offset]


@given(st.data())
def test_raw_items_and_offsets_do_not_depend_on_split(data: st.DataObject) -> None:
    body = data.draw(streams())
    assert framed(data.draw(splits(body))) == framed([body])


@given(
    st.lists(
        st.tuples(
            st.text(max_size=30).filter(lambda s: "\r" not in s),
            st.one_of(st.none(), st.sampled_from(["x", "tool.call", "stream.start"])),
            st.one_of(
                st.none(), st.text(max_size=5).filter(lambda s: not set(s) & {"\r", "\n", "\0"})
            ),
        ),
        max_size=8,
    ),
    st.data(),
)
def test_encoder_output_decodes_back(
    items: list[tuple[str, str | None, str | None]], data: st.DataObject
) -> None:
    enc = SSEEncoder()
    body = b"".join(enc.event(d, event=e, id=i) for d, e, i in items)
    decoded = run(SSEDecoder(), data.draw(splits(body)))
    last_id = ""
    expected: list[SSEItem] = []
    for d, e, i in items:
        last_id = i if i is not None else last_id
        expected.append(ServerSentEvent(event=e or "message", data=d, id=last_id))
    assert decoded == [*expected, EndOfStream(incomplete=False)]


@given(st.data(), st.integers(4, 60), st.binary(max_size=200))
def test_errors_do_not_depend_on_split(data: st.DataObject, limit: int, noise: bytes) -> None:
    body = data.draw(streams()) + noise

    def outcome(pieces: list[bytes]) -> object:
        d = SSEDecoder(max_event_size=limit)
        events: list[SSEItem] = []
        try:
            for p in pieces:
                events += d.feed(p)
            events += d.close()
        except PeerProtocolError as exc:
            return ([*events, *exc.pending_events], type(exc), exc.offset, exc.limit)
        return (events, None)

    assert outcome(data.draw(splits(body))) == outcome([body])


# The fast lanes (the decoders' express and SSEFramer.take) take streams shaped like an LLM
# server's: one "data: " line per event, or an "event: " line and a "data: " line, all LF line ends
# or all CRLF, a piece per event or several. These streams are mostly one of those, with now and
# then something each lane must hand to the general path (among them the other line end).
LIVE_EVENTS = {
    "simple": lambda t, e: f"data: {t}{e}{e}".encode(),
    "empty": lambda t, e: f"data: {e}{e}".encode(),
    "typed": lambda t, e: f"event: x{e}data: {t}{e}{e}".encode(),
    "responses": lambda t, e: f"event: response.output_text.delta{e}data: {t}{e}{e}".encode(),
    "ping": lambda t, e: f"event: ping{e}data: {{}}{e}{e}".encode(),
    "typed empty": lambda t, e: f"event: ping{e}data: {e}{e}".encode(),
    "any type": lambda t, e: f"event: {t}{e}data: {t}{e}{e}".encode(),  # "", NUL, non-ASCII
    "type nospace": lambda t, e: f"event:x{e}data: {t}{e}{e}".encode(),
    "type twice": lambda t, e: f"event: x{e}event: y{e}data: {t}{e}{e}".encode(),
    "typed two lines": lambda t, e: f"event: x{e}data: {t}{e}data: {t}{e}{e}".encode(),
    "typed no data": lambda t, e: f"event: x{e}{e}".encode(),
    "data then type": lambda t, e: f"data: {t}{e}event: x{e}{e}".encode(),
    "typed id": lambda t, e: f"event: x{e}id: {t}{e}data: {t}{e}{e}".encode(),
    "typed invalid": lambda t, e: f"event: x{e}".encode() + b"data: \xff" + f"{t}{e}{e}".encode(),
    "invalid type": lambda t, e: b"event: \xfe" + f"{e}data: {t}{e}{e}".encode(),
    "typed cr": lambda t, e: f"event: x\rdata: {t}{e}{e}".encode(),
    "typed other line end": lambda t, e: (
        f"event: x\r\ndata: {t}\r\n\r\n" if e == "\n" else f"event: x\ndata: {t}\n\n"
    ).encode(),
    "id": lambda t, e: f"id: {t}{e}data: {t}{e}{e}".encode(),
    "comment": lambda t, e: f": {t}{e}{e}".encode(),
    "invalid comment": lambda t, e: b": \xff" + f"{t}{e}{e}".encode(),
    "other line end": lambda t, e: (
        f"data: {t}\r\n\r\n".encode() if e == "\n" else f"data: {t}\n\n".encode()
    ),
    "cr": lambda t, e: f"data: {t}\r\r".encode(),
    "cr inside": lambda t, e: f"data: {t}\r{t}{e}{e}".encode(),
    "lf inside": lambda t, e: f"data: {t}\n{t}{e}{e}".encode(),
    "mixed": lambda t, e: f"data: {t}\r\n\n".encode(),
    "invalid": lambda t, e: b"data: \xff" + f"{t}{e}{e}".encode(),
    "blank": lambda t, e: e.encode(),
    "two lines": lambda t, e: f"data: {t}{e}data: {t}{e}{e}".encode(),
    "nospace": lambda t, e: f"data:{t}{e}{e}".encode(),
}
MAIN_KINDS = st.sampled_from(["simple", "typed", "responses", "nospace"])
TAILS = ["data: ", "event: x", "event: x\n", "event: x\ndata: ", "event: x\r\ndata: "]


@st.composite
def live_pieces(draw: st.DrawFn) -> list[bytes]:
    """Events grouped into pieces, one per piece as often as not; a piece is sometimes cut,
    inside a line, after one, or between a CR and its LF."""
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    kinds = st.sampled_from([draw(MAIN_KINDS)] * 6 + sorted(LIVE_EVENTS))
    events = [LIVE_EVENTS[draw(kinds)](draw(TEXT), eol) for _ in range(draw(st.integers(0, 20)))]
    if draw(st.booleans()):  # a keep-alive after every event, as some servers send
        ping = LIVE_EVENTS["comment"](draw(st.sampled_from(["keep-alive", "", "ü", "a:b"])), eol)
        events = [part for event in events for part in (event, ping)]
    if draw(st.booleans()):  # an unterminated tail
        events.append(draw(st.sampled_from(TAILS)).encode() + draw(TEXT).encode())
    pieces: list[bytes] = []
    i = 0
    while i < len(events):
        k = draw(st.sampled_from([1, 1, 1, 2, 3]))
        piece = b"".join(events[i : i + k])
        i += k
        cut = draw(st.sampled_from([None, None, None, "line", "anywhere"]))
        if cut is not None and len(piece) > 1:
            ends = [j + 1 for j in range(len(piece) - 1) if piece[j] in b"\r\n"]
            at = draw(
                st.sampled_from(ends) if cut == "line" and ends else st.integers(1, len(piece) - 1)
            )
            pieces += [piece[:at], piece[at:]]
        else:
            pieces.append(piece)
    return pieces


def outcome(decoder: PullDecoder[Any], pieces: list[bytes], pull: list[bool]) -> object:
    """What a decoder gives after each piece (an event is due as soon as its blank line has
    arrived, whatever the lanes do), each fed with ``feed`` or, where ``pull`` says so, with
    ``receive_data`` and ``next_event``; an error ends it, with where it was found."""
    events: list[list[object]] = []
    try:
        for piece, by_pull in zip(pieces, pull, strict=True):
            got: list[object] = []
            events.append(got)
            if by_pull:
                decoder.receive_data(piece)
                got += decoder.events()  # keeps what came before an error
            else:
                got += decoder.feed(piece)
        events.append(decoder.close())
    except PeerProtocolError as exc:
        # feed() returns what came before an error and raises it on the next call, where
        # next_event() raises it at once: the call that raises is not compared, the events are
        events[-1] += exc.pending_events
        while events and not events[-1]:
            events.pop()
        return (events, exc.offset, exc.limit)
    ends = [e.offset for e in events[-1] if isinstance(e, EndOfStream)]  # not part of equality
    return (events, ends)


class GeneralFramer(SSEFramer):
    """A framer whose fast lane never takes anything, and whose general way never frames a
    run at once: every byte goes the general way, every event on its own."""

    def _run(self) -> None:
        return None

    def _batch(self, buf: bytearray, end: int, at: int, out: list[RawItem]) -> bool:
        return False


def general_decoder(limit: int, errors: Errors) -> SSEDecoder:
    """An `SSEDecoder` on the general path only, when fed with ``receive_data`` alone (which
    keeps the express lane of ``feed`` closed)."""
    decoder = SSEDecoder(max_event_size=limit, errors=errors)
    decoder._framer = GeneralFramer(max_event_size=limit, errors=errors)
    return decoder


@given(live_pieces(), st.data(), st.sampled_from(["strict", "replace"]))
def test_the_fast_lanes_agree_with_the_general_path(
    pieces: list[bytes], data: st.DataObject, errors: Errors
) -> None:
    body = b"".join(pieces)
    limit = data.draw(st.sampled_from([8 * 1024 * 1024, 12, 40, 64]))
    by_pull = st.sampled_from([False, False, False, True])
    pull = data.draw(st.lists(by_pull, min_size=len(pieces), max_size=len(pieces)))
    reference = outcome(general_decoder(limit, errors), pieces, [True] * len(pieces))
    assert outcome(SSEDecoder(max_event_size=limit, errors=errors), pieces, pull) == reference
    held = len(body) + LINE_COST * len(_DATA_LINE.findall(body))  # (data lines: LINE_COST each)
    if errors == "strict" and limit > held and utf8(body):
        assert [e for piece in reference[0] for e in piece] == model(body)  # type: ignore[index]


class Recorder(DialectDecoder):
    """A dialect that queues each ``_on_event`` call as it is made, and refuses ``[DONE]``: what
    the lanes hand a dialect written against ``_on_event``, errors included."""

    def _on_event(self, sse_type: str | None, data: bytes | bytearray, at: int) -> None:
        if data == b"[DONE]":
            raise PeerProtocolError("refused", offset=at)
        self._queue.append((sse_type, bytes(data), at))  # type: ignore[arg-type]

    def _on_body_end(self) -> None:
        self._terminate(done=self._cut)

    def _complete(self) -> bool:
        return True


@given(live_pieces(), st.data(), st.sampled_from(["strict", "replace"]))
def test_a_dialect_gets_the_same_calls_on_every_path(
    pieces: list[bytes], data: st.DataObject, errors: Errors
) -> None:
    limit = data.draw(st.sampled_from([8 * 1024 * 1024, 12, 40, 64]))
    pull = data.draw(
        st.lists(
            st.sampled_from([False, False, False, True]), min_size=len(pieces), max_size=len(pieces)
        )
    )
    general = Recorder(max_event_size=limit, errors=errors)
    general._framer = GeneralFramer(max_event_size=limit, errors=errors)
    reference = outcome(general, pieces, [True] * len(pieces))
    assert outcome(Recorder(max_event_size=limit, errors=errors), pieces, pull) == reference


@st.composite
def pinged_pieces(draw: st.DrawFn) -> list[bytes]:
    """Simple events, with a space after ``data:`` or without (`SSEFramer.shift`), with
    keep-alive comments between them, one per piece or in pieces cut anywhere: what the quiet
    lanes (`Runs`, `SSEFramer.comment`) and the bare lane take."""
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    main = draw(st.sampled_from(["simple", "nospace"]))
    kinds = st.sampled_from(
        [main] * 4 + ["simple", "empty", "comment", "invalid", "invalid comment", "nospace"]
    )
    if draw(st.booleans()):  # the same keep-alive after each event (a run: `_pinged`), or not
        kinds = st.sampled_from(["simple"] * 12 + ["empty", "comment", "invalid", "two lines"])
    events = [LIVE_EVENTS[draw(kinds)](draw(TEXT), eol) for _ in range(draw(st.integers(0, 20)))]
    if draw(st.booleans()):
        text = draw(st.sampled_from(["keep-alive", "keep-alive", "", "ü", "a:b", "x\ry", "x\ny"]))
        ping = LIVE_EVENTS["comment"](text, eol)
        times = st.sampled_from([1] * 12 + [0, 2])
        events = [part for event in events for part in [event] + [ping] * draw(times)]
    if draw(st.booleans()):
        return events  # one per piece: a live stream's reads (the express)
    body = b"".join(events)
    cuts = sorted(draw(st.lists(st.integers(1, max(len(body) - 1, 1)), max_size=8)))
    return [body[i:j] for i, j in zip([0, *cuts], [*cuts, len(body)], strict=True) if i < j]


@given(pinged_pieces(), st.data(), st.sampled_from(["strict", "replace"]))
def test_the_same_calls_between_keep_alives_and_with_no_space(
    pieces: list[bytes], data: st.DataObject, errors: Errors
) -> None:
    limit = data.draw(st.sampled_from([8 * 1024 * 1024, 40]))
    general = Recorder(max_event_size=limit, errors=errors)
    general._framer = GeneralFramer(max_event_size=limit, errors=errors)
    reference = outcome(general, pieces, [True] * len(pieces))
    by_pull = st.sampled_from([False, False, True])  # the pull API frames with the lane open
    pull = data.draw(st.lists(by_pull, min_size=len(pieces), max_size=len(pieces)))
    lanes = Recorder(max_event_size=limit, errors=errors)
    assert outcome(lanes, pieces, pull) == reference
    items = outcome(general_decoder(limit, errors), pieces, [True] * len(pieces))
    assert outcome(SSEDecoder(max_event_size=limit, errors=errors), pieces, pull) == items


def utf8(body: bytes) -> bool:
    try:
        body.decode()
    except UnicodeDecodeError:
        return False
    return True


def due(prefix: bytes) -> list[SSEItem]:
    """What the model says a stream's first bytes make due: the items of its complete lines (a
    comment as soon as its line ends, an event at its blank line)."""
    end = max(prefix.rfind(b"\n"), prefix.rfind(b"\r"))
    return model(prefix[: end + 1])[:-1]


@given(st.data(), st.booleans())
def test_items_are_due_at_the_piece_that_completes_their_line(
    data: st.DataObject, by_pull: bool
) -> None:
    body = data.draw(streams())
    if data.draw(st.booleans()):  # LF line ends only: the paths that need no CR tracking
        body = body.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    decoder = SSEDecoder()
    got: list[SSEItem] = []
    received = b""
    for piece in data.draw(splits(body)):
        received += piece
        if by_pull:
            decoder.receive_data(piece)
            got += decoder.events()
        else:
            got += decoder.feed(piece)
        assert got == due(received), received


@given(
    st.lists(
        st.sampled_from([b"data: x", b"\r\n", b"\r", b"\n", b"\r\n\r\n", b"y" * 50]), max_size=40
    ),
    st.integers(0, 30),
)
def test_crlf_only_finds_what_counting_finds(parts: list[bytes], start: int) -> None:
    """`_crlf_only` finds the line ends of a long event one by one and counts many: the same
    answer as counting them, whatever the buffer holds and wherever it starts."""
    buf = bytearray(b"".join(parts))
    # (the framer's start is never past the buffer's last CR: it looks again at the last bytes)
    start = min(start, len(buf) - 1 if buf.endswith(b"\r") else len(buf))
    crlf = buf.count(b"\r\n", start)
    expected = (
        buf.count(b"\n", start) == crlf
        and buf.count(b"\r", start) - (buf[-1:] == b"\r") == crlf
        and not buf.endswith(b"\r\n\r")
    )
    assert _crlf_only(buf, start) == expected


def test_crlf_only_counts_many_line_ends() -> None:
    """Past eight line ends `_crlf_only` counts the rest: CRLF throughout, or one bare LF or CR
    among many CRLFs, found either way."""
    many = bytearray(b"data: x\r\n\r\n" * 6)
    assert _crlf_only(many, 0)
    assert _crlf_only(many + b"data: y\r", 0)  # a CR at the very end may meet its LF
    assert not _crlf_only(many + b"data: y\n", 0)
    assert not _crlf_only(many + b"data: y\r\r\n", 0)
    assert not _crlf_only(many + b"\r\n\r", 0)  # a CR that ends a blank line


def unfinished(prefix: bytes) -> int:
    """Bytes of ``prefix`` after its last blank line, the event not whole yet, and `LINE_COST`
    for each of its whole data lines after the first."""
    start = line = lines = 0
    for m in _LINE_END.finditer(prefix):
        if m.start() == line:  # an empty line: the event before it is whole
            start, lines = m.end(), 0
        elif prefix[line : m.start()].split(b":", 1)[0] == b"data":
            lines += 1
        line = m.end()
    return len(prefix) - start + LINE_COST * max(0, lines - 1)


@given(live_pieces(), st.data())
def test_what_a_decoder_holds_of_an_unfinished_event_is_its_length(
    pieces: list[bytes], data: st.DataObject
) -> None:
    """`DialectDecoder.pending` (what a gateway holds against ``--max-partial`` for a
    translated stream) is the length of the event not whole yet, on every path: the express,
    the lanes and the general way. A CR ending a read may end a line or begin a CRLF."""
    pull = data.draw(st.lists(st.booleans(), min_size=len(pieces), max_size=len(pieces)))
    decoder = Recorder()
    prefix = b""
    for piece, pulled in zip(pieces, pull, strict=True):
        try:
            if pulled:
                decoder.receive_data(piece)
                while decoder.next_event() is not NEED_DATA:
                    pass
            else:
                decoder.feed(piece)
        except PeerProtocolError:
            return
        if decoder.error is not None:  # deferred: the events before it came first
            return
        prefix += piece
        want = unfinished(prefix)
        if prefix.endswith(b"\r"):
            assert want - 1 <= decoder.pending <= want + 1, (prefix, decoder.pending)
        else:
            assert decoder.pending == want, (prefix, decoder.pending)
