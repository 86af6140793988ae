# SPDX-License-Identifier: Apache-2.0
"""``trtllm-stream-fix doctor --selftest``: the operator's proof on their own TensorRT-LLM.

Against the stand-in as the "installed" TensorRT-LLM (default tier), and against each real
source tree of ``TRTLLM_SOURCE_DIRS`` / ``TRTLLM_SOURCE_DIR`` when present.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from trtllm_stream_fix.plugin.selftest import passed, verdict_text

pytestmark = pytest.mark.cpu_only

REPO = Path(__file__).resolve().parents[2]
STANDIN = REPO / "tests" / "standin"


def _trees() -> list[str]:
    many = [p for p in os.environ.get("TRTLLM_SOURCE_DIRS", "").split(os.pathsep) if p]
    one = os.environ.get("TRTLLM_SOURCE_DIR")
    return many + ([one] if one and one not in many else [])


def _doctor(*args: str, standin: Path | None = STANDIN, **env: str) -> subprocess.CompletedProcess:
    """``doctor --selftest ARGS`` in a subprocess, with ``standin`` as TensorRT-LLM (None: none)."""
    environ = {k: v for k, v in os.environ.items() if k not in ("TRTLLM_SOURCE_DIR",)}
    environ["PYTHONPATH"] = os.pathsep.join([str(p) for p in (standin, REPO) if p is not None])
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-m", "trtllm_stream_fix.cli", "doctor", "--selftest", *args],
        capture_output=True,
        text=True,
        env=environ,
        timeout=900,
        check=False,
    )


def test_selftest_passes_on_the_installed_standin_and_exits_zero():
    proc = _doctor("--count", "4")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    assert "verdict: PASS" in proc.stdout
    assert "strict checker passes: 12/12" in proc.stdout
    assert "Response store: PASS" in proc.stdout and "round trips: 8/8" in proc.stdout
    assert len(proc.stdout.splitlines()) < 25  # one screen


def test_selftest_on_a_folder_that_is_no_source_tree_says_so(tmp_path):
    proc = _doctor("--source", str(tmp_path), "--count", "2")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"{tmp_path} is not a TensorRT-LLM source tree" in proc.stderr
    assert "FileNotFoundError" not in proc.stdout + proc.stderr


def _edited_standin(tmp_path: Path, module: str, old: str, new: str) -> Path:
    """A copy of the stand-in with one edit in ``serve/<module>.py``."""
    copy = tmp_path / "standin"
    shutil.copytree(STANDIN, copy, ignore=shutil.ignore_patterns("__pycache__"))
    path = copy / "tensorrt_llm" / "serve" / f"{module}.py"
    text = path.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, new))
    return copy


def _selftest_on_edit(tmp_path: Path, old: str, new: str, count: int) -> str:
    """The self-test's output on the stand-in with one edit in ``responses_utils``; it exits 0."""
    standin = _edited_standin(tmp_path, "responses_utils", old, new)
    proc = _doctor("--count", str(count), standin=standin)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    return proc.stdout


def test_an_unrecorded_compatible_shape_passes_every_group(tmp_path):
    """A ``_create_response`` with an optional keyword no recorded line has (as the
    tool-call-ids line lacked one): the usage group installs and every group passes."""
    out = _selftest_on_edit(
        tmp_path,
        "    tokenizer=None,\n):\n    if not use_harmony:\n",
        "    tokenizer=None,\n    tenant=None,\n):\n    if not use_harmony:\n",
        count=2,
    )
    for title in ("Responses streaming", "Chat Completions", "Response model"):
        assert f"{title}: PASS" in out
    assert "Non-streaming usage: PASS" in out and "verdict: PASS" in out


#: Per optional group: an edit that gives its target another shape, and what the verdict
#: then says of the group (refused, why, and what is off without it).
REFUSED_OPTIONAL = {
    "usage": (
        "    tokenizer=None,\n):\n    if not use_harmony:\n",
        "    tokenizer=None,\n) -> ResponsesResponse:\n    if not use_harmony:\n",
        (
            "Non-streaming usage: REFUSED (",
            "returns responsesresponse, not tuple",
            "off: Non-streaming usage: a non-streaming Harmony body reports reasoning_tokens 0",
        ),
    ),
    "store": (
        "    async def pop_response(self, resp_id: str | None = None) -> bool:",
        "    async def pop_response(self, resp_id: str, tenant: str) -> bool:",
        (
            "Response store: REFUSED (",
            "pop_response",
            "off: Response store: upstream's in-process store keeps 16 responses",
        ),
    ),
}


@pytest.mark.parametrize("group", REFUSED_OPTIONAL)
def test_a_refused_optional_group_leaves_the_others_passing_and_exits_zero(tmp_path, group):
    """A target of another shape (``_create_response`` annotated to return another kind, a
    store whose ``pop_response`` takes other parameters) refuses its optional group only: the
    streams still run, every installed group passes, the verdict names the group as off."""
    old, new, said = REFUSED_OPTIONAL[group]
    out = _selftest_on_edit(tmp_path, old, new, count=4)
    for text in said:
        assert text in out, out
    assert "Responses streaming: PASS" in out and "strict checker passes: 12/12" in out
    assert "Chat Completions: PASS" in out and "Response model: PASS" in out
    assert "verdict: PASS; 1 optional group(s) off" in out
    assert "no Responses stream was run" not in out


RESPONSES_PATH = ("openai_protocol", "harmony_adapter", "responses_utils", "postprocess_handlers")


