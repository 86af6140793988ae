# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.version``."""

__version__ = "0.0.0+realstub"
