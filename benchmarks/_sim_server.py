# SPDX-License-Identifier: Apache-2.0
"""Run the simulated gpt-oss Responses server in this process (the benchmarks' subprocess).

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

    import uvicorn

    from trtllm_stream_fix.core.config import StreamConfig
    from trtllm_stream_fix.sim import EngineConfig, create_app

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
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False)
    finally:
        if profile is not None:
            profile.disable()
            profile.dump_stats(args.profile)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
