# SPDX-License-Identifier: Apache-2.0
"""serve_load's conversation mode: N concurrent multi-turn tool conversations over stored
responses, every turn streamed and checked by the strict checker.

Each conversation asks for the weather with a ``get_weather`` tool (the model calls it),
then alternates: the call's ``function_call_output``, then a new question, each turn
continuing the previous one by ``previous_response_id``. A turn whose previous response the
server no longer has (400 ``previous_response_not_found``) is a lost turn. Reported: turns
per second, turn latency p50/p99 (request sent → terminal event), valid and lost turns, and,
when the server measures them (the embedded server's ``--store-timings``), the store's time
per turn: every store call a turn awaits (its reads, its put), summed, p50/p99/max.

:class:`TimedStore` is that measurement: a store wrapper the embedded server puts around its
store, which attributes each call to the asyncio task serving the request. Beside it,
:func:`probe_loop` samples the server's event-loop cycle (how long an ``await`` of a ready
result waits before its task runs again): a store call that awaits a socket waits at least
one cycle, so on a busy server the store's wall time is mostly this wait, not the store.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from _runner import percentile

from trtllm_stream_fix.store import ResponseStore

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather for a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
CITIES = ("Paris", "Kyoto", "Lima", "Oslo", "Accra", "Hanoi", "Quito", "Perth")


class TimedStore(ResponseStore):
    """``inner``, timing every call (``calls``: name and wall ms, in order) and summing the
    calls each request's task awaits into one figure per turn, which its put ends
    (``turn_ms``). Wall time by ``perf_counter`` only: a system call in the timed window (a
    CPU clock) is where a loaded host deschedules the process, which then looks slow."""

    def __init__(self, inner: ResponseStore) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls: list[tuple[str, float]] = []
        self.turn_ms: list[float] = []
        #: ``perf_counter`` time each put ended, and the event-loop cycle samples
        #: (:func:`probe_loop`) as (time, ms).
        self.put_ends: list[float] = []
        self.loop_cycles: list[tuple[float, float]] = []
        self._pending: dict[int, float] = {}

    async def _timed(self, name: str, call: Any) -> Any:
        task = id(asyncio.current_task())
        start = time.perf_counter()
        try:
            return await call
        finally:
            spent = (time.perf_counter() - start) * 1e3
            self.calls.append((name, spent))
            self._pending[task] = self._pending.get(task, 0.0) + spent
            if name == "put":
                self.turn_ms.append(self._pending.pop(task))
                self.put_ends.append(time.perf_counter())

    async def put(self, response: Mapping[str, Any], messages: Sequence[Any]) -> None:
        await self._timed("put", self.inner.put(response, messages))

    async def get(self, response_id: str) -> Any:
        return await self._timed("get", self.inner.get(response_id))

    async def history(self, response_id: str) -> Any:
        return await self._timed("history", self.inner.history(response_id))

    async def items(self, item_ids: Sequence[str]) -> Any:
        return await self._timed("items", self.inner.items(item_ids))

    async def delete(self, response_id: str) -> bool:
        return await self._timed("delete", self.inner.delete(response_id))

    async def ping(self) -> None:
        await self._timed("ping", self.inner.ping())

    async def close(self) -> None:
        await self.inner.close()

    def report(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "turn_ms": self.turn_ms,
            "put_ends": self.put_ends,
            "loop_cycles": self.loop_cycles,
        }


async def probe_loop(samples: list[tuple[float, float]], every_s: float = 0.01) -> None:
    """Every ``every_s``, how long ``await asyncio.sleep(0)`` takes: one pass of the event
    loop over the callbacks ready before this task's turn comes again."""
    while True:
        await asyncio.sleep(every_s)
        start = time.perf_counter()
        await asyncio.sleep(0)
        end = time.perf_counter()
        samples.append((end, (end - start) * 1e3))


def after_warm_up(timings: Mapping[str, Any], warm_up_turns: int) -> dict[str, Any]:
    """``timings`` without the first ``warm_up_turns`` turns (all of them ended before the
    measured run began): their turn figures, and the calls up to their last put."""
    calls = timings["calls"]
    puts = [n for n, call in enumerate(calls) if call[0] == "put"]
    first = puts[warm_up_turns - 1] + 1 if warm_up_turns and len(puts) >= warm_up_turns else 0
    ends = timings.get("put_ends") or []
    since = ends[warm_up_turns - 1] if warm_up_turns and len(ends) >= warm_up_turns else 0.0
    return {
        "calls": calls[first:],
        "turn_ms": timings["turn_ms"][warm_up_turns:],
        "loop_cycles": [(t, ms) for t, ms in timings.get("loop_cycles") or () if t > since],
    }


@dataclass
class ConversationResult:
    conversations: int
    turns_per_conversation: int
    turns: int
    valid: int
    lost: int
    first_problem: str | None
    wall_s: float
    turns_per_s: float
    turn_p50_ms: float
    turn_p99_ms: float
    store: str
    store_turn_p50_ms: float | None = None
    store_turn_p99_ms: float | None = None
    store_turn_max_ms: float | None = None
    load_average: tuple[float, float, float] | None = None
    store_calls: dict[str, dict[str, float]] = field(default_factory=dict)
    loop_cycle_p50_ms: float | None = None
    loop_cycle_p99_ms: float | None = None


