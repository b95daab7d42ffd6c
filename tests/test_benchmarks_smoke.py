"""Each benchmark runs once, tiny, so that none of them rots (STYLE.md 9). Numbers come from
running them on a quiet machine, never from here."""

from __future__ import annotations

import pytest

from benchmarks import openai as bench_openai
from benchmarks import request as bench_request
from benchmarks import sse as bench_sse
from benchmarks import typed_sse as bench_typed_sse


def test_sse_benchmark_runs_and_all_decoders_agree() -> None:
    out = bench_sse.run(chunks=200, repeat=1)
    assert "httpx-sse" in out
    assert "svir-proto" in out


def test_typed_sse_benchmark_runs_every_shape_and_every_pipeline_sees_every_event() -> None:
    out = bench_typed_sse.run(chunks=100, repeat=1, shapes=list(bench_typed_sse.SHAPES))
    for name in ("Anthropic", "Responses", "CRLF", "LLM-Stream", "own _on_typed", "SSEDecoder"):
        assert name in out


def test_openai_benchmark_runs_every_shape_and_the_results_agree() -> None:
    out = bench_openai.run(chunks=200, repeat=1, shapes=["chat", "tools", "azure", "crlf"])
    for name in ("openai-python", "floor", "httpx-sse + dict", "Azure", "CRLF", "tool calls"):
        assert name in out


def test_request_benchmark_runs(capsys: pytest.CaptureFixture[str]) -> None:
    bench_request.main(["--images", "1", "--mib", "1"])
    assert "svir-proto RequestBody" in capsys.readouterr().out


def test_transport_benchmark_runs_every_client() -> None:
    from benchmarks import transport as bench_transport

    out = bench_transport.run(chunks=50, repeat=1)
    for name in ("svir blocking", "svir anyio (trio)", "svir httpx", "openai-python", "httpx-sse"):
        assert name in out


def test_gateway_benchmark_runs_and_loses_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import gateway as bench_gateway

    # --quick: 4 streams of 20 chunks, paced and unpaced, 2 probes, one round, every lane it
    # finds (nginx and uvloop when installed; LiteLLM is left out: it takes a minute to start)
    bench_gateway.main(["--quick", "--litellm", "none"])
    out = capsys.readouterr().out
    assert "lost 0, duplicated 0, reordered 0, different 0" in out
    assert "answers compared with the upstream's: 0," not in out
    assert "CPU µs per event, unpaced 4" in out
    assert "probe TTFT ms under load, p50 / p99, paced 4" in out
    assert "\nLiteLLM: " in out  # it says which peers it found
    assert "svir trio LS" in out


def test_responses_benchmark_runs_every_shape() -> None:
    from benchmarks import responses as bench_responses

    out = bench_responses.run(chunks=200, repeat=1, shapes=list(bench_responses.SHAPES))
    for name in ("floor", "openai-python", "llama.cpp", "function calls", "signed reasoning"):
        assert name in out


def test_anthropic_benchmark_runs_every_shape() -> None:
    from benchmarks import anthropic as bench_anthropic

    out = bench_anthropic.run(chunks=200, repeat=1, shapes=list(bench_anthropic.SHAPES))
    for name in ("floor", "svir-proto (orjson)", "extended thinking", "tool_use"):
        assert name in out


def test_imports_benchmark_runs() -> None:
    from benchmarks import imports as bench_imports

    out = bench_imports.run(repeat=1)
    assert "import svir_proto" in out
    assert "ratio to import httpx" in out


def test_soak_benchmark_runs_and_leaves_nothing_held() -> None:
    from benchmarks import soak as bench_soak

    out = bench_soak.run(seconds=2, streams=8, backend="asyncio")
    assert "gateway alive afterwards: yes" in out
    assert "slots left held afterwards: 0, body-budget bytes left held: 0" in out
    assert "lost: 0" in out


def test_watch_benchmark_runs_every_shape() -> None:
    from benchmarks import watch as bench_watch

    out = bench_watch.run(chunks=100, repeat=1)
    for name in ("watcher, line break never", "decoder, line break 1 in 3", "floor"):
        assert name in out


def test_answer_benchmark_runs_every_shape() -> None:
    from benchmarks import answer as bench_answer

    out = bench_answer.run(deltas=60, repeat=1)
    for name in bench_answer.SHAPES:
        assert name in out
