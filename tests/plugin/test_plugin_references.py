# SPDX-License-Identifier: Apache-2.0
"""Every ``"module:attr"`` of the patch registry (each patch's replacement, each group's
probe) names an object that exists: a rename that forgets the registry fails here, not when a
server installs the plugin."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "standin"))
import plugin_harness

plugin_harness.use_standin()

from trtllm_stream_fix.plugin import registry
from trtllm_stream_fix.plugin.probes import ProbeResult

pytestmark = pytest.mark.cpu_only

REFERENCES = sorted(
    {p.replacement for p in registry.PATCHES} | {g.probe for g in registry.GROUPS if g.probe}
)


@pytest.mark.parametrize("reference", REFERENCES)
def test_each_reference_resolves_to_a_callable(reference):
    module, _, name = reference.partition(":")
    assert callable(getattr(importlib.import_module(module), name))


def test_a_probe_result_reads_as_the_report_shows_it():
    result = ProbeResult(False, ["a line"], "first", {"n": 1})
    assert result.as_dict() == {
        "ok": False,
        "summary": ["a line"],
        "first_failure": "first",
        "stats": {"n": 1},
    }
