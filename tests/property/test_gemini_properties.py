"""Hypothesis: the Gemini decoder against splits; the encoder's output decodes back to the same
events; Gemini streams through the OpenAI and LLM-Stream dialects and back; the OpenAI and
LLM-Stream fixtures through Gemini; requests through the hub and back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from svir_proto import NEED_DATA, PeerProtocolError
from svir_proto.events import Completion, FinishReason, StreamEnded, StreamFailed, Usage
from svir_proto.gemini import (
    ArrayWriter,
    GeminiContent,
    GeminiFileData,
    GeminiFunctionCall,
    GeminiFunctionDeclaration,
    GeminiFunctionResponse,
    GeminiGenerationConfig,
    GeminiInlineData,
    GeminiOtherPart,
    GeminiRequest,
    GeminiStreamDecoder,
    GeminiStreamEncoder,
    GeminiText,
    GeminiThinkingConfig,
    GeminiTool,
    GeminiToolConfig,
)
from svir_proto.gemini.hub import from_hub, to_hub
from svir_proto.llmstream import LLMRequest, LLMStreamDecoder
from svir_proto.openai import ChatStreamDecoder, ChatStreamEncoder
from svir_proto.translate import OpenAIToLLMStream
from tests.conformance.openai_results import summary
from tests.helpers import CONFORMANCE, bytewise, every_event, run, splits, unkept

FIXTURES = sorted((CONFORMANCE / "gemini").glob("*.sse"))
OPENAI = sorted((CONFORMANCE / "openai").glob("*.sse")) + sorted(
    (CONFORMANCE / "llamacpp").glob("*.sse")
)
LLMSTREAM = sorted((CONFORMANCE / "llmstream").glob("*.sse"))

TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=10)
WORD = st.text(alphabet="abcdefghij", min_size=1, max_size=6)
SIGNATURE = st.from_regex(r"[A-Za-z0-9+/]{4,12}={0,2}", fullmatch=True)
NAME = st.from_regex(r"[a-z][a-z_]{0,8}", fullmatch=True)
ARGS = st.dictionaries(WORD, st.one_of(st.integers(-99, 99), TEXT, st.booleans()), max_size=3)
RATINGS = st.lists(
    st.fixed_dictionaries(
        {
            "category": st.sampled_from(["HARM_CATEGORY_HATE_SPEECH", "HARM_CATEGORY_HARASSMENT"]),
            "probability": st.sampled_from(["NEGLIGIBLE", "NEGLIGIBLE", "LOW", "HIGH"]),
        }
    ),
    min_size=1,
    max_size=2,
)


def g(obj: Any) -> str:
    """JSON as Google writes it (``": "`` after keys, ``<>&`` escaped)."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ": "))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


@st.composite
def parts(draw: st.DrawFn, calls: list[int]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["text", "text", "thought", "signed", "call"]))
        part: dict[str, Any]
        if kind == "text":
            part = {"text": draw(TEXT)}
        elif kind == "thought":
            part = {"text": draw(TEXT), "thought": True}
        elif kind == "signed":
            part = {"text": "", "thoughtSignature": draw(SIGNATURE)}
        else:
            call: dict[str, Any] = {"name": draw(NAME), "args": draw(ARGS)}
            if draw(st.booleans()):
                call["id"] = f"fc-{len(calls)}"
            calls.append(len(calls))
            part = {"functionCall": call}
            if draw(st.booleans()):
                part["thoughtSignature"] = draw(SIGNATURE)
        out.append(part)
    return out


