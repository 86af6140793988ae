# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.inputs`` (multimodal input handling; off the Harmony path)."""
