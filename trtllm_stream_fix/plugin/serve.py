# SPDX-License-Identifier: Apache-2.0
"""``trtllm-serve`` with the fix: register the import hook, then run upstream's CLI.

The hook patches ``responses_utils``/``openai_server`` in this process as soon as upstream
imports them. Executor workers spawned by MPI and the PostprocWorkers under them are reached
by the ``.pth`` hook when it is installed, and in any case by pickle: the processor instance
the server hands them is our subclass, which imports this package where it is unpickled.
"""

from __future__ import annotations

import sys
from typing import Any

from .bootstrap import register
from .errors import StreamFixInstallError
from .installer import mode_from_env
from .upstream_names import SERVE_CLI

UPSTREAM_CLI = SERVE_CLI
NOT_INSTALLED = (
    "trtllm-stream-fix serve --engine trtllm: TensorRT-LLM is not installed in this "
    "interpreter. --engine trtllm runs trtllm-serve with the fix, so run it with the Python "
    "that has TensorRT-LLM (e.g. inside the TensorRT-LLM container: pip install "
    "trtllm-stream-fix there). Without TensorRT-LLM: --engine trtllm-source --source DIR serves "
    "upstream's own openai_server from a source tree on CPU with a fake gpt-oss engine, and "
    "--engine sim (the default) the simulated server.\n"
)


def run_trtllm_serve(argv: list[str]) -> int:
    """Run ``trtllm-serve argv...`` in this process with the fix; returns the exit code."""
    if mode_from_env() != "off":
        register()
    from tensorrt_llm.commands.serve import main  # upstream click entry point

    return _run_click(main, list(argv))


def _run_click(main: Any, argv: list[str]) -> int:
    try:
        if hasattr(main, "main"):  # a click command: keep its normal exit behaviour
            main.main(args=argv, prog_name="trtllm-serve", standalone_mode=True)
        else:
            sys.argv = ["trtllm-serve", *argv]
            main()
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0


def serve_trtllm_main(argv: list[str] | None = None) -> int:
    """CLI entry for ``trtllm-stream-fix serve --engine trtllm ...`` (args after the engine)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return run_trtllm_serve(argv)
    except StreamFixInstallError as exc:
        sys.stderr.write(f"trtllm-stream-fix: {exc} ({mode_from_env()} mode)\n")
        return 3
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] == "tensorrt_llm":
            sys.stderr.write(NOT_INSTALLED)
            return 2
        raise
