# SPDX-License-Identifier: Apache-2.0
"""``trtllm-stream-fix doctor``: is the fix installed, matching, and active everywhere?

Reports the installed TensorRT-LLM / openai / openai-harmony versions, the ``.pth`` hook,
each patch target (ok / missing / shape mismatch), whether the fix is active in this
interpreter, and whether a freshly spawned interpreter (like an MPI executor worker) gets
it: a ``python -c`` child imports ``tensorrt_llm.serve.responses_utils`` and answers.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import logging
import os
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

from . import registry, targets
from .installer import ENV, mode_from_env
from .pth import installed_pth_paths

logger = logging.getLogger("trtllm_stream_fix.plugin")

DISTRIBUTIONS = {
    "tensorrt_llm": ("tensorrt_llm", "tensorrt-llm"),
    "openai": ("openai",),
    "openai-harmony": ("openai-harmony", "openai_harmony"),
    "trtllm-stream-fix": ("trtllm-stream-fix",),
}
CHILD_CODE = (
    "import json, sys\n"
    "try:\n"
    "    import tensorrt_llm.serve.responses_utils\n"
    "    from trtllm_stream_fix.plugin.installer import is_active\n"
    "    from trtllm_stream_fix.plugin.bootstrap import hook_enabled\n"
    "    out = {'active': is_active(), 'hook': hook_enabled(), 'error': None}\n"
    "except Exception as exc:\n"
    "    out = {'active': False, 'hook': False, 'error': f'{type(exc).__name__}: {exc}'}\n"
    "print('DOCTOR ' + json.dumps(out))\n"
)


@dataclass
class DoctorReport:
    versions: dict[str, str]
    mode: str
    pth_files: list[str]
    hook_registered: bool
    upstream_importable: bool
    checks: list[targets.TargetCheck] = field(default_factory=list)
    active_here: bool = False
    worker: dict[str, object] = field(default_factory=dict)
    #: This package is an editable install (``pip install -e``), which ships no ``.pth``.
    editable: bool = False
    refusals: dict[str, str] = field(default_factory=dict)  # group -> which target, why
    line: str | None = None  # the module design seen (targets.detect_line)
    #: The hook was registered by this doctor run (to inspect the patch), not before it.
    hook_by_doctor: bool = False

    @property
    def ok(self) -> bool:
        return self.active_here and bool(self.worker.get("active")) and not self.misfits()

    def misfits(self) -> list[targets.TargetCheck]:
        """Targets of a required group that are missing or do not fit (optional groups
        refused are reported, not fatal: see ``off_groups``)."""
        required = {
            t
            for g in registry.GROUPS
            if g.required
            for p in registry.patches(g.name)
            for t in p.all_checks
        }
        return [
            c
            for c in self.checks
            if c.target in required
            and c.status in ("missing", "mismatch")
            and not (c.status == "missing" and c.target.optional)
        ]

    def off_groups(self) -> list[str]:
        """One line per optional group refused here, with what that means."""
        return [
            f"{g.title} ({g.name}) is off: {g.when_off}"
            for g in registry.GROUPS
            if not g.required and g.name in self.refusals
        ]

    def reasons(self) -> list[str]:
        """Why the verdict is what it is, each with what to do about it."""
        out = []
        if not self.upstream_importable:
            out.append(
                "TensorRT-LLM cannot be imported by this interpreter, so there is nothing to "
                "patch here: run doctor with the Python that runs trtllm-serve"
            )
        if self.mode == "off":
            out.append(f"{ENV} turns the fix off: unset it to enable the fix")
        if not self.pth_files:
            why = (
                "an editable install (pip install -e) does not install it"
                if self.editable
                else "it is missing from site-packages"
            )
            out.append(
                f"no .pth hook file ({why}), so worker processes do not load the fix: run "
                "`trtllm-stream-fix plugin install-pth`"
            )
        bad = self.misfits()
        if bad:
            out.append(
                f"{len(bad)} patch target(s) do not have the expected shape (see above): this "
                "TensorRT-LLM version is not supported, the fix refused to patch"
            )
        if self.upstream_importable and not self.active_here and not bad:
            out.append("the fix is not active in this interpreter")
        worker = self.worker
        if worker and not worker.get("active") and self.pth_files:
            detail = f" ({worker['error']})" if worker.get("error") else ""
            out.append(f"a freshly spawned interpreter does not get the fix{detail}")
        return out

    def _hook_text(self) -> str:
        if not self.hook_registered:
            return "no"
        if self.pth_files:
            return "yes"
        by = (
            "this doctor run, to inspect the patch"
            if self.hook_by_doctor
            else "code in this process"
        )
        return f"yes (registered by {by}, not by a .pth file: other processes do not get it)"

    def to_text(self) -> str:
        lines = ["trtllm-stream-fix doctor", "versions:"]
        lines += [f"  {name}: {version}" for name, version in self.versions.items()]
        lines.append(f"mode: {self.mode} ({ENV}={os.environ.get(ENV, '')!r})")
        lines.append(f".pth hook files: {', '.join(self.pth_files) or 'none found'}")
        lines.append(f"import hook registered here: {self._hook_text()}")
        if self.upstream_importable:
            title = targets.LINE_TITLES.get(self.line or "", "unknown (neither design found)")
            lines.append(f"upstream line: {title}")
        lines.append("patch targets:")
        if not self.upstream_importable:
            lines.append("  tensorrt_llm.serve.responses_utils cannot be imported")
        lines += [f"  {c.describe()}" for c in self.checks]
        for group, detail in self.refusals.items():
            lines.append(
                f"refused: patch group {group!r} left unpatched (all or nothing): {detail}"
            )
        lines += [f"optional: {line}" for line in self.off_groups()]
        lines.append(f"fix active in this interpreter: {'yes' if self.active_here else 'no'}")
        worker = self.worker
        state = "yes" if worker.get("active") else "no"
        if worker.get("error"):
            state += f" ({worker['error']})"
        if not worker:
            state = "not checked (--no-spawn)"
        lines.append(f"fix active in a freshly spawned interpreter: {state}")
        if self.ok:
            lines.append(
                "verdict: OK (active here and in a fresh interpreter, every target as expected)"
            )
        else:
            lines.append("verdict: NOT ACTIVE EVERYWHERE, because:")
            lines += [f"  - {reason}" for reason in self.reasons()]
        return "\n".join(lines)


def is_editable() -> bool:
    """True if this package runs from a source tree (``pip install -e``), not site-packages."""
    package = Path(__file__).resolve().parents[1]
    sites = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}
    return not any(package.is_relative_to(Path(site).resolve()) for site in sites)


def _version(names: tuple[str, ...]) -> str:
    for name in names:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    spec = importlib.util.find_spec(names[0].replace("-", "_"))
    if spec is not None and spec.origin:
        return f"no distribution metadata (module at {os.path.dirname(spec.origin)})"
    return "not installed"


def worker_check(
    python: str = sys.executable,
    prelude: str = "",
    env: dict[str, str] | None = None,
    timeout: float = 120.0,
) -> dict[str, object]:
    """Ask a fresh ``python -c`` interpreter whether the fix is active there."""
    try:
        proc = subprocess.run(
            [python, "-c", prelude + CHILD_CODE],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"active": False, "hook": False, "error": f"{type(exc).__name__}: {exc}"}
    for line in proc.stdout.splitlines():
        if line.startswith("DOCTOR "):
            found: dict[str, object] = json.loads(line[len("DOCTOR ") :])
            return found
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return {"active": False, "hook": False, "error": f"exit {proc.returncode}: {tail}"}


def doctor_report(
    *, spawn: bool = True, prelude: str = "", env: dict[str, str] | None = None
) -> DoctorReport:
    """Build the report; imports the patch targets' modules (which installs the fix)."""
    from .bootstrap import hook_enabled, register
    from .installer import check, install, is_active, last_refusals

    mode = mode_from_env()
    hook_before = hook_enabled()
    if mode != "off":
        register()
    importable = True
    try:
        import tensorrt_llm.serve.responses_utils
    except Exception:
        importable = False
    if importable:
        try:
            import tensorrt_llm.serve.openai_server  # noqa: F401
        except Exception as exc:
            logger.info("tensorrt_llm.serve.openai_server not importable: %s", exc)
        if mode != "off":
            install(mode="on")
    report = DoctorReport(
        versions={name: _version(dists) for name, dists in DISTRIBUTIONS.items()},
        mode=mode,
        pth_files=[str(p) for p in installed_pth_paths()],
        hook_registered=hook_enabled(),
        upstream_importable=importable,
        # judged by upstream's objects (the originals the installer saved), not by ours
        checks=[check(t) for t in registry.all_targets()] if importable else [],
        active_here=importable and is_active(),
        editable=is_editable(),
        refusals=last_refusals(),
        line=targets.detect_line() if importable else None,
        hook_by_doctor=hook_enabled() and not hook_before,
    )
    if spawn:
        report.worker = worker_check(prelude=prelude, env=env)
    return report


