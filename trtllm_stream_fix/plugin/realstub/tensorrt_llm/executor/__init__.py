# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.executor``: result types and engine errors, no engine.

The tests drive the Responses modules with their own GenerationResult-like objects; these
names are imported for annotations and ``isinstance`` checks only.
"""

from .result import DetokenizedGenerationResultBase, GenerationResult, GenerationResultBase


class RequestError(RuntimeError):
    """A request the engine rejected."""


class EngineDeadError(RuntimeError):
    """The engine process died."""


class CppExecutorError(RuntimeError):
    """A fatal error of the C++ executor (``openai_server`` shuts down on it)."""


__all__ = [
    "CppExecutorError",
    "DetokenizedGenerationResultBase",
    "EngineDeadError",
    "GenerationResult",
    "GenerationResultBase",
    "RequestError",
]
