"""The ``svir`` command: what svir-proto sees in a stream, shown to a person.

- ``svir chat PROMPT``: stream an answer from a server (`chat`);
- ``svir models``: what a server lists, chat models apart (`chat.models`);
- ``svir decode FILE``: the typed events of a recorded body, offline (`decode`);
- ``svir translate FILE``: what a gateway sends an LLM-Stream client for an OpenAI body;
- ``svir gateway --upstream URL``: LLM-Stream and OpenAI in front of an OpenAI-compatible server.

This package is the one part of the core allowed to reach the transports and to read clocks:
a person's screen needs both.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..dialects import DIALECTS
from . import chat, decode, gateway

__all__ = ["main"]

_EXITS = ", ".join(f"{code} {name}" for name, code in chat.EXIT.items())


def _server_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--base-url",
        help="the server, with or without /v1 (default: $OPENAI_BASE_URL, else OpenAI's)",
    )
    p.add_argument("--api-key", help="sent as a bearer token (default: $OPENAI_API_KEY)")
    p.add_argument("--json", action="store_true", help="one JSON object per line, for scripts")
    p.add_argument(
        "--timeout",
        type=float,
        help="seconds of silence allowed: before the first byte, and between two reads "
        "(default: 300 before the first byte, 120 after)",
    )


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="svir", description=(__doc__ or "").split("\n\n")[0])
    sub = top.add_subparsers(dest="command", required=True)
    c = sub.add_parser(
        "chat",
        help="stream an answer from an OpenAI-compatible server",
        epilog=f"exit statuses: {_EXITS}",
    )
    c.add_argument("prompt", help="what to ask")
    _server_options(c)
    c.add_argument("--model", help="the model id (default: the first chat model listed)")
    c.add_argument("--system", help="a system message")
    c.add_argument("--image", action="append", default=[], help="an image file (repeatable)")
    c.add_argument("--file", action="append", default=[], help="a text file (repeatable)")
    c.add_argument("--max-tokens", type=int, help="cap the answer's length")
    c.add_argument(
        "--dialect", choices=DIALECTS, default="chat",
        help="what the server speaks: OpenAI's Chat Completions (chat, the default), "
        "Anthropic's Messages (messages), OpenAI's Responses (responses), Gemini (gemini) or "
        "LLM-Stream (llm-stream); the key then defaults to that vendor's variable",
    )  # fmt: skip
    m = sub.add_parser("models", help="list a server's models, chat models first")
    _server_options(m)
    d = sub.add_parser("decode", help="decode a recorded response body and show its events")
    d.add_argument("file", help="a recorded body (text/event-stream), or - for stdin")
    d.add_argument("--piece", type=int, default=64, help="feed the body in pieces of N bytes")
    d.add_argument("--sse", action="store_true", help="show the SSE events, not the typed ones")
    d.add_argument(
        "--dialect", choices=DIALECTS, help="the body's dialect (default: told by its first event)"
    )
    t = sub.add_parser("translate", help="translate a recorded OpenAI stream into LLM-Stream")
    t.add_argument("file", help="a recorded OpenAI-compatible body, or - for stdin")
    gateway.add_parser(sub)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "chat":
        return chat.chat(args)
    if args.command == "models":
        return chat.models(args)
    if args.command == "gateway":
        return gateway.gateway(args)
    body = decode.read(args.file)
    lines: list[str] = []
    if args.command == "translate":
        status = decode.translate(body, lines)
    else:
        piece = max(1, args.piece)
        if args.sse:
            status = decode.decode_sse(body, piece, lines)
        else:
            status = decode.decode_events(body, piece, lines, args.dialect)
    print("\n".join(lines))
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
