# SPDX-License-Identifier: Apache-2.0
"""Tool-calling turns through the OpenAI Python SDK, for the stored-response tests."""

from __future__ import annotations

from typing import Any

import openai

MODEL = "gpt-oss-120b"
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}
QUESTION = "What is the weather in Paris? Use get_weather."


def client(url: str) -> openai.OpenAI:
    """An SDK client of the server at ``url`` that does not retry (a 503 is seen at once)."""
    return openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)


def streamed(sdk: openai.OpenAI, **body: Any) -> Any:
    """The final response of a streamed turn (the SDK's accumulator checks the stream)."""
    with sdk.responses.stream(model=MODEL, **body) as stream:
        for _ in stream:
            pass
        return stream.get_final_response()


def answer_call(sdk: openai.OpenAI, call: Any, output: str, previous_id: str) -> Any:
    """A turn that answers ``call`` with ``output``, continuing ``previous_id``."""
    return sdk.responses.create(
        model=MODEL,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": output}],
        tools=[WEATHER],
        previous_response_id=previous_id,
    )


def function_call(response: Any) -> Any:
    return next(item for item in response.output if item.type == "function_call")


def texts(response: Any) -> list[str]:
    """The text of the response's message items."""
    return [p.text for item in response.output if item.type == "message" for p in item.content]


def items(response: Any) -> list[tuple[Any, ...]]:
    """Each output item's id, type, arguments and text (streamed responses parse into the
    SDK's ``Parsed*`` classes, fetched ones do not)."""
    return [
        (
            i.id,
            i.type,
            getattr(i, "arguments", None),
            [p.text for p in getattr(i, "content", None) or ()],
        )
        for i in response.output
    ]
