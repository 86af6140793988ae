# SPDX-License-Identifier: Apache-2.0
"""Replays through TensorRT-LLM's ``ResponsesStreamingProcessor`` (plugin or unpatched).

The call sequence is the streaming handler's: ``get_initial_responses()``, then per engine
response ``responses_api_streaming_post_processor(res, args)`` (which appends the final
response on the done one). The result objects are minimal duck-typed ``GenerationResult``s,
one per engine response, built before the timed replay (``engine_results``, the replay's
``inputs``): ``token_ids_diff``, and on the done response ``_done``, ``finish_reason`` and
the whole output with the stop token trimmed. The timed loop is upstream's post-processor
calls only, as ``ours`` is the machine's ``feed`` calls only.

- ``plugin``: the fix installed on the stand-in in ``tests/standin``, in this process;
- ``upstream-real`` / ``plugin-real``: TensorRT-LLM's own four Responses modules, unpatched
  or with the fix installed, loaded with ``tests/realstub`` from a source tree. They cannot
  share an interpreter with the stand-in, so they run in a worker process
  (``RealWorker``, which starts this file as a script) that times each run together with a
  floor run just before it.

The ``prepare`` attribute of each replay switches the installation before a timed run; its
``reset`` drops the Harmony adapter's per-request parser state before each replay, outside
the timed region (``cpu_event_cost.time_replay`` calls both, and ``inputs``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trtllm_stream_fix.core.harmony_tokens import RETURN

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
STANDIN = ROOT / "tests" / "standin"
REAL_KINDS = ("upstream-real", "plugin-real")


class _Output:
    """``CompletionOutput`` as the post-processors read it (``token_ids_diff``: the new
    tokens, as upstream's property slices them; set by ``engine_results``)."""

    def __init__(self) -> None:
        self.index = 0
        self.text = ""
        self.token_ids: list[int] = []
        self.token_ids_diff: list[int] = []
        self.finish_reason: str | None = None
        self.stop_reason: int | None = None
        self.disaggregated_params: Any = None
        self._last_token_ids_len = 0
        self._last_text_len = 0
        self._postprocess_result: Any = None
        self.logprobs: Any = None

    @property
    def length(self) -> int:
        return len(self.token_ids)

    @property
    def text_diff(self) -> str:
        return ""


class _Result:
    """One engine response of a request, as upstream's result reads at that response."""

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


def _import_standin() -> str | None:
    """Put the stand-in ``tensorrt_llm`` on ``sys.path``; a reason string when impossible."""
    loaded = sys.modules.get("tensorrt_llm")
    if loaded is not None:
        origin = Path(getattr(loaded, "__file__", "") or ".").resolve()
        if STANDIN not in origin.parents:
            return f"another tensorrt_llm is already imported ({origin})"
        return None
    if str(STANDIN) not in sys.path:
        sys.path.insert(0, str(STANDIN))
    try:
        import tensorrt_llm.serve.postprocess_handlers
        import tensorrt_llm.serve.responses_utils  # noqa: F401
    except Exception as exc:
        return f"cannot import the tensorrt_llm stand-in: {type(exc).__name__}: {exc}"
    return None


def processor_replay(kind: str, enc: Any) -> Any:
    """A replay function for ``kind`` ("plugin", "upstream-real", "plugin-real"), or a skip
    reason. The real kinds expect ``tests/realstub`` to be active in this interpreter."""
    if kind not in REAL_KINDS:
        reason = _import_standin()
        if reason:
            return reason
    try:
        from trtllm_stream_fix.plugin.installer import install, uninstall
    except Exception as exc:
        if kind != "upstream-real":
            return f"plugin unavailable: {type(exc).__name__}: {exc}"
        install = uninstall = None  # type: ignore[assignment]
    if str(ROOT / "tests") not in sys.path:
        sys.path.insert(0, str(ROOT / "tests"))  # the request driver shared with the tests
    from realstub.drive import MODEL, PROMPT, new_streaming_processor
    from tensorrt_llm.serve import harmony_adapter, postprocess_handlers, responses_utils
    from tensorrt_llm.serve.openai_protocol import ResponsesRequest

    patched = kind != "upstream-real"
    request = ResponsesRequest(model=MODEL, input="hi", stream=True, store=False)
    adapter = harmony_adapter.get_harmony_adapter()
    params = request.to_sampling_params(
        default_sampling_params={"stop_token_ids": adapter.get_stop_tokens()},
        reasoning_parser="gpt_oss",
    )
    prompt = PROMPT
    post_process = postprocess_handlers.responses_api_streaming_post_processor

    def prepare() -> None:
        if patched:
            install(mode="on")
        elif uninstall is not None:
            uninstall()

    def reset() -> None:
        # Upstream keeps a parser per request id and never drops it: start each replay afresh.
        adapter.cleanup_stream_state(f"responses-api-{request.request_id}")

    prepare()
    if patched != bool(
        getattr(responses_utils.ResponsesStreamingProcessor, "__trtllm_stream_fix__", False)
    ):
        return f"ResponsesStreamingProcessor is {'not ' if patched else ''}patched"

    def run(results: list[_Result]) -> int:
        processor, args = new_streaming_processor(request, params)
        args.num_prompt_tokens = len(prompt)
        size = sum(len(frame) for frame in processor.get_initial_responses())
        for res in results:  # one engine response each: upstream's post-processor call
            for frame in post_process(res, args):
                size += len(frame)
        return size

    run.prepare = prepare  # type: ignore[attr-defined]
    run.reset = reset  # type: ignore[attr-defined]
    run.inputs = lambda batches: engine_results(batches, params, prompt)  # type: ignore[attr-defined]
    return run


def engine_results(
    batches: Sequence[tuple[list[int], bool]], sampling_params: Any, prompt: list[int]
) -> list[_Result]:
    """The engine's side of a replay, built before it is timed: one result per engine
    response, holding what upstream's in-place ``GenerationResult`` shows the post-processor
    at that response (``token_ids_diff``, done flag, finish reason, and on the done one the
    whole output with the stop token trimmed). The cumulative ``token_ids`` of the earlier
    responses is the finished list: read only on the done response (the streaming path
    reads ``token_ids_diff``)."""
    tokens = [token for batch, _ in batches for token in batch]
    results = []
    for batch, last in batches:
        res = _Result(sampling_params, prompt)
        out = res.outputs[0]
        out.token_ids = tokens
        out.token_ids_diff = batch  # on the done response: the stop token already trimmed
        if last:
            res._done = True
            out.finish_reason = "stop"
            out.stop_reason = RETURN
        results.append(res)
    return results


# -- the worker process for the real modules ---------------------------------------------------


class RealWorker:
    """A worker interpreter with TensorRT-LLM's real Responses modules (``tests/realstub``).

    ``skipped`` maps each kind it cannot run to the reason; ``cell`` builds the workload of one
    table cell there and sets its replays per run; ``time(kind)`` returns (floor µs, kind µs)
    per replay of a floor run and the run of ``kind`` that follows it, both in the worker's
    thread CPU time.
    """

    def __init__(self, source_dir: str, kinds: Sequence[str]) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join((str(ROOT / "tests"), str(ROOT))))
        env.pop("TRTLLM_STREAM_FIX", None)  # the worker installs and removes the fix itself
        self._log = tempfile.TemporaryFile(mode="w+")
        self._proc = subprocess.Popen(
            [sys.executable, str(Path(__file__)), source_dir, ",".join(kinds)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            env=env,
            cwd=ROOT,
        )
        ready = self._reply()
        self.kinds: list[str] = ready["kinds"]
        self.skipped: dict[str, str] = ready["skipped"]

    def _reply(self) -> dict[str, Any]:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            if line.startswith("REPLY "):
                reply = json.loads(line[len("REPLY ") :])
                if "error" in reply:
                    raise RuntimeError(f"real-module worker: {reply['error']}")
                return reply
        self._log.seek(0)
        raise RuntimeError(f"real-module worker exited: {self._log.read()[-2000:]}")

    def _ask(self, **command: Any) -> dict[str, Any]:
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(command) + "\n")
        self._proc.stdin.flush()
        return self._reply()

    def cell(self, analysis: int, final: int, interval: int, repeat: int = 1) -> None:
        self._ask(cell=[analysis, final, interval], repeat=repeat)

    def time(self, kind: str) -> tuple[float, float]:
        reply = self._ask(time=kind)
        return reply["floor"], reply["us"]

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        self._proc.wait(timeout=30)
        self._log.close()