@st.composite
def gemini_streams(draw: st.DrawFn) -> bytes:
    """Bodies as Gemini sends them: identity and cumulative usage on every chunk, parts of
    every kind the vocabulary has, safety ratings now and then, a finish (or an error, or
    nothing) at the end, CRLF or LF line ends, a keep-alive comment now and then."""
    end = draw(st.sampled_from(["\r\n\r\n", "\n\n"]))
    rid = draw(st.sampled_from(["", "r1"]))
    calls: list[int] = []
    chunks: list[dict[str, Any]] = []
    if draw(st.integers(0, 9)) == 0:  # a prompt blocked before any candidate
        chunks.append(
            {
                "promptFeedback": {"blockReason": "SAFETY", "safetyRatings": draw(RATINGS)},
                "usageMetadata": {"promptTokenCount": 3, "totalTokenCount": 3},
                "modelVersion": "m",
                "responseId": rid,
            }
        )
    else:
        tokens = 0
        for _ in range(draw(st.integers(0, 5))):
            tokens += draw(st.integers(0, 3))
            candidate: dict[str, Any] = {"content": {"parts": draw(parts(calls)), "role": "model"}}
            if draw(st.integers(0, 3)) == 0:
                candidate["safetyRatings"] = draw(RATINGS)
            candidate["index"] = 0
            chunks.append(
                {
                    "candidates": [candidate],
                    "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": tokens},
                    "modelVersion": "m",
                    "responseId": rid,
                }
            )
        ending = draw(
            st.sampled_from(["STOP", "STOP", "MAX_TOKENS", "SAFETY", "OTHER", "error", None])
        )
        if ending == "error":
            chunks.append(
                {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}
            )
        elif ending is not None:
            chunks.append(
                {
                    "candidates": [
                        {"content": {"role": "model"}, "finishReason": ending, "index": 0}
                    ],
                    "usageMetadata": {
                        "promptTokenCount": 5,
                        "candidatesTokenCount": tokens,
                        "thoughtsTokenCount": 7,
                        "totalTokenCount": 12 + tokens,
                    },
                    "modelVersion": "m",
                    "responseId": rid,
                }
            )
    out = []
    for c in chunks:
        if draw(st.integers(0, 5)) == 0:
            out.append(": keep-alive" + end)
        out.append("data: " + g(c) + end)
    return "".join(out).encode()


# -- splits -----------------------------------------------------------------------------------


@given(st.sampled_from(FIXTURES), st.data())
def test_any_split_of_a_fixture_gives_the_same_events_and_result(
    path: Path, data: st.DataObject
) -> None:
    options = json.loads(path.with_suffix(".json").read_text())["options"]
    body = path.read_bytes()
    whole = GeminiStreamDecoder(**options)
    expected = summary(run(whole, [body]), whole.result)
    pieces = data.draw(splits(body))
    split = GeminiStreamDecoder(**options)
    assert summary(run(split, pieces), split.result) == expected
    relay = GeminiStreamDecoder(**options, keep_text=False)  # a gateway's: no text kept
    assert summary(run(relay, pieces), whole.result) == expected  # the same events
    assert (relay.result.text, unkept(relay.result)) == ("", unkept(whole.result))


def outcome(body: bytes, pieces: list[bytes]) -> tuple[object, object]:
    d = GeminiStreamDecoder()
    try:
        events = run(d, pieces)
    except PeerProtocolError as exc:
        return ("error", type(exc), exc.offset, exc.limit), summary(
            list(exc.pending_events), d.result
        )
    return summary(events, d.result), None


@given(gemini_streams(), st.data())
def test_any_split_of_a_generated_stream_gives_the_same_outcome(
    body: bytes, data: st.DataObject
) -> None:
    assert outcome(body, data.draw(splits(body))) == outcome(body, [body])


@given(gemini_streams(), st.integers(0, 400), st.binary(min_size=1, max_size=6), st.data())
def test_a_broken_stream_breaks_the_same_way_however_split(
    body: bytes, at: int, junk: bytes, data: st.DataObject
) -> None:
    broken = body[:at] + junk + body[at:]
    assert outcome(broken, data.draw(splits(broken))) == outcome(broken, [broken])


