# SPDX-License-Identifier: Apache-2.0
"""The command line: validate against the local server, replay records, delegates."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

from trtllm_stream_fix import cli
from trtllm_stream_fix.checker import StreamRecord
from trtllm_stream_fix.sim import EngineConfig, create_app, serve_in_thread


@pytest.fixture(scope="module")
def base_url():
    with serve_in_thread(create_app(EngineConfig(stream_interval=20))) as url:
        yield url


def test_validate_ok_saves_a_record_that_replays(base_url, tmp_path, capsys):
    saved = tmp_path / "record.json"
    assert cli.main(["validate", "--url", base_url, "--save", str(saved), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["outcome"] == "ok" and summary["events"] > 4
    assert cli.main(["replay", str(saved), "--json"]) == 0
    replayed = json.loads(capsys.readouterr().out)
    assert replayed["outcome"] == "ok" and replayed["events"] == summary["events"]
    assert replayed["request_id"] == summary["request_id"]


def test_replay_of_a_tampered_record_fails(base_url, tmp_path, capsys):
    saved = tmp_path / "record.json"
    assert cli.main(["validate", "--url", base_url, "--save", str(saved)]) == 0
    record = json.loads(saved.read_text())
    del record["events"][-1]  # drop the terminal event
    saved.write_text(json.dumps(record))
    capsys.readouterr()
    assert cli.main(["replay", str(saved), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["outcome"] == "eof_before_terminal"


def test_validate_length_cut_needs_allow_incomplete(base_url, capsys):
    args = ["validate", "--url", base_url, "--extra", "scenario=length_cut", "--json"]
    assert cli.main(args) == 1
    assert json.loads(capsys.readouterr().out)["outcome"] == "incomplete"
    assert cli.main([*args, "--allow-incomplete"]) == 0


def test_validate_reports_http_errors(base_url, capsys):
    assert cli.main(["validate", "--url", base_url, "--model", "nope", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["outcome"] == "http_error"


def test_validate_stream_interval_field_keeps_output(base_url, capsys):
    texts = []
    for interval in ("1", "3"):
        assert cli.main(["validate", "--url", base_url, "--stream-interval", interval]) == 0
        texts.append(capsys.readouterr().out)
    first, second = (t.split("\n", 1)[1] for t in texts)
    assert first == second  # same items and texts, whatever the batching


def test_replay_of_a_missing_file_is_a_clear_error(tmp_path, capsys):
    assert cli.main(["replay", str(tmp_path / "missing.json")]) == 2
    assert "cannot replay" in capsys.readouterr().err


def test_missing_delegate_module_is_a_clear_error(capsys):
    assert cli._delegate("no_such_module", "main", []) == 2
    assert "unavailable" in capsys.readouterr().err


def test_delegates_receive_their_arguments(monkeypatch):
    calls = []
    fake = types.ModuleType("trtllm_stream_fix.plugin")
    fake.serve_trtllm_main = lambda argv: calls.append(("serve", argv)) or 0
    fake.doctor_main = lambda argv: calls.append(("doctor", argv)) or 3
    monkeypatch.setitem(sys.modules, "trtllm_stream_fix.plugin", fake)
    assert cli.main(["serve", "model-dir", "--engine", "trtllm", "--port", "9000"]) == 0
    assert cli.main(["doctor", "--json"]) == 3
    assert calls == [("serve", ["model-dir", "--port", "9000"]), ("doctor", ["--json"])]


def test_no_command_prints_help(capsys):
    assert cli.main([]) == 2
    assert "validate" in capsys.readouterr().out


_RUN_CLI = "from trtllm_stream_fix.cli import main\ntry:\n    main([{!r}])\nexcept SystemExit: pass"


@pytest.mark.parametrize(
    "code",
    ["import trtllm_stream_fix", _RUN_CLI.format("--version"), _RUN_CLI.format("--help")],
    ids=["import", "--version", "--help"],
)
def test_version_and_help_do_not_import_openai(code: str) -> None:
    # openai takes ~1.5 s to import: --version and --help answer without it.
    probe = (
        f"{code}\nimport sys\nprint(sorted(m for m in ('openai', 'pydantic') if m in sys.modules))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stdout


def test_lazy_names_resolve() -> None:
    import trtllm_stream_fix

    for name in trtllm_stream_fix.__all__:
        assert getattr(trtllm_stream_fix, name).__name__ == name
    with pytest.raises(AttributeError, match="no_such_name"):
        trtllm_stream_fix.no_such_name  # noqa: B018


def test_extra_without_equals_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["validate", "--url", "http://127.0.0.1:9", "--extra", "foo"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--extra" in err and "'foo' is not KEY=JSON" in err


def test_extra_values_are_json_or_strings():
    args = cli.build_parser(with_scenarios=False).parse_args(
        ["validate", "--url", "http://h", "--extra", "n=5", "--extra", "s=length_cut"]
    )
    _, body = cli._request_body(args)
    assert body["n"] == 5 and body["s"] == "length_cut"


def test_incomplete_stream_names_allow_incomplete(base_url, capsys):
    assert cli.main(["validate", "--url", base_url, "--max-output-tokens", "5"]) == 1
    captured = capsys.readouterr()
    assert "incomplete" in captured.out and "--allow-incomplete" in captured.err


def _chat_sse(base_url: str, tmp_path) -> Path:
    saved = tmp_path / "chat.json"
    args = ["validate", "--url", base_url, "--protocol", "chat", "--save", str(saved)]
    assert cli.main(args) == 0
    raw = tmp_path / "chat.sse"
    raw.write_bytes(StreamRecord.load(saved).sse_body())
    return raw


def test_replay_of_raw_sse_without_protocol_names_the_flag(base_url, tmp_path, capsys):
    raw = _chat_sse(base_url, tmp_path)
    capsys.readouterr()
    assert cli.main(["replay", str(raw)]) == 2
    err = capsys.readouterr().err
    assert "--protocol {responses,chat,triton}" in err and "--protocol chat" in err


def test_replay_with_the_wrong_protocol_suggests_the_right_one(base_url, tmp_path, capsys):
    raw = _chat_sse(base_url, tmp_path)
    capsys.readouterr()
    assert cli.main(["replay", str(raw), "--protocol", "responses"]) == 1
    err = capsys.readouterr().err
    assert "this looks like a chat.completion.chunk stream" in err and "--protocol chat" in err


@pytest.mark.parametrize("extra", [[], ["--help"]])
def test_serve_engine_trtllm_without_trtllm_says_where_to_run_it(monkeypatch, capsys, extra):
    monkeypatch.setitem(sys.modules, "tensorrt_llm", None)  # not importable here
    for name in [m for m in sys.modules if m.startswith("tensorrt_llm.")]:
        monkeypatch.delitem(sys.modules, name)  # the stand-in an earlier test imported
    assert cli.main(["serve", "--engine", "trtllm", *extra]) == 2
    err = capsys.readouterr().err
    assert "TensorRT-LLM is not installed" in err
    assert "Python that has TensorRT-LLM" in err and "--engine trtllm-source" in err
