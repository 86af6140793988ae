# SPDX-License-Identifier: Apache-2.0
"""The benchmark scripts run on CPU and report what their docs promise."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"


def run_script(
    name: str, *args: str, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(BENCH / name), *args],
        capture_output=True,
        check=False,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=env,
    )


def test_cpu_event_cost_quick_json_shape(tmp_path: Path) -> None:
    proc = run_script(
        "cpu_event_cost.py",
        "--quick",
        "--json",
        "--impls",
        "floor,upstream,ours",
        "--out",
        str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert list(report) == ["rows"]
    rows = report["rows"]
    seen = {(row["tokens"], row["stream_interval"], row["impl"]) for row in rows}
    for tokens in ("300+300", "1000+1000"):
        for interval in (1, 20):
            for impl in ("floor", "upstream", "ours"):
                assert (tokens, interval, impl) in seen
    repeats: dict[tuple[str, int], set[int]] = {}
    for row in rows:
        assert set(row) == {
            "tokens",
            "stream_interval",
            "impl",
            "us_per_token",
            "ratio_to_floor",
            "repeat",
        }
        assert row["us_per_token"] > 0
        assert row["ratio_to_floor"] > 0
        assert row["repeat"] >= 1
        repeats.setdefault((row["tokens"], row["stream_interval"]), set()).add(row["repeat"])
        if row["impl"] == "floor":
            assert row["ratio_to_floor"] == 1.0
    assert all(len(counts) == 1 for counts in repeats.values())  # one count per cell
    assert (tmp_path / "cpu_event_cost_quick.json").is_file()
    assert (tmp_path / "cpu_event_cost_quick.md").read_text().count("|") > 10
    assert (tmp_path / "cpu_event_cost_quick.png").read_bytes()[:4] == b"\x89PNG"
    assert "ours <= " in proc.stderr  # target verdicts are printed


def _cpu_event_cost_real(out: Path, **kwargs) -> subprocess.CompletedProcess:
    """``cpu_event_cost.py --quick`` over the floor and the real Responses modules."""
    impls = "floor,upstream-real,plugin-real"
    return run_script(
        "cpu_event_cost.py", "--quick", "--json", "--impls", impls, "--out", str(out), **kwargs
    )


def test_cpu_event_cost_real_impls_skip_without_source(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TRTLLM_SOURCE_DIR"}
    proc = _cpu_event_cost_real(tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert {row["impl"] for row in json.loads(proc.stdout)["rows"]} == {"floor"}
    report = json.loads((tmp_path / "cpu_event_cost_quick.json").read_text())
    assert report["skipped"] == dict.fromkeys(
        ("upstream-real", "plugin-real"), "TRTLLM_SOURCE_DIR not set"
    )
    assert "`plugin-real` skipped: TRTLLM_SOURCE_DIR not set" in (
        (tmp_path / "cpu_event_cost_quick.md").read_text()
    )


@pytest.mark.skipif(
    not os.environ.get("TRTLLM_SOURCE_DIR"),
    reason="TRTLLM_SOURCE_DIR is not set (no TensorRT-LLM sources to measure)",
)
def test_cpu_event_cost_real_upstream_and_plugin(tmp_path: Path) -> None:
    """The real Responses modules, unpatched and patched, are timed in their worker."""
    proc = _cpu_event_cost_real(tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)["rows"]
    report = json.loads((tmp_path / "cpu_event_cost_quick.json").read_text())
    assert report["skipped"] == {}
    assert {(r["tokens"], r["stream_interval"], r["impl"]) for r in rows} == {
        (tokens, interval, impl)
        for tokens in ("300+300", "1000+1000")
        for interval in (1, 20)
        for impl in ("floor", "upstream-real", "plugin-real")
    }
    for row in rows:
        assert row["us_per_token"] > 0
        assert row["ratio_to_floor"] > 0
    assert "plugin-real faster than upstream-real" in proc.stderr  # its verdict is printed


def _burn(us: float) -> None:
    """Spend ``us`` of this thread's CPU time."""
    end = time.thread_time_ns() + us * 1e3
    while time.thread_time_ns() < end:
        pass


def _bench_module():
    sys.path.insert(0, str(BENCH))
    try:
        import cpu_event_cost
    finally:
        sys.path.remove(str(BENCH))
    return cpu_event_cost


