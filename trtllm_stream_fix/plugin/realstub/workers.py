# SPDX-License-Identifier: Apache-2.0
"""Upstream's real post-processing workers, on CPU: ``PostprocWorker`` processes fed over
upstream's ``ZeroMqQueue``.

``executor/postproc_worker.py`` and ``executor/ipc.py`` are loaded from the source tree (so
the worker loop, its per-request records, the post-processor call with the unpickled
``PostprocParams``, the pickling and HMAC signing of every message are upstream's);
``pyzmq`` must be installed. What is ours is the engine side: ``Pool`` starts the worker
processes with upstream's ``postproc_worker_main`` and feeds them as the executor does
(request ``client_id`` goes to worker ``client_id % N``; its first ``PostprocWorker.Input``
carries the sampling and post-processing params, later ones only the response), with one
``bindings.executor.Response`` per engine response; ``Record`` stands in for the
``GenerationResult`` a worker keeps per request (``_handle_response`` applies the new tokens).

Each worker process activates the same tree; with the plugin on it first registers the
plugin's import hook as the ``.pth`` line does at interpreter start.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.util
import multiprocessing
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trtllm_stream_fix.differential.engine_results import Result
from trtllm_stream_fix.plugin import realstub

#: Loaded from the source tree when the real workers are used.
EXECUTOR_MODULES = ("tensorrt_llm.executor.ipc", "tensorrt_llm.executor.postproc_worker")


def available(source_dir: str | Path) -> str:
    """'' when the real workers can run from ``source_dir``, else why not."""
    missing = [m for m in EXECUTOR_MODULES if not _location(Path(source_dir), m).is_file()]
    if missing:
        return f"{source_dir} lacks {', '.join(_location(Path(source_dir), m) for m in missing)}"
    if importlib.util.find_spec("zmq") is None:
        return "pyzmq is not installed (pip install pyzmq)"
    return ""


def _location(source_dir: Path, module: str) -> Path:
    return source_dir.joinpath(*module.split(".")).with_suffix(".py")


class _ExecutorFinder(importlib.abc.MetaPathFinder):
    """``EXECUTOR_MODULES`` from the source tree (ahead of realstub's stubs)."""

    def __init__(self, source_dir: Path) -> None:
        self.source_dir = source_dir

    def find_spec(self, fullname, path=None, target=None):
        if fullname in EXECUTOR_MODULES:
            return importlib.util.spec_from_file_location(
                fullname, _location(self.source_dir, fullname)
            )
        return None


def activate(source_dir: str | Path) -> None:
    """``realstub.activate`` plus the real executor modules, before anything imports them."""
    realstub.activate(source_dir)
    sys.meta_path.insert(0, _ExecutorFinder(Path(source_dir)))
    utils = importlib.import_module("tensorrt_llm._utils")
    # ipc.py marks every send and wraps it in ``with nvtx_range_debug(name, color=...)``;
    # both are no-ops without CUDA (the stub's nvtx_range_debug is only a decorator).
    if "nvtx_mark" not in vars(utils):
        utils.nvtx_mark = _no_op
    utils.nvtx_range_debug = _NvtxRange


def _no_op(*args: Any, **kwargs: Any) -> None:
    return None


class _NvtxRange(contextlib.ContextDecorator):
    """No-op ``nvtx_range_debug``: a decorator and a context manager, any arguments."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


@dataclass
class Record(Result):
    """The ``GenerationResult`` a worker keeps per request: upstream's record creator builds
    a ``DetokenizedGenerationResultBase`` from the first Input; this one applies each
    response's new tokens as the executor's result does."""

    postproc_params: Any = None
    sampling_params: Any = None
    streaming: bool | None = None
    client_id: int = 0

    def _handle_response(self, response: Any) -> None:
        result = response.result
        self.apply(result.token_ids_diff, result.is_final, result.finish_reason)


def create_record(inp: Any, tokenizer: Any) -> Record:
    """The ``record_creator`` handed to upstream's ``postproc_worker_main``."""
    return Record(
        postproc_params=inp.postproc_params,
        sampling_params=inp.sampling_params,
        streaming=inp.streaming,
        client_id=inp.rsp.client_id,
    )


def _worker_main(source_dir: str, plugin: bool, feedin: Any, feedout: Any) -> None:
    """One worker process: with the plugin on, its import hook registered first as the
    ``.pth`` line does at interpreter start (it patches the Responses modules when the worker
    imports them); the tree activated; then upstream's ``postproc_worker_main`` until the
    executor sends None."""
    if plugin:
        from trtllm_stream_fix.plugin import bootstrap

        bootstrap.register_from_pth()
    activate(source_dir)
    from tensorrt_llm.executor import postproc_worker

    postproc_worker.postproc_worker_main(feedin, feedout, None, create_record)


class Pool:
    """``workers`` upstream ``PostprocWorker`` processes and the executor's side of their
    queues (upstream's ``ZeroMqQueue``: one PAIR feed-in per worker, one PULL feed-out)."""

    def __init__(self, source_dir: str | Path, workers: int, *, plugin: bool) -> None:
        import zmq
        from tensorrt_llm.executor.ipc import ZeroMqQueue

        self._queue = ZeroMqQueue
        self._source, self._plugin = str(source_dir), plugin
        self.feedout = ZeroMqQueue(
            is_server=True, socket_type=zmq.PULL, name="postprocess_feedout_queue"
        )
        self.feedin: list[Any] = [None] * workers
        self.processes: list[Any] = [None] * workers
        self.restarts = 0
        for index in range(workers):
            self._start(index)
        self._sent: set[int] = set()
        self._pending: dict[int, list[Any]] = {}

    def _start(self, index: int) -> None:
        """Worker ``index``: a new feed-in queue and a new process reading it."""
        self.feedin[index] = self._queue(is_server=True, name=f"postprocess_{index}_feedin_queue")
        process = multiprocessing.get_context("spawn").Process(
            target=_worker_main,
            args=(self._source, self._plugin, self.feedin[index].address, self.feedout.address),
            daemon=True,
        )
        process.start()
        self.processes[index] = process

    def submit(self, client_id: int, response: Any, params: tuple[Any, Any, bool]) -> None:
        """One engine response for ``client_id``; the first carries (sampling params,
        post-processing params, streaming)."""
        from tensorrt_llm.executor.postproc_worker import PostprocWorker

        if client_id in self._sent:
            inp = PostprocWorker.Input(rsp=response)
        else:
            self._sent.add(client_id)
            sampling, postproc, streaming = params
            inp = PostprocWorker.Input(response, sampling, postproc, streaming)
        self.feedin[client_id % len(self.feedin)].put([inp])

    def result(self, client_id: int) -> Any:
        """The next post-processed result for ``client_id`` (an Output; ``res`` is what the
        post-processor returned), routed from whichever batches arrive first. A worker process
        that died (upstream's worker loop lets a post-processor exception end the process) is
        started again and ``WorkerDied`` raised for the request."""
        while not self._pending.get(client_id):
            if not self.feedout.poll(1):
                self._check_alive(client_id)
                continue
            batch = self.feedout.get()
            for out in batch or []:
                self._pending.setdefault(out.client_id, []).append(out)
        out = self._pending[client_id].pop(0)
        if out.is_final:
            self._sent.discard(client_id)
        if out.error:
            raise WorkerDied(f"post-processing worker error: {out.error}")
        return out

    def _check_alive(self, client_id: int) -> None:
        index = client_id % len(self.processes)
        process = self.processes[index]
        if process.is_alive():
            return
        self.feedin[index].close()
        self._sent = {c for c in self._sent if c % len(self.processes) != index}
        self._start(index)
        self.restarts += 1
        raise WorkerDied(f"post-processing worker {index} exited with code {process.exitcode}")

    def close(self) -> None:
        """None to every worker (upstream's stop signal), then wait for them."""
        for queue in self.feedin:
            queue.put(None)
        for process in self.processes:
            process.join(timeout=30)
            if process.is_alive():
                process.terminate()
                process.join()
        for queue in [*self.feedin, self.feedout]:
            queue.close()


class WorkerDied(RuntimeError):
    """The worker serving a request stopped before answering it."""


def engine_response(client_id: int, diff: Any, finished: bool, finish_reason: Any) -> Any:
    """``tllm.Response`` for one engine response."""
    from tensorrt_llm.bindings.executor import Response
    from tensorrt_llm.bindings.executor import Result as EngineResult

    return Response(client_id, EngineResult(list(diff), finished, finish_reason))