LAYOUTS = [  # where the array begins, what is between two elements, its end; an element
    (b"[", b",", b"]", lambda c: json.dumps(c, separators=(",", ":"))),  # compact
    (b"[", b"\n,\r\n", b"\n]", lambda c: json.dumps(c, indent=2)),  # Google's
    (b" \r\n[ ", b" \t,\n ", b" ]\r\n", json.dumps),  # blanks anywhere they may be
]


def array_reads(body: bytes, layout: int) -> list[bytes]:
    """The SSE stream's chunks as Gemini's stream without ``alt=sse``, one JSON array in one
    of `LAYOUTS`, one element a read (with what is before it), its end a read of its own."""
    chunks = [
        json.loads(c[5:])
        for c in body.replace(b"\r\n", b"\n").split(b"\n\n")
        if c.startswith(b"data:")
    ]
    first, between, end, dump = LAYOUTS[layout]
    elements = [dump(c).encode() for c in chunks] or [b""]
    return [first + elements[0], *(between + e for e in elements[1:]), end]


def as_array(body: bytes, layout: int) -> bytes:
    """`array_reads`, as one body."""
    return b"".join(array_reads(body, layout))


@given(gemini_streams(), st.integers(0, 2), st.data())
def test_the_array_form_reads_as_its_sse_however_split(
    body: bytes, layout: int, data: st.DataObject
) -> None:
    """Rule 10: the same chunks in one JSON array give what their SSE gives (no comment in an
    array: the keep-alives go), whatever the reads; and junk in it breaks it alike however
    split."""
    array = as_array(body, layout)
    want = outcome(body, [body])
    assert outcome(array, data.draw(splits(array))) == want
    at = data.draw(st.integers(0, len(array)))
    broken = array[:at] + data.draw(st.binary(min_size=1, max_size=4)) + array[at:]
    assert outcome_of_all(broken, data.draw(splits(broken))) == outcome_of_all(broken, [broken])


def pulled(pieces: list[bytes], takes: list[int]) -> tuple[object, object]:
    """`outcome_of_all` by the pull API, taking only ``takes[i]`` events after the ``i``-th
    piece (the rest wait in the queue while more bytes come: review 68 #1, an array's run was
    read again when an error waited behind it)."""
    d = GeminiStreamDecoder()
    events: list[object] = []
    error = None
    try:
        for piece, take in zip(pieces, takes, strict=True):
            d.receive_data(piece)
            for _ in range(take):
                event = d.next_event()
                if event is NEED_DATA:
                    break
                events.append(event)
        d.receive_data(b"")
        while (event := d.next_event()) is not NEED_DATA:
            events.append(event)
            if type(event) is StreamEnded:
                break
    except PeerProtocolError as exc:
        error = (type(exc), exc.offset, exc.limit)
    return summary(events, d.result), error


@given(gemini_streams(), st.integers(0, 2), st.data())
def test_events_taken_a_few_at_a_time_are_those_fed_at_once(
    body: bytes, layout: int, data: st.DataObject
) -> None:
    """The pull API, taking events a few at a time while bytes keep coming, gives what one
    `feed` gives, SSE or array, whole or broken (junk in it)."""
    for form in (body, as_array(body, layout)):
        at = data.draw(st.integers(0, len(form)))
        junk = data.draw(st.sampled_from([b"", b"x", b'{"candidates": 5}', b",", b"\n\n"]))
        broken = form[:at] + junk + form[at:]
        pieces = data.draw(splits(broken))
        takes = data.draw(st.lists(st.integers(0, 3), min_size=len(pieces), max_size=len(pieces)))
        assert pulled(pieces, takes) == outcome_of_all(broken, [broken])


def outcome_of_all(body: bytes, pieces: list[bytes]) -> tuple[object, object]:
    """`outcome`, with the events given before an error too: an element is given once it is
    known whole, which junk after it may leave to the body's end (Rule 10)."""
    d = GeminiStreamDecoder()
    events, exc = every_event(d, pieces)
    error = None if exc is None else (type(exc), exc.offset, exc.limit)
    return summary(events, d.result), error


