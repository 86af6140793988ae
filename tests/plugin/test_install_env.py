# SPDX-License-Identifier: Apache-2.0
"""Installing our wheel into a TensorRT-LLM environment changes none of its packages.

A throwaway venv gets TensorRT-LLM's pinned versions of every package we share with it
(from its ``requirements.txt``, below), installed from the package index; then pip resolves
our wheel there with ``pip install --dry-run --report``. The report must not upgrade,
downgrade or reinstall any installed package: the core wheel installs only itself, the
extras may add packages but move none. Needs the package index (skipped without it); slow
tier (about a minute).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.network]

REPO = Path(__file__).resolve().parents[2]

#: TensorRT-LLM's requirement lines for the packages our run time and extras share with it
#: (``requirements.txt`` at commit 000867d9b1ad62f3de1e54e111c094da492a5626; its
#: ``constraints.txt`` pins none of them). ``openai`` is unpinned there: serving images of
#: this generation carry 2.x, so the environment gets the newest 2.x.
TRTLLM_PINS = (
    "openai-harmony==0.0.4",
    "pydantic>=2.9.1",
    "fastapi>=0.120.1,<=0.121.3",
    "starlette>=0.49.1",
    "uvicorn",
    "matplotlib",
    "numpy<2",
    "openai<3",
)


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pip(python: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    return subprocess.run(
        [str(python), "-m", "pip", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )


def _index_reachable(dest: Path) -> bool:
    """Whether pip's default index answers (``--isolated``: no local wheel folder counts)."""
    probe = _pip(
        Path(sys.executable),
        *("download", "--isolated", "--no-deps", "--no-cache-dir", "--timeout", "10"),
        *("--retries", "0", "--dest", str(dest), "six==1.16.0"),
        timeout=60,
    )
    return probe.returncode == 0


@pytest.fixture(scope="module")
def trtllm_env(tmp_path_factory):
    """A venv holding TensorRT-LLM's pins of the shared packages, and its installed set."""
    root = tmp_path_factory.mktemp("trtllm-env")
    if not _index_reachable(root / "probe"):
        pytest.skip("the package index is unreachable: cannot install TensorRT-LLM's pins")
    subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True)
    python = root / "venv" / "bin" / "python"
    pins = root / "trtllm-pins.txt"
    pins.write_text("".join(f"{line}\n" for line in TRTLLM_PINS))
    names = [re.split(r"[<>=!~ ]", line, maxsplit=1)[0] for line in TRTLLM_PINS]
    done = _pip(python, "install", "--quiet", "-c", str(pins), *names, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    wheels = root / "wheels"
    built = _pip(python, "wheel", "--quiet", "--no-deps", "-w", str(wheels), str(REPO))
    assert built.returncode == 0, built.stderr[-3000:]
    listed = _pip(python, "list", "--format", "json")
    installed = {_canonical(p["name"]): p["version"] for p in json.loads(listed.stdout)}
    assert installed["openai-harmony"] == "0.0.4"
    return python, next(wheels.glob("*.whl")), installed, root


def _would_install(trtllm_env, extras: str = "") -> dict[str, str]:
    python, wheel, _, root = trtllm_env
    report = root / f"report{extras}.json"
    target = f"trtllm-stream-fix{extras} @ {wheel.as_uri()}"
    done = _pip(python, "install", "--dry-run", "--quiet", "--report", str(report), target)
    assert done.returncode == 0, done.stderr[-3000:]
    items = json.loads(report.read_text())["install"]
    return {_canonical(i["metadata"]["name"]): i["metadata"]["version"] for i in items}


def _moved(would: dict[str, str], installed: dict[str, str]) -> dict[str, str]:
    return {n: f"{installed[n]} -> {v}" for n, v in would.items() if n in installed}


def test_core_wheel_installs_only_itself(trtllm_env):
    would = _would_install(trtllm_env)
    assert _moved(would, trtllm_env[2]) == {}
    assert set(would) == {"trtllm-stream-fix"}


@pytest.mark.parametrize("extras", ["[cli,fast]", "[sim]"])
def test_extras_move_no_installed_package(trtllm_env, extras):
    would = _would_install(trtllm_env, extras)
    assert _moved(would, trtllm_env[2]) == {}
    assert "trtllm-stream-fix" in would
