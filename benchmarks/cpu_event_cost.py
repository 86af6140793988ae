# SPDX-License-Identifier: Apache-2.0
"""CPU cost per request of turning one gpt-oss turn into Responses SSE bytes.

One turn is ``analysis`` + ``final`` text of exact token counts, tokenized with the real
gpt-oss encoding, its trailing ``<|return|>`` trimmed the way TensorRT-LLM trims it. The
tokens are replayed in engine responses of ``stream_interval`` tokens through:

- ``floor``: a bare ``StreamableParser.process`` + ``last_content_delta`` per token;
- ``upstream``: the upstream-equivalent baseline + SSE framing (the "before");
- ``ours``: the Responses event machine (default parser) + ``format_sse`` per event;
- ``ours-fast`` / ``ours-reference``: the same with ``StreamConfig(parser="fast")`` (the
  default: ``core.fast_harmony``) / ``parser="reference"`` (openai_harmony per token);
- ``plugin``: the trtllm-serve plugin's processor on the TensorRT-LLM stand-in;
- ``upstream-real`` / ``plugin-real``: TensorRT-LLM's own ``ResponsesStreamingProcessor``,
  unpatched / with the plugin installed, when ``TRTLLM_SOURCE_DIR`` names a source tree
  holding ``tensorrt_llm/serve/{responses_utils,harmony_adapter,openai_protocol,
  postprocess_handlers}.py`` (loaded with ``tests/realstub``, in a worker process).

Every implementation runs once as a warm-up, then ``--runs`` times interleaved with the
others. One run replays the turn ``repeat`` times back to back, each replay with a fresh
parser / machine / processor, and reports µs per replay: ``repeat`` is chosen per cell from a
quick calibration so that a floor run lasts about 20 ms (5 ms with ``--quick``), and is the
same for every implementation of the cell, the worker's included. A run's ``prepare`` and a
``gc.collect()`` come before it; a per-replay ``reset`` (dropping upstream's per-request
parser state) runs between replays, outside the timed regions, and so does building the
engine results the post-processor rows read (``_processor``: one result object per engine
response, as upstream's in-place result reads at that response). Runs are timed in CPU time of
the running thread (so time the scheduler gives to other processes on a busy host does not
count), and the median is reported as µs per output token; the ratio to the floor is the
median of each run's ratio to the floor run timed just before it, in the same process (the
worker times its own floor run before each real one).

    python benchmarks/cpu_event_cost.py            # full run, results in benchmarks/results/
    python benchmarks/cpu_event_cost.py --quick --json
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from openai_harmony import Role, StreamableParser

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _runner import bench_env, machine_info

from trtllm_stream_fix.core.config import StreamConfig
from trtllm_stream_fix.core.context import ResponseContext
from trtllm_stream_fix.core.harmony_tokens import RETURN
from trtllm_stream_fix.core.machine import ResponsesEventMachine
from trtllm_stream_fix.core.sse import format_sse
from trtllm_stream_fix.defaults import new_context
from trtllm_stream_fix.encoding import load_gpt_oss_encoding

FULL_SIZES = ((300, 300), (1000, 1000), (4000, 2000))
QUICK_SIZES = ((300, 300), (1000, 1000))
INTERVALS = (1, 20)
TARGET_RUN_US = 20_000.0  # a floor run lasts about this long (thread CPU µs)
QUICK_TARGET_RUN_US = 5_000.0
TARGETS = {  # at the largest size measured (4000+2000 in a full run)
    "floor_ratio_si20": 0.5,
    "floor_ratio_si1": 1.5,
    "flatness": 1.2,
    "plugin_real_over_ours": 1.3,
}

_WORDS = [
    "the",
    "river",
    "bends",
    "north",
    "past",
    "the",
    "old",
    "mill",
    "where",
    "the",
    "valley",
    "widens",
    "into",
    "fields",
    "of",
    "barley",
    "and",
    "the",
    "road",
    "climbs",
    "toward",
    "a",
    "ridge",
    "so",
    "we",
    "should",
    "check",
    "the",
    "forecast",
    "before",
    "we",
    "leave",
    "because",
    "rain",
    "in",
    "the",
    "hills",
    "makes",
    "the",
    "crossing",
    "slow",
    "and",
    "the",
    "bridge",
    "near",
    "Lyon",
    "was",
    "closed",
    "last",
    "spring",
    "for",
    "repairs",
    "to",
    "its",
    "stone",
    "arches;",
    "numbers",
    "like",
    "42,",
    "3.14",
    "and",
    "2026",
    "appear",
    "too,",
    "as",
    "do",
    "words",
    "such",
    "as",
    "naïve,",
    "café",
    "and",
    "über",
]

Replay = Callable[[list[tuple[list[int], bool]]], int]


@dataclass
class Row:
    tokens: str
    stream_interval: int
    impl: str
    us_per_token: float
    ratio_to_floor: float
    repeat: int  # replays per timed run, the same for every implementation of the cell


# -- workload -------------------------------------------------------------------------------


def text_tokens(enc: Any, count: int, seed: int) -> list[int]:
    """Exactly ``count`` tokens of plain prose (decodable at every token boundary)."""
    rng = random.Random(seed)
    words: list[str] = []
    tokens: list[int] = []
    while len(tokens) < count:
        words.extend(rng.choice(_WORDS) for _ in range(max(64, count)))
        tokens = enc.encode(" ".join(words), allowed_special=set())
    return tokens[:count]


def build_turn(enc: Any, analysis: int, final: int) -> list[int]:
    """``<|channel|>analysis<|message|>…<|end|><|start|>assistant<|channel|>final<|message|>…``.

    The generation follows a prompt ending in ``<|start|>assistant``; its ``<|return|>`` is
    not included (TensorRT-LLM trims it from Responses outputs).
    """
    head = enc.encode("<|channel|>analysis<|message|>", allowed_special="all")
    middle = enc.encode(
        "<|end|><|start|>assistant<|channel|>final<|message|>", allowed_special="all"
    )
    return head + text_tokens(enc, analysis, 1) + middle + text_tokens(enc, final, 2)


def engine_batches(tokens: Sequence[int], interval: int) -> list[tuple[list[int], bool]]:
    """Engine responses of ``interval`` tokens; the stop token, trimmed, may leave the last
    batch empty (as with ``stream_interval`` 1)."""
    generated = list(tokens) + [RETURN]
    batches = [generated[i : i + interval] for i in range(0, len(generated), interval)]
    batches[-1] = batches[-1][:-1]
    return [(batch, i == len(batches) - 1) for i, batch in enumerate(batches)]


# -- implementations --------------------------------------------------------------------------


def floor_impl(enc: Any) -> Replay:
    def run(batches: list[tuple[list[int], bool]]) -> int:
        parser = StreamableParser(enc, Role.ASSISTANT)
        chars = 0
        for batch, _ in batches:
            for token in batch:
                parser.process(token)
                delta = parser.last_content_delta
                if delta:
                    chars += len(delta)
        return chars

    return run


def _stream_impl(enc: Any, factory: Callable[[ResponseContext, Any], Any]) -> Replay:
    def run(batches: list[tuple[list[int], bool]]) -> int:
        stream = factory(new_context(num_prompt_tokens=64), enc)
        size = sum(len(format_sse(event)) for event in stream.start())
        for batch, last in batches:
            events = stream.feed(batch, finished=last, finish_reason="stop" if last else None)
            for event in events:
                size += len(format_sse(event))
        return size

    return run


def ours_impl(enc: Any, parser: str | None = None) -> Replay:
    """The event machine with the default parser, or the one ``parser`` names."""
    config = StreamConfig() if parser is None else StreamConfig(parser=parser)
    return _stream_impl(enc, lambda ctx, e: ResponsesEventMachine(ctx, config=config, encoding=e))


def upstream_impl(enc: Any) -> Replay | str:
    try:
        from trtllm_stream_fix.baseline.responses import UpstreamBaselineStream
    except ImportError as exc:
        return f"baseline unavailable: {exc}"
    return _stream_impl(enc, lambda ctx, e: UpstreamBaselineStream(ctx, encoding=e))


def plugin_impl(enc: Any) -> Replay | str:
    from _processor import processor_replay

    return processor_replay("plugin", enc)


IMPLS: dict[str, Callable[[Any], Replay | str] | None] = {
    "floor": floor_impl,
    "upstream": upstream_impl,
    "ours": ours_impl,
    "ours-fast": lambda enc: ours_impl(enc, "fast"),
    "ours-reference": lambda enc: ours_impl(enc, "reference"),
    "plugin": plugin_impl,
    "upstream-real": None,  # timed in a RealWorker process
    "plugin-real": None,
}


# -- measurement ------------------------------------------------------------------------------


def time_replay(run: Replay, batches: list[tuple[list[int], bool]], repeat: int = 1) -> float:
    """Thread CPU µs per replay of ``repeat`` back-to-back replays, after the replay's
    ``prepare`` and a ``gc.collect()``; its ``reset``, if any, runs untimed before each, and
    so does its ``inputs``, if any: ``run`` then replays ``inputs(batches)`` (the engine's
    side of a response prepared outside the timed region)."""
    prepare = getattr(run, "prepare", None)
    reset = getattr(run, "reset", None)
    inputs = getattr(run, "inputs", None)
    if prepare is not None:
        prepare()
    gc.collect()
    total = 0
    for _ in range(repeat):
        if reset is not None:
            reset()
        replayed = batches if inputs is None else inputs(batches)
        start = time.thread_time_ns()
        run(replayed)
        total += time.thread_time_ns() - start
    return total / repeat / 1e3


def pick_repeat(floor: Replay, batches: list[tuple[list[int], bool]], target_us: float) -> int:
    """Replays per run so that a floor run lasts about ``target_us`` (best of 3 probes)."""
    once = min(time_replay(floor, batches) for _ in range(3))
    return max(1, round(target_us / max(once, 1.0)))


def measure(
    sizes: Sequence[tuple[int, int]],
    intervals: Sequence[int],
    runs: int,
    impls: Sequence[str],
    target_us: float = TARGET_RUN_US,
) -> tuple[list[Row], dict[str, str]]:
    """Median µs per token of every implementation, interleaved run by run; each run lasts
    ``repeat`` replays, a floor run about ``target_us``."""
    enc = load_gpt_oss_encoding()
    replays: dict[str, Replay] = {}
    skipped: dict[str, str] = {}
    for name in impls:
        factory = IMPLS[name]
        made = factory(enc) if factory is not None else None
        if isinstance(made, str):
            skipped[name] = made
        elif made is not None:
            replays[name] = made
    worker = _real_worker([name for name in impls if IMPLS[name] is None], skipped)
    try:
        rows: list[Row] = []
        for analysis, final in sizes:
            tokens = build_turn(enc, analysis, final)
            for interval in intervals:
                batches = engine_batches(tokens, interval)
                repeat = pick_repeat(replays["floor"], batches, target_us)
                if worker is not None:
                    worker.cell(analysis, final, interval, repeat)
                rows += _measure_cell(
                    f"{analysis}+{final}",
                    analysis + final,
                    interval,
                    runs,
                    repeat,
                    replays,
                    worker,
                    batches,
                )
    finally:
        if worker is not None:
            worker.close()
    return rows, skipped


def _real_worker(names: list[str], skipped: dict[str, str]) -> Any:
    """A ``RealWorker`` for the real-module implementations asked for, or None."""
    if not names:
        return None
    source = os.environ.get("TRTLLM_SOURCE_DIR")
    if not source:
        skipped.update(dict.fromkeys(names, "TRTLLM_SOURCE_DIR not set"))
        return None
    from _processor import RealWorker

    worker = RealWorker(source, names)
    skipped.update(worker.skipped)
    if worker.kinds:
        return worker
    worker.close()
    return None


def _measure_cell(
    label: str,
    count: int,
    interval: int,
    runs: int,
    repeat: int,
    replays: dict[str, Replay],
    worker: Any,
    batches: list[tuple[list[int], bool]],
) -> list[Row]:
    remote = worker.kinds if worker is not None else []
    for run in replays.values():
        time_replay(run, batches)  # warm-up
    for name in remote:
        worker.time(name)
    samples: dict[str, list[float]] = {name: [] for name in [*replays, *remote]}
    floors: dict[str, list[float]] = {name: [] for name in remote}
    for _ in range(runs):
        for name, run in replays.items():  # the floor first
            samples[name].append(time_replay(run, batches, repeat))
        for name in remote:  # each after a floor run of its own process
            floor_us, us = worker.time(name)
            floors[name].append(floor_us)
            samples[name].append(us)
    rows = []
    for name, values in samples.items():
        # Each run's ratio to the floor run just before it in the same process: robust to
        # the host's speed drifting during the benchmark.
        paired = floors.get(name, samples.get("floor"))
        ratio = statistics.median(v / f for v, f in zip(values, paired)) if paired else float("nan")
        per_token = statistics.median(values) / count
        rows.append(Row(label, interval, name, round(per_token, 3), round(ratio, 2), repeat))
    return rows


# -- verdicts and reports ---------------------------------------------------------------------


def _lookup(rows: Sequence[Row], tokens: str, interval: int, impl: str) -> Row | None:
    for row in rows:
        if (row.tokens, row.stream_interval, row.impl) == (tokens, interval, impl):
            return row
    return None


def verdicts(rows: Sequence[Row]) -> list[tuple[str, bool, str]]:
    """(target, met, evidence) for every target that the measured rows can decide."""
    out: list[tuple[str, bool, str]] = []
    sizes = list(dict.fromkeys(row.tokens for row in rows))
    intervals = sorted({row.stream_interval for row in rows})
    largest = sizes[-1] if sizes else ""
    for interval, limit in ((20, TARGETS["floor_ratio_si20"]), (1, TARGETS["floor_ratio_si1"])):
        ours = _lookup(rows, largest, interval, "ours")
        if ours:
            out.append(
                (
                    f"ours <= {limit}x floor at {largest}, stream_interval {interval}",
                    ours.ratio_to_floor <= limit,
                    f"{ours.ratio_to_floor}x",
                )
            )
        plugin = _lookup(rows, largest, interval, "plugin-real")
        if ours and plugin:
            limit = TARGETS["plugin_real_over_ours"]
            over = plugin.ratio_to_floor / ours.ratio_to_floor
            out.append(
                (
                    f"plugin-real within {limit}x of ours at {largest}, interval {interval}",
                    over <= limit,
                    f"{plugin.ratio_to_floor}x vs {ours.ratio_to_floor}x floor = {over:.2f}x",
                )
            )
    if len(sizes) > 1:
        small, large = sizes[0], sizes[-1]
        for interval in intervals:
            a = _lookup(rows, small, interval, "ours")
            b = _lookup(rows, large, interval, "ours")
            if a and b:
                growth = b.us_per_token / a.us_per_token
                out.append(
                    (
                        (
                            f"ours flat per token at stream_interval {interval} "
                            f"({large} within {TARGETS['flatness']}x of {small})"
                        ),
                        growth <= TARGETS["flatness"],
                        f"{b.us_per_token} vs {a.us_per_token} us/token = {growth:.2f}x",
                    )
                )
    for fixed, before in (("ours", "upstream"), ("plugin-real", "upstream-real")):
        pairs = [(_lookup(rows, s, 1, fixed), _lookup(rows, s, 1, before)) for s in sizes]
        pairs = [(o, u) for o, u in pairs if o and u]
        if pairs:
            out.append(
                (
                    f"{fixed} faster than {before} at every size at stream_interval 1",
                    all(o.us_per_token < u.us_per_token for o, u in pairs),
                    ", ".join(
                        f"{o.tokens}: {o.us_per_token} vs {u.us_per_token}" for o, u in pairs
                    ),
                )
            )
    return out


def markdown(rows: Sequence[Row], skipped: dict[str, str]) -> str:
    impls = list(dict.fromkeys(row.impl for row in rows))
    lines = [
        "| tokens | stream_interval | "
        + " | ".join(f"{i} µs/token (×floor)" for i in impls)
        + " |",
        "|---|---:|" + "---:|" * len(impls),
    ]
    keys = list(dict.fromkeys((row.tokens, row.stream_interval) for row in rows))
    for tokens, interval in keys:
        cells = []
        for impl in impls:
            row = _lookup(rows, tokens, interval, impl)
            cells.append(f"{row.us_per_token:.2f} ({row.ratio_to_floor:.2f}×)" if row else "–")
        lines.append(f"| {tokens} | {interval} | " + " | ".join(cells) + " |")
    repeats = {(row.tokens, row.stream_interval): row.repeat for row in rows}
    lines.append(
        "\nReplays per timed run (every implementation of a cell): "
        + ", ".join(f"{t} at {i}: {n}" for (t, i), n in repeats.items())
        + "."
    )
    for name, reason in skipped.items():
        lines.append(f"\n`{name}` skipped: {reason}")
    return "\n".join(lines) + "\n"


def plot(rows: Sequence[Row], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    intervals = sorted({row.stream_interval for row in rows})
    sizes = list(dict.fromkeys(row.tokens for row in rows))
    impls = list(dict.fromkeys(row.impl for row in rows))
    fig, axes = plt.subplots(1, len(intervals), figsize=(5.5 * len(intervals), 4), squeeze=False)
    width = 0.8 / max(1, len(impls))
    for ax, interval in zip(axes[0], intervals):
        for k, impl in enumerate(impls):
            values = [
                (r.us_per_token if (r := _lookup(rows, s, interval, impl)) else 0.0) for s in sizes
            ]
            ax.bar([i + k * width for i in range(len(sizes))], values, width, label=impl)
        ax.set_xticks([i + width * (len(impls) - 1) / 2 for i in range(len(sizes))], sizes)
        ax.set_yscale("log")
        ax.set_xlabel("analysis + final tokens")
        ax.set_ylabel("µs per output token (median)")
        ax.set_title(f"stream_interval {interval}")
        ax.grid(axis="y", which="both", alpha=0.3)
    axes[0][0].legend(fontsize="small")
    fig.suptitle("CPU cost of gpt-oss Responses streaming per output token")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few runs")
    parser.add_argument("--json", action="store_true", help="print only the rows as JSON")
    parser.add_argument("--runs", type=int, default=None, help="timed runs per cell (>= 5)")
    parser.add_argument("--impls", default=",".join(IMPLS), help="comma-separated list")
    parser.add_argument("--out", type=Path, default=HERE / "results", help="results folder")
    args = parser.parse_args(argv)

    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    runs = args.runs or (5 if args.quick else 15)
    impls = [name for name in args.impls.split(",") if name]
    unknown = set(impls) - set(IMPLS)
    if unknown:
        parser.error(f"unknown implementations: {sorted(unknown)}")
    impls = ["floor"] + [name for name in impls if name != "floor"]  # each ratio needs it

    target_us = QUICK_TARGET_RUN_US if args.quick else TARGET_RUN_US
    rows, skipped = measure(sizes, INTERVALS, runs, impls, target_us)
    checks = verdicts(rows)
    report = {
        "machine": machine_info(),
        "runs": runs,
        "quick": args.quick,
        "target_run_us": target_us,
        "skipped": skipped,
        "rows": [asdict(row) for row in rows],
        "targets": [{"target": t, "met": met, "evidence": e} for t, met, e in checks],
    }
    stem = "cpu_event_cost_quick" if args.quick else "cpu_event_cost"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{stem}.json").write_text(json.dumps(report, indent=2) + "\n")
    table = markdown(rows, skipped)
    (args.out / f"{stem}.md").write_text(
        f"Machine: {bench_env(report['machine'])}; median of {runs} runs after a warm-up, "
        f"each of as many replays as make a floor run last about {target_us / 1000:g} ms.\n\n"
        + table
    )
    plot(rows, args.out / f"{stem}.png")

    log = sys.stderr if args.json else sys.stdout
    if args.json:
        print(json.dumps({"rows": report["rows"], "skipped": skipped}))
    else:
        print(f"Machine: {bench_env(report['machine'])}; median of {runs} runs\n")
        print(table)
    for target, met, evidence in checks:
        print(f"[{'MET' if met else 'MISSED'}] {target}: {evidence}", file=log)
    print(f"results: {args.out / stem}.{{json,md,png}}", file=log)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
