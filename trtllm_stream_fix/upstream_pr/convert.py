# SPDX-License-Identifier: Apache-2.0
"""Our modules rewritten into TensorRT-LLM's namespace and file conventions.

Imports are located with ``ast`` and rewritten in place (the rest of the text is kept as
written): the core and the upstream-only modules become ``tensorrt_llm.serve.harmony_stream``
(absolute imports, upstream's style); test support modules are imported relatively inside the
moved test folder. Any other reference to this package is an error, so nothing of the plugin
can leak into the change set. The license line becomes NVIDIA's header.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from .errors import ConversionError
from .layout import HEADER, PACKAGE, REPO, TEST_SUPPORT, Placement

OUR_PACKAGE = "trtllm_stream_fix"
_UPSTREAM_MODULES = {
    "trtllm_stream_fix.core": PACKAGE,
    "trtllm_stream_fix.encoding": f"{PACKAGE}.encoding",
    "trtllm_stream_fix.defaults": f"{PACKAGE}.defaults",
    "trtllm_stream_fix.upstream_pr.templates.encoding": f"{PACKAGE}.encoding",
    "trtllm_stream_fix.serving.processor": f"{PACKAGE}.processor",
    "trtllm_stream_fix.serving.chat_processor": f"{PACKAGE}.chat_processor",
    "trtllm_stream_fix.serving.disaggregated": f"{PACKAGE}.disaggregated",
    "trtllm_stream_fix.serving.upstream": f"{PACKAGE}.upstream",
    "trtllm_stream_fix.serving.storing": f"{PACKAGE}.storing",
    "trtllm_stream_fix.serving.body": f"{PACKAGE}.body",
    "trtllm_stream_fix.serving.usage": f"{PACKAGE}.usage",
    "trtllm_stream_fix.serving.input_channels": f"{PACKAGE}.input_channels",
}
_SUPPORT_MODULES = {
    "_streams": "streams",
    "trtllm_stream_fix.checker": "checker",
    "trtllm_stream_fix.checker.responses": "checker",
    "trtllm_stream_fix.jsonlimits": "jsonlimits",
    "trtllm_stream_fix.checker.schema_compat": "schema_compat",
    "trtllm_stream_fix.checker.findings": "findings",
    "trtllm_stream_fix.checker.harmony_markup": "harmony_markup",
    "trtllm_stream_fix.sim.model": "synthetic",
    "trtllm_stream_fix.differential.sdk_oracle": "sdk_oracle",
    "trtllm_stream_fix.testing.driver_messages": "driver_messages",
    "trtllm_stream_fix.differential.visible": "visible",
    "trtllm_stream_fix.testing.streams": "streams",
    "trtllm_stream_fix.differential.engine_results": "engine_results",
    "trtllm_stream_fix.differential.chat": "chat_differential",
    "trtllm_stream_fix.differential.chat_oracle": "chat_oracle",
    "trtllm_stream_fix.differential.chat_requests": "chat_requests",
    "trtllm_stream_fix.checker.chat": "chat_checker",
    "trtllm_stream_fix.differential.splits": "splits",
    "trtllm_stream_fix.differential.report": "report",
    "trtllm_stream_fix.differential.hostile": "hostile",
    "trtllm_stream_fix.differential.token_soup": "token_soup",
}
_LICENSE_LINE = "# SPDX-License-Identifier: Apache-2.0\n"
# Our switches' environment variables take upstream's TRTLLM_ prefix.
ENV_PREFIX, UPSTREAM_ENV_PREFIX = "TRTLLM_STREAM_FIX_", "TRTLLM_HARMONY_STREAM_"


def module_name(path: Path) -> str:
    """Our dotted module name of ``path`` (under ``tests/``, as pytest imports it: from the
    nearest folder that is not a package)."""
    path = path.resolve()
    if path.relative_to(REPO).parts[0] != "tests":
        return ".".join(path.relative_to(REPO).with_suffix("").parts)
    root = path.parent
    while (root / "__init__.py").is_file():
        root = root.parent
    return ".".join(path.relative_to(root).with_suffix("").parts)


def _absolute(node: ast.ImportFrom, own: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = own.split(".") if is_package else own.split(".")[:-1]
    if node.level > 1:
        base = base[: -(node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def upstream_module(name: str) -> str | None:
    """Where our module ``name`` lives upstream (None: not part of the new package)."""
    if name in _UPSTREAM_MODULES:
        return _UPSTREAM_MODULES[name]
    if name.startswith("trtllm_stream_fix.core."):
        return f"{PACKAGE}.{name.rsplit('.', 1)[1]}"
    return None


def _import_target(name: str, in_tests: bool, in_support: bool) -> str | None:
    target = upstream_module(name)
    if target is not None:
        return target
    support = _SUPPORT_MODULES.get(name)
    if support is None or not in_tests:  # the package never imports test support
        return None
    return f".{support}" if in_support else f".{TEST_SUPPORT}.{support}"


_FROM = re.compile(r"from\s+(\.*[\w.]*)\s+import\b")


def rewrite_imports(
    text: str, own: str, *, is_package: bool, in_tests: bool, in_support: bool
) -> str:
    """``text`` with every import of our modules pointing at its upstream place."""
    tree = ast.parse(text)
    # Line starts as ast counts lines (str.splitlines also splits on other separators).
    offsets = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]
    edits: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            ours = [a.name for a in node.names if a.name.split(".")[0] in (OUR_PACKAGE, "_streams")]
            if ours:
                raise ConversionError(f"{own}:{node.lineno}: use 'from ... import' for {ours}")
            continue
        if not isinstance(node, ast.ImportFrom):
            continue
        source = _absolute(node, own, is_package)
        if source.split(".")[0] not in (OUR_PACKAGE, "_streams"):
            continue
        target = _import_target(source, in_tests, in_support)
        if target is None:
            raise ConversionError(
                f"{own}:{node.lineno}: imports {source}, which has no place upstream"
            )
        start = offsets[node.lineno - 1] + node.col_offset
        match = _FROM.match(text, start)
        if match is None:  # pragma: no cover - ast and the regex agree on valid syntax
            raise ConversionError(f"{own}:{node.lineno}: cannot locate the import")
        edits.append((match.start(1), match.end(1), target))
    for begin, end, target in sorted(edits, reverse=True):
        text = text[:begin] + target + text[end:]
    return text


def replace_docstring(text: str, docstring: str) -> str:
    """``text`` with its module docstring replaced by ``docstring``."""
    tree = ast.parse(text)
    first = tree.body[0] if tree.body else None
    if not (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        raise ConversionError("no module docstring to replace")
    lines = text.splitlines(keepends=True)
    before = "".join(lines[: first.lineno - 1])
    after = "".join(lines[first.end_lineno :])
    return f'{before}"""{docstring.rstrip()}\n"""\n{after}'


def _docstrings(tree: ast.Module) -> list[ast.Constant]:
    owners = [tree] + [
        n
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    ]
    found = []
    for owner in owners:
        first = owner.body[0] if owner.body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            if isinstance(first.value.value, str):
                found.append(first.value)
    return found


def raw_docstrings(text: str) -> str:
    """Docstrings whose only escapes are doubled backslashes, written as raw strings.

    pydocstyle's D301 asks for it; the value is unchanged (a doubled backslash becomes one).
    """
    data = text.encode("utf-8")  # ast offsets count UTF-8 bytes
    lines = data.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    edits = []
    for node in _docstrings(ast.parse(text)):
        start = offsets[node.lineno - 1] + node.col_offset
        if node.end_lineno is None or node.end_col_offset is None:  # pragma: no cover
            continue  # parsed nodes always have their end
        end = offsets[node.end_lineno - 1] + node.end_col_offset
        source = data[start:end]
        if not source.startswith((b'"""', b"'''")) or b"\\" not in source:
            continue
        if b"\\" in source.replace(b"\\\\", b""):
            continue  # other escapes: leave it
        edits.append((start, end, b"r" + source.replace(b"\\\\", b"\\")))
    for start, end, new in sorted(edits, reverse=True):
        data = data[:start] + new + data[end:]
    return data.decode("utf-8")


