# SPDX-License-Identifier: Apache-2.0
"""Batch-size-independence differential check, for ours and the upstream-equivalent baseline.

Each synthetic output (ordinary and hostile, ``hostile.mixed_outputs``) is streamed with
several splits of its tokens into engine responses, one of them as numpy arrays. Every
stream is judged on five counts: its client-visible events equal those at 1 token per
response (``identical``), the OpenAI SDK accumulator accepts it (``sdk_accepted``), the strict
checker passes it (``strict_passed``), its terminal response agrees with the streamed items
(``final_matches_stream``), and its terminal response equals the non-streaming response for
the same tokens, ids and timestamps aside (``nonstreaming_matches``).
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..core.config import DEFAULT_CONFIG, StreamConfig
from ..core.context import ResponseContext
from ..core.sse import event_to_dict
from ..defaults import new_context
from ..encoding import load_gpt_oss_encoding
from ..sim.model import SyntheticOutput, engine_responses
from .hostile import mixed_outputs
from .parser import copy_split, driver_difference, stream_difference
from .report import shorten
from .sdk_oracle import sdk_accumulate
from .splits import (  # noqa: F401 - re-exported
    COUNTS,
    FIXED_SPLITS,
    NUMPY_SPLIT,
    Tally,
    splits_for,
)
from .visible import client_visible, comparable_response

IMPLS = ("ours", "upstream")


def make_stream(impl: str, context: ResponseContext, config: StreamConfig, encoding: Any):
    """A fresh per-request stream generator: ours or the upstream-equivalent baseline."""
    if impl == "ours":
        from ..core.machine import ResponsesEventMachine

        if encoding is None:
            encoding = load_gpt_oss_encoding()
        return ResponsesEventMachine(context, config=config, encoding=encoding)
    if impl == "upstream":
        from ..baseline.responses import UpstreamBaselineStream

        return UpstreamBaselineStream(context, encoding=encoding)
    raise ValueError(f"unknown implementation {impl!r}; choose from {IMPLS}")


def stream_events(
    output: SyntheticOutput,
    split: int | Sequence[int] | random.Random | str,
    *,
    impl: str = "ours",
    context: ResponseContext | None = None,
    config: StreamConfig = DEFAULT_CONFIG,
    encoding: Any = None,
) -> list[dict[str, Any]]:
    """All events (as dicts) of one stream of ``output`` split as ``split`` says.

    ``split`` ``"numpy"`` delivers 5 tokens per response as numpy int64 arrays. Raises
    whatever the generator raises (the baseline can raise; ours must not).
    """
    context = context or _context()
    stream = make_stream(impl, context, config, encoding)
    events = list(stream.start())
    to_array = None
    if isinstance(split, str):
        if split != NUMPY_SPLIT:
            raise ValueError(f"unknown split {split!r}")
        import numpy

        split, to_array = 5, functools.partial(numpy.array, dtype=numpy.int64)
    for response in engine_responses(output, split):
        tokens = response.token_ids_diff
        events.extend(
            stream.feed(
                to_array(tokens) if to_array else tokens,
                finished=response.finished,
                finish_reason=response.finish_reason,
            )
        )
    return [event_to_dict(event) for event in events]


def _context() -> ResponseContext:
    return new_context(response_id="resp_differential", created_at=0)


def nonstreaming_response(
    output: SyntheticOutput, impl: str = "ours", *, encoding: Any = None
) -> dict[str, Any] | None:
    """The non-streaming response for ``output`` (None when the implementation raises)."""
    if encoding is None:
        encoding = load_gpt_oss_encoding()
    context = _context()
    try:
        if impl == "ours":
            from ..core.nonstreaming import build_response

            response = build_response(
                context, output.delivered, output.finish_reason, encoding=encoding
            )
        else:
            from ..baseline.responses import upstream_nonstreaming

            response = upstream_nonstreaming(
                context, output.delivered, output.finish_reason, encoding=encoding
            )
    except Exception:
        return None
    return event_to_dict(response)


def nonstreaming_matches(events: list[dict[str, Any]], expected: dict[str, Any] | None) -> bool:
    """The stream's terminal response equals ``expected``, ids and timestamps aside."""
    if expected is None or not events or "response" not in events[-1]:
        return False
    return comparable_response(events[-1]["response"]) == comparable_response(expected)


def final_matches_stream(events: list[dict[str, Any]]) -> bool:
    """The terminal response's output equals the ``output_item.done`` items, in order."""
    if not events or "response" not in events[-1]:
        return False
    done = {
        e["output_index"]: e["item"] for e in events if e.get("type") == "response.output_item.done"
    }
    streamed = [done[i] for i in sorted(done)]
    if sorted(done) != list(range(len(done))):
        return False
    return events[-1]["response"].get("output") == streamed


