# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm._torch.pyexecutor.config_utils``: the model config the server
reads is that of gpt-oss (``model_type`` "gpt_oss" selects the Harmony paths)."""

from __future__ import annotations

from typing import Any


class GptOssConfig:
    model_type = "gpt_oss"

    def __init__(self) -> None:
        self.model_type = "gpt_oss"
        self.vocab_size = 201088


def load_pretrained_config(path: Any, **kwargs: Any) -> GptOssConfig:
    return GptOssConfig()
