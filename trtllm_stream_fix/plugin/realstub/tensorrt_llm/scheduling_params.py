# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.scheduling_params.AgentHierarchy`` (a chat request field type)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class AgentHierarchy:
    agent_id: str | None = None
    parent_id: str | None = None
