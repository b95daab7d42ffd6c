"""``svir gateway``: LLM-Stream and OpenAI in front of any OpenAI-compatible server.

Every bound and deadline of `GatewayConfig` is an option here, with its default in ``--help``.
The gateway's own token comes from ``$SVIR_GATEWAY_TOKEN`` or ``--token-file`` (a token on the
command line is visible to every local user: ``--token`` still works, with a warning).
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import sys
from typing import Any, Final, TextIO

from ..dialects import dialect
from ..gateway._http import LOOPBACK_HOSTS
from ..gateway.config import GatewayConfig
from ..openai.endpoint import Endpoint

__all__ = ["add_parser", "config_of", "gateway"]

UPSTREAM_DIALECTS: Final = ("chat", "messages", "responses", "gemini", "llm-stream")
_DEFAULTS = GatewayConfig(upstream=Endpoint.parse("http://upstream.invalid"))


_MAX_LOG_RECORD: Final = 16384
"""Characters one log record may take: what a peer can make the gateway write is bounded too
(attack 69 F1: a request that ran a walk out of Python's stack logged a traceback of a
thousand frames, some 190 KB for 12 KB sent)."""


class _Bounded(logging.Formatter):
    """A log record of at most `_MAX_LOG_RECORD` characters: its beginning and its end, with
    how much was left out between them (a traceback's last frames and its error are at its
    end)."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        if len(text) <= _MAX_LOG_RECORD:
            return text
        half = _MAX_LOG_RECORD // 2
        return (
            f"{text[:half]}\n... ({len(text) - 2 * half} characters left out) ...\n{text[-half:]}"
        )


