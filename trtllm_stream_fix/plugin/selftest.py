# SPDX-License-Identifier: Apache-2.0
"""``trtllm-stream-fix doctor --selftest``: prove the fix on this host's TensorRT-LLM.

In a fresh interpreter (``python -m trtllm_stream_fix.plugin.selftest``) the installed
``tensorrt_llm`` Responses modules are imported (or, with ``--source``/``TRTLLM_SOURCE_DIR``,
the four real files of a source tree, everything else stubbed: see
``trtllm_stream_fix.plugin.realstub``), the plugin is installed, and upstream's own
``ResponsesStreamingProcessor`` and ``responses_api_streaming_post_processor`` are driven
the way ``openai_server`` drives them, with synthetic gpt-oss outputs at 1 and 20 tokens per
engine response (``stream_interval`` 1 and 20) and with the post-processor arguments pickled
as they travel to a PostprocWorker. Every stream goes through the strict checker and the
OpenAI SDK accumulator, and the stream_interval-20 streams must show the client the same
events as the stream_interval-1 stream. Each other installed group runs its own probe
(``plugin/probes.py``: chat streams, complete non-streaming bodies, body usage equal to the
stream's). The parent prints one verdict per group (PASS, FAIL with the first failing
stream, REFUSED with why, OFF) and exits 0 only when every installed group passed and the
required ones installed; it names the optional groups that are off and what that means.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import traceback
from typing import Any

from ..core.config import FIX_ENV
from .upstream_names import OPENAI_SERVER

DEFAULT_COUNT = 30
SOURCE_ENV = "TRTLLM_SOURCE_DIR"
STREAMING_GROUPS = ("responses", "pre-class")  # the Responses streaming fix of each line


def run(source: str | None, count: int) -> dict[str, Any]:
    """The selftest itself (call in a fresh interpreter): install, then each installed
    group's probe (``registry.Group.probe``)."""
    from . import realstub

    if source:
        realstub.activate(source)
        from tensorrt_llm.serve import openai_protocol

        from .realstub.server import align_protocol

        align_protocol(openai_protocol)  # the tree's server imports (the store group's probe)
    from tensorrt_llm.serve import postprocess_handlers, responses_utils  # noqa: F401

    from .probes import missing_server_file

    # The server module too, as trtllm-serve loads it (the websocket group patches it); not
    # where the tree has no openai_server.py (a partial checkout): the stand-in made for the
    # missing file would be judged as upstream's, and every group bound there refused.
    if missing_server_file() is None:
        try:
            importlib.import_module(OPENAI_SERVER)
        except Exception:  # a group that needs it then reports NOT LOADED
            pass

    from ..sim.model import generate_outputs
    from . import registry
    from .installer import group_states, install, last_refusals
    from .targets import detect_line

    report = install(mode="on")
    states, refusals = group_states(), last_refusals()
    line = detect_line()
    errors = {o.target: o.detail for o in report.outcomes if o.status == "error"}
    outputs = list(generate_outputs(count, seed=11))
    groups = []
    for group in registry.GROUPS:
        failed = [
            f"{b}: {errors[b]}"
            for p in registry.patches(group.name)
            for b in p.bindings
            if b in errors
        ]
        entry: dict[str, Any] = {
            "name": group.name,
            "title": group.title,
            "required": group.required and group.line in (None, line),
            "other_line": group.line not in (None, line),
            "when_off": group.when_off,
            "state": "error" if failed else states[group.name],
            "detail": "; ".join(failed) or refusals.get(group.name, ""),
        }
        if entry["state"] == "installed" and group.probe:
            entry["probe"] = _probe(group.probe, outputs)
        groups.append(entry)
    return {
        "source": source or "installed",
        "files": {m: getattr(sys.modules.get(m), "__file__", None) for m in realstub.REAL_MODULES},
        "install": [[o.target, o.status, o.detail] for o in report.outcomes],
        "groups": groups,
    }


def _probe(path: str, outputs: list[Any]) -> dict[str, Any]:
    from .probes import ProbeResult

    module, name = path.split(":")
    try:
        result: ProbeResult = getattr(importlib.import_module(module), name)(outputs)
    except Exception as exc:
        result = ProbeResult(False, first_failure=f"raised {type(exc).__name__}: {exc}")
    return result.as_dict()


def group_verdict(group: dict[str, Any]) -> str:
    """PASS, FAIL (first failing stream or error), NOT CHECKED (why the probe cannot run
    on this tree), REFUSED (why), OFF or NOT LOADED."""
    state = group["state"]
    if state == "installed":
        probe = group.get("probe") or {"ok": True}
        if probe.get("not_checked"):
            return f"NOT CHECKED ({probe['not_checked']})"
        return "PASS" if probe["ok"] else f"FAIL ({probe['first_failure']})"
    if state == "refused":
        return f"REFUSED ({group['detail']})"
    if state == "error":
        return f"FAIL ({group['detail']})"
    if state == "absent":
        return "OFF (this TensorRT-LLM has nothing to patch there)"
    return "NOT LOADED (its module was not imported)"


