# SPDX-License-Identifier: Apache-2.0
"""Output into a reader that closes early (``| head``): end quietly, as Unix tools do."""

from __future__ import annotations

import functools
import os
import select
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["READER_GONE_STATUS", "console", "silence_gone_outputs"]

#: Exit status when stdout's (or stderr's) reader has gone: 128 + SIGPIPE, what the shell shows
#: for ``yes | head -1``.
READER_GONE_STATUS = 141


def _gone_fds() -> list[int]:
    """The file descriptors of stdout and stderr whose reader has closed (poll says POLLERR)."""
    poller = select.poll()
    for stream in (sys.stdout, sys.stderr):
        try:
            poller.register(stream.fileno(), select.POLLOUT)
        except (AttributeError, OSError, ValueError):  # replaced by a non-file (tests)
            continue
    return [fd for fd, events in poller.poll(0) if events & (select.POLLERR | select.POLLHUP)]


def silence_gone_outputs() -> bool:
    """Point stdout and stderr at /dev/null where their reader has gone, so the interpreter's
    last flush cannot fail again; True when one had gone (the broken pipe was ours)."""
    gone = _gone_fds()
    if gone:
        devnull = os.open(os.devnull, os.O_WRONLY)
        for fd in gone:
            os.dup2(devnull, fd)
        os.close(devnull)
    return bool(gone)


@functools.cache
def _console_class() -> type[Console]:
    from rich.console import Console

    class PipeConsole(Console):
        """A rich console that lets a broken pipe reach the entry point (rich exits 1 itself)."""

        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise  # the BrokenPipeError being handled

    return PipeConsole


def console(**kwargs: Any) -> Console:
    """``rich.console.Console(**kwargs)`` whose broken pipe ends the command like any other."""
    return _console_class()(**kwargs)
