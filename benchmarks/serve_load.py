# SPDX-License-Identifier: Apache-2.0
"""Concurrent Responses or Chat Completions streams, every stream checked by a strict checker.

By default the script starts the simulated gpt-oss server (our generator) in a subprocess,
so it can also read that server's CPU time. ``--url`` points it at any OpenAI-compatible
server instead, e.g. a real ``trtllm-serve``; ``--server-pid`` then names the local process
(its descendants included) whose CPU time to measure.

``--conversations N --turns T`` runs N multi-turn tool conversations at once instead, every
turn continuing the previous one by ``previous_response_id`` (``_conversations``): turns per
second, lost turns, and the time the embedded server's store (``--store memory`` or
``--store redis://...``) adds to each turn, measured inside the server.

``--api responses`` (default) streams ``POST /v1/responses``; ``--api chat`` streams
``POST /v1/chat/completions`` with ``stream_options.include_usage``. Per concurrency level N,
N workers each send ``--requests`` streamed requests back to back. Reported: stream validity
first (outcome of every stream), then TTFT p50/p99 (request sent → first non-empty text,
reasoning or tool-call delta), inter-event gap p50/p99, events/s, output tokens/s (from the
terminal event's usage, or the chat stream's usage chunk) and server CPU seconds per 1,000
output tokens.

    python benchmarks/serve_load.py                        # embedded server, 1/8/32/128
    python benchmarks/serve_load.py --url http://gpu-host:8000 --model gpt-oss-120b
    python benchmarks/serve_load.py --quick --json
    python benchmarks/serve_load.py --api chat --levels 128 --requests 2
    python benchmarks/serve_load.py --conversations 128 --turns 4 --store redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _conversations
from _runner import bench_env, machine_info, percentile

from trtllm_stream_fix.checker import StreamRecord, StreamSession

#: The endpoint each ``--api`` streams (the checker's protocol has the same name).
API_PATHS = {"responses": "/v1/responses", "chat": "/v1/chat/completions"}
FULL_LEVELS = (1, 8, 32, 128)
KEEPALIVE_EXPIRY_S = 1.0
QUICK_LEVELS = (2,)
PROMPTS = (
    "What is the capital of France?",
    "Plan a two-day trip to Kyoto.",
    "Explain how a bridge carries load.",
    "Summarise the water cycle for a child.",
)


@dataclass
class StreamResult:
    """One stream: the checker's record plus what the load report needs."""

    record: StreamRecord
    arrivals: list[float]  # seconds after the request, one per SSE event
    output_tokens: int


@dataclass
class LevelResult:
    concurrency: int
    streams: int
    valid: int
    outcomes: dict[str, int]
    first_problem: str | None
    wall_s: float
    ttft_p50_ms: float
    ttft_p99_ms: float
    gap_p50_ms: float
    gap_p99_ms: float
    events: int
    events_per_s: float
    output_tokens: int
    output_tokens_per_s: float
    server_cpu_s: float | None = None
    server_cpu_s_per_1k_tokens: float | None = None
    notes: list[str] = field(default_factory=list)


# -- CPU time of a local server ----------------------------------------------------------------


def _proc_cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid:
            found.append(int(entry))
    return found


