# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.inputs.media_io.MediaModality`` (a chat request key type)."""

from enum import Enum


class MediaModality(str, Enum):
    IMAGE = "image"
    VIDEO = "video"
    AUDIO = "audio"


class BaseMediaIO:
    """Media loaders; the server only hands them its thread pool."""

    executor = None

    @classmethod
    def set_executor(cls, executor: object) -> None:
        cls.executor = executor
