"""Inline ``<think>...</think>`` reasoning inside ``content`` (wire reference section 4).

Servers without a reasoning parser (llama.cpp, mlx-lm) put the model's reasoning in the answer
text between markers, and a marker can be split across chunks anywhere: ``a<thi`` then
``nk>b</think>c`` is answer ``ac`` and reasoning ``b``. The splitter holds back only a suffix
that could still become a marker (at most 8 characters), so it never delays text more than that,
and gives it back at the end as what it was: an unfinished marker at the very end is text.

A ``</think>`` outside reasoning is text: the server sent it, and without ``opened=True`` there
is no way to know the template opened reasoning in the prompt.
"""

from __future__ import annotations

from typing import Final

__all__ = ["ThinkSplitter"]

_OPEN: Final = "<think>"
_CLOSE: Final = "</think>"


class ThinkSplitter:
    """Split content into (is_reasoning, text) pieces, across chunks.

    Args:
        opened: the chat template opened ``<think>`` in the prompt, so content starts inside
            reasoning.
    """

    __slots__ = ("held", "inside")

    def __init__(self, *, opened: bool = False) -> None:
        self.inside = opened
        self.held = ""  # a suffix that may be the start of a marker

    def split(self, text: str) -> list[tuple[bool, str]]:
        """The pieces of ``text``, each marked reasoning or not; markers removed."""
        if not self.held:  # no marker in it, and no end that may begin one: all of it at once
            marker = _CLOSE if self.inside else _OPEN
            if marker not in text and "<" not in text[1 - len(marker) :]:
                return [(self.inside, text)] if text else []
        s = self.held + text
        self.held = ""
        out: list[tuple[bool, str]] = []
        while s:
            marker = _CLOSE if self.inside else _OPEN
            i = s.find(marker)
            if i >= 0:
                if i:
                    out.append((self.inside, s[:i]))
                s = s[i + len(marker) :]
                self.inside = not self.inside
                continue
            keep = _partial_suffix(s, marker)
            if len(s) > keep:
                out.append((self.inside, s[: len(s) - keep]))
            self.held = s[len(s) - keep :] if keep else ""
            break
        return out

    def flush(self) -> list[tuple[bool, str]]:
        """The held-back text at the end of the content: an unfinished marker is text."""
        held, self.held = self.held, ""
        return [(self.inside, held)] if held else []


def _partial_suffix(s: str, marker: str) -> int:
    """The length of the longest suffix of ``s`` that is a proper prefix of ``marker``."""
    start = s.rfind("<", max(0, len(s) - len(marker) + 1))
    while start >= 0:
        if marker.startswith(s[start:]):
            return len(s) - start
        start = s.rfind("<", max(0, len(s) - len(marker) + 1), start)
    return 0
