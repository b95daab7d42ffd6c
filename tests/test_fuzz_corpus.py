"""Replay every fuzz corpus through its harness's invariant, without atheris."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from svir_proto import PeerProtocolError
from svir_proto._chunked import ChunkedReader
from svir_proto.gateway import Forward, GatewayConfig, GatewayConnection
from svir_proto.openai import Endpoint
from svir_proto.sse import ServerSentEvent
from tests.helpers import ROOT

FUZZ = ROOT / "fuzz"
TARGETS = sorted(p for p in FUZZ.glob("fuzz_*.py"))


def load(path: Path) -> ModuleType:
    sys.path.insert(0, str(FUZZ))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CASES = [
    (t, f)
    for t in TARGETS
    for f in sorted((FUZZ / "corpus" / t.stem.removeprefix("fuzz_")).iterdir())
]
OPEN: dict[str, str] = {}
"""Seeds of finds not fixed yet (``corpus-dir/seed``: why): strict xfails until they are."""


def _case(target: Path, seed: Path) -> object:
    why = OPEN.get(f"{seed.parent.name}/{seed.name}")
    marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
    return pytest.param(target, seed, marks=marks, id=f"{target.stem}/{seed.name}")


def test_every_target_has_a_corpus() -> None:
    assert TARGETS
    for t in TARGETS:
        corpus = FUZZ / "corpus" / t.stem.removeprefix("fuzz_")
        assert corpus.is_dir(), f"{t.name} has no corpus"
        assert any(corpus.iterdir()), f"{t.name} has an empty corpus"


@pytest.mark.parametrize(("target", "seed"), [_case(t, f) for t, f in CASES])
def test_replay(target: Path, seed: Path) -> None:
    load(target).test_one_input(seed.read_bytes())


def test_the_invariant_can_fail() -> None:
    harness = load(FUZZ / "_harness.py")

    class Flaky:  # gives different results whole and bytewise: the check must notice
        def __init__(self) -> None:
            self.calls = 0

        def feed(self, data: bytes) -> list[object]:
            self.calls += 1
            return [self.calls]

        def close(self) -> list[object]:
            return []

    with pytest.raises(AssertionError, match="differ"):
        harness.check(Flaky, b"\x00ab")  # cut in two by its first byte


def test_fuzz_crash_adjacent_comments_are_not_joined() -> None:
    """fuzz/corpus/sse/crash-adjacent-comments: the harness joined any adjacent items with a
    text field, and two comments in a row (NamedTuples) cannot be joined that way. Only deltas
    of one kind are joined now; comments stay apart."""
    harness = load(FUZZ / "_harness.py")
    from svir_proto import SSEComment, TextDelta

    items = [SSEComment(text="a"), SSEComment(text="b"), TextDelta(text="x"), TextDelta(text="y")]
    assert harness.normalise(items) == [
        SSEComment(text="a"),
        SSEComment(text="b"),
        TextDelta(text="xy"),
    ]
    load(FUZZ / "fuzz_sse.py").test_one_input(
        (FUZZ / "corpus" / "sse" / "crash-adjacent-comments").read_bytes()
    )


def test_fuzz_crash_items_after_a_batch_before_a_framing_error() -> None:
    """fuzz/corpus/sse/crash-items-after-a-batch-before-a-framing-error: a piece framed a run
    of events (one batch item), then a comment, then a comment that is not UTF-8. `SSEDecoder`
    took the framing error for an error of the batch and stopped after the batch: the first
    comment, framed before the error, was lost, as it was not when the events came one item
    each (the body whole). Every item framed before the error is delivered now."""
    from svir_proto import PeerProtocolError, SSEComment, SSEDecoder

    d = SSEDecoder()
    got = d.feed(b"data: 0\n\ndata: 1\n\ndata\x8d\n: tid: 1\n: ti\xcf: 1\nr\n")
    assert got[-1] == SSEComment(text="tid: 1")
    with pytest.raises(PeerProtocolError) as info:
        d.feed(b"x\n\n")
    assert info.value.offset == 37
    load(FUZZ / "fuzz_sse.py").test_one_input(
        (FUZZ / "corpus" / "sse" / "crash-items-after-a-batch-before-a-framing-error").read_bytes()
    )


def test_fuzz_crash_decoder_error_before_framing_error() -> None:
    """fuzz/corpus/connection/crash-decoder-error-before-framing-error: a chunked body whose
    second event is not JSON, and whose chunk sizes break further on. Fed whole, the chunked
    reader's error (later in the bytes) was raised and the decoder's (earlier) was lost; fed in
    pieces, the decoder's came first. The connection now raises the decoder's error as soon as
    the body that carries it is decoded, whole or in pieces."""
    from svir_proto import PeerProtocolError

    target = load(FUZZ / "fuzz_connection.py")
    data = (
        FUZZ / "corpus" / "connection" / "crash-decoder-error-before-framing-error"
    ).read_bytes()
    conn = target.make()
    assert len(conn.feed(data)) == 3  # the head, the start, the reasoning; then the error
    with pytest.raises(PeerProtocolError, match="not JSON") as info:
        conn.close()
    assert info.value.offset == 273
    target.test_one_input(data)


def test_fuzz_crash_events_after_a_closing_reply() -> None:
    """fuzz/corpus/gateway/crash-events-after-a-closing-reply: a request the gateway refuses
    (415) with Connection: close. Fed whole, the gateway went on reading the request after its
    terminal Reply and emitted ClientClosed twice; fed in pieces, nothing followed the Reply.
    Nothing is read after the terminal event now."""
    from svir_proto.gateway import Reply

    target = load(FUZZ / "fuzz_gateway.py")
    data = (FUZZ / "corpus" / "gateway" / "crash-events-after-a-closing-reply").read_bytes()
    conn = target.make()
    events = conn.feed(data) + conn.close()
    assert [type(e) for e in events] == [Reply]
    target.test_one_input(data)


def test_fuzz_crash_pending_events_returned_twice() -> None:
    """fuzz/corpus/connection/crash-pending-events-returned-twice: the decoder raised at the end
    of the body with one event pending; the connection returned that event, then raised the
    same error again still carrying it, so a caller that collects ``pending_events`` (as it
    should) saw the event twice. An error's pending events are emptied once returned."""
    from svir_proto import PeerProtocolError, ReasoningDelta

    target = load(FUZZ / "fuzz_connection.py")
    harness = load(FUZZ / "_harness.py")
    data = (FUZZ / "corpus" / "connection" / "crash-pending-events-returned-twice").read_bytes()
    events, error, result = harness.outcome(target.make(), harness.cuts(data))
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    assert reasoning == result.reasoning
    assert error == (682, None)
    conn = target.make()
    conn.feed(data)
    with pytest.raises(PeerProtocolError) as info:
        conn.close()
    assert info.value.pending_events == ()
    target.test_one_input(data)