@st.composite
def hot_streams(draw: st.DrawFn, texts: st.SearchStrategy[str] = TEXT) -> list[bytes]:
    """The events of a stream the hot loop and its envelope read: chunks of one text or
    thought part (text with every escape Google writes), the same quiet ratings on each or
    none, counts of any size (past 18 digits too), now and then a chunk of another shape."""
    end = draw(st.sampled_from(["\r\n\r\n", "\n\n"]))
    quiet = [{"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "NEGLIGIBLE"}]
    rated = draw(st.booleans())
    out = []
    for _ in range(draw(st.integers(1, 12))):
        part: dict[str, Any] = {"text": draw(texts)}
        if draw(st.integers(0, 3)) == 0:
            part["thought"] = True
        if draw(st.integers(0, 7)) == 0:
            part["thoughtSignature"] = draw(SIGNATURE)
        candidate: dict[str, Any] = {"content": {"parts": [part], "role": "model"}}
        if rated:
            candidate["safetyRatings"] = quiet
        candidate["index"] = 0
        count = draw(st.one_of(st.integers(0, 300), st.integers(0, 10**20)))
        chunk = {
            "candidates": [candidate],
            "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": count},
            "modelVersion": "m",
            "responseId": "r1",
        }
        out.append("data: " + g(chunk) + end)
    finish = {"candidates": [{"finishReason": "STOP", "index": 0}], "responseId": "r1"}
    out.append("data: " + g(finish) + end)
    return [e.encode() for e in out]


@given(hot_streams(), st.integers(0, 2000), st.binary(min_size=1, max_size=4))
def test_the_hot_loop_and_its_envelope_read_what_the_general_way_reads(
    events: list[bytes], at: int, junk: bytes
) -> None:
    """One event per read (the hot loop, the envelope) against a byte at a time (the general
    way): the same outcome; and so with junk in one event."""
    body = b"".join(events)
    assert outcome(body, events) == outcome(body, bytewise(body))
    k = at % len(events)
    cut = at % len(events[k])
    events[k] = events[k][:cut] + junk + events[k][cut:]
    body = b"".join(events)
    assert outcome(body, events) == outcome(body, bytewise(body))


LONG = st.text(alphabet='ab "\\\n\t\u00e9\U0001f600<', min_size=250, max_size=700)
"""A text whose chunk is long (`svir_proto._jsonbytes.LONG_HOLE`), escapes in it."""


def envelope_or_not(pieces: list[bytes], learn: bool, **options: Any) -> tuple[object, object]:
    """`outcome_of_all`, by a decoder that learns no envelope when not ``learn`` (the general
    way: every element parsed)."""
    d = GeminiStreamDecoder(**options)
    if not learn:
        d._budget = 0
    events, exc = every_event(d, pieces)
    error = None if exc is None else (type(exc), exc.offset, exc.limit, str(exc))
    return summary(events, d.result), error


@given(hot_streams(st.one_of(TEXT, LONG)), st.integers(0, 2), st.data())
def test_the_arrays_elements_read_by_their_envelope_read_as_parsed(
    events: list[bytes], layout: int, data: st.DataObject
) -> None:
    """Rule 10: an element read at once in the framer's buffer, as repeating the learned
    envelope (`GeminiStreamDecoder._read_held`), one a read or in any reads, reads as it does
    parsed, under any bound on the result too; and so with junk in one element."""
    reads = array_reads(b"".join(events), layout)
    array = b"".join(reads)
    assert envelope_or_not(reads, True) == envelope_or_not([array], False)
    assert envelope_or_not(data.draw(splits(array)), True) == envelope_or_not([array], False)
    size = data.draw(st.integers(1, 2 + sum(len(e) for e in events)))  # (review 70 F1)
    bound = envelope_or_not([array], False, max_result_size=size)
    assert envelope_or_not(reads, True, max_result_size=size) == bound
    k = data.draw(st.integers(0, len(reads) - 1))
    cut = data.draw(st.integers(0, len(reads[k])))
    junk = data.draw(st.sampled_from([b"x", b'"', b"\\", b"\xff", b"}", b"\n,\r\n{"]))
    reads[k] = reads[k][:cut] + junk + reads[k][cut:]
    broken = b"".join(reads)
    assert envelope_or_not(reads, True) == envelope_or_not([broken], False)


# -- the encoder --------------------------------------------------------------------------------


def decode(body: bytes, **options: Any) -> tuple[list[Any], Completion]:
    d = GeminiStreamDecoder(**options)
    return run(d, [body]), d.result


def _without_lost(events: list[Any], result: Completion) -> dict[str, Any]:
    """What the encoder carries (module docstring of encoder: repeated quiet verdicts are not
    events, so not written; nothing follows a failure; problems are the decoder's own)."""
    failed = any(isinstance(e, StreamFailed) for e in events)
    kept = [e for e in events if not (failed and isinstance(e, Usage))]
    result = attrs.evolve(
        result, filter_repeats=0, problems=(), usage=None if failed else result.usage
    )
    return summary(kept, result)


@given(gemini_streams())
def test_the_encoder_writes_what_decodes_back_to_the_same_events(body: bytes) -> None:
    events, result = decode(body)
    encoder = GeminiStreamEncoder()
    again, result_again = decode(b"".join(encoder.encode(e) for e in events))
    assert _without_lost(again, result_again) == _without_lost(events, result)
    assert encoder.lost == []


@given(gemini_streams())
def test_the_encoders_array_holds_the_same_chunks_as_its_sse(body: bytes) -> None:
    """Without ``alt=sse`` (encoder Rule 8): one JSON array of the SSE form's chunks, closed
    when the stream ended complete or failed, open (its body cut) else."""
    events, _result = decode(body)
    sse, array = GeminiStreamEncoder(), GeminiStreamEncoder(sse=False)
    framed = b"".join(sse.encode(e) for e in events)
    chunks = [json.loads(c.removeprefix(b"data: ")) for c in framed.split(b"\r\n\r\n") if c]
    out = b"".join(array.encode(e) for e in events)
    closed = sse.done or any(isinstance(e, StreamFailed) for e in events)
    assert out.endswith(b"]") == closed
    assert json.loads(out if closed else out + b"]" if chunks else b"[]") == chunks
    assert (array.done, array.lost) == (sse.done, sse.lost)


# -- across the dialects -----------------------------------------------------------------------


def _answer(result: Completion) -> tuple[object, ...]:
    return (
        result.text,
        result.reasoning,
        [(c.id, c.name, c.parse_arguments().value) for c in result.tool_calls],
        result.finish_reason,
        result.usage,
        result.complete,
        None if result.error is None else (result.error.kind, result.error.message),
    )


@settings(max_examples=50)
@given(gemini_streams())
def test_a_gemini_stream_through_openai_and_llm_stream_keeps_its_answer(body: bytes) -> None:
    """Not carried: the signed reasoning blocks through OpenAI (it has no signatures), the
    reasoning's carrier, the raw finish value, filter verdicts in Gemini's categories through
    LLM-Stream's one verdict form, a failure's code; LLM-Stream's usage has both counts."""
    events, result = decode(body)
    chat = ChatStreamEncoder()
    openai = ChatStreamDecoder(think_tags=False)  # the text is the model's, "<think>" too
    run(openai, [b"".join(chat.encode(e) for e in events)])
    if result.complete or result.error is not None:
        assert _answer(openai.result) == _answer(result)
    else:  # a cut stays a cut
        assert not openai.result.complete
        assert openai.result.text == result.text
    translator = OpenAIToLLMStream(model="m")
    llm = LLMStreamDecoder()
    run(llm, [b"".join(translator.feed(e) for e in events)])
    if result.complete:
        usage = result.usage
        if usage is not None:  # LLM-Stream's usage event needs both counts: a missing one is 0
            usage = attrs.evolve(
                usage,
                prompt_tokens=usage.prompt_tokens or 0,
                completion_tokens=usage.completion_tokens or 0,
            )
        assert _answer(llm.result) == _answer(attrs.evolve(result, usage=usage))
        assert llm.result.reasoning_blocks == result.reasoning_blocks
    else:
        assert not llm.result.complete


def _through_gemini(decoder: Any, path: Path) -> tuple[Completion, Completion, list[str]]:
    events = run(decoder, [path.read_bytes()])
    encoder = GeminiStreamEncoder()
    _, result = decode(b"".join(encoder.encode(e) for e in events))
    return decoder.result, result, encoder.lost


@given(
    st.one_of(
        st.sampled_from(OPENAI).map(lambda p: (p, ChatStreamDecoder)),
        st.sampled_from(LLMSTREAM).map(lambda p: (p, LLMStreamDecoder)),
    )
)
def test_the_openai_and_llm_stream_fixtures_through_gemini_keep_their_answer(
    case: tuple[Path, Any],
) -> None:
    """Not carried (listed in ``lost`` where it is content): a refusal's kind (it is text),
    the reasoning's carrier, a finish ``stop`` with calls (Gemini's STOP means tool calls
    then), Azure's filter categories, a failure's HTTP status."""
    path, make = case
    source, got, _ = _through_gemini(make(), path)
    assert got.text == source.text + source.refusal
    assert got.reasoning == source.reasoning
    assert [(c.id, c.name, c.parse_arguments().value) for c in got.tool_calls] == [
        (c.id, c.name, c.parse_arguments().value) for c in source.tool_calls
    ]
    assert got.complete == source.complete
    if source.complete:
        reason = source.finish_reason
        if reason is FinishReason.STOP and source.tool_calls:
            reason = FinishReason.TOOL_CALLS
        if any(v.filtered and v.scope == "completion" for v in source.filter_verdicts):
            reason = FinishReason.CONTENT_FILTER  # (blocked after it finished: fidelity 43 F01)
        assert got.finish_reason is reason
    if source.error is None:
        assert got.usage == source.usage
    else:
        assert got.error is not None
        assert (got.error.kind, got.error.message, got.error.code) == (
            source.error.kind,
            source.error.message,
            source.error.code,
        )


# -- requests through the hub ------------------------------------------------------------------

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(16))


