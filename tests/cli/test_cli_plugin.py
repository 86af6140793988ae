# SPDX-License-Identifier: Apache-2.0
"""``trtllm-stream-fix plugin``: the import-hook .pth file, and its place in the wheel."""

from __future__ import annotations

import zipfile

import pytest

from trtllm_stream_fix.cli import main
from trtllm_stream_fix.plugin.pth import PTH_NAME, pth_line

pytestmark = pytest.mark.cpu_only


def test_install_show_remove_pth(tmp_path, capsys):
    assert main(["plugin", "install-pth", "--site-dir", str(tmp_path)]) == 0
    written = tmp_path / PTH_NAME
    assert written.read_text(encoding="utf-8") == pth_line()
    capsys.readouterr()
    assert main(["plugin", "show-pth", "--site-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == str(written)
    assert main(["plugin", "remove-pth", "--site-dir", str(tmp_path)]) == 0
    assert not written.exists()
    assert "removed" in capsys.readouterr().out
    assert main(["plugin", "show-pth", "--site-dir", str(tmp_path)]) == 0
    assert f"no .pth file found in {tmp_path}" in capsys.readouterr().out


def test_packaged_pth_matches_generated_line():
    from trtllm_stream_fix.plugin.pth import PACKAGED_PTH

    lines = PACKAGED_PTH.read_text(encoding="utf-8").splitlines(keepends=True)
    assert lines[-1] == pth_line()


@pytest.mark.slow
def test_wheel_puts_pth_at_site_packages_root(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(root)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot build a wheel here: {proc.stderr[-300:]}")
    (wheel,) = tmp_path.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert PTH_NAME in names  # top level: Python reads .pth files only there
