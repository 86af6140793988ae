# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm._torch.pyexecutor``."""
