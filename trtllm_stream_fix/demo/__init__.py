# SPDX-License-Identifier: Apache-2.0
"""``trtllm-stream-fix demo``: upstream-equivalent streaming vs ours, side by side.

Starts two local servers in-process (simulated gpt-oss engine; one streams through the
upstream-equivalent generator, one through ours), streams the same requests at several
``stream_interval`` values, checks every stream with the strict checker and with the real
OpenAI SDK over HTTP, and prints what each client received; then the same requests over
``/v1/chat/completions`` (:mod:`.demo_chat`). Exits 1 if any of our streams fails. No GPU,
no network.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from ..differential.visible import client_visible
from ..sim.engine import EngineConfig
from ..sim.sdk_client import SDKResult, make_client, sdk_stream
from ..sim.server import create_app
from ..sim.threaded import serve_in_thread

GENERATORS = ("upstream", "ours")
MODEL = "gpt-oss-20b"
_TEXT_DELTAS = (
    "response.output_text.delta",
    "response.reasoning_text.delta",
    "response.function_call_arguments.delta",
)


@dataclass(frozen=True)
class DemoRequest:
    """One request of the demo set (a named synthetic generation)."""

    label: str
    scenario: str
    max_output_tokens: int | None = None

    def body(self, interval: int) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": MODEL,
            "input": f"demo: {self.label}",
            "scenario": self.scenario,
            "stream_interval": interval,
        }
        if self.max_output_tokens is not None:
            body["max_output_tokens"] = self.max_output_tokens
        return body


DEMO_REQUESTS: tuple[DemoRequest, ...] = (
    DemoRequest("reasoning + answer", "reasoning_answer"),
    DemoRequest("preamble + tool call", "preamble_tool_call"),
    DemoRequest("preamble + answer", "preamble_answer"),
    DemoRequest("analysis tool call", "analysis_tool_call"),
    DemoRequest("length cut", "length_cut"),
    DemoRequest("max_output_tokens=30", "reasoning_answer", max_output_tokens=30),
    DemoRequest("emoji + CJK", "multibyte_emoji"),
    DemoRequest("short answer", "short_answer"),
)


R = TypeVar("R", bound="Judged")


class Judged:
    """What the demo judges of one stream (the Responses and the chat results alike)."""

    generator: str
    interval: int
    request: str
    strict_ok: bool
    delivered_chars: int
    expected_chars: int
    visible: Any
    identical_to_1: bool
    if TYPE_CHECKING:  # a field or a property of the subclass

        @property
        def sdk_ok(self) -> bool: ...

    @property
    def ok(self) -> bool:
        return (
            self.strict_ok
            and self.sdk_ok
            and self.identical_to_1
            and self.delivered_chars == self.expected_chars
        )


def judge_everywhere(
    intervals: Sequence[int],
    max_draft_tokens: int,
    judge: Callable[[str, str, int], list[R]],
) -> list[R]:
    """``judge(base_url, generator, interval)`` on a local server of each generator at every
    interval (ours first: its non-streaming answers are the expected text); then each result
    compared with the first interval's, sorted upstream first."""
    results: list[R] = []
    for generator in ("ours", "upstream"):
        app = create_app(EngineConfig(max_draft_tokens=max_draft_tokens), generator)
        with serve_in_thread(app) as base_url:
            for interval in intervals:
                results += judge(base_url, generator, interval)
    first = {(r.generator, r.request): r.visible for r in results if r.interval == intervals[0]}
    for r in results:
        r.identical_to_1 = r.visible == first[(r.generator, r.request)]
    results.sort(key=lambda r: (GENERATORS.index(r.generator), r.interval))
    return results


@dataclass
class StreamResult(Judged):
    """One request streamed through one generator at one interval."""

    request: str
    generator: str
    interval: int
    outcome: str
    strict_ok: bool
    violations: list[str]
    sdk: SDKResult
    delivered_chars: int
    expected_chars: int
    visible: list[dict[str, Any]] = field(repr=False, default_factory=list)
    identical_to_1: bool = True

    @property
    def sdk_ok(self) -> bool:
        return self.sdk.ok

    def reasons(self, first_interval: int) -> list[str]:
        """Why this stream failed, in words (empty when it did not)."""
        from ..checker.responses import RULES

        out = []
        if not self.strict_ok:
            first = self.violations[0] if self.violations else f"outcome {self.outcome}"
            rule = re.search(r"\[([a-z-]+)\]", first)
            meaning = RULES.get(rule.group(1), "") if rule else ""
            meaning = re.sub(r"^§[\d.]+ ", "", meaning)
            more = f" (+{len(self.violations) - 1} more)" if len(self.violations) > 1 else ""
            out.append(f"strict checker: {meaning + ' — ' if meaning else ''}{first}{more}")
        if not self.sdk.ok:
            out.append(f"OpenAI SDK: {self.sdk.error}")
        if self.delivered_chars != self.expected_chars:
            out.append(
                f"{self.delivered_chars} of {self.expected_chars} text characters reached "
                "the client"
            )
        if not self.identical_to_1:
            out.append(f"the client saw other events than at interval {first_interval}")
        return out