def test_fuzz_crash_crlf_lane_waits_for_lf_blank_line() -> None:
    """fuzz/corpus/connection/crash-crlf-lane-waits-for-lf-blank-line: a body that switches
    from CRLF to LF line ends. The SSE framer's CRLF lane looked only for CRLF blank lines, so
    an event ended by LFs waited for the end of the body when the bytes came in pieces (its
    JSON error with it, then lost to the connection's close). The lane hands any other line
    end to the general way now; tests/property/test_sse_properties.py checks that every event
    comes out at the piece that completes it."""
    from svir_proto.sse import SSEDecoder

    d = SSEDecoder()
    assert d.feed(b"data: a\r\n\r\n") == [ServerSentEvent(data="a")]
    assert d.feed(b"data: b\n\n") == [ServerSentEvent(data="b")]  # at once, not at the end
    assert d.feed(b"data: c\r\n\r") == [ServerSentEvent(data="c")]  # a CR alone ends a line
    target = load(FUZZ / "fuzz_connection.py")
    target.test_one_input(
        (FUZZ / "corpus" / "connection" / "crash-crlf-lane-waits-for-lf-blank-line").read_bytes()
    )


def test_fuzz_crash_oversized_invalid_head() -> None:
    """fuzz/corpus/gateway/crash-oversized-invalid-head: a request head over max_head_size
    that is also invalid. Read whole, h11 refused it as invalid (400); read in pieces, its
    buffer filled first (431). A head past the bound is 431 either way now."""
    target = load(FUZZ / "fuzz_gateway.py")
    data = (FUZZ / "corpus" / "gateway" / "crash-oversized-invalid-head").read_bytes()
    conn = target.make()
    (reply,) = conn.feed(data)
    assert reply.data.startswith(b"HTTP/1.1 431 ")
    target.test_one_input(data)


