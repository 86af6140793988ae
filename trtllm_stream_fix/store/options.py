# SPDX-License-Identifier: Apache-2.0
"""A store's numbers (from its URL's query or its constructor): finite and in range, or a
ValueError naming the option.

``nan``, ``inf`` and out-of-range values are refused when the store is opened (``serve``
exits 2 with the message), never taken: ``timeout=inf`` would hang every call against an
unresponsive Redis, ``timeout=nan`` fail each one, ``ttl=nan`` never expire anything.
"""

from __future__ import annotations

import math


def seconds(name: str, raw: str | float, *, high: float) -> float:
    """``raw`` (option ``name``'s value) as a finite number of seconds in ``(0, high]``."""
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 0 < value <= high:  # False for nan too
        raise ValueError(
            f"{name} must be a positive number of seconds, at most {high:.12g}: {raw!r}"
        )
    return value


def whole(name: str, raw: str | int, *, low: int, high: int) -> int:
    """``raw`` (option ``name``'s value) as a whole number in ``[low, high]``."""
    try:
        value = int(raw) if isinstance(raw, str) else raw
    except ValueError:
        value = low - 1
    if not low <= value <= high:
        span = f"a positive whole number, at most {high}" if low == 1 else f"from {low} to {high}"
        raise ValueError(f"{name} must be {span}: {raw!r}")
    return value
