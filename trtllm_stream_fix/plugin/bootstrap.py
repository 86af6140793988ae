# SPDX-License-Identifier: Apache-2.0
"""Import hook: patch as soon as TensorRT-LLM's Responses modules finish importing.

Run from the ``.pth`` file in every interpreter that starts with this package installed
(``trtllm-serve``, MPI-spawned executor workers, PostprocWorkers forked or spawned from
them). It must stay cheap and must never break start-up: this file uses the standard
library only and is loaded by the ``.pth`` line *without* importing ``trtllm_stream_fix``.
The package (and ``openai``/``openai_harmony``) is imported only when a watched module has
just been imported, i.e. in processes that serve Responses requests.

A meta-path finder wraps the loader of the watched modules; after the module body has run it
calls ``trtllm_stream_fix.plugin.installer.install()``. Patching does not depend on that
finder staying first: an audit hook (``sys.addaudithook``, raised by the import system
before any finder is asked) moves it back to the front of ``sys.meta_path`` whenever a
watched module is about to be imported, so a finder inserted ahead of it later (a test
harness, another plugin) cannot bypass it. Under ``TRTLLM_STREAM_FIX=require`` a
failure propagates and the import fails (the server does not start); otherwise it is logged.
"""

from __future__ import annotations

import importlib.abc
import os
import sys
from typing import Any, cast

WATCHED = (
    "tensorrt_llm.serve.responses_utils",
    "tensorrt_llm.serve.postprocess_handlers",
    "tensorrt_llm.serve.openai_server",
)
ENV = "TRTLLM_STREAM_FIX"
_OFF = ("0", "off", "false", "no", "disable", "disabled")
MARKER = "_trtllm_stream_fix_hook"


def _mode() -> str:
    value = os.environ.get(ENV, "").strip().lower()
    return "off" if value in _OFF else ("require" if value == "require" else "on")


def on_loaded(name: str) -> None:
    """Install after ``name`` finished importing (errors fatal only under ``require``)."""
    try:
        from trtllm_stream_fix.plugin.installer import install

        install()
    except Exception as exc:
        if _mode() == "require":
            raise
        sys.stderr.write(
            f"[trtllm-stream-fix] not installed after importing {name}: "
            f"{type(exc).__name__}: {exc}\n"
        )


class _Loader(importlib.abc.Loader):
    """Delegates to the real loader, then calls ``on_loaded``."""

    def __init__(self, loader: Any, name: str) -> None:
        self._loader = loader
        self._name = name

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        if not hook_enabled():
            return
        # The body has run; importlib clears ``_initializing`` only after we return.
        spec = getattr(module, "__spec__", None)
        initializing = getattr(spec, "_initializing", False)
        if spec is not None:
            spec._initializing = False
        try:
            on_loaded(self._name)
        finally:
            if spec is not None:
                spec._initializing = initializing

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._loader, attr)


class PostImportFinder(importlib.abc.MetaPathFinder):
    """Finds nothing itself; wraps the loader other finders return for ``WATCHED``."""

    _trtllm_stream_fix_hook = True
    enabled = True

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname not in WATCHED:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader, fullname)
                return spec
        return None


def installed_finder() -> PostImportFinder | None:
    found = next((f for f in sys.meta_path if getattr(f, MARKER, False)), None)
    return cast("PostImportFinder | None", found)  # the marker is set by PostImportFinder only


def hook_enabled() -> bool:
    finder = installed_finder()
    return finder is not None and bool(getattr(finder, "enabled", False))


def set_hook_enabled(enabled: bool) -> None:
    finder = installed_finder()
    if finder is not None:
        finder.enabled = enabled


def _keep_first(event: str, args: tuple[Any, ...]) -> None:
    """Audit hook: put our finder first before a watched module is looked up."""
    if event != "import" or not args or args[0] not in WATCHED:
        return
    finder = installed_finder()
    meta_path = sys.meta_path
    if finder is not None and meta_path and meta_path[0] is not finder:
        meta_path.remove(finder)
        meta_path.insert(0, finder)


def register() -> bool:
    """Add the hook once per interpreter; patch modules already imported. False if off."""
    if _mode() == "off":
        return False
    if installed_finder() is None:
        sys.meta_path.insert(0, PostImportFinder())
    else:
        set_hook_enabled(True)
    if not getattr(sys, "_trtllm_stream_fix_audit", False):
        sys.addaudithook(_keep_first)  # cannot be removed; cheap when not importing
        sys._trtllm_stream_fix_audit = True  # type: ignore[attr-defined]
    for name in WATCHED:
        module = sys.modules.get(name)
        if module is not None and not getattr(module.__spec__, "_initializing", False):
            on_loaded(name)
            break
    return True


def register_from_pth() -> None:
    """Entry point of the ``.pth`` line: never raises (start-up must not break)."""
    try:
        register()
    except Exception as exc:
        sys.stderr.write(f"[trtllm-stream-fix] import hook not registered: {exc}\n")
