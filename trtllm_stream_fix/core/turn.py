# SPDX-License-Identifier: Apache-2.0
"""One gpt-oss turn: engine token batches in, message lifecycle calls out.

The skeleton both machines share (``machine.ResponsesEventMachine`` renders Responses events,
``chat_machine.ChatChunkMachine`` chat chunks): the lifecycle (``Stage``), the per-token fast
path (one ``take_content`` call per content token), the facts loop over the Harmony driver,
what each message is (``items.classify``, the function name read once), the error handling
and the token accounting. A subclass renders; its hooks get the ``OpenMessage`` and the
output list:

- ``_started()``: the opening output (``start``);
- ``_opened(message, out)`` when a header ends; it may set ``message.render``, the one call
  per content token of the fast path (``render(text)`` -> one output);
- ``_text(message, text, out)`` for a ``ContentDelta`` (``message.chunks`` has it already);
- ``_closed(message, status, out)`` when an item message ends (``status`` ``completed`` or
  ``incomplete``), and on a failure;
- ``_completed(status, finish_reason, out)``: the terminal output of a completed or
  token-limited turn; ``_failed(message, code, out)``: of a failed one;
- ``_rendered(out)``: the output list as returned (``Part`` items made ``Out``).

Lifecycle::

    NEW --start()--> STREAMING --feed(..., finished=True) | an error | fail()--> DONE

A second ``start`` raises ``LifecycleError``; so do ``feed`` and ``fail`` in NEW (on both
machines: the stream's first output is ``start()``'s). In DONE they return ``[]`` and the
driver is released. Errors never escape ``feed``: an invalid token, a function call without a name,
an unknown finish reason or an internal error ends the turn through ``_failed``.
"""

from __future__ import annotations

import abc
import enum
import logging
from collections.abc import Callable, Sequence
from typing import Any, Generic, Literal, TypeVar, cast

from .drivers import HarmonyDriver, new_driver
from .errors import HarmonyStreamError, LifecycleError, TruncatedHeaderError, TurnError
from .facts import NOT_CONTENT, ContentDelta, Fact, MessageClosed, MessageOpened
from .items import KINDS, ItemKind, KindSpec, PreambleRoute, classify, function_name

logger = logging.getLogger(__name__)

COMPLETED_REASONS = frozenset((None, "stop", "tool_calls"))
#: How a turn, or an item of it, ended.
Status = Literal["completed", "incomplete", "failed"]


def finish_status(finish_reason: str | None) -> Status:
    """Turn status for an engine finish reason: only ``length`` is a token limit."""
    if finish_reason == "length":
        return "incomplete"
    return "completed" if finish_reason in COMPLETED_REASONS else "failed"


class Stage(enum.Enum):
    """Where a machine is in its lifecycle."""

    NEW = "new"  # built: start() comes next
    STREAMING = "streaming"  # started: feed() once per engine response
    DONE = "done"  # the terminal output was emitted: nothing follows


#: What a machine emits (a Responses event, a chat frame).
Out = TypeVar("Out")
#: What its hooks put in the output list (``Out``, or a record ``_rendered`` turns into one).
Part = TypeVar("Part")


class OpenMessage(Generic[Out]):
    """The Harmony message being parsed: what it is, its text so far, what it feeds.

    ``target`` is the renderer's own handle (the Responses item record, the chat field or
    tool-call index); ``render`` the fast path's per-token call, one ``Out`` per token (None:
    nothing streamed).
    """

    __slots__ = (
        "chunks",
        "kind",
        "name",
        "opened_at",
        "phase",
        "recipient",
        "render",
        "spec",
        "target",
    )

    def __init__(
        self, kind: ItemKind, phase: str | None, recipient: str | None, name: str, at: int
    ) -> None:
        self.kind = kind
        self.spec: KindSpec | None = KINDS.get(kind)
        self.phase = phase
        self.recipient = recipient
        self.name = name  # the function name of a function call, else ""
        self.opened_at = at
        self.chunks: list[str] = []
        self.render: Callable[[str], Out] | None = None
        self.target: Any = None


