# SPDX-License-Identifier: Apache-2.0
"""Simulated gpt-oss engine: generates what the request asks for, as TensorRT-LLM streams it.

By default a request gets the turn ``turns.plan_turn`` builds from it (its tools,
``tool_choice``, ``parallel_tool_calls``, tool outputs, ``reasoning.effort``), seeded by the
request's ``seed`` or a hash of its input, so the same request yields the same tokens at every
``stream_interval``. A named ``scenario`` replays a fixed fixture instead (ignoring the
request); ``scenario: "random"`` a random generation of the synthetic corpus for the seed
(every kind: cuts, malformed Harmony, built-in tools). Tokens arrive in batches of
``stream_interval`` plus 0..d accepted draft tokens, the trimmed stop token is missing from the
last batch, and ``max_output_tokens`` cuts the generation with finish reason ``length``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import random
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .model import (
    NAMED_SCENARIOS,
    EngineResponse,
    SyntheticOutput,
    engine_responses,
    generate_output,
    named_output,
)
from .turns import TurnRequest, plan_turn

RANDOM_SCENARIO = "random"
#: Planned turns an engine keeps (least recently used dropped first). Planning a turn
#: tokenises its text (about 1 ms); a real engine's tokens cost the server no CPU, so a
#: repeated request is served from here.
TURN_CACHE_SIZE = 1024
#: Every ``scenario`` a request (or ``serve --scenario``) may name.
SCENARIOS: tuple[str, ...] = (RANDOM_SCENARIO, *NAMED_SCENARIOS)


def unknown_scenario(name: str) -> str:
    return f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}"


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
        if self.default_scenario is not None and self.default_scenario not in SCENARIOS:
            raise ValueError(unknown_scenario(self.default_scenario))


@dataclass(frozen=True)
class Generation:
    """The tokens one request produces and how the engine ends them."""

    output: SyntheticOutput
    batch_seed: int

    @property
    def delivered(self) -> tuple[int, ...]:
        return self.output.delivered

    @property
    def finish_reason(self) -> str | None:
        return self.output.finish_reason


def input_seed(request_input: Any, base_seed: int = 0) -> int:
    """A stable 63-bit seed from the request input (str or item list)."""
    text = json.dumps(request_input, sort_keys=True, ensure_ascii=False, default=str)
    digest = hashlib.sha256(f"{base_seed}:{text}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def turn_key(request: TurnRequest, seed: int) -> str | None:
    """What ``plan_turn`` reads of ``request`` and ``seed``, as a string (None: not keyable).

    A string input matters only when there are tools (it may name one); item lists always
    do (tool outputs, calls made).
    """
    reads_input = request.tools or not isinstance(request.input, str)
    facts = [
        seed,
        request.input if reads_input else None,
        list(request.tools),
        request.tool_choice,
        request.parallel_tool_calls,
        request.reasoning_effort,
    ]
    try:
        return json.dumps(facts, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return None


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
        self._turns: OrderedDict[str, SyntheticOutput] = OrderedDict()

    def select(
        self,
        request_input: Any,
        *,
        scenario: str | None = None,
        seed: int | None = None,
        max_output_tokens: int | None = None,
        tools: Sequence[Mapping[str, Any]] = (),
        tool_choice: str | Mapping[str, Any] = "auto",
        parallel_tool_calls: bool = True,
        reasoning_effort: str | None = None,
    ) -> Generation:
        """The generation for a request: the turn it asks for (seeded by ``seed`` or its
        input), or a named ``scenario``.

        Raises ValueError for an unknown scenario, ``turns.TurnRequestError`` (a ValueError
        naming the field) for a ``tool_choice`` the tools cannot satisfy.
        """
        scenario = scenario or self.config.default_scenario
        hashed = input_seed(request_input, self.config.seed)
        if scenario == RANDOM_SCENARIO:
            chosen = hashed if seed is None else seed
            output, batch_seed = generate_output(chosen), chosen
        elif scenario is not None:
            if scenario not in NAMED_SCENARIOS:
                raise ValueError(unknown_scenario(scenario))
            output, batch_seed = named_output(scenario), hashed
        else:
            turn_seed = hashed if seed is None else seed
            request = TurnRequest(
                request_input, tuple(tools), tool_choice, parallel_tool_calls, reasoning_effort
            )
            output, batch_seed = self._turn(request, turn_seed), turn_seed
        return Generation(cut_output(output, max_output_tokens), batch_seed)

    def _turn(self, request: TurnRequest, seed: int) -> SyntheticOutput:
        """``plan_turn(request, seed)``, kept for the next request with the same key."""
        key = turn_key(request, seed)
        if key is None:
            return plan_turn(request, seed)
        found = self._turns.get(key)
        if found is not None:
            self._turns.move_to_end(key)
            return found
        output = plan_turn(request, seed)
        if key is not None:
            self._turns[key] = output
            if len(self._turns) > TURN_CACHE_SIZE:
                self._turns.popitem(last=False)
        return output

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
