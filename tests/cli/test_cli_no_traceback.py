# SPDX-License-Identifier: Apache-2.0
"""A CLI that never shows a traceback: escaped server text, clear errors, useful output."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import httpx
import pytest
import tomllib
from _checker_streams import to_sse, valid_stream

from trtllm_stream_fix import cli
from trtllm_stream_fix.demo import DEMO_REQUESTS, run_demo
from trtllm_stream_fix.differential.responses import Tally, _example, check_main
from trtllm_stream_fix.plugin.doctor import DoctorReport
from trtllm_stream_fix.sim import EngineConfig, create_app, serve_in_thread
from trtllm_stream_fix.sim.sdk_client import describe_failure

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def base_url():
    with serve_in_thread(create_app(EngineConfig(stream_interval=20))) as url:
        yield url


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ---------------------------------------------------------------------- escaped output


def test_replay_prints_an_item_id_that_looks_like_markup(tmp_path, capsys):
    events = valid_stream()
    events[2]["item"]["id"] = "[/bad]"  # the reasoning item's added event
    path = tmp_path / "stream.sse"
    path.write_bytes(to_sse(events))
    assert cli.main(["replay", str(path), "--protocol", "responses"]) == 1
    out = capsys.readouterr().out
    assert "[/bad]" in out
    assert "[item-id]" in out


def test_rule_tags_show_in_normal_output(tmp_path, capsys):
    path = tmp_path / "stream.sse"
    path.write_bytes(to_sse(valid_stream()[:-1]))  # no terminal event
    assert cli.main(["replay", str(path), "--protocol", "responses"]) == 1
    assert "[no-terminal]" in capsys.readouterr().out


# ---------------------------------------------------------------------- serve


def test_serve_with_an_impossible_port_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["serve", "--port", "99999"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "usage: trtllm-stream-fix serve" in err and "99999" in err
    assert "Traceback" not in err


def test_serve_on_a_busy_port_says_so_without_a_banner(capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert cli.main(["serve", "--port", str(port)]) == 1
    err = capsys.readouterr().err
    assert f"cannot listen on 127.0.0.1:{port}" in err
    assert "http://" not in err


def test_serve_banner_names_the_bound_port_once_it_listens():
    proc = subprocess.Popen(
        [sys.executable, "-m", "trtllm_stream_fix.cli", "serve", "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        banner = proc.stderr.readline()
        match = re.search(r"on http://127\.0\.0\.1:(\d+)", banner)
        assert match, banner
        port = int(match.group(1))
        assert port != 0
        health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=30)
        assert health.status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        proc.stderr.close()


# ---------------------------------------------------------------------- plugin


def test_install_pth_into_a_missing_directory_is_a_clear_error(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["plugin", "install-pth", "--site-dir", "/nonexistent/dir"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "/nonexistent/dir: no such directory" in err and "Traceback" not in err


def test_install_pth_into_a_read_only_directory_is_a_clear_error(tmp_path, capsys):
    if os.geteuid() == 0:
        pytest.skip("root writes to read-only directories")
    tmp_path.chmod(0o500)
    try:
        assert cli.main(["plugin", "install-pth", "--site-dir", str(tmp_path)]) == 1
    finally:
        tmp_path.chmod(0o700)
    assert "Permission denied" in capsys.readouterr().err


def test_an_unexpected_error_is_one_line(monkeypatch, capsys):
    def broken(args, rest):
        raise RuntimeError("something odd")

    monkeypatch.setattr(cli, "_replay", broken)
    monkeypatch.delenv(cli.TRACEBACK_ENV, raising=False)
    assert cli.main(["replay", "x"]) == 1
    err = capsys.readouterr().err
    assert "unexpected error: RuntimeError: something odd" in err and "Traceback" not in err


# ---------------------------------------------------------------------- validate


def test_validate_shows_the_http_error_body_and_the_url(base_url, capsys):
    assert cli.main(["validate", "--url", base_url, "--model", "nope"]) == 1
    out = capsys.readouterr().out
    assert f"url: {base_url}/v1/responses" in out
    assert "model 'nope' not found" in out and "model_not_found" in out
    assert cli.main(["validate", "--url", base_url, "--model", "nope", "--json"]) == 1
    summary = json.loads(capsys.readouterr().out)
    assert summary["url"] == f"{base_url}/v1/responses"
    assert "model_not_found" in summary["http_body"]


@pytest.mark.parametrize("protocol", ["responses", "chat", "triton"])
def test_validate_transport_error_has_no_stream_verdicts(protocol, capsys):
    url = f"http://127.0.0.1:{_free_port()}"
    assert cli.main(["validate", "--url", url, "--protocol", protocol]) == 1
    out = capsys.readouterr().out
    assert out.startswith("transport_error")
    assert "no terminal" not in out and "not-final" not in out and "done-missing" not in out
    assert "[] ''" not in out
    assert "violation" not in out


def _triton_app():
    """A Triton ``generate_stream`` endpoint streaming one request: "Hel", "lo", "!" (final)."""
    from fastapi import FastAPI
    from fastapi.responses import StreamingResponse

    app = FastAPI()

    @app.post("/v2/models/{model}/generate_stream")
    async def generate(model: str):
        pieces = [("Hel", False), ("lo", False), ("!", True)]

        async def frames():
            for text, final in pieces:
                frame = {"id": "validate-1", "model_name": model, "text_output": text}
                frame |= {"triton_final_response": True} if final else {}
                yield f"data: {json.dumps(frame)}\n\n"

        return StreamingResponse(frames(), media_type="text/event-stream")

    return app


def test_validate_triton_names_each_request_not_an_empty_tag(capsys):
    with serve_in_thread(_triton_app()) as url:
        code = cli.main(["validate", "--url", url, "--protocol", "triton", "--model", "m"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "[]" not in out  # each assembled request is named by its id and state
    assert "[request validate-1: final_received] 'Hello!'" in out


def test_a_bad_flag_shows_the_subcommand_usage(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["validate", "--url", "http://127.0.0.1:1", "--bogus"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "usage: trtllm-stream-fix validate" in err and "--bogus" in err


# ---------------------------------------------------------------------- demo / check


def test_sdk_failure_is_described_in_words():
    from openai._models import construct_type
    from openai._types import omit
    from openai.lib.streaming.responses import ResponseStreamState
    from openai.types.responses import ResponseStreamEvent

    events = valid_stream()
    delta_at = next(i for i, e in enumerate(events) if e["type"] == "response.output_text.delta")
    events[delta_at]["output_index"] = 0  # a text delta aimed at the reasoning item
    state = ResponseStreamState(text_format=omit, input_tools=omit)
    accepted = []
    with pytest.raises(AssertionError) as raised:
        for event in events:
            state.handle_event(construct_type(type_=ResponseStreamEvent, value=event))
            accepted.append(event["type"])
    assert str(raised.value) == ""  # the SDK's own message says nothing
    text = describe_failure(raised.value, accepted)
    assert text.startswith('AssertionError at `assert output.type == "message"`'), text
    assert f"the SDK accepted {delta_at} events, the last {events[delta_at - 1]['type']}" in text


def test_demo_reports_progress_and_why_each_upstream_stream_failed():
    calls = []
    results = run_demo((1, 20), DEMO_REQUESTS[:2], progress=lambda *call: calls.append(call))
    assert [done for done, _, _ in calls] == list(range(1, 9))
    assert {total for _, total, _ in calls} == {8}
    failed = [r for r in results if not r.ok]
    assert failed and all(r.generator == "upstream" for r in failed)
    for r in failed:
        reasons = r.reasons(1)
        assert reasons, r
        for reason in reasons:
            assert not reason.rstrip().endswith(":"), reason  # never a bare "AssertionError: "
            assert len(reason.split()) >= 4, reason


def test_check_json_includes_the_raised_count(capsys):
    assert check_main(["--outputs", "2", "--json"]) in (0, 1)
    summary = json.loads(capsys.readouterr().out)
    for impl in ("ours", "upstream"):
        assert summary[impl]["raised"] == 0


def test_check_examples_are_cut_at_a_word_boundary():
    text = "seed 3 (x) split 20: " + " ".join(f"word{i}" for i in range(100))
    tally = Tally()
    _example(tally, text)
    (kept,) = tally.examples
    assert kept.endswith(" ...") and len(kept) <= 240
    prefix = kept.removesuffix(" ...")
    assert text.startswith(prefix) and text[len(prefix)] == " "


# ---------------------------------------------------------------------- doctor, repo hygiene


def test_doctor_on_an_editable_install_says_what_to_run():
    report = DoctorReport(
        versions={},
        mode="on",
        pth_files=[],
        hook_registered=True,
        upstream_importable=True,
        active_here=True,
        worker={"active": False, "hook": False, "error": None},
        editable=True,
    )
    text = report.to_text()
    assert "verdict: NOT ACTIVE EVERYWHERE, because:" in text
    assert "editable install" in text
    assert "run `trtllm-stream-fix plugin install-pth`" in text


def test_doctor_explains_a_hook_registered_without_a_pth_file():
    report = DoctorReport(
        versions={},
        mode="on",
        pth_files=[],
        hook_registered=True,
        upstream_importable=False,
    )
    (line,) = [x for x in report.to_text().splitlines() if x.startswith("import hook registered")]
    assert "not by a .pth file" in line and "other processes do not get it" in line, line


HELP_COMMANDS = ["serve", "validate", "replay", "demo", "check", "doctor", "plugin", "upstream-pr"]


@pytest.mark.parametrize("command", HELP_COMMANDS)
def test_help_is_plain_text_with_a_description(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main([command, "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for markup in ("``", ":class:`", ":mod:`", ":func:`", ":data:`", ":meth:`"):
        assert markup not in text, (command, markup)
    usage, _, rest = text.partition("\n\n")
    assert usage.startswith(f"usage: trtllm-stream-fix {command}")
    assert not rest.startswith(("options:", "positional arguments:")), f"{command}: no description"


def test_serve_help_names_both_endpoints(capsys):
    with pytest.raises(SystemExit):
        cli.main(["serve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "/v1/responses" in text and "/v1/chat/completions" in text


def test_benchmark_quick_results_are_git_ignored():
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    for name in ("cpu_event_cost_quick.json", "cpu_event_cost_quick.png", "serve_load_quick.md"):
        proc = subprocess.run(
            ["git", "check-ignore", "-q", f"benchmarks/results/{name}"], cwd=ROOT, check=False
        )
        assert proc.returncode == 0, name
    published = subprocess.run(
        ["git", "check-ignore", "-q", "benchmarks/results/cpu_event_cost.json"],
        cwd=ROOT,
        check=False,
    )
    assert published.returncode == 1


def test_ruff_is_pinned_to_the_version_that_passes_the_style_gate():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    (spec,) = [s for s in extras["test"] if s.startswith("ruff")]
    assert re.fullmatch(r"ruff==\d+\.\d+\.\d+", spec), spec
    try:
        installed = version("ruff")
    except Exception:
        pytest.skip("ruff is not installed")
    assert spec == f"ruff=={installed}"


def test_operators_doc_names_every_example_config():
    text = (ROOT / "docs" / "operators.md").read_text()
    for config in sorted((ROOT / "examples" / "configs").glob("*.yaml")):
        assert f"examples/configs/{config.name}" in text, config.name