def test_fuzz_crash_comment_due_at_its_line_end() -> None:
    """fuzz/corpus/connection/crash-comment-due-at-its-line-end: with no CR in the buffer the
    SSE framer applied whole events at once and left the rest for later, so a comment line
    (here holding invalid UTF-8) completed without a blank line after it was applied at the
    next blank line or the end of the body: its error was lost when the connection then
    closed short of its Content-Length. The rest's complete lines are applied at once now;
    tests/property/test_sse_properties.py checks every item against what the model says the
    bytes received so far make due."""
    from svir_proto.sse import SSEComment, SSEDecoder

    d = SSEDecoder()
    assert d.feed(b"\n") == []
    assert d.feed(b": a\n") == [SSEComment(text="a")]  # at its line end, not the blank line's
    assert d.feed(b"data: x\n: b\n") == [SSEComment(text="b")]
    with pytest.raises(PeerProtocolError, match="invalid UTF-8") as caught:
        d.feed(b": \xa2\n")
    assert caught.value.offset == 19
    load(FUZZ / "fuzz_connection.py").test_one_input(
        (FUZZ / "corpus" / "connection" / "crash-comment-due-at-its-line-end").read_bytes()
    )


def test_fuzz_crash_body_on_a_get() -> None:
    """fuzz/corpus/gateway/crash-body-on-a-get: ``GET /v1/models`` with a Content-Length body
    tripped an assertion that only a chat request has a body. A GET's body is read and
    dropped (tests/unit/test_gateway.py: test_a_body_on_a_get_is_read_and_dropped)."""
    target = load(FUZZ / "fuzz_gateway.py")
    data = (FUZZ / "corpus" / "gateway" / "crash-body-on-a-get").read_bytes()
    from svir_proto import Forward, PassThrough

    (forward,) = target.make().feed(data)
    assert isinstance(forward, Forward)
    assert isinstance(forward.request, PassThrough)
    assert (forward.request.method, forward.request.target) == ("GET", "/models")
    target.test_one_input(data)


def test_fuzz_crash_oversized_head_invalid_from_its_first_byte() -> None:
    """fuzz/corpus/gateway/crash-oversized-head-invalid-from-its-first-byte: a head over
    max_head_size whose first byte is NUL. In pieces, h11 refused it at that first byte (400,
    "illegal request line"); whole, the size rule of crash-oversized-invalid-head made it 431.
    A head invalid from its first byte is 400 whatever its length now."""
    target = load(FUZZ / "fuzz_gateway.py")
    data = FUZZ / "corpus" / "gateway" / "crash-oversized-head-invalid-from-its-first-byte"
    (reply,) = target.make().feed(data.read_bytes())
    assert reply.data.startswith(b"HTTP/1.1 400 ")
    target.test_one_input(data.read_bytes())


def test_fuzz_crash_oversized_invalid_response_head() -> None:
    """fuzz/corpus/connection/crash-oversized-invalid-head: the client's mirror of the
    gateway's crash-oversized-invalid-head. A response head over max_head_size that is also
    invalid was "bad HTTP" read whole (h11 saw all of it) and too large in pieces (its buffer
    filled first); it is too large either way now (tests/unit/test_connection.py)."""
    target = load(FUZZ / "fuzz_connection.py")
    data = (FUZZ / "corpus" / "connection" / "crash-oversized-invalid-head").read_bytes()
    conn = target.make()
    with pytest.raises(PeerProtocolError) as info:
        conn.feed(data)
    assert info.value.limit == "max_head_size"
    target.test_one_input(data)


def test_fuzz_crash_tool_choice_not_declared() -> None:
    """fuzz/corpus/responsesrequest/crash-tool-choice-not-declared: a Responses request whose
    tool_choice names a function it does not declare (here: no tools at all). The parser let
    it through and the constructor refused it, so a ValueError escaped ``parse``. The rule is
    the parser's now (the API refuses such a request too): a RequestError at its path."""
    from svir_proto.llmstream import RequestError
    from svir_proto.responses import ResponsesRequest

    data = (FUZZ / "corpus" / "responsesrequest" / "crash-tool-choice-not-declared").read_bytes()
    with pytest.raises(RequestError) as info:
        ResponsesRequest.parse(data)
    assert info.value.path == "$.tool_choice.name"
    load(FUZZ / "fuzz_responsesrequest.py").test_one_input(data)


