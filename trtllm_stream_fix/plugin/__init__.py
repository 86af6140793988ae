# SPDX-License-Identifier: Apache-2.0
"""Drop-in ``trtllm-serve`` plugin: patches TensorRT-LLM's Responses Harmony streaming.

Importing this package imports neither TensorRT-LLM nor the core's machines (only its error
classes: :mod:`.errors`, re-exported here); the functions below load what they need. See
``registry`` for what is patched and ``docs/operators.md`` for operation.
"""

from __future__ import annotations

from typing import Any

from .errors import FingerprintError, IncompleteStream, PluginRequestError, StreamFixInstallError


def install(**kwargs: Any) -> Any:
    """Patch every loaded target (idempotent); returns an ``install.Report``."""
    from .installer import install as _install

    return _install(**kwargs)


def uninstall() -> Any:
    """Restore exactly what ``install`` replaced; returns an ``install.Report``."""
    from .installer import uninstall as _uninstall

    return _uninstall()


def is_active() -> bool:
    """Whether the streaming fix is in place in this interpreter."""
    from .installer import is_active as _is_active

    return _is_active()


def doctor_report(**kwargs: Any) -> Any:
    """Versions, target shapes and activation state (``doctor.DoctorReport``)."""
    from .doctor import doctor_report as _doctor_report

    return _doctor_report(**kwargs)


def run_trtllm_serve(argv: list[str]) -> int:
    """Install the fix, then run upstream's ``trtllm-serve`` CLI with ``argv``."""
    from .serve import run_trtllm_serve as _run

    return _run(argv)


def doctor_main(argv: list[str] | None = None) -> int:
    from .doctor import doctor_main as _main

    return _main(argv)


def serve_trtllm_main(argv: list[str] | None = None) -> int:
    from .serve import serve_trtllm_main as _main

    return _main(argv)


__all__ = [
    "FingerprintError",
    "IncompleteStream",
    "PluginRequestError",
    "StreamFixInstallError",
    "doctor_main",
    "doctor_report",
    "install",
    "is_active",
    "run_trtllm_serve",
    "serve_trtllm_main",
    "uninstall",
]
