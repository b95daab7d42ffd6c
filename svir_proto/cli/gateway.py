"""``svir gateway``: LLM-Stream and OpenAI in front of any OpenAI-compatible server."""

from __future__ import annotations

import logging
import os
import sys
from typing import Any, TextIO

from ..openai.endpoint import Endpoint
from ..transports._shared import Timeouts

__all__ = ["gateway"]


def gateway(args: Any, err: TextIO = sys.stderr) -> int:
    """Run the gateway until SIGTERM or Ctrl-C; returns the exit status."""
    try:
        key = args.upstream_key or os.environ.get("OPENAI_API_KEY") or None
        upstream = Endpoint.parse(args.upstream, key)
        host, _, port = args.listen.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"--listen {args.listen!r} must be HOST:PORT")
    except ValueError as exc:
        err.write(f"svir: {exc}\n")
        return 2
    try:  # the gateway runs on anyio, an extra: the rest of `svir` does without it
        from ..transports.gateway import GatewayServer, serve_forever
    except ImportError as exc:
        err.write(f"svir: svir gateway needs anyio: pip install 'svir-proto[async]' ({exc})\n")
        return 2
    logging.basicConfig(level=logging.INFO, stream=err, format="%(asctime)s %(message)s")
    timeouts = Timeouts(first_byte=args.timeout, read=args.timeout) if args.timeout else Timeouts()
    server = GatewayServer(
        upstream,
        token=args.token,
        max_streams=args.max_streams,
        timeouts=timeouts,
        grace=args.grace,
    )
    return serve_forever(server, host.strip("[]"), int(port), args.backend)