def sdk_accepts(events: list[dict[str, Any]]) -> bool:
    """The SDK accepts the stream and, when completed, accumulates our final output."""
    try:
        accumulated = sdk_accumulate(events)
    except Exception:
        return False
    if events and events[-1].get("type") == "response.completed":
        if accumulated is None:
            return False
        ours = events[-1]["response"].get("output")
        theirs = [event_to_dict(item) for item in accumulated.output]
        return _strip_parsed(theirs) == ours
    return True


def _strip_parsed(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # The SDK adds ``parsed_arguments``/``parsed`` fields of its own.
    out = []
    for item in items:
        item = {k: v for k, v in item.items() if k not in ("parsed_arguments", "parsed")}
        if "content" in item and isinstance(item["content"], list):
            item["content"] = [
                {k: v for k, v in part.items() if k != "parsed"} for part in item["content"]
            ]
        out.append(item)
    return out


def strict_violations(events: list[dict[str, Any]]) -> list[str]:
    """The strict checker's violations (a stream without a terminal event has one)."""
    from ..checker.responses import check_responses_events

    check = check_responses_events(events)
    if check.ok:
        return []
    return check.violations or ["no terminal event"]


def strict_passes(events: list[dict[str, Any]]) -> bool:
    return not strict_violations(events)


def judge_output(
    output: SyntheticOutput,
    impl: str,
    tally: Tally,
    *,
    encoding: Any = None,
    compare_parsers: bool = False,
) -> int:
    """Stream ``output`` with every split and add the verdicts to ``tally``; returns streams.

    ``compare_parsers`` (ours only) also counts the streams on which the fast and the
    reference Harmony parsers agree (``fast_matches_reference``).
    """
    reference: list[dict[str, Any]] | None = None
    splits = splits_for(output)
    expected = nonstreaming_response(output, impl, encoding=encoding)
    for split in splits:
        label = split if isinstance(split, (int, str)) else "random"
        if compare_parsers and impl == "ours":
            _compare_parsers(output, copy_split(split), label, tally, encoding)
        try:
            events = stream_events(output, split, impl=impl, encoding=encoding)
        except Exception as exc:
            tally.raised += 1
            _example(tally, f"seed {output.seed} ({output.name}) split {label}: raised {exc!r}")
            continue
        visible = client_visible(events)
        if split == 1:
            reference = visible
        if reference is not None and visible == reference:
            tally.identical += 1
        elif reference is not None:
            _example(tally, f"seed {output.seed} ({output.name}) split {label}: differs from 1")
        if sdk_accepts(events):
            tally.sdk_accepted += 1
        else:
            _example(tally, f"seed {output.seed} ({output.name}) split {label}: SDK rejects")
        violations = strict_violations(events)
        if not violations:
            tally.strict_passed += 1
        else:
            _example(tally, f"seed {output.seed} ({output.name}) split {label}: {violations[0]}")
        if final_matches_stream(events):
            tally.final_matches_stream += 1
        if nonstreaming_matches(events, expected):
            tally.nonstreaming_matches += 1
        else:
            _example(tally, f"seed {output.seed} ({output.name}) split {label}: != non-streaming")
    return len(splits)


def _compare_parsers(output: SyntheticOutput, split: Any, label: Any, tally: Tally, encoding: Any):
    """Count the stream in ``fast_matches_reference`` when both parsers agree on it."""
    if encoding is None:
        encoding = load_gpt_oss_encoding()
    found = driver_difference(output, split, encoding) or stream_difference(
        output, copy_split(split), encoding
    )
    tally.fast_matches_reference = (tally.fast_matches_reference or 0) + (found is None)
    if found:
        _example(tally, f"seed {output.seed} ({output.name}) split {label}: parsers: {found}")


def _example(tally: Tally, text: str) -> None:
    """Keep the first five examples, shortened at a word boundary."""
    if len(tally.examples) < 5:
        tally.examples.append(shorten(text))


def run_check(
    outputs: Iterable[SyntheticOutput],
    impls: Sequence[str] = IMPLS,
    progress: Callable[[], None] | None = None,
) -> tuple[int, int, dict[str, Tally]]:
    """``(outputs, streams, tallies)`` over ``outputs`` for each implementation."""
    tallies = {impl: Tally() for impl in impls}
    count = streams = 0
    for output in outputs:
        count += 1
        for impl in impls:
            n = judge_output(output, impl, tallies[impl], compare_parsers=True)
        streams += n
        if progress:
            progress()
    return count, streams, tallies


def register_upstream_chat() -> None:
    """Make the upstream-equivalent chat path (:mod:`trtllm_stream_fix.baseline.chat`) the
    differential's ``"upstream"`` chat implementation."""
    from ..baseline.chat import UpstreamChatBaseline, upstream_chat_completion
    from .chat import register_chat_impl

    register_chat_impl(
        "upstream",
        lambda encoding: UpstreamChatBaseline(model="gpt-oss-20b", created=0, encoding=encoding),
        lambda output, encoding: upstream_chat_completion(
            output.delivered,
            output.finish_reason,
            model="gpt-oss-20b",
            created=0,
            encoding=encoding,
        ),
    )


def check_main(argv: Sequence[str] | None = None) -> int:
    """``trtllm-stream-fix check``: the differential check at scale."""
    parser = argparse.ArgumentParser(
        prog="trtllm-stream-fix check",
        description="Stream seeded synthetic gpt-oss outputs (ordinary and hostile) at 1, 2, "
        "3, 7, 20, random and numpy-array batches of tokens per response through ours and the "
        "upstream-equivalent baseline, and compare each with the non-streaming response.",
    )
    parser.add_argument("--outputs", type=int, default=200, help="synthetic outputs (default 200)")
    parser.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    args = parser.parse_args(argv)
    if args.outputs < 1:
        parser.error("--outputs must be >= 1")

    from rich.progress import Progress

    from ..pipe import console as pipe_console

    console = pipe_console(stderr=True)
    from .chat import run_chat_check

    register_upstream_chat()

    # A live bar on a terminal; otherwise (a log, a pipe) a line at the start and at the end.
    live = console.is_terminal
    started = time.monotonic()
    if not live:
        print(
            f"check: {args.outputs} outputs, Responses then Chat Completions streams "
            "(about 1.5 s of CPU per output, on one core) ...",
            file=sys.stderr,
            flush=True,
        )
    outputs = list(mixed_outputs(args.outputs, args.seed))
    with Progress(console=console, transient=args.json, disable=not live) as bar:
        task = bar.add_task("Responses outputs", total=args.outputs)
        count, streams, tallies = run_check(outputs, progress=lambda: bar.advance(task))
        chat_task = bar.add_task("chat outputs", total=args.outputs)
        _, chat_streams, chat = run_chat_check(outputs, progress=lambda: bar.advance(chat_task))
    print(
        f"check: {count} outputs, {streams} Responses and {chat_streams} chat streams per "
        f"implementation in {time.monotonic() - started:.0f} s",
        file=sys.stderr,
        flush=True,
    )
    ours = tallies["ours"]
    perfect = all(value == streams for value in ours.as_counts().values()) and ours.raised == 0
    chat_ours = chat["ours"]
    perfect = perfect and chat_ours.raised == 0
    perfect = perfect and all(v == chat_streams for v in chat_ours.as_counts().values())
    if args.json:
        summary: dict[str, Any] = {"outputs": count, "streams": streams}
        summary.update({impl: _json_counts(tally) for impl, tally in tallies.items()})
        # Chat Completions over the same outputs and splits: ours, and the older upstream line.
        summary["chat"] = _json_counts(chat_ours)
        summary["chat_upstream"] = _json_counts(chat["upstream"])
        print(json.dumps(summary))
    else:
        _print_table(pipe_console(), count, streams, tallies)
        _print_table(
            pipe_console(),
            count,
            chat_streams,
            chat,
            title="Chat Completions: {count} outputs, {streams} streams per implementation",
        )
    return 0 if perfect else 1


def _json_counts(tally: Any) -> dict[str, int]:
    """The counts of ``tally`` plus ``raised`` (the table shows it too)."""
    return {**tally.as_counts(), "raised": tally.raised}


def _print_table(
    console: Any,
    count: int,
    streams: int,
    tallies: dict[str, Any],
    title: str = "{count} outputs, {streams} streams per implementation",
) -> None:
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=title.format(count=count, streams=streams))
    table.add_column("count")
    for impl in tallies:
        table.add_column(impl, justify="right")
    for name in (*COUNTS, "raised", "fast_matches_reference"):
        cells = [getattr(t, name, None) for t in tallies.values()]
        if any(cell is not None for cell in cells):
            table.add_row(name, *("–" if c is None else f"{c}/{streams}" for c in cells))
    console.print(table)
    for impl, tally in tallies.items():
        for example in tally.examples:
            console.print(f"[dim]{impl}: {escape(example)}[/dim]")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(check_main())


__all__ = ["Tally", "check_main", "judge_output", "run_check", "stream_events"]
