# SPDX-License-Identifier: Apache-2.0
"""The cost of a compaction turn and the conversation's tokens before and after it.

Builds agent conversations of T turns (a user request, a ``read_file`` call, its output of
``--output-words`` words, an answer), then compacts each through the simulated server's own
code path (``SimCompaction``: the Harmony-rendered compaction prompt, the simulated
engine's summary, the Fernet seal) and reports, per T: the conversation's rendered prompt
tokens before and after (the window expanded as the next turn's model reads it), the
compaction turn's usage (prompt tokens the engine reads, tokens it generates), and the
server's CPU time for the compaction as served (median of ``--repeat``: rendering the
prompt, parsing the summary, sealing; the simulated engine's tokens are free), measured
without the two extra renderings that count the tokens before and after. On a GPU the
engine's time for the summary is a turn's prefill of the whole conversation plus the
summary's decode: the usage columns give both.

    python benchmarks/compaction_cost.py
    python benchmarks/compaction_cost.py --turns 10 40 100 --json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from typing import Any

from cryptography.fernet import Fernet

from trtllm_stream_fix.compaction.window import expand
from trtllm_stream_fix.encoding import load_gpt_oss_encoding
from trtllm_stream_fix.sim import EngineConfig
from trtllm_stream_fix.sim.compaction import SimCompaction
from trtllm_stream_fix.sim.engine import SimulatedEngine
from trtllm_stream_fix.store import MemoryStore

WORDS = ("module", "handler", "retry", "timeout", "config", "parser", "cache", "token")


def conversation(turns: int, output_words: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for n in range(turns):
        body = " ".join(WORDS[(n + k) % len(WORDS)] for k in range(output_words))
        items += [
            {"role": "user", "content": f"Turn {n}: read src/mod_{n}.py and fix its retries."},
            {"type": "function_call", "call_id": f"c{n}", "name": "read_file",
             "arguments": json.dumps({"path": f"src/mod_{n}.py"})},
            {"type": "function_call_output", "call_id": f"c{n}", "output": body},
            {"role": "assistant",
             "content": [{"type": "output_text", "text": f"Fixed mod_{n}.py: retries capped."}]},
        ]  # fmt: skip
    return items


async def measure(turns: int, output_words: int, repeat: int) -> dict[str, Any]:
    async def put(*_: Any) -> None:
        return None

    compaction = SimCompaction(
        SimulatedEngine(EngineConfig(stream_interval=20)),
        load_gpt_oss_encoding(),
        MemoryStore(),
        ("gpt-oss-120b",),
        put,
        key=Fernet.generate_key(),
    )
    items = conversation(turns, output_words)
    times = []
    for _ in range(repeat):
        start = time.process_time()
        await compaction.compactor.compact("gpt-oss-120b", items, None)
        times.append(time.process_time() - start)
    result = await compaction.compactor.compact("gpt-oss-120b", items, None, measure=True)
    assert result.tokens_before is not None and result.tokens_after is not None
    return {
        "turns": turns,
        "tokens_before": result.tokens_before,
        "tokens_after": result.tokens_after,
        "window_items": len(result.window),
        "blob_chars": len(result.item["encrypted_content"]),
        "compaction_input_tokens": result.usage.input_tokens,
        "compaction_output_tokens": result.usage.output_tokens,
        "server_cpu_ms": round(statistics.median(times) * 1000, 1),
        "expanded_items": len(expand(result.window, compaction.codec)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[10, 40, 100])
    parser.add_argument("--output-words", type=int, default=150)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = [asyncio.run(measure(t, args.output_words, args.repeat)) for t in args.turns]
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return 0
    print(
        f"{'turns':>5} {'before':>8} {'after':>7} {'ratio':>6} {'summary in':>10} "
        f"{'summary out':>11} {'blob':>6} {'cpu ms':>7}"
    )
    for r in rows:
        ratio = r["tokens_after"] / r["tokens_before"]
        print(
            f"{r['turns']:>5} {r['tokens_before']:>8} {r['tokens_after']:>7} {ratio:>6.1%} "
            f"{r['compaction_input_tokens']:>10} {r['compaction_output_tokens']:>11} "
            f"{r['blob_chars']:>6} {r['server_cpu_ms']:>7}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
