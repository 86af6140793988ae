# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm._torch`` (the PyTorch backend; only its config loader)."""
