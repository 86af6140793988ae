# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.executor.request.LoRARequest`` (a request field type)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class LoRARequest:
    lora_name: str
    lora_int_id: int
    lora_path: str = ""


DEFAULT_REQUEST_PRIORITY = 0.5
