# SPDX-License-Identifier: Apache-2.0
"""The self-test's proof of each patch group (``registry.Group.probe``).

Each probe runs in the self-test's interpreter after ``install()``, on this host's
TensorRT-LLM modules (or a source tree's), with synthetic gpt-oss outputs, and returns a
``ProbeResult`` (as a dict in the self-test's JSON report: ``ProbeResult.as_dict``); a probe
that cannot run on this tree says why in ``not_checked`` (an optional group is then reported
NOT CHECKED, which does not fail the verdict).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from .upstream_names import OPENAI_SERVER, RESPONSES_UTILS


@dataclass(frozen=True)
class ProbeResult:
    """What a probe found: ``ok``, the lines the verdict shows, the first failure (None when
    ``ok``) and the counts behind them (with up to a few ``examples`` of failures)."""

    ok: bool
    summary: list[str] = field(default_factory=list)
    first_failure: str | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    not_checked: str | None = None  # why the probe could not run here (not a failure)

    def as_dict(self) -> dict[str, Any]:
        found = dataclasses.asdict(self)
        if self.not_checked is None:
            del found["not_checked"]
        return found


Probe = ProbeResult


def _result(ok: bool, summary: list[str], stats: dict[str, Any]) -> ProbeResult:
    examples = stats.get("examples") or []
    first = None if ok else (examples[0] if examples else "a count fell short (see above)")
    return ProbeResult(ok, summary, first, stats)


def responses_streams(outputs: list[Any]) -> Probe:
    """Upstream's processor and post-processor at stream_interval 1 and 20, inline and
    pickled: strict checker, OpenAI SDK, same client events as at interval 1."""
    from .realstub.drive import run_all

    s = run_all(outputs)
    n = s["streams"]
    ok = bool(n) and s["strict"] == s["sdk"] == n and s["identical"] == s["compared"]
    ok = ok and s["raised"] == 0
    return _result(
        ok,
        [
            f"streams: {n} (stream_interval 1 and 20, inline and pickled to a worker)",
            f"strict checker passes: {s['strict']}/{n}",
            f"OpenAI SDK accepts:    {s['sdk']}/{n}",
            f"same client events as stream_interval 1: {s['identical']}/{s['compared']}",
            f"ended by an exception: {s['raised']}",
        ],
        s,
    )


def chat_streams(outputs: list[Any]) -> Probe:
    """Harmony chat post-processors at 1 and 20 tokens, inline and pickled."""
    from .realstub.drive_chat import run_chat

    c = run_chat(outputs[: max(len(outputs) // 3, 1)])
    n = c["streams"]
    counts = [c[k] for k in ("strict", "sdk", "identical", "nonstreaming")]
    ok = bool(n) and all(k == n for k in counts) and c.get("raised", 0) == 0
    return _result(
        ok,
        [
            f"chat streams: {n} (1 and 20 tokens, inline and pickled)",
            f"strict checker {c['strict']}/{n}, OpenAI SDK {c['sdk']}/{n}, same as at 1 token "
            f"{c['identical']}/{n}, equal to non-streaming {c['nonstreaming']}/{n}",
        ],
        c,
    )


def pre_class_streams(outputs: list[Any]) -> Probe:
    """The pre-class line's functions through openai_server's bindings: streams at intervals
    1 and 20, storage off and on (strict checker, OpenAI SDK, same client events as at 1,
    stored as seen) and the non-streaming body against the stream's final response."""
    from .realstub.drive_preclass import run_all

    s = run_all(outputs)
    n, bodies = s["streams"], s["bodies"]
    ok = bool(n) and s["strict"] == s["sdk"] == n and s["identical"] == s["compared"]
    ok = ok and s["raised"] == s["body_raised"] == 0 and s["body_same"] == bodies
    ok = ok and s["stored_same"] == s["store_streams"]
    return _result(
        ok,
        [
            f"streams: {n} (stream_interval 1 and 20, storage off and on)",
            f"strict checker passes: {s['strict']}/{n}",
            f"OpenAI SDK accepts:    {s['sdk']}/{n}",
            f"same client events as stream_interval 1: {s['identical']}/{s['compared']}",
            f"stored as the client saw it: {s['stored_same']}/{s['store_streams']}",
            f"non-streaming body = the stream's final response: {s['body_same']}/{bodies}",
            f"ended by an exception: {s['raised']}",
        ],
        s,
    )


