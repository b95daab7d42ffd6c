"""Runs of text deltas (svir_proto/openai/_runs.py, `TextRun`, `LLMStreamEncoder.deltas`,
`OpenAIToLLMStream.encode_run`, the gateway): what each rule takes into a run, what it leaves
to the general way, and that the bytes are the event-by-event bytes either way."""

from __future__ import annotations

import json
from typing import Any

import pytest

from svir_proto import (
    CallerProtocolError,
    ClientConnection,
    Endpoint,
    Exchange,
    Failure,
    FailureKind,
    PeerProtocolError,
    StreamEnded,
    StreamFailed,
    StreamStarted,
    TextDelta,
    TextRun,
    ToolCall,
)
from svir_proto.events import text_run
from svir_proto.gateway import GatewayConnection
from svir_proto.llmstream.encoder import LLMStreamEncoder
from svir_proto.openai import ChatRequest, ChatStreamDecoder, UserMessage
from svir_proto.openai._runs import BLOCK, FLOOR, ChatStreamRuns
from svir_proto.openai.watch import ChatStreamWatcher
from svir_proto.translate import OpenAIToLLMStream

HEAD = b'data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,'
ROLE = HEAD + b'"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n'
FINISH = HEAD + b'"delta":{},"finish_reason":"stop"}]}\n\n'
USAGE = b'data: {"id":"c1","choices":[],"usage":{"prompt_tokens":2,"completion_tokens":3}}\n\n'
DONE = b"data: [DONE]\n\n"


def body(text: bytes) -> bytes:
    """A chunk of content whose JSON string's body is ``text``, as a server writes it."""
    return HEAD + b'"delta":{"content":"' + text + b'"},"finish_reason":null}]}\n\n'


def content(text: str, *, ascii: bool = False) -> bytes:
    """A chunk of content ``text``, its JSON as Python writes it (``ascii``: escaping all that
    is not ASCII, as mlx-lm's server does)."""
    return body(json.dumps(text, ensure_ascii=ascii)[1:-1].encode("utf-8", "surrogatepass"))


def stream(*chunks: bytes, end: bytes = FINISH + USAGE + DONE) -> bytes:
    return ROLE + b"".join(chunks) + end


def decode(decoder: ChatStreamDecoder, pieces: list[bytes]) -> tuple[list[Any], object]:
    events: list[Any] = []
    error = None
    try:
        for piece in pieces:
            events += decoder.feed(piece)
        events += decoder.close()
    except PeerProtocolError as exc:
        events += exc.pending_events
        error = str(exc), exc.offset
    return events, error


def expanded(events: list[Any]) -> list[Any]:
    return [d for e in events for d in (e.deltas() if type(e) is TextRun else [e])]


def translated(events: list[Any]) -> bytes:
    out = OpenAIToLLMStream(model="m", request_id="r", created=1)
    return b"".join(out.encode_run(e) if type(e) is TextRun else out.feed(e) for e in events)


def same(data: bytes, *, pieces: list[bytes] | None = None, **options: Any) -> list[Any]:
    """The events of `ChatStreamRuns` for ``data``: checked against `ChatStreamDecoder`'s
    (``keep_text=False``), their result, error and LLM-Stream bytes."""
    runs = ChatStreamRuns(**options)
    plain = ChatStreamDecoder(keep_text=False, **options)
    got, error = decode(runs, pieces or [data])
    want, want_error = decode(plain, [data])
    assert expanded(got) == want
    assert (error, runs.result) == (want_error, plain.result)
    assert translated(got) == translated(want)
    return got


def kinds(events: list[Any]) -> list[str]:
    return [f"run of {e.count}" if type(e) is TextRun else type(e).__name__ for e in events]


@pytest.fixture(autouse=True)
def _backends(json_backend: object) -> None:
    """Every test with each JSON backend (conftest.json_backend)."""


def test_a_run_of_plain_content_is_one_event_of_its_bodies() -> None:
    words = ["the", " 🙂", " Grüße", " \U0010ffff", " <b>"]
    events = same(stream(*(content(w) for w in words)), think_tags=False)
    assert kinds(events) == ["StreamStarted", "run of 5", "Finished", "Usage", "StreamEnded"]
    run = events[1]
    assert run.bodies == "\n".join(words).encode()
    assert type(run.bodies) is bytes