@st.composite
def user_parts(draw: st.DrawFn) -> list[Any]:
    out: list[Any] = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(
            st.sampled_from(["text", "text", "image", "base64", "file", "response", "other"])
        )
        if kind == "text":
            out.append(GeminiText(text=draw(TEXT)))
        elif kind == "image":
            out.append(GeminiInlineData.from_bytes(PNG))
        elif kind == "base64":
            out.append(GeminiInlineData(mime_type="application/pdf", data="JVBERi0="))
        elif kind == "file":
            out.append(GeminiFileData(file_uri="gs://b/f.mp4", mime_type="video/mp4"))
        elif kind == "other":
            out.append(GeminiOtherPart(value={"executableCode": {"code": draw(TEXT)}}))
        else:
            response = draw(
                st.one_of(
                    st.builds(lambda t: {"output": t}, TEXT),
                    st.builds(lambda t: {"error": t}, TEXT),
                    ARGS.filter(bool),
                )
            )
            call_id = draw(st.sampled_from([None, "fc-1", "fc-2"]))
            out.append(GeminiFunctionResponse(name=draw(NAME), response=response, id=call_id))
    return out


@st.composite
def model_parts(draw: st.DrawFn) -> list[Any]:
    out: list[Any] = []
    for k in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["text", "thought", "call"]))
        signature = draw(st.one_of(st.none(), SIGNATURE))
        if kind == "text":
            out.append(GeminiText(text=draw(TEXT), thought_signature=signature))
        elif kind == "thought":
            out.append(GeminiText(text=draw(TEXT), thought=True, thought_signature=signature))
        else:
            out.append(
                GeminiFunctionCall(
                    name=draw(NAME),
                    args=draw(ARGS),
                    id=draw(st.sampled_from([None, f"fc-{k}"])),
                    thought_signature=signature,
                )
            )
    return out


