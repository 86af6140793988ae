# SPDX-License-Identifier: Apache-2.0
"""Target shapes read from source text (``ast``), judged as ``targets.check`` judges a loaded
object: for ``upstream-pr``'s version detection and ``doctor --fingerprint``, which never
import TensorRT-LLM."""

from __future__ import annotations

import ast

from . import targets

Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def ast_shape(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """The normalised parameter list of a ``def`` (see ``targets.shape_of``)."""
    args = node.args
    positional = args.posonlyargs + args.args
    first_default = len(positional) - len(args.defaults)
    parts = [a.arg + ("=" if i >= first_default else "") for i, a in enumerate(positional)]
    if args.vararg:
        parts.append(f"*{args.vararg.arg}")
    elif args.kwonlyargs:
        parts.append("*")
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


def imports_name(tree: ast.Module, module: str, name: str) -> bool:
    """Whether ``tree`` binds ``name`` by importing it from ``module`` (absolute or relative)."""
    last = module.rsplit(".", 1)[-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if (node.module == module or node.module.endswith(last)) and any(
                (a.asname or a.name) == name and a.name == name for a in node.names
            ):
                return True
    return False


def judge_source(tree: ast.Module, target: targets.Target) -> targets.TargetCheck:
    """``target`` in a parsed module: ``ok``, ``compatible``, ``mismatch`` or ``missing``."""
    if target.kind == "binding":
        if imports_name(tree, target.source, target.path):
            return targets.TargetCheck(target, "ok", f"imported from {target.source}", "any")
        return targets.TargetCheck(target, "missing", f"no import of {target.path}")
    node = find_definition(tree, target.path)
    if node is None:
        return targets.TargetCheck(target, "missing", "not defined")
    if target.kind == "class" or isinstance(node, ast.ClassDef):
        if target.kind == "class" and isinstance(node, ast.ClassDef):
            return targets.TargetCheck(target, "ok", "a class", "any")
        return targets.TargetCheck(
            target, "mismatch", "a class" if target.kind != "class" else "a def"
        )
    returns = targets.return_head(ast.unparse(node.returns)) if node.returns else None
    return targets.judge(
        target, ast_shape(node), is_async=isinstance(node, ast.AsyncFunctionDef), returns=returns
    )