def doctor_main(argv: list[str] | None = None) -> int:
    """``trtllm-stream-fix doctor [--json] [--no-spawn] [--ledger] [--selftest [--source DIR]]
    [--fingerprint [--source DIR]]``;
    0 when active everywhere (with ``--selftest``: when every selftest stream passed)."""
    parser = argparse.ArgumentParser(
        prog="trtllm-stream-fix doctor",
        description="Is the fix installed, matching this TensorRT-LLM, and active everywhere? "
        "Prints the TensorRT-LLM, openai and openai-harmony versions, the .pth hook, each "
        "patch target (ok, missing or shape mismatch), whether the fix is active in this "
        "interpreter and in a freshly spawned one (as an executor worker is), and a verdict "
        "with what to do. Exit 0 when active everywhere. --selftest drives this TensorRT-LLM's "
        "own processors, patched, with synthetic outputs.",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--no-spawn", action="store_true", help="skip the fresh-worker check")
    parser.add_argument("--ledger", action="store_true", help="also print the patch ledger")
    parser.add_argument(
        "--selftest",
        action="store_true",
        help="drive this TensorRT-LLM's Responses processor, patched, with synthetic outputs",
    )
    parser.add_argument(
        "--source",
        default=None,
        help="with --selftest or --fingerprint: a TensorRT-LLM source tree (default: "
        "$TRTLLM_SOURCE_DIR, else the installed tensorrt_llm)",
    )
    parser.add_argument("--count", type=int, default=30, help="with --selftest: outputs")
    parser.add_argument(
        "--fingerprint",
        action="store_true",
        help="print the patched files' sha256 and recorded version, and each target's shape "
        "(read as text; --source DIR for a tree)",
    )
    args = parser.parse_args(argv)
    if args.fingerprint:
        return _fingerprint_main(args.source, as_json=args.json)
    if args.selftest:
        from .selftest import selftest_main

        return selftest_main(args.source, args.count, as_json=args.json)
    report = doctor_report(spawn=not args.no_spawn)
    if args.json:
        data = {
            "versions": report.versions,
            "mode": report.mode,
            "pth_files": report.pth_files,
            "hook_registered": report.hook_registered,
            "targets": {
                c.target.dotted: {
                    "status": c.status,
                    "found": c.found,
                    "expected": c.target.expected(),
                }
                for c in report.checks
            },
            "active_here": report.active_here,
            "refusals": report.refusals,
            "line": report.line,
            "worker": report.worker,
            "editable": report.editable,
            "ok": report.ok,
            "reasons": [] if report.ok else report.reasons(),
        }
        print(json.dumps(data, indent=2))
    else:
        print(report.to_text())
        if args.ledger:
            print("\npatch ledger:\n" + registry.format_ledger())
    return 0 if report.ok or (args.no_spawn and report.active_here) else 1


def _fingerprint_main(source: str | None, *, as_json: bool) -> int:
    """``doctor --fingerprint``: 0, or 2 when there is no tree to read."""
    from .errors import FingerprintError
    from .fingerprint import fingerprint, to_text

    try:
        data = fingerprint(source or os.environ.get("TRTLLM_SOURCE_DIR") or None)
    except FingerprintError as exc:
        print(f"trtllm-stream-fix doctor --fingerprint: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(data, indent=2) if as_json else to_text(data))
    return 0
