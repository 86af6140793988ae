# SPDX-License-Identifier: Apache-2.0
"""The Response envelope: the sampling values in effect as numbers, echoed objects as the
``openai`` models (no pydantic serialisation warnings), reasoning items without a null
``encrypted_content``; the schema check flags a Response that lacks the numbers."""

from __future__ import annotations

import json
import warnings

import pytest

from trtllm_stream_fix.core.machine import ResponsesEventMachine
from trtllm_stream_fix.core.response import request_echo, response_envelope
from trtllm_stream_fix.core.sse import event_to_dict, model_to_json
from trtllm_stream_fix.defaults import new_context
from trtllm_stream_fix.differential import openai_schema
from trtllm_stream_fix.sim.model import engine_responses, named_output

pytestmark = pytest.mark.cpu_only

SAMPLING = ("temperature", "top_p", "presence_penalty", "frequency_penalty")
REQUEST = {
    "reasoning": {"effort": "low", "summary": "auto"},
    "text": {
        "format": {"type": "json_schema", "name": "n", "schema": {"type": "object"}},
        "verbosity": "low",
    },
    "prompt": {"id": "pmpt_1", "variables": {"city": "Paris"}},
    "presence_penalty": 0.5,
}
CHOICES = ["auto", {"type": "function", "name": "f"}, {"type": "mcp", "server_label": "s"}]


def _run(encoding, **context):
    machine = ResponsesEventMachine(new_context(**context), encoding=encoding)
    events = machine.start()
    for response in engine_responses(named_output("reasoning_answer"), 5):
        events += machine.feed(
            response.token_ids_diff,
            finished=response.finished,
            finish_reason=response.finish_reason,
        )
    return machine, [event_to_dict(e) for e in events]


@pytest.mark.parametrize("choice", CHOICES, ids=str)
def test_the_final_response_dumps_without_pydantic_warnings(encoding, choice):
    machine, _ = _run(encoding, tool_choice=choice, echo=request_echo(REQUEST))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dumped = json.loads(machine.final_response.model_dump_json())
        machine.final_response.model_dump(mode="json")
    assert dumped["reasoning"]["effort"] == "low" and dumped["text"]["verbosity"] == "low"
    assert dumped["tool_choice"] == choice or dumped["tool_choice"]["type"] == choice["type"]


def test_echoed_objects_go_on_the_wire_as_given(encoding):
    _, events = _run(
        encoding, tool_choice={"type": "function", "name": "f"}, echo=request_echo(REQUEST)
    )
    for event in (events[0], events[-1]):
        response = event["response"]
        assert response["reasoning"] == REQUEST["reasoning"]  # no generate_summary: null
        assert response["tool_choice"] == {"type": "function", "name": "f"}
        assert list(response["tool_choice"]) == ["type", "name"]
        assert response["prompt"] == {"id": "pmpt_1", "variables": {"city": "Paris"}}
        assert response["text"]["format"]["schema"] == {"type": "object"}


def test_reasoning_items_carry_no_null_encrypted_content(encoding):
    machine, events = _run(encoding)
    items = [e["item"] for e in events if "item" in e]
    items += [item for e in events if "response" in e for item in e["response"]["output"]]
    items += json.loads(model_to_json(machine.final_response))["output"]
    reasoning = [item for item in items if item["type"] == "reasoning"]
    assert len(reasoning) >= 3
    assert not [item for item in reasoning if "encrypted_content" in item]


@pytest.mark.parametrize(
    ("context", "echo", "expected"),
    [
        ({}, {}, (1.0, 1.0, 0.0, 0.0)),
        ({"temperature": 0.3, "top_p": 1}, {"frequency_penalty": -1}, (0.3, 1.0, 0.0, -1.0)),
    ],
)
def test_every_response_carries_the_sampling_values_in_effect(encoding, context, expected, echo):
    _, events = _run(encoding, echo=request_echo(echo), **context)
    responses = [e["response"] for e in events if "response" in e]
    assert [r["status"] for r in responses] == ["in_progress", "in_progress", "completed"]
    for response in responses:
        values = tuple(response[key] for key in SAMPLING)
        assert values == expected and all(type(v) is float for v in values)
        assert openai_schema.missing_keys(response) == []


def test_the_schema_flags_a_response_without_numeric_sampling_values():
    context = new_context(created_at=1796122733, clock=lambda: 1796122734)
    body = json.loads(model_to_json(response_envelope(context, [], [], status="completed")))
    assert openai_schema.missing_keys(body) == []
    assert openai_schema.missing_keys({**body, "temperature": None}) == [
        "response: 'temperature' is NoneType, not a number"
    ]
    lacking = {k: v for k, v in body.items() if k != "presence_penalty"}
    assert openai_schema.missing_keys(lacking) == ["response: missing 'presence_penalty'"]
    event = {"type": "response.created", "sequence_number": 0, "response": body}
    assert openai_schema.missing_keys({**event, "response": {**body, "top_p": "1"}}) == [
        "response: 'top_p' is str, not a number"
    ]
