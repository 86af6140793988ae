# SPDX-License-Identifier: Apache-2.0
"""``context_management`` on upstream's server: the threshold, and upstream's answer with the
compaction item first.

A create past its ``compact_threshold`` is compacted first (``compaction_route``), then
answered by upstream's handler from the window; :class:`CompactedFrames` rewrites that
answer as :class:`~trtllm_stream_fix.compaction.stream.CompactedTurnStream` does on the
simulated server: the item added and done right after ``response.in_progress``, every later
``sequence_number`` two higher and ``output_index`` one higher, each Response's ``output``
led by the item and its usage counting the summary's generation.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

from ..core.sse import format_sse
from .compaction_turns import refused

#: ``compact_threshold`` of an entry without one: 80 % of gpt-oss's 131,072-token window.
DEFAULT_THRESHOLD = 131_072 * 4 // 5


def context_threshold(request: Any) -> int | None:
    """The ``compact_threshold`` of a create's ``context_management`` (None: none given);
    a 400 naming the entry for anything else."""
    from ..compaction.errors import CompactionError
    from ..compaction.requests import compact_threshold

    extra = getattr(request, "model_extra", None) or {}
    value = extra.get("context_management", getattr(request, "context_management", None))
    try:
        return compact_threshold(value, DEFAULT_THRESHOLD)
    except CompactionError as exc:
        raise refused(exc) from None


class CompactedFrames:
    """Upstream's SSE frames of a turn answered from a compacted context, with the
    compaction item added and done right after ``response.in_progress``: every later
    ``sequence_number`` two higher and ``output_index`` one higher, each Response's
    ``output`` led by the item and its usage counting the summary's generation."""

    def __init__(self, compaction: Any) -> None:
        self.compaction = compaction
        self.started = False

    def response(self, response: dict[str, Any]) -> dict[str, Any]:
        """A Response dict with the item first and the summary's usage added."""
        from ..compaction.stream import compaction_model

        item = compaction_model(self.compaction.item).model_dump(mode="json")
        out = {**response, "output": [item, *(response.get("output") or [])]}
        usage, extra = response.get("usage"), self.compaction.usage
        if isinstance(usage, dict):
            details = dict(usage.get("output_tokens_details") or {})
            details["reasoning_tokens"] = (
                details.get("reasoning_tokens", 0) + extra.output_tokens_details.reasoning_tokens
            )
            usage = {
                **usage,
                "input_tokens": usage.get("input_tokens", 0) + extra.input_tokens,
                "output_tokens": usage.get("output_tokens", 0) + extra.output_tokens,
                "total_tokens": usage.get("total_tokens", 0) + extra.total_tokens,
                "output_tokens_details": details,
            }
            out["usage"] = usage
        return out

    def _item_frames(self, seq: int) -> str:
        from ..compaction.stream import added, done

        item = self.compaction.item
        return format_sse(added(item, 0, seq)) + format_sse(done(item, 0, seq + 1))

    def frame(self, frame: str) -> str:
        """One SSE frame, shifted (frames without a JSON ``data`` line pass as they are)."""
        lines = frame.split("\n")
        data = next((n for n, line in enumerate(lines) if line.startswith("data: ")), None)
        if data is None:
            return frame
        try:
            event = json.loads(lines[data][len("data: ") :])
        except ValueError:
            return frame
        if not isinstance(event, dict):
            return frame
        kind = event.get("type")
        prefix = ""
        if not self.started and kind not in ("response.created", "response.in_progress"):
            self.started = True  # no in_progress seen: the item goes first here
            prefix = self._item_frames(int(event.get("sequence_number") or 0))
        if self.started:
            if isinstance(event.get("sequence_number"), int):
                event["sequence_number"] += 2
            if isinstance(event.get("output_index"), int):
                event["output_index"] += 1
            if isinstance(event.get("response"), dict):
                event["response"] = self.response(event["response"])
        lines[data] = "data: " + json.dumps(event, separators=(",", ":"))
        out = prefix + "\n".join(lines)
        if kind == "response.in_progress" and not self.started:
            self.started = True
            # parts are joined with a blank line again (``frames``): no trailing one here
            item_frames = self._item_frames(int(event.get("sequence_number") or 0) + 1)
            out += "\n\n" + item_frames.rstrip("\n")
        return out

    async def frames(self, chunks: AsyncIterable[Any]) -> AsyncIterator[str]:
        """Each chunk of upstream's stream (one or more frames) shifted."""
        async for chunk in chunks:
            text = chunk.decode() if isinstance(chunk, bytes) else str(chunk)
            parts = text.split("\n\n")
            yield "\n\n".join(self.frame(p) if p.strip() else p for p in parts)
