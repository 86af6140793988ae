# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.serve.web_search``: no search provider is configured."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WebSearchConfig:
    enabled: bool = False


def load_web_search_config() -> WebSearchConfig:
    return WebSearchConfig()
