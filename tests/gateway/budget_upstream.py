"""An upstream for `test_hostile_budget`: the hub battery's (`HubUpstream`, whose every
scenario it still serves), plus, chosen by the request id ``NAME[:ARG]~TAG``:

- ``wide-delta:MIB``: an OpenAI stream whose one text delta is ``MIB`` MiB of ASCII and then
  one character past U+FFFF (raw UTF-8, in one SSE event within the framer's 8 MiB), then
  ``finish_reason: stop`` and ``[DONE]``.
- ``ascii-delta:MIB``: the same without the wide character.
"""

from __future__ import annotations

from typing import Final

from tests.gateway.hostile_upstream import SSE_HEAD, Seen, chunk
from tests.gateway.hub_upstream import DONE, HubUpstream, _HubConn, chat_chunk

BUDGET_SCENARIOS: Final = frozenset({"wide-delta", "ascii-delta"})


class _BudgetConn(_HubConn):
    def serve(self, seen: Seen) -> bool:
        name, *args = seen.rid.split("~", 1)[0].split(":")
        if name not in BUDGET_SCENARIOS:
            return super().serve(seen)
        seen.body = self.read_body(seen)
        seen.body_size = len(seen.body)
        text = "a" * int(float(args[0]) * 1024 * 1024)
        if name == "wide-delta":
            text += "\U0001f600"
        events = [
            chat_chunk({"role": "assistant", "content": ""}),
            chat_chunk({"content": text}),
            chat_chunk({}, "stop"),
            DONE,
        ]
        self.send(SSE_HEAD + b"".join(chunk(e) for e in events) + b"0\r\n\r\n")
        return True


class BudgetUpstream(HubUpstream):
    """`HubUpstream` with the scenarios above."""

    connection = _BudgetConn
