# SPDX-License-Identifier: Apache-2.0
"""Bounds for untrusted JSON: decoding that never raises past ``ValueError``, nesting depth.

Python's ``json`` raises ``RecursionError`` for deep nesting and a bare ``ValueError`` for
integers over 4,300 digits; :func:`loads` turns both into :class:`JSONLimitError` (a
``ValueError``), so callers catch one exception. :func:`too_deep` walks iteratively, so a
value nested past the interpreter's recursion limit can still be measured.
"""

from __future__ import annotations

import json
import sys
from typing import Any

__all__ = ["MAX_DEPTH", "JSONLimitError", "loads", "too_deep"]

#: Nesting depth accepted by default (objects and arrays; a scalar has depth 0).
MAX_DEPTH = 128
_MAX_DIGITS = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 4300


class JSONLimitError(ValueError):
    """The text is not JSON we accept: invalid, nested too deep, or a number too long."""


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """True if ``value`` nests dicts/lists more than ``limit`` levels deep."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, (list, tuple)):
            children = node
        else:
            continue
        if depth + 1 > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def loads(text: str | bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads`` that raises only :class:`JSONLimitError` for unacceptable input."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise JSONLimitError("JSON nested too deep") from None
    except json.JSONDecodeError as exc:
        raise JSONLimitError(f"invalid JSON: {exc}") from None
    except UnicodeDecodeError as exc:
        raise JSONLimitError(f"invalid JSON: not UTF-8 ({exc.reason})") from None
    except ValueError:  # an integer with more digits than int() accepts
        raise JSONLimitError(f"invalid JSON: a number has over {_MAX_DIGITS} digits") from None
    if too_deep(value, max_depth):
        raise JSONLimitError(f"JSON nested deeper than {max_depth} levels")
    return value
