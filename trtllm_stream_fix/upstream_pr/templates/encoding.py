# SPDX-License-Identifier: Apache-2.0
"""The gpt-oss Harmony encoding, loaded once per process."""

from __future__ import annotations

import functools

from openai_harmony import HarmonyEncoding, HarmonyEncodingName, load_harmony_encoding


@functools.lru_cache(maxsize=1)
def load_gpt_oss_encoding() -> HarmonyEncoding:
    """The gpt-oss ``HarmonyEncoding`` (the vocabulary comes from ``TIKTOKEN_ENCODINGS_BASE``)."""
    return load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)