def test_time_replay_repeats_with_untimed_resets() -> None:
    bench = _bench_module()
    calls: list[str] = []

    def run(batches: list) -> int:
        calls.append("run")
        _burn(1_000)
        return 0

    def reset() -> None:
        calls.append("reset")
        _burn(5_000)

    run.prepare = lambda: calls.append("prepare")  # type: ignore[attr-defined]
    run.reset = reset  # type: ignore[attr-defined]
    us = bench.time_replay(run, [], 3)
    assert calls == ["prepare"] + ["reset", "run"] * 3
    assert 1_000 <= us < 3_000  # µs per replay; the 5 ms resets are not timed


def test_time_replay_prepares_inputs_untimed() -> None:
    bench = _bench_module()
    seen: list[object] = []

    def run(results: object) -> int:
        seen.append(results)
        _burn(1_000)
        return 0

    def inputs(batches: list) -> object:
        _burn(5_000)
        return ("prepared", len(batches))

    run.inputs = inputs  # type: ignore[attr-defined]
    us = bench.time_replay(run, [([1], True)], 2)
    assert seen == [("prepared", 1)] * 2
    assert 1_000 <= us < 3_000  # the 5 ms preparations are not timed


def test_engine_results_are_what_the_post_processor_reads() -> None:
    sys.path.insert(0, str(BENCH))
    try:
        import _processor
    finally:
        sys.path.remove(str(BENCH))
    from trtllm_stream_fix.core.harmony_tokens import RETURN

    results = _processor.engine_results([([1, 2], False), ([3], False), ([], True)], None, [9])
    assert [r.outputs[0].token_ids_diff for r in results] == [[1, 2], [3], []]
    assert [r._done for r in results] == [False, False, True]
    final = results[-1].outputs[0]
    assert final.token_ids == [1, 2, 3] and final.finish_reason == "stop"
    assert final.stop_reason == RETURN and results[0].prompt_token_ids == [9]


def test_pick_repeat_targets_the_run_length() -> None:
    bench = _bench_module()
    assert 8 <= bench.pick_repeat(lambda batches: _burn(1_000), [], 10_000) <= 10
    assert bench.pick_repeat(lambda batches: _burn(1_000), [], 100) == 1


def test_turn_has_exact_token_counts() -> None:
    build_turn, engine_batches = _bench_module().build_turn, _bench_module().engine_batches
    from openai_harmony import Role

    from trtllm_stream_fix.encoding import load_gpt_oss_encoding

    enc = load_gpt_oss_encoding()
    tokens = build_turn(enc, 37, 11)
    messages = enc.parse_messages_from_completion_tokens(tokens, role=Role.ASSISTANT)
    assert [m.channel for m in messages] == ["analysis", "final"]
    counts = [len(enc.encode(m.content[0].text, allowed_special=set())) for m in messages]
    assert counts == [37, 11]
    batches = engine_batches(tokens, 1)
    assert batches[-1] == ([], True)  # the trimmed <|return|> leaves the last response empty
    assert sum(len(b) for b, _ in engine_batches(tokens, 20)) == len(tokens)


