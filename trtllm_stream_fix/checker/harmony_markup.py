# SPDX-License-Identifier: Apache-2.0
"""Harmony's markup as the checkers see it: text in a stream.

The checkers judge what the core produces, so they keep their own list rather than read the
core's token table; a test checks that the two agree with each other and with the
o200k_harmony encoding's special tokens.
"""

from __future__ import annotations

__all__ = ["MARKUP"]

#: The text of each Harmony special token that frames a message.
MARKUP = (
    "<|start|>",
    "<|channel|>",
    "<|message|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|constrain|>",
)
