# SPDX-License-Identifier: Apache-2.0
"""Upstream-only test files (they import ``tensorrt_llm``: never collected here)."""
