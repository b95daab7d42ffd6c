"""The svir command, run as a person would: a real process, real files."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers import ROOT


def svir(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "svir_proto.cli", *args],
        input=stdin,
        capture_output=True,
        cwd=ROOT,
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


def test_decode_shows_typed_events_and_the_result() -> None:
    out = svir("decode", "examples/tool-calls.sse", "--piece", "7")
    assert out.returncode == 0, out.stderr
    assert 'tool call #0 call-a lookup({"value":1})' in out.stdout
    assert "call call-b: lookup({'value': 2})" in out.stdout
    assert "complete: True" in out.stdout


def test_decode_think_example() -> None:
    out = svir("decode", "examples/think.sse")
    assert "reasoning 'The user' (think)" in out.stdout
    assert "text: '\\n\\nHello! How can I help?'" in out.stdout


def test_decode_sse_mode_and_stdin() -> None:
    out = svir("decode", "-", "--sse", stdin=b": hi\n\ndata: x\n\ndata: y")
    assert out.returncode == 0
    assert out.stdout.splitlines() == [
        ": hi",
        "ServerSentEvent(event='message', data='x', id='', retry=None)",
        "end of body (an incomplete event was discarded)",
    ]


def test_decode_reports_a_broken_stream_and_keeps_what_came() -> None:
    out = svir(
        "decode", "-", stdin=b'data: {"choices":[{"delta":{"content":"kept"}}]}\n\ndata: {bad\n\n'
    )
    assert out.returncode == 1
    assert "text      'kept'" in out.stdout
    assert "error: a chunk is not JSON" in out.stdout
    assert "complete: False" in out.stdout


def test_decode_recognises_an_llm_stream_body() -> None:
    out = svir("decode", "examples/llm-stream.sse", "--piece", "5")
    assert out.returncode == 0, out.stderr
    assert "(an LLM-Stream body)" in out.stdout
    assert "text: 'The weather in Vienna is 24C and sunny.'" in out.stdout
    assert "complete: True" in out.stdout


def test_translate_shows_the_llm_stream_a_gateway_would_send() -> None:
    out = svir("translate", "examples/tool-calls.sse")
    assert out.returncode == 0, out.stderr
    events = [line for line in out.stdout.splitlines() if line.startswith("event: ")]
    assert events == [
        "event: stream.start",
        "event: content.delta",
        "event: tool.call",
        "event: tool.call",
        "event: content.stop",
        "event: usage",
        "event: stream.end",
    ]


def test_decode_sse_mode_reports_a_broken_stream_and_keeps_what_came() -> None:
    out = svir("decode", "-", "--sse", stdin=b"data: kept\n\ndata: \xff\n\n")
    assert out.returncode == 1
    assert out.stdout.splitlines()[0] == (
        "ServerSentEvent(event='message', data='kept', id='', retry=None)"
    )
    assert "error: invalid UTF-8" in out.stdout


def test_translate_reports_a_broken_upstream() -> None:
    out = svir("translate", "-", stdin=b"data: {bad\n\n")
    assert out.returncode == 1
    assert "error: a chunk is not JSON" in out.stdout


def test_decode_shows_refusals_usage_filters_and_failures() -> None:
    chunks = [
        {"choices": [{"index": 0, "delta": {"refusal": "no"}}]},
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {},
                    "content_filter_results": {"hate": {"filtered": True, "severity": "high"}},
                }
            ]
        },
        {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}},
        {"error": {"message": "boom", "type": "server_error"}},
    ]
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    out = svir("decode", "-", stdin=body)
    assert "refusal   'no'" in out.stdout
    assert "filter    completion: FILTERED (1 categories)" in out.stdout
    assert "usage     prompt=3 completion=1" in out.stdout
    assert "failed    " in out.stdout
    assert ": boom" in out.stdout


def test_svir_runs_without_the_extras() -> None:
    """`./scripts/demo` installs only the ``fast`` extra: ``svir chat`` and ``svir decode``
    must not need anyio, httpcore or httpx (``svir gateway`` imported anyio for every command,
    and the demo failed on a fresh clone); ``svir gateway --backend trio`` says what it
    needs."""
    blocked = "import sys\nfor m in ('anyio', 'trio', 'httpcore', 'httpx'): sys.modules[m] = None\n"
    run = blocked + "from svir_proto.cli import main\nraise SystemExit(main(sys.argv[1:]))\n"

    def svir_bare(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", run, *args], capture_output=True, text=True, cwd=ROOT
        )

    decoded = svir_bare("decode", "examples/think.sse")
    assert decoded.returncode == 0, decoded.stderr
    assert "complete" in decoded.stdout
    assert svir_bare("chat", "--help").returncode == 0
    # on asyncio the gateway needs none of them either; trio runs it on anyio, an extra
    assert svir_bare("gateway", "--help").returncode == 0
    gateway = svir_bare("gateway", "--upstream", "http://127.0.0.1:9", "--backend", "trio")
    assert gateway.returncode == 2
    assert "svir-proto[trio]" in gateway.stderr


def test_decode_shows_signed_reasoning_and_cached_tokens() -> None:
    from svir_proto.events import ReasoningDelta, ReasoningSignature, StreamStarted, Usage
    from svir_proto.llmstream import LLMStreamEncoder

    enc = LLMStreamEncoder()
    body = (
        b"".join(
            enc.encode(e)
            for e in (
                StreamStarted(response_id="r", model="m"),
                ReasoningDelta(text="hm", carrier="thinking"),
                ReasoningSignature(signature="s" * 12, carrier="thinking"),
                ReasoningSignature(signature="blob", carrier="thinking", redacted=True),
                Usage(prompt_tokens=3, completion_tokens=1, cached_tokens=2),
            )
        )
        + enc.end()
    )
    out = svir("decode", "-", stdin=body)
    assert "signed    signature (thinking, 12 characters)" in out.stdout
    assert "signed    redacted reasoning (thinking, 4 characters)" in out.stdout
    assert "cached=2" in out.stdout


def test_a_stream_with_no_visible_token_says_its_finish_and_nothing_of_a_first_token() -> None:
    from io import StringIO

    from svir_proto import Completion, Finished, FinishReason, StreamStarted
    from svir_proto.cli.chat import Screen, terminal_safe

    out, err = StringIO(), StringIO()
    screen = Screen(out, err, as_json=False)
    screen.show(StreamStarted(response_id="r", model="m"))
    screen.show(Finished(reason=FinishReason.STOP, raw="stop"))
    screen.summary(Completion(finish_raw="stop"))
    assert err.getvalue() == "finish: stop\n"
    assert terminal_safe("a\x1b[2Jb\tc\n\x9bd\x7f\r") == "a[2Jb\tc\nd"


def test_decode_tells_each_vendors_dialect() -> None:
    for path, said in (
        ("tests/conformance/anthropic/anthropic-parallel-tool-use.sse", "Anthropic Messages"),
        ("tests/conformance/responses/openai-text.sse", "OpenAI Responses"),
        ("tests/conformance/gemini/function-call-2.5.sse", "Gemini"),
    ):
        out = svir("decode", path)
        assert out.returncode == 0, out.stderr
        assert f"({'an' if said[0] in 'AO' else 'a'} {said} body)" in out.stdout
        assert "complete: True" in out.stdout
    # --dialect says it instead: an Anthropic body read as Gemini is not one
    wrong = svir(
        "decode",
        "--dialect",
        "gemini",
        "tests/conformance/anthropic/anthropic-parallel-tool-use.sse",
    )
    assert "complete: True" not in wrong.stdout


def test_every_bound_and_deadline_of_the_gateway_is_an_option() -> None:
    """``svir gateway`` says every `GatewayConfig` bound and deadline is an option: the pool's
    were not (an operator with an upstream not trusted to answer only what it is asked could
    not turn the pool off). Each option is given a value other than its default, and the
    configuration built from them holds every one."""
    import io

    import attrs

    from svir_proto.cli import parser
    from svir_proto.cli.gateway import config_of
    from svir_proto.gateway.config import GatewayConfig

    named = {"max_head_size": "--max-head", "progress_timeout": "--timeout"}
    given = ["gateway", "--upstream", "http://127.0.0.1:9", "--listen", "127.0.0.1:8788"]
    expected: dict[str, object] = {}
    for field in attrs.fields(GatewayConfig):
        if field.type not in ("int", "float") or field.name == "upstream":
            continue
        value = field.default + 3 if field.type == "int" else field.default + 0.5
        given += [named.get(field.name, "--" + field.name.replace("_", "-")), str(value)]
        expected[field.name] = value
    assert {"pool_size", "pool_idle", "drain_limit", "hold_below", "max_streams"} <= set(expected)
    config, host, port = config_of(parser().parse_args(given), io.StringIO())
    assert {name: getattr(config, name) for name in expected} == expected
    assert (host, port) == ("127.0.0.1", 8788)
    refused = parser().parse_args([*given[:3], "--pool-size", "-1"])
    with pytest.raises(ValueError, match=r"^--pool-size must be"):
        config_of(refused, io.StringIO())


def test_the_upstreams_key_may_go_as_a_bearer_token_whatever_its_dialect() -> None:
    """vLLM's /v1/messages reads only ``Authorization: Bearer`` (vllm-project/vllm#51572):
    ``--upstream-key-as-bearer`` sends the key so, where Anthropic's API takes ``x-api-key``."""
    import io

    from svir_proto.cli import parser
    from svir_proto.cli.gateway import config_of
    from svir_proto.exchange import Exchange, PassThrough

    base = ["gateway", "--upstream", "http://127.0.0.1:9", "--upstream-dialect", "messages",
            "--upstream-key", "sk-1"]  # fmt: skip
    relay = PassThrough(content_length=2, dialect="messages", target="/messages")
    for extra, want, unwanted in (
        ([], ("x-api-key", "sk-1"), "authorization"),
        (["--upstream-key-as-bearer"], ("authorization", "Bearer sk-1"), "x-api-key"),
    ):
        config, _, _ = config_of(parser().parse_args([*base, *extra]), io.StringIO())
        sent = {k.lower(): v for k, v in Exchange(config.upstream, relay).headers}
        assert sent[want[0]] == want[1]
        assert unwanted not in sent


