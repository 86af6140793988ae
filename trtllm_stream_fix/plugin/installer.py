# SPDX-License-Identifier: Apache-2.0
"""Apply and remove the patches of the ledger, gated on the recorded target shapes.

``install()`` is idempotent and per process: it patches every patch set whose module has
finished importing, and can be called again when another module loads (the import hook
does). Patch sets that must agree form a group (``responses``: the streaming processor, the
non-streaming mapper, the stream guard, the input channels and the Chat Completions
post-processors; ``response``: the complete Response model, alone; ``usage``: the
non-streaming Harmony usage, alone): if any target of any
set in a group does not match the recorded shapes, the whole group is refused (what a module
loaded earlier had patched is taken back), with one log line per mismatch naming the target,
the expected and the found shape; upstream is left untouched. ``last_refusals()`` keeps the
reasons for ``doctor``. ``uninstall()`` restores exactly what ``install()`` replaced,
and only where our replacement is still in place.

``TRTLLM_STREAM_FIX``: ``0``/``off``/``false``/``no`` disables the fix (install patches
nothing); ``require`` makes any refusal or error fatal (``StreamFixInstallError``);
anything else (default) installs what it can and logs what it refused.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from . import ledger, targets
from .targets import OPENAI_SERVER, POSTPROCESS_HANDLERS, RESPONSES_UTILS, Target

logger = logging.getLogger("trtllm_stream_fix.plugin")

ENV = "TRTLLM_STREAM_FIX"
Mode = Literal["on", "off", "require"]
Status = Literal[
    "patched", "already", "not-loaded", "absent", "refused", "error", "disabled", "restored", "left"
]
_OFF = frozenset(("0", "off", "false", "no", "disable", "disabled"))


class StreamFixInstallError(RuntimeError):
    """A patch could not be applied while ``TRTLLM_STREAM_FIX=require``."""


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


@dataclass(frozen=True)
class _Binding:
    module: str
    attr: str
    replacement: Callable[[Any], Any]  # original -> replacement

    @property
    def dotted(self) -> str:
        return f"{self.module}.{self.attr}"


@dataclass(frozen=True)
class _PatchSet:
    name: str
    checks: tuple[Target, ...]
    bindings: tuple[_Binding, ...]
    group: str = "responses"  # sets of one group are applied or refused together
    optional: bool = False  # a version without the first target has nothing to patch here


@dataclass
class _Applied:
    binding: _Binding
    original: Any
    replacement: Any


def _processor_class(original: Any) -> Any:
    from .processor import FixedResponsesStreamingProcessor

    return FixedResponsesStreamingProcessor


def _output_content(original: Any) -> Any:
    from .replacements import create_output_content_harmony

    return create_output_content_harmony(original)


def _parse_input(original: Any) -> Any:
    from .replacements import parse_response_input

    return parse_response_input(original)


def _guard(original: Any) -> Any:
    from .replacements import guard_responses_stream

    return guard_responses_stream(original)


def _response_model(original: Any) -> Any:
    from .response_model import CompleteResponsesResponse

    return CompleteResponsesResponse


def _create_response(original: Any) -> Any:
    from .replacements import create_response

    return create_response(original)


def _chat_streaming(original: Any) -> Any:
    from .chat import chat_harmony_streaming_post_processor

    return chat_harmony_streaming_post_processor


def _chat_nonstreaming(original: Any) -> Any:
    from .chat import chat_harmony_post_processor

    return chat_harmony_post_processor


PATCH_SETS: tuple[_PatchSet, ...] = (
    _PatchSet(
        ledger.STREAMING,
        (*targets.PROCESSOR_TARGETS, targets.SERVER_BINDING),
        (
            _Binding(RESPONSES_UTILS, "ResponsesStreamingProcessor", _processor_class),
            _Binding(OPENAI_SERVER, "ResponsesStreamingProcessor", _processor_class),
        ),
    ),
    _PatchSet(
        ledger.NONSTREAMING,
        (targets.OUTPUT_CONTENT, targets.PARSE_OUTPUT_TOKENS),
        (_Binding(RESPONSES_UTILS, "_create_output_content_harmony", _output_content),),
    ),
    _PatchSet(
        ledger.GUARD,
        (targets.GUARD, targets.SERVER_GUARD_BINDING),
        (
            _Binding(RESPONSES_UTILS, "guard_responses_stream", _guard),
            _Binding(OPENAI_SERVER, "guard_responses_stream", _guard),
        ),
        optional=True,  # versions before the guard have no guard to fix
    ),
    _PatchSet(
        ledger.INPUT,
        (targets.PARSE_INPUT,),
        (_Binding(RESPONSES_UTILS, "_parse_response_input", _parse_input),),
    ),
    _PatchSet(
        ledger.RESPONSE,
        (targets.RESPONSE_MODEL, targets.RESPONSE_FROM_REQUEST),
        (_Binding(RESPONSES_UTILS, "ResponsesResponse", _response_model),),
        group="response",  # independent of the event fix: refused alone if it mismatches
    ),
    _PatchSet(
        ledger.CHAT,
        targets.CHAT_TARGETS,
        (
            _Binding(
                POSTPROCESS_HANDLERS, "chat_harmony_streaming_post_processor", _chat_streaming
            ),
            _Binding(POSTPROCESS_HANDLERS, "chat_harmony_post_processor", _chat_nonstreaming),
            _Binding(OPENAI_SERVER, "chat_harmony_streaming_post_processor", _chat_streaming),
            _Binding(OPENAI_SERVER, "chat_harmony_post_processor", _chat_nonstreaming),
        ),
        optional=True,  # versions without Harmony chat post-processors
    ),
    _PatchSet(
        ledger.USAGE,
        (targets.CREATE_RESPONSE,),
        (_Binding(RESPONSES_UTILS, "_create_response", _create_response),),
        group="usage",  # independent of the event fix: refused alone if it mismatches
        optional=True,  # a version without _create_response has nothing to patch here
    ),
)

_lock = threading.RLock()
_applied: dict[str, _Applied] = {}
_refusals: dict[str, str] = {}  # group -> why it was refused by the last install()


def mode_from_env(environ: Any = None) -> Mode:
    value = (environ if environ is not None else os.environ).get(ENV, "").strip().lower()
    if value in _OFF:
        return "off"
    return "require" if value == "require" else "on"


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
        report.outcomes = [Outcome(e.target, "disabled", f"{ENV}=0") for e in ledger.LEDGER]
        return report
    _ensure_visible()
    with _lock:
        for group in dict.fromkeys(s.group for s in PATCH_SETS):
            report.outcomes += _install_group([s for s in PATCH_SETS if s.group == group])
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


def _install_group(sets: list[_PatchSet]) -> list[Outcome]:
    """All sets of one group, or none of them (see the module docstring)."""
    absent = [
        s
        for s in sets
        if s.optional
        and targets.loaded_module(s.checks[0].module) is not None
        and targets.check(s.checks[0]).status == "missing"
    ]
    sets = [s for s in sets if s not in absent]
    skipped = [Outcome(b.dotted, "absent") for s in absent for b in s.bindings]
    if not sets:
        return skipped
    bindings = [b for s in sets for b in s.bindings]
    pending = [b for b in bindings if b.dotted not in _applied]
    if pending and targets.loaded_module(sets[0].bindings[0].module) is not None:
        bad = [
            (s.name, c)
            for s in sets
            for c in (targets.check(t) for t in s.checks)
            if c.status in ("missing", "mismatch")
        ]
        _refusals.pop(sets[0].group, None)
        if bad:
            for set_name, c in bad:
                logger.warning(
                    "not patching group %r: %s (patch set %r) %s; expected %s, found %s; "
                    "upstream left untouched",
                    sets[0].group,
                    c.target.dotted,
                    set_name,
                    c.status,
                    c.target.expected(),
                    c.found,
                )
            detail = "; ".join(c.describe() for _, c in bad)
            _refusals[sets[0].group] = detail
            # A module of the group that loaded later (postprocess_handlers after
            # responses_utils) can refuse it: take back what was applied, all or nothing.
            for binding in bindings:
                if binding.dotted in _applied:
                    _restore(_applied.pop(binding.dotted))
            return skipped + [Outcome(b.dotted, "refused", detail) for b in bindings]
    return skipped + [o for s in sets for o in _install_set(s)]


def _install_set(patch_set: _PatchSet) -> list[Outcome]:
    pending = [b for b in patch_set.bindings if b.dotted not in _applied]
    if not pending:
        return [Outcome(b.dotted, "already") for b in patch_set.bindings]
    if targets.loaded_module(patch_set.bindings[0].module) is None:
        return [Outcome(b.dotted, "not-loaded") for b in patch_set.bindings]
    outcomes = []
    for binding in patch_set.bindings:
        if binding.dotted in _applied:
            outcomes.append(Outcome(binding.dotted, "already"))
            continue
        module = targets.loaded_module(binding.module)
        if module is None:
            outcomes.append(Outcome(binding.dotted, "not-loaded"))
            continue
        try:
            outcomes.append(_apply(module, binding))
        except Exception as exc:
            logger.exception("could not patch %s", binding.dotted)
            outcomes.append(Outcome(binding.dotted, "error", f"{type(exc).__name__}: {exc}"))
    return outcomes


def _apply(module: Any, binding: _Binding) -> Outcome:
    current = module.__dict__[binding.attr]
    if getattr(current, "__trtllm_stream_fix__", False):
        # Bound to ours through an import of an already patched name (openai_server).
        original = (
            targets.upstream_class(current)
            if isinstance(current, type)
            else (targets.unwrap(current))
        )
        _applied[binding.dotted] = _Applied(binding, original, current)
        return Outcome(binding.dotted, "already", "bound at import")
    replacement = binding.replacement(current)
    setattr(module, binding.attr, replacement)
    _applied[binding.dotted] = _Applied(binding, current, replacement)
    return Outcome(binding.dotted, "patched")


def _restore(applied: _Applied) -> bool:
    """Put ``applied``'s original back if our replacement is still bound; True if it was."""
    module = sys.modules.get(applied.binding.module)
    current = None if module is None else module.__dict__.get(applied.binding.attr)
    if module is None or current is not applied.replacement:
        return False
    setattr(module, applied.binding.attr, applied.original)
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
    with _lock:
        return (
            all(
                f"{b.module}.{b.attr}" in _applied
                for b in PATCH_SETS[0].bindings
                if targets.loaded_module(b.module) is not None
            )
            and f"{RESPONSES_UTILS}.ResponsesStreamingProcessor" in _applied
        )


def applied_targets() -> list[str]:
    with _lock:
        return list(_applied)