def drop_baseline_arm(text: str) -> str:
    """A test module's ``IMPLS`` list without its ``pytest.param`` entries.

    Our regression tests also run an upstream-equivalent baseline (as a strict ``xfail``) to
    show they can fail; upstream has the real old code for that, so only ``"ours"`` moves.
    """
    tree = ast.parse(text)
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and [ast.unparse(t) for t in node.targets] == ["IMPLS"]
            and isinstance(node.value, ast.List)
        ):
            kept = [
                e.value
                for e in node.value.elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str)
            ]
            lines = text.splitlines(keepends=True)
            line = "IMPLS = [" + ", ".join(f'"{value}"' for value in kept) + "]\n"
            lines[node.lineno - 1 : node.end_lineno] = [line]
            return "".join(lines)
    return text


def drop_slow_tests(text: str) -> str:
    """A test module without its ``@pytest.mark.slow`` tests (our long tier, not upstream's CPU
    stage)."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    for node in reversed(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
            ast.unparse(d) == "pytest.mark.slow" for d in node.decorator_list
        ):
            start = min(d.lineno for d in node.decorator_list) - 1
            end = node.end_lineno or node.lineno
            while end < len(lines) and not lines[end].strip():
                end += 1  # the blank lines after it
            lines[start:end] = []
    return "".join(lines)


def with_header(text: str, year: int) -> str:
    """``text`` with our license line replaced by NVIDIA's header."""
    if text.startswith(_LICENSE_LINE):
        text = text[len(_LICENSE_LINE) :]
    return HEADER.format(year=year) + text


