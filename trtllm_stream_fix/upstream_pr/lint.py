# SPDX-License-Identifier: Apache-2.0
"""Upstream's pinned linters: found, or installed from PyPI into a tool environment.

New files are Group A upstream (``ruff`` check and format with its ``pyproject.toml``
settings); ``responses_utils.py`` is a legacy file (``yapf`` at 80 columns, ``isort``), so our
edits there are checked with yapf on the edited lines only and isort on the file;
``codespell`` reads everything we add.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from dataclasses import dataclass, field
from pathlib import Path

from ..core.config import CACHE_ENV
from .layout import CODESPELL_IGNORE, LINT_PINS, RUFF_SETTINGS

ISORT_PIN = "5.12.0"
YAPF_STYLE = "{based_on_style: pep8, column_limit: 80}"  # upstream's [tool.yapf]
PINS = {**LINT_PINS, "isort": ISORT_PIN}


def default_lint_env() -> Path:
    """``$TRTLLM_STREAM_FIX_CACHE/upstream-lint``, else under the user cache folder."""
    base = os.environ.get(CACHE_ENV)
    if base:
        return Path(base) / "upstream-lint"
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "trtllm-stream-fix" / "upstream-lint"


@dataclass
class Tools:
    """Paths of the linters and whether they are upstream's pinned versions."""

    bin: dict[str, str] = field(default_factory=dict)
    pinned: bool = False
    note: str = ""

    def run(self, tool: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [self.bin[tool], *args], cwd=cwd, capture_output=True, text=True, check=False
        )


def _env_bin(env: Path) -> Path:
    return env / ("Scripts" if sys.platform == "win32" else "bin")


def _pinned_in(env: Path) -> dict[str, str] | None:
    found = {}
    for tool in PINS:
        path = _env_bin(env) / tool
        if not path.exists():
            return None
        found[tool] = str(path)
    stamp = env / "pins.txt"
    if not stamp.is_file() or stamp.read_text() != _stamp():
        return None
    return found


def _stamp() -> str:
    return "".join(f"{tool}=={version}\n" for tool, version in sorted(PINS.items()))


def install_pinned(env: Path) -> Tools:
    """Create ``env`` with the pinned linters (``pip`` from PyPI); raises on failure."""
    venv.EnvBuilder(with_pip=True, clear=True).create(env)
    pip = [str(_env_bin(env) / "python"), "-m", "pip", "install", "-q"]
    proc = subprocess.run(
        [*pip, *(f"{tool}=={version}" for tool, version in PINS.items())],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode:
        raise RuntimeError(f"cannot install the pinned linters into {env}: {proc.stderr[-800:]}")
    (env / "pins.txt").write_text(_stamp())
    found = _pinned_in(env)
    assert found is not None
    return Tools(found, pinned=True, note=f"pinned linters from {env}")


def find_tools(env: Path | None = None, *, install: bool = False) -> Tools:
    """The pinned linters in ``env`` (installed first if asked), else whatever ruff is here."""
    env = env or default_lint_env()
    found = _pinned_in(env)
    if found:
        return Tools(found, pinned=True, note=f"pinned linters from {env}")
    if install:
        return install_pinned(env)
    here = Path(sys.executable).parent / "ruff"
    ruff = str(here) if here.exists() else shutil.which("ruff")
    if ruff is None:
        return Tools({}, note="no ruff found: new files are written unformatted")
    return Tools({"ruff": ruff}, note=f"{ruff} (not upstream's pinned ruff {PINS['ruff']})")


def ruff_config(root: Path) -> Path:
    """Upstream's ruff settings: the tree's ``pyproject.toml``, else the recorded copy."""
    pyproject = root / "pyproject.toml"
    if pyproject.is_file() and "[tool.ruff" in pyproject.read_text(encoding="utf-8"):
        return pyproject
    recorded = root / ".upstream-ruff.toml"
    recorded.write_text(RUFF_SETTINGS)
    return recorded


def format_new_files(tools: Tools, root: Path, paths: list[str]) -> str:
    """Apply ruff's fixes and formatter to ``paths`` (as upstream's pre-commit hooks do)."""
    if "ruff" not in tools.bin or not paths:
        return tools.note
    config = str(ruff_config(root))
    fix = tools.run(
        "ruff", "check", "--config", config, "--fix", "--exit-zero", "-q", *paths, cwd=root
    )
    fmt = tools.run("ruff", "format", "--config", config, "-q", *paths, cwd=root)
    if fmt.returncode:
        raise RuntimeError(f"ruff format failed: {fmt.stderr or fix.stderr}")
    return tools.note


def _isort_args(root: Path) -> list[str]:
    """isort's settings: the tree's ``pyproject.toml``, else upstream's ``[tool.isort]``."""
    pyproject = root / "pyproject.toml"
    if pyproject.is_file() and "[tool.isort]" in pyproject.read_text(encoding="utf-8"):
        return ["--settings-path", str(pyproject)]
    return ["--line-length", "80", "--project", "tensorrt_llm"]


@dataclass(frozen=True)
class LintResult:
    name: str
    ok: bool
    output: str


def lint(
    tools: Tools, root: Path, new_paths: list[str], legacy: dict[str, list[tuple[int, int]]]
) -> list[LintResult]:
    """Upstream's lint settings on the new files and the edited lines of legacy files."""
    config = str(ruff_config(root))
    results = []
    check = tools.run("ruff", "check", "--config", config, "--no-fix", *new_paths, cwd=root)
    results.append(LintResult("ruff check (new files)", check.returncode == 0, check.stdout))
    fmt = tools.run("ruff", "format", "--config", config, "--check", "--diff", *new_paths, cwd=root)
    results.append(
        LintResult("ruff format (new files)", fmt.returncode == 0, fmt.stdout + fmt.stderr)
    )
    for path, ranges in legacy.items():
        lines = [arg for start, end in ranges for arg in ("--lines", f"{start}-{end}")]
        yapf = tools.run("yapf", "--diff", "--style", YAPF_STYLE, *lines, path, cwd=root)
        yapf_ok = yapf.returncode == 0 and not yapf.stdout.strip()
        results.append(LintResult(f"yapf (edited lines of {path})", yapf_ok, yapf.stdout))
        isort = tools.run("isort", "--check-only", "--diff", *_isort_args(root), path, cwd=root)
        results.append(LintResult(f"isort ({path})", isort.returncode == 0, isort.stdout))
    spell = tools.run("codespell", "-L", CODESPELL_IGNORE, *new_paths, cwd=root)
    results.append(LintResult("codespell (new files)", spell.returncode == 0, spell.stdout))
    return results