def test_fuzz_crash_relayed_header_with_obs_text() -> None:
    """fuzz/corpus/gateway_session/crash-relayed-header-with-obs-text: an upstream head whose
    value holds bytes over 0x7f (obs-text, RFC 9110 5.5), relayed: h11 took the value as a
    ``str`` and raised UnicodeEncodeError out of the session. The value goes on as its bytes."""
    target = load(FUZZ / "fuzz_gateway_session.py")
    seed = FUZZ / "corpus" / "gateway_session" / "crash-relayed-header-with-obs-text"
    target.test_one_input(seed.read_bytes())
    conn = GatewayConnection(GatewayConfig(upstream=Endpoint.parse("http://u.test")))
    body = b'{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}'
    conn.receive_data(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: g\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    while not isinstance(conn.next_event(), Forward):
        pass
    head = conn.relay_head(200, (("content-type", "text/event-stream"), ("x-note", "caf\xe9")))
    assert b"\r\nx-note: caf\xe9\r\n" in head


def test_fuzz_crash_chunk_footer_named_by_the_reads() -> None:
    """fuzz/corpus/gateway/crash-chunk-footer-named-by-the-reads: a chunk whose data is
    followed by ``1\\r`` where its CRLF belongs. The error quoted what the read held of the
    footer (``'1\\r'`` whole, ``'1'`` cut), so the client's 400 depended on the split. It names
    the first wrong byte now."""
    target = load(FUZZ / "fuzz_gateway.py")
    target.test_one_input(
        (FUZZ / "corpus" / "gateway" / "crash-chunk-footer-named-by-the-reads").read_bytes()
    )

    def error(*reads: bytes) -> str:
        reader = ChunkedReader(max_line=100)
        try:  # the data before the fault comes out first, then the error (at the next feed)
            for data in (*reads, b""):
                reader.feed(data)
        except PeerProtocolError as exc:
            return str(exc)
        raise AssertionError("the fault was not seen")

    wire = b"3\r\nabc1\r\n"
    messages = {error(wire[:at], wire[at:]) for at in range(len(wire) + 1)}
    assert len(messages) == 1
    assert "b'1' where b'\\r' belongs" in messages.pop()


def test_fuzz_crash_max_output_tokens_beyond_64_bits() -> None:
    """fuzz/corpus/gemini_request/crash-max-output-tokens-beyond-64-bits: ``maxOutputTokens``
    801867440737095516160 reads as a float (`svir_proto._json` Rule 2), which proto3 takes for
    an integer, as it takes ``4.0`` (request Rule 4); `to_hub` passed the float on and the
    hub's request, which wants an integer, raised. An integral float is the integer now."""
    from svir_proto.gemini import GeminiRequest
    from svir_proto.gemini.hub import to_hub

    for value in (b"4.0", b"801867440737095516160"):
        body = b'{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"maxOutputTokens":%s}}'
        request = GeminiRequest.parse(body % value, model="m")
        assert to_hub(request).parameters["max_tokens"] == int(float(value))
    budget = b'{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"thinkingConfig":'
    budget += b'{"thinkingBudget":2048.0,"includeThoughts":true}}}'
    hub = to_hub(GeminiRequest.parse(budget, model="m"))
    assert hub.extensions["vendor:svir"]["reasoning"]["budget_tokens"] == 2048
    assert type(hub.extensions["vendor:svir"]["reasoning"]["budget_tokens"]) is int
    load(FUZZ / "fuzz_gemini_request.py").test_one_input(
        (FUZZ / "corpus" / "gemini_request" / "crash-max-output-tokens-beyond-64-bits").read_bytes()
    )


def test_fuzz_crash_a_request_read_after_the_client_paused() -> None:
    """fuzz/corpus/gateway_session/crash-a-request-read-after-the-client-paused: the client's
    socket filled once an answer was whole (the session holds a slot for it until the client
    reads it), and a pipelined request that a read already under way brought in was admitted
    beside it: two slots for one client, which the harness's invariant (one) called a leak.
    It is bounded (the transport reads nothing more until the client resumes; the new
    upstream starts paused, and the client loses it after send_timeout), and every slot comes
    back: the invariant is two now, and what the client leaves is checked to be nothing."""
    harness = load(FUZZ / "fuzz_gateway_session.py")
    seed = FUZZ / "corpus" / "gateway_session" / "crash-a-request-read-after-the-client-paused"
    driver = harness.Driver()
    peak = 0
    for op, payload in harness.steps(seed.read_bytes()):
        driver.step(op, payload)
        peak = max(peak, driver.state.streams)
    assert peak == 2  # what the old invariant refused
    driver.finish()  # nothing held once the client goes