def test_a_run_is_read_whole_or_in_any_pieces() -> None:
    data = stream(*(content(f" {i}") for i in range(200)))
    for size in (1, 7, 150, 4096):
        pieces = [data[i : i + size] for i in range(0, len(data), size)]
        same(data, pieces=pieces)


def test_escapes_both_backends_write_are_copied() -> None:
    texts = ["a\nb", 'say "hi"', "back\\slash", "\t\b\f\r", "\x00\x01\x0b\x1f", "\x7f\u2028"]
    events = same(stream(*(content(t) for t in texts)))
    assert kinds(events)[1] == "run of 6"
    assert [d.text for d in events[1].deltas()] == texts


@pytest.mark.parametrize(
    "text",
    [b"caf\\u00e9", b"a\\/b", b"\\u001F", b"\\u0008", b"\\u0041", b"\\ud83d\\ude00"],
)
def test_escapes_the_backends_write_otherwise_go_the_general_way(text: bytes) -> None:
    events = same(stream(content("a"), content("b"), body(text), content("c"), content("d")))
    assert kinds(events)[1:5] == ["run of 2", "TextDelta", "run of 2", "Finished"]


@pytest.mark.parametrize("text", [b"\\ud800", b"\xff", b"ab\xc3", b"\xed\xa0\x80", b"x\ty"])
@pytest.mark.parametrize("errors", ["strict", "replace"])
def test_text_that_is_not_text_goes_the_general_way(text: bytes, errors: str) -> None:
    """Lone surrogates, invalid UTF-8, raw control characters: the general way refuses them
    where it would (the same error at the same offset), or mends them (``replace``)."""
    same(stream(content("a"), content("b"), body(text), content("c")), errors=errors)


def test_a_body_ending_in_an_escaped_quote_is_not_taken_for_a_string() -> None:
    same(stream(content("a"), content("b"), body(b'x\\"'), body(b"\\"), content("c")))


def test_empty_content_is_counted_and_gives_no_text() -> None:
    data = stream(content(""), content("a"), content(""), content(""), content("b"), content(""))
    events = same(data)
    assert kinds(events)[1] == "run of 2"
    assert events[1].bodies == b"a\nb"
    assert kinds(same(stream(content(""), content(""), content("")))) == [
        "StreamStarted",
        "Finished",
        "Usage",
        "StreamEnded",
    ]


def test_think_markers_end_a_run_and_no_run_is_made_inside() -> None:
    rest = [content(c) for c in "cdefghijklmn"]
    data = stream(
        content("a"),
        content("b"),
        content("<think>"),
        content("x"),
        content("y"),
        content("</th"),
        content("ink>"),
        *rest,
        content("a < b"),
        *rest,
    )
    events = same(data)
    assert kinds(events)[:2] == ["StreamStarted", "run of 2"]
    last = max(i for i, e in enumerate(events) if type(e) is TextDelta)
    assert events[last].text == "a < b"  # read the general way: it may open a marker
    after = {type(e).__name__ for e in events[last + 1 : -3]}
    assert after == {"TextRun"}  # runs again, as before it and soon after </think>
    assert kinds(same(data, think_tags=False))[1] == "run of 32"
    opened = same(data, think_opened=True)
    assert kinds(opened)[:3] == ["StreamStarted", "ReasoningDelta", "ReasoningDelta"]


@pytest.mark.parametrize("where", ["head", "tail"])
def test_an_envelope_with_padding_makes_no_runs(where: str) -> None:
    pad = b',"obfuscation":"Ab3"'

    def padded(chunk: bytes) -> bytes:
        if where == "head":
            return chunk.replace(b',"model"', pad + b',"model"')
        return chunk.replace(b"]}\n\n", b"]" + pad + b"}\n\n")

    events = same(b"".join(padded(c) for c in [ROLE, content("a"), content("b"), FINISH]))
    assert "TextRun" not in {type(e).__name__ for e in events}


