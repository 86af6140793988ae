# SPDX-License-Identifier: Apache-2.0
"""Style gate: ruff lint and format at 100 columns (the upstream rule for new modules)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The whole repository, as CONTRIBUTING runs it: the README's and docs' Python blocks too.
PATHS = ["."]


def _ruff(*args: str) -> subprocess.CompletedProcess:
    if shutil.which("ruff") is None and not (Path(sys.executable).parent / "ruff").exists():
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    exe = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    return subprocess.run(
        [exe, *args, *PATHS], cwd=ROOT, capture_output=True, text=True, check=False
    )


def test_ruff_lint_clean():
    proc = _ruff("check", "--output-format", "concise")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format_clean():
    proc = _ruff("format", "--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_python_file_has_the_license_line():
    missing = [
        str(path.relative_to(ROOT))
        for folder in ("trtllm_stream_fix", "tests", "benchmarks")
        for path in (ROOT / folder).rglob("*.py")
        if "SPDX-License-Identifier: Apache-2.0" not in path.read_text(encoding="utf-8")[:400]
    ]
    assert not missing, missing
