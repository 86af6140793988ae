# SPDX-License-Identifier: Apache-2.0
"""The plugin's run-time replacements as source edits to ``responses_utils.py`` and
``postprocess_handlers.py``.

Each edit is located by the name of the function, class or method it changes (through the
file's syntax tree), never by a line number, and keeps the rest of the file byte for byte.
The legacy file is formatted by yapf at 80 columns, so the inserted lines are short shims
into ``tensorrt_llm.serve.harmony_stream.processor``, which holds the logic:

=====================================================  ===========================================
plugin (run time)                                      source edit
=====================================================  ===========================================
``ResponsesStreamingProcessor`` rebound to a subclass  its Harmony path delegates to
                                                       ``HarmonyResponsesStream`` (``__init__``
                                                       keeps one; the four methods call it)
``_create_output_content_harmony`` wrapped             its body calls ``harmony_output_content``
``_parse_response_input`` wrapped                      decorated with ``with_phase_channel``
``openai_server.ResponsesStreamingProcessor``          nothing: it is the same class
``guard_responses_stream`` wrapped (and its binding)   treats every terminal event as final (the
                                                       form upstream adopted later); no edit where
                                                       it already does
``postprocess_handlers.chat_harmony_streaming_post_    (``postprocess_handlers.py``) its body
processor`` replaced (and its binding)                 calls ``chat_processor.stream_chunks``
``postprocess_handlers.chat_harmony_post_processor``   its adapter call becomes
replaced (and its binding)                             ``chat_processor.chat_completion``
=====================================================  ===========================================
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from ..plugin import registry
from .detect import find_definition
from .errors import EditError
from .layout import L0_ENTRY, PACKAGE

ALIAS = "harmony_processor"
IMPORT_LINE = f"from {PACKAGE} import processor as {ALIAS}\n"
PROCESSOR = "ResponsesStreamingProcessor"
STREAM_ATTR = "_harmony_stream"
CHAT_ALIAS = "harmony_chat"
CHAT_IMPORT_LINE = f"from {PACKAGE} import chat_processor as {CHAT_ALIAS}\n"
CHAT_STREAMING = "chat_harmony_streaming_post_processor"
CHAT_NON_STREAMING = "chat_harmony_post_processor"
_ADAPTER_CALLS = ("handle_streaming_response", "handle_non_streaming_response")


@dataclass(frozen=True)
class _Insert:
    line: int  # 0-based index of the line the text goes before
    text: str
    replace_to: int | None = None  # replace lines [line, replace_to) instead of inserting


def _lines_of(body_indent: int, block: str) -> str:
    pad = " " * body_indent
    return "".join(pad + line + "\n" if line else "\n" for line in block.splitlines())


def _body_start(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """0-based line index where a body's code starts (after the docstring, if any)."""
    first = node.body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        if len(node.body) == 1:
            return first.end_lineno  # type: ignore[return-value]
        return node.body[1].lineno - 1
    return first.lineno - 1


