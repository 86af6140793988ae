# SPDX-License-Identifier: Apache-2.0
"""What a Harmony driver reports: parser-level facts, the not-content sentinel, its errors.

Facts (the contract every driver keeps, ``drivers.HarmonyDriver``):

- ``MessageOpened`` when a header ends (``<|message|>``): channel, recipient, content type,
  author role, and ``at`` = tokens fed so far.
- ``ContentDelta`` for the text that consecutive content tokens of one ``feed`` call (or of
  a ``feed`` and the ``finish`` that follows it on the same facts list) added. The deltas of
  one message join to exactly the parser's text for it: text the parser settles only when
  the message ends is joined to the last delta (``join_text``).
- ``MessageClosed`` when a stop token (``stop_token``) or the end of stream (None) ends the
  open message.

Errors: ``HarmonyStreamError`` (with ``token_index``, the 0-based position of the offending
token); the facts before it are kept. ``TruncatedHeaderError`` when the stream ends inside a
header.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final

from openai_harmony import Role

from .errors import HarmonyStreamError, TruncatedHeaderError


class NotContent(enum.Enum):
    """``take_content``'s answer for a token that is not plain content of the open message.

    An enum member, so ``is not NOT_CONTENT`` narrows the answer to the delta for the type
    checker.
    """

    NOT_CONTENT = "NOT_CONTENT"

    def __repr__(self) -> str:
        return "NOT_CONTENT"


#: The token needs ``feed`` (a header, a stop token, no open message, not in the vocabulary).
NOT_CONTENT: Final = NotContent.NOT_CONTENT


class ParserState(enum.Enum):
    """Where the parser is, mirrored from the token ids fed."""

    EXPECT_START = "expect_start"
    HEADER = "header"
    CONTENT = "content"


@dataclass(frozen=True, slots=True)
class MessageOpened:
    """A header completed: the message's content starts with the next token.

    ``at`` is the number of tokens fed to the parser so far (``<|message|>`` included).
    """

    channel: str | None
    recipient: str | None
    content_type: str | None
    at: int
    role: Role | None = Role.ASSISTANT


@dataclass(frozen=True, slots=True)
class ContentDelta:
    """Text added to the open message by consecutive tokens of one ``feed`` call."""

    text: str


@dataclass(frozen=True, slots=True)
class MessageClosed:
    """The open message ended: by a stop token (``stop_token``) or by end of stream (None).

    ``at`` is the number of tokens fed so far. ``partial_utf8`` tells that the parser settled
    text only at the close (an incomplete or invalid UTF-8 sequence); that text is already
    in the ``ContentDelta`` just before this fact.
    """

    stop_token: int | None
    at: int
    partial_utf8: bool = False


Fact = MessageOpened | ContentDelta | MessageClosed


def join_text(facts: list[Fact], text: str) -> None:
    """Add ``text`` to the ``ContentDelta`` that ends ``facts``, or append a new one."""
    if facts and type(facts[-1]) is ContentDelta:
        facts[-1] = ContentDelta(facts[-1].text + text)
    else:
        facts.append(ContentDelta(text))


__all__ = [
    "NOT_CONTENT",
    "ContentDelta",
    "Fact",
    "HarmonyStreamError",
    "MessageClosed",
    "MessageOpened",
    "NotContent",
    "ParserState",
    "TruncatedHeaderError",
    "join_text",
]