def _expected_chars(response: dict[str, Any]) -> int:
    total = 0
    for item in response.get("output", []):
        if item.get("type") == "function_call":
            total += len(item.get("arguments", ""))
        else:
            total += sum(len(part.get("text", "")) for part in item.get("content") or [])
    return total


async def _strict_streams(
    base_url: str, bodies: list[dict[str, Any]]
) -> tuple[list[Any], list[dict[str, Any]]]:
    """Strict-checker records of ``bodies`` (concurrently) and their non-streaming answers."""
    import httpx

    from ..checker.client import stream_responses

    url = f"{base_url}/v1/responses"
    async with httpx.AsyncClient(timeout=30.0) as client:
        records = await asyncio.gather(
            *(
                stream_responses(
                    client, url, body, idle_timeout=20.0, deadline=60.0, allow_incomplete=True
                )
                for body in bodies
            )
        )
        answers = await asyncio.gather(
            *(client.post(url, json={**body, "stream": False}) for body in bodies)
        )
    return list(records), [a.json() for a in answers]


def _delivered_chars(events: list[dict[str, Any]]) -> int:
    return sum(len(e.get("delta") or "") for e in events if e.get("type") in _TEXT_DELTAS)


def _comparable(value: Any, response_id: str | None) -> Any:
    """``value`` without what differs between two requests (response id, timestamps)."""
    if isinstance(value, dict):
        return {
            k: _comparable(v, response_id)
            for k, v in value.items()
            if k not in ("created_at", "completed_at")
        }
    if isinstance(value, list):
        return [_comparable(v, response_id) for v in value]
    return "<response id>" if value == response_id and value is not None else value


def _payloads(record: Any) -> list[dict[str, Any]]:
    out = []
    for raw in record.events:
        try:
            payload = json.loads(raw["data"])
        except ValueError:
            continue
        if isinstance(payload, dict):
            out.append(payload)
    return out


def run_demo(
    intervals: Sequence[int] = (1, 20),
    requests: Sequence[DemoRequest] = DEMO_REQUESTS,
    *,
    max_draft_tokens: int = 0,
    progress: Callable[[int, int, str], None] | None = None,
) -> list[StreamResult]:
    """Stream every request through both generators at every interval.

    ``progress(done, total, label)`` is called as each stream is judged.
    """
    total = 2 * len(intervals) * len(requests)
    done = 0
    expected: dict[tuple[str, int], int] = {}

    def judge(base_url: str, generator: str, interval: int) -> list[StreamResult]:
        nonlocal done
        bodies = [r.body(interval) for r in requests]
        records, answers = asyncio.run(_strict_streams(base_url, bodies))
        client = make_client(base_url)
        out = []
        try:
            for req, body, record, answer in zip(requests, bodies, records, answers):
                done += 1
                if progress is not None:
                    progress(done, total, f"{generator} @ stream_interval {interval}: {req.label}")
                if generator == "ours":
                    expected[(req.label, interval)] = _expected_chars(answer)
                events = _payloads(record)
                out.append(
                    StreamResult(
                        request=req.label,
                        generator=generator,
                        interval=interval,
                        outcome=record.outcome,
                        strict_ok=record.ok,
                        violations=list(record.violations),
                        sdk=sdk_stream(client, body),
                        delivered_chars=_delivered_chars(events),
                        expected_chars=expected[(req.label, interval)],
                        visible=_comparable(client_visible(events), record.request_id),
                    )
                )
        finally:
            client.close()
        return out

    return judge_everywhere(intervals, max_draft_tokens, judge)


def summarize(results: Sequence[Judged]) -> list[dict[str, Any]]:
    """One row per generator x interval (Responses and chat results alike)."""
    rows: list[dict[str, Any]] = []
    keys = sorted(
        {(r.generator, r.interval) for r in results}, key=lambda k: (GENERATORS.index(k[0]), k[1])
    )
    for generator, interval in keys:
        group = [r for r in results if (r.generator, r.interval) == (generator, interval)]
        rows.append(
            {
                "generator": generator,
                "stream_interval": interval,
                "streams": len(group),
                "strict_ok": sum(r.strict_ok for r in group),
                "sdk_ok": sum(r.sdk_ok for r in group),
                "identical_to_interval_1": sum(r.identical_to_1 for r in group),
                "chars_delivered": sum(r.delivered_chars for r in group),
                "chars_expected": sum(r.expected_chars for r in group),
                "all_ok": all(r.ok for r in group),
            }
        )
    return rows


def _mark(ok: bool) -> str:
    return "[green]✓[/]" if ok else "[red]✗[/]"


def _count(value: int, total: int) -> str:
    colour = "green" if value == total else "red"
    return f"[{colour}]{value}/{total}[/]"


