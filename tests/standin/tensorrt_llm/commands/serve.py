# SPDX-License-Identifier: Apache-2.0
"""Stand-in of ``tensorrt_llm.commands.serve``: the ``trtllm-serve`` click entry point.

It serves nothing; it records the arguments it was given and whether the stream fix was
active in this interpreter when it ran, so tests can check the plugin's serve wrapper.
"""

from __future__ import annotations

import click

LAST_CALL: dict = {}


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("model")
@click.argument("extra", nargs=-1, type=click.UNPROCESSED)
def main(model: str, extra: tuple[str, ...]) -> None:
    from tensorrt_llm.serve import openai_server

    LAST_CALL.clear()
    LAST_CALL.update(
        model=model, extra=list(extra), processor=openai_server.ResponsesStreamingProcessor
    )
