# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.executor.postproc_worker.PostprocArgs`` (fields the
post-processors read); the worker process itself is emulated by pickling in the tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(kw_only=True)
class PostprocArgs:
    first_iteration: bool = True
    num_prompt_tokens: int | None = None
    num_prompt_tokens_offset: int = 0
    tokenizer: Any = None


@dataclass(kw_only=True)
class PostprocParams:
    """What ``generate_async`` hands a PostprocWorker: the post-processor and its args."""

    post_processor: Any = None
    postproc_args: Any = None