def test_serve_load_quick_embedded_server_all_valid(tmp_path: Path) -> None:
    pytest.importorskip("trtllm_stream_fix.sim", reason="the simulated server is not available")
    proc = run_script("serve_load.py", "--quick", "--json", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert report["all_valid"] is True
    (level,) = report["levels"]
    assert level["concurrency"] == 2
    assert level["streams"] == level["valid"] == 2
    assert level["outcomes"] == {"ok": 2}
    assert level["output_tokens"] > 0 and level["events"] > 0
    assert level["ttft_p50_ms"] > 0 and level["output_tokens_per_s"] > 0
    assert level["server_cpu_s"] is not None and level["server_cpu_s"] >= 0


def test_serve_load_reports_broken_streams_first(tmp_path: Path) -> None:
    """Against the upstream-equivalent generator, the checker flags the streams."""
    pytest.importorskip("trtllm_stream_fix.sim", reason="the simulated server is not available")
    proc = run_script("serve_load.py", "--quick", "--generator", "upstream", "--out", str(tmp_path))
    assert proc.returncode == 1
    first_line = proc.stdout.splitlines()[0]
    assert "INVALID" in first_line


def test_serve_load_quick_chat_streams_all_valid(tmp_path: Path) -> None:
    """``--api chat``: streamed chat completions from the embedded server, all checked."""
    pytest.importorskip("trtllm_stream_fix.sim", reason="the simulated server is not available")
    proc = run_script("serve_load.py", "--quick", "--json", "--api", "chat", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert report["config"]["api"] == "chat"
    assert report["all_valid"] is True
    (level,) = report["levels"]
    assert level["streams"] == level["valid"] == 2
    assert level["outcomes"] == {"ok": 2}
    assert level["output_tokens"] > 0 and level["events"] > 0 and level["notes"] == []
    assert level["ttft_p50_ms"] > 0 and level["output_tokens_per_s"] > 0
    assert level["server_cpu_s"] is not None and level["server_cpu_s"] >= 0
    assert (tmp_path / "serve_load_chat_quick.json").is_file()


def test_serve_load_conversations_are_checked_and_the_store_timed(tmp_path: Path) -> None:
    """``--conversations``: every turn continues the previous one and is checked; the
    embedded server's store times each turn (the warm-up's turns left out)."""
    pytest.importorskip("trtllm_stream_fix.sim", reason="the simulated server is not available")
    args = ("--conversations", "2", "--turns", "3", "--json", "--out", str(tmp_path))
    proc = run_script("serve_load.py", *args)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    (row,) = report["conversations"]
    assert report["all_valid"] is True and report["config"]["store"] == "memory"
    assert (row["turns"], row["valid"], row["lost"]) == (6, 6, 0)
    assert row["turns_per_s"] > 0 and row["turn_p99_ms"] >= row["turn_p50_ms"] > 0
    # 2 first turns (a ping, a put), 4 continued ones (a history read, a put).
    calls = {name: c["calls"] for name, c in row["store_calls"].items()}
    assert calls == {"ping": 2, "history": 4, "put": 6}
    assert 0 <= row["store_turn_p50_ms"] <= row["store_turn_p99_ms"] <= row["store_turn_max_ms"]
    # The server's event loop was sampled while the conversations ran.
    assert 0 < row["loop_cycle_p50_ms"] <= row["loop_cycle_p99_ms"]
    assert (tmp_path / "serve_load_conversations_memory.md").is_file()


def test_serve_load_counts_the_turns_a_small_store_loses(tmp_path: Path) -> None:
    """Against a server whose store keeps one response, conversations lose turns."""
    sim = pytest.importorskip(
        "trtllm_stream_fix.sim", reason="the simulated server is not available"
    )
    from trtllm_stream_fix.store import MemoryStore

    app = sim.create_app(sim.EngineConfig(stream_interval=20), store=MemoryStore(capacity=1))
    with sim.serve_in_thread(app) as url:
        args = ("--url", url, "--conversations", "4", "--turns", "2", "--json")
        proc = run_script("serve_load.py", *args, "--out", str(tmp_path))
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    (row,) = json.loads(proc.stdout)["conversations"]
    assert row["lost"] >= 1 and row["valid"] == row["turns"] - row["lost"]
    assert "previous_response_not_found" in row["first_problem"]


@pytest.mark.parametrize("backend", ["memory", "redis"])
def test_store_cost_replays_the_servers_store_calls(tmp_path: Path, backend, request) -> None:
    """``store_cost.py``: the calls a turn makes (a first turn a ping and a put, a later one
    a history read and a put), for every conversation, each read checked."""
    url = "memory"
    if backend == "redis":
        url = f"{request.getfixturevalue('redis_server').url}?prefix=bench{os.getpid()}:"
    proc = run_script("store_cost.py", "--quick", "--json", "--store", url, "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (row,) = json.loads(proc.stdout)["rows"]
    assert (row["conversations"], row["turns_per_conversation"], row["turns"]) == (8, 2, 16)
    assert (row["checked"], row["wrong"]) == (8, 0)
    calls = {name: c["calls"] for name, c in row["per_call"].items()}
    assert calls == {"ping": 8, "history": 8, "put": 16}
    assert 0 < row["store_turn_p50_ms"] <= row["store_turn_p99_ms"] <= row["store_turn_max_ms"]


def test_store_cost_fails_when_a_read_misses_what_was_put(tmp_path: Path) -> None:
    """A store that forgets (one record kept) fails the run: its reads are checked."""
    args = ("--quick", "--json", "--store", "memory://?capacity=1", "--out", str(tmp_path))
    proc = run_script("store_cost.py", *args)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    (row,) = json.loads(proc.stdout)["rows"]
    assert row["wrong"] >= 1


_HEADER = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}


def _frame(payload: dict) -> str:
    return f"data: {json.dumps(payload)}\n\n"


def _chunk(delta: dict, finish: str | None = None) -> str:
    return _frame({**_HEADER, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


_USAGE = {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}
_GOOD_HEAD = [_chunk({"role": "assistant", "content": ""}), _chunk({"content": "Paris."})]
_GOOD_TAIL = [
    _chunk({}, "stop"),
    _frame({**_HEADER, "choices": [], "usage": _USAGE}),
    "data: [DONE]\n\n",
]
CHAT_BODIES = {
    "valid": _GOOD_HEAD + _GOOD_TAIL,
    "valid_without_usage": [*_GOOD_HEAD, _chunk({}, "stop"), "data: [DONE]\n\n"],
    "malformed_chunk": [*_GOOD_HEAD, 'data: {"id": "chatcmpl-1", "choices": [\n\n', *_GOOD_TAIL],
    "finished_twice": [*_GOOD_HEAD, _chunk({}, "stop"), *_GOOD_TAIL],
}


@contextlib.contextmanager
def chat_server(frames: list[str]) -> Iterator[tuple[str, list[tuple[str, dict]]]]:
    """An OpenAI-compatible stand-in that streams ``frames`` to every chat request; yields
    (base URL, the (path, body) of each request)."""
    seen: list[tuple[str, dict]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            seen.append((self.path, json.loads(self.rfile.read(length))))
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            self.end_headers()
            for frame in frames:
                self.wfile.write(frame.encode())
                self.wfile.flush()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.mark.parametrize(
    ("body", "outcome", "tokens", "notes"),
    [
        ("valid", "ok", 2 * 7, []),
        ("valid_without_usage", "ok", 0, ["2 valid streams reported no output tokens in usage"]),
        ("malformed_chunk", "malformed_json", 0, []),  # reading stops at the bad chunk
        ("finished_twice", "protocol_violation", 2 * 7, []),
    ],
)
def test_serve_load_chat_checks_every_stream_of_a_url(
    tmp_path: Path, body: str, outcome: str, tokens: int, notes: list[str]
) -> None:
    """``--url --api chat`` against a stand-in server: chat requests with usage asked for;
    a malformed chunk or a broken rule makes the stream invalid, reported first."""
    with chat_server(CHAT_BODIES[body]) as (url, seen):
        proc = run_script(
            "serve_load.py", "--url", url, "--api", "chat", "--levels", "2", "--requests", "1",
            "--max-output-tokens", "64", "--out", str(tmp_path), "--tag", "chat",
        )  # fmt: skip
    report = json.loads((tmp_path / "chat.json").read_text())
    (level,) = report["levels"]
    assert level["outcomes"] == {outcome: 2}, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert level["output_tokens"] == tokens and level["notes"] == notes
    assert level["server_cpu_s"] is None  # no --server-pid
    assert len(seen) == 3  # the warm-up stream, then 2
    for path, request in seen:
        assert path == "/v1/chat/completions"
        assert request["stream"] is True and request["stream_options"] == {"include_usage": True}
        assert request["messages"][0]["role"] == "user" and request["max_completion_tokens"] == 64
        assert "input" not in request and "metadata" not in request
    first_line = proc.stdout.splitlines()[0]
    if outcome == "ok":
        assert proc.returncode == 0 and "all 2 streams valid" in first_line
    else:
        assert proc.returncode == 1 and "INVALID" in first_line and outcome in first_line


def test_gpu_dry_run_plans_every_interval_with_valid_yaml(tmp_path: Path) -> None:
    yaml = pytest.importorskip("yaml", reason="PyYAML is needed to read the generated YAML")
    proc = run_script(
        "gpu_stream_interval.py",
        "--dry-run",
        "--json",
        "--workdir",
        str(tmp_path),
        "--model",
        "openai/gpt-oss-120b",
        "--",
        "--tp_size",
        "8",
    )
    assert proc.returncode == 0, proc.stderr
    runs = json.loads(proc.stdout)["runs"]
    assert sorted({(r["stream_interval"], r["variant"]) for r in runs}) == sorted(
        (si, v) for si in (1, 2, 5, 10, 20, 40) for v in ("fix", "upstream")
    )
    assert not list(tmp_path.iterdir())  # a dry run writes nothing
    for run in runs:
        config = yaml.safe_load(run["yaml"])
        assert config["stream_interval"] == run["stream_interval"]
        assert config["num_postprocess_workers"] == 4
        command = run["command"]
        assert command[command.index("--extra_llm_api_options") + 1] == run["yaml_path"]
        assert command[-2:] == ["--tp_size", "8"] and "openai/gpt-oss-120b" in command
        if run["variant"] == "fix":
            assert command[:4] == ["trtllm-stream-fix", "serve", "--engine", "trtllm"]
            assert run["env"]["TRTLLM_STREAM_FIX"] == "require"
        else:
            assert command[0] == "trtllm-serve" and run["env"]["TRTLLM_STREAM_FIX"] == "0"

    text = run_script("gpu_stream_interval.py", "--dry-run", "--workdir", str(tmp_path))
    assert text.returncode == 0, text.stderr
    for interval in (1, 2, 5, 10, 20, 40):
        assert f"stream_interval {interval}, fix" in text.stdout
        assert f"stream_interval {interval}, upstream" in text.stdout
        assert f"stream_interval: {interval}\n" in text.stdout


def test_example_configs_are_valid_gpt_oss_yaml() -> None:
    yaml = pytest.importorskip("yaml", reason="PyYAML is needed to read the configs")
    configs = sorted((ROOT / "examples" / "configs").glob("*.yaml"))
    names = {path.stem for path in configs}
    assert {
        "gpt-oss-20b-latency",
        "gpt-oss-20b-throughput",
        "gpt-oss-120b-latency",
        "gpt-oss-120b-throughput",
    } <= names
    for path in configs:
        config = yaml.safe_load(path.read_text())
        assert config["stream_interval"] == 20, path.name
        assert config["num_postprocess_workers"] == 4, path.name
        graphs = config["cuda_graph_config"]["max_batch_size"]
        assert graphs == config["max_batch_size"], path.name


def test_the_benchmark_server_runs_with_the_servers_limits(monkeypatch) -> None:
    """``_sim_server.py`` serves with the uvicorn configuration ``serve`` uses (one place)."""
    pytest.importorskip("trtllm_stream_fix.sim", reason="the simulated server is not available")
    import importlib.util

    import uvicorn

    from trtllm_stream_fix.sim.limits import ServerLimits

    configs: list[uvicorn.Config] = []
    monkeypatch.setattr(
        uvicorn.Server, "run", lambda self, sockets=None: configs.append(self.config)
    )
    spec = importlib.util.spec_from_file_location("_sim_server", BENCH / "_sim_server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--port", "0"]) == 0
    (config,) = configs
    limits = ServerLimits()
    assert isinstance(config.http, type), config.http  # our protocol class, not "auto"
    assert getattr(config.http, "head_timeout", None) == limits.header_timeout
    assert config.h11_max_incomplete_event_size == limits.max_header_bytes
    assert config.timeout_keep_alive == limits.keep_alive_timeout
    assert config.limit_concurrency == limits.max_concurrency


def test_checker_report_quick_json_shape() -> None:
    proc = run_script("checker_report.py", "--quick", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)["rows"]
    assert {(r["protocol"], r["path"]) for r in rows} == {
        (p, path) for p in ("responses", "chat", "triton") for path in ("replay", "validate")
    }
    for row in rows:
        assert 0 < row["report_bytes"] <= 16_384 and row["violations_counted"] > 100, row


def test_agent_loop_quick_checks_every_turn_of_each_transport(tmp_path: Path) -> None:
    proc = run_script("agent_loop.py", "--quick", "--json", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["problems"] == []
    rows = {row["mode"]: row for row in report["rows"]}
    assert list(rows) == ["http-memory", "websocket", "websocket-plain"]
    for row in rows.values():
        assert row["checked"] == row["conversations"] * row["turns"] == 12
        assert 0 < row["added_p50_ms"] <= row["e2e_p99_ms"]
    assert (tmp_path / "agent_loop_quick.png").stat().st_size > 0
