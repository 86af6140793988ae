# SPDX-License-Identifier: Apache-2.0
"""A two-tool agent loop with the OpenAI SDK against the simulated gpt-oss server.

    python examples/agent_loop.py                              # starts the server in-process
    python examples/agent_loop.py --url http://127.0.0.1:8000  # or uses a running one
    python examples/agent_loop.py --sequential                 # parallel_tool_calls: false

Each turn streams with ``client.responses.stream`` (the SDK's accumulator checks the
stream), runs the function calls the model made with local Python functions, sends the calls
and their outputs back as input, and stops when the model answers. Exit status 0 when the
final answer uses every tool's output.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from typing import Any

from openai import OpenAI

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "Current weather for a location.",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "City and country"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["location", "unit"],
            "additionalProperties": False,
        },
    },
    {
        "type": "function",
        "name": "get_time",
        "description": "Current local time in a time zone.",
        "parameters": {
            "type": "object",
            "properties": {"timezone": {"type": "string", "enum": ["Europe/Paris", "UTC"]}},
            "required": ["timezone"],
            "additionalProperties": False,
        },
    },
]


def get_weather(location: str, unit: str) -> dict[str, Any]:
    return {"location": location, "temperature": 21 if unit == "celsius" else 70, "sky": "sunny"}


def get_time(timezone: str) -> dict[str, Any]:
    return {"timezone": timezone, "time": "14:05"}


FUNCTIONS: dict[str, Callable[..., Any]] = {"get_weather": get_weather, "get_time": get_time}


def run(client: OpenAI, question: str, *, parallel: bool = True, max_turns: int = 6) -> str:
    """The model's final answer to ``question``, after running every tool call it made."""
    history: list[dict[str, Any]] = [{"role": "user", "content": question}]
    called: set[str] = set()
    for turn in range(1, max_turns + 1):
        with client.responses.stream(
            model="gpt-oss-20b",
            input=history,
            tools=TOOLS,
            parallel_tool_calls=parallel,
            reasoning={"effort": "low"},
        ) as stream:
            response = stream.get_final_response()
        calls = [item for item in response.output if item.type == "function_call"]
        print(f"turn {turn}: {[f'{c.name}({c.arguments})' for c in calls] or 'answer'}")
        if not calls:
            return response.output_text
        for item in response.output:  # the model's items go back as input, then the outputs
            history.append(item.model_dump(exclude_none=True))
        for call in calls:
            result = FUNCTIONS[call.name](**json.loads(call.arguments))
            called.add(call.name)
            history.append(
                {
                    "type": "function_call_output",
                    "call_id": call.call_id,
                    "output": json.dumps(result),
                }
            )
    raise RuntimeError(f"no answer after {max_turns} turns (tools called: {sorted(called)})")


@contextlib.contextmanager
def _server(url: str | None) -> Iterator[str]:
    if url:
        yield url.rstrip("/").removesuffix("/v1")
        return
    from trtllm_stream_fix.sim import EngineConfig, create_app, serve_in_thread

    with serve_in_thread(create_app(EngineConfig(stream_interval=20))) as base_url:
        yield base_url


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running server (default: start one in-process)")
    parser.add_argument("--sequential", action="store_true", help="parallel_tool_calls: false")
    parser.add_argument(
        "--question", default="What is the weather in Paris, and what time is it there?"
    )
    args = parser.parse_args(argv)
    with _server(args.url) as base_url:
        client = OpenAI(base_url=f"{base_url}/v1", api_key="unused", max_retries=0, timeout=30)
        answer = run(client, args.question, parallel=not args.sequential)
    print(f"answer: {answer}")
    used = all(name in answer for name in FUNCTIONS)
    return 0 if used else 1


if __name__ == "__main__":
    sys.exit(main())