def test_the_gateway_takes_an_llm_stream_upstream() -> None:
    import io

    from svir_proto.cli import parser
    from svir_proto.cli.gateway import config_of

    args = ["gateway", "--upstream", "http://127.0.0.1:9", "--upstream-dialect", "llm-stream"]
    config, _, _ = config_of(parser().parse_args(args), io.StringIO())
    assert config.upstream_dialect == "llm-stream"
    with pytest.raises(SystemExit):
        parser().parse_args([*args[:-1], "llm"])


def test_gateway_help_says_each_default_once(capsys: pytest.CaptureFixture[str]) -> None:
    """Every default worth saying once (a help that names its default is not told it again),
    and none for an option without one."""
    from svir_proto.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["gateway", "--help"])
    assert exited.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert text.count("(default: chat)") == 1
    assert "(default: 127.0.0.1:8787)" in text
    assert "(default: $OPENAI_API_KEY;" in text
    assert "(default: None)" not in text
    assert "(default: [])" not in text
    assert "(default: False)" not in text


def test_a_gateway_log_record_is_bounded() -> None:
    """Attack 69 F1: a walk out of Python's stack logged a traceback of a thousand frames, 190
    KB for a 12 KB request; a record keeps its beginning and its end (the error), within the
    bound, and says how much it left out."""
    import logging

    from svir_proto.cli.gateway import _MAX_LOG_RECORD, _Bounded

    def down(n: int) -> int:  # (two functions: a traceback folds one repeated line)
        return deeper(n + 1)

    def deeper(n: int) -> int:
        return down(n + 1)

    try:
        down(0)
    except RecursionError:
        record = logging.LogRecord("svir", logging.ERROR, __file__, 1, "failed: %s", ("x",), None)
        record.exc_info = sys.exc_info()
    text = _Bounded("%(message)s").format(record)
    assert len(text) < _MAX_LOG_RECORD + 80
    assert text.startswith("failed: x\nTraceback")
    assert text.endswith("RecursionError: maximum recursion depth exceeded")
    assert "characters left out" in text
    short = logging.LogRecord("svir", logging.INFO, __file__, 1, "ok %d", (1,), None)
    assert _Bounded("%(message)s").format(short) == "ok 1"
