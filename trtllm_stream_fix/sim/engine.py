# SPDX-License-Identifier: Apache-2.0
"""Simulated gpt-oss engine: replays synthetic generations as TensorRT-LLM streams them.

Each request is mapped deterministically to one synthetic generation (a named scenario, an
explicit seed, or a hash of the request input), so the same request yields the same tokens
at every ``stream_interval``. Tokens arrive in batches of ``stream_interval`` plus 0..d
accepted draft tokens, the trimmed stop token is missing from the last batch, and
``max_output_tokens`` cuts the generation with finish reason ``length``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import random
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..testing.synthetic import (
    NAMED_SCENARIOS,
    EngineResponse,
    SyntheticOutput,
    engine_responses,
    generate_output,
    named_output,
)


@dataclass(frozen=True)
class EngineConfig:
    """How the simulated engine batches and paces tokens."""

    stream_interval: int = 1
    #: Each engine response carries 0..max_draft_tokens extra accepted draft tokens.
    max_draft_tokens: int = 0
    #: Generation speed in tokens per second; 0 = as fast as possible.
    tokens_per_second: float = 0.0
    #: Mixed into the input hash, so one server can serve a different corpus.
    seed: int = 0
    #: Scenario served when a request names none (``None`` = derived from the input).
    default_scenario: str | None = None

    def __post_init__(self) -> None:
        if self.stream_interval < 1:
            raise ValueError("stream_interval must be >= 1")
        if self.max_draft_tokens < 0:
            raise ValueError("max_draft_tokens must be >= 0")
        if self.tokens_per_second < 0:
            raise ValueError("tokens_per_second must be >= 0")
        if self.default_scenario is not None and self.default_scenario not in NAMED_SCENARIOS:
            raise ValueError(f"unknown scenario {self.default_scenario!r}")


@dataclass(frozen=True)
class Generation:
    """The tokens one request produces and how the engine ends them."""

    output: SyntheticOutput
    batch_seed: int

    @property
    def delivered(self) -> tuple[int, ...]:
        return self.output.delivered

    @property
    def finish_reason(self) -> str:
        return self.output.finish_reason


def input_seed(request_input: Any, base_seed: int = 0) -> int:
    """A stable 63-bit seed from the request input (str or item list)."""
    text = json.dumps(request_input, sort_keys=True, ensure_ascii=False, default=str)
    digest = hashlib.sha256(f"{base_seed}:{text}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def ordinary_output(seed: int) -> SyntheticOutput:
    """The first generation from ``seed`` on that parses and ends with a stop token.

    A request that names no scenario or seed gets what a healthy model produces; explicit
    seeds reach every scenario (length and header cuts, malformed Harmony).
    """
    while True:
        output = generate_output(seed)
        if output.finish_reason == "stop" and not output.malformed:
            return output
        seed += 1


def cut_output(output: SyntheticOutput, max_output_tokens: int | None) -> SyntheticOutput:
    """``output`` limited to ``max_output_tokens`` generated tokens (finish reason length)."""
    if max_output_tokens is None or len(output.generated) <= max_output_tokens:
        return output
    return dataclasses.replace(
        output,
        generated=output.generated[:max_output_tokens],
        finish_reason="length",
        stop_token_trimmed=False,
    )


class SimulatedEngine:
    """Deterministic stand-in for a TensorRT-LLM gpt-oss executor."""

    def __init__(self, config: EngineConfig = EngineConfig()) -> None:
        self.config = config

    def select(
        self,
        request_input: Any,
        *,
        scenario: str | None = None,
        seed: int | None = None,
        max_output_tokens: int | None = None,
    ) -> Generation:
        """The generation for a request: named ``scenario``, explicit ``seed`` or input hash
        (then an ordinary generation, see :func:`ordinary_output`).

        Raises ValueError for an unknown scenario.
        """
        scenario = scenario or self.config.default_scenario
        if scenario is not None:
            output = named_output(scenario)
            batch_seed = input_seed(request_input, self.config.seed)
        elif seed is not None:
            output, batch_seed = generate_output(seed), seed
        else:
            output = ordinary_output(input_seed(request_input, self.config.seed))
            batch_seed = output.seed
        return Generation(cut_output(output, max_output_tokens), batch_seed)

    def responses(
        self, generation: Generation, stream_interval: int | None = None
    ) -> list[EngineResponse]:
        """The engine responses of ``generation`` (batching fixed by its seed)."""
        interval = stream_interval or self.config.stream_interval
        if interval < 1:
            raise ValueError("stream_interval must be >= 1")
        total = len(generation.output.generated)
        if self.config.max_draft_tokens == 0:
            return engine_responses(generation.output, interval)
        rng = random.Random(generation.batch_seed ^ interval)
        sizes: list[int] = []
        covered = 0
        while covered < total:
            size = interval + rng.randint(0, self.config.max_draft_tokens)
            sizes.append(size)
            covered += size
        return engine_responses(generation.output, sizes)

    async def stream(
        self, generation: Generation, stream_interval: int | None = None
    ) -> AsyncIterator[EngineResponse]:
        """Yield engine responses, paced at ``tokens_per_second`` when it is set."""
        rate = self.config.tokens_per_second
        for response in self.responses(generation, stream_interval):
            if rate > 0:
                await asyncio.sleep(max(len(response.token_ids_diff), 1) / rate)
            else:
                await asyncio.sleep(0)  # let other streams run between responses
            yield response


def request_selection(body: Mapping[str, Any]) -> dict[str, Any]:
    """``scenario`` / ``seed`` chosen by a request (extension fields or ``metadata``)."""
    metadata = body.get("metadata") or {}
    scenario = body.get("scenario") or metadata.get("scenario")
    seed = body.get("seed", metadata.get("seed"))
    return {"scenario": scenario, "seed": int(seed) if seed is not None else None}
