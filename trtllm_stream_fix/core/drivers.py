# SPDX-License-Identifier: Apache-2.0
"""The Harmony driver contract (``HarmonyDriver``) and the factory that picks one.

Two drivers keep it: ``fast_harmony.FastHarmonyDriver`` (whole engine responses at once, the
default) and ``harmony_driver.ReferenceHarmonyDriver`` (openai_harmony's
``StreamableParser``, one token at a time: the reference). Both report the same facts
(``facts``) and errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from openai_harmony import HarmonyEncoding

from . import harmony_driver
from .config import Parser
from .facts import NOT_CONTENT, Fact, NotContent, join_text
from .fast_harmony import FastHarmonyDriver


@runtime_checkable
class HarmonyDriver(Protocol):
    """What the turn layer needs from a Harmony driver (one per request)."""

    @property
    def tokens_fed(self) -> int:
        """Tokens the parser accepted so far."""
        ...

    def take_content(self, token: int) -> str | NotContent | None:
        """The per-token path's one call: a content token's delta, or ``NOT_CONTENT``.

        The delta is None while text is held back; ``NOT_CONTENT`` means nothing was fed
        (the token is not plain content of the open message: use ``feed``).
        """
        ...

    def feed(self, token_ids: Sequence[int], facts: list[Fact] | None = None) -> list[Fact]:
        """Process ``token_ids``; append their facts to ``facts``.

        ``HarmonyStreamError`` on an invalid token, the facts before it kept.
        """
        ...

    def finish(self, facts: list[Fact] | None = None) -> list[Fact]:
        """End of stream: close a message whose stop token never arrived.

        ``TruncatedHeaderError`` when the stream ended inside a header.
        """
        ...


def new_driver(encoding: HarmonyEncoding, parser: Parser | str = "fast") -> HarmonyDriver:
    """The Harmony driver ``StreamConfig.parser`` names: ``"fast"`` or ``"reference"``."""
    if parser == "fast":
        return FastHarmonyDriver(encoding)
    if parser == "reference":
        return harmony_driver.ReferenceHarmonyDriver(encoding)
    raise ValueError(f"unknown parser {parser!r}; choose fast or reference")


__all__ = ["NOT_CONTENT", "HarmonyDriver", "NotContent", "join_text", "new_driver"]
