# SPDX-License-Identifier: Apache-2.0
"""Docstrings as ``--help`` text: reST markup (````literal````, ``:class:`X```) made plain."""

from __future__ import annotations

import re

__all__ = ["plain"]

_ROLE = re.compile(r":[a-z]+:`[~.]*([^`]+)`")
_LITERAL = re.compile(r"``([^`]+)``")
_INTERPRETED = re.compile(r"`([^`]+)`")


def plain(text: str) -> str:
    """``text`` without reST roles and backticks (``:mod:`.x``` -> ``x``)."""
    text = _ROLE.sub(r"\1", text)
    text = _LITERAL.sub(r"\1", text)
    return _INTERPRETED.sub(r"\1", text)