class Turn(abc.ABC, Generic[Out, Part]):
    """The shared skeleton of both machines (see the module docstring).

    ``Out``: what they emit; ``Part``: what the hooks append to the output list, which
    ``_rendered`` makes ``Out`` (the Responses machine appends events; the chat machine
    frames and text runs).
    """

    #: Whether the end of stream still closes the open message when the finish reason fails
    #: the turn (its settled text then belongs to the failed item).
    _eos_on_failure = True

    def __init__(
        self, *, encoding: Any, parser: str, preambles: PreambleRoute, log_name: str
    ) -> None:
        self._driver: HarmonyDriver | None = new_driver(encoding, parser)
        self._preambles = preambles
        self._log_name = log_name
        self._message: OpenMessage[Out] | None = None
        self._output_tokens = 0
        self._reasoning_tokens = 0
        self._stage = Stage.NEW

    # -- public API ---------------------------------------------------------------------

    @property
    def stage(self) -> Stage:
        return self._stage

    @property
    def finished(self) -> bool:
        """Whether the terminal output was emitted."""
        return self._stage is Stage.DONE

    def start(self) -> list[Out]:
        """The opening output: NEW -> STREAMING."""
        if self._stage is not Stage.NEW:
            raise LifecycleError(f"start() in stage {self._stage.value!r}: a stream starts once")
        self._stage = Stage.STREAMING
        return self._started()

    def feed(
        self,
        token_ids: Sequence[int],
        *,
        finished: bool = False,
        finish_reason: str | None = None,
    ) -> list[Out]:
        """Output for one engine response (``token_ids`` = its ``token_ids_diff``).

        ``token_ids`` is any int sequence (list, tuple, numpy array). ``finished`` marks the
        last engine response; ``finish_reason`` is its reason.
        """
        if self._stage is not Stage.STREAMING:
            if self._stage is Stage.DONE:
                return []  # nothing follows the terminal output
            raise self._not_started("feed")
        out: list[Part] = []
        driver = self._driver
        assert driver is not None  # released only at DONE
        try:
            if not finished and len(token_ids) == 1:
                text = driver.take_content(token_ids[0])
                if text is not NOT_CONTENT:
                    # One content token per engine response (stream_interval 1): no facts.
                    if text:
                        message = self._message
                        assert message is not None  # content tokens belong to an open message
                        message.chunks.append(text)
                        render = message.render
                        if render is not None:
                            return [render(text)]
                    return []
            status = finish_status(finish_reason)
            facts: list[Fact] = []
            try:
                driver.feed(token_ids, facts)
                if finished and (self._eos_on_failure or status != "failed"):
                    try:
                        driver.finish(facts)  # settled text joins the last delta
                    except TruncatedHeaderError:
                        pass  # no message was opened for the cut header
            finally:
                self._apply(facts, out, "completed" if status == "completed" else "incomplete")
            if finished:
                self._finish(status, finish_reason, out)
        except HarmonyStreamError as exc:
            # The offending token counts; tokens after it were never parsed.
            reason = f"invalid Harmony token sequence: {exc}"
            self._fail(reason, out, output_tokens=exc.token_index + 1)
        except TurnError as exc:
            self._fail(str(exc), out)
        except Exception as exc:
            logger.exception("%s: internal error", self._log_name)
            self._fail(f"internal error: {type(exc).__name__}: {exc}", out)
        return self._rendered(out)

    def fail(self, message: str, code: str = "server_error") -> list[Out]:
        """End the turn now as failed (the open item incomplete)."""
        if self._stage is not Stage.STREAMING:
            if self._stage is Stage.DONE:
                return []
            raise self._not_started("fail")
        out: list[Part] = []
        self._fail(message, out, code)
        return self._rendered(out)

    # -- facts -> hooks -----------------------------------------------------------------

    def _not_started(self, method: str) -> LifecycleError:
        return LifecycleError(f"{method}() before start(): start()'s output opens the stream")

    def _apply(self, facts: list[Fact], out: list[Part], eos_status: Status) -> None:
        """Output for ``facts``; ``eos_status`` is the status of a message closed by EOS."""
        for fact in facts:
            if type(fact) is ContentDelta:
                message = self._message
                assert message is not None  # a delta follows its MessageOpened
                message.chunks.append(fact.text)
                self._text(message, fact.text, out)
            elif type(fact) is MessageOpened:
                self._open(fact, out)
            else:
                closed = cast(MessageClosed, fact)  # the one fact left
                status = "completed" if closed.stop_token is not None else eos_status
                self._close(out, status, closed.at)

    def _open(self, fact: MessageOpened, out: list[Part]) -> None:
        kind, phase = classify(fact.channel, fact.recipient, self._preambles, fact.role)
        name = ""
        if kind is ItemKind.FUNCTION_CALL:
            name = function_name(fact.recipient)
            if not name:
                raise self._nameless_call(fact)
        message: OpenMessage[Out] = OpenMessage(kind, phase, fact.recipient, name, fact.at)
        self._opened(message, out)
        self._message = message

    def _nameless_call(self, fact: MessageOpened) -> Exception:
        """The error that ends a turn whose function call has no name."""
        return HarmonyStreamError(
            f"function call without a function name (recipient {fact.recipient!r}, "
            f"header ending at position {fact.at - 1})",
            fact.at - 1,
        )

    def _close(self, out: list[Part], status: Status, at: int) -> None:
        """Close the open message with ``status``; ``at`` = tokens fed by then."""
        message, self._message = self._message, None
        if message is None or message.spec is None:
            return
        if message.spec.reasoning_tokens:
            self._reasoning_tokens += at - message.opened_at
        self._closed(message, status, out)

    # -- terminal -------------------------------------------------------------------------

    def _finish(self, status: Status, finish_reason: str | None, out: list[Part]) -> None:
        driver = self._driver
        assert driver is not None  # released only at DONE
        self._output_tokens = driver.tokens_fed
        if status == "failed":
            self._fail(f"generation ended with finish reason {finish_reason!r}", out)
            return
        self._completed(status, finish_reason, out)
        self._end()

    def _fail(
        self,
        message: str,
        out: list[Part],
        code: str = "server_error",
        *,
        output_tokens: int | None = None,
    ) -> None:
        """Close the open item as incomplete, then the failure output.

        ``output_tokens`` defaults to the tokens the parser accepted.
        """
        driver = self._driver
        assert driver is not None  # released only at DONE
        fed = driver.tokens_fed
        self._output_tokens = fed if output_tokens is None else output_tokens
        try:
            self._close(out, "incomplete", fed)
        except Exception:
            logger.exception("%s: cannot close the open item", self._log_name)
        self._failed(message, code, out)
        self._end()

    def _end(self) -> None:
        self._stage = Stage.DONE
        self._driver = None  # release the parser: per-request state ends here

    # -- rendering hooks ------------------------------------------------------------------

    @abc.abstractmethod
    def _started(self) -> list[Out]:
        """The opening output."""

    @abc.abstractmethod
    def _opened(self, message: OpenMessage[Out], out: list[Part]) -> None:
        """A header ended; may set ``message.target`` and ``message.render``."""

    @abc.abstractmethod
    def _text(self, message: OpenMessage[Out], text: str, out: list[Part]) -> None:
        """The open message's text grew by ``text`` (a ``ContentDelta``)."""

    @abc.abstractmethod
    def _closed(self, message: OpenMessage[Out], status: Status, out: list[Part]) -> None:
        """An item message ended with ``status`` (``completed`` or ``incomplete``)."""

    @abc.abstractmethod
    def _completed(self, status: Status, finish_reason: str | None, out: list[Part]) -> None:
        """The terminal output of a turn that ended ``completed`` or ``incomplete``."""

    @abc.abstractmethod
    def _failed(self, message: str, code: str, out: list[Part]) -> None:
        """The terminal output of a failed turn."""

    @abc.abstractmethod
    def _rendered(self, out: list[Part]) -> list[Out]:
        """``out`` as ``feed`` and ``fail`` return it."""
