# SPDX-License-Identifier: Apache-2.0
"""Run the simulated gpt-oss Responses server in this process (the benchmarks' subprocess).

Served as ``trtllm-stream-fix serve`` serves it (``sim.http_server.serve_on``: the same
uvicorn configuration and connection limits).

python benchmarks/_sim_server.py --port 8123 --stream-interval 20 --generator ours
python benchmarks/_sim_server.py --port 8123 --store redis://127.0.0.1:6379/0 \
    --store-timings timings.json   # the store's time per turn and the event-loop cycle,
                                  # written when the server ends
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--stream-interval", type=int, default=20)
    parser.add_argument("--tokens-per-second", type=float, default=0.0)
    parser.add_argument("--generator", choices=("ours", "upstream"), default="ours")
    parser.add_argument("--parser", choices=("fast", "reference"), default=None)
    parser.add_argument("--profile", help="write a cProfile of the server to this file")
    parser.add_argument("--store", default="memory", help="response store URL (default memory)")
    parser.add_argument(
        "--store-timings",
        type=Path,
        help="time every store call; write them (and their sum per turn) here at exit",
    )
    args = parser.parse_args(argv)

    from trtllm_stream_fix.core.config import StreamConfig
    from trtllm_stream_fix.sim import EngineConfig, create_app
    from trtllm_stream_fix.sim.http_server import bind, serve_on
    from trtllm_stream_fix.store import open_store

    store = open_store(args.store)
    if args.store_timings:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from _conversations import TimedStore

        store = TimedStore(store)

    config = StreamConfig() if args.parser is None else StreamConfig(parser=args.parser)
    app = create_app(
        EngineConfig(
            stream_interval=args.stream_interval, tokens_per_second=args.tokens_per_second
        ),
        generator=args.generator,
        stream_config=config,
        store=store,
    )
    if args.store_timings:
        # uvicorn re-raises the SIGTERM it shut down on: the file is written at shutdown.
        timed, path = store, args.store_timings
        from _conversations import probe_loop

        probes: list[asyncio.Task] = []
        app.router.add_event_handler(
            "startup", lambda: probes.append(asyncio.ensure_future(probe_loop(timed.loop_cycles)))
        )
        app.router.add_event_handler(
            "shutdown", lambda: path.write_text(json.dumps(timed.report()))
        )
    profile = None
    if args.profile:
        import cProfile

        profile = cProfile.Profile()
        profile.enable()
    try:
        # The limits ``trtllm-stream-fix serve`` runs with (request-head deadline, header
        # and concurrency bounds): the benchmarks measure the server users run.
        serve_on(bind(args.host, args.port), app, log_level="warning", access_log=False)
    finally:
        if profile is not None:
            profile.disable()
            profile.dump_stats(args.profile)

    return 0


if __name__ == "__main__":
    raise SystemExit(main())
