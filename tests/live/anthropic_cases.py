"""The Messages API requests the live tests send to llama.cpp's ``POST /v1/messages``, and that
`tests.live.record_anthropic` records: one place, so the recordings in
tests/conformance/anthropic are what the live tests exchange."""

from __future__ import annotations

from typing import Final

from svir_proto.anthropic import Message, MessagesRequest, Tool, ToolChoice, ToolUseBlock
from tests.live.cases import MODEL

WEATHER: Final = Tool(
    name="get_weather",
    description="Get the weather for a city",
    input_schema={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)


def _asked(city: str, n: int) -> list[Message]:
    call = ToolUseBlock(id=f"call_{n}", name="get_weather", input={"city": city})
    return [
        Message(role="user", content=f"What is the weather in {city}?"),
        Message(role="assistant", content=[call]),
    ]


STREAM: Final = MessagesRequest(
    model=MODEL,
    max_tokens=40,
    temperature=0,
    messages=[Message(role="user", content="Say hello to Vienna in one short sentence.")],
)
LENGTH: Final = MessagesRequest(
    model=MODEL,
    max_tokens=5,
    temperature=0,
    messages=[Message(role="user", content="Tell me a long story about a lighthouse.")],
)
TOOL_CALL: Final = MessagesRequest(
    # as tests/live/cases.py TOOL_CALL: two earlier turns in which the model called the tool
    # make SmolLM2 call it again (with the ChatML tool template)
    model=MODEL,
    max_tokens=60,
    temperature=0,
    messages=[
        *_asked("Paris", 1),
        *_asked("Rome", 2),
        Message(role="user", content="What is the weather in Vienna?"),
    ],
    tools=[WEATHER],
    tool_choice=ToolChoice(type="any"),
)
OVERFLOW: Final = MessagesRequest(
    model=MODEL,
    max_tokens=20,
    messages=[Message(role="user", content="word " * 700)],  # more than the 512 of -c
)

STREAMS: Final = {"stream": STREAM, "length": LENGTH, "tool-call": TOOL_CALL}
"""The cases whose answer is a stream, recorded as NAME.sse."""
FAILURES: Final = {"overflow": OVERFLOW}
"""The cases whose answer is an error body, recorded as NAME.error.json."""
