# SPDX-License-Identifier: Apache-2.0
"""Batch Harmony driver: the reference driver's facts at a fraction of its per-token cost.

``FastHarmonyDriver`` has ``HarmonyDriver``'s interface and produces exactly its facts and
errors, but handles a whole engine response at once: the tokens that matter
(stop tokens in content, ``<|message|>`` in a header, ``<|start|>`` between messages) are
found in one scan (numpy for long batches), each run of content tokens is decoded with one
join over a token → bytes table built once per encoding, and headers are parsed here.
The content decoder reproduces openai_harmony's per-token UTF-8 rules (``harmony_utf8``: an
incomplete sequence waits for the next token; one invalid sequence per token becomes U+FFFD).

openai_harmony's ``StreamableParser`` stays the reference. Whatever this module does not
handle itself (a token that is not ``<|start|>`` between messages, a header error or a
header outside the common printable-ASCII forms, a token outside the vocabulary, the end
of stream inside a header) is handed to a ``ReferenceHarmonyDriver``: the request's tokens
so far are replayed into it and it serves the rest of the request, so errors and behaviour
are the reference's own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
from openai_harmony import HarmonyEncoding, Role

from .facts import (
    NOT_CONTENT,
    Fact,
    MessageClosed,
    MessageOpened,
    NotContent,
    ParserState,
    join_text,
)
from .harmony_driver import ReferenceHarmonyDriver
from .harmony_tokens import MESSAGE, RETURN, START, STOP_TOKENS
from .harmony_utf8 import decode_invalid, decode_run, token_bytes

# Tokens at or above this id are Harmony specials (``<|return|>`` is the lowest that the
# scan must look at); below it every id is ordinary text.
_FIRST_MARK = RETURN
_NUMPY_FROM = 48  # batches at least this long are scanned with numpy
_HEADER_CACHE_SIZE = 4096
_CHANNEL_MARK = "<|channel|>"
_CONSTRAIN_MARK = "<|constrain|>"
_SIMPLE_HEADER = re.compile(r"[\x21-\x7e ]*")  # printable ASCII and spaces only
_CHANNEL_END = re.compile(r"[ <]")
_ROLES = {role.value: role for role in Role}
_ROLES_FOLDED = {value.lower() for value in _ROLES}
_INT = {int}


class _Unhandled(Exception):
    """The fast path does not decide this sequence: the reference driver takes over."""


HeaderFields = tuple[Role, str | None, str | None, str | None, str | None]


def parse_header(text: str, role: Role | None) -> HeaderFields | None:
    """``(role, author name, channel, recipient, content type)`` of a decoded header.

    ``role`` is the role given to the parser for this message (the first message of a
    generation), None when the header names it. Follows openai_harmony's header grammar for
    headers of printable ASCII and spaces; returns None for anything else and for headers
    the parser rejects (the reference decides those).
    """
    if not _SIMPLE_HEADER.fullmatch(text):
        return None
    channel = None
    at = text.find(_CHANNEL_MARK)
    if at >= 0:
        after = text[at + len(_CHANNEL_MARK) :]
        match = _CHANNEL_END.search(after)
        end = match.start() if match else len(after)
        if end == 0:
            return None  # channel marker without a value: the parser's error
        channel = after[:end]
        text = text[:at] + after[end:]
    text = text.strip(" ")
    if _CONSTRAIN_MARK in text:
        text = text.replace(_CONSTRAIN_MARK, " " + _CONSTRAIN_MARK).strip(" ")
    parts = text.split()
    name = None
    if role is None:
        if not parts:
            return None
        name = parts[0]
        role = _ROLES.get(name)
        if role is None:
            if name.lower() in _ROLES_FOLDED:
                return None  # a role in another case: left to the reference
            if len(parts) > 1 or name.startswith("to="):
                del parts[0]
                role = Role.TOOL
            else:
                return None  # unknown role: the parser's error
    if parts and parts[0] == role.value:
        del parts[0]
    recipient = content_type = None
    if parts:
        count = len(parts)
        last = parts.pop()
        if last.startswith("to="):
            recipient = last[3:]
        elif count == 1:
            recipient = last  # a lone part is the recipient, even "<|constrain|>json"
        else:
            content_type = last
            if parts:
                raw = parts.pop()
                recipient = raw[3:] if raw.startswith("to=") else raw
        if parts:
            return None  # tokens left in the header: the parser's error
    return role, name if role is Role.TOOL else None, channel, recipient, content_type


def _marks(tokens: list[int]) -> list[int]:
    """Indices of the tokens the walk must look at: specials and ids outside the vocabulary."""
    if not tokens:
        return []
    if len(tokens) >= _NUMPY_FROM:
        array = np.asarray(tokens)
        marks: list[int] = np.flatnonzero((array >= _FIRST_MARK) | (array < 0)).tolist()
        return marks
    if max(tokens) < _FIRST_MARK and min(tokens) >= 0:
        return []
    return [i for i, t in enumerate(tokens) if t >= _FIRST_MARK or t < 0]


def _int_list(token_ids: Sequence[int]) -> list[int] | None:
    """``token_ids`` as a list of Python ints (numpy arrays and scalars accepted), or None."""
    if isinstance(token_ids, np.ndarray):
        return token_ids.tolist() if token_ids.dtype.kind in "iu" else None
    tokens = list(token_ids)
    if tokens and set(map(type, tokens)) != _INT:
        try:
            array = np.asarray(tokens)
        except (TypeError, ValueError, OverflowError):
            return None
        return array.tolist() if array.ndim == 1 and array.dtype.kind in "iu" else None
    return tokens


class FastHarmonyDriver:
    """``HarmonyDriver``'s facts for whole token batches (see the module docstring)."""

    def __init__(self, encoding: HarmonyEncoding, role: Role | None = Role.ASSISTANT) -> None:
        self._encoding = encoding
        self._role = role
        self._table = token_bytes(encoding)
        self._vocab = len(self._table)
        self._state = ParserState.HEADER if role is not None else ParserState.EXPECT_START
        self._in_content = False  # self._state is ParserState.CONTENT, for the per-token path
        self._next_role: Role | None = role
        self._tokens: list[int] = []  # every token fed: replayed on a hand-over
        self._header: list[int] = []
        self._pending = b""  # bytes of an unfinished UTF-8 sequence
        self._header_cache: dict[tuple[bool, tuple[int, ...]], HeaderFields | None] = {}
        self._reference: ReferenceHarmonyDriver | None = None

    # -- HarmonyDriver's interface ------------------------------------------------------

    @property
    def state(self) -> ParserState:
        return self._reference.state if self._reference is not None else self._state

    @property
    def tokens_fed(self) -> int:
        """Tokens the parser accepted so far."""
        return self._reference.tokens_fed if self._reference is not None else len(self._tokens)

    @property
    def handed_over(self) -> bool:
        """Whether the reference driver serves this request now."""
        return self._reference is not None

    def is_content_token(self, token: int) -> bool:
        """Whether ``token`` only adds text to the open message (``content_delta`` may take it)."""
        if self._in_content:
            return token not in STOP_TOKENS and 0 <= token < self._vocab
        return self._reference is not None and self._reference.is_content_token(token)

    def take_content(self, token: int) -> str | NotContent | None:
        """The per-token path's one call: ``is_content_token`` and ``content_delta`` inlined.

        The token's delta (None while text is held back) or ``NOT_CONTENT``.
        """
        if not self._in_content:
            reference = self._reference
            if reference is None:
                return NOT_CONTENT
            return reference.take_content(token)
        try:
            if token in STOP_TOKENS or not 0 <= token < self._vocab:
                return NOT_CONTENT
            data = self._table[token]
        except TypeError:  # not an integer: ``feed`` reports it as no token id, as at any split
            return NOT_CONTENT
        self._tokens.append(token)
        pending = self._pending
        if pending:
            data = pending + data
            self._pending = b""
        try:
            return data.decode() or None
        except UnicodeDecodeError:
            delta, self._pending = decode_invalid(data)
        return delta or None

    def content_delta(self, token: int) -> str | None:
        """One content token (precondition: ``is_content_token(token)``): its delta or None."""
        delta = self.take_content(token)
        return None if delta is NOT_CONTENT else delta

    def feed(self, token_ids: Sequence[int], facts: list[Fact] | None = None) -> list[Fact]:
        """Facts of ``token_ids`` appended to ``facts``, exactly as ``HarmonyDriver.feed``."""
        out: list[Fact] = [] if facts is None else facts
        if self._reference is not None:
            return self._reference.feed(token_ids, out)
        tokens = _int_list(token_ids)
        local: list[Fact] = []
        try:
            if tokens is None:
                raise _Unhandled
            self._walk(tokens, local)
        except (_Unhandled, TypeError, ValueError, IndexError, OverflowError):
            return self._hand_over().feed(token_ids if tokens is None else tokens, out)
        self._tokens += tokens
        out += local
        return out

    def finish(self, facts: list[Fact] | None = None) -> list[Fact]:
        """End of stream: close a message whose stop token never arrived (see HarmonyDriver)."""
        out: list[Fact] = [] if facts is None else facts
        if self._reference is not None:
            return self._reference.finish(out)
        state = self._state
        if state is ParserState.HEADER:
            return self._hand_over().finish(out)  # the reference's error for a cut header
        self._state = ParserState.EXPECT_START
        self._in_content = False
        if state is ParserState.CONTENT:
            self._close(None, len(self._tokens), out)
        return out

    # -- the walk over one batch ----------------------------------------------------------

    def _walk(self, tokens: list[int], out: list[Fact]) -> None:
        n = len(tokens)
        marks = _marks(tokens)
        if not marks and n and self._state is ParserState.CONTENT:
            # The common engine response: ordinary text only.
            self._text(tokens, out)
            return
        state = self._state
        fed = len(self._tokens)
        start = 0  # first token of the segment not yet consumed
        vocab = self._vocab
        marks.append(n)
        for k in marks:
            token = tokens[k] if k < n else None
            if token is not None and (token < 0 or token >= vocab):
                raise _Unhandled
            if state is ParserState.CONTENT:
                if token is not None and token not in STOP_TOKENS:
                    continue  # a special inside content is text
                if k > start:
                    self._text(tokens[start:k], out)
                if token is None:
                    break
                self._close(token, fed + k + 1, out)
                state = ParserState.EXPECT_START
                start = k + 1
            elif state is ParserState.HEADER:
                if token is not None and token != MESSAGE:
                    continue
                self._header += tokens[start:k]
                if token is None:
                    break
                self._opened(fed + k + 1, out)
                state = ParserState.CONTENT
                start = k + 1
            else:  # EXPECT_START: only <|start|> may follow a message
                if start >= n:
                    break
                if k != start or token != START:
                    raise _Unhandled  # the parser's error
                state = ParserState.HEADER
                self._header = []
                start = k + 1
        self._state = state
        self._in_content = state is ParserState.CONTENT

    def _opened(self, at: int, out: list[Fact]) -> None:
        role = self._next_role
        header = self._header
        key = (role is None, tuple(header))
        cache = self._header_cache
        if key in cache:
            fields = cache[key]
        else:
            try:
                text = b"".join([self._table[t] for t in header]).decode()
            except (UnicodeDecodeError, IndexError):
                fields = None
            else:
                fields = parse_header(text, role)
            if len(cache) < _HEADER_CACHE_SIZE:
                cache[key] = fields
        if fields is None:
            raise _Unhandled
        self._next_role = None
        self._pending = b""
        role, _name, channel, recipient, content_type = fields
        out.append(MessageOpened(channel, recipient, content_type, at, role))

    def _close(self, stop: int | None, at: int, out: list[Fact]) -> None:
        # Bytes still pending are what the parser settles at the close (U+FFFD for what is
        # not valid UTF-8): joined to the message's last delta, as the reference does.
        settled = self._pending.decode("utf-8", "replace") if self._pending else ""
        if settled:
            join_text(out, settled)
        out.append(MessageClosed(stop, at, bool(settled)))
        self._pending = b""

    def _text(self, run: list[int], out: list[Fact]) -> None:
        """Decode a run of content tokens; its delta joins a ContentDelta at the end of ``out``."""
        table = self._table
        data = b"".join([table[t] for t in run])
        if self._pending:
            data = self._pending + data
        try:
            text = data.decode()
            self._pending = b""
        except UnicodeDecodeError as exc:
            if exc.reason == "unexpected end of data" and exc.end == len(data):
                # Only the last character is unfinished: it waits for the next token.
                text = data[: exc.start].decode()
                self._pending = data[exc.start :]
            else:
                text = self._decode_each(run)
        if text:
            join_text(out, text)

    def _decode_each(self, run: list[int]) -> str:
        """The parser's per-token decoding of a run holding invalid UTF-8."""
        text, self._pending = decode_run(self._table, run, self._pending)
        return text

    # -- hand-over to the reference -------------------------------------------------------

    def _hand_over(self) -> ReferenceHarmonyDriver:
        """A reference driver that has seen this request's tokens: it serves the rest."""
        reference = ReferenceHarmonyDriver(self._encoding, self._role)
        if self._tokens:
            reference.feed(self._tokens)
        self._reference = reference
        self._in_content = False  # is_content_token asks the reference from now on
        self._tokens = []
        return reference