def test_a_quiet_verdict_repeated_is_counted_in_a_run_and_news_ends_it() -> None:
    safe = b',"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}'
    low = b',"content_filter_results":{"hate":{"filtered":false,"severity":"low"}}'

    def judged(chunk: bytes, verdict: bytes) -> bytes:
        return chunk.replace(b',"finish_reason"', verdict + b',"finish_reason"')

    quiet = [judged(content(t), safe) for t in "abcd"]
    events = same(stream(*quiet, judged(content("e"), low), *quiet))
    assert kinds(events)[1:4] == ["TextDelta", "FilterVerdict", "run of 3"]
    decoder = ChatStreamRuns()
    decoder.feed(stream(*quiet))
    assert decoder.result.filter_repeats == 3


def test_what_is_no_repeat_of_the_envelope_goes_the_general_way() -> None:
    """A chunk shorter than the envelope's two ends, one whose end differs, another id, a
    second choice, a chunk that is not JSON: each is the decoder's, as ever."""
    short = HEAD + b'"delta":{"content":"\n\n'  # the envelope's ends overlap: no content
    other_end = body(b"x").replace(b'"finish_reason":null', b'"finish_reason":null,"k":1')
    renamed = body(b"y").replace(b'"c1"', b'"c2"')
    for odd in (other_end, renamed, body(b"z").replace(b'"index":0', b'"index":1'), short):
        same(stream(content("a"), content("b"), odd, content("c"), content("d")))
    same(stream(content("a"), content("b"), b"data: {bad\n\n", content("c")))
    same(stream(content("a"), b"data: [DONE]\n\n", content("b"), content("c")))


def test_blocks_grow_to_the_bound_and_shrink_after_a_run_ends() -> None:
    decoder = ChatStreamRuns()
    events = decoder.feed(stream(*(content("a") for _ in range(3 * BLOCK)), end=b""))
    assert [e.count for e in events if type(e) is TextRun] == [BLOCK, BLOCK, BLOCK]
    assert decoder._reach == BLOCK
    decoder.feed(content("b") * 20 + body(b"\\u00e9"))
    assert decoder._reach == 2 * 20 + 1
    decoder.feed(body(b"\\u00e9") * 2)
    assert decoder._reach == FLOOR
    decoder.feed(content("c") * 3)
    assert decoder._reach == 2 * FLOOR


def test_one_chunk_a_read_is_the_decoders_way() -> None:
    """A live stream's reads, an event each (the express): no run to make."""
    data = stream(*(content(f"{i}") for i in range(5)))
    pieces = [e + b"\n\n" for e in data.split(b"\n\n") if e]
    events = same(data, pieces=pieces)
    assert "TextRun" not in {type(e).__name__ for e in events}


def test_keep_text_is_refused() -> None:
    with pytest.raises(ValueError, match="keep_text"):
        ChatStreamRuns(keep_text=True)
    with pytest.raises(ValueError, match="keep_text=False"):
        ClientConnection(Endpoint.parse("http://x"), text_runs=True)
    with pytest.raises(TypeError, match="text_runs must be a bool"):
        ClientConnection(Endpoint.parse("http://x"), keep_text=False, text_runs=1)  # type: ignore[arg-type]


@pytest.mark.parametrize(("relay", "kind"), [(False, ChatStreamRuns), (True, ChatStreamWatcher)])
def test_an_exchange_with_text_runs_decodes_with_runs_unless_it_relays(
    relay: bool, kind: type
) -> None:
    from svir_proto.exchange import PassThrough

    request: Any = (
        PassThrough(content_length=2, relay=True)
        if relay
        else ChatRequest(model="m", messages=[UserMessage(content="hi")])
    )
    exchange = Exchange(Endpoint.parse("http://x"), request, keep_text=False, text_runs=True)
    exchange.receive_head(200, [("content-type", "text/event-stream")])
    assert type(exchange._decoder) is kind
    events = exchange.receive_body(stream(*(content(w) for w in "abc")))
    assert [type(e).__name__ for e in events][1:3] == (
        ["TextRun", "Finished"] if not relay else ["Finished", "Usage"]
    )


# -- the run, as an event ------------------------------------------------------------------


def test_a_run_stands_for_its_deltas() -> None:
    run = text_run(b'a\n\\"q\\"\n\\u001f\\n\n\xf0\x9f\x99\x82', 4)
    assert run == TextRun(bodies=run.bodies, count=4)
    assert run.deltas() == [
        TextDelta(text="a"),
        TextDelta(text='"q"'),
        TextDelta(text="\x1f\n"),
        TextDelta(text="🙂"),
    ]