def process_tree_cpu(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and its live descendants (Linux ``/proc``)."""
    total, stack = 0.0, [pid]
    while stack:
        current = stack.pop()
        try:
            total += _proc_cpu(current)
        except (OSError, ValueError, IndexError):
            continue
        stack.extend(_children(current))
    return total


# -- embedded server -----------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_healthy(url: str, timeout: float, proc: subprocess.Popen | None = None) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with code {proc.returncode}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url}/health did not answer 200 within {timeout:.0f} s")


@contextmanager
def embedded_server(
    stream_interval: int,
    tokens_per_second: float,
    generator: str,
    parser: str | None = None,
    store: str | None = None,
    store_timings: Path | None = None,
) -> Iterator[tuple[str, int]]:
    """The simulated server in a subprocess: yields (base URL, pid). ``parser`` picks the
    Harmony parser of our generator (``fast``/``reference``; None = the default); ``store``
    its response store URL, whose call times it writes to ``store_timings`` when it ends."""
    port = _free_port()
    cmd = [
        sys.executable,
        str(HERE / "_sim_server.py"),
        "--port",
        str(port),
        "--stream-interval",
        str(stream_interval),
        "--tokens-per-second",
        str(tokens_per_second),
        "--generator",
        generator,
        *(("--parser", parser) if parser else ()),
        *(("--store", store) if store else ()),
        *(("--store-timings", str(store_timings)) if store_timings else ()),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_healthy(url, 30, proc)
        except RuntimeError as exc:
            proc.kill()
            err = proc.communicate(timeout=5)[1].decode(errors="replace")[-2000:]
            raise RuntimeError(f"{exc}\n{err}") from None
        yield url, proc.pid
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


# -- load ---------------------------------------------------------------------------------------


def well_formed_seeds(count: int, min_tokens: int = 64) -> list[int]:
    """Seeds of synthetic generations that end normally (stop, no Harmony error)."""
    from trtllm_stream_fix.sim.model import generate_output

    seeds: list[int] = []
    seed = 0
    while len(seeds) < count:
        output = generate_output(seed)
        if (
            output.finish_reason == "stop"
            and not output.malformed
            and len(output.generated) >= min_tokens
        ):
            seeds.append(seed)
        seed += 1
    return seeds


def _output_tokens(record: StreamRecord) -> int:
    """Output tokens from the last usage of the stream: the terminal event's
    ``response.usage.output_tokens`` (Responses) or the usage chunk's
    ``usage.completion_tokens`` (chat); 0 when the stream reported none."""
    for event in reversed(record.events):
        try:
            payload = json.loads(event.get("data", ""))
        except ValueError:
            continue  # data: [DONE], or an unreadable payload the checker reported
        if not isinstance(payload, dict):
            continue
        if record.protocol == "chat":
            usage = payload.get("usage")
            key = "completion_tokens"
        else:
            response = payload.get("response")
            usage = response.get("usage") if isinstance(response, dict) else None
            key = "output_tokens"
        if isinstance(usage, dict):
            count = usage.get(key)
            return count if isinstance(count, int) and not isinstance(count, bool) else 0
        if record.protocol != "chat" and isinstance(payload.get("response"), dict):
            return 0  # the terminal event's response carries no usage
    return 0


async def one_stream(
    client: Any, url: str, body: dict[str, Any], timeout: float, api: str = "responses"
) -> StreamResult:
    """POST one streamed request and check it (``api``: the checker's protocol); event
    arrival times are kept."""
    import httpx

    session = StreamSession(api, url=url)  # type: ignore[arg-type]
    arrivals: list[float] = []
    start = time.perf_counter()

    def now() -> float:
        return time.perf_counter() - start

    async def read() -> str:
        async with client.stream(
            "POST", url, json=body, headers={"accept": "text/event-stream"}
        ) as response:
            session.start(response.status_code, response.headers.get("content-type"))
            async for chunk in response.aiter_bytes():
                seen = len(session.record.events)
                keep = session.feed(chunk, now())
                arrivals.extend([now()] * (len(session.record.events) - seen))
                if not keep:
                    break
        return "eof"

    try:
        stop = await asyncio.wait_for(read(), timeout)
        record = session.finish(stop, now())
    except asyncio.TimeoutError:
        record = session.finish("deadline_exceeded", now(), f"no end within {timeout:.0f} s")
    except httpx.HTTPError as exc:
        if session.record.http_status is None:
            session.transport_error(f"{type(exc).__name__}: {exc}")
            record = session.finish("eof", now())
        else:
            record = session.finish("dropped", now(), f"{type(exc).__name__}: {exc}")
    return StreamResult(record, arrivals, _output_tokens(record))


def request_body(
    index: int,
    model: str,
    max_output_tokens: int | None,
    seeds: Sequence[int] | None,
    api: str = "responses",
) -> dict[str, Any]:
    """One streamed request: Responses (``input``, ``max_output_tokens``) or chat
    (``messages``, ``max_completion_tokens``, usage asked for in ``stream_options``)."""
    prompt = f"{PROMPTS[index % len(PROMPTS)]} (request {index})"
    body: dict[str, Any] = {"model": model, "stream": True}
    if api == "chat":
        body["messages"] = [{"role": "user", "content": prompt}]
        body["stream_options"] = {"include_usage": True}
    else:
        body["input"] = prompt
    if max_output_tokens:
        body["max_completion_tokens" if api == "chat" else "max_output_tokens"] = max_output_tokens
    if seeds:
        body["metadata"] = {"seed": str(seeds[index % len(seeds)])}
    return body


def client_limits(concurrency: int) -> Any:
    """The client's connection pool for ``concurrency`` streams at once.

    Idle connections are dropped well before a server's keep-alive timeout (uvicorn's
    default is 5 s, httpx's expiry too): a loaded client that reads a stream late would
    otherwise send its next request on a connection the server is closing.
    """
    import httpx

    return httpx.Limits(
        max_connections=concurrency + 4,
        max_keepalive_connections=concurrency,
        keepalive_expiry=KEEPALIVE_EXPIRY_S,
    )


async def run_level(
    url: str,
    model: str,
    concurrency: int,
    requests_per_worker: int,
    *,
    max_output_tokens: int | None,
    seeds: Sequence[int] | None,
    timeout: float,
    api: str = "responses",
) -> tuple[list[StreamResult], float]:
    import httpx

    limits = client_limits(concurrency)
    endpoint = f"{url.rstrip('/')}{API_PATHS[api]}"
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(timeout)) as client:

        async def worker(w: int) -> list[StreamResult]:
            out = []
            for r in range(requests_per_worker):
                index = w * requests_per_worker + r
                body = request_body(index, model, max_output_tokens, seeds, api)
                out.append(await one_stream(client, endpoint, body, timeout, api))
            return out

        start = time.perf_counter()
        per_worker = await asyncio.gather(*(worker(w) for w in range(concurrency)))
        wall = time.perf_counter() - start
    return [result for results in per_worker for result in results], wall


def summarize(concurrency: int, results: Sequence[StreamResult], wall: float) -> LevelResult:
    records = [r.record for r in results]
    outcomes = Counter(r.outcome for r in records)
    bad = [r for r in records if not r.ok]
    first_problem = None
    if bad:
        r = bad[0]
        first_problem = f"{r.outcome}: {(r.violations or [r.detail])[0]}"[:300]
    ttfts = [r.first_text_latency * 1e3 for r in records if r.first_text_latency is not None]
    gaps = [(b - a) * 1e3 for res in results for a, b in zip(res.arrivals, res.arrivals[1:])]
    events = sum(len(r.events) for r in records)
    tokens = sum(r.output_tokens for r in results)
    no_usage = sum(1 for r in results if r.record.ok and not r.output_tokens)
    notes = [f"{no_usage} valid streams reported no output tokens in usage"] if no_usage else []
    return LevelResult(
        concurrency=concurrency,
        streams=len(records),
        valid=len(records) - len(bad),
        outcomes=dict(outcomes),
        first_problem=first_problem,
        wall_s=round(wall, 4),
        ttft_p50_ms=round(percentile(ttfts, 50), 3),
        ttft_p99_ms=round(percentile(ttfts, 99), 3),
        gap_p50_ms=round(percentile(gaps, 50), 3),
        gap_p99_ms=round(percentile(gaps, 99), 3),
        events=events,
        events_per_s=round(events / wall, 1) if wall else 0.0,
        output_tokens=tokens,
        output_tokens_per_s=round(tokens / wall, 1) if wall else 0.0,
        notes=notes,
    )


def run_levels(
    url: str,
    levels: Sequence[int],
    *,
    model: str,
    requests_per_worker: int,
    max_output_tokens: int | None,
    seeds: Sequence[int] | None,
    server_pid: int | None,
    timeout: float = 600.0,
    api: str = "responses",
) -> list[LevelResult]:
    """Every concurrency level in turn (one warm-up stream first); ``api``: a key of
    :data:`API_PATHS`."""
    if api not in API_PATHS:
        raise ValueError(f"unknown api {api!r}; expected one of {sorted(API_PATHS)}")
    asyncio.run(
        run_level(
            url,
            model,
            1,
            1,
            max_output_tokens=max_output_tokens,
            seeds=seeds,
            timeout=timeout,
            api=api,
        )
    )
    out: list[LevelResult] = []
    for level in levels:
        cpu0 = process_tree_cpu(server_pid) if server_pid else None
        results, wall = asyncio.run(
            run_level(
                url,
                model,
                level,
                requests_per_worker,
                max_output_tokens=max_output_tokens,
                seeds=seeds,
                timeout=timeout,
                api=api,
            )
        )
        row = summarize(level, results, wall)
        if server_pid and cpu0 is not None:
            cpu = process_tree_cpu(server_pid) - cpu0
            row.server_cpu_s = round(cpu, 4)
            if row.output_tokens:
                row.server_cpu_s_per_1k_tokens = round(cpu / row.output_tokens * 1e3, 5)
        out.append(row)
    return out


# -- reports ------------------------------------------------------------------------------------


def _fmt(value: float | None, digits: int = 1) -> str:
    return "–" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def markdown(rows: Sequence[LevelResult]) -> str:
    lines = [
        (
            "| streams | valid | TTFT p50 ms | TTFT p99 ms | gap p50 ms | gap p99 ms "
            "| events/s | output tok/s | server CPU s / 1k tok |"
        ),
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.concurrency} × {r.streams // r.concurrency} | {r.valid}/{r.streams} "
            f"| {_fmt(r.ttft_p50_ms)} | {_fmt(r.ttft_p99_ms)} | {_fmt(r.gap_p50_ms, 2)} "
            f"| {_fmt(r.gap_p99_ms, 2)} | {_fmt(r.events_per_s, 0)} "
            f"| {_fmt(r.output_tokens_per_s, 0)} | {_fmt(r.server_cpu_s_per_1k_tokens, 4)} |"
        )
    return "\n".join(lines) + "\n"


def validity_lines(rows: Sequence[LevelResult]) -> list[str]:
    out = []
    for r in rows:
        if r.valid == r.streams:
            line = f"concurrency {r.concurrency}: all {r.streams} streams valid"
        else:
            line = (
                f"concurrency {r.concurrency}: {r.streams - r.valid}/{r.streams} streams INVALID "
                f"{r.outcomes}; first: {r.first_problem}"
            )
        out.append("; ".join([line, *r.notes]))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="server base URL (default: start the simulated server)")
    parser.add_argument(
        "--api",
        choices=tuple(API_PATHS),
        default="responses",
        help="the endpoint to stream: /v1/responses or /v1/chat/completions",
    )
    parser.add_argument("--model", default="gpt-oss-20b")
    parser.add_argument("--server-pid", type=int, help="local server process to measure CPU of")
    parser.add_argument("--levels", help="comma-separated concurrency levels (default 1,8,32,128)")
    parser.add_argument("--requests", type=int, default=None, help="requests per worker")
    parser.add_argument("--max-output-tokens", type=int, default=None)
    parser.add_argument("--stream-interval", type=int, default=20, help="embedded server only")
    parser.add_argument(
        "--tokens-per-second",
        type=float,
        default=0.0,
        help="embedded server: per-stream generation pace (0 = as fast as possible)",
    )
    parser.add_argument(
        "--generator",
        choices=("ours", "upstream"),
        default="ours",
        help="embedded server: our event machine or the upstream-equivalent",
    )
    parser.add_argument(
        "--parser",
        choices=("fast", "reference"),
        default=None,
        help="embedded server: the Harmony parser of our generator (default: fast)",
    )
    parser.add_argument(
        "--conversations",
        type=int,
        default=None,
        help="conversation mode: this many multi-turn tool conversations at once",
    )
    parser.add_argument("--turns", type=int, default=4, help="conversation mode: turns each")
    parser.add_argument(
        "--store",
        default="memory",
        help="embedded server's response store: memory or redis://HOST:PORT/DB?prefix=...",
    )
    parser.add_argument("--timeout", type=float, default=600.0, help="per-stream deadline, s")
    parser.add_argument("--quick", action="store_true", help="2 streams, 1 request each")
    parser.add_argument("--json", action="store_true", help="print the report as JSON only")
    parser.add_argument("--out", type=Path, default=HERE / "results", help="results folder")
    parser.add_argument("--tag", default=None, help="results file name stem")
    args = parser.parse_args(argv)
    if args.conversations:
        return conversation_mode(args)

    if args.levels:
        levels = tuple(int(x) for x in args.levels.split(",") if x)
    else:
        levels = QUICK_LEVELS if args.quick else FULL_LEVELS
    requests_per_worker = args.requests or (1 if args.quick else 4)
    config = {
        "api": args.api,
        "url": args.url or "embedded simulated server",
        "model": args.model,
        "levels": list(levels),
        "requests_per_worker": requests_per_worker,
        "max_output_tokens": args.max_output_tokens,
    }

    if args.url:
        rows = run_levels(
            args.url,
            levels,
            model=args.model,
            requests_per_worker=requests_per_worker,
            max_output_tokens=args.max_output_tokens,
            seeds=None,
            server_pid=args.server_pid,
            timeout=args.timeout,
            api=args.api,
        )
    else:
        config.update(
            stream_interval=args.stream_interval,
            tokens_per_second=args.tokens_per_second,
            generator=args.generator,
            parser=args.parser or "fast",
        )
        seeds = well_formed_seeds(64)
        with embedded_server(
            args.stream_interval, args.tokens_per_second, args.generator, args.parser
        ) as (url, pid):
            rows = run_levels(
                url,
                levels,
                model=args.model,
                requests_per_worker=requests_per_worker,
                max_output_tokens=args.max_output_tokens,
                seeds=seeds,
                server_pid=pid,
                timeout=args.timeout,
                api=args.api,
            )

    report = {
        "machine": machine_info(),
        "config": config,
        "all_valid": all(r.valid == r.streams for r in rows),
        "levels": [asdict(r) for r in rows],
    }
    api_part = "" if args.api == "responses" else f"_{args.api}"
    stem = args.tag or (f"serve_load{api_part}_quick" if args.quick else f"serve_load{api_part}")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{stem}.json").write_text(json.dumps(report, indent=2) + "\n")
    table = markdown(rows)
    validity = validity_lines(rows)
    (args.out / f"{stem}.md").write_text(
        f"Machine: {bench_env(report['machine'])}; {json.dumps(config)}\n\n"
        + "\n".join(f"- {line}" for line in validity)
        + "\n\n"
        + table
    )
    if args.json:
        print(json.dumps(report))
    else:
        print("\n".join(validity))  # broken streams are reported before any figure
        print(f"\nMachine: {bench_env(report['machine'])}; {json.dumps(config)}\n")
        print(table)
        print(f"results: {args.out / stem}.{{json,md}}")
    return 0 if report["all_valid"] else 1


def _conversation_rows(
    url: str, args: argparse.Namespace, warm_up_turns: int
) -> list[_conversations.ConversationResult]:
    """A warm-up (as many one-turn conversations as measured ones: the server's connection
    pools fill), then the measured conversations; the server's store timings are read by
    the caller once the server has ended."""

    def run(conversations: int, turns: int) -> tuple[list[list[Any]], float]:
        return asyncio.run(
            _conversations.run_conversations(
                url,
                args.model,
                conversations,
                turns,
                one_stream=one_stream,
                limits=client_limits(conversations),
                timeout=args.timeout,
            )
        )

    if warm_up_turns:
        run(warm_up_turns, 1)
    measured, wall = run(args.conversations, args.turns)
    row = _conversations.summarize(measured, wall, args.turns, args.store)
    row.load_average = os.getloadavg()  # the host's load over the last 1 / 5 / 15 minutes
    return [row]


def conversation_mode(args: argparse.Namespace) -> int:
    """``--conversations N --turns T``: every turn checked; the embedded server measures the
    time its store adds to each turn."""
    import tempfile

    config = {
        "mode": "conversations",
        "url": args.url or "embedded simulated server",
        "model": args.model,
        "conversations": args.conversations,
        "turns": args.turns,
    }
    if args.url:
        rows = _conversation_rows(args.url, args, warm_up_turns=0)
        rows[0].store = "the server's"
    else:
        config.update(stream_interval=args.stream_interval, store=args.store)
        warm_up = args.conversations
        with tempfile.TemporaryDirectory() as tmp:
            timings_file = Path(tmp) / "store_timings.json"
            with embedded_server(
                args.stream_interval,
                args.tokens_per_second,
                "ours",
                store=args.store,
                store_timings=timings_file,
            ) as (url, _pid):
                rows = _conversation_rows(url, args, warm_up)
            timings = _conversations.read_timings(timings_file)
        if timings is None:
            print("the server wrote no store timings", file=sys.stderr)
            return 1
        rows = [
            _conversations.with_timings(rows[0], _conversations.after_warm_up(timings, warm_up))
        ]
    report = {
        "machine": machine_info(),
        "config": config,
        "all_valid": all(r.valid == r.turns for r in rows),
        "conversations": [asdict(r) for r in rows],
    }
    scheme = args.store.split(":", 1)[0] if not args.url else "url"
    stem = args.tag or f"serve_load_conversations_{scheme}"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{stem}.json").write_text(json.dumps(report, indent=2) + "\n")
    table = _conversations.markdown(rows)
    validity = [
        f"{r.valid}/{r.turns} turns valid, {r.lost} lost"
        + (f"; first problem: {r.first_problem}" if r.first_problem else "")
        for r in rows
    ]
    header = f"Machine: {bench_env(report['machine'])}; {json.dumps(config)}"
    (args.out / f"{stem}.md").write_text(
        f"{header}\n\n" + "\n".join(f"- {v}" for v in validity) + "\n\n" + table
    )
    if args.json:
        print(json.dumps(report))
    else:
        print("\n".join(validity))
        print(f"\n{header}\n")
        print(table)
        print(f"results: {args.out / stem}.{{json,md}}")
    return 0 if report["all_valid"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
