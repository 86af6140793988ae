# SPDX-License-Identifier: Apache-2.0
"""The pull request's title and body, in upstream's template.

The template (``.github/pull_request_template.md``) is read from the tree when it has one;
its ``## Description`` and ``## Test Coverage`` sections are filled in and the rest is kept.
The before/after table comes from the harness run on the tree as it is and on the patched copy;
the benchmark rows measured by ``--check`` on both (``bench.py``), else this repository's
recorded ``benchmarks/results/cpu_event_cost.json``, labelled as recorded.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .changeset import ChangeSet
from .convert import UPSTREAM_ENV_PREFIX
from .layout import L0_ENTRY, OPENAI_PROTOCOL, PACKAGE, POSTPROCESS_HANDLERS, REPO, TITLE_PATTERN

SUMMARY = "Stream Harmony Responses events token by token at any stream_interval"
TEMPLATE = ".github/pull_request_template.md"
BENCHMARKS = REPO / "benchmarks" / "results" / "cpu_event_cost.json"
_COMMENT = re.compile(r"<!--.*?-->\s*", re.S)


def title(ticket: str = "None", kind: str = "fix") -> str:
    """``[ticket][kind] summary``; raises ``ValueError`` unless upstream's title check passes."""
    text = f"[{ticket}][{kind}] {SUMMARY}"
    if not re.match(TITLE_PATTERN, text):
        raise ValueError(
            f"title {text!r} does not match upstream's format [None|PROJ-123|#123|"
            "https://nvbugs/123][type] Summary"
        )
    return text


def _row(label: str, stats: dict[str, Any]) -> str:
    s = stats
    return (
        f"| {label} | {s['identical']} / {s['compared']} | {s['strict']} / {s['streams']} | "
        f"{s['sdk']} / {s['streams']} | {s['raised']} |"
    )


def results_table(before: dict[str, Any] | None, after: dict[str, Any] | None) -> str:
    """The harness counts before and after the change, as a markdown table."""
    if before is None or after is None:
        return "(not measured: the harness could not run on this tree; see the notes)"
    return "\n".join(
        [
            "| | k=20 streams identical to k=1 | strict checker passes | OpenAI SDK accepts "
            "| stream ended by an exception |",
            "|---|---|---|---|---|",
            _row("before (this tree)", before),
            _row("after (patched)", after),
        ]
    )


def chat_table(before: dict[str, Any] | None, after: dict[str, Any] | None) -> str:
    """The chat harness counts before and after the change, as a markdown table."""
    runs = [(label, run) for label, run in (("before (this tree)", before), ("after", after))]
    if any(not run or "error" in run for _, run in runs):
        errors = [f"{label}: {run.get('error') if run else 'not run'}" for label, run in runs]
        return "(chat not measured: " + "; ".join(errors) + ")"
    measured = [(label, run) for label, run in runs if run is not None]
    lines = [
        "| | streams identical to 1 token per response | strict chat checker passes "
        "| OpenAI SDK accepts | non-streaming = stream joined | stream ended by an exception |",
        "|---|---|---|---|---|---|",
    ]
    for label, run in measured:
        n = run["streams"]
        lines.append(
            f"| {label} | {run['identical']} / {n} | {run['strict']} / {n} | {run['sdk']} / {n} "
            f"| {run['nonstreaming']} / {n} | {run.get('raised', 0)} |"
        )
    raised = [e for e in before.get("examples", []) if " raised " in e]  # type: ignore[union-attr]
    if raised:
        lines += ["", f"Before, the first exception: `{raised[0]}`."]
    return "\n".join(lines)


