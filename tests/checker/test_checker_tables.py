# SPDX-License-Identifier: Apache-2.0
"""The checkers keep their own tables (they judge the core), which agree with the core's."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from trtllm_stream_fix.checker import harmony_markup, schema_compat
from trtllm_stream_fix.core import compat, harmony_tokens

pytestmark = pytest.mark.cpu_only

CHECKER = Path(harmony_markup.__file__).parent


def test_markup_list_agrees_with_the_core_and_the_encoding(encoding) -> None:
    assert set(harmony_markup.MARKUP) == set(harmony_tokens.MARKUP)
    for text in harmony_markup.MARKUP:
        (token,) = encoding.encode(text, allowed_special="all")
        assert encoding.is_special_token(token), text
        assert harmony_tokens.TOKEN_TEXT[token] == text


def test_newer_values_agree_with_the_core() -> None:
    assert schema_compat.newer_values() == compat.NEWER_VALUES


@pytest.mark.parametrize("module", sorted(p.name for p in CHECKER.glob("*.py")))
def test_no_checker_module_imports_the_core(module: str) -> None:
    tree = ast.parse((CHECKER / module).read_text(encoding="utf-8"))
    sources = [
        ("." * n.level) + (n.module or "") for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
    ]
    sources += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [s for s in sources if s.startswith("..core") or ".core" in s], sources
