# SPDX-License-Identifier: Apache-2.0
"""A Harmony driver's completed messages, rebuilt from the facts it reports (tests only).

The drivers keep no messages: production reads their facts alone. ``RecordingDriver`` wraps
a driver, forwards every call and rebuilds each completed message from what the driver
reported (``MessageOpened``, the text of its ``ContentDelta`` facts and per-token deltas,
``MessageClosed``) as an ``openai_harmony.Message``, comparable with
``StreamableParser.messages``. Facts carry no author name (only a tool's message has one),
so a rebuilt message has none.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from openai_harmony import Author, Message, TextContent

from ..core.facts import NOT_CONTENT, ContentDelta, Fact, MessageOpened


class RecordingDriver:
    """``driver`` plus ``messages``: the completed messages its facts describe."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver
        self.messages: list[Message] = []
        self._open: MessageOpened | None = None
        self._text: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.driver, name)  # phase, tokens_fed, is_content_token, ...

    def take_content(self, token: int) -> Any:
        delta = self.driver.take_content(token)
        if delta is not NOT_CONTENT and delta:
            self._text.append(delta)
        return delta

    def content_delta(self, token: int) -> str | None:
        delta = self.driver.content_delta(token)
        if delta:
            self._text.append(delta)
        return delta

    def feed(self, token_ids: Sequence[int], facts: list[Fact] | None = None) -> list[Fact]:
        out: list[Fact] = [] if facts is None else facts
        return self._recorded(lambda: self.driver.feed(token_ids, out), out)

    def finish(self, facts: list[Fact] | None = None) -> list[Fact]:
        out: list[Fact] = [] if facts is None else facts
        return self._recorded(lambda: self.driver.finish(out), out)

    def _recorded(self, call: Callable[[], list[Fact]], out: list[Fact]) -> list[Fact]:
        """``call()``, which appends facts to ``out``: what they say recorded, even on an error.

        A driver may join text to the ``ContentDelta`` that ended ``out`` (``join_text``):
        that text is recorded too.
        """
        start = len(out)
        last = out[-1] if out else None
        try:
            return call()
        finally:
            if start and out[start - 1] is not last:
                joined = out[start - 1]
                assert type(joined) is ContentDelta and type(last) is ContentDelta
                self._text.append(joined.text[len(last.text) :])
            for fact in out[start:]:
                self._record(fact)

    def _record(self, fact: Fact) -> None:
        if type(fact) is MessageOpened:
            self._open, self._text = fact, []
        elif type(fact) is ContentDelta:
            self._text.append(fact.text)
        else:
            opened = self._open
            assert opened is not None  # a close follows its open
            self.messages.append(
                Message(
                    author=Author(role=opened.role, name=None),
                    content=[TextContent(text="".join(self._text))],
                    channel=opened.channel,
                    recipient=opened.recipient,
                    content_type=opened.content_type,
                )
            )
            self._open, self._text = None, []