def turn_body(model: str, conversation: int, turn: int, previous: Any) -> dict[str, Any]:
    """Turn ``turn`` of a conversation: a question (turn 0, and after an answer), or the
    outputs of the calls the previous turn made; ``previous`` is its checker record."""
    body: dict[str, Any] = {"model": model, "stream": True, "tools": [WEATHER]}
    calls = [i for i in previous.items if i.get("type") == "function_call"] if previous else []
    if calls:
        body["input"] = [
            {"type": "function_call_output", "call_id": c["call_id"], "output": '{"sky":"clear"}'}
            for c in calls
        ]
    else:
        city = CITIES[(conversation + turn) % len(CITIES)]
        body["input"] = f"What is the weather in {city} (turn {turn})? Use get_weather."
    if previous is not None:
        body["previous_response_id"] = previous.request_id
    return body


def _lost(record: Any) -> bool:
    return record.http_status == 400 and "previous_response_not_found" in (record.http_body or "")


async def run_conversations(
    url: str,
    model: str,
    conversations: int,
    turns: int,
    *,
    one_stream: Callable[..., Awaitable[Any]],
    limits: Any,
    timeout: float,
) -> tuple[list[list[Any]], float]:
    """Every conversation at once, each turn after the previous one ends (a lost or broken
    turn ends its conversation): ``one_stream(client, url, body, timeout)`` streams and
    checks a turn. Returns the turns' results per conversation and the wall time."""
    import httpx

    endpoint = f"{url.rstrip('/')}/v1/responses"
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(timeout)) as client:

        async def conversation(n: int) -> list[Any]:
            results: list[Any] = []
            previous = None
            for turn in range(turns):
                body = turn_body(model, n, turn, previous)
                result = await one_stream(client, endpoint, body, timeout)
                results.append(result)
                if not result.record.ok:
                    break
                previous = result.record
            return results

        start = time.perf_counter()
        done = await asyncio.gather(*(conversation(n) for n in range(conversations)))
        return done, time.perf_counter() - start


def summarize(
    per_conversation: Sequence[Sequence[Any]], wall: float, turns: int, store: str
) -> ConversationResult:
    """The client's view of a run: valid and lost turns, turns/s, turn latency."""
    records = [r.record for results in per_conversation for r in results]
    bad = [r for r in records if not r.ok]
    first_problem = None
    if bad:
        r = bad[0]
        problem = (r.violations or [r.detail])[0]
        body = f" {r.http_body}" if r.http_body else ""
        first_problem = f"{r.outcome}: {problem}{body}"[:300]
    latencies = [r.total_latency * 1e3 for r in records if r.ok and r.total_latency is not None]
    valid = len(records) - len(bad)
    return ConversationResult(
        conversations=len(per_conversation),
        turns_per_conversation=turns,
        turns=len(per_conversation) * turns,
        valid=valid,
        lost=sum(_lost(r) for r in records),
        first_problem=first_problem,
        wall_s=round(wall, 4),
        turns_per_s=round(valid / wall, 1) if wall else 0.0,
        turn_p50_ms=round(percentile(latencies, 50), 2),
        turn_p99_ms=round(percentile(latencies, 99), 2),
        store=store,
    )


def with_timings(row: ConversationResult, timings: Mapping[str, Any]) -> ConversationResult:
    """``row`` with the server's store time per turn and per call (:class:`TimedStore`), and
    its event-loop cycle (:func:`probe_loop`)."""
    per_turn = timings["turn_ms"]
    row.store_turn_p50_ms = round(percentile(per_turn, 50), 3)
    row.store_turn_p99_ms = round(percentile(per_turn, 99), 3)
    row.store_turn_max_ms = round(max(per_turn), 3) if per_turn else None
    by_name: dict[str, list[float]] = {}
    for name, ms in timings["calls"]:
        by_name.setdefault(name, []).append(ms)
    row.store_calls = {
        name: {
            "calls": len(ms),
            "p50_ms": round(percentile(ms, 50), 3),
            "p99_ms": round(percentile(ms, 99), 3),
        }
        for name, ms in sorted(by_name.items())
    }
    cycles = [ms for _, ms in timings.get("loop_cycles") or ()]
    if cycles:
        row.loop_cycle_p50_ms = round(percentile(cycles, 50), 3)
        row.loop_cycle_p99_ms = round(percentile(cycles, 99), 3)
    return row


def markdown(rows: Sequence[ConversationResult]) -> str:
    def fmt(value: float | None, digits: int = 2) -> str:
        return "–" if value is None else f"{value:.{digits}f}"

    lines = [
        "| store | conversations × turns | valid turns | lost | turns/s | turn p50 ms "
        "| turn p99 ms | store ms / turn p50 | p99 | max | loop cycle ms p50 / p99 | load avg |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.store} | {r.conversations} × {r.turns_per_conversation} "
            f"| {r.valid}/{r.turns} | {r.lost} | {r.turns_per_s:.1f} | {fmt(r.turn_p50_ms, 1)} "
            f"| {fmt(r.turn_p99_ms, 1)} | {fmt(r.store_turn_p50_ms, 3)} "
            f"| {fmt(r.store_turn_p99_ms, 3)} | {fmt(r.store_turn_max_ms, 3)} "
            f"| {fmt(r.loop_cycle_p50_ms, 3)} / {fmt(r.loop_cycle_p99_ms, 3)} "
            f"| {' / '.join(f'{x:.1f}' for x in r.load_average) if r.load_average else '–'} |"
        )
    return "\n".join(lines) + "\n"


def read_timings(path: Any) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None
