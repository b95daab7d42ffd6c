"""An agent loop with tools, under asyncio or trio: ask, run the tools the model calls, send their
results back, until the model answers in words (or a few turns have passed).

    python examples/agent.py --base-url http://localhost:8080 [--backend trio] "What time is it?"

Without ``--base-url``, the server of ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``, as
openai-python reads them. Exit status 0 when the model answered, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable

import anyio

from svir_proto import (
    FinishReason,
    ReasoningDelta,
    RequestFailedError,
    Retrying,
    StreamEnded,
    StreamFailed,
    TextDelta,
    ToolCall,
)
from svir_proto.openai import AssistantMessage, ChatRequest, Message, Tool, ToolMessage, UserMessage
from svir_proto.transports import IncompleteStreamError
from svir_proto.transports.anyio import Client

if sys.version_info >= (3, 11):
    from typing import assert_never
else:  # pragma: no cover - the examples run on 3.11
    from typing_extensions import assert_never


def clock(args: dict[str, object]) -> str:
    return time.strftime("%H:%M", time.gmtime())


def add(args: dict[str, object]) -> str:
    a, b = args.get("a"), args.get("b")
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return json.dumps({"error": "a and b must be numbers"})
    return json.dumps({"sum": a + b})


TOOLS: dict[str, tuple[Tool, Callable[[dict[str, object]], str]]] = {
    "clock": (Tool(name="clock", description="The time now, UTC, as HH:MM."), clock),
    "add": (
        Tool(
            name="add",
            description="Add two numbers.",
            parameters={
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"],
            },
        ),
        add,
    ),
}


def run_tool(call: ToolCall) -> str:
    """A tool's result as the content of a tool message (an error is said in it, too)."""
    parsed = call.parse_arguments()
    if parsed.error is not None or not isinstance(parsed.value, dict):
        return json.dumps({"error": f"bad arguments: {parsed.error or parsed.value!r}"})
    entry = TOOLS.get(call.name)
    if entry is None:
        return json.dumps({"error": f"no tool named {call.name}"})
    return entry[1](parsed.value)


async def agent(client: Client, model: str, prompt: str, *, turns: int = 4) -> str | None:
    """The answer in words, or ``None`` when the model still called tools after ``turns``."""
    messages: list[Message] = [UserMessage(content=prompt)]
    for _ in range(turns):
        request = ChatRequest(
            model=model,
            messages=messages,
            tools=[tool for tool, _ in TOOLS.values()],
            include_usage=True,
            max_tokens=128,
        )
        async with client.stream_chat(request) as stream:
            async for event in stream:
                match event:
                    case TextDelta():
                        print(event.text, end="", flush=True)
                    case ReasoningDelta():
                        pass  # kept in stream.result.reasoning, sent back below
                    case ToolCall():
                        print(f"\n[calling {event.name}({event.arguments})]", flush=True)
                    case Retrying():
                        print(f"[{event.reason}]", file=sys.stderr)
                    case StreamFailed() | StreamEnded():
                        pass  # raise_on_failure raises once the stream has ended
                    case _:
                        pass  # ResponseStarted, Usage, deltas of the calls...
        result = stream.result
        messages.append(AssistantMessage.from_completion(result))
        if result.finish_reason is not FinishReason.TOOL_CALLS or not result.tool_calls:
            print()
            return result.text
        for call in result.tool_calls:
            messages.append(ToolMessage(tool_call_id=call.id, content=run_tool(call)))
    return None


async def main(args: argparse.Namespace) -> int:
    client = (
        Client(args.base_url, api_key=args.api_key, raise_on_failure=True)
        if args.base_url
        else Client.from_env()
    )
    async with client:
        try:
            model = args.model or next(m.id for m in await client.list_models())
            answer = await agent(client, model, args.prompt)
        except RequestFailedError as exc:  # its kind's class: RateLimitedError, ...
            print(f"the server said no: {exc}", file=sys.stderr)
            return 1
        except IncompleteStreamError as exc:
            print(f"the answer was cut: {exc}", file=sys.stderr)
            return 1
    return 0 if answer is not None else 1


def check_exhaustive(event: TextDelta | ToolCall) -> str:
    """`match` over the event types, checked to the end by the type checker (assert_never)."""
    match event:
        case TextDelta():
            return event.text
        case ToolCall():
            return event.name
        case _:
            assert_never(event)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("prompt")
    parser.add_argument("--base-url")
    parser.add_argument("--api-key")
    parser.add_argument("--model")
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    ns = parser.parse_args()
    sys.exit(anyio.run(main, ns, backend=ns.backend))
