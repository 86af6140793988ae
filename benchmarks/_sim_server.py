# SPDX-License-Identifier: Apache-2.0
"""Run the simulated gpt-oss Responses server in this process (the benchmarks' subprocess).

Served as ``trtllm-stream-fix serve`` serves it (``sim.http_server.serve_on``: the same
uvicorn configuration and connection limits).

python benchmarks/_sim_server.py --port 8123 --stream-interval 20 --generator ours
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--stream-interval", type=int, default=20)
    parser.add_argument("--tokens-per-second", type=float, default=0.0)
    parser.add_argument("--generator", choices=("ours", "upstream"), default="ours")
    parser.add_argument("--parser", choices=("fast", "reference"), default=None)
    parser.add_argument("--profile", help="write a cProfile of the server to this file")
    args = parser.parse_args(argv)

    from trtllm_stream_fix.core.config import StreamConfig
    from trtllm_stream_fix.sim import EngineConfig, create_app
    from trtllm_stream_fix.sim.http_server import bind, serve_on

    config = StreamConfig() if args.parser is None else StreamConfig(parser=args.parser)
    app = create_app(
        EngineConfig(
            stream_interval=args.stream_interval, tokens_per_second=args.tokens_per_second
        ),
        generator=args.generator,
        stream_config=config,
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
