# SPDX-License-Identifier: Apache-2.0
"""Stand-in for the helpers of ``tensorrt_llm.llmapi.utils`` that ``executor.ipc`` and
``executor.postproc_worker`` use: NVTX ranges (no-op without CUDA), debug logging, the
traceback decorator."""

from __future__ import annotations

import contextlib
import functools
import sys
import traceback
from collections.abc import Callable, Iterator
from typing import Any


@contextlib.contextmanager
def nvtx_range(*args: Any, **kwargs: Any) -> Iterator[None]:
    """No-op: NVTX ranges need CUDA."""
    yield


def enable_llm_debug() -> bool:
    return False


def logger_debug(message: str, color: str | None = None) -> None:
    """Debug output only with ``enable_llm_debug()``, which is off here."""


def print_colored(message: str, color: str | None = None, writer: Any = None) -> None:
    (writer or sys.stderr).write(message)


def print_traceback_on_error(func: Callable[..., Any]) -> Callable[..., Any]:
    """Print the traceback of an exception ``func`` raises, then re-raise it."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except Exception:
            traceback.print_exc()
            raise

    return wrapper
