# SPDX-License-Identifier: Apache-2.0
"""Differential of the fast Harmony driver against the reference one.

Both drivers get the same engine responses, fed the way the event machine feeds them (one
content token through ``take_content``, anything else through ``feed``), and must agree
after every response on the deltas and facts (and so on the completed messages they
describe, ``driver_messages``), the error (type, message, position) and the phase, then on
the end of stream. At the event level, the machine's streams with ``parser="fast"`` and
``parser="reference"`` must be equal event for event (ids aside) and in what the client
sees.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterable, Sequence
from typing import Any, cast

import numpy as np

from ..core.config import DEFAULT_CONFIG, StreamConfig
from ..core.fast_harmony import FastHarmonyDriver
from ..core.harmony_driver import NOT_CONTENT, HarmonyStreamError, ReferenceHarmonyDriver
from ..sim.model import SyntheticOutput, engine_responses
from .splits import NUMPY_SPLIT, copy_split, first_difference
from .visible import client_visible

#: Fixed splits; 10**6 puts the whole generation in one response (the non-streaming path).
SPLITS: tuple[int | str, ...] = (1, 2, 3, 7, 20, 64, 10**6, "numpy")


def _error(exc: HarmonyStreamError) -> tuple[Any, ...]:
    return ("error", type(exc).__name__, str(exc), exc.token_index)


def driver_trace(driver: Any, responses: Iterable[Any]) -> list[tuple[Any, ...]]:
    """What ``driver`` reports for each engine response, as the event machine drives it."""
    trace: list[tuple[Any, ...]] = []
    for response in responses:
        tokens = response.token_ids_diff
        if len(tokens) == 1 and not response.finished:
            delta = driver.take_content(tokens[0])  # the machines' per-token path
            if delta is not NOT_CONTENT:
                trace.append(("delta", delta, driver.state, driver.tokens_fed))
                continue
        facts: list[Any] = []
        try:
            driver.feed(tokens, facts)
        except HarmonyStreamError as exc:
            trace.append(("facts", facts, driver.state, driver.tokens_fed))
            trace.append(_error(exc))
            return trace
        trace.append(("facts", facts, driver.state, driver.tokens_fed))
        if response.finished:
            facts = []
            try:
                driver.finish(facts)
            except HarmonyStreamError as exc:
                trace.append(("finish", facts))
                trace.append(_error(exc))
                return trace
            trace.append(("finish", facts, driver.tokens_fed))
    return trace


def driver_difference(
    output: SyntheticOutput, split: int | Sequence[int] | random.Random | str, encoding: Any
) -> str | None:
    """First difference between the drivers' traces of ``output`` split as ``split`` says."""
    to_array = split == NUMPY_SPLIT
    responses = engine_responses(output, 5 if to_array else copy_split(split))
    if to_array:
        responses = [
            # numpy batches, as TensorRT-LLM's engine hands them over (a tuple elsewhere)
            dataclasses.replace(
                r, token_ids_diff=cast(Any, np.array(r.token_ids_diff, dtype=np.int64))
            )
            for r in responses
        ]
    reference = driver_trace(ReferenceHarmonyDriver(encoding), responses)
    fast = driver_trace(FastHarmonyDriver(encoding), responses)
    return first_difference(reference, fast)


def stream_difference(
    output: SyntheticOutput,
    split: int | Sequence[int] | random.Random | str,
    encoding: Any = None,
    config: StreamConfig = DEFAULT_CONFIG,
) -> str | None:
    """First difference between the machine's streams with the two parsers."""
    from .responses import stream_events

    streams = []
    for parser in ("reference", "fast"):
        events = stream_events(
            output,
            copy_split(split),
            config=dataclasses.replace(config, parser=parser),
            encoding=encoding,
        )
        streams.append((client_visible(events, join=False), client_visible(events)))
    (ref_events, ref_visible), (fast_events, fast_visible) = streams
    return first_difference(ref_events, fast_events) or first_difference(ref_visible, fast_visible)


def output_difference(
    output: SyntheticOutput,
    splits: Iterable[int | Sequence[int] | random.Random | str],
    encoding: Any = None,
) -> str | None:
    """The first difference, drivers then streams, over every split of ``output``."""
    if encoding is None:
        from ..encoding import load_gpt_oss_encoding

        encoding = load_gpt_oss_encoding()
    for split in splits:
        label = split if isinstance(split, (int, str)) else "random"
        found = driver_difference(output, split, encoding)
        found = found or stream_difference(output, split, encoding)
        if found:
            return f"seed {output.seed} ({output.name}) split {label}: {found}"
    return None


def splits_for(output: SyntheticOutput) -> list[int | random.Random | str]:
    """The fixed splits plus one random split of 1-25 tokens per response."""
    return [*SPLITS, random.Random(output.seed * 7919 + 3)]
