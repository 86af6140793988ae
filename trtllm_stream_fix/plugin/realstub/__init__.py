# SPDX-License-Identifier: Apache-2.0
"""Import the real TensorRT-LLM Responses modules on CPU, with stubs for everything else.

``activate(source_dir)`` makes ``tensorrt_llm`` a package whose submodules come from this
folder (our own minimal stubs, see each module's docstring), except the modules on the
Harmony Responses streaming path, ``REAL_MODULES``, which are loaded from
``<source_dir>/tensorrt_llm/serve/``, and any other ``tensorrt_llm/serve/<name>.py`` the tree
has (``openai_server``, ``chat_tokenization``, ...: real code wherever the tree provides it;
``realstub.server`` serves upstream's own app this way), and ``REAL_PACKAGES`` (the package
``upstream-pr`` adds) when the tree has it. ``torch``, ``xgrammar``,
``transformers`` and ``msgspec`` are stubbed only when they are not installed. Meant for a
fresh interpreter (the real-module test runs it in a subprocess), before anything imports
``tensorrt_llm``.

The stubs follow what the real files import, for every upstream version: a ``tensorrt_llm``
module with no stub here is created empty, and a name a stub module lacks resolves to an
``OffPath`` class (usable in annotations, ``isinstance`` and as a base class) that raises
``NotImplementedError`` when called, so a test that strays off the Responses path fails
loudly instead of the import failing.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REAL_MODULES = (
    "tensorrt_llm.serve.openai_protocol",
    "tensorrt_llm.serve.harmony_adapter",
    "tensorrt_llm.serve.responses_utils",
    "tensorrt_llm.serve.postprocess_handlers",
)
#: Any other ``tensorrt_llm/serve/<name>.py`` the source tree has is loaded from it too
#: (``openai_server``, ``chat_tokenization``, ...): real code wherever the tree provides it.
SERVE_PREFIX = "tensorrt_llm.serve."
THIRD_PARTY = ("torch", "xgrammar", "transformers", "msgspec")
# Loaded from the tree too when it has them (a tree patched by ``upstream-pr``).
REAL_PACKAGES = ("tensorrt_llm.serve.harmony_stream",)


class OffPath:
    """Base of the placeholders for names off the Harmony Responses path."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(f"{type(self).__qualname__} is not on the Responses path")


def off_path(module: str, name: str) -> type:
    """A placeholder class for ``module.name``."""
    return type(name, (OffPath,), {"__module__": module, "__qualname__": name})


def _fallback_getattr(module: types.ModuleType) -> None:
    """Give ``module`` a ``__getattr__`` that answers unknown public names with ``off_path``."""
    if "__getattr__" in module.__dict__:
        return
    name = module.__name__

    def __getattr__(attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        child = f"{name}.{attr}"
        if child in REAL_MODULES or _stub_spec(child) or _real_file(child):
            return importlib.import_module(child)  # a submodule, not a placeholder
        placeholder = off_path(name, attr)
        setattr(module, attr, placeholder)
        return placeholder

    module.__getattr__ = __getattr__  # type: ignore[attr-defined]


_SOURCE_DIRS: list[Path] = []  # the tree ``activate`` was given


def _real_file(fullname: str) -> Path | None:
    """The source tree's file for ``fullname`` if it is a real module to load from there."""
    if not _SOURCE_DIRS:
        return None
    location = _SOURCE_DIRS[0].joinpath(*fullname.split(".")).with_suffix(".py")
    if fullname in REAL_MODULES:
        return location
    serve_module = fullname.startswith(SERVE_PREFIX) and "." not in fullname[len(SERVE_PREFIX) :]
    return location if serve_module and location.is_file() else None


def _stub_spec(fullname: str) -> Any:
    """The spec of our stub file for ``fullname``, if there is one."""
    parent = HERE.joinpath(*fullname.split(".")[:-1])
    return importlib.machinery.PathFinder.find_spec(fullname, [str(parent)])


class _StubLoader(importlib.abc.Loader):
    """Runs our stub file (if any), then adds the off-path fallback."""

    def __init__(self, loader: Any | None) -> None:
        self._loader = loader

    def create_module(self, spec: Any) -> Any:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        if self._loader is not None:
            self._loader.exec_module(module)
        _fallback_getattr(module)


class _RealFinder(importlib.abc.MetaPathFinder):
    """Real serve modules from the source tree; every other ``tensorrt_llm`` module a stub."""

    def __init__(self, source_dir: Path) -> None:
        self.source_dir = source_dir

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "tensorrt_llm" and not fullname.startswith("tensorrt_llm."):
            return None
        location = _real_file(fullname)
        if location is not None:
            return importlib.util.spec_from_file_location(fullname, location)
        spec = self._real_package_spec(fullname)
        if spec is not None:
            return spec
        stub = _stub_spec(fullname)
        if stub is not None:
            stub.loader = _StubLoader(stub.loader)
            return stub
        spec = importlib.machinery.ModuleSpec(fullname, _StubLoader(None), is_package=True)
        spec.submodule_search_locations = []
        return spec

    def _real_package_spec(self, fullname: str) -> Any:
        package = next(
            (p for p in REAL_PACKAGES if fullname == p or fullname.startswith(p + ".")), None
        )
        if package is None:
            return None
        folder = self.source_dir.joinpath(*package.split("."))
        if not (folder / "__init__.py").is_file():
            return None
        if fullname == package:
            return importlib.util.spec_from_file_location(
                fullname, folder / "__init__.py", submodule_search_locations=[str(folder)]
            )
        location = folder.joinpath(*fullname[len(package) + 1 :].split(".")).with_suffix(".py")
        return importlib.util.spec_from_file_location(fullname, location)


def activate(source_dir: str | Path) -> list[str]:
    """Set up the import system; returns the third-party packages that were stubbed."""
    if "tensorrt_llm" in sys.modules:
        raise RuntimeError("tensorrt_llm is already imported in this interpreter")
    _SOURCE_DIRS[:] = [Path(source_dir)]
    sys.meta_path.insert(0, _RealFinder(Path(source_dir)))
    stubbed = [name for name in THIRD_PARTY if importlib.util.find_spec(name) is None]
    if stubbed:
        sys.path.append(str(HERE / "thirdparty"))  # after site-packages: real ones win
    return stubbed
