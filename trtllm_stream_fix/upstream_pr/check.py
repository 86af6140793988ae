# SPDX-License-Identifier: Apache-2.0
"""Apply a change set to a copy of the tree and check it as upstream's CI would, on CPU.

Three checks, each on the patched copy with no plugin loaded: the moved tests (``-m cpu_only``,
as the CPU stage runs them), the real-module harness, and upstream's linters on what we add.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import layout, lint
from .changeset import ChangeSet
from .harness import REPO, TESTS

ROOT_ENV = "TRTLLM_STREAM_FIX_UPSTREAM_ROOT"
_COPIED = ("pyproject.toml", ".github/pull_request_template.md", layout.L0_CPU)
_PYTEST_INI = "[pytest]\nmarkers =\n    cpu_only: runs on CPU only\n"


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    detail: str


def copy_tree(root: Path, dest: Path) -> Path:
    """The parts of ``root`` the change touches or reads, copied under ``dest``."""
    shutil.copytree(root / layout.SERVE_DIR, dest / layout.SERVE_DIR)
    for path in (*_COPIED, *layout.TEST_PACKAGES):
        if (root / path).is_file():
            (dest / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / path, dest / path)
    return dest


def apply(change: ChangeSet, copy: Path) -> CheckResult:
    """``git apply`` the unified diff in ``copy`` (so the patch itself is what is checked)."""
    patch = copy / ".upstream-pr.patch"
    patch.write_text(change.diff(), encoding="utf-8")
    proc = subprocess.run(
        ["git", "apply", "--whitespace=nowarn", str(patch)],
        cwd=copy,
        capture_output=True,
        text=True,
        check=False,
    )
    patch.unlink()
    for path in layout.TEST_PACKAGES:  # upstream has them; a serve-only tree may not
        (copy / path).parent.mkdir(parents=True, exist_ok=True)
        (copy / path).touch()
    return CheckResult("patch applies (git apply)", proc.returncode == 0, proc.stderr.strip())


def run_tests(copy: Path, timeout: float = 900) -> CheckResult:
    """The moved tests on the patched copy, as the CPU stage runs them (``-m cpu_only``)."""
    from ..encoding import provision_vocab

    ini = copy / ".upstream-pr-pytest.ini"
    ini.write_text(_PYTEST_INI)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join((str(TESTS), str(REPO))))
    env.update({ROOT_ENV: str(copy), "TRTLLM_STREAM_FIX": "0"})
    env["TIKTOKEN_ENCODINGS_BASE"] = str(provision_vocab())  # CI has no network
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "trtllm_stream_fix.upstream_pr.pytest_bootstrap",
        "-m",
        "cpu_only",
        "--rootdir",
        str(copy),
        "-c",
        str(ini),
        str(copy / layout.TEST_DIR),
    ]
    proc = subprocess.run(
        command, cwd=copy, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    summary = proc.stdout.strip().splitlines()[-1:] or [proc.stderr.strip()[-300:]]
    detail = summary[0] if proc.returncode == 0 else (proc.stdout + proc.stderr)[-3000:]
    return CheckResult("moved tests (pytest -m cpu_only)", proc.returncode == 0, detail)


def harness_result(after: dict[str, Any]) -> CheckResult:
    """The patched copy passes every harness check, with no plugin module loaded."""
    if "error" in after:
        return CheckResult("real-module harness", False, after.get("traceback", after["error"]))
    s = after["stats"]
    ok = (
        s["identical"] == s["compared"]
        and s["strict"] == s["sdk"] == s["streams"]
        and s["raised"] == 0
        and not after["plugin_loaded"]
    )
    detail = (
        f"{s['identical']}/{s['compared']} identical, {s['strict']}/{s['streams']} strict, "
        f"{s['sdk']}/{s['streams']} SDK, {s['raised']} raised; plugin loaded: "
        f"{after['plugin_loaded'] or 'no'}"
    )
    if not ok and s.get("examples"):
        detail += "; e.g. " + s["examples"][0]
    return CheckResult("real-module harness (patched files, no plugin)", ok, detail)


def chat_harness_result(after: dict[str, Any]) -> CheckResult:
    """The patched chat post-processors pass every chat check (the same harness run)."""
    name = "real-module chat harness (patched files, no plugin)"
    chat = after.get("chat") or {"error": after.get("error", "no chat run")}
    if "error" in chat:
        return CheckResult(name, False, chat["error"])
    n = chat["streams"]
    counts = [chat[k] for k in ("identical", "strict", "sdk", "nonstreaming")]
    ok = n > 0 and all(c == n for c in counts) and chat["raised"] == 0
    detail = (
        f"{chat['identical']}/{n} identical, {chat['strict']}/{n} strict, {chat['sdk']}/{n} SDK, "
        f"{chat['nonstreaming']}/{n} non-streaming = stream, {chat['raised']} raised"
    )
    if not ok and chat.get("examples"):
        detail += "; e.g. " + chat["examples"][0]
    return CheckResult(name, ok, detail)


def bodies_result(after: dict[str, Any]) -> CheckResult:
    """Every non-streaming body of the patched copy is a complete OpenAI Response."""
    name = "non-streaming bodies against OpenAI's schema (patched files, no plugin)"
    bodies = after.get("bodies") or {"error": after.get("error", "no body run")}
    if "error" in bodies:
        return CheckResult(name, False, bodies["error"])
    n = bodies["bodies"]
    ok = n > 0 and bodies["complete"] == n and bodies["raised"] == 0
    detail = f"{bodies['complete']}/{n} complete, {bodies['raised']} raised"
    if not ok and bodies.get("examples"):
        detail += "; e.g. " + bodies["examples"][0]
    return CheckResult(name, ok, detail)


def bench_result(measured: dict[str, Any] | None) -> CheckResult:
    """The benchmark rows were measured on the tree and on the patched copy."""
    name = "cost benchmark measured (tree and patched copy)"
    if not measured or "error" in measured:
        return CheckResult(name, False, (measured or {}).get("error", "not run"))
    after = [r for r in measured["after"] if r["impl"] == "upstream-real"]
    detail = ", ".join(
        f"{r['tokens']}@{r['stream_interval']}: {r['us_per_token']:.2f} µs/token" for r in after
    )
    before = measured.get("before_error")
    return CheckResult(
        name,
        True,
        f"after: {detail}"
        + (f"; before not measured: the tree's own processor: {before}" if before else ""),
    )


def run_lint(change: ChangeSet, copy: Path, tools: lint.Tools) -> list[CheckResult]:
    """Upstream's pinned linters on the new files and the edited lines."""
    if not tools.pinned:
        return [
            CheckResult("upstream linters", False, f"not upstream's pinned linters: {tools.note}")
        ]
    new = sorted(p for p in change.new_files if p.endswith(".py"))
    results = lint.lint(tools, copy, new, change.edited_ranges())
    return [CheckResult(r.name, r.ok, r.output.strip()[-2000:]) for r in results]
