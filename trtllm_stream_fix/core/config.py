# SPDX-License-Identifier: Apache-2.0
"""Behaviour switches of the event machine."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args

Preambles = Literal["commentary", "drop"]
LengthTerminal = Literal["incomplete", "completed"]
PREAMBLES_ENV = "TRTLLM_STREAM_FIX_PREAMBLES"
LENGTH_TERMINAL_ENV = "TRTLLM_STREAM_FIX_LENGTH_TERMINAL"


@dataclass(frozen=True)
class StreamConfig:
    """Options that trade correctness for upstream parity.

    ``preambles``: ``"commentary"`` streams commentary-channel messages without a recipient as
    ``message`` items with ``phase: "commentary"``; ``"drop"`` omits them (upstream parity,
    indices unchanged).
    ``length_terminal``: ``"incomplete"`` ends a token-limit cut with ``response.incomplete``;
    ``"completed"`` sends ``response.completed`` with status ``incomplete`` (upstream parity).
    """

    preambles: Preambles = "commentary"
    length_terminal: LengthTerminal = "incomplete"

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> StreamConfig:
        """Options from ``TRTLLM_STREAM_FIX_PREAMBLES`` / ``TRTLLM_STREAM_FIX_LENGTH_TERMINAL``.

        ``environ`` is handed in by the edge (``os.environ``): the core reads no environment.
        Unset means the default; any other value than the allowed ones is a ``ValueError``
        naming the variable and the choices.
        """
        env = environ
        return cls(
            preambles=_choice(env, PREAMBLES_ENV, Preambles, cls.preambles),
            length_terminal=_choice(env, LENGTH_TERMINAL_ENV, LengthTerminal, cls.length_terminal),
        )


def _choice(env: Mapping[str, str], name: str, kind: object, default: str) -> str:
    value = env.get(name, "").strip().lower()
    if not value:
        return default
    choices = get_args(kind)
    if value not in choices:
        raise ValueError(f"{name}={value!r} is not one of {', '.join(choices)}")
    return value


DEFAULT_CONFIG = StreamConfig()
