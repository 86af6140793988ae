# SPDX-License-Identifier: Apache-2.0
"""Stand-in of ``tensorrt_llm.executor.postproc_worker`` (argument containers only)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional


@dataclass(kw_only=True)
class PostprocArgs:
    first_iteration: bool = True
    num_prompt_tokens: Optional[int] = None
    tokenizer: Optional[Any] = None


@dataclass(kw_only=True)
class PostprocParams:
    post_processor: Callable[[Any, PostprocArgs], Any] = None
    postproc_args: PostprocArgs = None
