# SPDX-License-Identifier: Apache-2.0
"""Apply and remove the patches of the registry (``registry.py``), gated on target shapes.

``install()`` is idempotent and per process: it patches every group whose modules have
finished importing, and can be called again when another module loads (the import hook
does). The patches of a group are applied or refused together: if any target of a present
patch of the group is missing or does not fit (``targets.check``: a recorded shape, or a
compatible drift), the whole group is refused (what a module loaded earlier had patched is
taken back), with one log line per misfit naming the target, what changed, the expected and
the found shape; upstream is left untouched. An optional patch whose target this version
lacks is ``absent``, the rest of its group installs; so is a patch of the other module
design (``targets.detect_line``: the class line's on the pre-class line and the other way
round), reported with ``OTHER_LINE``. A group whose ``requires`` hook names something this
environment lacks (the ``websocket`` group without a WebSocket library) is refused the same
way, with that reason. Groups are independent of one another.
``last_refusals()`` and ``group_states()`` keep the outcome for ``doctor`` and the self-test.
``uninstall()`` restores exactly what ``install()`` replaced, and only where our replacement
is still in place.

``TRTLLM_STREAM_FIX``: ``0``/``off``/``false``/``no`` disables the fix (install patches
nothing); ``require`` makes any refusal or error fatal (``StreamFixInstallError``);
anything else (default) installs what it can and logs what it refused.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Literal

from ..core.config import FIX_ENV, FixMode, fix_mode
from . import registry, targets
from .errors import StreamFixInstallError
from .marker import is_ours
from .registry import Patch

logger = logging.getLogger("trtllm_stream_fix.plugin")

ENV = FIX_ENV
Mode = FixMode
Status = Literal[
    "patched", "already", "not-loaded", "absent", "refused", "error", "disabled", "restored", "left"
]
OTHER_LINE = "not on this line"  # detail of an absent outcome of the other design's patches
#: The patch that fixes streaming on each module design (``is_active``).
STREAMING_PATCHES = {targets.CLASS_LINE: "processor", targets.PRE_CLASS_LINE: "pre-class-stream"}


@dataclass(frozen=True)
class Outcome:
    target: str
    status: Status
    detail: str = ""


@dataclass
class Report:
    mode: Mode
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status in ("refused", "error")]

    def describe(self) -> str:
        lines = [f"mode: {self.mode}"]
        lines += [
            f"  {o.target}: {o.status}{' - ' + o.detail if o.detail else ''}" for o in self.outcomes
        ]
        return "\n".join(lines)


@dataclass
class _Applied:
    patch: Patch
    dotted: str
    original: Any
    replacement: Any


_lock = threading.RLock()
_applied: dict[str, _Applied] = {}
_refusals: dict[str, str] = {}  # group -> why it was refused by the last install()


def mode_from_env(environ: Any = None) -> Mode:
    """``TRTLLM_STREAM_FIX`` of ``environ`` (default: this process's), read now."""
    return fix_mode(os.environ if environ is None else environ)


def _ensure_visible() -> None:
    """Make our log lines reach stderr when nothing else configured logging."""
    if logger.handlers or logging.getLogger().handlers:
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("[trtllm-stream-fix] %(levelname)s %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)


def install(*, mode: Mode | None = None) -> Report:
    """Patch every loaded target (see the module docstring); returns what happened."""
    mode = mode or mode_from_env()
    report = Report(mode)
    if mode == "off":
        report.outcomes = [Outcome(b, "disabled", f"{ENV}=0") for b in registry.bindings()]
        return report
    _ensure_visible()
    with _lock:
        for group in registry.GROUPS:
            report.outcomes += _install_group(group.name)
    for outcome in report.outcomes:
        if outcome.status == "patched":
            logger.info("patched %s (pid %d)", outcome.target, os.getpid())
    if mode == "require" and report.failed:
        raise StreamFixInstallError("; ".join(f"{o.target}: {o.detail}" for o in report.failed))
    return report


def last_refusals() -> dict[str, str]:
    """Why each refused group was refused by the last ``install()`` (group -> detail)."""
    with _lock:
        return dict(_refusals)


def _install_group(group: str) -> list[Outcome]:
    """Every present patch of ``group``, or none of them (see the module docstring)."""
    present = [p for p in registry.patches(group) if not _absent(p)]
    outcomes = [
        Outcome(b, "absent", OTHER_LINE if _other_line(p) else "")
        for p in registry.patches(group)
        if p not in present
        for b in p.bindings
    ]
    checks = [check(t) for p in present for t in p.all_checks]
    bad = [c for c in checks if c.status in ("missing", "mismatch")]
    _refusals.pop(group, None)
    loaded = any(c.status != "not-loaded" for c in checks)  # judged where it would patch
    unmet = _unmet(group) if loaded and not bad else None
    if not bad and not unmet:
        return outcomes + [_install_binding(p, b) for p in present for b in p.bindings]
    for c in bad:
        logger.warning(
            "not patching group %r: %s %s%s; expected %s, found %s; upstream left untouched",
            group,
            c.target.dotted,
            c.status,
            f" ({c.why})" if c.why else "",
            c.target.expected(),
            c.found,
        )
    if unmet:
        logger.warning("not patching group %r: %s; upstream left untouched", group, unmet)
    _refusals[group] = detail = unmet or "; ".join(c.describe() for c in bad)
    # A module of the group that loaded later (openai_server after responses_utils) can
    # refuse it: take back what was applied, all or nothing.
    for dotted in (b for p in present for b in p.bindings if b in _applied):
        _restore(_applied.pop(dotted))
    return outcomes + [Outcome(b, "refused", detail) for p in present for b in p.bindings]


def _unmet(group: str) -> str | None:
    """Why this environment cannot run ``group`` (its ``requires`` hook), or None."""
    requires = registry.group(group).requires
    if not requires:
        return None
    module, name = requires.split(":")
    try:
        problem: str | None = getattr(importlib.import_module(module), name)()
    except Exception as exc:
        return f"{requires} raised {type(exc).__name__}: {exc}"
    return problem


def _absent(patch: Patch) -> bool:
    """A patch of the other module design (``targets.detect_line``), or an optional patch
    whose target this (loaded) version does not have."""
    status = check(patch.checks[0]).status
    return status == "other-line" or (patch.optional and status == "missing")


def _other_line(patch: Patch) -> bool:
    return check(patch.checks[0]).status == "other-line"


def originals() -> dict[str, Any]:
    """Upstream's object of every name ``install()`` rebound (dotted name -> original)."""
    with _lock:
        return {dotted: applied.original for dotted, applied in _applied.items()}


def check(target: targets.Target) -> targets.TargetCheck:
    """``targets.check`` of upstream's object: a name we rebound is judged by the original
    saved when it was rebound, not by our replacement."""
    return targets.check(target, originals())


def _install_binding(patch: Patch, dotted: str) -> Outcome:
    if dotted in _applied:
        return Outcome(dotted, "already")
    module_name, attr = dotted.rsplit(".", 1)
    module = targets.loaded_module(module_name)
    if module is None or targets.loaded_module(patch.module) is None:
        return Outcome(dotted, "not-loaded")
    try:
        current = module.__dict__[attr]
        primary = _applied.get(patch.target)
        # Bound to ours through an import of an already patched name (openai_server).
        imported = primary is not None and current is primary.replacement
        if imported or is_ours(current):
            original = (
                primary.original
                if primary is not None and imported
                else targets.unwrap(targets.upstream_class(current))
            )
            _applied[dotted] = _Applied(patch, dotted, original, current)
            return Outcome(dotted, "already", "bound at import")
        replacement = primary.replacement if primary else patch.replacement_for(current)
        setattr(module, attr, replacement)
        _applied[dotted] = _Applied(patch, dotted, current, replacement)
        return Outcome(dotted, "patched")
    except Exception as exc:
        logger.exception("could not patch %s", dotted)
        return Outcome(dotted, "error", f"{type(exc).__name__}: {exc}")


def _restore(applied: _Applied) -> bool:
    """Put ``applied``'s original back if our replacement is still bound; True if it was."""
    module_name, attr = applied.dotted.rsplit(".", 1)
    module = sys.modules.get(module_name)
    current = None if module is None else module.__dict__.get(attr)
    if module is None or current is not applied.replacement:
        return False
    setattr(module, attr, applied.original)
    return True


def uninstall() -> Report:
    """Restore every attribute ``install`` replaced that still holds our replacement."""
    report = Report(mode_from_env())
    with _lock:
        for dotted, applied in list(_applied.items()):
            if _restore(applied):
                report.outcomes.append(Outcome(dotted, "restored"))
            else:
                logger.warning("not restoring %s: it was rebound by someone else", dotted)
                report.outcomes.append(Outcome(dotted, "left", "rebound by someone else"))
            del _applied[dotted]
    return report


def is_active() -> bool:
    """Whether the streaming fix is in place in this interpreter."""
    line = targets.detect_line() or targets.CLASS_LINE
    processor = registry.patch(STREAMING_PATCHES[line])
    with _lock:
        return processor.target in _applied and all(
            b in _applied
            for b in processor.bindings
            if targets.loaded_module(b.rsplit(".", 1)[0]) is not None
        )


def group_states() -> dict[str, str]:
    """Per group: ``installed``, ``refused`` (by the last ``install()``), ``absent`` (nothing
    to patch on this version) or ``not-loaded``."""
    with _lock:
        out = {}
        for group in registry.GROUPS:
            bindings = [b for p in registry.patches(group.name) for b in p.bindings]
            if group.name in _refusals:
                out[group.name] = "refused"
            elif any(b in _applied for b in bindings):
                out[group.name] = "installed"
            elif all(_absent(p) for p in registry.patches(group.name)):
                out[group.name] = "absent"
            else:
                out[group.name] = "not-loaded"
        return out


def applied_targets() -> list[str]:
    with _lock:
        return list(_applied)
