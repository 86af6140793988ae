# SPDX-License-Identifier: Apache-2.0
"""Per-token Harmony driver: tokens in, parser-level facts out.

One ``openai_harmony.StreamableParser`` per request, fed one token at a time. The parser's
state is tracked here from token ids alone (``<|start|>`` opens a header, ``<|message|>``
ends it, a stop token ends the content), so the hot path costs one ``process`` and one
``last_content_delta`` per content token: never ``parser.state`` or ``parser.messages``.
Completed messages are read once, when a stop token was processed or at end of stream
(the stop-token cache invalidation).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Sequence, Union

from openai_harmony import HarmonyEncoding, HarmonyError, Message, Role, StreamableParser

START, MESSAGE = 200006, 200008
END, RETURN, CALL = 200007, 200002, 200012
STOP_TOKENS = frozenset((END, RETURN, CALL))


class Phase(enum.Enum):
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


@dataclass(frozen=True, slots=True)
class ContentDelta:
    """Text added to the open message by consecutive tokens of one ``feed`` call."""

    text: str


@dataclass(frozen=True, slots=True)
class MessageClosed:
    """The open message ended: by a stop token (``stop_token``) or by end of stream (None)."""

    message: Message
    stop_token: int | None
    at: int


Fact = Union[MessageOpened, ContentDelta, MessageClosed]


class HarmonyStreamError(RuntimeError):
    """The token sequence is not valid Harmony; ``token_index`` is the offending position."""

    def __init__(self, message: str, token_index: int) -> None:
        super().__init__(message)
        self.token_index = token_index


class TruncatedHeaderError(HarmonyStreamError):
    """The stream ended inside a message header (no message was opened for it)."""


class HarmonyDriver:
    """Feeds one request's tokens to a ``StreamableParser`` and reports what happened."""

    def __init__(self, encoding: HarmonyEncoding, role: Role = Role.ASSISTANT) -> None:
        self._parser = StreamableParser(encoding, role)
        # A parser built with a role starts inside the first message's header.
        self._phase = Phase.HEADER if role is not None else Phase.EXPECT_START
        self._messages: list[Message] = []
        self._tokens_fed = 0

    @property
    def phase(self) -> Phase:
        return self._phase

    @property
    def messages(self) -> list[Message]:
        """Completed messages, equal to ``parser.messages`` at every batch boundary."""
        return self._messages

    @property
    def tokens_fed(self) -> int:
        return self._tokens_fed

    def feed(self, token_ids: Sequence[int], facts: list[Fact] | None = None) -> list[Fact]:
        """Process ``token_ids`` one by one; append the facts they produce to ``facts``.

        Consecutive deltas are joined into one ``ContentDelta``. On a parse error the facts
        produced before the offending token are in ``facts`` and ``HarmonyStreamError`` is
        raised.
        """
        out: list[Fact] = [] if facts is None else facts
        parser = self._parser
        phase = self._phase
        fed = self._tokens_fed
        pending: list[str] = []
        try:
            for token in token_ids:
                parser.process(token)
                fed += 1
                if phase is Phase.CONTENT:
                    if token in STOP_TOKENS:
                        if pending:
                            out.append(ContentDelta("".join(pending)))
                            pending = []
                        phase = Phase.EXPECT_START
                        self._messages = parser.messages
                        out.append(MessageClosed(self._messages[-1], token, fed))
                    else:
                        delta = parser.last_content_delta
                        if delta:
                            pending.append(delta)
                elif phase is Phase.HEADER:
                    if token == MESSAGE:
                        phase = Phase.CONTENT
                        out.append(
                            MessageOpened(
                                parser.current_channel,
                                parser.current_recipient,
                                parser.current_content_type,
                                fed,
                            )
                        )
                else:  # EXPECT_START: the parser raised unless this was <|start|>.
                    phase = Phase.HEADER
        except HarmonyError as exc:
            # A header error resets the parser to EXPECT_START; content errors cannot occur.
            phase = Phase.EXPECT_START if phase is Phase.HEADER else phase
            raise HarmonyStreamError(str(exc), fed) from exc
        finally:
            if pending:
                out.append(ContentDelta("".join(pending)))
            self._phase = phase
            self._tokens_fed = fed
        return out

    def finish(self, facts: list[Fact] | None = None) -> list[Fact]:
        """End of stream: close a message whose stop token never arrived.

        Raises ``TruncatedHeaderError`` when the stream ended inside a header.
        """
        out: list[Fact] = [] if facts is None else facts
        phase, self._phase = self._phase, Phase.EXPECT_START
        if phase is Phase.EXPECT_START:
            return out
        try:
            self._parser.process_eos()
        except HarmonyError as exc:
            raise TruncatedHeaderError(str(exc), self._tokens_fed) from exc
        if phase is Phase.CONTENT:
            self._messages = self._parser.messages
            out.append(MessageClosed(self._messages[-1], None, self._tokens_fed))
        return out