@st.composite
def gemini_requests(draw: st.DrawFn) -> GeminiRequest:
    contents = []
    for _ in range(draw(st.integers(1, 4))):
        role = draw(st.sampled_from(["user", "model", None]))
        p = draw(model_parts() if role == "model" else user_parts())
        contents.append(GeminiContent(role=role, parts=p))
    names = draw(st.lists(NAME, unique=True, max_size=2))
    declarations = [
        GeminiFunctionDeclaration(
            name=n,
            description=draw(st.one_of(st.none(), TEXT)),
            parameters={"type": "OBJECT", "properties": {"x": {"type": "STRING"}}}
            if draw(st.booleans())
            else None,
        )
        for n in names
    ]
    tools = [GeminiTool(function_declarations=declarations)] if declarations else []
    if draw(st.booleans()):
        tools.append(GeminiTool(extra={"googleSearch": {}}))
    mode = draw(st.sampled_from([None, "AUTO", "NONE", "ANY", "VALIDATED"]))
    allowed = names[:1] if mode in ("ANY", "VALIDATED") and names and draw(st.booleans()) else []
    thinking = draw(
        st.one_of(
            st.none(),
            st.builds(
                GeminiThinkingConfig,
                thinking_budget=st.one_of(st.none(), st.integers(-1, 4096)),
                include_thoughts=st.one_of(st.none(), st.booleans()),
                thinking_level=st.one_of(st.none(), st.sampled_from(["low", "HIGH"])),
            ),
        )
    )
    config = draw(
        st.one_of(
            st.none(),
            st.builds(
                GeminiGenerationConfig,
                max_output_tokens=st.one_of(st.none(), st.integers(1, 9999)),
                temperature=st.one_of(st.none(), st.sampled_from([0, 0.5, 2.0])),
                top_k=st.one_of(st.none(), st.integers(1, 40)),
                stop_sequences=st.one_of(st.none(), st.lists(WORD, max_size=2)),
                response_mime_type=st.one_of(st.none(), st.just("application/json")),
                thinking_config=st.just(thinking),
            ),
        )
    )
    return GeminiRequest(
        model=draw(st.sampled_from(["gemini-2.5-flash", "tunedModels/t"])),
        contents=contents,
        system_instruction=draw(
            st.one_of(
                st.none(),
                st.builds(lambda t: GeminiContent(role=None, parts=t), TEXT),
                st.just(
                    GeminiContent(role="user", parts=[GeminiText(text="a"), GeminiText(text="b")])
                ),
            )
        ),
        tools=tools,
        tool_config=None
        if mode is None
        else GeminiToolConfig(mode=mode, allowed_function_names=allowed),
        generation_config=config,
        safety_settings=draw(
            st.sampled_from(
                [(), ({"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"},)]
            )
        ),
        stream=draw(st.booleans()),
        extra=draw(st.sampled_from([{}, {"cachedContent": "cachedContents/x"}])),
    )


