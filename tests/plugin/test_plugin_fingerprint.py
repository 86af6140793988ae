# SPDX-License-Identifier: Apache-2.0
"""``trtllm-stream-fix doctor --fingerprint``: files and target shapes of a tree, read as text."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from trtllm_stream_fix.plugin import fingerprint, registry, versions

pytestmark = pytest.mark.cpu_only

STANDIN_SERVE = Path(__file__).parents[1] / "standin" / "tensorrt_llm" / "serve"


@pytest.fixture
def tree(tmp_path) -> Path:
    serve = tmp_path / "tree" / "tensorrt_llm" / "serve"
    shutil.copytree(STANDIN_SERVE, serve, ignore=shutil.ignore_patterns("__pycache__"))
    (serve / "openai_server.py").unlink()
    return tmp_path / "tree"


def _doctor(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "trtllm_stream_fix.cli", "doctor", "--fingerprint", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_files_are_named_hashed_and_matched_against_the_lock_table(tree, monkeypatch):
    utils = tree / "tensorrt_llm" / "serve" / "responses_utils.py"
    text = utils.read_text()
    digest = hashlib.sha256(text.encode()).hexdigest()
    row = versions.LockedFile("responses_utils.py", "test-line", "index id 1", len(text), digest)
    monkeypatch.setattr(versions, "LOCK", (*versions.LOCK, row))
    data = fingerprint.fingerprint(str(tree))
    assert data["files"]["responses_utils.py"] == {
        "present": True,
        "sha256": digest[:12],
        "chars": len(text),
        "recorded": "test-line (index id 1)",
    }
    assert data["files"]["openai_server.py"] == {"present": False}
    assert data["files"]["postprocess_handlers.py"]["recorded"] is None
    assert set(data["targets"]) == {
        t.dotted.removeprefix("tensorrt_llm.serve.") for t in registry.all_targets()
    }


def test_each_target_shows_the_shape_found_against_the_recorded_ones(tree):
    utils = tree / "tensorrt_llm" / "serve" / "responses_utils.py"
    utils.write_text(
        utils.read_text().replace(
            "def process_single_output(self, res", "def process_single_output(self, out"
        )
    )
    text = fingerprint.to_text(fingerprint.fingerprint(str(tree)))
    assert "responses_utils.ResponsesStreamingProcessor.process_single_output: mismatch" in text
    assert "(self, out)" in text and "    recorded early-2026, tool-call-ids" in text
    assert "responses_utils._parse_output_tokens: ok (tokens) = every recorded line" in text
    assert "openai_server.ResponsesStreamingProcessor: no file" in text


def test_the_lock_table_holds_the_documented_files():
    doc = (Path(__file__).parents[2] / "docs" / "real-upstream.md").read_text()
    for row in versions.LOCK:
        assert row.sha256 in doc, row
        assert row.name in versions.PATCHED_FILES


def _census_rows() -> set[tuple[str, str, int, str]]:
    """(file, line, characters, sha256) of each fetched version in docs/upstream-versions.md."""
    doc = (Path(__file__).parents[2] / "docs" / "upstream-versions.md").read_text()
    rows = set()
    for row in doc.splitlines():
        cells = [c.strip().strip("`") for c in row.strip().strip("|").split("|")]
        sha = [c for c in cells if re.fullmatch(r"[0-9a-f]{64}", c)]
        if row.startswith("|") and sha:
            name, line, _origin, chars = cells[:4]
            rows.add((name, line, int(chars.replace(",", "")), sha[0]))
    return rows


def test_the_census_table_and_the_lock_table_agree():
    """Every fetched version in the census is a lock row with the same line, and back."""
    locked = {(f.name, f.line, f.chars, f.sha256) for f in versions.LOCK}
    census = _census_rows()
    assert census - locked == set(), "in docs/upstream-versions.md, not in versions.LOCK"
    assert locked - census == set(), "in versions.LOCK, not in docs/upstream-versions.md"


def test_cli_prints_text_and_json_and_imports_nothing(tree):
    utils = tree / "tensorrt_llm" / "serve" / "responses_utils.py"
    utils.write_text('raise RuntimeError("imported")\n' + utils.read_text())
    text = _doctor("--source", str(tree))
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("trtllm-stream-fix fingerprint: ")
    data = json.loads(_doctor("--source", str(tree), "--json").stdout)
    assert data["files"]["openai_server.py"] == {"present": False}
    assert data["targets"]["responses_utils._create_response"]["status"] == "ok"
    missing = _doctor("--source", str(tree / "nowhere"))
    assert (
        missing.returncode == 2
        and "holds no tensorrt_llm/serve/responses_utils.py" in missing.stderr
    )
    assert "Traceback" not in missing.stderr