def _not_checked(group: dict[str, Any]) -> bool:
    """An optional group whose probe could not run on this tree (it does not fail)."""
    return not group["required"] and group_verdict(group).startswith("NOT CHECKED")


def passed(result: dict[str, Any]) -> bool:
    """Every installed group passed (an optional one may be not checked) and every required
    group is installed."""
    groups = result.get("groups") or []
    return (
        "error" not in result
        and bool(groups)
        and all(
            group_verdict(g) == "PASS" or _not_checked(g)
            for g in groups
            if g["required"] or g["state"] in ("installed", "error")
        )
    )


def verdict_text(result: dict[str, Any]) -> str:
    """The one-screen verdict."""
    lines = [f"trtllm-stream-fix selftest (TensorRT-LLM: {result.get('source', '?')})"]
    if "error" in result:
        lines.append(f"could not run: {result['error']}")
        lines.append("verdict: FAIL")
        return "\n".join(lines)
    groups = [g for g in result.get("groups") or [] if not g.get("other_line")]
    for group in groups:
        lines.append(f"{group['title']}: {group_verdict(group)}")
        probe = group.get("probe") or {}
        lines += [f"  {line}" for line in probe.get("summary", [])]
        examples = (probe.get("stats") or {}).get("examples", [])
        shown = [e for e in examples if e != probe.get("first_failure")][:2]
        lines += [f"  e.g. {example}" for example in shown]
    streaming = next((g for g in groups if g["name"] in STREAMING_GROUPS and g["required"]), None)
    if streaming and streaming["state"] != "installed":
        lines.append("no Responses stream was run: the streaming group did not install")
    off = [g for g in groups if not g["required"] and g["state"] in ("refused", "absent")]
    lines += [f"off: {g['title']}: {g['when_off']}" for g in off]
    ok = passed(result)
    unchecked = [g for g in groups if _not_checked(g)]
    notes = [f"{len(off)} optional group(s) off"] if off else []
    notes += [f"{len(unchecked)} optional group(s) not checked"] if unchecked else []
    note = "".join(f"; {n}" for n in notes)
    lines.append(f"verdict: {'PASS' if ok else 'FAIL'}{note if ok else ''}")
    return "\n".join(lines)


def selftest(source: str | None = None, count: int = DEFAULT_COUNT) -> dict[str, Any]:
    """Run the selftest in a fresh interpreter and return its result."""
    cmd = [sys.executable, "-m", "trtllm_stream_fix.plugin.selftest", str(count)]
    if source:
        cmd.append(source)
    env = {k: v for k, v in os.environ.items() if k != FIX_ENV}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("RESULT "):
            result: dict[str, Any] = json.loads(line[len("RESULT ") :])
            return result
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": f"exit {proc.returncode}: {tail}"}


def entry_problem(source: str | None) -> str | None:
    """Why the selftest cannot start here, and what to do (None: it can start)."""
    import importlib.util
    from pathlib import Path

    from .realstub import REAL_MODULES

    if source:
        files = [Path(source, *m.split(".")).with_suffix(".py") for m in REAL_MODULES]
        missing = [f for f in files if not f.is_file()]
        if missing:
            return (
                f"{source} is not a TensorRT-LLM source tree (no {missing[0]}): --source DIR "
                f"(or {SOURCE_ENV}) names the root of a TensorRT-LLM checkout"
            )
        return None
    try:
        installed = importlib.util.find_spec("tensorrt_llm") is not None
    except (ImportError, ValueError):
        installed = False
    if installed:
        return None
    return (
        "TensorRT-LLM is not installed in this interpreter: run doctor --selftest with the "
        "Python that runs trtllm-serve, or test a TensorRT-LLM source tree on CPU with "
        f"--source DIR (or {SOURCE_ENV}=DIR)"
    )


def selftest_main(source: str | None, count: int, as_json: bool = False) -> int:
    source = source or os.environ.get(SOURCE_ENV) or None
    problem = entry_problem(source)
    if problem is not None:
        if as_json:
            print(json.dumps({"error": problem}, indent=2))
        print(f"trtllm-stream-fix doctor --selftest: {problem}", file=sys.stderr)
        return 2
    result = selftest(source, count)
    print(json.dumps(result, indent=2) if as_json else verdict_text(result))
    return 0 if passed(result) else 1


if __name__ == "__main__":
    try:
        payload = run(sys.argv[2] if len(sys.argv) > 2 else None, int(sys.argv[1]))
    except Exception as exc:
        payload = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
    print("RESULT " + json.dumps(payload))
