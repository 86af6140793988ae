# SPDX-License-Identifier: Apache-2.0
"""The package's layout and each module's tests, as the Markdown tables the docs carry.

``python -m trtllm_stream_fix.testing.repo_layout`` prints both tables; ``--write`` puts them
between the markers of ``CONTRIBUTING.md`` (modules and their jobs: each module's docstring
summary) and ``tests/README.md`` (each module and the test files that import or run it);
``--check`` exits 1 naming each file whose table differs from the tree. Reads a checkout
(``tests/`` is not in the wheel).
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
REPO = PACKAGE.parent
NAME = PACKAGE.name
#: Folders that hold other projects' module names (stubs) or file templates, not our modules.
SKIPPED = ("plugin/realstub/tensorrt_llm", "plugin/realstub/thirdparty", "upstream_pr/templates")
COMMAND = "python -m trtllm_stream_fix.testing.repo_layout"
SHOWN_IMPORTERS = 6  # a module imported by more test files names its namesakes and a count


@dataclass(frozen=True)
class Module:
    path: Path  # relative to the package folder
    dotted: str  # ``trtllm_stream_fix.core.machine``; a package is its ``__init__``'s name
    summary: str  # the docstring's first paragraph, on one line

    @property
    def shown(self) -> str:
        """``core/`` for a package, ``core/machine.py`` for a module."""
        if self.path.name == "__init__.py" and len(self.path.parts) > 1:
            return f"{self.path.parent.as_posix()}/"
        return self.path.as_posix()

    @property
    def stem(self) -> str:
        return self.dotted.rsplit(".", 1)[-1]


def _summary(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return " ".join(doc.strip().split("\n\n")[0].split()).replace("|", "\\|")


def _is_skipped(rel: Path) -> bool:
    return any(rel.as_posix().startswith(f"{folder}/") for folder in SKIPPED)


def modules(package: Path = PACKAGE) -> list[Module]:
    """Every module of the package, each package's ``__init__`` first, packages in path order."""
    found = []
    for path in package.rglob("*.py"):
        rel = path.relative_to(package)
        if _is_skipped(rel) or not (path.parent / "__init__.py").is_file():
            continue
        parts = (package.name, *rel.with_suffix("").parts)
        dotted = ".".join(parts[:-1] if rel.name == "__init__.py" else parts)
        found.append(Module(rel, dotted, _summary(path)))
    # the top-level package, then its modules, then each subpackage: __init__ before its modules
    return sorted(
        found,
        key=lambda m: (
            len(m.path.parts) > 1,
            m.path.parent.parts,
            m.path.name != "__init__.py",
            m.path.name,
        ),
    )


def modules_table(package: Path = PACKAGE) -> str:
    """``| module | job |``, one row per module (its docstring's summary)."""
    rows = [f"| `{m.shown}` | {m.summary} |" for m in modules(package)]
    return "\n".join([f"| module (under `{package.name}/`) | job |", "|---|---|", *rows])


def _exports(mods: list[Module], package: Path) -> dict[str, str]:
    """``pkg.Name`` → the module a package re-exports ``Name`` from (``from .mod import Name``)."""
    out = {}
    for m in mods:
        if m.path.name != "__init__.py":
            continue
        tree = ast.parse((package / m.path).read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                for alias in node.names:
                    out[f"{m.dotted}.{alias.asname or alias.name}"] = f"{m.dotted}.{node.module}"
    return out


def _references(path: Path, known: set[str], exports: dict[str, str]) -> set[str]:
    """The package's modules a test file imports (anywhere in it) or names as a string."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
            names = [f"{node.module}.{alias.name}" for alias in node.names]
            out.update(exports.get(name, name) for name in names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.add(node.value)
    return out & known


def tests_table(package: Path = PACKAGE, tests: Path = REPO / "tests") -> str:
    """``| module | tests |``: the test files that import (or run) each module, by path."""
    mods = modules(package)
    known, exports = {m.dotted for m in mods}, _exports(mods, package)
    users: dict[str, list[str]] = {m.dotted: [] for m in mods}
    for path in sorted(tests.rglob("test_*.py")):
        for dotted in _references(path, known, exports):
            users[dotted].append(path.relative_to(tests).as_posix())
    rows = []
    for m in mods:
        files = users[m.dotted]
        if len(files) > SHOWN_IMPORTERS:  # its namesakes and its package's folder first
            folder = m.dotted.split(".")[1] if "." in m.dotted else ""
            first = [f for f in files if m.stem in Path(f).stem or f.startswith(f"{folder}/")]
            first = first[:SHOWN_IMPORTERS]
            rest = len(files) - len(first)
            files = [*first, f"{rest} more"] if first else [f"{rest} test files"]
        rows.append(f"| `{m.shown}` | {', '.join(files) or '-'} |")
    return "\n".join(["| module | test files (under `tests/`) |", "|---|---|", *rows])


@dataclass(frozen=True)
class Block:
    doc: str  # relative to the repository
    name: str  # the marker's name
    render: str  # "modules" or "tests"

    def begin(self) -> str:
        return f"<!-- BEGIN {self.name} ({COMMAND} --write) -->"

    def end(self) -> str:
        return f"<!-- END {self.name} -->"


BLOCKS = (
    Block("CONTRIBUTING.md", "module table", "modules"),
    Block("tests/README.md", "test table", "tests"),
)


def rendered(block: Block, repo: Path = REPO) -> str:
    package, tests = repo / NAME, repo / "tests"
    return modules_table(package) if block.render == "modules" else tests_table(package, tests)


def replaced(text: str, block: Block, table: str) -> str:
    """``text`` with the table between the block's markers replaced (ValueError: no markers)."""
    begin, end = text.find(block.begin()), text.find(block.end())
    if begin < 0 or end < begin:
        raise ValueError(f"{block.doc}: no {block.begin()} ... {block.end()} markers")
    return f"{text[: begin + len(block.begin())]}\n{table}\n{text[end:]}"


def stale(repo: Path = REPO) -> list[str]:
    """The docs whose generated table differs from what the tree gives."""
    out = []
    for block in BLOCKS:
        text = (repo / block.doc).read_text(encoding="utf-8")
        if replaced(text, block, rendered(block, repo)) != text:
            out.append(block.doc)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--write", action="store_true", help="rewrite the tables in the docs")
    what.add_argument("--check", action="store_true", help="exit 1 if a doc's table is stale")
    args = parser.parse_args(argv)
    if args.check:
        for doc in stale():
            print(f"{doc}: stale table ({COMMAND} --write)", file=sys.stderr)
        return 1 if stale() else 0
    for block in BLOCKS:
        if args.write:
            path = REPO / block.doc
            path.write_text(replaced(path.read_text(encoding="utf-8"), block, rendered(block)))
        else:
            print(f"{block.doc}:\n{rendered(block)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
