"""The Gemini benchmark runs once, tiny, so that it does not rot (STYLE.md 9); numbers come from
running it on a quiet machine, never from here."""

from __future__ import annotations

from benchmarks import gemini as bench_gemini


def test_gemini_benchmark_runs_every_shape_and_the_answers_are_whole() -> None:
    out = bench_gemini.run(chunks=100, repeat=1, shapes=list(bench_gemini.SHAPES))
    for name in ("floor: split + json.loads", "svir-proto (orjson)", "thought summaries", "safety"):
        assert name in out
    assert "worst" in out