def response_bodies(outputs: list[Any]) -> Probe:
    """Non-streaming bodies, inline and from a worker, against OpenAI's recorded schema."""
    from .realstub.drive import body_schema
    from .realstub.drive_preclass import body_schema as pre_class_schema
    from .targets import PRE_CLASS_LINE, detect_line

    schema = pre_class_schema if detect_line() == PRE_CLASS_LINE else body_schema
    b = schema(outputs)
    ok = bool(b["bodies"]) and b["complete"] == b["bodies"] and b["raised"] == 0
    return _result(ok, [f"non-streaming bodies complete: {b['complete']}/{b['bodies']}"], b)


def usage_parity(outputs: list[Any]) -> Probe:
    """The non-streaming body's usage against the stream's terminal event's."""
    from .realstub.drive import usage_parity as parity

    u = parity(outputs)
    n = u["outputs"]
    ok = bool(n) and u["inline"] == u["worker"] == n
    return _result(
        ok,
        [f"body usage == stream usage: {u['inline']}/{n} inline, {u['worker']}/{n} worker"],
        u,
    )


def not_checked(reason: str) -> Probe:
    """A probe that could not run here, and why (not a failure of the group)."""
    return ProbeResult(ok=True, not_checked=reason)


def missing_server_file() -> str | None:
    """Why ``openai_server`` cannot be probed here (None: it can): a partial checkout or
    install without ``tensorrt_llm/serve/openai_server.py``, where the store is bound."""
    import importlib.util
    from pathlib import Path

    try:
        spec = importlib.util.find_spec(OPENAI_SERVER)
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.has_location and spec.origin:
        return None  # a real file (a stand-in for a missing one has no location)
    utils = importlib.import_module(RESPONSES_UTILS)
    where = Path(utils.__file__ or "tensorrt_llm/serve/responses_utils.py").with_name(
        "openai_server.py"
    )
    return (
        f"{where} is missing (a partial checkout?): openai_server creates the store, so it "
        "cannot be checked here"
    )


def conversation_store(outputs: list[Any]) -> Probe:
    """Upstream's ``ConversationHistoryStore`` binding: a response and its conversation
    stored, loaded, continued and deleted through the plugin's store (not checked where the
    tree has no ``openai_server.py``)."""
    import asyncio

    from .conversation_store import check_round_trip

    missing = missing_server_file()
    if missing:
        return not_checked(missing)

    stats = asyncio.run(check_round_trip())
    ok = not stats["examples"]
    return _result(
        ok,
        [f"store: {stats['store']}", f"round trips: {stats['passed']}/{stats['checks']}"],
        stats,
    )


def websocket_turns(outputs: list[Any]) -> Probe:
    """``GET /v1/responses`` upgraded by the group's route: upstream's processor's streams
    over a WebSocket session equal the SSE streams, pass the strict checker and are the same
    at stream_interval 1 and 20; an error answer is an ``error`` event; a closed socket is
    seen by ``raw_request.is_disconnected()`` (``websocket_probe``)."""
    from .websocket_probe import check_websocket

    w = check_websocket(outputs[: max(len(outputs) // 5, 1)])
    n = w["streams"]
    ok = bool(n) and w["bound"] and w["same"] == w["strict"] == n
    ok = ok and w["identical"] == w["compared"] and w["error_event"] and w["disconnect"]
    return _result(
        ok,
        [
            f"WebSocket turns (stream_interval 1 and 20): {w['same']}/{n} equal to the SSE "
            f"stream, strict checker {w['strict']}/{n}, same as at 1: "
            f"{w['identical']}/{w['compared']}",
            f"error answer as an error event, socket kept: {'yes' if w['error_event'] else 'no'}"
            f"; closed socket seen by raw_request: {'yes' if w['disconnect'] else 'no'}",
        ],
        w,
    )