def summary_table(title: str, results: Sequence[Judged], first_interval: int) -> Any:
    """The rich summary table of ``results``: one row per generator x interval."""
    from rich.table import Table

    summary = Table(title=title)
    for name in (
        "generator",
        "interval",
        "streams",
        "strict ok",
        "SDK ok",
        f"same as @{first_interval}",
        "text chars",
    ):
        summary.add_column(name, justify="right" if name != "generator" else "left")
    for row in summarize(results):
        n = row["streams"]
        summary.add_row(
            row["generator"],
            str(row["stream_interval"]),
            str(n),
            _count(row["strict_ok"], n),
            _count(row["sdk_ok"], n),
            _count(row["identical_to_interval_1"], n),
            _count(row["chars_delivered"], row["chars_expected"]),
        )
    return summary


def print_report(results: Sequence[StreamResult], elapsed: float) -> None:
    """Rich tables: per-request detail, then the summary."""
    from rich.markup import escape
    from rich.table import Table

    from ..pipe import console as pipe_console

    console = pipe_console()
    columns = sorted(
        {(r.generator, r.interval) for r in results}, key=lambda k: (GENERATORS.index(k[0]), k[1])
    )
    detail = Table(title="Each request: strict checker / OpenAI SDK / characters delivered")
    detail.add_column("request")
    for generator, interval in columns:
        detail.add_column(f"{generator}\ninterval {interval}", justify="center")
    by_key = {(r.request, r.generator, r.interval): r for r in results}
    for label in dict.fromkeys(r.request for r in results):
        cells = []
        for generator, interval in columns:
            r = by_key[(label, generator, interval)]
            cells.append(
                f"{_mark(r.strict_ok)} {_mark(r.sdk.ok)} "
                f"{_count(r.delivered_chars, r.expected_chars)}"
            )
        detail.add_row(label, *cells)
    console.print(detail)

    console.print(summary_table("Summary (same tokens for every interval)", results, columns[0][1]))
    failures = [r for r in results if not r.ok]
    if failures:
        console.print("[bold]Why each failing stream failed[/]")
    for r in failures:
        console.print(f"[bold]{r.generator}, {escape(r.request)} @ {r.interval}[/]")
        for reason in r.reasons(columns[0][1]):
            console.print(f"  - {escape(reason)}", highlight=False)
    ours_ok = all(r.ok for r in results if r.generator == "ours")
    verdict = (
        "[bold green]ours: every stream valid and identical at every interval[/]"
        if ours_ok
        else "[bold red]ours: FAILED[/]"
    )
    console.print(f"{verdict}  ({len(results)} streams in {elapsed:.1f} s)")


@contextlib.contextmanager
def _progress_reporter() -> Iterator[Callable[[int, int, str], None]]:
    """A progress bar on a terminal, one line per stream on stderr otherwise."""
    if not sys.stderr.isatty():
        yield lambda done, total, label: print(
            f"[{done}/{total}] {label}", file=sys.stderr, flush=True
        )
        return
    from rich.progress import Progress

    from ..pipe import console as pipe_console

    with Progress(console=pipe_console(stderr=True), transient=True) as bar:
        task = bar.add_task("streaming", total=None)
        yield lambda done, total, label: bar.update(
            task, completed=done, total=total, description=label
        )


def demo_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``trtllm-stream-fix demo``."""
    from ..helptext import plain

    parser = argparse.ArgumentParser(prog="trtllm-stream-fix demo", description=plain(__doc__))
    parser.add_argument(
        "--intervals", default="1,20", help="comma-separated stream_interval values (default 1,20)"
    )
    parser.add_argument(
        "--draft-tokens",
        type=int,
        default=0,
        help="add 0..N accepted draft tokens to each engine response",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON summary only")
    args = parser.parse_args(argv)
    try:
        intervals = [int(v) for v in args.intervals.split(",") if v.strip()]
    except ValueError:
        parser.error("--intervals takes integers, e.g. 1,20")
    if not intervals or min(intervals) < 1:
        parser.error("--intervals takes integers >= 1")
    if args.draft_tokens < 0:
        parser.error("--draft-tokens must be >= 0")

    from .chat import print_chat_report, run_chat_demo, summarize_chat

    started = time.perf_counter()
    with _progress_reporter() as progress:
        results = run_demo(intervals, max_draft_tokens=args.draft_tokens, progress=progress)
    chat = run_chat_demo(intervals, DEMO_REQUESTS, max_draft_tokens=args.draft_tokens)
    elapsed = time.perf_counter() - started
    ours_ok = all(r.ok for r in results if r.generator == "ours")
    ours_ok = ours_ok and all(r.ok for r in chat if r.generator == "ours")
    if args.json:
        print(
            json.dumps(
                {
                    "ok": ours_ok,
                    "seconds": round(elapsed, 2),
                    "summary": summarize(results),
                    "chat": summarize_chat(chat),
                }
            )
        )
    else:
        print_report(results, elapsed)
        print_chat_report(chat)
    return 0 if ours_ok else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(demo_main())
