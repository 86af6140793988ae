# SPDX-License-Identifier: Apache-2.0
"""The mark on everything this project puts in upstream's place.

``mark(wrapper, original)`` copies the original's name, docstring and ``__wrapped__`` onto
the wrapper (``functools.update_wrapper``) and sets the ``__trtllm_stream_fix__`` attribute,
which ``is_ours`` reads: uninstall, ``doctor`` and ``targets.unwrap`` tell our replacements
from upstream's code by it. Classes carry it as a class attribute (``MARKER``):
``marked_subclass`` builds the subclasses put in place of upstream's classes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])
MARKER = "__trtllm_stream_fix__"


def mark(wrapper: F, original: Any = None) -> F:
    """``wrapper`` marked as ours (and wrapping ``original`` when given)."""
    if original is not None:
        functools.update_wrapper(wrapper, original)
    setattr(wrapper, MARKER, True)
    return wrapper


def is_ours(obj: Any) -> bool:
    """Whether ``obj`` carries this project's mark."""
    return bool(getattr(obj, MARKER, False))


def marked_subclass(base: type, suffix: str, module: str, **namespace: Any) -> type:
    """A subclass ``<base>With<suffix>`` of ``base`` defined in ``module``, with ``base``'s
    docstring, ``namespace``'s attributes, and the mark (``targets.upstream_class`` peels it)."""
    body = {"__module__": module, "__doc__": base.__doc__, MARKER: True, **namespace}
    return type(f"{base.__name__}With{suffix}", (base,), body)
