# SPDX-License-Identifier: Apache-2.0
"""The plugin's events carry every key OpenAI sends and every key upstream sends.

Upstream (the stand-in, like TensorRT-LLM) serialises with ``model_dump_json()``, keeping
null fields: the patched processor must not send fewer keys for the same event type.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "standin"))
import plugin_harness as harness

harness.use_standin()

from tensorrt_llm.serve import openai_server  # noqa: F401  (patched in place by install)

from trtllm_stream_fix.plugin.installer import install, uninstall
from trtllm_stream_fix.testing import openai_schema
from trtllm_stream_fix.testing.synthetic import NAMED_SCENARIOS, named_output

pytestmark = pytest.mark.cpu_only

TOOL = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
# Outputs the unpatched stand-in streams without raising.
PLAIN = ("short_answer", "reasoning_answer", "multibyte_emoji", "preamble_answer")


def _keys(events: list[dict]) -> dict[str, set[str]]:
    """Per event type, the keys of the event, its ``response`` and its ``item``."""
    found: dict[str, set[str]] = defaultdict(set)
    for event in events:
        kind = event["type"]
        found[kind] |= set(event)
        for key in ("response", "item", "part"):
            if isinstance(event.get(key), dict):
                found[f"{kind}/{key}"] |= set(event[key])
    return found


@pytest.fixture
def fixed(monkeypatch):
    monkeypatch.delenv("TRTLLM_STREAM_FIX", raising=False)
    uninstall()
    install()
    yield
    uninstall()


def test_plugin_events_match_the_recorded_schema(fixed):
    for name in NAMED_SCENARIOS:
        for split in (1, 20):
            events = harness.stream(named_output(name), split, tools=[TOOL])
            for event in events:
                assert not openai_schema.missing_keys(event), (name, event)


def test_plugin_keeps_every_key_upstream_sends():
    uninstall()
    theirs: dict[str, set[str]] = defaultdict(set)
    for name in PLAIN:
        for kind, keys in _keys(harness.stream(named_output(name), 1)).items():
            theirs[kind] |= keys
    install()
    try:
        ours: dict[str, set[str]] = defaultdict(set)
        for name in PLAIN:
            for kind, keys in _keys(harness.stream(named_output(name), 1)).items():
                ours[kind] |= keys
    finally:
        uninstall()
    dropped = {kind: theirs[kind] - ours[kind] for kind in theirs if theirs[kind] - ours[kind]}
    assert not dropped
    assert {"response.created/response", "response.output_item.done/item"} <= set(theirs)
