# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.bindings.executor``: the engine's ``Response`` as a
``PostprocWorker`` reads it (``client_id``, ``result.is_final``, no logits), carrying one
engine response of new tokens for the harness's record (``realstub.workers.Record``)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Result:
    """``tllm.Result``: this response's new tokens, whether it is the last, and why."""

    token_ids_diff: list[int] = field(default_factory=list)
    is_final: bool = False
    finish_reason: str | None = None
    context_logits: None = None
    generation_logits: None = None


@dataclass
class Response:
    """``tllm.Response``: one engine response for the request ``client_id``."""

    client_id: int
    result: Result
