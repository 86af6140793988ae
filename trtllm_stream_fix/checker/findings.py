# SPDX-License-Identifier: Apache-2.0
"""Bounded lists of violations or warnings: a hostile stream cannot grow the report.

The first :data:`EXAMPLES_PER_RULE` findings of each rule are kept (each cut to
:data:`MAX_TEXT` characters); later ones are only counted, and :meth:`Findings.lines`
ends with one line per such rule giving the count. Work per finding is O(1).
"""

from __future__ import annotations

from collections import Counter

__all__ = ["EXAMPLES_PER_RULE", "MAX_TEXT", "Findings", "FindingsView", "clip"]

#: Findings of one rule kept verbatim; the rest are counted.
EXAMPLES_PER_RULE = 10
#: Characters of one finding's text.
MAX_TEXT = 500


def clip(text: str, limit: int = MAX_TEXT) -> str:
    """``text`` cut to ``limit`` characters, saying how many were cut."""
    if len(text) <= limit:
        return text
    return f"{text[: limit - 40]}... ({len(text) - limit + 40} more characters)"


class Findings:
    """Findings of one stream, in order, at most ``per_rule`` kept for each rule."""

    def __init__(self, noun: str, per_rule: int = EXAMPLES_PER_RULE) -> None:
        self.noun = noun
        self.per_rule = per_rule
        self.texts: list[str] = []
        #: Rule of each kept text (same length as ``texts``).
        self.rules: list[str] = []
        self.counts: Counter[str] = Counter()

    def __bool__(self) -> bool:
        return bool(self.texts)

    def add(self, rule: str, text: str) -> bool:
        """Record one finding; False when it was only counted."""
        self.counts[rule] += 1
        if self.counts[rule] > self.per_rule:
            return False
        self.texts.append(clip(text))
        self.rules.append(rule)
        return True

    def _overflow(self) -> list[tuple[str, int]]:
        return [(rule, n) for rule, n in self.counts.items() if n > self.per_rule]

    def lines(self) -> list[str]:
        """The kept texts, then one line per rule with findings that were only counted."""
        return self.texts + [
            f"[{rule}] {n - self.per_rule} more {self.noun} of this rule not listed "
            f"({n} in all, the first {self.per_rule} above)"
            for rule, n in self._overflow()
        ]

    def line_rules(self) -> list[str]:
        """The rule of each line of :meth:`lines`."""
        return self.rules + [rule for rule, _ in self._overflow()]


class FindingsView:
    """A checker's :attr:`violations`, :attr:`rules` and :attr:`warnings`, from its findings."""

    _violations: Findings
    _warnings: Findings

    @property
    def violations(self) -> list[str]:
        """Violations so far (at most a few per rule, then one line with the count)."""
        return self._violations.lines()

    @property
    def rules(self) -> list[str]:
        """The rule code of each line of :attr:`violations`."""
        return self._violations.line_rules()

    @property
    def warnings(self) -> list[str]:
        """Warnings so far, bounded like :attr:`violations`."""
        return self._warnings.lines()
