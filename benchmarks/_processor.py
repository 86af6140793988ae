# SPDX-License-Identifier: Apache-2.0
"""Replays through a TensorRT-LLM ``ResponsesStreamingProcessor`` (plugin or real upstream)."""

from __future__ import annotations

from typing import Any


def processor_replay(kind: str, enc: Any, source_dir: str | None = None):
    return f"{kind}: not available yet"
