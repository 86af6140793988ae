# SPDX-License-Identifier: Apache-2.0
"""Same events for the same tokens in another environment (``testing/event_dump.py``).

``.ci/run`` writes a dump in the oldest supported environment (openai, openai-harmony and
pydantic at the floors of ``pyproject.toml``) and runs this file in the main one with
``TRTLLM_STREAM_FIX_EVENTS_FROM`` naming it.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest

from trtllm_stream_fix.testing import event_dump

pytestmark = pytest.mark.cpu_only

OTHER_ENV = "TRTLLM_STREAM_FIX_EVENTS_FROM"


@pytest.fixture(scope="module")
def small(encoding):
    return event_dump.dump(4, encoding=encoding)


def _frame_with(frame: str, **fields) -> str:
    head, _, data = frame.partition("\ndata: ")
    return f"{head}\ndata: {json.dumps({**json.loads(data), **fields})}\n\n"


def test_dump_is_deterministic_and_matches_itself(small, encoding):
    again = event_dump.dump(4, encoding=encoding)
    assert again["streams"] == small["streams"]
    assert event_dump.compare(small, again) == []
    assert len(small["streams"]) == (4 + len(event_dump.NAMED_SCENARIOS)) * 3


def test_a_changed_delta_is_reported(small):
    other = copy.deepcopy(small)
    key = next(k for k, frames in other["streams"].items() if any('"delta"' in f for f in frames))
    frames = other["streams"][key]
    i = next(i for i, f in enumerate(frames) if '"delta"' in f)
    frames[i] = _frame_with(frames[i], delta="changed")
    problems = event_dump.compare(small, other)
    assert len(problems) == 1 and problems[0].startswith(f"{key} frame {i}")


def test_only_null_fields_one_openai_lacks_are_tolerated(small):
    key = next(iter(small["streams"]))
    cls = "openai.types.responses.response_created_event.ResponseCreatedEvent"
    newer = copy.deepcopy(small)
    newer["fields"][cls] = [*newer["fields"][cls], "newer_field"]
    newer["streams"][key][0] = _frame_with(newer["streams"][key][0], newer_field=None)
    assert event_dump.compare(small, newer) == []
    valued = copy.deepcopy(newer)
    valued["streams"][key][0] = _frame_with(valued["streams"][key][0], newer_field=1)
    assert event_dump.compare(small, valued)
    small_declared = copy.deepcopy(small)
    small_declared["fields"] = newer["fields"]
    assert event_dump.compare(small_declared, newer)  # declared on both sides: must match


def test_frames_equal_those_of_the_other_environment(encoding):
    path = os.environ.get(OTHER_ENV)
    if not path:
        pytest.skip(f"set {OTHER_ENV} to a dump written in another environment (.ci/run does)")
    other = json.loads(Path(path).read_text())
    outputs = len([k for k in other["streams"] if k.endswith("/1")]) - len(
        event_dump.NAMED_SCENARIOS
    )
    here = event_dump.dump(outputs, encoding=encoding)
    assert here["versions"] != other["versions"], "both dumps come from the same versions"
    assert event_dump.compare(here, other) == []
