# SPDX-License-Identifier: Apache-2.0
"""Stand-in of ``tensorrt_llm.sampling_params``: only the fields the Responses path reads."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SamplingParams:
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    stop_token_ids: list[int] = field(default_factory=list)
    include_stop_str_in_output: bool = False
    return_perf_metrics: bool = False

    def _get_stop_words(self) -> list[list[int]]:
        """Every stop token id is a one-token stop word (as upstream)."""
        return [[token] for token in self.stop_token_ids]