_REPO_REFERENCE = re.compile(
    r"[ \t]*\(see(?:\s|#:?)*``(?:docs|trtllm_stream_fix|tests|benchmarks)/[^)]*?\)", re.S
)


def strip_repo_references(text: str) -> str:
    """``text`` without comments' "(see ``docs/…``)" pointers to files of this repository."""

    def drop(match: re.Match[str]) -> str:
        lines = match.group(0).splitlines()
        comment = all(line.lstrip().startswith("#") for line in lines[1:])
        line_start = text.rfind("\n", 0, match.start()) + 1
        return "" if comment and text[line_start:].lstrip().startswith("#") else match.group(0)

    return _REPO_REFERENCE.sub(drop, text)


def leftovers(text: str) -> list[str]:
    """Lines that still name this package (must be none)."""
    return [
        line.strip()
        for line in text.splitlines()
        if OUR_PACKAGE in line or "trtllm-stream-fix" in line or ENV_PREFIX in line
    ]


def convert(placement: Placement, year: int) -> str:
    """The upstream text of one placed file."""
    text = placement.source.read_text(encoding="utf-8")
    own = module_name(placement.source)
    in_support = f"/{TEST_SUPPORT}/" in placement.dest
    text = rewrite_imports(
        text,
        own,
        is_package=placement.source.name == "__init__.py",
        in_tests=placement.dest.startswith("tests/"),
        in_support=in_support,
    )
    text = text.replace("trtllm_stream_fix.core", PACKAGE)
    text = text.replace(ENV_PREFIX, UPSTREAM_ENV_PREFIX)
    text = strip_repo_references(text)
    text = raw_docstrings(text)
    if placement.dest.startswith("tests/"):
        text = drop_slow_tests(drop_baseline_arm(text))
    if placement.docstring:
        text = replace_docstring(text, placement.docstring)
    text = with_header(text, year)
    left = leftovers(text)
    if left:
        raise ConversionError(f"{placement.dest} still names this package: {left[0]!r}")
    return text
