# SPDX-License-Identifier: Apache-2.0
"""One error hierarchy: every error class derives from ``StreamFixError`` and is exported."""

from __future__ import annotations

import ast
import builtins
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import trtllm_stream_fix
from trtllm_stream_fix import errors

pytestmark = pytest.mark.cpu_only

PACKAGE = Path(trtllm_stream_fix.__file__).parent
#: Builtin bases the classes had before the hierarchy: ``except`` clauses rely on them.
BUILTIN_BASES = {
    "ChatGenerationError": RuntimeError,
    "ConversionError": ValueError,
    "EditError": ValueError,
    "EncodingMismatchError": ValueError,
    "FingerprintError": ValueError,
    "HarmonyStreamError": RuntimeError,
    "HarnessUnavailableError": RuntimeError,
    "IncompleteStream": RuntimeError,
    "InvalidTransition": ValueError,
    "JSONLimitError": ValueError,
    "LifecycleError": RuntimeError,
    "SSEDecodeError": ValueError,
    "SSELimitError": ValueError,
    "SSEProtocolError": ValueError,
    "SourceTreeError": ValueError,
    "StreamFixInstallError": RuntimeError,
    "TritonProtocolError": ValueError,
    "TruncatedHeaderError": RuntimeError,
    "TurnRequestError": ValueError,
    "UnknownVersionError": ValueError,
    "VocabPackageMissingError": RuntimeError,
    "VocabUnavailableError": RuntimeError,
}


#: Errors kept in their own module: the module is copied whole into TensorRT-LLM's tests.
IN_THEIR_MODULE = {"JSONLimitError": "jsonlimits", "SDKRejected": "differential.chat_oracle"}


def _exception_classes() -> dict[str, str]:
    """Every public exception class the package defines (by ast): name -> defining module.

    A class is an exception when a base is a builtin exception or, transitively, one of the
    package's exception classes.
    """
    classes: list[tuple[str, str, set[str]]] = []
    for path in PACKAGE.rglob("*.py"):
        if {"realstub", "templates"} & set(path.parts):
            continue  # stand-ins for upstream code, and files written into upstream's tree
        module = ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                bases = {
                    b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases
                }
                classes.append((node.name, module, bases))

    def builtin_exception(name: str) -> bool:
        value = getattr(builtins, name, None)
        return isinstance(value, type) and issubclass(value, BaseException)

    found: dict[str, str] = {}
    grew = True
    while grew:
        grew = False
        for name, module, bases in classes:
            if found.get(name) == module or not any(
                builtin_exception(b) or b in found for b in bases
            ):
                continue
            assert name not in found, f"two exception classes named {name}"
            found[name] = module
            grew = True
    return found


def test_every_error_class_lives_in_its_packages_errors_module():
    classes = _exception_classes()
    assert len(classes) >= 30
    misplaced = {
        name: module
        for name, module in classes.items()
        if module.rsplit(".", 1)[-1] != "errors" and IN_THEIR_MODULE.get(name) != module
    }
    assert not misplaced, f"error classes outside an errors.py: {misplaced}"


def test_every_error_class_is_re_exported_and_a_stream_fix_error():
    for name, module in _exception_classes().items():
        cls = getattr(importlib.import_module(f"trtllm_stream_fix.{module}"), name)
        package = module.rpartition(".")[0] if name not in IN_THEIR_MODULE else module
        root = importlib.import_module(f"trtllm_stream_fix.{package}".rstrip("."))
        assert name in root.__all__ and getattr(root, name) is cls, (name, root.__name__)
        assert issubclass(cls, errors.StreamFixError), name
        assert issubclass(cls, BUILTIN_BASES.get(name, Exception)), name


def test_each_errors_module_draws_its_hierarchy():
    """Each package's ``errors.py`` names every class it defines in its docstring."""
    by_module: dict[str, set[str]] = {}
    for name, module in _exception_classes().items():
        by_module.setdefault(module, set()).add(name)
    for module, names in by_module.items():
        if module.rsplit(".", 1)[-1] != "errors" or module.startswith("core."):
            continue
        doc = importlib.import_module(f"trtllm_stream_fix.{module}").__doc__ or ""
        assert "Hierarchy::" in doc, module
        assert {n for n in names if n not in doc} == set(), module


def test_old_import_paths_still_work():
    from trtllm_stream_fix.store.references import UnknownItemReference
    from trtllm_stream_fix.upstream_pr.detect import UnknownVersionError

    assert UnknownItemReference is trtllm_stream_fix.store.UnknownItemReference
    assert UnknownVersionError is trtllm_stream_fix.upstream_pr.UnknownVersionError


def test_the_core_errors_are_top_level_names():
    from trtllm_stream_fix.core.chat_machine import ChatGenerationError
    from trtllm_stream_fix.core.harmony_driver import HarmonyStreamError
    from trtllm_stream_fix.core.machine import LifecycleError

    assert trtllm_stream_fix.ChatGenerationError is ChatGenerationError
    assert trtllm_stream_fix.HarmonyStreamError is HarmonyStreamError
    assert trtllm_stream_fix.LifecycleError is LifecycleError
    with pytest.raises(AttributeError):
        trtllm_stream_fix.NoSuchError  # noqa: B018


def test_the_errors_module_loads_neither_openai_nor_harmony():
    code = f"""
import sys, types
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("openai", "openai_harmony", "pydantic"):
            raise ImportError("blocked: " + name)
sys.meta_path.insert(0, Blocker())
package = types.ModuleType("trtllm_stream_fix")  # the package without its __init__
package.__path__ = [{str(PACKAGE)!r}]
sys.modules["trtllm_stream_fix"] = package
from trtllm_stream_fix import errors
assert issubclass(errors.LifecycleError, errors.StreamFixError)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
