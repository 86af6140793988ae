# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.llmapi.tokenizer`` (annotations only; Harmony uses the
openai_harmony encoding)."""


class TokenizerBase:
    pass


class TransformersTokenizer(TokenizerBase):
    pass
