# SPDX-License-Identifier: Apache-2.0
"""Bounds on what one request may cost the local server, and prompt counting within them.

BPE over one long run of characters is quadratic and the Harmony encoder holds the GIL, so
a prompt is tokenised in pieces of at most :data:`PIECE_CHARS` characters (cut before a
space when there is one, so ordinary text counts exactly), in a worker thread: between
pieces the event loop runs, and ``/health`` keeps answering. Counting stops as soon as the
token bound is passed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..encoding import encode_with_specials
from .errors import RequestError

#: Longest piece handed to the encoder at once (a few milliseconds of BPE at most).
PIECE_CHARS = 2048


@dataclass(frozen=True)
class ServerLimits:
    """Request and connection bounds of the local server (``serve`` flags set them)."""

    #: Request body size; larger bodies get 413.
    max_body_bytes: int = 1024 * 1024
    #: Nesting depth of the request JSON; deeper bodies get 400.
    max_json_depth: int = 64
    #: Characters of input text (instructions included); more gets 413.
    max_input_chars: int = 512 * 1024
    #: Prompt tokens (gpt-oss context window); more gets 400 ``context_length_exceeded``.
    max_input_tokens: int = 131_072
    #: Seconds a connection may take to send its request head before it is closed.
    header_timeout: float = 10.0
    #: Seconds an idle keep-alive connection is kept.
    keep_alive_timeout: int = 5
    #: Largest request head (bytes) the HTTP parser buffers; more is a 400.
    max_header_bytes: int = 64 * 1024
    #: Concurrent connections + tasks before the server answers 503 (None = unbounded).
    max_concurrency: int | None = 1024

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_json_depth", "max_input_chars", "max_input_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        if self.header_timeout <= 0:
            raise ValueError("header_timeout must be > 0")


def pieces(text: str, size: int = PIECE_CHARS) -> Iterator[str]:
    """``text`` in pieces of at most ``size`` characters, cut before a run of spaces when
    there is one in the piece (the pre-tokeniser splits there too), else after ``size``."""
    start = 0
    while len(text) - start > size:
        cut = _space_cut(text, start, start + size)
        yield text[start:cut]
        start = cut
    if start < len(text):
        yield text[start:]


def _space_cut(text: str, start: int, end: int) -> int:
    """The last position in (start, end) that starts a run of spaces between two
    non-whitespace characters, else ``end``."""
    cut = text.rfind(" ", start + 1, end)
    while cut > start:
        run_end = cut + 1
        while run_end <= end and run_end < len(text) and text[run_end] == " ":
            run_end += 1
        while cut > start + 1 and text[cut - 1] == " ":
            cut -= 1
        after = text[run_end] if run_end < len(text) else " "
        if not text[cut - 1].isspace() and not after.isspace():
            return cut
        cut = text.rfind(" ", start + 1, cut)
    return end


def check_input_size(text: str, limits: ServerLimits) -> None:
    """413 when the input text is longer than ``limits.max_input_chars``."""
    check_input_length(len(text), limits)


def check_input_length(length: int, limits: ServerLimits) -> None:
    """413 when ``length`` characters of input text are more than ``limits.max_input_chars``."""
    if length > limits.max_input_chars:
        raise RequestError(
            413,
            f"input is {length} characters; this server accepts at most {limits.max_input_chars}",
            param="input",
            code="input_too_large",
        )


def count_prompt_tokens(encoding: Any, text: str, limits: ServerLimits) -> int:
    """Tokens of ``text`` (run it in a worker thread); 400 once over the token bound."""
    total = 0
    for piece in pieces(text):
        total += len(encode_with_specials(encoding, piece))
        if total > limits.max_input_tokens:
            raise RequestError(
                400,
                f"input has more than {limits.max_input_tokens} tokens (the context window)",
                param="input",
                code="context_length_exceeded",
            )
    return total
