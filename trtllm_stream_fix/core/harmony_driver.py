# SPDX-License-Identifier: Apache-2.0
"""Per-token Harmony driver: tokens in, parser-level facts out.

One ``openai_harmony.StreamableParser`` per request, fed one token at a time. The parser's
state is tracked here from token ids alone (``<|start|>`` opens a header, ``<|message|>``
ends it, a stop token ends the content), so the hot path costs one ``process`` and one
``last_content_delta`` per content token: never ``parser.state`` or ``parser.messages``.
Completed messages are cached: a stop token (or the end of stream) invalidates the cache,
and ``messages`` re-reads ``parser.messages`` once, only when asked (the stop-token cache
invalidation). The event machine never asks on the hot path: message text is the joined
deltas, and ``parser.messages`` is read only to settle a message whose last character was
an incomplete UTF-8 sequence.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from openai_harmony import HarmonyEncoding, HarmonyError, Message, Role, StreamableParser

from .harmony_tokens import MESSAGE, STOP_TOKENS


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
    role: Role | None = Role.ASSISTANT


@dataclass(frozen=True, slots=True)
class ContentDelta:
    """Text added to the open message by consecutive tokens of one ``feed`` call."""

    text: str


@dataclass(frozen=True, slots=True)
class MessageClosed:
    """The open message ended: by a stop token (``stop_token``) or by end of stream (None).

    ``partial_utf8`` tells that the last content token left an incomplete UTF-8 sequence, so
    the parser's text for the message (``HarmonyDriver.messages[-1]``) may differ from the
    joined deltas.
    """

    stop_token: int | None
    at: int
    partial_utf8: bool = False


Fact = MessageOpened | ContentDelta | MessageClosed


class HarmonyStreamError(RuntimeError):
    """The token sequence is not valid Harmony; ``token_index`` is the offending position."""

    def __init__(self, message: str, token_index: int) -> None:
        super().__init__(message)
        self.token_index = token_index


class TruncatedHeaderError(HarmonyStreamError):
    """The stream ended inside a message header (no message was opened for it)."""


def _forwards(inner: object) -> bool:
    return hasattr(inner, "process") and hasattr(type(inner), "last_content_delta")


class HarmonyDriver:
    """Feeds one request's tokens to a ``StreamableParser`` and reports what happened."""

    def __init__(self, encoding: HarmonyEncoding, role: Role = Role.ASSISTANT) -> None:
        self._parser = StreamableParser(encoding, role)
        # ``StreamableParser.process`` / ``last_content_delta`` only forward to ``_inner``
        # (openai-harmony 0.0.x); calling it directly saves two Python frames per token.
        inner = getattr(self._parser, "_inner", None)
        self._inner = inner if _forwards(inner) else self._parser
        # A parser built with a role starts inside the first message's header.
        self._phase = Phase.HEADER if role is not None else Phase.EXPECT_START
        self._messages: list[Message] = []
        self._messages_stale = False
        self._partial_utf8 = False
        self._tokens_fed = 0

    @property
    def phase(self) -> Phase:
        return self._phase

    @property
    def messages(self) -> list[Message]:
        """Completed messages, equal to ``parser.messages`` (re-read only after a stop token)."""
        if self._messages_stale:
            self._messages = self._parser.messages
            self._messages_stale = False
        return self._messages

    def is_content_token(self, token: int) -> bool:
        """Whether ``token`` only adds text to the open message (``content_delta`` may take it)."""
        return self._phase is Phase.CONTENT and token not in STOP_TOKENS

    def content_delta(self, token: int) -> str | None:
        """One content token, without facts: the ``feed`` loop's content branch on its own.

        The per-token path at one token per engine response. Precondition:
        ``is_content_token(token)`` (the parser accepts any such token). Returns the token's
        delta, None while a UTF-8 sequence is incomplete.
        """
        inner = self._inner
        inner.process(token)
        self._tokens_fed += 1
        delta = inner.last_content_delta
        self._partial_utf8 = not delta
        return delta

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
        partial = self._partial_utf8
        pending: list[str] = []
        # Hot locals; the Rust parser behind the Python wrapper when it is reachable.
        inner = self._inner
        process, content, stops = inner.process, Phase.CONTENT, STOP_TOKENS
        try:
            for token in token_ids:
                process(token)
                fed += 1
                if phase is content:
                    if token in stops:
                        if pending:
                            out.append(ContentDelta("".join(pending)))
                            pending = []
                        phase = Phase.EXPECT_START
                        self._messages_stale = True
                        out.append(MessageClosed(token, fed, partial))
                        partial = False
                    else:
                        delta = inner.last_content_delta
                        if delta:
                            pending.append(delta)
                            partial = False
                        else:
                            partial = True
                elif phase is Phase.HEADER:
                    if token == MESSAGE:
                        phase = content
                        partial = False
                        out.append(
                            MessageOpened(
                                parser.current_channel,
                                parser.current_recipient,
                                parser.current_content_type,
                                fed,
                                parser.current_role,
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
            self._partial_utf8 = partial
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
            self._messages_stale = True
            out.append(MessageClosed(None, self._tokens_fed, self._partial_utf8))
            self._partial_utf8 = False
        return out
