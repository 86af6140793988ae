# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.serve.web_search``: no search provider is configured."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WebSearchConfig:
    enabled: bool = False


def load_web_search_config() -> WebSearchConfig:
    return WebSearchConfig()


@dataclass(frozen=True)
class WebSearchToolSpec:
    """A request's ``web_search`` tool, reduced (``responses_web_search`` builds one)."""

    name: str = "web_search"
    type: str | None = None
    max_uses: int | None = None
    allowed_domains: tuple[str, ...] = ()
    blocked_domains: tuple[str, ...] = ()
