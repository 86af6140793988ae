# SPDX-License-Identifier: Apache-2.0
"""Stand-in of ``tensorrt_llm.executor``."""

from .result import CompletionOutput, GenerationResult

__all__ = ["CompletionOutput", "GenerationResult"]
