# SPDX-License-Identifier: Apache-2.0
"""Replays through TensorRT-LLM's ``ResponsesStreamingProcessor`` (plugin or unpatched).

The call sequence is the streaming handler's: ``get_initial_responses()``, then per engine
response ``responses_api_streaming_post_processor(res, args)`` (which appends the final
response on the done one). ``tensorrt_llm`` is the stand-in in ``tests/standin`` unless
``source_dir`` names a TensorRT-LLM source tree; then it is the real package (which needs
its own dependencies installed). The result object is a minimal duck-typed
``GenerationResult``: cumulative ``token_ids``, ``token_ids_diff``, the stop token
trimmed on the done response.

``plugin`` runs with the fix installed, ``upstream-real`` with it uninstalled; the
``prepare`` attribute of each replay switches the installation before its timed run.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
STANDIN = ROOT / "tests" / "standin"
RETURN = 200002


class _Output:
    def __init__(self) -> None:
        self.index = 0
        self.text = ""
        self.token_ids: list[int] = []
        self.finish_reason: str | None = None
        self.stop_reason: int | None = None
        self._last_token_ids_len = 0
        self._last_text_len = 0
        self._postprocess_result: Any = None
        self.logprobs: Any = None

    @property
    def length(self) -> int:
        return len(self.token_ids)

    @property
    def token_ids_diff(self) -> list[int]:
        return self.token_ids[self._last_token_ids_len :]

    @property
    def text_diff(self) -> str:
        return ""


class _Result:
    """Engine responses of one request, updated in place as upstream's result is."""

    def __init__(self, sampling_params: Any, prompt_token_ids: list[int]) -> None:
        self.id = 1
        self.request_id = 1
        self.sampling_params = sampling_params
        self.prompt_token_ids = prompt_token_ids
        self.outputs = [_Output()]
        self._done = False
        self.cached_tokens = 0

    @property
    def finished(self) -> bool:
        return self._done

    def update(self, token_ids: list[int], done: bool) -> None:
        out = self.outputs[0]
        out._last_token_ids_len = len(out.token_ids)
        out.token_ids.extend(token_ids)
        self._done = done
        if done:
            out.finish_reason = "stop"
            if out.token_ids and out.token_ids[-1] == RETURN:
                out.token_ids = out.token_ids[:-1]
                out.stop_reason = RETURN


def _import_tensorrt_llm(source_dir: str | None) -> str | None:
    """Put the wanted ``tensorrt_llm`` on ``sys.path``; a reason string when impossible."""
    loaded = sys.modules.get("tensorrt_llm")
    wanted = Path(source_dir).resolve() if source_dir else STANDIN
    if loaded is not None:
        origin = Path(getattr(loaded, "__file__", "") or ".").resolve()
        if wanted not in origin.parents:
            return f"another tensorrt_llm is already imported ({origin})"
        return None
    if str(wanted) not in sys.path:
        sys.path.insert(0, str(wanted))
    try:
        import tensorrt_llm.serve.postprocess_handlers
        import tensorrt_llm.serve.responses_utils  # noqa: F401
    except Exception as exc:
        return f"cannot import tensorrt_llm.serve from {wanted}: {type(exc).__name__}: {exc}"
    return None


def _request_and_params(model: str) -> tuple[Any, Any, int]:
    from tensorrt_llm.serve import openai_protocol, responses_utils

    request = openai_protocol.ResponsesRequest(model=model, input="hi", stream=True, store=False)
    preprocess = getattr(responses_utils, "request_preprocess", None)
    if preprocess is not None:
        tokens, params = asyncio.run(
            preprocess(
                request=request,
                prev_response=None,
                conversation_store=None,
                enable_store=False,
                use_harmony=True,
                reasoning_parser="gpt_oss",
            )
        )
        return request, params, len(tokens)
    from tensorrt_llm.serve.harmony_adapter import get_harmony_adapter

    params = request.to_sampling_params(
        default_sampling_params={"stop_token_ids": get_harmony_adapter().get_stop_tokens()},
        reasoning_parser="gpt_oss",
    )
    return request, params, 64


def processor_replay(kind: str, enc: Any, source_dir: str | None = None) -> Any:
    """A replay function for ``kind`` ("plugin" or "upstream-real"), or a skip reason."""
    reason = _import_tensorrt_llm(source_dir)
    if reason:
        return reason
    try:
        from trtllm_stream_fix.plugin.installer import install, uninstall
    except Exception as exc:
        if kind == "plugin":
            return f"plugin unavailable: {type(exc).__name__}: {exc}"
        install = uninstall = None  # type: ignore[assignment]
    from tensorrt_llm.serve import postprocess_handlers, responses_utils

    request, params, prompt_len = _request_and_params("gpt-oss-20b")
    prompt = list(range(prompt_len))
    post_process = postprocess_handlers.responses_api_streaming_post_processor
    args_class = postprocess_handlers.ResponsesAPIPostprocArgs

    def prepare() -> None:
        if kind == "plugin":
            install(mode="require")
        elif uninstall is not None:
            uninstall()

    prepare()
    if kind == "plugin" and not getattr(
        responses_utils.ResponsesStreamingProcessor, "__trtllm_stream_fix__", False
    ):
        return "the plugin did not patch ResponsesStreamingProcessor"

    def run(batches: list[tuple[list[int], bool]]) -> int:
        processor = responses_utils.ResponsesStreamingProcessor(
            request=request,
            sampling_params=params,
            model_name="gpt-oss-20b",
            conversation_store=None,
            enable_store=False,
            use_harmony=True,
        )
        args = args_class(
            model="gpt-oss-20b",
            request=request,
            sampling_params=params,
            use_harmony=True,
            reasoning_parser=None,
            tool_parser=None,
            streaming_processor=processor,
        )
        args.num_prompt_tokens = prompt_len
        size = sum(len(frame) for frame in processor.get_initial_responses())
        res = _Result(params, prompt)
        for batch, last in batches:
            res.update(batch + [RETURN] if last else batch, last)
            size += sum(len(frame) for frame in post_process(res, args))
        return size

    run.prepare = prepare  # type: ignore[attr-defined]
    return run
