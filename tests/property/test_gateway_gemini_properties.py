"""Hypothesis: a `GatewaySession` answering a Gemini client (on Gemini's own path) from an
OpenAI upstream, and from a Gemini one, the upstream's answer chunked at any points and read in
any pieces.

Whatever the chunks and reads, the client gets the same answer as from one read: for
``streamGenerateContent?alt=sse`` the same stream (and no SSE comment, which google-genai would
read as JSON), without ``alt=sse`` the same JSON array, for ``:generateContent`` the same status
and whole answer. A Gemini upstream's stream, relayed as one JSON array, is its events' data,
each as it came.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from svir_proto.sse import ServerSentEvent, SSEDecoder
from tests.helpers import CONFORMANCE
from tests.property.test_gateway_relay_properties import HEAD, answers, client_view, served

FIXTURES = sorted((CONFORMANCE / "openai").glob("*.sse"))
BODY = json.dumps(
    {"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
     "tools": [{"functionDeclarations": [{"name": n} for n in ("get_weather", "lookup")]}]}
).encode()  # fmt: skip
TARGETS = {
    "stream": b"/v1beta/models/g:streamGenerateContent?alt=sse",
    "whole": b"/v1beta/models/g:generateContent",
    "array": b"/v1beta/models/g:streamGenerateContent",  # (one JSON array: no alt=sse)
}


def request(how: str) -> bytes:
    return (
        b"POST %s HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (TARGETS[how], len(BODY), BODY)
    )


def seen(how: str, reads: list[bytes], upstream: str = "chat") -> tuple[int, bytes, bool]:
    out = served(request(how), reads, upstream)
    body, ended, _ = client_view(out)
    return int(out.split(b" ", 2)[1]), body, ended


@pytest.mark.parametrize("how", sorted(TARGETS))
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
@given(data=st.data())
def test_a_gemini_client_gets_the_same_answer_whatever_the_reads(
    path: Path, how: str, data: st.DataObject
) -> None:
    body = path.read_bytes()
    want = seen(how, [HEAD + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)])
    assert seen(how, data.draw(answers(body))) == want


@pytest.mark.parametrize("how", sorted(TARGETS))
def test_the_gemini_answers_of_the_recordings_are_geminis(how: str) -> None:
    """The property above is not vacuous: every recording gives a Gemini answer (a stream of
    ``data:`` lines and empty ones only, or one object, or one array of the stream's chunks,
    closed unless cut) or Gemini's error object."""
    statuses = set()
    for path in FIXTURES:
        body = path.read_bytes()
        reads = [HEAD + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)]
        status, answer, ended = seen(how, reads)
        statuses.add(status)
        if how == "stream" and status == 200:
            lines = answer.split(b"\r\n")
            assert all(not line or line.startswith(b"data: ") for line in lines), path.stem
            continue
        if how == "array" and status == 200:
            stream = seen("stream", reads)[1].split(b"\r\n\r\n")
            chunks = [json.loads(c.removeprefix(b"data: ")) for c in stream if c]
            closed = answer.endswith(b"]")  # (an error closes it, though the body be cut)
            assert closed or not ended, path.stem
            assert json.loads(answer if closed else answer + b"]") == chunks, path.stem
            continue
        doc = json.loads(answer)
        assert ("error" in doc) == (status != 200), path.stem
        if status == 200:
            assert "candidates" in doc or "promptFeedback" in doc
    assert 200 in statuses


GEMINI = [p for p in sorted((CONFORMANCE / "gemini").glob("*.sse")) if p.stem != "errors"]


@pytest.mark.parametrize("path", GEMINI, ids=lambda p: p.stem)
@given(data=st.data())
def test_a_gemini_upstreams_array_is_its_events_data_whatever_the_reads(
    path: Path, data: st.DataObject
) -> None:
    """Attack 69 F4: the array a Gemini client asks for of a Gemini upstream is relayed, not
    decoded and encoded again: its elements are the SSE events' data, as they came, and the
    array ends where the upstream's body ended, but for a body that ended inside an event:
    that event is no element (SSE discards it), the array stays open and the body is cut."""
    body = path.read_bytes()
    one = [HEAD + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)]
    want = seen("array", one, "gemini")
    assert seen("array", data.draw(answers(body)), "gemini") == want
    status, array, ended = want
    sse = seen("stream", one, "gemini")[1]
    items = SSEDecoder().feed(sse)  # (what the SSE client reads: an event cut short, not)
    events = [i.data.encode() for i in items if isinstance(i, ServerSentEvent) and i.data.strip()]
    assert status == 200
    cut = not body.endswith((b"\n\n", b"\r\r", b"\r\n\r\n"))  # (inside an event)
    assert ended is not cut  # (attack 75 F3: a closed array said such a stream had ended)
    assert array == b"[" + b",\r\n".join(events) + (b"" if cut else b"\r\n]" if events else b"]")
    assert json.loads(array + b"\r\n]" if cut else array) == [json.loads(e) for e in events]
