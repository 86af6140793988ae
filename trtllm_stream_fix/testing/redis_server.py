# SPDX-License-Identifier: Apache-2.0
"""A throwaway ``redis-server`` on a free loopback port (tests, benchmarks).

``RedisServer(directory)`` runs the Debian ``redis-server`` binary in the foreground, its
files in ``directory``: no snapshots and no append-only file by default (tests), or
``persistent=True`` for ``appendonly yes`` + ``appendfsync always`` (every write on disk
before Redis answers, so a killed server restarted on the same directory has every
completed turn). ``kill()`` is SIGKILL (a crash), ``start()`` starts it again on the same
port, ``stop()`` ends it.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

STARTUP_SECONDS = 10.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def missing() -> str | None:
    """Why no server can be started here (None when one can)."""
    if shutil.which("redis-server") is None:
        return "redis-server is not installed (apt-get install redis-server; .ci/run does)"
    try:
        import redis  # noqa: F401
    except ImportError:
        return "the redis package is not installed (pip install -e '.[store]')"
    return None


class RedisServer:
    """One ``redis-server`` process on ``127.0.0.1:port``, files in ``directory``."""

    def __init__(self, directory: Path, *, persistent: bool = False, port: int = 0) -> None:
        self.directory = Path(directory)
        self.persistent = persistent
        self.port = port or free_port()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        if self._process is not None:
            raise RuntimeError(f"redis-server on port {self.port} is already running")
        durability = (
            ["--appendonly", "yes", "--appendfsync", "always"]
            if self.persistent
            else ["--appendonly", "no"]
        )
        self.directory.mkdir(parents=True, exist_ok=True)
        options = {
            "port": str(self.port),
            "bind": "127.0.0.1",
            "save": "",
            "dir": str(self.directory),
            "daemonize": "no",
            "logfile": str(self.directory / "redis.log"),
        }
        arguments = [part for name, value in options.items() for part in (f"--{name}", value)]
        self._process = subprocess.Popen(
            ["redis-server", *arguments, *durability],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + STARTUP_SECONDS
        while not self._answers():
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                log = self.directory / "redis.log"
                tail = log.read_text()[-500:] if log.exists() else ""
                raise RuntimeError(f"redis-server did not start on port {self.port}: {tail}")
            time.sleep(0.02)
        return self

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def kill(self) -> None:
        """SIGKILL: Redis ends as in a crash, without saving anything."""
        if self._process is not None:
            self._process.kill()
            self._process.wait(timeout=10)
            self._process = None

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=10)
            self._process = None

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
