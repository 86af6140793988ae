# SPDX-License-Identifier: Apache-2.0
"""Upstream's own ``openai_server`` on CPU: the real FastAPI app with a fake gpt-oss engine.

``python -m trtllm_stream_fix.plugin.realstub.server --source DIR [--plugin on|off] ...``
imports ``tensorrt_llm/serve/openai_server.py`` and every other ``serve`` module the tree has
from ``DIR`` (stubs only for what is off the serve path: engine, torch, MPI, bindings; see
``realstub``), builds ``OpenAIServer`` around a ``FakeLLM`` and serves its app with uvicorn on
loopback. It prints ``LISTENING <url>`` on stdout once the socket is bound.

``FakeLLM.generate_async`` replays a gpt-oss generation as the PyExecutor delivers it: one
``GenerationResult`` mutated in place per engine response (cumulative ``token_ids``,
``token_ids_diff``, ``_done``, ``finish_reason`` on the last one, the stop token trimmed), a
response every ``stream_interval`` iterations, each iteration 1 + 0..``draft_tokens``
accepted draft tokens. What it generates comes from the prompt (Harmony tokens, decoded):
the compaction prompt gets the simulated summary (``sim.compaction_model``); a tool
output (``<|start|>functions.NAME``) after the last user turn gets a final answer;
declared function tools get a ``get_weather`` call; ``scenario NAME`` in the user text a
named fixture; ``seed N`` the synthetic generation of that seed; anything else the
generation of a hash of the prompt. ``fault after-end`` makes the engine raise once its last
response is out (an exception after the stream's terminal event).

With ``--workers N`` (N >= 1) the server runs with ``num_postprocess_workers = N``: each
request's post-processing runs in one of N spawned processes, as upstream's PostprocWorkers
do (the post-processor and its args pickled once per request, then one call per engine
response, results pickled back into ``outputs[0]._postprocess_result``). Upstream's own
``PostprocWorker`` cannot run here: it receives native ``tensorrt_llm.bindings`` responses
over ZeroMQ and rebuilds results with ``executor/result.py`` (torch, bindings).

``--plugin on`` loads the fix the way an operator's install does: this package's ``.pth`` file
is written to a fresh site directory that this interpreter (and every worker) adds with
``site.addsitedir`` before anything imports TensorRT-LLM; ``off`` sets
``TRTLLM_STREAM_FIX=0`` so nothing is patched.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import multiprocessing
import os
import pickle
import re
import site
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from ...differential import engine_results

MODEL = "gpt-oss-20b"
TOOL_OUTPUT = re.compile(r"<\|start\|>functions\.")
SCENARIO = re.compile(r"\bscenario[ :=]+([a-z_]+)")
SEED = re.compile(r"\bseed[ :=]+(\d+)")
#: In the user text: the engine fails right after delivering its last response.
FAULT_AFTER_END = "fault after-end"


@dataclass(frozen=True)
class EngineSettings:
    """How the fake engine batches tokens and how the server post-processes them."""

    stream_interval: int = 1
    draft_tokens: int = 0
    workers: int = 0


# -- the generation a prompt asks for ------------------------------------------------------


def _encoding() -> Any:
    from ...encoding import load_gpt_oss_encoding

    return load_gpt_oss_encoding()


def choose_output(prompt: list[int]) -> Any:
    """The synthetic generation the fake engine produces for ``prompt`` (see module doc)."""
    from ...sim.compaction_model import summary_for_prompt
    from ...sim.model import generate_output, named_output

    text = _encoding().decode(list(prompt))
    last_user = text.rsplit("<|start|>user", 1)[-1]
    if (summary := summary_for_prompt(prompt)) is not None:
        return summary  # the compaction prompt: the simulated summary
    if TOOL_OUTPUT.search(last_user):
        return named_output("reasoning_answer")
    if "namespace functions" in text and "<|start|>user" in text:
        return named_output("preamble_tool_call")
    if match := SCENARIO.search(last_user):
        return named_output(match.group(1))
    if match := SEED.search(last_user):
        return generate_output(int(match.group(1)))
    digest = hashlib.sha256(repr(list(prompt)).encode()).digest()
    return generate_output(int.from_bytes(digest[:4], "big"))


def batch_sizes(total: int, settings: EngineSettings, seed: int) -> list[int]:
    """Tokens per engine response: ``stream_interval`` iterations of 1 + 0..d tokens each."""
    import random

    rng = random.Random(seed * 1000003 + settings.stream_interval)
    sizes, covered = [], 0
    while covered < total:
        iterations = range(settings.stream_interval)
        size = sum(1 + rng.randint(0, settings.draft_tokens) for _ in iterations)
        sizes.append(size)
        covered += size
    return sizes


# -- GenerationResult as the server reads it -----------------------------------------------


@dataclass
class Output(engine_results.Output):
    """``CompletionOutput``: cumulative tokens and the diff of the last engine response."""

    logprobs: Any = None
    text: str = ""
    _postprocess_result: Any = None

    @property
    def length(self) -> int:
        return len(self.token_ids)


@dataclass
class Record(engine_results.Result):
    """The part of ``GenerationResult`` the post-processors read (picklable)."""

    id: int = 0
    request_id: int = 0
    error: Any = None
    disaggregated_params: Any = None
    metrics_dict: dict = field(default_factory=dict)
    candidate_metrics: Any = None
    outputs: list[Output] = field(default_factory=lambda: [Output()])

    @property
    def finished(self) -> bool:
        return self._done


class FakeGeneration(Record):
    """The promise ``generate_async`` returns: async-iterable (one engine response per step),
    awaitable (``aresult``), abortable."""

    def __init__(
        self, record: Record, steps: list[Any], post: Any, fail_after_end: bool = False
    ) -> None:
        self.__dict__.update(record.__dict__)
        self._steps = list(steps)
        self._fail_after_end = fail_after_end
        self._post = post  # (pool, request id) with workers, else None
        self._opening: Any = None  # telling the worker about the request, with workers
        self._aborted = False

    def abort(self) -> None:
        self._aborted = True

    async def _step(self) -> None:
        if self._opening is not None:
            await self._opening
            self._opening = None
        step = self._steps.pop(0)
        self.apply(step.token_ids_diff, step.finished, step.finish_reason)
        if self._post is not None:
            pool, rid = self._post
            self.outputs[0]._postprocess_result = await pool.step(rid, step)
        await asyncio.sleep(0)  # other requests run between engine responses

    def __aiter__(self) -> FakeGeneration:
        return self

    async def __anext__(self) -> FakeGeneration:
        if not self._steps and self._fail_after_end:
            self._fail_after_end = False
            raise RuntimeError("engine failed after its last response (fault after-end)")
        if not self._steps or self._aborted:
            raise StopAsyncIteration
        await self._step()
        return self

    async def aresult(self) -> FakeGeneration:
        while self._steps and not self._aborted:
            await self._step()
        return self

    def __await__(self) -> Any:
        return self.aresult().__await__()


# -- post-processing workers ----------------------------------------------------------------


def _worker_main(conn: Any, source: str, site_dir: str | None) -> None:
    """One post-processing worker: a fresh interpreter with the same imports as the server."""
    if site_dir:
        site.addsitedir(site_dir)
    from . import activate

    activate(source)
    from tensorrt_llm.serve import openai_protocol

    align_protocol(openai_protocol)
    import tensorrt_llm.serve.postprocess_handlers  # noqa: F401  (the plugin patches on import)

    tokenizer = HarmonyTokenizer()
    records: dict[int, tuple[Any, Record]] = {}
    while True:
        message = conn.recv()
        if message is None:
            return
        kind, rid, payload = message
        try:
            if kind == "open":
                params, prompt = pickle.loads(payload)
                records[rid] = (params, Record(prompt_token_ids=prompt, id=rid, request_id=rid))
                conn.send(("ok", None))
                continue
            params, record = records[rid]
            record.apply(*payload)
            args = params.postproc_args
            args.tokenizer = tokenizer
            out = params.post_processor(record, args)
            if record._done:
                del records[rid]
            conn.send(("ok", pickle.dumps(out)))
        except Exception as exc:  # reported to the server process, as upstream's Output.error
            records.pop(rid, None)
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


class WorkerPool:
    """N worker processes; a request stays on the worker it was assigned to."""

    def __init__(self, count: int, source: str, site_dir: str | None) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._conns, self._locks, self._procs = [], [], []
        for _ in range(count):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_worker_main, args=(child, source, site_dir), daemon=True)
            proc.start()
            self._conns.append(parent)
            self._locks.append(threading.Lock())
            self._procs.append(proc)
        self.pids = [p.pid for p in self._procs]

    def _call(self, rid: int, message: tuple[str, int, Any]) -> Any:
        i = rid % len(self._conns)
        with self._locks[i]:
            self._conns[i].send(message)
            status, value = self._conns[i].recv()
        if status != "ok":
            raise RuntimeError(f"post-processing worker failed: {value}")
        return None if value is None else pickle.loads(value)

    async def open(self, rid: int, params: Any, prompt: list[int]) -> None:
        await asyncio.to_thread(self._call, rid, ("open", rid, pickle.dumps((params, prompt))))

    async def step(self, rid: int, step: Any) -> Any:
        payload = (tuple(step.token_ids_diff), step.finished, step.finish_reason)
        return await asyncio.to_thread(self._call, rid, ("step", rid, payload))

    def close(self) -> None:
        for conn in self._conns:
            try:
                conn.send(None)
            except OSError:
                pass
        for proc in self._procs:
            proc.join(timeout=5)


# -- the engine ----------------------------------------------------------------------------


class HarmonyTokenizer:
    """``TransformersTokenizer`` as the serve modules use it, backed by the Harmony encoding."""

    name_or_path = "openai/gpt-oss-20b"
    vocab_size = 201088

    def __init__(self) -> None:
        self._enc = _encoding()
        self.tokenizer = self

    def encode(self, text: str, add_special_tokens: bool = False, **kwargs: Any) -> list[int]:
        return list(self._enc.encode(text, allowed_special="all"))

    def decode(self, token_ids: Any, **kwargs: Any) -> str:
        return self._enc.decode(list(token_ids))


@dataclass
class Phase:
    """One phase of a disaggregated request as the engine runs it (see ``disaggregated_phase``)."""

    output: Any  # the generation this worker delivers
    steps: Any  # the engine responses, or None: streamed as an aggregated request is
    cached_tokens: int  # what the engine reports as reused from its KV cache
    params: Any  # the outputs' ``disaggregated_params``


def context_cached_tokens(prompt: list[int]) -> int:
    """The prompt tokens a context worker reports reused from its KV cache (half the prompt:
    distinct from none and from all, so a usage reading the wrong worker's count shows)."""
    return len(prompt) // 2


def disaggregated_phase(output: Any, prompt: list[int], params: Any, rid: int) -> Phase | None:
    """The context or generation phase of a disaggregated request, as upstream's executor
    delivers it (``None`` for an aggregated request).

    ``context_only``: one engine response holding the first generated token, finish reason
    ``not_finished`` (the request continues elsewhere) and ``disaggregated_params`` for the
    hand-off (``request_type="context_only"``, ``first_gen_tokens``, ``ctx_request_id``; no
    opaque KV state: no cache moves here); a generation that ends at its first token finishes
    here as an aggregated one would. ``generation_only``: the generation continued from the
    relayed ``first_gen_tokens`` (they are its first output tokens), every output carrying the
    request's ``disaggregated_params`` (``ctx_usage`` included), and the whole prompt counted as
    cached, since it arrived as transferred KV cache.
    """
    import dataclasses

    from ...sim.model import EngineResponse

    kind = getattr(params, "request_type", None)
    if kind == "context_only":
        from tensorrt_llm.llmapi import DisaggregatedParams

        cached = context_cached_tokens(prompt)
        if len(output.generated) <= 1:
            return Phase(output, None, cached, None)
        handoff = DisaggregatedParams(
            request_type="context_only",
            first_gen_tokens=[output.generated[0]],
            ctx_request_id=rid,
            disagg_request_id=getattr(params, "disagg_request_id", None),
        )
        step = EngineResponse(output.generated[:1], True, "not_finished")
        return Phase(output, [step], cached, handoff)
    if kind == "generation_only":
        first = tuple(getattr(params, "first_gen_tokens", None) or ())
        generated = first + tuple(output.generated[len(first) :])
        return Phase(dataclasses.replace(output, generated=generated), None, len(prompt), params)
    return None


class FakeLLM:
    """The ``LLM`` that ``OpenAIServer`` is given: args, tokenizer and ``generate_async``."""

    def __init__(self, settings: EngineSettings, pool: WorkerPool | None = None) -> None:
        self.settings = settings
        self.pool = pool
        self.tokenizer = HarmonyTokenizer()
        self._hf_model_dir = None
        self._executor = SimpleNamespace(resource_governor_queue=None)
        self.llm_id = "realstub"
        self.disaggregated_params = None
        self.input_processor = None
        self.args = SimpleNamespace(
            backend="pytorch",
            trust_remote_code=False,
            checkpoint_format=None,
            post_processor_hook=None,
            return_perf_metrics=False,
            perf_metrics_output_dir=None,
            per_request_spec_decode_stats=False,
            speculative_config=None,
            num_postprocess_workers=settings.workers,
            reasoning_parser=None,
            gather_generation_logits=False,
            guided_decoding_backend=None,
            max_beam_width=1,
            max_batch_size=None,
            kv_cache_config=None,
            enable_iter_perf_stats=False,
            stream_interval=settings.stream_interval,
        )
        self._next_id = 0

    def generate_async(
        self,
        inputs: Any,
        sampling_params: Any = None,
        streaming: bool = False,
        _postproc_params: Any = None,
        **kwargs: Any,
    ) -> FakeGeneration:
        from ...sim.model import engine_responses

        prompt = list(inputs["prompt_token_ids"] if isinstance(inputs, dict) else inputs)
        output = choose_output(prompt)
        last_user = _encoding().decode(prompt).rsplit("<|start|>user", 1)[-1]
        fail = streaming and FAULT_AFTER_END in last_user
        self._next_id += 1
        rid = self._next_id
        record = Record(prompt_token_ids=prompt, id=rid, request_id=rid)
        steps = None
        phase = disaggregated_phase(output, prompt, kwargs.get("disaggregated_params"), rid)
        if phase is not None:
            output, steps = phase.output, phase.steps
            record.cached_tokens = phase.cached_tokens
            record.outputs[0].disaggregated_params = phase.params
        if steps is None and streaming:
            sizes = batch_sizes(len(output.generated), self.settings, output.seed)
            steps = engine_responses(output, sizes)
        elif steps is None:  # a non-streaming request gets one response with every token
            steps = engine_responses(output, max(len(output.generated), 1))
        post = None
        if _postproc_params is not None and self.pool is not None:
            # As the executor does before handing the request to a worker.
            _postproc_params.postproc_args.num_prompt_tokens = len(prompt)
            post = (self.pool, rid)
            generation = FakeGeneration(record, steps, post, fail)
            generation._opening = asyncio.ensure_future(
                self.pool.open(rid, _postproc_params, prompt)
            )
            return generation
        return FakeGeneration(record, steps, post, fail)

    def _check_health(self) -> bool:
        return True

    def shutdown(self) -> None:
        if self.pool is not None:
            self.pool.close()


# -- the server ----------------------------------------------------------------------------


def construct_server(openai_server: Any, llm: FakeLLM) -> Any:
    """``OpenAIServer`` as ``trtllm-serve`` builds it for one gpt-oss model (no tool parser,
    no disaggregation, no metadata server). The one place that knows the constructor."""
    return openai_server.OpenAIServer(
        generator=llm,
        model=MODEL,
        tool_parser=None,
        server_role=None,
        metadata_server_cfg=None,
    )


#: Request fields that newer serve modules read but an older ``openai_protocol`` lacks.
#: All four are set only by a disaggregated-serving orchestrator, never by a client, so a
#: client request has them all ``None``.
ORCHESTRATOR_FIELDS = {
    "ResponsesRequest": (
        "prompt_token_ids",
        "prompt_token_ids_b64",
        "disaggregated_params",
        "conversation_params",
    ),
}


def _relayed_prompt_token_ids(self: Any) -> Any:
    """``ResponsesRequest.relayed_prompt_token_ids()``, which 993c0eec's ``request_preprocess``
    calls and no ``openai_protocol`` in the index defines. The body is the terminal line's
    ``responses_utils._relayed_prompt_token_ids``: the orchestrator's relayed prompt
    (``prompt_token_ids``, else the int32 ``prompt_token_ids_b64``), ``None`` for a client."""
    if self.prompt_token_ids is not None:
        return self.prompt_token_ids
    if not self.prompt_token_ids_b64:
        return None
    import base64

    import numpy as np

    decoded = np.frombuffer(base64.b64decode(self.prompt_token_ids_b64), dtype=np.int32).tolist()
    self.prompt_token_ids = decoded
    return decoded


#: Request methods that newer serve modules call but no ``openai_protocol`` in the index has.
ORCHESTRATOR_METHODS = {
    "ResponsesRequest": {"relayed_prompt_token_ids": _relayed_prompt_token_ids},
}
#: Request bodies of endpoints off the Responses/chat path that ``openai_server`` imports
#: and an ``openai_protocol`` of another commit may lack: name -> optional fields.
OFF_PATH_MODELS = {
    "StartProfileRequest": ("output_dir", "num_steps", "start_step", "activities"),
}


def align_protocol(openai_protocol: Any) -> list[str]:
    """Reconcile a tree whose ``openai_protocol`` comes from another commit than its server
    and ``responses_utils`` (the index has no ``openai_protocol`` at 271a1eda): request models
    get the orchestrator-only fields and methods they lack (default ``None``, what a client
    request carries) and the module gets the off-path request models it lacks. Returns what
    was added (empty for a matching tree); nothing on the Responses or chat path is replaced."""
    import pydantic
    from pydantic.fields import FieldInfo

    added = []
    for model_name, names in ORCHESTRATOR_FIELDS.items():
        model = getattr(openai_protocol, model_name)
        missing = [name for name in names if name not in model.model_fields]
        for name in missing:
            model.model_fields[name] = FieldInfo(annotation=Any, default=None)
            added.append(f"{model_name}.{name}")
        if missing:
            model.model_rebuild(force=True)
    for model_name, methods in ORCHESTRATOR_METHODS.items():
        model = getattr(openai_protocol, model_name)
        for name, method in methods.items():
            if not hasattr(model, name):
                setattr(model, name, method)
                added.append(f"{model_name}.{name}()")
    for model_name, names in OFF_PATH_MODELS.items():
        if not hasattr(openai_protocol, model_name):
            fields: dict[str, Any] = {name: (Any, None) for name in names}
            setattr(openai_protocol, model_name, pydantic.create_model(model_name, **fields))
            added.append(model_name)
    return added


def build_app(source: str, settings: EngineSettings, site_dir: str | None = None) -> Any:
    """Import the real server from ``source`` (realstub must not be active yet) and return
    ``(app, server, added_fields)``."""
    from . import activate

    activate(source)
    from tensorrt_llm.serve import openai_protocol

    added = align_protocol(openai_protocol)
    # An import statement of the dotted name, as upstream's package imports its server
    # (``from .openai_server import ...``): it goes through the audited import, so the
    # plugin's hook is consulted before realstub's finder and patches after it loads.
    import tensorrt_llm.serve.openai_server  # noqa: F401

    openai_server = sys.modules["tensorrt_llm.serve.openai_server"]

    pool = WorkerPool(settings.workers, source, site_dir) if settings.workers else None
    server = construct_server(openai_server, FakeLLM(settings, pool))
    return server.app, server, added


def plugin_site_dir() -> str:
    """A fresh site directory holding this package's ``.pth`` file."""
    from ..pth import install_pth

    path = tempfile.mkdtemp(prefix="trtllm-stream-fix-site-")
    install_pth(path)
    return path


SOURCE_ENV = "TRTLLM_SOURCE_DIR"
PROG = "trtllm-stream-fix serve --engine trtllm-source"
#: Seconds uvicorn keeps an idle connection open, as upstream (``TIMEOUT_KEEP_ALIVE``).
KEEP_ALIVE_S = 5


def source_problem(source: str | None) -> str | None:
    """Why ``source`` cannot be served (None when it can)."""
    if not source:
        return f"no TensorRT-LLM source tree: pass --source DIR or set {SOURCE_ENV}"
    server = os.path.join(source, "tensorrt_llm", "serve", "openai_server.py")
    if not os.path.isfile(server):
        return f"{source}: no tensorrt_llm/serve/openai_server.py (not a TensorRT-LLM source tree)"
    return None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Serve upstream's own openai_server (from a TensorRT-LLM source tree) on "
        "CPU with a fake gpt-oss engine, with or without the fix.",
    )
    p.add_argument("--source", default=os.environ.get(SOURCE_ENV), help=f"default: ${SOURCE_ENV}")
    p.add_argument("--plugin", choices=("on", "off"), default="on", help="load the fix (.pth)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 = any free port")
    p.add_argument("--stream-interval", type=int, default=20, help="iterations per response")
    p.add_argument("--draft-tokens", type=int, default=0, help="0..N accepted drafts per iteration")
    p.add_argument("--workers", type=int, default=0, help="post-processing worker processes")
    p.add_argument("--log-level", default="warning")
    args = p.parse_args(argv)
    problem = source_problem(args.source)
    if problem:
        p.error(problem)
    if args.stream_interval < 1 or args.draft_tokens < 0 or args.workers < 0:
        p.error("--stream-interval must be >= 1, --draft-tokens and --workers >= 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    site_dir = None
    if args.plugin == "on":
        site_dir = plugin_site_dir()
        os.environ.pop("TRTLLM_STREAM_FIX", None)
        site.addsitedir(site_dir)  # runs the .pth line: the import hook is registered
    else:
        os.environ["TRTLLM_STREAM_FIX"] = "0"
    import uvicorn

    from ...sim.http_server import bind

    settings = EngineSettings(args.stream_interval, args.draft_tokens, args.workers)
    app, _, added = build_app(args.source, settings, site_dir)
    if added:
        print(
            f"{PROG}: added to openai_protocol (another commit): {', '.join(added)}",
            file=sys.stderr,
        )
    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    host, port = sock.getsockname()[:2]
    print(f"LISTENING http://{host}:{port}", flush=True)
    print(
        f"upstream openai_server from {args.source} (plugin {args.plugin}, stream_interval "
        f"{args.stream_interval}, workers {args.workers}) on http://{host}:{port}",
        file=sys.stderr,
        flush=True,
    )
    config = uvicorn.Config(app, log_level=args.log_level, timeout_keep_alive=KEEP_ALIVE_S)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
