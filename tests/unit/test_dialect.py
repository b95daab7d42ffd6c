"""DialectDecoder: what its hooks are handed on the fast lanes, typed events above all."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from svir_proto import PeerProtocolError
from svir_proto._dialect import DialectDecoder
from tests.helpers import bytewise

Call = tuple[str | None, bytes, int]


class Recorder(DialectDecoder):
    """A dialect that queues each ``_on_event`` call, and refuses the payload ``bad``."""

    def _on_event(self, sse_type: str | None, data: bytes | bytearray, at: int) -> None:
        if data == b"bad":
            raise PeerProtocolError("refused", offset=at)
        if data == b"bug":
            raise RuntimeError("a bug in the dialect")
        self._queue.append((sse_type, bytes(data), at))  # type: ignore[arg-type]

    def _on_body_end(self) -> None:
        self._terminate(done=True)

    def _complete(self) -> bool:
        return True


class OwnHook(Recorder):
    """A dialect that reads runs of typed events itself."""

    def _on_typed(
        self, at: int, types: Sequence[str], payloads: Sequence[bytes | bytearray], eol: int
    ) -> None:
        self._queue.append(("run", at, list(types), [bytes(p) for p in payloads], eol))  # type: ignore[arg-type]


def calls(pieces: list[bytes], decoder: DialectDecoder | None = None) -> list[object]:
    d = decoder or Recorder()
    out: list[object] = []
    for p in pieces:
        out += d.feed(p)
    return out + d.close()[:-1]  # the StreamEnded left out


def body_of(eol: bytes) -> tuple[bytes, list[Call]]:
    """A stream of typed events, and the calls it makes, offsets counted by hand."""
    events = [(b"message_start", b"{}"), (b"content_block_delta", b'{"t":"Hi"}'), (b"x", b"")]
    body = b""
    expected: list[Call] = []
    for name, data in events:
        head = b"event: " + name + eol + b"data: "
        expected.append((name.decode(), data, len(body) + len(head)))
        body += head + data + eol + eol
    return body, expected


@pytest.mark.parametrize("eol", [b"\n", b"\r\n"])
def test_typed_events_reach_on_event_with_the_general_paths_arguments(eol: bytes) -> None:
    body, expected = body_of(eol)
    one_per_read = [block + 2 * eol for block in body.split(2 * eol) if block]
    for pieces in ([body], bytewise(body), one_per_read, [body[:40], body[40:]]):
        assert calls(pieces) == expected  # the first piece goes the general way
        # with the lanes open: the express, the run, and runs cut anywhere
        opened = calls([b"data: open" + 2 * eol, *pieces])
        assert opened[0] == (None, b"open", 6)
        shift = 10 + 2 * len(eol)
        assert opened[1:] == [(t, d, at + shift) for t, d, at in expected]


def test_a_dialect_may_read_the_runs_itself() -> None:
    body, _ = body_of(b"\n")
    first = body.index(b"\n\n") + 2  # the first event's length
    open_ = b"data: open\n\n"
    got = calls([open_, body[:-2], b"\n\n"], OwnHook())
    types = ["message_start", "content_block_delta"]
    assert got[1:] == [
        ("run", 12, types, [b"{}", b'{"t":"Hi"}'], 1),
        ("run", 12 + len(body) - len(b"event: x\ndata: \n\n"), ["x"], [b""], 1),
    ]
    # the express hands a piece of one event to _on_event, as the general path would
    assert calls([open_, body[:first]], OwnHook())[1] == ("message_start", b"{}", 12 + 27)


def test_an_error_in_a_run_comes_after_the_calls_before_it() -> None:
    d = Recorder()
    d.feed(b"data: open\n\n")
    run = b"event: a\ndata: 1\n\nevent: b\ndata: bad\n\nevent: c\ndata: 3\n\n"
    assert d.feed(run) == [("a", b"1", 12 + 15)]
    with pytest.raises(PeerProtocolError) as info:
        d.feed(b"event: d\ndata: 4\n\n")
    assert info.value.offset == 12 + 18 + 15
    d = Recorder()
    d.feed(b"data: open\n\n")
    with pytest.raises(PeerProtocolError):
        d.feed(b"event: a\ndata: bad\n\n")  # the express: nothing before it
    d = Recorder()
    d.feed(b"data: open\n\n")
    with pytest.raises(RuntimeError):
        d.feed(b"event: a\ndata: bug\n\n")
    assert isinstance(d.error, RuntimeError)
