# SPDX-License-Identifier: Apache-2.0
"""One error hierarchy: every error class derives from ``StreamFixError`` and is exported."""

from __future__ import annotations

import ast
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


def _exception_classes() -> set[str]:
    """Public classes of the package whose bases name an error or exception class."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        if {"realstub", "templates"} & set(path.parts):
            continue  # stand-ins for upstream code, and files written into upstream's tree
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                bases = {
                    b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases
                }
                if any(
                    b.endswith(("Error", "Exception", "Disconnect", "Transition")) for b in bases
                ):
                    found.add(node.name)
    return found


def test_every_error_class_is_exported_and_a_stream_fix_error():
    exported = {*errors.__all__, *errors.ELSEWHERE}
    classes = _exception_classes()
    assert len(classes) >= 20
    assert classes <= exported
    for name in exported:
        cls = getattr(trtllm_stream_fix, name)
        assert issubclass(cls, errors.StreamFixError), name
        assert issubclass(cls, BUILTIN_BASES.get(name, Exception)), name


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
