"""Hypothesis: what a translated body holds of the gateway's body budget (`_cost.BodyCost`,
taken as its pieces come) is the same whatever the reads, up to one escaped quote a cut (Rule 2:
counted once more, never less), and so is what the gateway does with the request.
"""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from svir_proto.gateway import GatewayConfig, GatewayConnection, GatewayState, Prepare
from svir_proto.gateway._cost import PER_VALUE, BodyCost
from svir_proto.openai import Endpoint
from tests.helpers import split_at

TEXT = st.text(alphabet='ab ,{["\\\n\u00e9\u0101\U0001f600', max_size=12)
MESSAGES = st.lists(
    st.one_of(
        TEXT,
        st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": TEXT}), max_size=3),
    ),
    min_size=1,
    max_size=30,
)


def body_of(contents: list[object], raw: bool) -> bytes:
    doc = {"model": "m", "max_tokens": 5, "stream": True}
    doc["messages"] = [{"role": "user", "content": c} for c in contents]  # type: ignore[assignment]
    return json.dumps(doc, ensure_ascii=not raw).encode()  # raw UTF-8, or escaped


class Recording(GatewayState):
    """The most of the budget held at once."""

    peak = 0

    def hold(self, n: int) -> bool:
        taken = super().hold(n)
        self.peak = max(self.peak, self.buffered)
        return taken


def held(body: bytes, reads: list[bytes], max_buffered: int) -> tuple[int, list[str]]:
    """The most of the budget the body held, and the kinds of the gateway's events."""
    config = GatewayConfig(
        upstream=Endpoint.parse("http://upstream.test"),
        upstream_dialect="chat",
        max_buffered=max_buffered,
    )
    state = Recording(config, new_id=lambda: "id")
    conn = GatewayConnection(config, state)
    head = (
        b"POST /v1/messages HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body)
    )
    events = conn.feed(head)
    for data in reads:
        events += conn.feed(data)
    kinds = [type(e).__name__ for e in events]
    if events and isinstance(events[-1], Prepare):
        conn.prepared(events[-1].run())
    assert state.buffered in (0, state.peak)  # held while it is answered (attack 39 F5)
    assert (state.buffered == 0) == (kinds == ["Reply"])  # (or refused: given back)
    conn.finish_request()
    assert state.buffered == 0  # given back once answered
    return state.peak, kinds


@given(MESSAGES, st.booleans(), st.lists(st.integers(min_value=0, max_value=4000), max_size=12))
def test_the_budget_a_body_holds_does_not_depend_on_the_reads(
    contents: list[object], raw: bool, cuts: list[int]
) -> None:
    body = body_of(contents, raw)
    reads = split_at(body, cuts)
    cost = BodyCost().add(body)
    whole, kinds = held(body, [body], 1 << 40)
    assert kinds in (["Forward"], ["Reply"])  # small: prepared at once (a 400 if invalid)
    split, split_kinds = held(body, reads, 1 << 40)
    assert split_kinds == kinds
    assert whole == cost
    assert cost <= split <= cost + PER_VALUE // 2 * (len(reads) - 1)
    # far from the bound, the verdict is the same whatever the reads
    for bound in (cost // 4, cost * 4):
        assert held(body, [body], bound)[1] == held(body, reads, bound)[1]
