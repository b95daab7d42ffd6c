"""Hypothesis: a Messages (or Responses) stream translated from an OpenAI upstream whose tool
calls and text interleave, read back and folded, is the whole answer to the same upstream
(attack 46 G3, 47 H2).

Text cannot go inside a ``tool_use`` block, so the stream holds what comes while a call's
arguments are not whole; the whole answer orders its parts by where each began. Any number of
calls (begun in any order, attack 50b N3; each with its id and name alone or with a piece of
its arguments), their arguments cut anywhere (and begun with a blank, attack 46 G2), and text or
reasoning between any two pieces: the same blocks, in the same order, and no failure.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.unit.test_answer_order import _call, _chunk, whole_and_streamed

NAMES = ("get_weather", "get_time", "get_current_weather")
Chunk = tuple[None, dict[str, Any]]


@st.composite
def interleaved(draw: st.DrawFn) -> list[Chunk]:
    """The upstream's chunks: calls and text, interleaved."""
    calls: list[list[str]] = []
    for i in range(draw(st.integers(1, len(NAMES)))):
        value = "v" * draw(st.integers(0, 3))
        args = " " * draw(st.integers(0, 1)) + f'{{"k{i}": "{value}"}}'
        cuts = sorted(draw(st.sets(st.integers(1, len(args) - 1), max_size=3)))
        pieces = [args[a:b] for a, b in zip([0, *cuts], [*cuts, len(args)], strict=True)]
        if draw(st.booleans()):  # OpenAI's first chunk of a call: its id, its name, no
            pieces = ["", *pieces]  # arguments (review 46 M2)
        calls.append(pieces)
    kinds = st.sampled_from(["content", "reasoning_content"])
    texts = [(draw(kinds), chr(65 + k)) for k in range(draw(st.integers(0, 4)))]
    out = []
    sent = [0] * len(calls)
    while texts or any(sent[i] < len(c) for i, c in enumerate(calls)):
        choices = ["text"] * bool(texts) + [i for i, c in enumerate(calls) if sent[i] < len(c)]
        pick = draw(st.sampled_from(choices))
        if pick == "text":
            kind, text = texts.pop(0)
            out.append(_chunk({kind: text}))
            continue
        piece = calls[pick][sent[pick]]
        out.append(_call(pick, piece, NAMES[pick]) if not sent[pick] else _call(pick, piece))
        sent[pick] += 1
    return out


def blocks(whole: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    keys = ("text", "input", "arguments", "content", "summary")  # (Messages', Responses')
    return [(b["type"], next((b[k] for k in keys if k in b), None)) for b in whole]


@given(interleaved(), st.sampled_from(["messages", "responses"]))
def test_a_streamed_answer_folds_to_the_whole_one(chunks: list[Chunk], client: str) -> None:
    """For a Responses client too, whose items can interleave: a call announced once its
    first arguments came, after the text that came before them, took the text's place in the
    stream and not in the whole answer (attack 47 H2)."""
    whole, streamed = whole_and_streamed(chunks, client)
    assert blocks(streamed) == blocks(whole)
    assert streamed == whole
