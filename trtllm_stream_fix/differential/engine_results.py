# SPDX-License-Identifier: Apache-2.0
"""Engine results as the Responses path reads them, and a processor built as the handler does.

``Result`` is a ``GenerationResult`` mutated in place per engine response (as the executor
mutates it), with the trimmed stop token already absent from ``token_ids_diff``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

MODEL = "gpt-oss-20b"
CREATED = 1_700_000_000
PROMPT = [200006, 1428, 200008, 3686, 200007, 200006, 173781]  # user "hi", then assistant


@dataclass
class Output:
    """``CompletionOutput`` as the Responses code reads it."""

    index: int = 0
    token_ids: list[int] = field(default_factory=list)
    finish_reason: str | None = None
    stop_reason: int | str | None = None
    disaggregated_params: Any = None
    _last_token_ids_len: int = 0

    @property
    def token_ids_diff(self) -> list[int]:
        return self.token_ids[self._last_token_ids_len :]


@dataclass
class Result:
    """``GenerationResult`` mutated in place per engine response."""

    prompt_token_ids: list[int] = field(default_factory=lambda: list(PROMPT))
    id: int = 1
    cached_tokens: int = 0
    _done: bool = False
    outputs: list[Output] = field(default_factory=lambda: [Output()])

    def apply(self, diff: Sequence[int], finished: bool, finish_reason: str | None) -> None:
        """The next engine response: ``diff`` appended, finished or not."""
        output = self.outputs[0]
        output._last_token_ids_len = len(output.token_ids)
        output.token_ids.extend(diff)
        self._done = finished
        output.finish_reason = finish_reason


def events_of(frames: Iterable[str]) -> list[dict[str, Any]]:
    """The JSON events of SSE frames (one or more ``data:`` lines each)."""
    return [
        json.loads(line[len("data: ") :])
        for frame in frames
        for line in frame.splitlines()
        if line.startswith("data: ")
    ]


def streaming_processor(
    request: Any, sampling: Any, *, conversation_store: Any = None, enable_store: bool = False
) -> tuple[Any, Any]:
    """The processor and post-processor args of one streamed request, as the handler builds
    them (the processor class looked up now, so a patched binding is used)."""
    from tensorrt_llm.serve import postprocess_handlers, responses_utils

    processor = responses_utils.ResponsesStreamingProcessor(
        request=request,
        sampling_params=sampling,
        model_name=MODEL,
        create_time=CREATED,
        conversation_store=conversation_store,
        enable_store=enable_store,
        use_harmony=True,
        reasoning_parser="gpt_oss",
    )
    args = postprocess_handlers.ResponsesAPIPostprocArgs(
        model=MODEL,
        request=request,
        sampling_params=sampling,
        use_harmony=True,
        reasoning_parser="gpt_oss",
        streaming_processor=processor,
    )
    return processor, args