class _DefaultsShown(argparse.HelpFormatter):
    """Each option's default after its help, when it has one worth saying: not for an option
    without one (``None``, an empty list, a flag's ``False``) or whose help says it already."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "(default" in text or action.default in (None, [], False, argparse.SUPPRESS):
            return text
        return f"{text} (default: %(default)s)"


def add_parser(sub: Any) -> None:
    """The ``gateway`` command's options."""
    g = sub.add_parser(
        "gateway",
        help="serve LLM-Stream and OpenAI in front of a server",
        formatter_class=_DefaultsShown,
    )
    g.add_argument("--upstream", required=True, help="the upstream server's base URL (to /v1)")
    g.add_argument(
        "--upstream-dialect", choices=UPSTREAM_DIALECTS, default="chat",
        help="what the upstream speaks: OpenAI's Chat Completions (chat), Anthropic's Messages "
        "(messages), OpenAI's Responses (responses), Gemini (gemini) or the IETF LLM-Stream "
        "draft (llm-stream: another svir gateway, say); clients of the other dialects are "
        "translated",
    )  # fmt: skip
    g.add_argument(
        "--upstream-key",
        help="the upstream's API key (default: $OPENAI_API_KEY; $ANTHROPIC_API_KEY for "
        "messages, $GEMINI_API_KEY for gemini)",
    )
    g.add_argument(
        "--upstream-key-as-bearer", action="store_true",
        help="send the upstream's key as Authorization: Bearer whatever its dialect (an "
        "Anthropic-compatible server that reads no x-api-key: vLLM's /v1/messages)",
    )  # fmt: skip
    g.add_argument("--listen", default="127.0.0.1:8787", help="HOST:PORT")
    g.add_argument(
        "--token-file",
        help="a file holding the bearer token clients must send (or $SVIR_GATEWAY_TOKEN); "
        "without a token only the hosts of --allow-host, the address listened on and "
        "loopback names may be named in Host (421 for others: DNS rebinding)",
    )
    g.add_argument("--token", help=argparse.SUPPRESS)  # visible to every local user: warned
    g.add_argument(
        "--allow-host", action="append", default=[], help="a Host name to answer (repeatable)"
    )
    g.add_argument("--public-metrics", action="store_true", help="serve /metrics without the token")
    g.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    g.add_argument("--grace", type=float, default=10.0, help="seconds to finish on SIGTERM")
    d = _DEFAULTS
    limits = g.add_argument_group("bounds (bytes and counts)")
    limits.add_argument(
        "--max-streams",
        type=int,
        default=d.max_streams,
        help="requests relayed at once; past it 503 with Retry-After",
    )
    limits.add_argument(
        "--max-answer",
        type=int,
        default=d.max_answer,
        help="characters of an answer held: a whole answer (a client that asked for no "
        "stream), or for its final events (a Responses client's); past it an error",
    )
    limits.add_argument(
        "--max-connections",
        type=int,
        default=d.max_connections,
        help="client connections at once; past it 503 and closed at once",
    )
    limits.add_argument(
        "--max-event",
        type=int,
        default=d.max_event,
        help="bytes of one event of the upstream's stream (held until it is whole: twice by a "
        "relay)",
    )
    limits.add_argument(
        "--max-partial",
        type=int,
        default=d.max_partial,
        help="bytes of upstream events not whole yet held at once, all streams together "
        "(twice each relayed one, past 128 KiB a stream), and of answers written to clients "
        "that have not taken them (past 128 KiB a client); a stream whose event does not fit "
        "ends with an error, a client whose answer does not fit loses its connection",
    )
    limits.add_argument(
        "--max-requests",
        type=int,
        default=d.max_requests,
        help="requests one client connection may make (the last answer closes it)",
    )
    limits.add_argument(
        "--max-body", type=int, default=d.max_body, help="bytes of a request body (413 past it)"
    )
    limits.add_argument(
        "--max-buffered",
        type=int,
        default=d.max_buffered,
        help="bytes of request bodies held at once across all clients (503)",
    )
    limits.add_argument(
        "--max-head",
        type=int,
        default=d.max_head_size,
        help="bytes of a request head (431 past it)",
    )
    limits.add_argument(
        "--hold-below",
        type=int,
        default=d.hold_below,
        help="bytes of a relayed request body held whole (and sent again on a closed kept-alive "
        "upstream connection); a longer one streams through on a new connection",
    )
    limits.add_argument(
        "--pool-size",
        type=int,
        default=d.pool_size,
        help="idle upstream connections kept for reuse (0: a new connection for every request, "
        "for an upstream not trusted to answer only what it is asked)",
    )
    limits.add_argument(
        "--drain-limit",
        type=int,
        default=d.drain_limit,
        help="bytes read after a whole answer to reach its body's end and keep its connection",
    )
    times = g.add_argument_group("deadlines (seconds)")
    times.add_argument(
        "--timeout",
        type=float,
        default=d.progress_timeout,
        help="no progress from the upstream (keep-alive comments are not "
        "progress) ends the stream with an error and the end marker",
    )
    times.add_argument(
        "--keepalive",
        type=float,
        default=d.keepalive,
        help="an SSE comment to a waiting streaming client this often (0: never)",
    )
    times.add_argument(
        "--head-timeout",
        type=float,
        default=d.head_timeout,
        help="to receive a whole request head (408)",
    )
    times.add_argument(
        "--body-timeout",
        type=float,
        default=d.body_timeout,
        help="silence while receiving a request body (408)",
    )
    times.add_argument(
        "--body-rate",
        type=float,
        default=d.body_rate,
        help="bytes a second a body held whole must average beyond --body-timeout (408)",
    )
    times.add_argument(
        "--idle-timeout",
        type=float,
        default=d.idle_timeout,
        help="a kept-alive client connection with no request (closed)",
    )
    times.add_argument(
        "--send-timeout",
        type=float,
        default=d.send_timeout,
        help="a client that reads nothing this long loses its stream",
    )
    times.add_argument("--connect-timeout", type=float, default=d.connect_timeout,
                       help="to reach the upstream")  # fmt: skip
    times.add_argument("--pool-idle", type=float, default=d.pool_idle,
                       help="an idle upstream connection is kept this long")  # fmt: skip