@given(gemini_requests())
def test_a_request_through_the_hub_comes_back_whole(request: GeminiRequest) -> None:
    assert from_hub(to_hub(request)) == request


def _bytes(request: GeminiRequest) -> GeminiRequest:
    """The same request with its inline data as the wire carries it (base64 text)."""
    import base64

    def part(p: Any) -> Any:
        if isinstance(p, GeminiInlineData) and p.data is None:
            return attrs.evolve(p, data=base64.b64encode(p.decoded()).decode(), raw=None, path=None)
        return p

    return attrs.evolve(
        request,
        contents=[attrs.evolve(c, parts=[part(p) for p in c.parts]) for c in request.contents],
    )


@settings(max_examples=50)
@given(gemini_requests())
def test_a_request_through_the_hub_and_the_llm_stream_wire_comes_back(
    request: GeminiRequest,
) -> None:
    hub = to_hub(request)
    again = LLMRequest.parse(hub.body().read())
    assert from_hub(again) == _bytes(request)


# -- a relay's array: ArrayWriter beside the decoder that watches the same SSE ----------------

EOL = st.sampled_from([b"\n", b"\r\n", b"\r"])


@st.composite
def sse_with_noise(draw: st.DrawFn) -> tuple[list[bytes], list[dict[str, Any]]]:
    """A Gemini stream's whole events (each ends with its blank line) with what SSE allows
    around them: a byte order mark and blanks first, comments, ``id`` and ``retry`` fields,
    ``event: message`` or no type, events of other types with any data (``]``, no JSON),
    ``data`` lines without a colon, any line end; and the chunks a reader of it finds."""
    pieces, chunks = [], []
    head = draw(st.sampled_from([b"", b"\xef\xbb\xbf", b"\r\n \t", b"\n\n"]))
    for _ in range(draw(st.integers(0, 6))):
        eol = draw(EOL)
        kind = draw(st.sampled_from(["chunk", "typed", "comment", "fields"]))
        if kind == "chunk":
            chunk = {
                "candidates": [
                    {"content": {"parts": [{"text": draw(TEXT)}], "role": "model"}, "index": 0}
                ]
            }
            chunks.append(chunk)
            lines = [b"data: " + json.dumps(chunk).encode()]
            if draw(st.booleans()):
                lines.insert(0, b"event: message" if draw(st.booleans()) else b"id: 7")
            if draw(st.booleans()):
                lines.append(b"data")  # (an empty data line: a line feed more, JSON's blank)
        elif kind == "typed":
            data = draw(st.sampled_from([b"]", b"not json", b"[{}", b'{"x": 1}']))
            lines = [b"event: " + draw(WORD).encode(), b"data: " + data]
        elif kind == "comment":
            lines = [b": " + draw(WORD).encode()]
        else:
            lines = [b"retry: 10", b"id: 3"]  # (no data: no event)
        pieces.append(eol.join(lines) + eol + eol)
    if pieces:
        pieces[0] = head + pieces[0]
    return pieces, chunks


