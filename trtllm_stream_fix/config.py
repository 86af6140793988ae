# SPDX-License-Identifier: Apache-2.0
"""Behaviour switches of the event machine."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class StreamConfig:
    """Options that trade correctness for upstream parity.

    ``preambles``: ``"commentary"`` streams commentary-channel messages without a recipient as
    ``message`` items with ``phase: "commentary"``; ``"drop"`` omits them (upstream parity,
    indices unchanged).
    ``length_terminal``: ``"incomplete"`` ends a token-limit cut with ``response.incomplete``;
    ``"completed"`` sends ``response.completed`` with status ``incomplete`` (upstream parity).
    """

    preambles: Literal["commentary", "drop"] = "commentary"
    length_terminal: Literal["incomplete", "completed"] = "incomplete"


DEFAULT_CONFIG = StreamConfig()
