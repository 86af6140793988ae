# SPDX-License-Identifier: Apache-2.0
"""The change set for one TensorRT-LLM tree: new files, edited files, a unified diff.

Everything is generated from the tree pointed at and from this package's own modules at run
time; nothing of upstream is stored here.
"""

from __future__ import annotations

import difflib
import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..plugin import registry
from . import convert, edits, layout, lint
from .detect import Detection, detect
from .errors import SourceTreeError


def find_root(source: Path) -> Path:
    """The folder holding ``tensorrt_llm/serve/responses_utils.py`` (``source`` or above it)."""
    source = source.resolve()
    for candidate in (source, *source.parents[:3]):
        if (candidate / layout.RESPONSES_UTILS).is_file():
            return candidate
    raise SourceTreeError(f"{source} holds no {layout.RESPONSES_UTILS}")


@dataclass
class ChangeSet:
    root: Path
    detection: Detection
    new_files: dict[str, str] = field(default_factory=dict)
    modified: dict[str, tuple[str, str]] = field(default_factory=dict)  # path: (old, new)
    notes: list[str] = field(default_factory=list)
    formatter: str = ""

    @property
    def tests(self) -> list[str]:
        return sorted(p for p in self.new_files if p.startswith(layout.TEST_DIR))

    def diff(self) -> str:
        """A git-style unified diff (``git apply`` takes it) of every change."""
        chunks = []
        for path in sorted(self.modified):
            old, new = self.modified[path]
            body = difflib.unified_diff(
                old.splitlines(keepends=True),
                new.splitlines(keepends=True),
                f"a/{path}",
                f"b/{path}",
            )
            chunks.append(f"diff --git a/{path} b/{path}\n" + "".join(body))
        for path in sorted(self.new_files):
            lines = self.new_files[path].splitlines(keepends=True)
            chunks.append(
                f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n"
                f"+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{x}" for x in lines)
            )
        return "".join(chunks)

    def stats(self) -> dict[str, tuple[int, int]]:
        """``path: (lines added, lines removed)``."""
        out = {}
        for path, (old, new) in sorted(self.modified.items()):
            added = removed = 0
            for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm=""):
                if line.startswith("+") and not line.startswith("+++"):
                    added += 1
                elif line.startswith("-") and not line.startswith("---"):
                    removed += 1
            out[path] = (added, removed)
        for path, text in sorted(self.new_files.items()):
            out[path] = (len(text.splitlines()), 0)
        return out

    def edited_ranges(self) -> dict[str, list[tuple[int, int]]]:
        """1-based inclusive line ranges of the new text of each edited Python file."""
        out: dict[str, list[tuple[int, int]]] = {}
        for path, (old, new) in self.modified.items():
            if not path.endswith(".py"):
                continue
            matcher = difflib.SequenceMatcher(None, old.splitlines(), new.splitlines(), False)
            ranges = [
                (j1 + 1, j2)
                for tag, _, _, j1, j2 in matcher.get_opcodes()
                if tag in ("replace", "insert") and j2 > j1
            ]
            out[path] = ranges
        return out

    def write(self, out: Path, description: str | None = None) -> list[Path]:
        """``out/upstream.patch``, the new and edited files in full under ``out/files/``."""
        out.mkdir(parents=True, exist_ok=True)
        written = [out / "upstream.patch"]
        written[0].write_text(self.diff(), encoding="utf-8")
        files = out / "files"
        if files.exists():
            shutil.rmtree(files)
        for path, text in {
            **self.new_files,
            **{p: n for p, (_, n) in self.modified.items()},
        }.items():
            target = files / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            written.append(target)
        summary = {
            "source": str(self.root),
            "version_line": list(self.detection.versions),
            "new_files": sorted(self.new_files),
            "modified_files": sorted(self.modified),
            "stats": self.stats(),
            "notes": self.notes,
            "formatter": self.formatter,
        }
        (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        written.append(out / "summary.json")
        if description is not None:
            (out / "PR.md").write_text(description, encoding="utf-8")
            written.append(out / "PR.md")
        return written


def _package_init() -> str:
    return (
        '"""Harmony (gpt-oss) Responses streaming: token-by-token driver and event machine.\n\n'
        "``processor.HarmonyResponsesStream`` is what ``ResponsesStreamingProcessor`` delegates\n"
        "its Harmony path to; the other modules have no TensorRT-LLM dependency.\n"
        '"""\n'
    )


def _new_files(year: int) -> dict[str, str]:
    files: dict[str, str] = {}
    for placement in layout.module_placements():
        if placement.source.name == "__init__.py":
            continue
        files[placement.dest] = convert.convert(placement, year)
    files[f"{layout.PACKAGE_DIR}/__init__.py"] = convert.with_header(_package_init(), year)
    for placement in layout.test_placements():
        files[placement.dest] = convert.convert(placement, year)
    for package in (layout.TEST_DIR, f"{layout.TEST_DIR}/{layout.TEST_SUPPORT}"):
        files[f"{package}/__init__.py"] = convert.with_header("", year)
    return files


def _uncarried(change: ChangeSet) -> list[str]:
    """Bindings of every patch the change set does not carry (``Patch.carried``)."""
    return [
        binding
        for p in registry.PATCHES
        if not p.carried or (p.carried_if and p.carried_if not in change.modified)
        for binding in p.bindings
    ]


def build(source: Path, *, year: int, tools: lint.Tools | None = None) -> ChangeSet:
    """The change set for the tree at ``source`` (formatted with upstream's ruff if at hand)."""
    root = find_root(source)
    utils_path = root / layout.RESPONSES_UTILS
    original = utils_path.read_text(encoding="utf-8")
    change = ChangeSet(root, detect(original))
    change.modified[layout.RESPONSES_UTILS] = (original, edits.edit_responses_utils(original))
    handlers = root / layout.POSTPROCESS_HANDLERS
    if handlers.is_file():
        text = handlers.read_text(encoding="utf-8")
        try:
            change.modified[layout.POSTPROCESS_HANDLERS] = (
                text,
                edits.edit_postprocess_handlers(text),
            )
        except edits.EditError as exc:  # the Responses change stands without it
            change.notes.append(f"Harmony chat post-processors not edited: {exc}")
    protocol = root / layout.OPENAI_PROTOCOL
    if protocol.is_file():
        text = protocol.read_text(encoding="utf-8")
        try:
            change.modified[layout.OPENAI_PROTOCOL] = (text, edits.edit_openai_protocol(text))
        except edits.EditError as exc:  # the streaming change stands without it
            change.notes.append(f"ResponsesResponse not completed: {exc}")
    l0 = root / layout.L0_CPU
    if l0.is_file():
        text = l0.read_text(encoding="utf-8")
        change.modified[layout.L0_CPU] = (text, edits.edit_l0_cpu(text))
    else:
        change.notes.append(
            f"{layout.L0_CPU} is not in the tree: register `{layout.L0_ENTRY}` in the l0_cpu list"
        )
    for path in layout.TEST_PACKAGES:
        if not (root / path).exists() and (root / "tests").is_dir():
            change.notes.append(f"{path} is missing from the tree (upstream has it)")
    change.new_files = _new_files(year)
    if layout.POSTPROCESS_HANDLERS not in change.modified:
        del change.new_files[layout.CHAT_PROCESSOR_TEST]  # it tests the edited post-processors
    clash = sorted(p for p in change.new_files if (root / p).exists())
    if clash:
        raise SourceTreeError(f"the tree already has {', '.join(clash)}")
    for target in _uncarried(change):
        change.notes.append(f"plugin patch not carried into the change set: {target}")
    tools = tools or lint.find_tools()
    with tempfile.TemporaryDirectory(prefix="upstream-pr-") as tmp:
        scratch = Path(tmp)
        if (root / "pyproject.toml").is_file():
            shutil.copy2(root / "pyproject.toml", scratch / "pyproject.toml")
        for path, text in change.new_files.items():
            (scratch / path).parent.mkdir(parents=True, exist_ok=True)
            (scratch / path).write_text(text, encoding="utf-8")
        change.formatter = lint.format_new_files(tools, scratch, sorted(change.new_files))
        for path in change.new_files:
            change.new_files[path] = (scratch / path).read_text(encoding="utf-8")
    return change
