"""Hypothesis: the OpenAI decoder against splits, and against models of what servers send."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from svir_proto import PeerProtocolError, ToolCallDelta, _json
from svir_proto.openai import ChatStreamDecoder
from tests.conformance.openai_results import summary
from tests.helpers import CONFORMANCE, run, splits

FIXTURES = sorted((CONFORMANCE / "openai").glob("*.sse"))
HEAD = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}


def sse(obj: Any) -> bytes:
    return b"data: " + json.dumps(obj, ensure_ascii=False).encode() + b"\n\n"


def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return sse({**HEAD, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


@given(st.sampled_from(FIXTURES), st.data())
def test_any_split_of_a_fixture_gives_the_same_events_and_result(
    path: Path, data: st.DataObject
) -> None:
    options = json.loads(path.with_suffix(".json").read_text())["options"]
    body = path.read_bytes()
    whole = ChatStreamDecoder(**options)
    expected = summary(run(whole, [body]), whole.result)
    split = ChatStreamDecoder(**options)
    assert summary(run(split, data.draw(splits(body))), split.result) == expected


def fragments(draw: st.DrawFn, text: str) -> list[str]:
    cuts = sorted(set(draw(st.lists(st.integers(0, len(text)), max_size=5))))
    out, last = [], 0
    for c in [*cuts, len(text)]:
        out.append(text[last:c])
        last = c
    return [f for f in out if f] or [""]


NAMES = st.from_regex(r"[a-z][a-z_]{0,12}", fullmatch=True)
ARGS = st.dictionaries(
    st.text(min_size=1, max_size=5), st.one_of(st.integers(), st.text(max_size=8)), max_size=3
)


@st.composite
def tool_call_streams(draw: st.DrawFn) -> tuple[bytes, list[tuple[str, str, str]]]:
    """Calls cut into pieces the way servers do: id and the start of the name first, then more
    name and arguments; pieces of different calls interleaved in any order; some servers repeat
    id and name on every piece."""
    n = draw(st.integers(1, 4))
    names = draw(st.lists(NAMES, min_size=n, max_size=n))
    calls = [(f"call_{i}", names[i], json.dumps(draw(ARGS), ensure_ascii=False)) for i in range(n)]
    repeat = draw(st.booleans())
    queues = []
    for i, (cid, name, args) in enumerate(calls):
        name_parts = [name] if repeat else fragments(draw, name)
        if any(part == "".join(name_parts[:k]) for k, part in enumerate(name_parts) if k):
            name_parts = [
                name
            ]  # a continuation equal to the name so far reads as a repeat (Rule 3)
        arg_parts = fragments(draw, args)
        pieces = [
            {
                "index": i,
                "id": cid,
                "type": "function",
                "function": {"name": name_parts[0], "arguments": ""},
            }
        ]
        for part in name_parts[1:]:
            pieces.append({"index": i, "function": {"name": part}})
        for part in arg_parts:
            p: dict[str, Any] = {"index": i, "function": {"arguments": part}}
            if repeat:
                p = {"index": i, "id": cid, "function": {"name": name, "arguments": part}}
            pieces.append(p)
        queues.append(pieces)
    body = [chunk({"role": "assistant", "content": None})]
    while any(queues):
        live = [q for q in queues if q]
        q = live[draw(st.integers(0, len(live) - 1))]
        take = draw(st.integers(1, 2))
        body.append(chunk({"tool_calls": [q.pop(0) for _ in range(min(take, len(q)))]}))
    body.append(chunk({}, "tool_calls"))
    body.append(b"data: [DONE]\n\n")
    return b"".join(body), calls


@given(tool_call_streams(), st.data())
def test_tool_calls_reassemble_exactly(
    stream: tuple[bytes, list[tuple[str, str, str]]], data: st.DataObject
) -> None:
    body, calls = stream
    d = ChatStreamDecoder()
    run(d, data.draw(splits(body)))
    assert d.result.complete, d.result.problems
    assert [(c.id, c.name, c.arguments) for c in d.result.tool_calls] == calls
    # parsed by the one JSON policy (an integer beyond 64 bits reads as a float, _json Rule 2)
    parsed = [_json.canonical(a) for _, _, a in calls]
    assert [p.value for p in d.result.parsed_arguments()] == parsed


SAFE_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12).filter(
    lambda s: "<think>" not in s and "</think>" not in s
)


@st.composite
def think_streams(draw: st.DrawFn) -> tuple[bytes, str, str]:
    """Alternating answer and reasoning segments, rendered with markers, then cut anywhere."""
    segments = draw(st.lists(SAFE_TEXT, min_size=1, max_size=5))
    rendered = ""
    text = reasoning = ""
    for i, seg in enumerate(segments):
        if i % 2:
            rendered += "<think>" + seg + "</think>"
            reasoning += seg
        else:
            rendered += seg
            text += seg
    # a segment of text that ends in "<", "<t"... followed by a marker stays unambiguous only
    # if the text does not itself end in a marker prefix; the model below checks the whole.
    pieces = fragments(draw, rendered)
    body = b"".join(chunk({"content": p}) for p in pieces) + chunk({}, "stop") + b"data: [DONE]\n\n"
    return body, text, reasoning


@given(think_streams())
def test_think_markers_split_anywhere(stream: tuple[bytes, str, str]) -> None:
    body, text, reasoning = stream
    d = ChatStreamDecoder()
    run(d, [body])
    assert (d.result.text, d.result.reasoning) == (text, reasoning)


@st.composite
def mixed_streams(draw: st.DrawFn) -> bytes:
    """Anything a server may send, valid or not, in any order."""
    kinds = st.sampled_from(
        [
            "text",
            "reason",
            "refusal",
            "tool",
            "usage",
            "finish",
            "error",
            "azure",
            "done",
            "junk",
            "event_error",
            "comment",
        ]
    )
    out = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(kinds)
        if kind == "text":
            out.append(
                chunk(
                    {
                        "content": draw(
                            st.sampled_from(["a", "<thi", "nk>", "</think>", "ü😀", "x<"])
                        )
                    }
                )
            )
        elif kind == "reason":
            out.append(chunk({draw(st.sampled_from(["reasoning", "reasoning_content"])): "r"}))
        elif kind == "refusal":
            out.append(chunk({"refusal": "no"}))
        elif kind == "tool":
            piece = {"index": draw(st.integers(0, 2)), "function": {"arguments": "{"}}
            if draw(st.booleans()):
                piece["id"] = draw(st.sampled_from(["a", "b"]))
            if draw(st.booleans()):
                piece["function"]["name"] = draw(st.sampled_from(["f", "g"]))
            out.append(chunk({"tool_calls": [piece]}))
        elif kind == "usage":
            out.append(
                sse({**HEAD, "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 2}})
            )
        elif kind == "finish":
            out.append(chunk({}, draw(st.sampled_from(["stop", "length", "tool_calls", "weird"]))))
        elif kind == "error":
            out.append(sse({"error": {"message": "maximum context length"}}))
        elif kind == "azure":
            out.append(
                sse(
                    {
                        "choices": [
                            {
                                "content_filter_offsets": {"start_offset": 1},
                                "content_filter_results": {
                                    "hate": {"filtered": draw(st.booleans())}
                                },
                                "index": 0,
                            }
                        ],
                        "id": "",
                        "model": "",
                    }
                )
            )
        elif kind == "done":
            out.append(b"data: [DONE]\n\n")
        elif kind == "junk":
            out.append(b"data: " + draw(st.binary(max_size=8)) + b"\n\n")
        elif kind == "event_error":
            out.append(b"event: error\ndata: oops\n\n")
        else:
            out.append(b": ping\n\n")
    return b"".join(out)


def outcome(pieces: list[bytes]) -> tuple[Any, ...]:
    d = ChatStreamDecoder()
    events: list[Any] = []
    error = None
    try:
        for p in pieces:
            events += d.feed(p)
        events += d.close()
    except PeerProtocolError as exc:  # anything else fails the test as a crash
        events += exc.pending_events
        error = (type(exc), exc.offset, exc.limit)
    return summary(events, d.result), error


@given(mixed_streams(), st.data())
def test_any_stream_any_split_same_outcome_and_only_remote_errors(
    body: bytes, data: st.DataObject
) -> None:
    assert outcome(data.draw(splits(body))) == outcome([body])


_PIECE = st.one_of(
    st.builds(  # a bare piece of arguments
        lambda i, a: {"index": i, "function": {"arguments": a}},
        st.integers(0, 2),
        st.sampled_from(["", "{", '"k"', ":1", "}", "é"]),
    ),
    st.builds(  # a call's first piece
        lambda i, n: {"index": i, "id": f"c{i}", "function": {"name": n, "arguments": ""}},
        st.integers(0, 2),
        st.sampled_from(["f", "g"]),
    ),
    st.sampled_from(  # what the rules refuse, or read otherwise
        [
            {"index": 0, "function": {"arguments": 1}},
            {"index": 0, "function": []},
            {"index": True, "function": {"arguments": "x"}},
            {"function": {"arguments": "y"}},
            {"index": 1, "function": {"arguments": "z"}, "type": "function"},
            "x",
        ]
    ),
)


def _outcome(body: bytes) -> tuple[object, ...]:
    d = ChatStreamDecoder()
    events: list[Any] = []
    try:
        events = run(d, [body])
    except PeerProtocolError as exc:
        return ("error", type(exc).__name__, str(exc))
    args: dict[int, str] = {}
    for e in events:
        if type(e).__name__ == "ToolCallDelta":
            args[e.index] = args.get(e.index, "") + e.arguments
    return args, [(c.id, c.name, c.arguments) for c in d.result.tool_calls], d.result.problems


@given(st.lists(_PIECE, min_size=1, max_size=12))
def test_a_chunks_pieces_read_as_one_or_one_by_one_give_the_same_calls(
    pieces: list[Any],
) -> None:
    """`folded` (attack 41 F2): one call's bare pieces in a row in one chunk are one delta,
    which says what the pieces one by one say: the same arguments of each call, the same
    calls, notes and errors."""
    end = chunk({}, "tool_calls") + b"data: [DONE]\n\n"
    whole = _outcome(chunk({"tool_calls": pieces}) + end)
    apart = _outcome(b"".join(chunk({"tool_calls": [p]}) for p in pieces) + end)
    if whole[0] == "error":  # (the offset is the chunk's: one chunk, or the piece's own)
        assert apart[0] == "error"
        assert whole[2].split(" (at byte")[0] == apart[2].split(" (at byte")[0]
    else:
        assert whole == apart


_REUSING = st.one_of(
    st.builds(  # a piece that begins a call, or goes on with it (its id: Rule 2), or begins
        lambda i, cid, n, a: {  # another of its index (another id)
            "index": i,
            "id": cid,
            "function": {"name": n, "arguments": a},
        },
        st.integers(0, 1),
        st.sampled_from(["a", "b", "c"]),
        st.sampled_from(["f", "g"]),
        st.sampled_from(["", "{", "}", "1"]),
    ),
    st.builds(  # arguments of the last call of an index
        lambda i, a: {"index": i, "function": {"arguments": a}},
        st.integers(0, 1),
        st.sampled_from(["{", "}", "1"]),
    ),
)


@given(st.lists(_REUSING, min_size=1, max_size=10))
def test_each_calls_deltas_carry_its_own_index_as_its_whole_call_does(pieces: list[Any]) -> None:
    """Attack 49b F1: a call that reused another's index gave deltas of that index, and an
    encoder that keys calls by index (every one does) mixed two calls. Whatever the pieces,
    the deltas of one index are one call: its id, its name and its arguments are those of the
    whole call of that index."""
    end = chunk({}, "tool_calls") + b"data: [DONE]\n\n"
    d = ChatStreamDecoder()
    try:
        events = run(d, [b"".join(chunk({"tool_calls": [p]}) for p in pieces) + end])
    except PeerProtocolError:
        return  # (indices with a gap, no id, no name: the calls' checks)
    calls: dict[int, list[str]] = {}
    for e in events:
        if isinstance(e, ToolCallDelta):
            id_, name, args = calls.setdefault(e.index, ["", "", ""])
            calls[e.index] = [id_ or e.id or "", name + (e.name or ""), args + e.arguments]
    whole = {c.index: [c.id, c.name, c.arguments] for c in d.result.tool_calls}
    assert calls == whole
