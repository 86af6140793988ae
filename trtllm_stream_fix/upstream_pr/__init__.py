# SPDX-License-Identifier: Apache-2.0
"""``trtllm-stream-fix upstream-pr``: the fix as a reviewer-ready TensorRT-LLM change.

From a TensorRT-LLM tree (a checkout, or a folder with at least ``tensorrt_llm/serve/``):
detect its version line, write the change set (``upstream.patch``, the files in full, the PR
description, ``summary.json``) to ``--out``; with ``--check`` also apply it to a copy and run
the moved tests, the real-module harness and upstream's linters there. See docs/porting.md.
Its errors are in :mod:`.errors` (hierarchy there), re-exported here.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from .errors import (
    ConversionError,
    EditError,
    HarnessUnavailableError,
    SourceTreeError,
    UnknownVersionError,
)

__all__ = [
    "ConversionError",
    "EditError",
    "HarnessUnavailableError",
    "SourceTreeError",
    "UnknownVersionError",
    "main",
]

PROG = "trtllm-stream-fix upstream-pr"


def _parser() -> argparse.ArgumentParser:
    from ..helptext import plain

    p = argparse.ArgumentParser(prog=PROG, description=plain(__doc__.split("\n\n")[1]))
    p.add_argument("--source", required=True, type=Path, help="TensorRT-LLM tree")
    p.add_argument("--out", required=True, type=Path, help="folder for the change set")
    p.add_argument("--check", action="store_true", help="apply to a copy and check it on CPU")
    p.add_argument("--outputs", type=int, default=100, help="synthetic outputs for the harness")
    p.add_argument("--ticket", default="None", help="title tag: None, #123, PROJ-123, nvbugs URL")
    p.add_argument("--lint-env", type=Path, help="tool environment of the pinned linters")
    p.add_argument("--year", type=int, help="copyright year (default: this year)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point; 0 on success (with ``--check``: only when every check passed)."""
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    from . import bench, check, describe, layout, lint
    from .changeset import build
    from .harness import run_harness

    year = args.year or datetime.datetime.now(datetime.timezone.utc).year
    try:
        describe.title(args.ticket)
        tools = lint.find_tools(args.lint_env, install=args.check)
        change = build(args.source, year=year, tools=tools)
        with tempfile.TemporaryDirectory(prefix="upstream-pr-copy-") as tmp:
            copy = check.copy_tree(change.root, Path(tmp))
            results = [check.apply(change, copy)]
            if not results[0].ok:
                raise EditError(f"the generated patch does not apply: {results[0].detail}")
            before = run_harness(change.root, args.outputs)
            after = run_harness(copy, args.outputs)
            for label, run in (("unpatched", before), ("patched", after)):
                if "error" in run:
                    change.notes.append(f"harness on the {label} tree: {run['error']}")
            measured = bench.measure(change.root, copy) if args.check else None
            text = describe.description(
                change,
                before.get("stats"),
                after.get("stats"),
                chat=(before.get("chat"), after.get("chat")),
                bench=measured,
                bodies=(before.get("bodies"), after.get("bodies")),
            )
            text = text.replace(f"# {describe.title()}", f"# {describe.title(args.ticket)}", 1)
            written = change.write(args.out, text)
            if args.check:
                results.append(check.run_tests(copy))
                results.append(check.harness_result(after))
                if layout.POSTPROCESS_HANDLERS in change.modified:
                    results.append(check.chat_harness_result(after))
                if layout.OPENAI_PROTOCOL in change.modified:
                    results.append(check.bodies_result(after))
                results.append(check.bench_result(measured))
                results += check.run_lint(change, copy, tools)
    except (
        SourceTreeError,
        UnknownVersionError,
        ConversionError,
        EditError,
        HarnessUnavailableError,
        FileNotFoundError,
        RuntimeError,
        ValueError,
    ) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    print(f"version line: {change.detection.line}; formatted with {change.formatter}")
    stats = change.stats()
    print(
        f"wrote {args.out}: {len(change.modified)} edited, {len(change.new_files)} new files, "
        f"+{sum(a for a, _ in stats.values())} -{sum(r for _, r in stats.values())} lines "
        f"({len(written)} files written)"
    )
    for note in change.notes:
        print(f"note: {note}")
    if not args.check:
        return 0
    for result in results:
        first = result.detail.splitlines()[0] if result.detail else ""
        print(f"{'PASS' if result.ok else 'FAIL'}  {result.name}: {first}")
        if not result.ok and result.detail:
            print("      " + result.detail.replace("\n", "\n      ")[:4000])
    return 0 if all(r.ok for r in results) else 1
