# SPDX-License-Identifier: Apache-2.0
"""A compaction generated through an engine shaped as TensorRT-LLM's ``generate_async``
(async-iterable engine responses with ``outputs[0].token_ids_diff``, ``_done`` and
``finish_reason``): the prompt's tokens reach the engine, the summary comes back sealed."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from cryptography.fernet import Fernet

from trtllm_stream_fix.compaction.blob import BlobCodec
from trtllm_stream_fix.compaction.compactor import Compactor
from trtllm_stream_fix.compaction.upstream_engine import engine_generate
from trtllm_stream_fix.sim.compaction_model import summary_output

pytestmark = pytest.mark.cpu_only


@dataclass
class SamplingParams:
    max_tokens: int | None = None
    stop_token_ids: list[int] = field(default_factory=list)
    detokenize: bool = True


class FakeGenerator:
    """``generate_async`` as upstream's LLM has it, answering with the simulated summary."""

    def __init__(self, interval: int = 7) -> None:
        self.interval = interval
        self.calls: list[dict[str, Any]] = []
        self.messages: Any = None

    def generate_async(self, *, inputs, sampling_params, streaming):
        self.calls.append({"inputs": inputs, "params": sampling_params, "streaming": streaming})
        tokens = summary_output(self.messages).delivered

        async def responses():
            for start in range(0, len(tokens), self.interval):
                done = start + self.interval >= len(tokens)
                output = SimpleNamespace(
                    token_ids_diff=tokens[start : start + self.interval],
                    finish_reason="stop" if done else None,
                )
                yield SimpleNamespace(outputs=[output], _done=done)

        return responses()


def test_compaction_through_generate_async(encoding):
    generator = FakeGenerator()
    generate = engine_generate(generator, SamplingParams, [200002, 200012])

    async def wrapped(prompt):
        generator.messages = prompt.messages
        async for step in generate(prompt):
            yield step

    codec = BlobCodec(Fernet.generate_key())
    compactor = Compactor(codec, encoding, wrapped)
    items = [{"role": "user", "content": "Audit the cache layer."}]
    compaction = asyncio.run(compactor.compact("gpt-oss-120b", items, None))
    (call,) = generator.calls
    assert call["streaming"] is True and call["params"].detokenize is False
    assert call["params"].stop_token_ids == [200002, 200012]
    assert len(call["inputs"]) == compaction.usage.input_tokens
    assert "Audit the cache layer." in codec.open(compaction.item["encrypted_content"], "x").summary
