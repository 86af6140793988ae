# SPDX-License-Identifier: Apache-2.0
"""``trtllm-stream-fix doctor --selftest``: the operator's proof on their own TensorRT-LLM.

Against the stand-in as the "installed" TensorRT-LLM (default tier), and against each real
source tree of ``TRTLLM_SOURCE_DIRS`` / ``TRTLLM_SOURCE_DIR`` when present.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from trtllm_stream_fix.plugin.selftest import passed, verdict_text

pytestmark = pytest.mark.cpu_only

REPO = Path(__file__).resolve().parent.parent
STANDIN = REPO / "tests" / "standin"


def _doctor(*args: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in ("TRTLLM_SOURCE_DIR",)}
    environ["PYTHONPATH"] = os.pathsep.join([str(STANDIN), str(REPO)])
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-m", "trtllm_stream_fix.cli", "doctor", "--selftest", *args],
        capture_output=True,
        text=True,
        env=environ,
        timeout=900,
        check=False,
    )


def test_selftest_passes_on_the_installed_standin_and_exits_zero():
    proc = _doctor("--count", "4")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    assert "verdict: PASS" in proc.stdout
    assert "strict checker passes: 12/12" in proc.stdout
    assert len(proc.stdout.splitlines()) < 25  # one screen


def test_selftest_fails_and_says_why_when_it_cannot_run(tmp_path):
    proc = _doctor("--source", str(tmp_path), "--count", "2")
    assert proc.returncode == 1
    assert "verdict: FAIL" in proc.stdout and "could not run" in proc.stdout


def test_a_single_bad_stream_fails_the_verdict():
    stats = {"streams": 3, "compared": 2, "identical": 2, "strict": 3, "sdk": 2, "raised": 0}
    result = {"source": "x", "install": [], "stats": stats}
    assert not passed(result)
    assert "verdict: FAIL" in verdict_text(result)
    stats["sdk"] = 3
    assert passed(result)


def _trees() -> list[str]:
    many = [p for p in os.environ.get("TRTLLM_SOURCE_DIRS", "").split(os.pathsep) if p]
    one = os.environ.get("TRTLLM_SOURCE_DIR")
    return many + ([one] if one and one not in many else [])


@pytest.mark.parametrize("tree", _trees() or [None], ids=lambda t: Path(t).name if t else "none")
def test_selftest_passes_on_each_real_version_line(tree):
    if tree is None:
        pytest.skip("TRTLLM_SOURCE_DIRS / TRTLLM_SOURCE_DIR not set: no real source tree")
    proc = _doctor("--source", tree, "--count", "10")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    assert "verdict: PASS" in proc.stdout
