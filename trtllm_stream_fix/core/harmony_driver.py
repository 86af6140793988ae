# SPDX-License-Identifier: Apache-2.0
"""Per-token Harmony driver: tokens in, parser-level facts out.

One ``openai_harmony.StreamableParser`` per request, fed one token at a time. The parser's
state is tracked here from token ids alone (``<|start|>`` opens a header, ``<|message|>``
ends it, a stop token ends the content), so the hot path costs one ``process`` and one
``last_content_delta`` per content token: never ``parser.state`` or ``parser.messages``.

Facts and errors: ``facts`` (the contract every driver keeps). When a message ends, the text
the parser settles only then (an incomplete or invalid UTF-8 sequence, the character held
back after one) is read once from ``parser.messages`` and joined to the last delta.

The token ids hard-coded in ``harmony_tokens`` are checked against the encoding when a
driver is built (once per encoding object), and the parser is built with ``strict=True``
explicitly where openai-harmony accepts the argument.

openai-harmony 0.0.4 (TensorRT-LLM's pin) drops the rest of a message's text after an
invalid UTF-8 sequence, so what it streams would depend on where engine responses split.
There (``compat.harmony_keeps_text_after_invalid_utf8`` is False) the parser still decides
every message's structure and every error, but content text is decoded from the token bytes
by 0.0.8's rules (``harmony_utf8.ContentDecoder``); one line is logged.
"""

from __future__ import annotations

import inspect
import operator
from collections.abc import Sequence
from typing import Any

from openai_harmony import (
    HarmonyEncoding,
    HarmonyError,
    Message,
    Role,
    StreamableParser,
)

from .compat import harmony_keeps_text_after_invalid_utf8, log_fallback
from .facts import (
    NOT_CONTENT,
    ContentDelta,
    Fact,
    HarmonyStreamError,
    MessageClosed,
    MessageOpened,
    NotContent,
    ParserState,
    TruncatedHeaderError,
    join_text,
)
from .harmony_tokens import MESSAGE, STOP_TOKENS, vocab_size
from .harmony_utf8 import ContentDecoder, token_bytes


def _forwards(inner: object) -> bool:
    return hasattr(inner, "process") and hasattr(type(inner), "last_content_delta")


def _accepts_strict() -> bool:
    try:
        return "strict" in inspect.signature(StreamableParser.__init__).parameters
    except (TypeError, ValueError):  # pragma: no cover - a signature-less build
        return False


PARSER_ACCEPTS_STRICT = _accepts_strict()


def new_parser(encoding: HarmonyEncoding, role: Role | None, strict: bool) -> StreamableParser:
    """A ``StreamableParser`` with ``strict`` passed explicitly where the version takes it.

    Versions without the argument are strict only; asking them for ``strict=False`` is a
    ``ValueError``.
    """
    if PARSER_ACCEPTS_STRICT:
        return StreamableParser(encoding, role, strict=strict)
    if not strict:
        raise ValueError("this openai-harmony has no non-strict StreamableParser")
    return StreamableParser(encoding, role)


def message_text(message: Message) -> str:
    """The text of a Harmony message (its text content parts joined)."""
    return "".join(getattr(part, "text", "") for part in message.content)


def content_decoder(encoding: HarmonyEncoding) -> ContentDecoder | None:
    """A decoder for content text where this openai-harmony loses text, else None."""
    if harmony_keeps_text_after_invalid_utf8(encoding):
        return None
    log_fallback(
        "harmony_utf8",
        "this openai-harmony drops a message's text after invalid UTF-8; the Harmony driver "
        "decodes content text itself, as openai-harmony >= 0.0.8 does",
    )
    return ContentDecoder(token_bytes(encoding))


def as_token_list(token_ids: Sequence[int]) -> Sequence[int]:
    """``token_ids`` as a list or tuple (numpy arrays and other int sequences converted)."""
    if type(token_ids) is list or type(token_ids) is tuple:
        return token_ids
    tolist = getattr(token_ids, "tolist", None)
    return tolist() if tolist is not None else list(token_ids)


