# SPDX-License-Identifier: Apache-2.0
"""The fix in other interpreters: spawned (MPI executor workers), forked (PostprocWorkers).

Contract: a fresh interpreter with the ``.pth`` hook patches TensorRT-LLM when it imports
it; a forked child inherits the patch; a processor pickled and unpickled as the workers
receive it runs the fixed path either way (its class travels by reference). ``doctor`` sees
the difference between an interpreter with the hook and one without; ``run_trtllm_serve``
hands upstream's CLI a server whose processor is the fixed one.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "standin"))
import plugin_harness as harness

harness.use_standin()

from tensorrt_llm.serve import openai_server

from trtllm_stream_fix.plugin import bootstrap, pth
from trtllm_stream_fix.plugin.doctor import doctor_report
from trtllm_stream_fix.plugin.installer import is_active, uninstall
from trtllm_stream_fix.sim.model import named_output

pytestmark = pytest.mark.cpu_only

REPO = Path(__file__).resolve().parents[2]
SCENARIO = "preamble_tool_call"


@pytest.fixture
def site_dir(tmp_path):
    """A site directory holding our ``.pth`` file, as an installed wheel would."""
    pth.install_pth(tmp_path)
    return tmp_path


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TRTLLM_STREAM_FIX"}
    env["PYTHONPATH"] = os.pathsep.join([str(harness.STANDIN_DIR), str(REPO)])
    env.update(extra)
    return env


def _shipped() -> bytes:
    """A processor pickled as the executor ships it to a PostprocWorker."""
    return pickle.dumps(harness.new_processor(tools=[_tool()]))


def _expected(shipped: bytes, split: int = 20) -> list[dict]:
    """The client-visible body events of the scenario, driven in this process."""
    return harness.comparable(
        harness.frames_to_events(
            harness.drive(pickle.loads(shipped), named_output(SCENARIO), split)
        )
    )


def _tool() -> dict:
    return {
        "type": "function",
        "name": "get_weather",
        "description": "weather",
        "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
    }


def _spawn(prelude: str, env: dict[str, str], shipped: bytes, split: int = 20) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", prelude + harness.WORKER_CODE, shipped.hex(), SCENARIO, str(split)],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(harness.STANDIN_DIR),
        timeout=120,
        check=False,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, proc.stderr[-2000:]
    return json.loads(lines[0][len("RESULT ") :])


def test_packaged_pth_file_holds_the_current_hook_line():
    assert pth.PACKAGED_PTH.read_text().splitlines()[-1] + "\n" == pth.pth_line()


def test_spawned_interpreter_with_the_pth_runs_the_fixed_path(fixed, site_dir):
    shipped = _shipped()
    result = _spawn(f"import site; site.addsitedir({str(site_dir)!r})\n", _env(), shipped)
    assert result["hook"] and result["active"]
    assert result["class"] == "trtllm_stream_fix.plugin.processor"
    body = harness.comparable(harness.frames_to_events(result["frames"]))
    assert body == _expected(shipped)
    assert body[-1]["type"] == "response.completed"


def test_pth_is_a_no_op_when_disabled(fixed, site_dir):
    env = _env(TRTLLM_STREAM_FIX="0")
    result = _spawn(f"import site; site.addsitedir({str(site_dir)!r})\n", env, _shipped())
    assert not result["hook"] and not result["active"]


def test_unpickled_processor_is_fixed_even_without_the_pth(fixed):
    shipped = _shipped()
    result = _spawn("", _env(), shipped, split=1)
    assert not result["hook"] and not result["active"]  # nothing patched in that process
    body = harness.comparable(harness.frames_to_events(result["frames"]))
    assert body == _expected(shipped)  # ... yet the pickled processor streams correctly


def _forked_worker(shipped: bytes, queue) -> None:
    processor = pickle.loads(shipped)
    frames = harness.drive(processor, named_output(SCENARIO), 7)
    queue.put((is_active(), openai_server.ResponsesStreamingProcessor.__module__, frames))


def test_forked_child_inherits_the_patch(fixed):
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    shipped = _shipped()
    child = context.Process(target=_forked_worker, args=(shipped, queue))
    child.start()
    active, module, frames = queue.get(timeout=60)
    child.join(timeout=60)
    assert child.exitcode == 0
    assert active and module == "trtllm_stream_fix.plugin.processor"
    assert harness.comparable(harness.frames_to_events(frames)) == _expected(shipped)


def test_doctor_tells_a_worker_with_the_hook_from_one_without(fixed, site_dir):
    with_hook = doctor_report(
        prelude=f"import site; site.addsitedir({str(site_dir)!r})\n", env=_env()
    )
    assert with_hook.active_here and with_hook.worker["active"] and with_hook.ok
    # Installed targets are judged by upstream's originals: each matches a recorded line.
    odd = [
        (c.target.path, c.status) for c in with_hook.checks if c.status not in ("ok", "other-line")
    ]
    assert not odd, odd
    text = with_hook.to_text()
    assert "fix active in a freshly spawned interpreter: yes" in text
    assert "openai-harmony" in text
    without = doctor_report(env=_env())
    assert not without.worker["active"] and not without.ok


def test_run_trtllm_serve_hands_upstream_the_fixed_processor(monkeypatch):
    from tensorrt_llm.commands import serve as upstream_serve

    from trtllm_stream_fix.plugin.serve import run_trtllm_serve

    monkeypatch.delenv("TRTLLM_STREAM_FIX", raising=False)
    uninstall()
    meta_path = list(sys.meta_path)
    try:
        code = run_trtllm_serve(["gpt-oss-20b", "--extra_llm_api_options", "cfg.yaml"])
        assert code == 0
        call = upstream_serve.LAST_CALL
        assert call["model"] == "gpt-oss-20b"
        assert call["extra"] == ["--extra_llm_api_options", "cfg.yaml"]
        assert getattr(call["processor"], "__trtllm_stream_fix__", False)
        assert bootstrap.hook_enabled()
    finally:
        sys.meta_path[:] = meta_path
        uninstall()


def test_worker_reads_the_upstream_parity_switch_from_its_environment(fixed):
    """Workers inherit the server's environment: TRTLLM_STREAM_FIX_PREAMBLES=drop applies."""
    shipped = _shipped()
    dropped = _spawn("", _env(TRTLLM_STREAM_FIX_PREAMBLES="drop"), shipped)
    kept = _spawn("", _env(), shipped)

    def phases(result: dict) -> list:
        events = harness.frames_to_events(result["frames"])
        return [i.get("phase") for i in events[-1]["response"]["output"] if i["type"] == "message"]

    assert "commentary" in phases(kept)
    assert "commentary" not in phases(dropped)
