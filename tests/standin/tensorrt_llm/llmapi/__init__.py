# SPDX-License-Identifier: Apache-2.0
"""Stand-in of ``tensorrt_llm.llmapi`` (re-exports ``SamplingParams``)."""

from ..sampling_params import SamplingParams

__all__ = ["SamplingParams"]
