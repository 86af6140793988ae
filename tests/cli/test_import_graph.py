# SPDX-License-Identifier: Apache-2.0
"""The package's import graph: test support stays out of the product, and no two parts of the
package import each other.

Read from the source (every ``import`` in every module, lazy ones included), and checked once by
importing the entry points in a fresh interpreter.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import trtllm_stream_fix

PACKAGE = Path(trtllm_stream_fix.__file__).resolve().parent
NAME = PACKAGE.name
#: Other projects' module names (the stand-in's ``tensorrt_llm``) and upstream file templates.
SKIPPED = ("plugin/realstub/tensorrt_llm/", "plugin/realstub/thirdparty/", "upstream_pr/templates/")


def _dotted(rel: Path) -> str:
    parts = rel.with_suffix("").parts
    return ".".join((NAME, *(parts[:-1] if rel.name == "__init__.py" else parts)))


def _imports(path: Path, dotted: str) -> set[str]:
    """The package's modules that ``path`` (module ``dotted``) imports, as dotted names."""
    package = dotted if path.name == "__init__.py" else dotted.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return {name for name in found if name == NAME or name.startswith(f"{NAME}.")}


def _graph() -> dict[str, set[str]]:
    graph = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if any(rel.as_posix().startswith(skipped) for skipped in SKIPPED):
            continue
        dotted = _dotted(rel)
        graph[dotted] = _imports(path, dotted)
    return graph


def _part(dotted: str) -> str:
    """The subpackage (``core``) or top-level module (``encoding``) a module belongs to."""
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_nothing_outside_testing_imports_testing():
    testing = f"{NAME}.testing"
    offenders = sorted(
        f"{module} imports {target}"
        for module, targets in _graph().items()
        if _part(module) != "testing"
        for target in targets
        if target == testing or target.startswith(f"{testing}.")
    )
    assert offenders == [], "\n".join(offenders)


def test_no_import_cycle_between_parts_of_the_package():
    edges: dict[str, set[str]] = {}
    for module, targets in _graph().items():
        for target in targets:
            source, sink = _part(module), _part(target)
            if source and sink and source != sink:
                edges.setdefault(source, set()).add(sink)

    def reaches(start: str, goal: str) -> list[str] | None:
        seen, stack = {start}, [[start]]
        while stack:
            path = stack.pop()
            for nxt in sorted(edges.get(path[-1], ())):
                if nxt == goal:
                    return [*path, nxt]
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append([*path, nxt])
        return None

    cycles = sorted(
        {" -> ".join(cycle) for part in edges if (cycle := reaches(part, part)) is not None}
    )
    assert cycles == [], "\n".join(cycles)


def test_the_entry_points_load_no_test_support():
    code = (
        "import json, sys\n"
        "import trtllm_stream_fix.cli, trtllm_stream_fix.plugin, trtllm_stream_fix.sim.server\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.startswith('{NAME}.testing'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=PACKAGE.parent
    )
    assert json.loads(out.stdout.splitlines()[-1]) == []
