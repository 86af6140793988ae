# SPDX-License-Identifier: Apache-2.0
"""The ``.pth`` file that loads the import hook in every interpreter.

Python runs ``import`` lines of ``*.pth`` files found in site-packages at start-up. Ours
locates this package with ``importlib.util.find_spec`` (which imports nothing for a
top-level name), loads ``plugin/bootstrap.py`` on its own under a private module name and
calls ``register_from_pth()``. So an interpreter that never imports TensorRT-LLM pays for
one file read, and ``TRTLLM_STREAM_FIX=0`` turns it into a no-op.

The wheel ships the file as package data (``trtllm_stream_fix/_trtllm_stream_fix.pth``);
``install_pth()`` copies it to the site-packages root, where Python looks for it.
"""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

PTH_NAME = "_trtllm_stream_fix.pth"
BOOTSTRAP_MODULE = "_trtllm_stream_fix_bootstrap"
PACKAGED_PTH = Path(__file__).resolve().parent.parent / PTH_NAME


def pth_line() -> str:
    """The single ``import`` line of the ``.pth`` file."""
    return (
        "import importlib.util as _u, os as _o, sys as _s; "
        "_p = _u.find_spec('trtllm_stream_fix'); "
        f"_b = _p and _p.submodule_search_locations and _u.spec_from_file_location("
        f"'{BOOTSTRAP_MODULE}', _o.path.join(list(_p.submodule_search_locations)[0], "
        "'plugin', 'bootstrap.py')); "
        "_m = _b and _u.module_from_spec(_b); "
        f"_b and (_s.modules.setdefault('{BOOTSTRAP_MODULE}', _m), _b.loader.exec_module(_m), "
        "_m.register_from_pth())\n"
    )


def default_site_dir() -> Path:
    """This interpreter's site-packages (purelib) directory."""
    return Path(sysconfig.get_paths()["purelib"])


def installed_pth_paths(site_dir: str | Path | None = None) -> list[Path]:
    """Our ``.pth`` file in ``site_dir``; by default, in the directories on ``sys.path``
    (site dirs included)."""
    entries = [str(site_dir)] if site_dir is not None else [str(default_site_dir()), *sys.path]
    seen, found = set(), []
    for entry in entries:
        path = Path(entry or ".") / PTH_NAME
        if path not in seen and path.is_file():
            seen.add(path)
            found.append(path)
    return found


def install_pth(site_dir: str | Path | None = None) -> Path:
    """Write the ``.pth`` file into ``site_dir`` (default: this interpreter's purelib)."""
    target = Path(site_dir) if site_dir is not None else default_site_dir()
    path = target / PTH_NAME
    path.write_text(pth_line(), encoding="utf-8")
    return path


def remove_pth(site_dir: str | Path | None = None) -> bool:
    """Delete the ``.pth`` file from ``site_dir``; False if it was not there."""
    path = (Path(site_dir) if site_dir is not None else default_site_dir()) / PTH_NAME
    if not path.is_file():
        return False
    path.unlink()
    return True


def pth_main(argv: list[str] | None = None) -> int:
    """``trtllm-stream-fix plugin {install-pth,remove-pth,show-pth} [--site-dir DIR]``."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="trtllm-stream-fix plugin",
        description="Install, remove or show the .pth file that loads the import hook in every "
        "interpreter (executor and PostprocWorker processes included). The wheel installs it; "
        "an editable install (pip install -e) needs install-pth.",
    )
    parser.add_argument("action", choices=("install-pth", "remove-pth", "show-pth"))
    parser.add_argument("--site-dir", default=None, help="default: this interpreter's purelib")
    args = parser.parse_args(argv)
    if args.site_dir is not None and not Path(args.site_dir).is_dir():
        parser.error(f"--site-dir {args.site_dir}: no such directory")
    try:
        if args.action == "install-pth":
            print(f"wrote {install_pth(args.site_dir)}")
        elif args.action == "remove-pth":
            removed = remove_pth(args.site_dir)
            print("removed" if removed else "no .pth file found")
        else:
            where = f" in {args.site_dir}" if args.site_dir is not None else ""
            paths = installed_pth_paths(args.site_dir)
            print("\n".join(str(p) for p in paths) or f"no .pth file found{where}")
    except OSError as exc:
        print(f"trtllm-stream-fix plugin {args.action}: {exc}", file=sys.stderr)
        return 1
    return 0
