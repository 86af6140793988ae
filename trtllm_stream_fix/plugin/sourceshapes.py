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


def imports_name(tree: ast.Module, module: str, name: str, original: str = "") -> bool:
    """Whether ``tree`` binds ``name`` by importing it from ``module`` (absolute or relative),
    as ``original`` there (default: the same name)."""
    original = original or name
    last = module.rsplit(".", 1)[-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if (node.module == module or node.module.endswith(last)) and any(
                (a.asname or a.name) == name and a.name == original for a in node.names
            ):
                return True
    return False


def source_line(tree: ast.Module) -> str | None:
    """The module design a parsed ``responses_utils`` or ``openai_server`` belongs to."""
    utils = targets.RESPONSES_UTILS
    if find_definition(tree, "ResponsesStreamingProcessor") or imports_name(
        tree, utils, "ResponsesStreamingProcessor"
    ):
        return targets.CLASS_LINE
    if find_definition(tree, "process_streaming_events") or imports_name(
        tree, utils, "responses_api_process_streaming_events", "process_streaming_events"
    ):
        return targets.PRE_CLASS_LINE
    return None


def judge_source(tree: ast.Module, target: targets.Target) -> targets.TargetCheck:
    """``target`` in a parsed module: ``ok``, ``compatible``, ``mismatch``, ``missing`` or
    ``other-line`` (a target of the other module design)."""
    line = source_line(tree) if target.line else None
    if line is not None and line != target.line:
        title = targets.LINE_TITLES[line]
        return targets.TargetCheck(target, "other-line", f"this is the {title}")
    if target.kind == "binding":
        if imports_name(tree, target.source, target.path, target.source_attr or target.path):
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