class ReferenceHarmonyDriver:
    """Feeds one request's tokens to a ``StreamableParser`` and reports what happened."""

    def __init__(
        self, encoding: HarmonyEncoding, role: Role | None = Role.ASSISTANT, *, strict: bool = True
    ) -> None:
        self._vocab = vocab_size(encoding)
        self._parser = new_parser(encoding, role, strict)
        # Content text decoded here rather than read from the parser (openai-harmony 0.0.4).
        self._decoder = content_decoder(encoding)
        # ``StreamableParser.process`` / ``last_content_delta`` only forward to ``_inner``
        # (openai-harmony 0.0.x); calling it directly saves two Python frames per token.
        inner = getattr(self._parser, "_inner", None)
        self._inner: Any = inner if _forwards(inner) else self._parser
        # A parser built with a role starts inside the first message's header.
        self._state = ParserState.HEADER if role is not None else ParserState.EXPECT_START
        self._tokens_fed = 0
        self._opened_at = 0  # tokens fed when the open message's header ended
        self._streamed = 0  # characters of the open message reported in deltas

    @property
    def state(self) -> ParserState:
        return self._state

    @property
    def tokens_fed(self) -> int:
        """Tokens the parser accepted so far."""
        return self._tokens_fed

    def is_content_token(self, token: int) -> bool:
        """Whether ``token`` only adds text to the open message (``content_delta`` may take it)."""
        return (
            self._state is ParserState.CONTENT
            and token not in STOP_TOKENS
            and 0 <= token < self._vocab
        )

    def take_content(self, token: int) -> str | NotContent | None:
        """The per-token path's one call: ``content_delta`` of a content token.

        ``NOT_CONTENT`` (nothing fed) where ``is_content_token`` is false.
        """
        try:
            operator.index(token)
        except TypeError:  # not an integer: ``feed`` reports it as no token id, as at any split
            return NOT_CONTENT
        if not self.is_content_token(token):
            return NOT_CONTENT
        return self.content_delta(token)

    def content_delta(self, token: int) -> str | None:
        """One content token, without facts: the ``feed`` loop's content branch on its own.

        The per-token path at one token per engine response. Precondition:
        ``is_content_token(token)`` (the parser accepts any such token). Returns the token's
        delta, None while the parser holds text back (an incomplete UTF-8 sequence).
        """
        inner = self._inner
        inner.process(token)
        self._tokens_fed += 1
        decoder = self._decoder
        delta = inner.last_content_delta if decoder is None else decoder.push(token) or None
        if delta:
            self._streamed += len(delta)
        return delta

    def feed(self, token_ids: Sequence[int], facts: list[Fact] | None = None) -> list[Fact]:
        """Process ``token_ids`` (any int sequence) one by one; append their facts to ``facts``.

        Consecutive deltas are joined into one ``ContentDelta``. On an invalid token the facts
        produced before it are in ``facts`` and ``HarmonyStreamError`` is raised.
        """
        out: list[Fact] = [] if facts is None else facts
        token_ids = as_token_list(token_ids)
        bad = self._first_undecodable(token_ids)
        if bad is not None:
            bad_token, token_ids = token_ids[bad], token_ids[:bad]
        parser = self._parser
        state = self._state
        fed = self._tokens_fed
        streamed = self._streamed
        pending: list[str] = []
        # Hot locals; the Rust parser behind the Python wrapper when it is reachable.
        inner = self._inner
        process, content, stops = inner.process, ParserState.CONTENT, STOP_TOKENS
        decoder = self._decoder
        token = None
        try:
            for token in token_ids:
                process(token)
                fed += 1
                if state is content:
                    if token in stops:
                        settled = ""
                        if fed - 1 > self._opened_at:  # the message has content tokens
                            settled = self._settled(streamed)
                            if settled:
                                pending.append(settled)
                        if pending:
                            out.append(ContentDelta("".join(pending)))
                            pending = []
                        state = ParserState.EXPECT_START
                        out.append(MessageClosed(token, fed, bool(settled)))
                    else:
                        if decoder is None:
                            delta = inner.last_content_delta
                        else:
                            delta = decoder.push(token)
                        if delta:
                            pending.append(delta)
                            streamed += len(delta)
                elif state is ParserState.HEADER:
                    if token == MESSAGE:
                        state = content
                        self._opened_at = fed
                        streamed = 0
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
                    state = ParserState.HEADER
        except HarmonyError as exc:
            # A header error resets the parser to EXPECT_START; content errors cannot occur.
            state = ParserState.EXPECT_START if state is ParserState.HEADER else state
            raise HarmonyStreamError(f"{exc} (token {token} at position {fed})", fed) from exc
        except (OverflowError, TypeError, ValueError) as exc:
            message = f"token {token!r} at position {fed} is not a token id"
            raise HarmonyStreamError(message, fed) from exc
        finally:
            if pending:
                out.append(ContentDelta("".join(pending)))
            self._state = state
            self._tokens_fed = fed
            self._streamed = streamed
        if bad is not None:
            raise HarmonyStreamError(
                f"token id {bad_token} at position {fed} cannot be decoded "
                f"(the encoding has ids 0..{self._vocab - 1})",
                fed,
            )
        return out

    def finish(self, facts: list[Fact] | None = None) -> list[Fact]:
        """End of stream: close a message whose stop token never arrived.

        Text the parser settles now is joined to a ``ContentDelta`` that ends ``facts``.
        Raises ``TruncatedHeaderError`` when the stream ended inside a header.
        """
        out: list[Fact] = [] if facts is None else facts
        state, self._state = self._state, ParserState.EXPECT_START
        if state is ParserState.EXPECT_START:
            return out
        try:
            self._parser.process_eos()
        except HarmonyError as exc:
            raise TruncatedHeaderError(str(exc), self._tokens_fed) from exc
        if state is ParserState.CONTENT:
            settled = ""
            if self._tokens_fed > self._opened_at:
                settled = self._settled(self._streamed)
            if settled:
                join_text(out, settled)
            out.append(MessageClosed(None, self._tokens_fed, bool(settled)))
        return out

    # -- internals ------------------------------------------------------------------------

    def _settled(self, streamed: int) -> str:
        """The closed message's text beyond the ``streamed`` characters sent as deltas."""
        if self._decoder is not None:
            return self._decoder.close()
        messages = self._parser.messages
        text = message_text(messages[-1]) if messages else ""
        return text[streamed:] if len(text) > streamed else ""

    def _first_undecodable(self, token_ids: Sequence[int]) -> int | None:
        if not token_ids:
            return None
        vocab = self._vocab
        try:
            if min(token_ids) >= 0 and max(token_ids) < vocab:
                return None
        except TypeError:
            return None  # not comparable: ``process`` rejects the token in order
        return next(i for i, t in enumerate(token_ids) if not 0 <= t < vocab)


__all__ = [
    "NOT_CONTENT",
    "ContentDelta",
    "Fact",
    "HarmonyStreamError",
    "MessageClosed",
    "MessageOpened",
    "ParserState",
    "ReferenceHarmonyDriver",
    "TruncatedHeaderError",
    "message_text",
]