def _send(payload: dict[str, Any]) -> None:
    sys.stdout.write("REPLY " + json.dumps(payload) + "\n")
    sys.stdout.flush()


def worker_main(source_dir: str, kinds: Sequence[str]) -> None:
    """Serve ``RealWorker`` on stdin/stdout (JSON lines; replies start with ``REPLY``)."""
    sys.path.insert(0, str(ROOT / "tests"))
    import realstub

    try:
        realstub.activate(source_dir)
        import tensorrt_llm.serve.postprocess_handlers
        import tensorrt_llm.serve.responses_utils  # noqa: F401
    except Exception as exc:
        reason = f"cannot load tensorrt_llm.serve from {source_dir}: {type(exc).__name__}: {exc}"
        _send({"kinds": [], "skipped": dict.fromkeys(kinds, reason)})
        return
    from cpu_event_cost import build_turn, engine_batches, floor_impl, time_replay

    from trtllm_stream_fix.encoding import load_gpt_oss_encoding

    enc = load_gpt_oss_encoding()
    replays: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    probe = engine_batches(build_turn(enc, 8, 8), 4)
    for kind in kinds:
        try:
            made = processor_replay(kind, enc)
            if not isinstance(made, str):
                time_replay(made, probe, 2)  # fails here rather than in the middle of the table
        except Exception as exc:
            made = f"{type(exc).__name__}: {exc}"
        if isinstance(made, str):
            skipped[kind] = made
        else:
            replays[kind] = made
    _send({"kinds": list(replays), "skipped": skipped})
    floor = floor_impl(enc)
    batches = probe
    repeat = 1
    for line in sys.stdin:
        command = json.loads(line)
        try:
            if "cell" in command:
                analysis, final, interval = command["cell"]
                batches = engine_batches(build_turn(enc, analysis, final), interval)
                repeat = int(command.get("repeat", 1))
                _send({})
            else:
                floor_us = time_replay(floor, batches, repeat)
                us = time_replay(replays[command["time"]], batches, repeat)
                _send({"floor": floor_us, "us": us})
        except Exception as exc:
            _send({"error": f"{type(exc).__name__}: {exc}"})


if __name__ == "__main__":
    worker_main(sys.argv[1], [k for k in sys.argv[2].split(",") if k])