def _indent(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    return node.body[0].col_offset


def _param(node: ast.FunctionDef | ast.AsyncFunctionDef, index: int, name: str) -> str:
    params = [a.arg for a in node.args.posonlyargs + node.args.args]
    if len(params) <= index:
        raise EditError(f"{node.name} has no parameter {index} ({name})")
    return params[index]


def _has_param(node: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    args = node.args
    return name in [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]


def _method(tree: ast.Module, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef:
    node = find_definition(tree, f"{PROCESSOR}.{name}")
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise EditError(f"{PROCESSOR}.{name} is not defined in responses_utils.py")
    return node


def _function(tree: ast.Module, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef:
    node = find_definition(tree, name)
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise EditError(f"{name} is not defined in responses_utils.py")
    return node


def _import_insert(tree: ast.Module, line: str = IMPORT_LINE) -> _Insert:
    """Our import, at its isort position among the top-level ``tensorrt_llm`` imports."""
    ours = f"{PACKAGE}"
    first_party = [
        n
        for n in tree.body
        if isinstance(n, ast.ImportFrom)
        and n.level == 0
        and (n.module or "").split(".")[0] == "tensorrt_llm"
    ]
    if not first_party:
        imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        if not imports:
            raise EditError("responses_utils.py has no top-level imports")
        return _Insert(imports[-1].end_lineno, line)  # type: ignore[arg-type]
    for node in first_party:
        if (node.module or "") > ours:
            return _Insert(node.lineno - 1, line)
    return _Insert(first_party[-1].end_lineno, line)  # type: ignore[arg-type]


def _processor_inserts(tree: ast.Module) -> list[_Insert]:
    out = []
    init = _method(tree, "__init__")
    end = init.body[-1].end_lineno
    model = "ResponsesResponse" if "ResponsesResponse" in _imported_names(tree) else "None"
    out.append(
        _Insert(
            end,  # type: ignore[arg-type]
            _lines_of(
                _indent(init),
                f"self.{STREAM_ATTR} = {ALIAS}.HarmonyResponsesStream(\n"
                f"    _parse_output_tokens, {model})",
            ),
        )
    )
    initial = _method(tree, "get_initial_responses")
    out.append(
        _Insert(
            _body_start(initial),
            _lines_of(
                _indent(initial),
                f"if self.use_harmony:\n    return self.{STREAM_ATTR}.initial_responses(self)",
            ),
        )
    )
    single = _method(tree, "process_single_output")
    res = _param(single, 1, "res")
    out.append(
        _Insert(
            _body_start(single),
            _lines_of(
                _indent(single),
                f"if self.use_harmony:\n    return self.{STREAM_ATTR}.process_output(self, {res})",
            ),
        )
    )
    non_store = _method(tree, "get_final_response_non_store")
    out.append(
        _Insert(
            _body_start(non_store),
            _lines_of(
                _indent(non_store),
                "if self.use_harmony:\n"
                f"    frame, response = self.{STREAM_ATTR}.final_response(\n"
                f"        {_final_args(non_store)})\n"
                f"    self.{STREAM_ATTR}.store_soon(self, response, "
                f"{_param(non_store, 1, 'final_res')})\n"
                "    return frame",
            ),
        )
    )
    final = _method(tree, "get_final_response")
    if not isinstance(final, ast.AsyncFunctionDef):
        raise EditError(f"{PROCESSOR}.get_final_response is not a coroutine")
    final_res = _param(final, 1, "final_res")
    out.append(
        _Insert(
            _body_start(final),
            _lines_of(
                _indent(final),
                "if self.use_harmony:\n"
                f"    frame, response = self.{STREAM_ATTR}.final_response(\n"
                f"        {_final_args(final)})\n"
                f"    await self.{STREAM_ATTR}.store(self, response, {final_res})\n"
                "    return frame",
            ),
        )
    )
    return out


def _imported_names(tree: ast.Module) -> set[str]:
    return {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


def _final_args(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    final_res = _param(node, 1, "final_res")
    if _has_param(node, "num_prompt_tokens"):
        return f"self, {final_res}, num_prompt_tokens"
    return f"self, {final_res}"


def _output_content_insert(tree: ast.Module) -> _Insert:
    node = _function(tree, "_create_output_content_harmony")
    final_res = _param(node, 0, "final_res")
    start, end = _body_start(node), node.body[-1].end_lineno
    return _Insert(
        start,
        _lines_of(
            _indent(node),
            f"output = {final_res}.outputs[0]\n"
            f"return {ALIAS}.harmony_output_content(output.token_ids,\n"
            f"                                                output.finish_reason,\n"
            f"                                                _parse_output_tokens)",
        ),
        replace_to=end,
    )


def _parse_input_insert(tree: ast.Module) -> _Insert:
    node = _function(tree, "_parse_response_input")
    pad = " " * node.col_offset
    return _Insert(node.lineno - 1, f"{pad}@{ALIAS}.with_phase_channel\n")


_TERMINAL_MARKERS = """\
_INCOMPLETE_EVENT_MARKER = "event: response.incomplete"
_FAILED_EVENT_MARKER = "event: response.failed"
_TERMINAL_EVENT_MARKERS = (_COMPLETED_EVENT_MARKER, _INCOMPLETE_EVENT_MARKER,
                           _FAILED_EVENT_MARKER)
_TERMINAL_EVENT_MARKERS_BYTES = tuple(
    marker.encode("utf-8") for marker in _TERMINAL_EVENT_MARKERS)
"""
_TERMINAL_CHECK = """\
markers = (_TERMINAL_EVENT_MARKERS_BYTES if isinstance(
    chunk, bytes) else _TERMINAL_EVENT_MARKERS)
completed = any(marker in chunk for marker in markers)"""


def _module_assign(tree: ast.Module, name: str) -> ast.Assign | None:
    return next(
        (
            n
            for n in tree.body
            if isinstance(n, ast.Assign) and [ast.unparse(x) for x in n.targets] == [name]
        ),
        None,
    )


def _guard_inserts(tree: ast.Module) -> list[_Insert]:
    """``guard_responses_stream`` treating every terminal event as final (not only completed).

    The form upstream itself adopted later (its terminal-event line); lines that already
    have it, or whose guard differs, get no edit.
    """
    guard = find_definition(tree, "guard_responses_stream")
    marker = _module_assign(tree, "_COMPLETED_EVENT_MARKER_BYTES")
    if guard is None or marker is None or _module_assign(tree, "_TERMINAL_EVENT_MARKERS"):
        return []
    check = next(
        (
            n
            for n in ast.walk(guard)
            if isinstance(n, ast.Assign)
            and [ast.unparse(x) for x in n.targets] == ["completed"]
            and "_COMPLETED_EVENT_MARKER" in ast.unparse(n.value)
        ),
        None,
    )
    if check is None:
        return []
    return [
        _Insert(marker.end_lineno, _TERMINAL_MARKERS),  # type: ignore[arg-type]
        _Insert(
            check.lineno - 1,
            _lines_of(check.col_offset, _TERMINAL_CHECK),
            replace_to=check.end_lineno,
        ),
    ]


def edit_responses_utils(text: str) -> str:
    """``responses_utils.py`` with the Harmony Responses path delegating to the new package."""
    if IMPORT_LINE in text:
        raise EditError("responses_utils.py already imports the new package (edited twice?)")
    tree = ast.parse(text)
    inserts = [
        _import_insert(tree),
        *_processor_inserts(tree),
        _output_content_insert(tree),
        _parse_input_insert(tree),
        *_guard_inserts(tree),
    ]
    return _apply(text, inserts)


def _statement_calling(node: ast.AST, name: str) -> ast.stmt:
    """The top-level statement of a function body that calls ``name``."""
    for stmt in node.body:  # type: ignore[attr-defined]
        for sub in ast.walk(stmt):
            if isinstance(sub, ast.Call) and ast.unparse(sub.func) == name:
                return stmt
    raise EditError(f"{node.name} does not call {name}")  # type: ignore[attr-defined]


def _top_level_names(tree: ast.Module) -> set[str]:
    return {
        n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    } | _imported_names(tree)


def _chat_streaming_insert(tree: ast.Module, lines: list[str]) -> _Insert:
    """The streaming post-processor's body: the chat chunk machine, keeping the server's
    stream metadata and the disaggregated prompt-token count where the file has them."""
    node = _function(tree, CHAT_STREAMING)
    rsp, args = _param(node, 0, "rsp"), _param(node, 1, "args")
    names = _top_level_names(tree)
    block = ""
    tokens = ""
    if {"_ctx_usage_for_postproc", "get_usage_tokens_from_ctx"} <= names:
        block += (
            f"ctx_usage = _ctx_usage_for_postproc({args}, {rsp}.outputs)\n"
            "ctx_prompt_tokens, _ = get_usage_tokens_from_ctx(ctx_usage)\n"
        )
        tokens = ", ctx_prompt_tokens"
    if "_ensure_stream_metadata" in names:
        block += f'_ensure_stream_metadata({args}, {rsp}, "chatcmpl")\n'
    block += f"return {CHAT_ALIAS}.stream_chunks({rsp}, {args}{tokens})"
    start = _body_start(node)
    while start > node.lineno and lines[start - 1].lstrip().startswith("#"):
        start -= 1  # the old body's leading comment goes with it
    return _Insert(start, _lines_of(_indent(node), block), replace_to=node.body[-1].end_lineno)


def _chat_non_streaming_insert(tree: ast.Module) -> _Insert:
    """The adapter call of the non-streaming post-processor becomes the chat machine's."""
    node = _function(tree, CHAT_NON_STREAMING)
    rsp, args = _param(node, 0, "rsp"), _param(node, 1, "args")
    stmt = _statement_calling(node, "handle_non_streaming_response")
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
        raise EditError(f"{CHAT_NON_STREAMING} does not assign the adapter's response")
    names = _imported_names(tree)
    response_type = "ChatCompletionResponse" if "ChatCompletionResponse" in names else "None"
    convert = "to_disaggregated_params" if "to_disaggregated_params" in names else "None"
    target = ast.unparse(stmt.targets[0])
    call = f"{target} = {CHAT_ALIAS}.chat_completion("
    pad = " " * len(call)
    block = f"{call}{rsp}, {args}, {response_type},\n{pad}{convert})"
    return _Insert(stmt.lineno - 1, _lines_of(stmt.col_offset, block), replace_to=stmt.end_lineno)


def _adapter_import_removal(tree: ast.Module, text: str) -> list[_Insert]:
    """The import of the two adapter functions, once nothing else in the file calls them."""
    out = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and {a.name for a in node.names} <= set(_ADAPTER_CALLS):
            # each name is imported, and called once, by the post-processor edited here
            if all(len(re.findall(rf"\b{a.asname or a.name}\b", text)) == 2 for a in node.names):
                out.append(_Insert(node.lineno - 1, "", replace_to=node.end_lineno))
    return out


def edit_postprocess_handlers(text: str) -> str:
    """``postprocess_handlers.py`` with the Harmony chat post-processors on the chat machine."""
    if CHAT_IMPORT_LINE in text:
        raise EditError("postprocess_handlers.py already imports the new package (edited twice?)")
    tree = ast.parse(text)
    inserts = [
        *_adapter_import_removal(tree, text),
        _import_insert(tree, CHAT_IMPORT_LINE),
        _chat_non_streaming_insert(tree),
        _chat_streaming_insert(tree, text.splitlines(keepends=True)),
    ]
    return _apply(text, inserts)


def _apply(text: str, inserts: list[_Insert]) -> str:
    lines = text.splitlines(keepends=True)
    for insert in sorted(inserts, key=lambda i: i.line, reverse=True):
        stop = insert.line if insert.replace_to is None else insert.replace_to
        lines[insert.line : stop] = [insert.text] if insert.text else []
    return "".join(lines)


_TESTS_KEY = re.compile(r"^(\s*)tests:\s*$")
_ENTRY = re.compile(r"^(\s*)- (\S+)")


def edit_l0_cpu(text: str) -> str:
    """``l0_cpu.yml`` with the moved test folder in the first ``l0_cpu`` test list."""
    lines = text.splitlines(keepends=True)
    if any((m := _ENTRY.match(line)) and m.group(2) == L0_ENTRY for line in lines):
        return text
    start = next((i for i, line in enumerate(lines) if _TESTS_KEY.match(line)), None)
    if start is None:
        raise EditError("l0_cpu.yml has no 'tests:' list")
    entries = []
    for i in range(start + 1, len(lines)):
        match = _ENTRY.match(lines[i])
        if not match:
            break
        entries.append((i, match.group(1), match.group(2)))
    if not entries:
        raise EditError("l0_cpu.yml's first 'tests:' list is empty")
    indent = entries[0][1]
    at = next((i for i, _, name in entries if name > L0_ENTRY), entries[-1][0] + 1)
    lines.insert(at, f"{indent}- {L0_ENTRY}\n")
    return "".join(lines)


# -- openai_protocol.py: ResponsesResponse with every field of OpenAI's Response -------------

RESPONSE_MODEL = "ResponsesResponse"
REQUEST_MODEL = "ResponsesRequest"
#: What ``ResponsesResponse`` must declare (OpenAI's Response fields upstream's model lacks):
#: ``name: (annotation, import it needs or None, from_request value or None)``. ``None`` as
#: the value: the request's field of that name where ``ResponsesRequest`` declares one, else
#: the default (null). Each value's lines fit upstream's yapf (80 columns at from_request's
#: 12-column argument indent) as yapf would write them: the edited lines pass its check.
PROTOCOL_FIELDS: dict[str, tuple[str, tuple[str, str] | None, str | None]] = {
    "completed_at": ("Optional[int]", None, 'int(time.time()) if status == "completed" else None'),
    "error": (
        "Optional[ResponseError]",
        ("openai.types.responses.response_error", "ResponseError"),
        '(ResponseError(code="server_error",\n'
        '               message="the generation failed")\n'
        ' if status == "failed" else None)',
    ),
    "incomplete_details": (
        "Optional[IncompleteDetails]",
        ("openai.types.responses.response", "IncompleteDetails"),
        '(IncompleteDetails(reason="max_output_tokens")\n if status == "incomplete" else None)',
    ),
    "frequency_penalty": ("Optional[float]", None, "sampling_params.frequency_penalty or 0.0"),
    "presence_penalty": ("Optional[float]", None, "sampling_params.presence_penalty or 0.0"),
    "prompt_cache_key": ("Optional[str]", None, None),
    "safety_identifier": ("Optional[str]", None, None),
    "store": ("Optional[bool]", None, None),
}
ALIAS_SERIALIZER = "_dump_by_alias"
_SERIALIZER = f"""\
@field_serializer("output", "tools")
def {ALIAS_SERIALIZER}(self, items, info):
    # OpenAI's key names ("async", not the SDK's "async_"), however the
    # response is dumped: GET /v1/responses/{{id}} dumps without by_alias.
    return [
        item.model_dump(
            mode=info.mode, by_alias=True, exclude_none=info.exclude_none)
        if isinstance(item, BaseModel) else item for item in items
    ]"""
#: The plugin's patch target the openai_protocol edit carries.
PROTOCOL_TARGET = registry.patch("response-model").target


def _class(tree: ast.Module, name: str) -> ast.ClassDef:
    node = find_definition(tree, name)
    if not isinstance(node, ast.ClassDef):
        raise EditError(f"{name} is not defined in openai_protocol.py")
    return node


def _declared(node: ast.ClassDef) -> list[ast.AnnAssign]:
    return [s for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]


def _field(statement: ast.AnnAssign) -> str:
    """The name a :func:`_declared` statement declares."""
    target = statement.target
    if not isinstance(target, ast.Name):  # pragma: no cover - _declared keeps names only
        raise EditError(f"line {statement.lineno}: not a field declaration")
    return target.id


def _end_line(node: ast.stmt | ast.expr) -> int:
    """The last line of ``node`` (1-based; parsed nodes always have one)."""
    if node.end_lineno is None:  # pragma: no cover - only hand-built nodes lack it
        raise EditError(f"line {node.lineno}: no end position")
    return node.end_lineno


def _from_request_call(node: ast.ClassDef) -> ast.Call:
    method = next(
        (s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "from_request"),
        None,
    )
    if method is None:
        raise EditError(f"{RESPONSE_MODEL}.from_request is not defined in openai_protocol.py")
    ret = method.body[-1]
    if not (
        isinstance(ret, ast.Return)
        and isinstance(ret.value, ast.Call)
        and ast.unparse(ret.value.func) == "cls"
        and ret.value.keywords
        and "status" in [a.arg for a in method.args.args]
    ):
        raise EditError(f"{RESPONSE_MODEL}.from_request does not end in 'return cls(...)'")
    return ret.value


def _protocol_import_inserts(tree: ast.Module, names: set[tuple[str, str]]) -> list[_Insert]:
    """Each needed name added to its module's one-line import, or a new line after it."""
    out = []
    by_module: dict[str, set[str]] = {}
    for module, name in names:
        by_module.setdefault(module, set()).add(name)
    imports = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.level == 0]
    have = {(n.module, a.asname or a.name) for n in imports for a in n.names}
    for module, wanted in sorted(by_module.items()):
        wanted = {w for w in wanted if (module, w) not in have}
        if not wanted:
            continue
        same = [n for n in imports if n.module == module]
        if same:
            node = same[0]
            if any(a.asname for a in node.names):
                raise EditError(f"openai_protocol.py imports from {module} under other names")
            merged = sorted({a.name for a in node.names} | wanted, key=_isort_key)
            line = _grid_import(module, merged)
            out.append(_Insert(node.lineno - 1, line, replace_to=node.end_lineno))
            continue
        before = [n for n in imports if (n.module or "").startswith("openai.")]
        if not before:
            raise EditError("openai_protocol.py imports nothing from openai")
        after = max((n for n in before if (n.module or "") < module), key=lambda n: n.lineno)
        line = f"from {module} import {', '.join(sorted(wanted))}\n"
        out.append(_Insert(after.end_lineno, line))  # type: ignore[arg-type]
    return out


def _isort_key(name: str) -> tuple[int, str]:
    """isort's default order inside one import: CONSTANTS, Classes, functions."""
    kind = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    return kind, name


def _grid_import(module: str, names: list[str], width: int = 80) -> str:
    """``from module import names`` as isort writes it (one line, else its grid wrap)."""
    line = f"from {module} import {', '.join(names)}\n"
    if len(line) <= width + 1:
        return line
    head = f"from {module} import ("
    pad, lines, current = " " * len(head), [], head
    for i, name in enumerate(names):
        piece = name + (")" if i == len(names) - 1 else ",")
        if current not in (head, pad) and len(current) + 1 + len(piece) > width:
            lines.append(current)
            current = pad + piece
        else:
            current += ("" if current in (head, pad) else " ") + piece
    lines.append(current)
    return "\n".join(lines) + "\n"


def protocol_fields_missing(text: str) -> list[str]:
    """OpenAI's Response fields ``ResponsesResponse`` lacks in ``text`` (openai_protocol.py)."""
    from ..core.response import OPENAI_RESPONSE_FIELDS

    declared = {_field(s) for s in _declared(_class(ast.parse(text), RESPONSE_MODEL))}
    return [f for f in OPENAI_RESPONSE_FIELDS if f not in declared]


def edit_openai_protocol(text: str) -> str:
    """``openai_protocol.py`` whose ``ResponsesResponse`` carries every field of OpenAI's
    Response (the plugin's ``CompleteResponsesResponse``) and whose ``from_request`` sets them.

    The fields are declared where the model comments them out (``# error: ...``) or after its
    last OpenAI field; ``from_request`` sets ``completed_at`` (completed responses),
    ``incomplete_details`` (``max_output_tokens``: upstream's ``incomplete`` is a length cut),
    ``error`` (failed ones) and echoes the request's ``store`` / ``prompt_cache_key`` /
    ``safety_identifier`` where ``ResponsesRequest`` has them.
    """
    tree = ast.parse(text)
    model = _class(tree, RESPONSE_MODEL)
    missing = protocol_fields_missing(text)
    if not missing:
        raise EditError(f"{RESPONSE_MODEL} already declares every OpenAI field (edited twice?)")
    unknown = [f for f in missing if f not in PROTOCOL_FIELDS]
    if unknown:
        raise EditError(f"{RESPONSE_MODEL} lacks fields this edit does not add: {unknown}")
    if not any(
        isinstance(n, ast.Import) and any(a.name == "time" for a in n.names) for n in tree.body
    ):
        raise EditError("openai_protocol.py does not import time")
    request_fields = {_field(s) for s in _declared(_class(tree, REQUEST_MODEL))}
    lines = text.splitlines(keepends=True)
    inserts: list[_Insert] = []
    declared = _declared(model)
    pad = " " * declared[0].col_offset
    rest = []
    for name in missing:
        annotation = PROTOCOL_FIELDS[name][0]
        commented = next(
            (
                i
                for i in range(model.lineno, model.end_lineno)  # type: ignore[arg-type]
                if re.match(rf"\s*#\s*{name}\s*:", lines[i])
            ),
            None,
        )
        line = f"{pad}{name}: {annotation} = None\n"
        if commented is None:
            rest.append(line)
        else:
            inserts.append(_Insert(commented, line, replace_to=commented + 1))
    if rest:
        from ..core.response import OPENAI_RESPONSE_FIELDS

        last = [s for s in declared if _field(s) in OPENAI_RESPONSE_FIELDS][-1]
        inserts.append(_Insert(last.end_lineno, "".join(rest)))  # type: ignore[arg-type]
    call = _from_request_call(model)
    kw_pad = call.keywords[-1].value.col_offset - len(call.keywords[-1].arg or "") - 1
    given = {k.arg for k in call.keywords}
    block = ""
    for name in missing:
        value = PROTOCOL_FIELDS[name][2]
        if value is None and name in request_fields:
            value = f"request.{name}"
        if value is None or name in given:
            continue
        first, *more = value.splitlines()
        block += f"{name}={first}" + "".join(f"\n{' ' * len(name)} {m}" for m in more) + ",\n"
    last_kw = call.keywords[-1].value
    end_line = _end_line(last_kw)
    if not lines[end_line - 1].rstrip().endswith(","):
        raise EditError(f"{RESPONSE_MODEL}.from_request's last argument has no trailing comma")
    inserts.append(_Insert(end_line, _lines_of(kw_pad, block.rstrip("\n"))))
    needed = {PROTOCOL_FIELDS[n][1] for n in missing if PROTOCOL_FIELDS[n][1]}
    if not any(isinstance(s, ast.FunctionDef) and s.name == ALIAS_SERIALIZER for s in model.body):
        inserts.append(
            _Insert(model.end_lineno, "\n" + _lines_of(len(pad), _SERIALIZER))  # type: ignore[arg-type]
        )
        needed |= {("pydantic", "BaseModel"), ("pydantic", "field_serializer")}
    inserts += _protocol_import_inserts(tree, needed)  # type: ignore[arg-type]
    return _apply(text, inserts)