def _store_not_checked(out: str, where: Path) -> None:
    line = next(x for x in out.splitlines() if x.startswith("Response store:"))
    assert line.startswith("Response store: NOT CHECKED ("), out
    assert f"{where / 'tensorrt_llm' / 'serve' / 'openai_server.py'} is missing" in line
    assert "NotImplementedError" not in out and "ModuleNotFoundError" not in out


def test_an_install_without_openai_server_leaves_the_store_not_checked(tmp_path):
    """A partial install (no ``serve/openai_server.py``): the store cannot be checked there,
    the verdict says so and why, and passes on the groups that ran."""
    standin = tmp_path / "standin"
    shutil.copytree(STANDIN, standin, ignore=shutil.ignore_patterns("__pycache__"))
    (standin / "tensorrt_llm" / "serve" / "openai_server.py").unlink()
    proc = _doctor("--count", "2", standin=standin)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    _store_not_checked(proc.stdout, standin)
    assert "Responses streaming: PASS" in proc.stdout
    assert "verdict: PASS; 1 optional group(s) not checked" in proc.stdout


@pytest.mark.parametrize("tree", _trees() or [None], ids=lambda t: Path(t).name if t else "none")
def test_a_source_of_the_responses_path_files_only_leaves_the_store_not_checked(tree, tmp_path):
    """``--source`` naming a partial checkout: the four Responses-path files of a real tree,
    no ``openai_server.py``."""
    if tree is None:
        pytest.skip("TRTLLM_SOURCE_DIRS / TRTLLM_SOURCE_DIR not set: no real source tree")
    serve = tmp_path / "tensorrt_llm" / "serve"
    serve.mkdir(parents=True)
    for name in RESPONSES_PATH:
        shutil.copy2(Path(tree, "tensorrt_llm", "serve", f"{name}.py"), serve)
    proc = _doctor("--source", str(tmp_path), "--count", "4", standin=None)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    _store_not_checked(proc.stdout, tmp_path)
    assert "Responses streaming: PASS" in proc.stdout and "verdict: PASS" in proc.stdout


def test_a_not_checked_optional_group_does_not_fail_but_a_required_one_does():
    probe = {"ok": True, "not_checked": "why", "summary": [], "first_failure": None}
    store = {"name": "store", "title": "Response store", "required": False, "when_off": ""}
    streams = {"name": "responses", "title": "Responses streaming", "required": True}
    result = {
        "source": "x",
        "groups": [
            dict(streams, state="installed", probe={"ok": True}),
            dict(store, state="installed", probe=probe),
        ],
    }
    assert passed(result)
    assert "Response store: NOT CHECKED (why)" in verdict_text(result)
    result["groups"][0]["probe"] = probe
    assert not passed(result)


def test_an_unreachable_redis_store_fails_the_store_group(tmp_path):
    proc = _doctor("--count", "4", TRTLLM_STREAM_FIX_STORE="redis://127.0.0.1:1/0?timeout=0.5")
    out = proc.stdout
    assert proc.returncode != 0, out
    assert "Response store: FAIL" in out and "unavailable" in out, out


def test_a_failing_stream_fails_its_group_and_names_the_stream(tmp_path):
    """A post-processor that drops the terminal frame: the Responses group FAILs with the
    first failing stream named, the verdict is FAIL and the exit status 1."""
    standin = _edited_standin(
        tmp_path, "postprocess_handlers", "    if rsp._done:\n", "    if False:\n"
    )
    proc = _doctor("--count", "2", standin=standin)
    assert proc.returncode == 1, proc.stdout + proc.stderr[-2000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("Responses streaming:"))
    assert line.startswith("Responses streaming: FAIL (") and "seed=" in line
    assert "verdict: FAIL" in proc.stdout


def test_the_required_group_refused_fails_the_verdict():
    group = {"name": "responses", "title": "Responses streaming", "required": True}
    refused = {"source": "x", "groups": [dict(group, state="refused", detail="why", when_off="")]}
    assert not passed(refused)
    text = verdict_text(refused)
    assert "Responses streaming: REFUSED (why)" in text and "verdict: FAIL" in text
    assert "no Responses stream was run: the streaming group did not install" in text


@pytest.mark.parametrize("tree", _trees() or [None], ids=lambda t: Path(t).name if t else "none")
def test_selftest_passes_on_each_real_version_line(tree):
    if tree is None:
        pytest.skip("TRTLLM_SOURCE_DIRS / TRTLLM_SOURCE_DIR not set: no real source tree")
    proc = _doctor("--source", tree, "--count", "10")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    assert "verdict: PASS" in proc.stdout


def test_selftest_without_trtllm_points_at_source():
    proc = _doctor("--count", "1", standin=None)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "TensorRT-LLM is not installed" in proc.stderr
    assert "--source DIR" in proc.stderr and "TRTLLM_SOURCE_DIR" in proc.stderr
    assert "ModuleNotFoundError" not in proc.stdout + proc.stderr


def test_a_server_handler_of_another_shape_refuses_the_websocket_group_only(tmp_path):
    """``openai_responses`` without ``raw_request`` cannot be fed a socket: the group is
    refused with the target and why, the verdict names it as off and still passes."""
    standin = _edited_standin(
        tmp_path,
        "openai_server",
        "self, request: ResponsesRequest, raw_request: Request = None",
        "self, request: ResponsesRequest",
    )
    proc = _doctor("--count", "2", standin=standin)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    assert "Responses WebSocket mode: REFUSED (" in proc.stdout
    assert "OpenAIServer.openai_responses" in proc.stdout
    assert "off: Responses WebSocket mode: GET /v1/responses is not upgraded" in proc.stdout
    assert "verdict: PASS; 1 optional group(s) off" in proc.stdout