def token_of(args: Any, err: TextIO) -> str | None:
    """The gateway's token: --token-file, else $SVIR_GATEWAY_TOKEN, else --token (warned)."""
    if args.token_file:
        with open(args.token_file, encoding="utf-8") as f:
            token = f.read().strip()
        if not token:
            raise ValueError(f"--token-file {args.token_file!r} is empty")
        return token
    env = os.environ.get("SVIR_GATEWAY_TOKEN", "").strip()
    if env:
        return env
    if args.token:
        err.write(
            "svir: warning: a token given with --token is visible to every local user "
            "(ps); use --token-file or $SVIR_GATEWAY_TOKEN\n"
        )
        return str(args.token)
    return None


def config_of(args: Any, err: TextIO) -> tuple[GatewayConfig, str, int]:
    """The gateway's configuration and the address it listens on, from its options; a
    ValueError or OSError says which option is wrong."""
    spec = dialect(args.upstream_dialect)  # its package is installed
    key = args.upstream_key or os.environ.get(spec.key_variable) or None
    upstream = Endpoint.parse(args.upstream, key, bearer=args.upstream_key_as_bearer)
    host, _, port = args.listen.rpartition(":")
    if not host or not (port.isascii() and port.isdigit()):
        raise ValueError(f"--listen {args.listen!r} must be HOST:PORT")
    host = host.strip("[]")
    token = token_of(args, err)
    allowed = None
    if token is None:
        allowed = frozenset({*LOOPBACK_HOSTS, host.lower(), *(h.lower() for h in args.allow_host)})
    try:
        config = _config(args, upstream, token, allowed)
    except ValueError as exc:  # it begins with the field's name: say the option's
        field, _, rest = str(exc).partition(" ")
        raise ValueError(f"{_OPTIONS.get(field, '--' + field.replace('_', '-'))} {rest}") from exc
    return config, host, int(port)


_OPTIONS: Final = {"max_head_size": "--max-head", "progress_timeout": "--timeout"}
"""The options whose names are not their `GatewayConfig` field's."""


def _config(
    args: Any, upstream: Endpoint, token: str | None, allowed: frozenset[str] | None
) -> GatewayConfig:
    return GatewayConfig(
        upstream=upstream,
        upstream_dialect=args.upstream_dialect,
        token=token,
        allowed_hosts=allowed,
        public_metrics=args.public_metrics,
        max_streams=args.max_streams,
        max_answer=args.max_answer,
        max_connections=args.max_connections,
        max_requests=args.max_requests,
        max_body=args.max_body,
        max_buffered=args.max_buffered,
        max_head_size=args.max_head,
        progress_timeout=args.timeout,
        keepalive=args.keepalive,
        head_timeout=args.head_timeout,
        body_timeout=args.body_timeout,
        body_rate=args.body_rate,
        idle_timeout=args.idle_timeout,
        send_timeout=args.send_timeout,
        connect_timeout=args.connect_timeout,
        hold_below=args.hold_below,
        drain_limit=args.drain_limit,
        max_event=args.max_event,
        max_partial=args.max_partial,
        pool_size=args.pool_size,
        pool_idle=args.pool_idle,
    )


def gateway(args: Any, err: TextIO = sys.stderr) -> int:
    """Run the gateway until SIGTERM or Ctrl-C; returns the exit status."""
    try:
        config, host, port = config_of(args, err)
    except (ValueError, OSError) as exc:
        err.write(f"svir: {exc}\n")
        return 2
    from ..transports.gateway import GatewayServer, serve_forever

    if args.backend == "trio":
        try:  # trio runs the gateway on anyio, an extra: the rest of `svir` does without it
            import anyio  # noqa: F401
            import trio  # noqa: F401
        except ImportError as exc:
            err.write(f"svir: svir gateway --backend trio needs 'svir-proto[trio]' ({exc})\n")
            return 2
    handler = logging.StreamHandler(err)
    handler.setFormatter(_Bounded("%(asctime)s %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    server = GatewayServer(config, grace=args.grace)
    # what the process holds once it has started (modules, the dialects' tables) is never
    # garbage: the collector's full passes no longer walk it while streams are served
    gc.collect()
    gc.freeze()
    return serve_forever(server, host, port, args.backend)
