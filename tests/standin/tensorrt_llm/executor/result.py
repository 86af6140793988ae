# SPDX-License-Identifier: Apache-2.0
"""Stand-in of ``tensorrt_llm.executor.result``.

``CompletionOutput.token_ids_diff`` is ``token_ids[_last_token_ids_len:]``; each engine
response first records the old length, then extends ``token_ids``. On the last response a
stop-word finish trims the stop token unless ``include_stop_str_in_output``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..sampling_params import SamplingParams


@dataclass
class CompletionOutput:
    index: int
    text: str = ""
    token_ids: list[int] = field(default_factory=list)
    finish_reason: str | None = None
    stop_reason: int | str | None = None
    disaggregated_params: Any = None  # a generation-only result: the request's, ctx_usage too
    _last_text_len: int = field(default=0, init=False, repr=False)
    _last_token_ids_len: int = field(default=0, init=False, repr=False)
    _postprocess_result: Any = None

    @property
    def length(self) -> int:
        return len(self.token_ids)

    @property
    def text_diff(self) -> str:
        return self.text[self._last_text_len :]

    @property
    def token_ids_diff(self) -> list[int]:
        return self.token_ids[self._last_token_ids_len :]


class GenerationResult:
    """One request's result, updated in place by every engine response."""

    def __init__(
        self, id: int, sampling_params: SamplingParams, prompt_token_ids: list[int] | None = None
    ) -> None:
        self.id = id
        self.sampling_params = sampling_params
        self.prompt_token_ids = list(prompt_token_ids or [])
        self._done = False
        self._outputs = [CompletionOutput(0)]

    @property
    def outputs(self) -> list[CompletionOutput]:
        return self._outputs

    @property
    def finished(self) -> bool:
        return self._done

    def _handle_sequence(
        self,
        new_token_ids: Sequence[int],
        *,
        done: bool = False,
        finish_reason: str | None = None,
        text: str = "",
    ) -> None:
        """Apply one engine response: diff bookkeeping, then stop-word trimming on done."""
        output = self._outputs[0]
        output._last_token_ids_len = len(output.token_ids)
        output._last_text_len = len(output.text)
        output.token_ids.extend(new_token_ids)
        output.text += text
        self._done = done
        if not done:
            return
        output.finish_reason = finish_reason
        if finish_reason != "stop" or self.sampling_params.include_stop_str_in_output:
            return
        for stop_ids in self.sampling_params._get_stop_words():
            if output.token_ids[-len(stop_ids) :] == stop_ids:
                output.stop_reason = stop_ids[0]
                output.token_ids = output.token_ids[: -len(stop_ids)]
                break
