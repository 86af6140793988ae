# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.serve.tool_parser`` (text tool parsers; non-Harmony path)."""
