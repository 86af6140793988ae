# SPDX-License-Identifier: Apache-2.0
"""Stand-in of ``tensorrt_llm.executor.postproc_worker`` (argument containers only)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(kw_only=True)
class PostprocArgs:
    first_iteration: bool = True
    num_prompt_tokens: int | None = None
    tokenizer: Any | None = None


@dataclass(kw_only=True)
class PostprocParams:
    post_processor: Callable[[Any, PostprocArgs], Any] = None
    postproc_args: PostprocArgs = None
