# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.llmapi.tokenizer`` (annotations only; Harmony uses the
openai_harmony encoding)."""


class TokenizerBase:
    pass


class TransformersTokenizer(TokenizerBase):
    pass


def load_hf_tokenizer(model_dir: str | None = None, **kwargs: object) -> None:
    """No Hugging Face tokenizer on CPU: the Harmony Responses post-processors do not
    detokenize (a ``PostprocWorker`` loads one with this; it gets None)."""
    return None
