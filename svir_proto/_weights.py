"""What a decoder's result holds beyond its characters, weighed against ``max_result_size``.

A decoder bounds what it keeps of an answer by ``max_result_size`` characters (a gateway's
``--max-answer``). Text, reasoning, arguments, signatures, ids and names weigh their length.
Rule: everything else a decoder keeps for something a peer sends, one object each (a reasoning
block, a content-filter verdict and each of its results, a tool call, a content part or block
it tallies, a run of text or reasoning whose place a whole answer keeps), weighs a fixed
amount beside the characters it holds, about the memory of that object: else many empty ones
hold what no bound counts (attack 34: a million empty redacted blocks held 170 MB under a bound
of 1,000; the review of stop 33: verdicts, LLM-Stream's calls and blocks, the Responses API's
parts). A weight counts whether or not the text is kept
(``keep_text=False``: a relay's decoder still keeps these).

This module never does I/O.
"""

from __future__ import annotations

from typing import Final

from .events import FilterVerdict

__all__: list[str] = []

BLOCK: Final = 64
"""A reasoning block, beyond its signature and item id."""
VERDICT: Final = 256
"""A content-filter verdict, beyond its results."""
RESULT: Final = 32
"""Each result of a verdict, beyond its category, severity and id."""
CALL: Final = 64
"""A tool call a decoder keeps whole, beyond its id, name and arguments."""
PART: Final = 64
"""A content part or block a decoder tallies, beyond its text."""
RUN: Final = 64
"""A run of one kind of an answer that a whole answer's fold ended because another kind
began (`svir_proto.answer`, Rule 6): its place in the order, and the piece it ends."""


def verdict(found: FilterVerdict) -> int:
    """What ``found`` weighs: `VERDICT`, and each result's strings and `RESULT` (a verdict may
    name a category, a severity or a blocklist id as long as an event is)."""
    weight = VERDICT
    for r in found.results:
        weight += RESULT + len(r.category) + len(r.severity or "") + len(r.id or "")
    return weight
