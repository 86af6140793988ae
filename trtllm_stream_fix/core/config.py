# SPDX-License-Identifier: Apache-2.0
"""Behaviour switches and every ``TRTLLM_STREAM_FIX*`` variable's name, in one place.

The names are defined here and nowhere else (``docs/operators.md`` tables them, a test
checks both); the switches are read by ``env_choice`` and ``fix_mode`` only, from an
environment the edge hands in: the core reads no environment itself. The import hook
(``plugin/bootstrap.py``, standard library only) keeps a copy of ``fix_mode``'s rule that a
test holds equal.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, TypeVar, cast, get_args

ResponsesPreambles = Literal["commentary", "drop"]
C = TypeVar("C", bound=str)  # a Literal of choices
LengthTerminal = Literal["incomplete", "completed"]
Parser = Literal["fast", "reference"]
FixMode = Literal["on", "off", "require"]
#: ``on`` (unset, ``1``), ``off`` (``0``, ``off``, ``false``, ``no``, ``disable``,
#: ``disabled``) or ``require``: whether the plugin patches, and whether a refusal is fatal.
FIX_ENV = "TRTLLM_STREAM_FIX"
PREAMBLES_ENV = "TRTLLM_STREAM_FIX_PREAMBLES"
LENGTH_TERMINAL_ENV = "TRTLLM_STREAM_FIX_LENGTH_TERMINAL"
PARSER_ENV = "TRTLLM_STREAM_FIX_PARSER"
REASONING_FIELD_ENV = "TRTLLM_STREAM_FIX_REASONING_FIELD"
#: Not switches of the machines, named here so every variable has one home.
STORE_ENV = "TRTLLM_STREAM_FIX_STORE"  # the Responses store's URL (store.open_store)
CACHE_ENV = "TRTLLM_STREAM_FIX_CACHE"  # the vocabulary's and tools' cache folder
TRACEBACK_ENV = "TRTLLM_STREAM_FIX_TRACEBACK"  # ``1``: the CLI shows tracebacks
WEBSOCKET_ENV = "TRTLLM_STREAM_FIX_WEBSOCKET"  # ``off``: the plugin answers upgrades 426
COMPACTION_KEY_ENV = "TRTLLM_STREAM_FIX_COMPACTION_KEY"  # the Fernet key of compaction items
_OFF = frozenset(("0", "off", "false", "no", "disable", "disabled"))


@dataclass(frozen=True)
class StreamConfig:
    """Options that trade correctness for upstream parity.

    ``preambles``: ``"commentary"`` streams commentary-channel messages without a recipient as
    ``message`` items with ``phase: "commentary"``; ``"drop"`` omits them (upstream parity,
    indices unchanged).
    ``length_terminal``: ``"incomplete"`` ends a token-limit cut with ``response.incomplete``;
    ``"completed"`` sends ``response.completed`` with status ``incomplete`` (upstream parity).
    ``parser``: ``"fast"`` parses Harmony with ``core.fast_harmony`` (whole engine responses
    at once, the reference taking over whatever it does not handle); ``"reference"`` feeds
    openai_harmony's ``StreamableParser`` one token at a time. Both give the same events.
    """

    preambles: ResponsesPreambles = "commentary"
    length_terminal: LengthTerminal = "incomplete"
    parser: Parser = "fast"

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> StreamConfig:
        """Options from the ``TRTLLM_STREAM_FIX_*`` variables (preambles, length terminal, parser).

        ``environ`` is handed in by the edge (``os.environ``): the core reads no environment.
        Unset means the default; any other value than the allowed ones is a ``ValueError``
        naming the variable and the choices.
        """
        env = environ
        return cls(
            preambles=env_choice(env, PREAMBLES_ENV, ResponsesPreambles, cls.preambles),
            length_terminal=env_choice(
                env, LENGTH_TERMINAL_ENV, LengthTerminal, cls.length_terminal
            ),
            parser=env_choice(env, PARSER_ENV, Parser, cls.parser),
        )


def env_choice(env: Mapping[str, str], name: str, kind: object, default: C) -> C:
    """The value of variable ``name`` in ``env``: one of the ``Literal`` ``kind``'s choices.

    The one reader of the ``TRTLLM_STREAM_FIX_*`` switches (``StreamConfig.from_env``, the
    chat options): case and surrounding blanks ignored, unset or empty means ``default``,
    anything else is a ``ValueError`` naming the variable and the choices.
    """
    value = env.get(name, "").strip().lower()
    if not value:
        return default
    choices = get_args(kind)
    if value not in choices:
        raise ValueError(f"{name}={value!r} is not one of {', '.join(choices)}")
    return cast(C, value)  # one of the Literal's choices


def fix_mode(env: Mapping[str, str]) -> FixMode:
    """``TRTLLM_STREAM_FIX`` in ``env``: ``off``, ``require`` or (anything else) ``on``."""
    value = env.get(FIX_ENV, "").strip().lower()
    if value in _OFF:
        return "off"
    return "require" if value == "require" else "on"


DEFAULT_CONFIG = StreamConfig()
