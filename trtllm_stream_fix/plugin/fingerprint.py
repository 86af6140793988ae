# SPDX-License-Identifier: Apache-2.0
"""``trtllm-stream-fix doctor --fingerprint [--source DIR] [--json]``: what this TensorRT-LLM is.

A short, paste-able report of a source tree or of the installed ``tensorrt_llm`` (found with
``importlib.util.find_spec``, never imported): for each file the plugin patches, whether it
is there, its sha256 (first 12 hex digits), its length in characters and the recorded
version it is (``versions.LOCK``, by sha256); then, per registry target, the shape found in
the file's syntax tree against the shapes recorded (``sourceshapes.judge_source``).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
from pathlib import Path
from typing import Any

from . import registry, versions
from .errors import FingerprintError
from .sourceshapes import judge_source
from .upstream_names import SERVE as SERVE_PACKAGE

SERVE = Path("tensorrt_llm") / "serve"


def serve_dir(source: str | None) -> Path:
    """``tensorrt_llm/serve`` of ``source`` (a checkout, a tree, or that folder itself), or of
    the installed package; raises :class:`FingerprintError` when there is none."""
    if source:
        root = Path(source)
        for candidate in (root / SERVE, root / "serve", root):
            if (candidate / "responses_utils.py").is_file():
                return candidate
        raise FingerprintError(f"{source} holds no tensorrt_llm/serve/responses_utils.py")
    spec = importlib.util.find_spec("tensorrt_llm")
    if spec is None or not spec.submodule_search_locations:
        raise FingerprintError("tensorrt_llm is not installed for this Python (try --source DIR)")
    return Path(next(iter(spec.submodule_search_locations))) / "serve"


def fingerprint(source: str | None) -> dict[str, Any]:
    """The fingerprint as plain data (see the module docstring)."""
    serve = serve_dir(source)
    files: dict[str, Any] = {}
    trees: dict[str, ast.Module | None] = {}
    for name in versions.PATCHED_FILES:
        path = serve / name
        if not path.is_file():
            files[name] = {"present": False}
            continue
        text = path.read_text(encoding="utf-8")
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        locked = versions.recorded(name, digest)
        files[name] = {
            "present": True,
            "sha256": digest[:12],
            "chars": len(text),
            "recorded": f"{locked.line} ({locked.origin})" if locked else None,
        }
        try:
            trees[name] = ast.parse(text)
        except SyntaxError as exc:
            files[name]["error"] = f"does not parse: {exc.msg} (line {exc.lineno})"
    return {"serve": str(serve), "files": files, "targets": _targets(trees)}


def _targets(trees: dict[str, ast.Module | None]) -> dict[str, Any]:
    out = {}
    for target in registry.all_targets():
        name = f"{target.module.rsplit('.', 1)[-1]}.py"
        tree = trees.get(name)
        entry: dict[str, Any] = {"recorded": [[list(s.lines), s.params] for s in target.shapes]}
        if tree is None:
            entry.update(status="no file", found="")
        else:
            check = judge_source(tree, target)
            entry.update(status=check.status, found=check.found, why=check.why)
            matched = check.version if check.status == "ok" else None
            every = bool(target.lines) and set((matched or "").split(", ")) == set(target.lines)
            entry["lines"] = "every recorded line" if every else matched
        out[target.dotted.removeprefix(f"{SERVE_PACKAGE}.")] = entry
    return out


def to_text(data: dict[str, Any]) -> str:
    lines = [f"trtllm-stream-fix fingerprint: {data['serve']}", "files:"]
    for name, f in data["files"].items():
        if not f["present"]:
            lines.append(f"  {name}: absent")
            continue
        which = f["recorded"] or "not a recorded file"
        error = f"; {f['error']}" if f.get("error") else ""
        lines.append(f"  {name}: sha256 {f['sha256']}, {f['chars']:,} chars, {which}{error}")
    lines.append("targets (found; recorded shapes where it matches none):")
    for dotted, t in data["targets"].items():
        if t["status"] == "ok":
            lines.append(f"  {dotted}: ok {t['found']} = {t['lines']}")
            continue
        why = f" ({t['why']})" if t.get("why") else ""
        lines.append(f"  {dotted}: {t['status']}{why} {t['found']}".rstrip())
        if t["status"] != "no file":
            lines += [f"    recorded {', '.join(ls)}: ({params})" for ls, params in t["recorded"]]
    return "\n".join(lines)
