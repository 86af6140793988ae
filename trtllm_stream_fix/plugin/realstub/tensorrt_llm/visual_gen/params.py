# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.visual_gen.params.MediaRole`` (a video request field type)."""

from enum import Enum


class MediaRole(str, Enum):
    FIRST_FRAME = "first_frame"
    LAST_FRAME = "last_frame"