def benchmark_rows(path: Path = BENCHMARKS, measured: dict[str, Any] | None = None) -> str:
    """µs per output token of the real processor before and after, and the parser floor.

    ``measured`` (from ``bench.measure``, run by ``--check``) gives rows measured on this tree
    and on the patched copy; without it the rows recorded in this repository are shown, and
    labelled as such.
    """
    if measured and "error" not in measured:
        return _measured_rows(measured)
    if not path.is_file():
        return "(no benchmark results in this checkout)"
    data = json.loads(path.read_text())
    cells: dict[tuple[str, int], dict[str, float]] = {}
    for row in data["rows"]:
        cells.setdefault((row["tokens"], row["stream_interval"]), {})[row["impl"]] = row[
            "us_per_token"
        ]
    lines = [
        "| tokens (reasoning+answer) | stream_interval | parser floor µs/token "
        "| before µs/token | after µs/token |",
        "|---|---:|---:|---:|---:|",
    ]
    for (tokens, interval), impls in cells.items():
        if {"floor", "upstream-real", "plugin-real"} <= impls.keys():
            lines.append(
                f"| {tokens} | {interval} | {impls['floor']:.2f} | {impls['upstream-real']:.2f} "
                f"| {impls['plugin-real']:.2f} |"
            )
    machine = data.get("machine", {})
    why = f" ({measured['error']})" if measured else ""
    lines.append("")
    lines.append(
        "Recorded rows, not measured on this tree or on the patched files"
        f"{why}: this repository's `benchmarks/results/cpu_event_cost.json`, CPU time per "
        f"output token, median of {data.get('runs')} runs ({machine.get('cpu', '?')}, "
        f"{machine.get('cores', '?')} cores, Python {machine.get('python', '?')}): the real "
        "`ResponsesStreamingProcessor` driven as `openai_server` drives it, unpatched "
        "(before) and with this change's modules patched in at run time by the plugin (after). "
        "Run `upstream-pr --check` to measure them on the patched files."
    )
    return "\n".join(lines)


