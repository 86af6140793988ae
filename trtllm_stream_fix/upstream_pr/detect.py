# SPDX-License-Identifier: Apache-2.0
"""Which upstream version line a source tree is, from the plugin's recorded shapes.

The targets of ``plugin/targets.py`` that live in ``responses_utils`` are looked up in the
file's syntax tree (nothing is imported) and their parameter lists normalised exactly as
``targets.shape_of`` does. The version line is the set of recorded versions every target
agrees with.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ..plugin import targets

Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


class UnknownVersionError(ValueError):
    """The tree matches no recorded version line."""


@dataclass(frozen=True)
class TargetMatch:
    dotted: str
    found: str  # the shape in the tree, or what is missing
    versions: frozenset[str]  # recorded versions whose shape matches (empty: none)


@dataclass(frozen=True)
class Detection:
    versions: tuple[str, ...]  # the version line(s) every target agrees with
    matches: tuple[TargetMatch, ...]

    @property
    def line(self) -> str:
        return " | ".join(self.versions)


def ast_shape(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """The normalised parameter list of a ``def`` (see ``targets.shape_of``)."""
    args = node.args
    positional = args.posonlyargs + args.args
    first_default = len(positional) - len(args.defaults)
    parts = [a.arg + ("=" if i >= first_default else "") for i, a in enumerate(positional)]
    if args.vararg:
        parts.append(f"*{args.vararg.arg}")
    for arg, default in zip(args.kwonlyargs, args.kw_defaults):
        parts.append(arg.arg + ("=" if default is not None else ""))
    if args.kwarg:
        parts.append(f"**{args.kwarg.arg}")
    return ", ".join(parts)


def find_definition(tree: ast.Module, path: str) -> Definition | None:
    """The top-level definition (``Class.method`` allowed) named by ``path``."""
    scope: list[ast.stmt] = tree.body
    node: Definition | None = None
    for name in path.split("."):
        node = next(
            (
                n
                for n in scope
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and n.name == name
            ),
            None,
        )
        if node is None:
            return None
        scope = node.body
    return node


def _all_versions() -> set[str]:
    return {
        version.strip()
        for target in targets.ALL_TARGETS
        for versions, _ in target.shapes
        for version in versions.split(",")
    }


def _unrecorded(target: targets.Target) -> set[str]:
    """Versions an optional target records no shape for (it does not constrain them)."""
    if not target.optional:
        return set()
    recorded = {v.strip() for versions, _ in target.shapes for v in versions.split(",")}
    return _all_versions() - recorded


def _match(tree: ast.Module, target: targets.Target) -> TargetMatch:
    node = find_definition(tree, target.path)
    if node is None:
        absent = _all_versions() if target.optional else set()
        return TargetMatch(target.dotted, "missing", frozenset(absent))
    if target.kind == "class":
        ok = isinstance(node, ast.ClassDef)
        return TargetMatch(
            target.dotted, "a class", frozenset(_all_versions()) if ok else frozenset()
        )
    if isinstance(node, ast.ClassDef):
        return TargetMatch(target.dotted, "a class", frozenset())
    found = ast_shape(node)
    if target.kind == "coroutine" and not isinstance(node, ast.AsyncFunctionDef):
        return TargetMatch(target.dotted, f"sync ({found})", frozenset())
    versions = {
        version.strip()
        for recorded, shape in target.shapes
        if shape == found
        for version in recorded.split(",")
    }
    if not target.shapes:
        versions = _all_versions()
    return TargetMatch(target.dotted, f"({found})", frozenset(versions | _unrecorded(target)))


def detect(responses_utils_source: str) -> Detection:
    """The version line of a ``responses_utils.py`` text; raises ``UnknownVersionError``."""
    tree = ast.parse(responses_utils_source)
    relevant = [
        t
        for t in targets.ALL_TARGETS
        if t.module == targets.RESPONSES_UTILS and t.kind != "binding"
    ]
    matches = tuple(_match(tree, t) for t in relevant)
    common = set(_all_versions())
    for match in matches:
        common &= match.versions
    if not common:
        misfits = [f"{m.dotted}: found {m.found}" for m in matches if not m.versions]
        detail = "; ".join(misfits) or "the targets agree on no single version"
        raise UnknownVersionError(f"no recorded upstream version line matches: {detail}")
    return Detection(tuple(sorted(common)), matches)
