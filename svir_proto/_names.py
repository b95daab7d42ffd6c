"""When a streamed tool call's name is whole: what the encoders that must name a call before its
arguments (Anthropic's ``content_block_start``, the Responses API's ``output_item.added``)
share. No I/O here.

A name may come in pieces, and not only before the arguments: wire reference 3.3's recorded
example sends ``look``, then ``up`` with more arguments. A name written when the arguments
begin may so be a piece of it, and neither dialect can rename a call once it is written. So
with the tools the request declared known, a name is whole only when it is one of them and no
other declared name goes on from it (``look`` is held while ``lookup`` is declared); the call
then waits, and is written whole at the end if its name never settles. Without them (a caller
that did not say), a name is taken as whole once it is not empty, as the servers that send it
whole in its first piece (all we have met but that one) need.
"""

from __future__ import annotations

from collections.abc import Collection

__all__ = ["name_settled"]


def name_settled(name: str, declared: Collection[str] | None) -> bool:
    """Whether a streamed call's ``name`` can no longer grow (see the module docstring)."""
    if not name:
        return False
    if declared is None:
        return True
    return name in declared and not any(d != name and d.startswith(name) for d in declared)
