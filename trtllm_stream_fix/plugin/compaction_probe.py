# SPDX-License-Identifier: Apache-2.0
"""The self-test's proof of the ``compaction`` group (``probes.compaction_items``).

Upstream's ``OpenAIServer`` needs an engine, so the probe cannot build one on a GPU host.
It checks that ``openai_server`` binds the plugin's server class (its ``openai_responses``
the group's), then runs the group's request path over a generator of upstream's call shape
(``generate_async(inputs=, sampling_params=, streaming=)``, the simulated model's summary
for the compaction prompt) with the ``SamplingParams`` class ``openai_server`` imports:
``/v1/responses/compact`` returns a window ending in one compaction item; that item, sent
back as input, expands into the summary message; a tampered blob is the 400 naming it; a
create ending in ``compaction_trigger`` streams exactly one compaction item, which the
strict checker accepts.
"""

from __future__ import annotations

import asyncio
import importlib
import json
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

from .upstream_names import OPENAI_SERVER

MODEL = "gpt-oss-20b"
CONVERSATION = [
    {"type": "message", "role": "user", "content": "Rename config.yaml to settings.yaml"},
    {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Renamed it."}],
    },
    {"type": "message", "role": "user", "content": "Now add a README"},
]


class _Result:
    """One engine response as upstream's ``GenerationResult`` shows it."""

    def __init__(self, diff: list[int], done: bool, finish_reason: str | None) -> None:
        self.outputs = [SimpleNamespace(token_ids_diff=diff, finish_reason=finish_reason)]
        self._done = done


class ProbeGenerator:
    """``generate_async`` answering the compaction prompt with the simulated summary."""

    def __init__(self) -> None:
        self.calls = 0

    def generate_async(
        self, inputs: Any, sampling_params: Any = None, streaming: bool = False, **_: Any
    ) -> AsyncIterator[_Result]:
        from ..sim.compaction_model import summary_for_prompt

        self.calls += 1
        output = summary_for_prompt(list(inputs))
        tokens = list(output.generated) if output is not None else []

        async def results() -> AsyncIterator[_Result]:
            for start in range(0, len(tokens), 20):
                done = start + 20 >= len(tokens)
                yield _Result(tokens[start : start + 20], done, "stop" if done else None)

        return results()


def _events(chunks: list[str]) -> list[dict[str, Any]]:
    return [
        json.loads(line[len("data: ") :])
        for chunk in chunks
        for line in chunk.splitlines()
        if line.startswith("data: ")
    ]


async def _run(checks: list[tuple[str, bool]]) -> None:
    from ..checker.responses import check_responses_events
    from .compaction_route import compaction_for
    from .errors import PluginRequestError

    sampling = vars(importlib.import_module(OPENAI_SERVER))["SamplingParams"]
    turns = compaction_for(SimpleNamespace(generator=ProbeGenerator()))
    assert turns.sampling_params_class is sampling
    body = await turns.compact_body(json.dumps({"model": MODEL, "input": CONVERSATION}).encode())
    window = body["output"]
    item = window[-1]
    checks.append(("/compact returns a window ending in one compaction item", _one(window)))
    expanded = turns.plan([*window, {"type": "message", "role": "user", "content": "go on"}])
    summary = expanded.input[len(window) - 1]
    checks.append(
        (
            "a compaction item expands into the summary message",
            summary.get("role") == "assistant" and not expanded.trigger,
        )
    )
    tampered = {**item, "encrypted_content": item["encrypted_content"][:-4] + "AAAA"}
    try:
        turns.plan([tampered])
        refused = False
    except PluginRequestError as exc:
        refused = exc.status == 400 and exc.body["error"]["param"] == "input[0].encrypted_content"
    checks.append(("a tampered blob is a 400 naming it", refused))
    plan = turns.plan([*CONVERSATION, {"type": "compaction_trigger"}])
    request = SimpleNamespace(model=MODEL, instructions=None, request_id="resp_probe")
    events = _events([c async for c in turns.trigger_chunks(request, plan.input)])
    added = [e for e in events if e["type"] == "response.output_item.added"]
    final = events[-1].get("response", {}) if events else {}
    checks.append(
        (
            "a trigger turn streams exactly one compaction item",
            plan.trigger
            and [e["item"]["type"] for e in added] == ["compaction"]
            and final.get("status") == "completed"
            and _one(final.get("output", [])),
        )
    )
    check = check_responses_events(events)
    problem = "" if check.ok else (check.violations or ["no terminal event"])[0]
    checks.append((f"strict checker: {problem}", check.ok))


def _one(items: list[dict[str, Any]]) -> bool:
    kinds = [i.get("type") for i in items]
    return bool(kinds) and kinds[-1] == "compaction" and kinds.count("compaction") == 1


def check_compaction() -> dict[str, Any]:
    """The probe's checks as counts (see the module docstring)."""
    from .marker import is_ours

    server = importlib.import_module(OPENAI_SERVER)
    bound = vars(server).get("OpenAIServer")
    override = getattr(bound, "openai_responses", None)
    checks = [
        (
            "openai_server binds the plugin's compaction server",
            is_ours(bound) and getattr(override, "__module__", "").endswith("compaction_route"),
        )
    ]
    try:
        asyncio.run(_run(checks))
    except Exception as exc:  # the probe reports, never raises
        checks.append((f"compaction raised {type(exc).__name__}: {exc}", False))
    examples = [what for what, ok in checks if not ok]
    return {"checks": len(checks), "passed": len(checks) - len(examples), "examples": examples}
