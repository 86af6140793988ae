# SPDX-License-Identifier: Apache-2.0
"""Texts for check reports: examples shortened at a word boundary."""

from __future__ import annotations


def shorten(text: str, limit: int = 240) -> str:
    """``text`` in at most ``limit`` characters, cut at a word boundary (mid-word only when
    the last half holds no space)."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit - 4)
    return text[: cut if cut > limit // 2 else limit - 4].rstrip() + " ..."