# -- the encoders ---------------------------------------------------------------------------

RUN = text_run(b'a\n50%\n%d%%\n\\n\\"\n\xc3\xa9', 5)


def test_the_encoder_writes_a_run_as_it_writes_its_deltas() -> None:
    a, b = LLMStreamEncoder(request_id="r"), LLMStreamEncoder(request_id="r")
    start = StreamStarted(response_id="x", model="m", created=1)
    assert a.encode(start) == b.encode(start)
    assert a.deltas(RUN) == b"".join(b.encode(d) for d in RUN.deltas())  # the first: a template
    assert a.deltas(RUN) == b"".join(b.encode(d) for d in RUN.deltas())
    one = text_run(b"x", 1)
    assert a.deltas(one) == b.encode(TextDelta(text="x"))
    assert a.seq == b.seq == 12


def test_the_encoder_refuses_a_run_where_it_refuses_a_delta() -> None:
    encoder = LLMStreamEncoder()
    with pytest.raises(CallerProtocolError, match=r"cannot send content\.delta in state IDLE"):
        encoder.deltas(RUN)
    encoder.start(model="m", created=1)
    encoder.stop("end_turn")
    with pytest.raises(CallerProtocolError, match=r"after its content\.stop"):
        encoder.deltas(RUN)
    assert encoder.seq == 2


def test_the_translator_holds_or_drops_a_run_as_it_does_deltas() -> None:
    failed = StreamFailed(error=Failure(kind=FailureKind.SERVER_ERROR, message="x"))
    for before in ([], [StreamStarted(response_id="x", model="m")], [failed]):
        a, b = OpenAIToLLMStream(model="m"), OpenAIToLLMStream(model="m")
        got = b"".join(a.feed(e) for e in before) + a.encode_run(RUN)
        want = b"".join(b.feed(e) for e in [*before, *RUN.deltas()])
        end = StreamEnded(complete=False, done=True)
        assert got + a.feed(end) == want + b.feed(end)


# -- the gateway ----------------------------------------------------------------------------


REQUESTS = {  # a streaming request of each client dialect: (path, media type, body)
    "llm-stream": ("/v1/chat/completions", "application/llm-request+json", {"version": "1.0"}),
    "messages": ("/v1/messages", "application/json", {"max_tokens": 9}),
    "responses": ("/v1/responses", "application/json", {"input": "hi"}),
    "openai": ("/v1/chat/completions", "application/json", {}),
}


def client(dialect: str) -> GatewayConnection:
    """A gateway that has read a client's request in ``dialect``."""
    path, media, extra = REQUESTS[dialect]
    doc: dict[str, Any] = {"model": "m", "stream": True, **extra}
    if "input" not in doc:
        doc["messages"] = [{"role": "user", "content": "hi"}]
    data = json.dumps(doc).encode()
    head = f"POST {path} HTTP/1.1\r\nHost: gw\r\nContent-Type: {media}\r\n"
    conn = GatewayConnection()
    events = conn.feed(head.encode() + b"Content-Length: %d\r\n\r\n%s" % (len(data), data))
    assert conn.dialect == dialect
    assert not any(type(e).__name__ == "Reply" for e in events)
    return conn


@pytest.mark.parametrize("dialect", ["llm-stream", "messages", "responses", "openai"])
@pytest.mark.parametrize("first", [True, False])
def test_the_gateway_writes_a_run_as_its_deltas(dialect: str, first: bool) -> None:
    """For an LLM-Stream client the run's bytes are copied, for any other its deltas are
    encoded one by one: the bytes are the deltas' either way, and so is the count. A run
    before any other event (no decoder gives one) sends the head first, as any event does."""
    runs, deltas = client(dialect), client(dialect)
    start = [] if first else [StreamStarted(response_id="x", model="m", created=1)]
    call = ToolCall(index=0, id="c", name="f", arguments="{}", declared=False)
    end = [call, StreamEnded(complete=True, done=True)]
    got = runs.upstream([*start, RUN, *end], now=5)
    want = deltas.upstream([*start, *RUN.deltas(), *end], now=5)
    assert got == want
    assert runs.events_forwarded == deltas.events_forwarded == len(start) + 5 + 2