@given(sse_with_noise(), st.data())
def test_a_relays_array_holds_what_the_gemini_decoder_reads(
    stream: tuple[list[bytes], list[dict[str, Any]]], data: st.DataObject
) -> None:
    """Review 76: `ArrayWriter` is the gateway's relay of a Gemini upstream's SSE to a client
    that asked for the array, and the Gemini decoder watches the same bytes: the array must
    hold every chunk the decoder reads, as it came, and nothing else (an event of another type
    wrote ``]`` into it), whatever whole events each call is given."""
    pieces, chunks = stream
    cuts = sorted(data.draw(st.sets(st.integers(1, max(len(pieces) - 1, 1)), max_size=4)))
    calls = [b"".join(pieces[a:b]) for a, b in zip([0, *cuts], [*cuts, len(pieces)], strict=True)]
    writer = ArrayWriter()
    array = b"".join(writer.events(call) for call in calls) + writer.end()
    assert json.loads(array) == chunks
    assert writer.written == len(chunks)
    body = b"".join(pieces)
    watched, _ = decode(body)
    again, _ = decode(
        b"".join(b"data: %s\r\n\r\n" % json.dumps(c).encode() for c in json.loads(array))
    )
    assert [e for e in again if not isinstance(e, StreamEnded)] == [
        e for e in watched if not isinstance(e, StreamEnded)
    ]
