"""Replay every fuzz corpus through its harness's invariant, without atheris."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.helpers import ROOT

FUZZ = ROOT / "fuzz"
TARGETS = sorted(p for p in FUZZ.glob("fuzz_*.py"))


def load(path: Path) -> ModuleType:
    sys.path.insert(0, str(FUZZ))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CASES = [
    (t, f)
    for t in TARGETS
    for f in sorted((FUZZ / "corpus" / t.stem.removeprefix("fuzz_")).iterdir())
]


def test_every_target_has_a_corpus() -> None:
    assert TARGETS
    for t in TARGETS:
        corpus = FUZZ / "corpus" / t.stem.removeprefix("fuzz_")
        assert corpus.is_dir(), f"{t.name} has no corpus"
        assert any(corpus.iterdir()), f"{t.name} has an empty corpus"


@pytest.mark.parametrize(("target", "seed"), CASES, ids=[f"{t.stem}/{f.name}" for t, f in CASES])
def test_replay(target: Path, seed: Path) -> None:
    load(target).test_one_input(seed.read_bytes())


def test_the_invariant_can_fail() -> None:
    harness = load(FUZZ / "_harness.py")

    class Flaky:  # gives different results whole and bytewise: the check must notice
        def __init__(self) -> None:
            self.calls = 0

        def feed(self, data: bytes) -> list[object]:
            self.calls += 1
            return [self.calls]

        def close(self) -> list[object]:
            return []

    with pytest.raises(AssertionError, match="differ"):
        harness.check(Flaky, b"ab")


def test_fuzz_crash_adjacent_comments_are_not_joined() -> None:
    """fuzz/corpus/sse/crash-adjacent-comments: the harness joined any adjacent items with a
    text field, and two comments in a row (NamedTuples) cannot be joined that way. Only deltas
    of one kind are joined now; comments stay apart."""
    harness = load(FUZZ / "_harness.py")
    from svir_proto import SSEComment, TextDelta

    items = [SSEComment(text="a"), SSEComment(text="b"), TextDelta(text="x"), TextDelta(text="y")]
    assert harness.normalise(items) == [
        SSEComment(text="a"),
        SSEComment(text="b"),
        TextDelta(text="xy"),
    ]
    load(FUZZ / "fuzz_sse.py").test_one_input(
        (FUZZ / "corpus" / "sse" / "crash-adjacent-comments").read_bytes()
    )
