# SPDX-License-Identifier: Apache-2.0
"""``ResponsesStreamingProcessor`` whose Harmony path is driven by ``ResponsesEventMachine``.

Importing this module imports ``tensorrt_llm.serve.responses_utils`` and subclasses the
processor class found there (upstream's, even if already rebound to this subclass). The
class is defined at module level, so an instance pickled to a PostprocWorker is rebuilt
there by importing this module: the fix travels with the object.

The Harmony path is :class:`~trtllm_stream_fix.serving.processor.HarmonyResponsesStream`,
the same class ``upstream-pr`` writes into TensorRT-LLM for upstream's processor to call: this
subclass only holds one per request and delegates its four methods to it. Per-request state
(the event machine, which owns the Harmony parser) is created in whichever process runs the
first ``process_single_output`` and is released with the terminal event. It is not pickled:
upstream pickles the processor when the request is submitted, before any token is processed.

Upstream's contract is kept on every version line: each frame holds exactly one event (the
egress restamps one ``sequence_number`` per frame), a final-response call returns exactly
one event (the terminal one), and the numbering is 0, 1 for the opening pair and continues
from 2 in whichever process builds the later events, so it is contiguous with or without
egress restamping. A stream the plugin ends early (a Harmony parse error) sends ``error``
at once and holds ``response.failed`` for the final-response call; nothing follows it.
Streamed responses are stored like non-streaming ones (response and Harmony messages) when
storage is enabled, so ``previous_response_id`` works after a streamed turn.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar, cast

from tensorrt_llm.serve import responses_utils as _responses_utils

from ..core.config import StreamConfig
from ..serving.processor import HarmonyResponsesStream
from .replacements import harmony_messages
from .targets import upstream_class

_UpstreamProcessor: Any = upstream_class(_responses_utils.ResponsesStreamingProcessor)


class FixedResponsesStreamingProcessor(_UpstreamProcessor):
    """Drop-in processor: same constructor, same methods, correct Harmony events."""

    __trtllm_stream_fix__: ClassVar[bool] = True
    # Upstream-parity switches from TRTLLM_STREAM_FIX_PREAMBLES / _LENGTH_TERMINAL; a bad
    # value fails the patch (fatal under TRTLLM_STREAM_FIX=require).
    stream_config: ClassVar[StreamConfig] = StreamConfig.from_env(os.environ)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._fix_stream = self._fix_new_stream()
        if self.use_harmony:
            self.sequence_number = 0  # ours on every version (993c0eec starts at 2)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if "_fix_stream" not in state:  # pickled by a process without the stream
            self._fix_stream = self._fix_new_stream()

    def _fix_new_stream(self) -> HarmonyResponsesStream:
        model = getattr(_responses_utils, "ResponsesResponse", None)
        return HarmonyResponsesStream(harmony_messages, model, _stream_config)

    # -- upstream interface ---------------------------------------------------------------

    def get_initial_responses(self, *args: Any, **kwargs: Any) -> list[str]:
        if not self.use_harmony:
            return cast(list[str], super().get_initial_responses(*args, **kwargs))
        return self._fix_stream.initial_responses(self)

    def process_single_output(self, res: Any, *args: Any, **kwargs: Any) -> list[str]:
        if not self.use_harmony:
            return cast(list[str], super().process_single_output(res, *args, **kwargs))
        return self._fix_stream.process_output(self, res)

    def get_final_response_non_store(self, final_res: Any, *args: Any, **kwargs: Any) -> str:
        if not self.use_harmony:
            return cast(str, super().get_final_response_non_store(final_res, *args, **kwargs))
        stream = self._fix_stream
        frame, response = stream.final_response(self, final_res, _num_prompt_tokens(args, kwargs))
        # Upstream's streaming loop calls only this (sync) method: store on the running loop,
        # before the terminal frame can reach the client.
        stream.store_soon(self, response, final_res)
        return frame

    async def get_final_response(self, final_res: Any, *args: Any, **kwargs: Any) -> str:
        if not self.use_harmony:
            return cast(str, await super().get_final_response(final_res, *args, **kwargs))
        stream = self._fix_stream
        frame, response = stream.final_response(self, final_res, _num_prompt_tokens(args, kwargs))
        await stream.store(self, response, final_res)
        return frame


def _stream_config() -> StreamConfig:
    """The switches of the process building the machine (a worker reads its own)."""
    return FixedResponsesStreamingProcessor.stream_config


def _num_prompt_tokens(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    return args[0] if args else kwargs.get("num_prompt_tokens")
