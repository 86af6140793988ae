# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.visual_gen`` (diffusion serving; off the Responses path)."""
