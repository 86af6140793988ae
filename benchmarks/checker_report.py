# SPDX-License-Identifier: Apache-2.0
"""Seconds and report bytes of the strict checkers on hostile recordings of 1 and 4 MB.

Each protocol's hostile body (``trtllm_stream_fix.testing.hostile_streams``: a flood of
violations, such as Responses items added and never done) goes through the two paths a
user takes:

- ``replay``: ``replay_record`` of the body saved to a file (``trtllm-stream-fix replay``);
- ``validate``: a ``StreamSession`` fed the body in 16 KiB pieces, as the HTTP client feeds
  what it receives (``trtllm-stream-fix validate``).

It reports CPU seconds of the process (so other load on a shared host does not count), the
report's size (the JSON of violations and warnings) and how
many violations were counted. A linear checker takes about 4x the seconds for 4x the input;
a bounded report stays the same size.

    python benchmarks/checker_report.py              # 1 MB and 4 MB, results in results/
    python benchmarks/checker_report.py --quick --json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from _runner import bench_env, machine_info

from trtllm_stream_fix.checker.client import StreamSession, replay_record
from trtllm_stream_fix.testing.hostile_streams import HOSTILE_STREAMS, hostile_body

FULL_SIZES = (1_000_000, 4_000_000)
QUICK_SIZES = (100_000, 400_000)
PIECE = 16 * 1024


def _validate_path(body: bytes, protocol: str) -> Any:
    session = StreamSession(protocol)  # type: ignore[arg-type]
    session.start(200, "text/event-stream")
    for start in range(0, len(body), PIECE):
        session.feed(body[start : start + PIECE], 0.0)
    return session.finish("eof")


def _counted(violations: list[str]) -> int:
    """Violations in all: the listed ones plus those the summary lines count."""
    total = 0
    for line in violations:
        if " in all, the first " in line:
            total += int(line.split(" in all")[0].rsplit("(", 1)[1]) - int(
                line.split("the first ")[1].split(" ")[0]
            )
        else:
            total += 1
    return total


def measure(protocol: str, size: int, path: str, folder: Path) -> dict[str, Any]:
    body = hostile_body(protocol, size)
    start = time.process_time()
    if path == "replay":
        file = folder / f"{protocol}.sse"
        file.write_bytes(body)
        record = replay_record(file, protocol)  # type: ignore[arg-type]
    else:
        record = _validate_path(body, protocol)
    seconds = time.process_time() - start
    report = json.dumps({"violations": record.violations, "warnings": record.warnings})
    return {
        "protocol": protocol,
        "path": path,
        "input_bytes": len(body),
        "cpu_seconds": round(seconds, 3),
        "report_bytes": len(report.encode("utf-8")),
        "violations_counted": _counted(record.violations),
    }


def _markdown(rows: list[dict[str, Any]], env: str) -> str:
    lines = [
        f"Machine: {env}.",
        "",
        "| protocol | path | input MB | CPU seconds | report bytes | violations counted |",
        "|---|---|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r['protocol']} | {r['path']} | {r['input_bytes'] / 1e6:.2f} | {r['cpu_seconds']:.2f} "
        f"| {r['report_bytes']} | {r['violations_counted']} |"
        for r in rows
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 kB and 400 kB")
    parser.add_argument("--json", action="store_true", help="JSON rows on stdout")
    parser.add_argument("--out", type=Path, default=HERE / "results", help="results folder")
    args = parser.parse_args(argv)
    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for protocol in HOSTILE_STREAMS:  # warm-up: imports and the openai event classes
            measure(protocol, 10_000, "replay", Path(tmp))
        for protocol in HOSTILE_STREAMS:
            for path in ("replay", "validate"):
                for size in sizes:
                    rows.append(measure(protocol, size, path, Path(tmp)))
                    print(json.dumps(rows[-1]), file=sys.stderr)
    env = bench_env(machine_info())
    if not args.quick:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "checker_report.json").write_text(
            json.dumps({"machine": env, "rows": rows}, indent=1) + "\n", encoding="utf-8"
        )
        (args.out / "checker_report.md").write_text(_markdown(rows, env), encoding="utf-8")
    if args.json:
        print(json.dumps({"rows": rows}))
    else:
        print(_markdown(rows, env))
    return 0


if __name__ == "__main__":
    sys.exit(main())
