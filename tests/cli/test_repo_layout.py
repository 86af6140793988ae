# SPDX-License-Identifier: Apache-2.0
"""The module tables of CONTRIBUTING.md and tests/README.md are what the tree gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from trtllm_stream_fix.testing import repo_layout


def test_the_docs_tables_match_the_tree():
    assert repo_layout.stale() == [], "run: python -m trtllm_stream_fix.testing.repo_layout --write"


def _tree(root: Path) -> Path:
    package = root / repo_layout.NAME
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text('"""The package."""\n')
    (package / "sub" / "__init__.py").write_text('"""A subpackage.\n\nMore."""\n')
    (package / "sub" / "job.py").write_text('"""Does one | job."""\n')
    (root / "tests" / "sub").mkdir(parents=True)
    for block in repo_layout.BLOCKS:
        (root / block.doc).write_text(f"intro\n{block.begin()}\nold\n{block.end()}\nend\n")
    for block in repo_layout.BLOCKS:
        doc = root / block.doc
        table = repo_layout.rendered(block, root)
        doc.write_text(repo_layout.replaced(doc.read_text(), block, table))
    return package


def test_a_changed_docstring_or_a_new_test_makes_a_table_stale(tmp_path):
    package = _tree(tmp_path)
    assert repo_layout.stale(tmp_path) == []
    contributing = (tmp_path / "CONTRIBUTING.md").read_text()
    assert "| `sub/` | A subpackage. |" in contributing
    assert "| `sub/job.py` | Does one \\| job. |" in contributing

    (package / "sub" / "job.py").write_text('"""Does another job."""\n')
    assert repo_layout.stale(tmp_path) == ["CONTRIBUTING.md"]

    (tmp_path / "tests" / "sub" / "test_job.py").write_text(
        f"from {repo_layout.NAME}.sub import job\n"
    )
    assert repo_layout.stale(tmp_path) == ["CONTRIBUTING.md", "tests/README.md"]
    assert "| `sub/job.py` | sub/test_job.py |" in repo_layout.tests_table(
        package, tmp_path / "tests"
    )


def test_a_doc_without_the_markers_is_an_error():
    block = repo_layout.BLOCKS[0]
    with pytest.raises(ValueError, match="markers"):
        repo_layout.replaced("no table here", block, "| a |")
