# SPDX-License-Identifier: Apache-2.0
"""Which upstream version line a source tree is, from the plugin's recorded shapes.

The registry's targets that live in ``responses_utils`` are looked up in the file's syntax
tree (nothing is imported), their parameter lists normalised as ``targets.shape_of`` does and
judged as ``targets.judge`` judges a loaded object. The version line is the set of recorded
lines every target agrees with; a target of a compatible but unrecorded shape (``drift``)
and an optional target the tree lacks constrain no line.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ..plugin import registry, targets
from ..plugin.sourceshapes import ast_shape, find_definition, judge_source
from .errors import UnknownVersionError

__all__ = [
    "Detection",
    "TargetMatch",
    "UnknownVersionError",
    "ast_shape",
    "detect",
    "find_definition",
]


@dataclass(frozen=True)
class TargetMatch:
    dotted: str
    found: str  # the shape in the tree, or what is missing
    versions: frozenset[str]  # recorded versions whose shape matches (empty: none)
    drift: bool = False  # a compatible shape no line recorded (constrains no line)

    def describe(self) -> str:
        lines = ", ".join(sorted(self.versions)) or "no recorded line"
        return f"{self.dotted} (found {self.found}) matches {lines}"


@dataclass(frozen=True)
class Detection:
    versions: tuple[str, ...]  # the version line(s) every target agrees with
    matches: tuple[TargetMatch, ...]

    @property
    def line(self) -> str:
        drift = [m.dotted.rsplit(".", 1)[-1] for m in self.matches if m.drift]
        note = f" (unrecorded compatible shape: {', '.join(drift)})" if drift else ""
        return " | ".join(self.versions) + note


def _universe() -> set[str]:
    return {line for t in _relevant() for line in t.lines}


def _relevant() -> list[targets.Target]:
    return [
        t
        for t in registry.all_targets()
        if t.module == targets.RESPONSES_UTILS
        and t.kind != "binding"
        and t.line != targets.PRE_CLASS_LINE  # upstream-pr edits the class line's module
    ]


def _match(tree: ast.Module, target: targets.Target) -> TargetMatch:
    everything = frozenset(_universe())
    judged = judge_source(tree, target)
    if judged.status in ("missing", "other-line"):
        return TargetMatch(
            target.dotted, judged.status, everything if target.optional else frozenset()
        )
    if judged.status == "compatible":
        return TargetMatch(target.dotted, f"{judged.found}; {judged.why}", everything, drift=True)
    if judged.status != "ok":
        why = f" ({judged.why})" if judged.why else ""
        return TargetMatch(target.dotted, judged.found + why, frozenset())
    version = judged.version or "any"
    lines = set(version.split(", ")) if version != "any" else set(everything)
    if target.optional:  # lines it records no shape for: it does not constrain them
        lines |= everything - set(target.lines)
    return TargetMatch(target.dotted, judged.found, frozenset(lines))


def detect(responses_utils_source: str) -> Detection:
    """The version line of a ``responses_utils.py`` text; raises ``UnknownVersionError``
    naming every target and the lines each matched when they agree on none."""
    tree = ast.parse(responses_utils_source)
    matches = tuple(_match(tree, t) for t in _relevant())
    common = _universe()
    for match in matches:
        common &= match.versions
    if not common:
        raise UnknownVersionError(
            "no recorded upstream version line matches: "
            + "; ".join(m.describe() for m in matches if m.versions != _universe())
        )
    return Detection(tuple(sorted(common)), matches)
