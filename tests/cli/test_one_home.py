# SPDX-License-Identifier: Apache-2.0
"""Each setting and shared constant has one home: the environment variables' names
(``core.config``, tabled in docs/operators.md), the terminal event types (``core.events``),
the upstream module paths (``plugin.upstream_names``) and the wrapper mark (``plugin.marker``).

Read from the source. ``testing/`` and the stand-in harness are test support; ``upstream_pr``
writes variables for the processes it starts; ``plugin/bootstrap.py`` is loaded by the
``.pth`` line without the package, so it keeps copies that the last test holds equal.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import trtllm_stream_fix
from trtllm_stream_fix.core import config, events
from trtllm_stream_fix.plugin import bootstrap, upstream_names

PACKAGE = Path(trtllm_stream_fix.__file__).resolve().parent
OPERATORS = PACKAGE.parent / "docs" / "operators.md"
SKIPPED = ("testing/", "plugin/realstub/", "upstream_pr/", "plugin/bootstrap.py")
ENV_NAME = re.compile(r"TRTLLM_STREAM_FIX(_[A-Z_]+)?")
UPSTREAM_MODULE = re.compile(r"tensorrt_llm(\.[a-z_]+)+")


def _modules() -> list[tuple[str, ast.Module]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if not rel.startswith(SKIPPED):
            found.append((rel, ast.parse(path.read_text(encoding="utf-8"))))
    return found


def _homes(pattern: re.Pattern[str]) -> dict[str, set[str]]:
    """Each string constant matching ``pattern`` whole -> the modules that write it."""
    homes: dict[str, set[str]] = {}
    for rel, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if pattern.fullmatch(node.value):
                    homes.setdefault(node.value, set()).add(rel)
    return homes


def test_every_environment_variable_is_named_in_core_config_only():
    homes = _homes(ENV_NAME)
    assert homes, "no TRTLLM_STREAM_FIX variable found"
    elsewhere = {name: rels for name, rels in homes.items() if rels != {"core/config.py"}}
    assert elsewhere == {}


def test_every_environment_variable_has_a_row_in_the_operators_table():
    names = sorted(_homes(ENV_NAME))
    text = OPERATORS.read_text(encoding="utf-8")
    missing = [name for name in names if f"| `{name}` |" not in text]
    assert missing == [], "add a row to docs/operators.md's table of variables"


def test_the_terminal_event_types_are_written_once():
    terminal = set(events.TERMINAL_TYPES)
    assert terminal == {"response.completed", "response.incomplete", "response.failed"}
    written = sorted(
        rel
        for rel, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, (ast.Set, ast.Tuple, ast.List))
        and terminal
        <= {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    )
    assert written == ["core/events.py"]


def test_upstream_module_paths_are_written_once():
    homes = _homes(UPSTREAM_MODULE)
    assert {
        name: rels for name, rels in homes.items() if rels != {"plugin/upstream_names.py"}
    } == {}


def test_the_wrapper_mark_is_set_in_one_place():
    setters = sorted(
        {
            rel
            for rel, tree in _modules()
            for node in ast.walk(tree)
            if (isinstance(node, ast.Attribute) and node.attr == "update_wrapper")
            or (
                isinstance(node, ast.Attribute)
                and node.attr == "__trtllm_stream_fix__"
                and isinstance(node.ctx, ast.Store)
            )
            or (isinstance(node, ast.Constant) and node.value == "__trtllm_stream_fix__")
        }
    )
    assert setters == ["plugin/marker.py"]


@pytest.mark.parametrize("value", ["", "1", "on", "0", " OFF ", "no", "disabled", "require", "x"])
def test_the_import_hook_keeps_the_one_rule(monkeypatch, value):
    assert bootstrap.ENV == config.FIX_ENV
    assert set(bootstrap.WATCHED) == {
        upstream_names.RESPONSES_UTILS,
        upstream_names.POSTPROCESS_HANDLERS,
        upstream_names.OPENAI_SERVER,
    }
    monkeypatch.setenv(config.FIX_ENV, value)
    assert bootstrap._mode() == config.fix_mode({config.FIX_ENV: value})