def _measured_rows(measured: dict[str, Any]) -> str:
    def cells(rows: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
        out: dict[tuple[str, int], dict[str, Any]] = {}
        for row in rows:
            out.setdefault((row["tokens"], row["stream_interval"]), {})[row["impl"]] = row
        return out

    before, after = cells(measured["before"]), cells(measured["after"])
    lines = [
        "| tokens (reasoning+answer) | stream_interval | parser floor µs/token "
        "| before µs/token (× floor) | after µs/token (× floor) |",
        "|---|---:|---:|---:|---:|",
    ]
    for key, impls in after.items():
        old, new = before.get(key, {}).get("upstream-real"), impls.get("upstream-real")
        if new is None or "floor" not in impls:
            continue
        was = "n/a" if old is None else f"{old['us_per_token']:.2f} ({old['ratio_to_floor']:.2f})"
        lines.append(
            f"| {key[0]} | {key[1]} | {impls['floor']['us_per_token']:.2f} | {was} "
            f"| {new['us_per_token']:.2f} ({new['ratio_to_floor']:.2f}) |"
        )
    if measured.get("before_error"):
        lines += [
            "",
            "Before: not measured, this tree's own `ResponsesStreamingProcessor` could not be "
            f"timed ({measured['before_error']}).",
        ]
    lines += [
        "",
        "Measured by `upstream-pr --check` on this tree (before) and on the patched copy "
        f"(after, no plugin): `{measured['command']}` with `TRTLLM_SOURCE_DIR` naming each. "
        "CPU time of the real `ResponsesStreamingProcessor` per output token, driven as "
        "`openai_server` drives it (median of 5 runs; × floor: the median ratio to a bare "
        "`StreamableParser.process` + `last_content_delta` run timed just before, in the same "
        "process).",
    ]
    return "\n".join(lines)


def _description(
    change: ChangeSet,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    chat: tuple[dict[str, Any] | None, dict[str, Any] | None] = (None, None),
    bench: dict[str, Any] | None = None,
    bodies: tuple[dict[str, Any] | None, dict[str, Any] | None] = (None, None),
) -> str:
    stats = change.stats()
    new_modules = sorted(p for p in change.new_files if p.startswith("tensorrt_llm/"))
    added = sum(a for a, _ in stats.values())
    lines = [
        "`ResponsesStreamingProcessor` streams gpt-oss (Harmony) output through "
        "`_generate_streaming_event_harmony`, which feeds a whole `token_ids_diff` to the "
        "Harmony parser and then reads `parser.last_content_delta` and `parser.state`. Those "
        "describe only the last token of the batch. With `stream_interval` > 1 (the curated "
        "gpt-oss configs use 20) or accepted draft tokens, most deltas are lost, items that end "
        "inside a batch are never closed, the next item is never announced, item ids are empty, "
        "tool calls are not streamed, the last item stays open when the stop token is trimmed, "
        "and `response.completed` carries new ids.",
        "",
        f"Measured on CPU with the real `responses_utils.py` of this tree (version line "
        f"{change.detection.line}), driven as `openai_server` drives it, for "
        f"{after['compared'] // 2 if after else 'the'} synthetic gpt-oss outputs (reasoning, "
        "answers, preambles, tool calls on either channel, length cuts, malformed Harmony) at "
        "1 and 20 tokens per engine response, inline and pickled to a post-processing worker:",
        "",
        results_table(before, after),
        *_chat_problem(change, chat),
        "",
        "**Change.**",
        f"- New package `{PACKAGE}` (Group A: ruff-formatted, no TensorRT-LLM imports except in "
        "`processor.py`): a per-request driver that feeds the parser one token at a time and reads "
        "completed messages only after a stop token, a sans-IO Responses event machine (output "
        "indices, item ids, content parts, coalesced deltas, the final response, the terminal "
        "event), the event and response builders, and SSE framing.",
        "- `responses_utils.py` (legacy file, small yapf-shaped shims): "
        "`ResponsesStreamingProcessor` delegates its Harmony path to `HarmonyResponsesStream`, "
        "which receives `res._done` and the finish reason, closes the last item even when the "
        "stop token was trimmed and reuses the streamed ids in the final response; "
        "`_create_output_content_harmony` uses the same message-to-item mapping as the "
        "stream; `_parse_response_input` renders assistant items "
        "on their phase's channel. Non-Harmony requests are unchanged.",
        "- Two switches trade correctness for the old behaviour where a deployment needs it: "
        f"`{UPSTREAM_ENV_PREFIX}PREAMBLES=drop` (no commentary-channel preamble items) and "
        f"`{UPSTREAM_ENV_PREFIX}LENGTH_TERMINAL=completed` (`response.completed` with status "
        "`incomplete` on a token-limit cut instead of `response.incomplete`).",
        *_chat_bullet(change),
        *_protocol_bullet(change, bodies),
        "",
        "**Benchmark.**",
        "",
        benchmark_rows(measured=bench),
        "",
        f"Diff: {len(change.modified)} files edited, {len(change.new_files)} added "
        f"({len(new_modules)} under `tensorrt_llm/`), {added} lines added.",
    ]
    if change.notes:
        lines += ["", "**Notes.**", *(f"- {note}" for note in change.notes)]
    return "\n".join(lines)


def _bodies_count(stats: dict[str, Any] | None) -> str | None:
    if not stats or "error" in stats:
        return None
    return f"{stats['complete']} / {stats['bodies']} complete, {stats['raised']} raised"


def _protocol_bullet(
    change: ChangeSet, bodies: tuple[dict[str, Any] | None, dict[str, Any] | None]
) -> list[str]:
    """The ``openai_protocol.py`` bullet (with the body counts, where measured)."""
    if OPENAI_PROTOCOL not in change.modified:
        return []
    text = (
        "- `openai_protocol.py`: `ResponsesResponse` declares the fields of OpenAI's Response it "
        "lacked (`completed_at`, `error`, `incomplete_details`, `store`, `prompt_cache_key`, "
        "`safety_identifier`, where missing); `from_request` sets `completed_at` on completed "
        "responses, `incomplete_details` (`max_output_tokens`) on incomplete ones, `error` on "
        "failed ones and echoes the request's `store`; `output` and `tools` dump with OpenAI's "
        "key names (`async`, not `async_`) even without `by_alias`."
    )
    counts = [_bodies_count(b) for b in bodies]
    if all(counts):
        text += (
            " Non-streaming bodies against the keys recordings of OpenAI's API always carry: "
            f"before {counts[0]}; after {counts[1]}."
        )
    return [text]


def _chat_edited(change: ChangeSet) -> bool:
    return POSTPROCESS_HANDLERS in change.modified


def _chat_problem(
    change: ChangeSet, chat: tuple[dict[str, Any] | None, dict[str, Any] | None]
) -> list[str]:
    if not _chat_edited(change):
        return []
    before, after = chat
    return [
        "",
        "The Harmony chat post-processors (`chat_harmony_streaming_post_processor` through "
        "`harmony_adapter.handle_streaming_response`) parse each engine response the same way, "
        "so `/v1/chat/completions` streams depend on `stream_interval` too. Measured with the "
        "real `postprocess_handlers.py` and `harmony_adapter.py` of this tree, for "
        f"{(after or {}).get('streams', 0) // 4 or 'the'} synthetic outputs at 1 and 20 tokens "
        "per engine response, inline and with the post-processor arguments pickled:",
        "",
        chat_table(before, after),
    ]


def _chat_bullet(change: ChangeSet) -> list[str]:
    chat = sorted(
        Path(p).name
        for p in change.new_files
        if p.startswith("tensorrt_llm/") and Path(p).name.startswith("chat_")
    )
    if not chat:
        return []
    names = ", ".join(f"`{n}`" for n in chat)
    if _chat_edited(change):
        return [
            f"- `postprocess_handlers.py` (legacy file): `chat_harmony_streaming_post_processor` "
            "and `chat_harmony_post_processor` call `chat_processor.py`, which runs the Chat "
            f"Completions chunk machine ({names}) on the same driver facts: role once, content, "
            "reasoning and tool-call deltas per token, one finish reason, the usage chunk when "
            "asked; the streaming one keeps the server's stream id and the disaggregated "
            "prompt-token count; the non-streaming one returns `ChatCompletionResponse` and "
            "keeps the context-usage rewrite. The usage does not report "
            "`prompt_tokens_details.cached_tokens` yet; the `harmony_adapter` import of the "
            "two former helpers goes."
        ]
    return [
        f"- The package also holds the Chat Completions chunk machine ({names}) on the same "
        "driver facts; wiring it into the Harmony chat post-processors, with its tests, is a "
        "follow-up."
    ]


def _coverage(change: ChangeSet) -> str:
    tests = [p for p in change.tests if p.rsplit("/", 1)[-1].startswith("test_")]
    return "\n".join(
        [
            f"New CPU tests (`pytestmark = pytest.mark.cpu_only`, registered as `{L0_ENTRY}` in "
            "`l0_cpu.yml`):",
            *(f"- `{p}`" for p in tests),
            "",
            "They cover the driver (facts per token, no `parser.state`/`parser.messages` per "
            "token), the event machine (coalescing, terminal events, errors that never escape), "
            "one regression test per defect above, and the real processor through "
            "`responses_api_streaming_post_processor` at 1 and 20 tokens per engine response, "
            "inline and pickled."
            + (
                " For Chat Completions: the chunk machine (role once, fields, tool calls, one "
                "finish, usage, errors), the chat differential at 1, 2, 3, 7, 20, random and "
                "numpy-array splits over synthetic, hostile and fuzz generations, and the edited "
                "`chat_harmony_*` post-processors at 1 and 20 tokens per engine response, inline "
                "and pickled, each stream equal to the non-streaming `ChatCompletionResponse`."
                if _chat_edited(change)
                else ""
            )
            + " Every stream is checked by a strict event checker and by the OpenAI SDK's own "
            "accumulator.",
        ]
    )


def description(
    change: ChangeSet,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    chat: tuple[dict[str, Any] | None, dict[str, Any] | None] = (None, None),
    bench: dict[str, Any] | None = None,
    bodies: tuple[dict[str, Any] | None, dict[str, Any] | None] = (None, None),
) -> str:
    """The PR text: title line, then the template with its two sections filled in."""
    template_path = change.root / TEMPLATE
    template = template_path.read_text(encoding="utf-8") if template_path.is_file() else ""
    body = _COMMENT.sub("", template)
    filled = {
        "## Description": _description(change, before, after, chat, bench, bodies),
        "## Test Coverage": _coverage(change),
    }
    if not all(header in body for header in filled):
        body = "## Description\n\n## Test Coverage\n"
    for header, text in filled.items():
        body = body.replace(header + "\n", f"{header}\n\n{text}\n", 1)
    body = re.sub(r"\n{3,}", "\n\n", body).strip() + "\n"
    return f"# {title()}\n\n{body}"
