"""The requests the live tests send to llama.cpp, and that `tests.live.record` records: one place,
so the recordings in tests/conformance/llamacpp are exactly what the live tests exchange."""

from __future__ import annotations

from typing import Final

import attrs

from svir_proto.events import ToolCall
from svir_proto.llmstream import LLMMessage, LLMRequest
from svir_proto.openai import (
    AssistantMessage,
    ChatRequest,
    ImagePart,
    TextPart,
    Tool,
    UserMessage,
)
from svir_proto.responses import FunctionCall, FunctionTool, InputMessage, ResponsesRequest

MODEL: Final = "smollm2-135m"  # the alias scripts/llama_server.py gives the model
PNG: Final = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d4944415478da63f8ffff3f0005fe02fea7d6a4b000000000"
    "49454e44ae426082"
)  # a 1x1 PNG
WEATHER: Final = Tool(
    name="get_weather",
    description="Get the weather for a city",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)


def _asked(city: str, n: int) -> list[UserMessage | AssistantMessage]:
    call = ToolCall(index=0, id=f"call_{n}", name="get_weather", arguments=f'{{"city": "{city}"}}')
    return [
        UserMessage(content=f"What is the weather in {city}?"),
        AssistantMessage(tool_calls=[call]),
    ]


STREAM: Final = ChatRequest(
    model=MODEL,
    messages=[UserMessage(content="Say hello to Vienna in one short sentence.")],
    include_usage=True,
    temperature=0,
    max_tokens=40,
)
NO_USAGE: Final = ChatRequest(
    model=MODEL,
    messages=[UserMessage(content="Name a colour.")],
    temperature=0,
    max_tokens=12,
)
LENGTH: Final = ChatRequest(
    model=MODEL,
    messages=[UserMessage(content="Tell me a long story about a lighthouse.")],
    include_usage=True,
    temperature=0,
    max_tokens=5,
)
OVERFLOW: Final = ChatRequest(
    model=MODEL,
    messages=[UserMessage(content="word " * 700)],  # more than the 512 tokens of -c
    include_usage=True,
)
IMAGE: Final = ChatRequest(
    model=MODEL,
    messages=[
        UserMessage(content=[TextPart(text="What is in this image?"), ImagePart.from_bytes(PNG)])
    ],
)
TOOL_CALL: Final = ChatRequest(
    # tool_choice "required" alone gets plain text from this llama.cpp (no grammar forces a
    # call); two earlier turns in which the model called the tool make it call it again
    model=MODEL,
    messages=[
        *_asked("Paris", 1),
        *_asked("Rome", 2),
        UserMessage(content="What is the weather in Vienna?"),
    ],
    tools=[WEATHER],
    tool_choice="required",
    include_usage=True,
    temperature=0,
    max_tokens=60,
)
LLM_STREAM: Final = LLMRequest(
    model=MODEL,
    messages=[LLMMessage(role="user", content="Say hello.")],
    parameters={"max_tokens": 12, "temperature": 0},
)
CANCEL: Final = ChatRequest(
    model=MODEL,
    messages=[UserMessage(content="Count from one to one hundred in words.")],
    max_tokens=300,
)

STREAMS: Final = {
    "stream": STREAM,
    "no-usage": NO_USAGE,
    "length": LENGTH,
    "tool-call": TOOL_CALL,
    "llm-request-answered-as-openai": LLM_STREAM,
}
"""The cases whose answer is a stream, recorded as NAME.sse."""
FAILURES: Final = {"overflow": OVERFLOW, "image": IMAGE}
"""The cases whose answer is an error body, recorded as NAME.error.json."""


# -- the Responses API (POST /v1/responses): the same asks in that dialect ----------------------

RESPONSES_STREAM: Final = ResponsesRequest(
    model=MODEL,
    input="Say hello to Vienna in one short sentence.",
    temperature=0,
    max_output_tokens=40,
)
RESPONSES_LENGTH: Final = ResponsesRequest(
    model=MODEL,
    input="Tell me a long story about a lighthouse.",
    temperature=0,
    max_output_tokens=5,
)
RESPONSES_WEATHER: Final = FunctionTool(
    name=WEATHER.name, description=WEATHER.description, parameters=WEATHER.parameters
)


def _responses_asked(city: str, n: int) -> list[InputMessage | FunctionCall]:
    return [
        InputMessage(role="user", content=f"What is the weather in {city}?"),
        FunctionCall(call_id=f"call_{n}", name="get_weather", arguments=f'{{"city": "{city}"}}'),
    ]


RESPONSES_TOOL_CALL: Final = ResponsesRequest(
    # as TOOL_CALL: two earlier turns in which the model called the tool
    model=MODEL,
    input=[
        *_responses_asked("Paris", 1),
        *_responses_asked("Rome", 2),
        InputMessage(role="user", content="What is the weather in Vienna?"),
    ],
    tools=[RESPONSES_WEATHER],
    tool_choice="required",
    temperature=0,
    max_output_tokens=60,
)
RESPONSES_OVERFLOW: Final = ResponsesRequest(model=MODEL, input="word " * 700)

RESPONSES_STREAMS: Final = {
    "stream": RESPONSES_STREAM,
    "length": RESPONSES_LENGTH,
    "tool-call": RESPONSES_TOOL_CALL,
}
"""The Responses cases whose answer is a stream, recorded under tests/conformance/responses."""
RESPONSES_FAILURES: Final = {"overflow": RESPONSES_OVERFLOW}
RESPONSES_WHOLES: Final = {
    "whole": attrs.evolve(RESPONSES_STREAM, stream=False),
    "whole-tool-call": attrs.evolve(RESPONSES_TOOL_CALL, stream=False),
}
"""The Responses cases asked with ``stream: false``, recorded as NAME.response.json."""
