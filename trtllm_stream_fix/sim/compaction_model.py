# SPDX-License-Identifier: Apache-2.0
"""The simulated model's answer to a compaction prompt: a deterministic summary.

It reads the prompt's Harmony messages as the model would and writes a short analysis
message, then on the ``final`` channel the user's requests (the latest
:data:`LISTED_REQUESTS`), the tool results that came back, what an earlier summary carried
over and the last answer, each cut short; the same prompt always gives the same tokens.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from openai_harmony import Message, Role

from ..compaction.prompt import COMPACTION_PROMPT
from ..compaction.window import SUMMARY_PREFIX
from ..core.harmony_tokens import RETURN
from ..encoding import PlainTextEncoder, encode_with_specials, load_gpt_oss_encoding
from .model import SyntheticOutput

LISTED_REQUESTS = 12
LISTED_RESULTS = 6
QUOTE_CHARS = 100
CARRIED_CHARS = 600
THOUGHT = (
    "The conversation is being compacted. I should list the user's requests, the tool "
    "results that still matter, and what remains."
)


def _text(message: Message) -> str:
    return "".join(getattr(c, "text", "") for c in message.content)


def _short(text: str, limit: int = QUOTE_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def summary_text(messages: Sequence[Message]) -> str:
    """The summary the simulated model writes for a compaction prompt's ``messages``."""
    users, results, carried, answers = [], [], [], []
    for message in messages:
        role, text = message.author.role, _text(message)
        if role == Role.USER and text != COMPACTION_PROMPT:
            users.append(_short(text))
        elif role == Role.TOOL:
            results.append(f"{message.author.name}: {_short(text, 60)}")
        elif role == Role.ASSISTANT and message.channel == "final":
            if text.startswith(SUMMARY_PREFIX):
                carried.append(_short(text[len(SUMMARY_PREFIX) :], CARRIED_CHARS))
            else:
                answers.append(_short(text, 160))
    lines = []
    if carried:
        lines.append(f"Earlier summary: {carried[-1]}")
    earlier = len(users) - LISTED_REQUESTS
    listed = "; ".join(users[-LISTED_REQUESTS:]) or "none"
    lines.append(
        f"User requests ({len(users)}{f', {earlier} earlier ones omitted' if earlier > 0 else ''}"
        f"): {listed}."
    )
    if results:
        lines.append(f"Tool results: {'; '.join(results[-LISTED_RESULTS:])}.")
    if answers:
        lines.append(f"Last answer: {answers[-1]}")
    lines.append("Remaining: answer the latest request if it is still open.")
    return "\n".join(lines)


def summary_output(messages: Sequence[Message]) -> SyntheticOutput:
    """The simulated generation (analysis, then the summary on ``final``) for ``messages``."""
    encoding = load_gpt_oss_encoding()
    plain = PlainTextEncoder(encoding)
    summary = summary_text(messages)
    tokens = [
        *encode_with_specials(encoding, "<|channel|>analysis<|message|>"),
        *plain.encode(THOUGHT),
        *encode_with_specials(encoding, "<|end|><|start|>assistant<|channel|>final<|message|>"),
        *plain.encode(summary),
        RETURN,
    ]
    seed = int.from_bytes(hashlib.sha256(summary.encode()).digest()[:8], "big") >> 1
    return SyntheticOutput(
        name="compaction_summary",
        seed=seed,
        generated=tuple(tokens),
        finish_reason="stop",
        stop_token_trimmed=True,
        malformed=False,
    )
