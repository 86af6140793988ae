# SPDX-License-Identifier: Apache-2.0
"""Bounds for untrusted JSON: decoding that never raises past ``ValueError``, nesting depth,
values that cannot be sent back (lone surrogates, integers beyond 64 bits).

Python's ``json`` raises ``RecursionError`` for deep nesting and a bare ``ValueError`` for
integers over 4,300 digits; :func:`loads` turns both into :class:`JSONLimitError` (a
``ValueError``), so callers catch one exception. :func:`too_deep` walks iteratively, so a
value nested past the interpreter's recursion limit can still be measured.
:func:`first_unsendable` finds the first string that is not Unicode text (a lone surrogate,
which ``\\ud800`` escapes decode to) or integer beyond 64 bits, with its path, so a server
can refuse it by name instead of failing when it echoes it.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from typing import Any

from .core.errors import StreamFixError

__all__ = [
    "MAX_DEPTH",
    "JSONLimitError",
    "first_unsendable",
    "in_int_range",
    "json_path",
    "loads",
    "may_hold_surrogates",
    "too_deep",
]

#: Nesting depth accepted by default (objects and arrays; a scalar has depth 0).
MAX_DEPTH = 128
_MAX_DIGITS = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 4300


class JSONLimitError(StreamFixError, ValueError):
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


#: Integers accepted in values: what a 64-bit JSON encoder (orjson) writes.
INT_RANGE = (-(2**63), 2**64 - 1)
Path = tuple[str | int, ...]
_SURROGATE_ESCAPE = re.compile(rb"\\[uU][dD][89a-fA-F]")


def may_hold_surrogates(text: str | bytes) -> bool:
    """False if the JSON ``text`` has no surrogate escape, so no decoded string can hold a
    lone surrogate (a quick scan that spares :func:`first_unsendable`'s walk)."""
    if isinstance(text, str):
        text = text.encode("utf-8", "surrogatepass")
    return _SURROGATE_ESCAPE.search(text) is not None


def in_int_range(value: int) -> bool:
    """Whether ``value`` is an integer a 64-bit JSON encoder writes (:data:`INT_RANGE`)."""
    return INT_RANGE[0] <= value <= INT_RANGE[1]


def _unsendable(node: Any) -> str | None:
    if type(node) is str:
        if node.isascii():
            return None
        try:
            node.encode("utf-8")
        except UnicodeEncodeError as exc:
            return f"contains a lone surrogate ({node[exc.start]!r}), which is not Unicode text"
        return None
    if type(node) is int and not in_int_range(node):
        return "is an integer beyond 64 bits"
    return None


def first_unsendable(value: Any) -> tuple[Path, str] | None:
    """``(path, problem)`` of the first string or integer in ``value`` that cannot be sent
    back as JSON, else None. A bad object key is reported at the object's path."""
    stack: list[tuple[Any, Path]] = [(value, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            for key, child in reversed(node.items()):
                problem = _unsendable(key)
                if problem:
                    return path, f"has a key that {problem}"
                stack.append((child, (*path, key)))
        elif isinstance(node, list):
            stack.extend((child, (*path, k)) for k, child in reversed(list(enumerate(node))))
        else:
            problem = _unsendable(node)
            if problem:
                return path, problem
    return None


def json_path(path: Path) -> str:
    """``("tools", 0, "name")`` -> ``"tools[0].name"``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def loads(
    text: str | bytes, *, max_depth: int = MAX_DEPTH, parse_int: Callable[[str], Any] | None = None
) -> Any:
    """``json.loads`` that raises only :class:`JSONLimitError` for unacceptable input
    (``parse_int`` as ``json.loads``'s).

    Bytes must be UTF-8 (RFC 8259), decoded strictly: ``json.loads`` would guess UTF-16/32
    and let surrogates encoded as bytes (``ED A0 80``) through as lone surrogates.
    """
    if isinstance(text, (bytes, bytearray)):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JSONLimitError(
                f"not valid UTF-8: {exc.reason} at byte offset {exc.start}"
            ) from None
    try:
        value = json.loads(text, parse_int=parse_int)
    except RecursionError:
        raise JSONLimitError("JSON nested too deep") from None
    except json.JSONDecodeError as exc:
        raise JSONLimitError(f"invalid JSON: {exc}") from None
    except ValueError:  # an integer with more digits than int() accepts
        raise JSONLimitError(f"invalid JSON: a number has over {_MAX_DIGITS} digits") from None
    if too_deep(value, max_depth):
        raise JSONLimitError(f"JSON nested deeper than {max_depth} levels")
    return value
