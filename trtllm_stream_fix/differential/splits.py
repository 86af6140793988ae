# SPDX-License-Identifier: Apache-2.0
"""The engine-response splits the differentials stream every output with, and their counts."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..sim.model import SyntheticOutput

FIXED_SPLITS: tuple[int, ...] = (1, 2, 3, 7, 20)
NUMPY_SPLIT = "numpy"  # 5 tokens per response, each batch a numpy int64 array
COUNTS = (
    "identical",
    "sdk_accepted",
    "strict_passed",
    "final_matches_stream",
    "nonstreaming_matches",
)


@dataclass
class Tally:
    """Counts out of ``streams`` for one implementation (both differentials' tally)."""

    identical: int = 0
    sdk_accepted: int = 0
    strict_passed: int = 0
    final_matches_stream: int = 0
    nonstreaming_matches: int = 0
    raised: int = 0
    #: Streams whose fast-parser and reference-parser runs agree (the differential's own
    #: comparison of their outputs); counted for ours only.
    fast_matches_reference: int | None = None
    examples: list[str] = field(default_factory=list)

    def as_counts(self) -> dict[str, int]:
        counts = {name: getattr(self, name) for name in COUNTS}
        if self.fast_matches_reference is not None:
            counts["fast_matches_reference"] = self.fast_matches_reference
        return counts


def splits_for(output: SyntheticOutput) -> list[int | random.Random | str]:
    """1 (the reference), 2, 3, 7, 20, random 1-25, and 5 as numpy arrays per response."""
    return [*FIXED_SPLITS, random.Random(output.seed * 7919 + 1), NUMPY_SPLIT]


def copy_split(split: Any) -> Any:
    """``split`` itself, or a copy of a ``random.Random`` (so each stream draws the same)."""
    if isinstance(split, random.Random):
        copy = random.Random()
        copy.setstate(split.getstate())
        return copy
    return split


def first_difference(a: Sequence[Any], b: Sequence[Any]) -> str | None:
    """Where two traces or event lists part, or None when they are equal."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"at {i}: reference {x!r:.300} / fast {y!r:.300}"
    if len(a) != len(b):
        return f"lengths differ: reference {len(a)}, fast {len(b)}"
    return None
