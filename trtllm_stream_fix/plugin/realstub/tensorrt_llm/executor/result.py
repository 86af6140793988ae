# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.executor.result`` (names only; the engine is not simulated)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Logprob:
    logprob: float
    rank: int | None = None


TokenLogprobs = list


class GenerationResultBase:
    """Upstream's per-request result; here only a type for annotations."""


class DetokenizedGenerationResultBase(GenerationResultBase):
    pass


class GenerationResult(GenerationResultBase):
    pass
