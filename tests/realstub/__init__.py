# SPDX-License-Identifier: Apache-2.0
"""Import the real TensorRT-LLM Responses modules on CPU, with stubs for everything else.

``activate(source_dir)`` makes ``tensorrt_llm`` a package whose submodules come from this
folder (our own minimal stubs, see each module's docstring), except the four modules on the
Harmony Responses streaming path, ``REAL_MODULES``, which are loaded from
``<source_dir>/tensorrt_llm/serve/``. ``torch``, ``xgrammar`` and ``transformers`` are stubbed
only when they are not installed. Meant for a fresh interpreter (the real-module test runs it
in a subprocess), before anything imports ``tensorrt_llm``.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REAL_MODULES = (
    "tensorrt_llm.serve.openai_protocol",
    "tensorrt_llm.serve.harmony_adapter",
    "tensorrt_llm.serve.responses_utils",
    "tensorrt_llm.serve.postprocess_handlers",
)
THIRD_PARTY = ("torch", "xgrammar", "transformers")


class _RealFinder(importlib.abc.MetaPathFinder):
    """Finds ``REAL_MODULES`` in the TensorRT-LLM source tree, and nothing else."""

    def __init__(self, source_dir: Path) -> None:
        self.source_dir = source_dir

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in REAL_MODULES:
            return None
        location = self.source_dir.joinpath(*fullname.split(".")).with_suffix(".py")
        return importlib.util.spec_from_file_location(fullname, location)


def activate(source_dir: str | Path) -> list[str]:
    """Set up the import system; returns the third-party packages that were stubbed."""
    if "tensorrt_llm" in sys.modules:
        raise RuntimeError("tensorrt_llm is already imported in this interpreter")
    sys.meta_path.insert(0, _RealFinder(Path(source_dir)))
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))  # our tensorrt_llm stub package
    stubbed = [name for name in THIRD_PARTY if importlib.util.find_spec(name) is None]
    if stubbed:
        sys.path.append(str(HERE / "thirdparty"))  # after site-packages: real ones win
    return stubbed
