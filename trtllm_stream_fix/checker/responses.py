# SPDX-License-Identifier: Apache-2.0
"""Strict checker for OpenAI Responses API event streams (``POST /v1/responses``, stream).

Implements the grammar and rules 1-13 of the event contract plus the terminal rules::

    stream    := created queued? in_progress? item* terminal
    terminal  := completed | incomplete | failed | error failed
    item      := output_item.added body output_item.done
    body      := summary* part*  |  args_delta* function_call_arguments.done
    part      := content_part.added delta* <kind>.done content_part.done

Events are plain dicts as produced by ``model_dump(mode="json", exclude_none=True)`` or by
``json.loads`` of SSE data; a missing key reads as None. Each violation names the event
index, its type and a rule code from :data:`RULES`; codes passed in ``allow`` are reported
as warnings instead.
"""

from __future__ import annotations

import itertools
import typing
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pydantic

from ..jsonlimits import MAX_DEPTH, loads, too_deep
from .findings import Findings, FindingsView
from .harmony_markup import MARKUP
from .schema_compat import for_installed_schema

__all__ = [
    "ADVISORY_RULES",
    "RULES",
    "ResponsesCheck",
    "ResponsesItem",
    "ResponsesStreamChecker",
    "check_responses_events",
]

Terminal = Literal["completed", "incomplete", "failed"]
#: Response fields that carry the sampling values in effect (OpenAI sends them as numbers).
SAMPLING_KEYS = ("temperature", "top_p")
#: Sampling fields OpenAI's API added later: absent from older streams, numbers when present.
OPTIONAL_SAMPLING_KEYS = ("presence_penalty", "frequency_penalty")

#: Rules reported as warnings unless passed in ``require``.
ADVISORY_RULES = frozenset(("arguments-json",))

#: Rule codes and what they enforce (section numbers of the event contract).
RULES: dict[str, str] = {
    "schema": "§4.1 the event is a JSON object whose fields match its openai type",
    "unknown-type": "§4.1 `type` names a known Responses stream event",
    "event-name": "§4.1 the SSE `event:` name equals `type`",
    "sequence": "§4.2 sequence_number is an int counting 0, 1, 2, ... without gaps",
    "first-event": "§4.3 the first event is response.created",
    "lifecycle": "§4 created, queued?, in_progress? once each and before any item",
    "lifecycle-status": "§4.3 created/in_progress carry status in_progress or queued",
    "sampling": "§4.3 every Response carries temperature and top_p as numbers; "
    "presence_penalty and frequency_penalty, when present, are numbers",
    "response-id": "§4.3 response.id is identical on every lifecycle event",
    "output-index": "§4.4 output_item.added output_index is 0, 1, 2, ... without reuse",
    "interleaved-items": "§4.4 the next item is added only after the previous one is done",
    "item-ref": "§4.5 an item-scoped event refers to an open item",
    "item-id": "§4.5 item ids are non-empty, unique, and equal to every event's item_id",
    "content-index": "§4.6 content/summary index counts 0, 1, ... per item; open part only",
    "part-kind": "§4.6 part kind matches the delta kind and the item type",
    "part-text": "§4.6 content_part.added starts with empty text",
    "part-order": "§4 part added, deltas, <kind>.done, part done; no part open at item done",
    "text-mismatch": "§4.7 done text == joined deltas == part.done == item.done == terminal output",
    "arguments-mismatch": "§4.7 arguments.done == joined deltas == item.done == terminal output",
    "item-identity": "§4.8 output_item.done keeps type, id, call_id and name of the added item",
    "item-status": "§4.8 status in_progress when added, completed or incomplete when done",
    "open-item": "§4.9 no item is open at the terminal event",
    "terminal-output": "§4.9 terminal response.output lists the done items in order",
    "terminal-status": "§4.10 terminal status, incomplete_details and error match the event",
    "incomplete-item": "§4.10 an incomplete item is the last one and never under completed",
    "usage-total": "§4.10 usage.total_tokens == input_tokens + output_tokens",
    "after-terminal": "§4.11 nothing follows the terminal event",
    "no-terminal": "§4.11 the stream ends with a terminal event",
    "error-without-failed": "§3 an error event is followed by response.failed",
    "delta-empty": "§4.12 a delta is a non-empty string",
    "logprobs": "§4.12 output_text.delta carries a logprobs list",
    "function-call": "§4.13 function calls have a non-empty name and call_id",
    "arguments-json": "§4.13 arguments of a completed function call are valid JSON (a warning "
    "unless required: arguments reach the client verbatim)",
    "compaction": "a compaction item carries no content parts: added with a string "
    "encrypted_content, done with a non-empty one, and only response.compaction.compacting "
    "refers to it in between",
    "unsupported-event": "a gpt-oss stream emits only text, reasoning, function-call and "
    "compaction events",
}

_LIFECYCLE_START = ("response.created", "response.queued", "response.in_progress")
_TERMINALS: dict[str, Terminal] = {
    "response.completed": "completed",
    "response.incomplete": "incomplete",
    "response.failed": "failed",
}
_PART_KINDS = {"message": ("output_text", "refusal"), "reasoning": ("reasoning_text",)}
_DELTA_KINDS = {
    "response.output_text.delta": "output_text",
    "response.refusal.delta": "refusal",
    "response.reasoning_text.delta": "reasoning_text",
}
_DONE_KINDS = {
    "response.output_text.done": ("output_text", "text"),
    "response.refusal.done": ("refusal", "refusal"),
    "response.reasoning_text.done": ("reasoning_text", "text"),
}
_BUILTIN_ITEMS = frozenset({"message", "reasoning", "function_call"})


def _event_classes() -> dict[str, type[pydantic.BaseModel]]:
    from openai.types.responses import ResponseStreamEvent

    union = typing.get_args(ResponseStreamEvent)[0]
    classes: dict[str, type[pydantic.BaseModel]] = {}
    for cls in typing.get_args(union):
        (name,) = typing.get_args(cls.model_fields["type"].annotation)
        classes[name] = cls
    return classes


_CLASSES: dict[str, type[pydantic.BaseModel]] | None = None


def _classes() -> dict[str, type[pydantic.BaseModel]]:
    global _CLASSES
    if _CLASSES is None:
        _CLASSES = _event_classes()
    return _CLASSES


def check_stream_id(
    seen: str | None, value: Any, rule: str, label: str, violate: Callable[[str, str], None]
) -> str | None:
    """The stream's id once ``value`` is checked: a non-empty string, the first one seen."""
    if not isinstance(value, str) or not value:
        violate(rule, f"{label} {value!r} is empty")
    elif seen is None:
        return value
    elif value != seen:
        violate(rule, f"{label} {value!r} != {seen!r}")
    return seen


def _part_text(part: Mapping[str, Any] | None) -> str | None:
    if not isinstance(part, Mapping):
        return None
    value = part.get("refusal") if part.get("type") == "refusal" else part.get("text")
    return value if isinstance(value, str) else None


@dataclass
class ResponsesItem:
    """One output item as assembled from the stream."""

    output_index: int
    id: str
    type: str
    status: str | None = None
    #: Joined text of all content parts (message text, refusal, reasoning text).
    text: str = ""
    #: Text of each content part, in content_index order.
    parts: list[str] = field(default_factory=list)
    #: Text of each reasoning summary part.
    summary: list[str] = field(default_factory=list)
    arguments: str | None = None
    name: str | None = None
    call_id: str | None = None
    phase: str | None = None


@dataclass
class ResponsesCheck:
    """Result of checking one Responses stream."""

    violations: list[str]
    warnings: list[str]
    terminal: Terminal | None
    items: list[ResponsesItem]
    response_id: str | None
    events: int
    #: Payload of the ``error`` event, or the terminal ``response.error``.
    error: dict[str, Any] | None = None
    incomplete_reason: str | None = None
    usage: dict[str, Any] | None = None
    #: Rule codes of the violations, in order (same length as ``violations``).
    rules: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No violation and a terminal event was received."""
        return not self.violations and self.terminal is not None

    def has(self, rule: str) -> bool:
        """True if a violation of ``rule`` was reported."""
        return rule in self.rules


@dataclass
class _Part:
    kind: str
    deltas: list[str] = field(default_factory=list)
    done_text: str | None = None
    closed: bool = False

    @property
    def text(self) -> str:
        return "".join(self.deltas)


@dataclass
class _Item:
    output_index: int
    id: str
    type: str
    added: Mapping[str, Any]
    #: Position in the checker's item list.
    slot: int = 0
    open: bool = True
    status: str | None = None
    parts: list[_Part] = field(default_factory=list)
    summaries: list[_Part] = field(default_factory=list)
    args: list[str] = field(default_factory=list)
    args_done: str | None = None

    def assembled(self) -> ResponsesItem:
        texts = [p.done_text if p.done_text is not None else p.text for p in self.parts]
        fc = self.type == "function_call"
        return ResponsesItem(
            output_index=self.output_index,
            id=self.id,
            type=self.type,
            status=self.status,
            text="".join(texts),
            parts=texts,
            summary=[p.done_text if p.done_text is not None else p.text for p in self.summaries],
            arguments=(self.args_done if self.args_done is not None else "".join(self.args))
            if fc
            else None,
            name=self.added.get("name") if fc else None,
            call_id=self.added.get("call_id") if fc else None,
            phase=self.added.get("phase"),
        )


class ResponsesStreamChecker(FindingsView):
    """Incremental checker: :meth:`feed` one event dict at a time, then :meth:`finish`.

    ``allow``: rule codes reported as warnings instead of violations; the advisory rules
    (``ADVISORY_RULES``: arguments that are not valid JSON, which reach the client verbatim)
    are warnings unless named in ``require``. ``validate_schema``
    runs pydantic validation of each event against its openai class (rule 1).
    ``first_sequence_number``: expected sequence number of the first event.
    """

    def __init__(
        self,
        *,
        allow: Collection[str] = (),
        require: Collection[str] = (),
        validate_schema: bool = True,
        first_sequence_number: int = 0,
    ) -> None:
        unknown = (set(allow) | set(require)) - RULES.keys()
        if unknown:
            msg = f"unknown rule codes in allow: {sorted(unknown)}; known: {sorted(RULES)}"
            raise ValueError(msg)
        self.allow = frozenset(allow) | (ADVISORY_RULES - set(require))
        self.validate_schema = validate_schema
        self._next_seq = first_sequence_number
        self._index = -1
        self._type = ""
        self._violations = Findings("violations")
        self._warnings = Findings("warnings")
        self.terminal: Terminal | None = None
        self.response_id: str | None = None
        self.error: dict[str, Any] | None = None
        self.incomplete_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self._items: list[_Item] = []
        self._by_index: dict[int, _Item] = {}
        #: Items added and not yet done, by their position in ``_items`` (keeps adds O(1)).
        self._open: dict[int, _Item] = {}
        self._ids: set[str] = set()
        self._lifecycle_seen: list[str] = []
        self._error_pending = False
        self._terminal_index: int | None = None
        self._finished = False
        self._warned: set[str] = set()
        self._handlers: dict[str, Callable[[Mapping[str, Any]], None]] = {
            "response.created": self._on_lifecycle,
            "response.queued": self._on_lifecycle,
            "response.in_progress": self._on_lifecycle,
            "response.completed": self._on_terminal,
            "response.incomplete": self._on_terminal,
            "response.failed": self._on_terminal,
            "error": self._on_error,
            "response.output_item.added": self._on_item_added,
            "response.output_item.done": self._on_item_done,
            "response.content_part.added": self._on_part_added,
            "response.content_part.done": self._on_part_done,
            "response.output_text.delta": self._on_delta,
            "response.refusal.delta": self._on_delta,
            "response.reasoning_text.delta": self._on_delta,
            "response.output_text.done": self._on_text_done,
            "response.refusal.done": self._on_text_done,
            "response.reasoning_text.done": self._on_text_done,
            "response.output_text.annotation.added": self._on_annotation,
            "response.reasoning_summary_part.added": self._on_summary_added,
            "response.reasoning_summary_part.done": self._on_summary_done,
            "response.reasoning_summary_text.delta": self._on_summary_delta,
            "response.reasoning_summary_text.done": self._on_summary_text_done,
            "response.function_call_arguments.delta": self._on_args_delta,
            "response.function_call_arguments.done": self._on_args_done,
        }

    # ------------------------------------------------------------------ reporting

    def _violate(self, rule: str, message: str) -> None:
        where = f"event {self._index} ({self._type})" if self._index >= 0 else "stream"
        if self._finished:
            where = "end of stream"
        text = f"{where}: [{rule}] {message}"
        (self._warnings if rule in self.allow else self._violations).add(rule, text)

    def _warn(self, message: str, *, once: str | None = None, kind: str = "note") -> None:
        if once is not None:
            if once in self._warned:
                return
            self._warned.add(once)
        self._warnings.add(once or kind, f"event {self._index} ({self._type}): {message}")

    # ------------------------------------------------------------------ public API

    @property
    def terminated(self) -> bool:
        """True once a terminal event was received."""
        return self.terminal is not None

    def feed(self, event: Mapping[str, Any], *, sse_event: str | None = None) -> None:
        """Check one event; ``sse_event`` is the SSE ``event:`` name it arrived with, if any."""
        if self._finished:
            msg = "ResponsesStreamChecker.feed() called after finish()"
            raise RuntimeError(msg)
        self._index += 1
        if not isinstance(event, Mapping):
            self._type = type(event).__name__
            self._violate("schema", "event is not a JSON object")
            return
        etype = event.get("type")
        self._type = etype if isinstance(etype, str) else _short(etype, 40)
        if too_deep(event, MAX_DEPTH):
            self._violate("schema", f"event data nested deeper than {MAX_DEPTH} levels")
            return
        if self._terminal_index is not None:
            self._violate(
                "after-terminal", f"event after the terminal event {self._terminal_index}"
            )
            return
        if sse_event is not None and sse_event != etype:
            self._violate("event-name", f"SSE event name {sse_event!r} != type {etype!r}")
        self._check_sequence(event)
        if self._index == 0 and etype != "response.created":
            self._violate("first-event", "the first event must be response.created")
        if self._error_pending and etype != "response.failed":
            self._violate("error-without-failed", "the error event is not followed by failed")
            self._error_pending = False
        if not isinstance(etype, str) or etype not in _classes():
            self._violate("unknown-type", f"unknown event type {etype!r}")
            return
        cls = _classes()[etype]
        if etype == "error":
            event = self._flatten_error(event)
        if self.validate_schema:
            self._check_schema(cls, event)
        handler = self._handlers.get(etype)
        if handler is None:
            self._on_other(event)
        else:
            handler(event)

    def finish(self) -> ResponsesCheck:
        """End of stream: report missing terminal / dangling error and return the result."""
        if not self._finished:
            self._finished = True
            if self.terminal is None:
                if self._error_pending:
                    self._violate("error-without-failed", "the stream ends after an error event")
                    if "error-without-failed" in self.allow:
                        self.terminal = "failed"
                else:
                    extra = f"; open items {_open_ids(self._open)}" if self._open else ""
                    self._violate("no-terminal", f"no terminal event{extra}")
        return self.result()

    def result(self) -> ResponsesCheck:
        """The result so far (call :meth:`finish` first for the end-of-stream rules)."""
        return ResponsesCheck(
            violations=list(self.violations),
            warnings=list(self.warnings),
            terminal=self.terminal,
            items=[it.assembled() for it in self._items],
            response_id=self.response_id,
            events=self._index + 1,
            error=self.error,
            incomplete_reason=self.incomplete_reason,
            usage=self.usage,
            rules=list(self.rules),
        )

    # ------------------------------------------------------------------ generic rules

    def _check_sequence(self, event: Mapping[str, Any]) -> None:
        seq = event.get("sequence_number")
        if not isinstance(seq, int) or isinstance(seq, bool):
            self._violate("sequence", f"sequence_number {seq!r} is not an int")
            self._next_seq += 1
            return
        if seq != self._next_seq:
            self._violate("sequence", f"sequence_number {seq}, expected {self._next_seq}")
        self._next_seq = seq + 1

    def _flatten_error(self, event: Mapping[str, Any]) -> Mapping[str, Any]:
        """OpenAI's API nests the error event's fields in ``error``; the SDK's type has them
        at the top level. Accept both: the nested form is checked flattened, with a warning."""
        nested = event.get("error")
        if not isinstance(nested, Mapping) or "message" in event:
            return event
        self._warn(
            "error event nests code/message in `error` (OpenAI API form); the openai SDK's "
            "ResponseErrorEvent has them at the top level",
            once="nested-error",
        )
        flat = dict(event)
        for key in ("code", "message", "param"):
            flat.setdefault(key, nested.get(key))
        return flat

    def _check_schema(self, cls: type[pydantic.BaseModel], event: Mapping[str, Any]) -> None:
        try:
            cls.model_validate(dict(event), strict=True)
        except pydantic.ValidationError as exc:
            mapped, notes = for_installed_schema(event)
            if notes and _validates(cls, mapped):
                self._warn(f"{notes[0]} is newer than this openai's schema", once=notes[0])
                return
            errors = []
            for err in exc.errors():
                loc = ".".join(str(p) for p in err["loc"])
                if err["loc"][-2:] == ("error", "code") and err["type"] == "literal_error":
                    self._warn(
                        f"error code {_short(err.get('input'))} is not in the openai SDK's "
                        "ResponseError codes (the API sends others, e.g. insufficient_quota)",
                        once="error-code",
                    )
                    continue
                if "cache_write_tokens" in loc:
                    self._warn(
                        "usage lacks input_tokens_details.cache_write_tokens (required by "
                        "openai 3.51 schema; older servers omit it)",
                        once="cache_write_tokens",
                    )
                    continue
                errors.append(f"{loc}: {err['msg']}")
            if errors:
                more = f" (+{len(errors) - 3} more)" if len(errors) > 3 else ""
                self._violate("schema", "; ".join(errors[:3]) + more)

    def _checked_delta(self, event: Mapping[str, Any]) -> str | None:
        """The event's ``delta`` when it is a string (an empty one is flagged), else None."""
        delta = event.get("delta")
        obfuscation = event.get("obfuscation")
        if obfuscation is not None and not isinstance(obfuscation, str):
            self._warn(f"obfuscation {obfuscation!r} is not a string")
        if not isinstance(delta, str):
            self._violate("schema", f"delta {delta!r} is not a string")
            return None
        if not delta:
            self._violate("delta-empty", "empty delta")
        elif "<|" in delta and any(m in delta for m in MARKUP):
            self._warn("delta contains Harmony markup", once="markup")
        return delta

    def _item_ref(self, event: Mapping[str, Any], *, with_item_id: bool = True) -> _Item | None:
        idx = event.get("output_index")
        if not isinstance(idx, int) or isinstance(idx, bool):
            self._violate("item-ref", f"output_index {idx!r} is not an int")
            return None
        item = self._by_index.get(idx)
        if item is None:
            self._violate("item-ref", f"output_index {idx} was never added")
            return None
        if not item.open:
            self._violate("item-ref", f"output_index {idx} (item {item.id!r}) is already done")
            return None
        if with_item_id:
            item_id = event.get("item_id")
            if item_id != item.id:
                self._violate(
                    "item-id", f"item_id {item_id!r} != id {item.id!r} of output_index {idx}"
                )
        return item

    # ------------------------------------------------------------------ lifecycle

    def _check_response(self, response: Mapping[str, Any]) -> None:
        """The Response of a lifecycle or terminal event: its id, its sampling values."""
        self.response_id = check_stream_id(
            self.response_id, response.get("id"), "response-id", "response.id", self._violate
        )
        for key in SAMPLING_KEYS + OPTIONAL_SAMPLING_KEYS:
            if key not in response and key in OPTIONAL_SAMPLING_KEYS:
                continue  # OpenAI's API omitted the penalties before 2026
            value = response.get(key)
            if type(value) not in (int, float):
                self._violate("sampling", f"response.{key} is {_short(value)}, not a number")

    def _on_lifecycle(self, event: Mapping[str, Any]) -> None:
        etype = event["type"]
        response = event.get("response")
        response = response if isinstance(response, Mapping) else {}
        self._check_response(response)
        if etype in self._lifecycle_seen:
            self._violate("lifecycle", f"second {etype}")
        elif self._items:
            self._violate("lifecycle", f"{etype} after output items")
        elif self._lifecycle_seen and _LIFECYCLE_START.index(etype) < _LIFECYCLE_START.index(
            self._lifecycle_seen[-1]
        ):
            self._violate("lifecycle", f"{etype} after {self._lifecycle_seen[-1]}")
        self._lifecycle_seen.append(etype)
        status = response.get("status")
        if status not in ("in_progress", "queued"):
            self._violate("lifecycle-status", f"status {status!r}, expected in_progress/queued")
        if response.get("output"):
            self._warn("lifecycle event with non-empty output")

    def _on_error(self, event: Mapping[str, Any]) -> None:
        nested = event.get("error")
        if isinstance(nested, Mapping):
            self.error = dict(nested)
        else:
            self.error = {k: v for k, v in event.items() if k not in ("type", "sequence_number")}
        self._error_pending = True

    def _on_terminal(self, event: Mapping[str, Any]) -> None:
        etype = event["type"]
        terminal = _TERMINALS[etype]
        self._error_pending = False
        self._terminal_index = self._index
        self.terminal = terminal
        response = event.get("response")
        response = response if isinstance(response, Mapping) else {}
        self._check_response(response)
        if "response.created" not in self._lifecycle_seen:
            self._violate("lifecycle", "terminal event without response.created")
        for item in self._items:
            if item.open:
                self._violate(
                    "open-item",
                    f"item {item.id!r} (output_index {item.output_index}) is still open",
                )
        status = response.get("status")
        if status != terminal:
            self._violate("terminal-status", f"response.status {status!r} under {etype}")
        details = response.get("incomplete_details")
        error = response.get("error")
        if terminal == "completed":
            if details is not None:
                self._violate("terminal-status", "incomplete_details set under completed")
            if error is not None:
                self._violate("terminal-status", "error set under completed")
            for item in self._items:
                if item.status == "incomplete":
                    self._violate(
                        "incomplete-item",
                        f"item {item.id!r} is incomplete under response.completed",
                    )
        elif terminal == "incomplete":
            reason = details.get("reason") if isinstance(details, Mapping) else None
            if not reason:
                self._violate("terminal-status", "incomplete_details.reason missing")
            self.incomplete_reason = reason
        else:
            if not isinstance(error, Mapping) or not error.get("message"):
                self._violate("terminal-status", "response.error missing under failed")
            elif self.error is None:
                self.error = dict(error)
        usage = response.get("usage")
        if isinstance(usage, Mapping):
            self.usage = dict(usage)
            total, inp, out = (
                usage.get(k) for k in ("total_tokens", "input_tokens", "output_tokens")
            )
            if (
                not (isinstance(total, int) and isinstance(inp, int) and isinstance(out, int))
                or total != inp + out
            ):
                self._violate(
                    "usage-total",
                    f"total_tokens {total!r} != input_tokens {inp!r} + output_tokens {out!r}",
                )
        elif terminal != "failed":
            self._warn(f"no usage in {etype}")
        self._check_terminal_output(response.get("output"))

    def _check_terminal_output(self, output: Any) -> None:
        if not isinstance(output, list):
            self._violate(
                "terminal-output", f"response.output {type(output).__name__} is not a list"
            )
            return
        done = [it for it in self._items if not it.open]
        if len(output) != len(done):
            ids = [o.get("id") if isinstance(o, Mapping) else o for o in output]
            self._violate(
                "terminal-output",
                f"response.output has {len(output)} items {ids}, "
                f"stream has {len(done)} done items {[it.id for it in done]}",
            )
        for item, final in zip(done, output):
            if not isinstance(final, Mapping):
                self._violate("terminal-output", f"output entry {final!r} is not an object")
                continue
            self._compare_item(item, final, "terminal-output", "response.output")
            if final.get("status") != item.status:
                self._violate(
                    "terminal-output",
                    f"item {item.id!r} status "
                    f"{final.get('status')!r} in response.output != {item.status!r}",
                )

    # ------------------------------------------------------------------ items

    def _on_item_added(self, event: Mapping[str, Any]) -> None:
        item = event.get("item")
        idx = event.get("output_index")
        if not isinstance(item, Mapping):
            self._violate("schema", "output_item.added without item")
            return
        if not isinstance(idx, int) or isinstance(idx, bool):
            self._violate("output-index", f"output_index {idx!r} is not an int")
            return
        if self._open:
            self._violate(
                "interleaved-items", f"item added while {_open_ids(self._open)} still open"
            )
        if idx in self._by_index:
            self._violate("output-index", f"output_index {idx} reused")
        elif idx != len(self._items):
            self._violate("output-index", f"output_index {idx}, expected {len(self._items)}")
        if self._items and self._items[-1].status == "incomplete":
            self._violate(
                "incomplete-item", f"item added after incomplete item {self._items[-1].id!r}"
            )
        itype = item.get("type")
        if not isinstance(itype, str):
            self._violate("schema", f"item type {_short(itype)} is not a string")
            itype = ""
        iid = item.get("id")
        if not isinstance(iid, str) or not iid:
            self._violate("item-id", f"item id {iid!r} is empty")
            iid = ""
        elif iid in self._ids:
            self._violate("item-id", f"item id {iid!r} is not unique")
        self._ids.add(iid)
        status = item.get("status")
        if status is not None and status != "in_progress":
            self._violate("item-status", f"added item status {status!r}, expected in_progress")
        if itype == "function_call":
            self._check_call_fields(item)
        if itype == "compaction":
            self._check_compaction(item, done=False)
        if itype in _PART_KINDS and item.get("content"):
            self._violate("part-order", "added item already has content")
        state = _Item(output_index=idx, id=iid, type=itype, added=item, slot=len(self._items))
        self._items.append(state)
        self._open[state.slot] = state
        self._by_index[idx] = state

    def _check_compaction(self, item: Mapping[str, Any], *, done: bool) -> None:
        blob = item.get("encrypted_content")
        if not isinstance(blob, str) or (done and not blob):
            where = "done" if done else "added"
            self._violate(
                "compaction", f"compaction item {where} with encrypted_content {_short(blob)}"
            )
        if item.get("content") is not None:
            self._violate("compaction", "compaction item with content")

    def _check_call_fields(self, item: Mapping[str, Any]) -> None:
        for key in ("name", "call_id"):
            value = item.get(key)
            if not isinstance(value, str) or not value:
                self._violate("function-call", f"function_call {key} {value!r} is empty")

    def _on_item_done(self, event: Mapping[str, Any]) -> None:
        item = self._item_ref(event, with_item_id=False)
        final = event.get("item")
        if item is None or not isinstance(final, Mapping):
            if item is not None:
                self._violate("schema", "output_item.done without item")
            return
        open_parts = [p for p in item.parts + item.summaries if not p.closed]
        if open_parts:
            self._violate(
                "part-order", f"item {item.id!r} done with {len(open_parts)} open part(s)"
            )
        if item.type == "function_call":
            self._check_call_fields(final)
            if item.args_done is None:
                self._violate("part-order", "output_item.done before function_call_arguments.done")
        if item.type == "compaction":
            self._check_compaction(final, done=True)
        status = final.get("status")
        if status in ("completed", "incomplete"):
            item.status = status
        elif status is None and item.type == "compaction":
            pass  # the item type has no status
        elif status is None and item.type != "message":
            self._warn(f"{item.type} item {item.id!r} done without status")
        else:
            self._violate(
                "item-status", f"done item status {status!r}, expected completed or incomplete"
            )
        self._compare_item(item, final, "item-identity", "output_item.done")
        if item.type == "function_call" and status == "completed":
            try:
                loads(final.get("arguments") or "")
            except (TypeError, ValueError):
                self._violate(
                    "arguments-json",
                    f"arguments {_short(final.get('arguments'))} of completed call are not "
                    "valid JSON",
                )
        item.open = False
        self._open.pop(item.slot, None)

    def _compare_item(self, item: _Item, final: Mapping[str, Any], rule: str, where: str) -> None:
        keys = ["type", "id"] + (["call_id", "name"] if item.type == "function_call" else [])
        for key in keys:
            if final.get(key) != item.added.get(key):
                self._violate(
                    rule, f"{where} item {key} {final.get(key)!r} != added {item.added.get(key)!r}"
                )
        if item.type == "function_call":
            args = item.args_done if item.args_done is not None else "".join(item.args)
            if final.get("arguments") != args:
                self._violate(
                    "arguments-mismatch",
                    f"{where} arguments {final.get('arguments')!r} != streamed {args!r}",
                )
        elif item.type in _PART_KINDS:
            self._compare_texts(item.parts, final.get("content"), f"{where} content", item.id)
            if item.type == "reasoning":
                self._compare_texts(
                    item.summaries, final.get("summary"), f"{where} summary", item.id
                )

    def _compare_texts(self, parts: list[_Part], entries: Any, where: str, item_id: str) -> None:
        entries = entries if isinstance(entries, list) else []
        if len(entries) != len(parts):
            self._violate(
                "text-mismatch",
                f"{where} of {item_id!r} has {len(entries)} entries, stream has {len(parts)} parts",
            )
        for k, (part, entry) in enumerate(zip(parts, entries)):
            text = _part_text(entry)
            kind = entry.get("type") if isinstance(entry, Mapping) else None
            if kind != part.kind and not (part.kind == "summary_text" and kind is None):
                self._violate("part-kind", f"{where}[{k}] type {kind!r} != streamed {part.kind!r}")
            if text != part.text:
                self._violate(
                    "text-mismatch",
                    f"{where}[{k}] text {_short(text)} != streamed {_short(part.text)}",
                )

    def _on_other(self, event: Mapping[str, Any]) -> None:
        idx = event.get("output_index")
        item = self._by_index.get(idx) if isinstance(idx, int) else None
        if item is not None and item.type == "compaction":
            if event["type"] != "response.compaction.compacting":
                self._violate("compaction", f"{event['type']} in compaction item {item.id!r}")
            elif not item.open:
                self._violate("item-ref", f"{event['type']} after compaction item {item.id!r} done")
            elif event.get("item_id") != item.id:
                self._violate("item-id", f"item_id {event.get('item_id')!r} != {item.id!r}")
            return
        if item is not None and item.type not in _BUILTIN_ITEMS and item.open:
            if event.get("item_id") not in (None, item.id):
                self._violate("item-id", f"item_id {event.get('item_id')!r} != {item.id!r}")
            return
        self._violate("unsupported-event", f"{event['type']} is not part of a gpt-oss stream")

    # ------------------------------------------------------------------ content parts

    def _slot(
        self, event: Mapping[str, Any], key: str, summary: bool
    ) -> tuple[_Item, _Part] | None:
        item = self._item_ref(event)
        if item is None:
            return None
        parts = item.summaries if summary else item.parts
        k = event.get(key)
        if not parts or k != len(parts) - 1:
            self._violate(
                "content-index", f"{key} {k!r} is not the open part (item has {len(parts)} part(s))"
            )
            return None
        part = parts[-1]
        if part.closed:
            self._violate("part-order", f"{key} {k} is already done")
            return None
        return item, part

    def _on_part_added(self, event: Mapping[str, Any]) -> None:
        item = self._item_ref(event)
        if item is None:
            return
        part = event.get("part")
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind not in _PART_KINDS.get(item.type, ()):
            self._violate("part-kind", f"part {kind!r} in {item.type} item")
        if item.parts and not item.parts[-1].closed:
            self._violate("part-order", "part added while the previous part is open")
        if event.get("content_index") != len(item.parts):
            self._violate(
                "content-index",
                f"content_index {event.get('content_index')!r}, expected {len(item.parts)}",
            )
        if _part_text(part) != "":
            self._violate("part-text", f"added part text {_short(_part_text(part))} is not empty")
        item.parts.append(_Part(kind=str(kind)))

    def _on_delta(self, event: Mapping[str, Any]) -> None:
        kind = _DELTA_KINDS[event["type"]]
        delta = self._checked_delta(event)
        if kind == "output_text" and not isinstance(event.get("logprobs"), list):
            self._violate("logprobs", "output_text.delta without logprobs list")
        slot = self._slot(event, "content_index", summary=False)
        if slot is None:
            return
        _, part = slot
        if part.kind != kind:
            self._violate("part-kind", f"{kind} delta in {part.kind} part")
        if part.done_text is not None:
            self._violate("part-order", "delta after the part's text done event")
        if delta is not None:
            part.deltas.append(delta)

    def _on_text_done(self, event: Mapping[str, Any]) -> None:
        kind, key = _DONE_KINDS[event["type"]]
        slot = self._slot(event, "content_index", summary=False)
        if slot is None:
            return
        _, part = slot
        self._text_done(part, kind, event.get(key))

    def _text_done(self, part: _Part, kind: str, text: Any) -> None:
        if part.kind != kind:
            self._violate("part-kind", f"{kind} done in {part.kind} part")
        if part.done_text is not None:
            self._violate("part-order", "second text done event for the part")
        if text != part.text:
            self._violate(
                "text-mismatch", f"done text {_short(text)} != joined deltas {_short(part.text)}"
            )
        part.done_text = text if isinstance(text, str) else ""

    def _part_done(self, part: _Part, done_part: Any) -> None:
        if part.done_text is None:
            self._violate("part-order", "part done before its text done event")
        kind = done_part.get("type") if isinstance(done_part, Mapping) else None
        if kind != part.kind:
            self._violate("part-kind", f"done part type {kind!r} != {part.kind!r}")
        text = _part_text(done_part)
        if text != part.text:
            self._violate(
                "text-mismatch",
                f"part.done text {_short(text)} != joined deltas {_short(part.text)}",
            )
        part.closed = True

    def _on_part_done(self, event: Mapping[str, Any]) -> None:
        slot = self._slot(event, "content_index", summary=False)
        if slot is not None:
            self._part_done(slot[1], event.get("part"))

    def _on_annotation(self, event: Mapping[str, Any]) -> None:
        slot = self._slot(event, "content_index", summary=False)
        if slot is not None and slot[1].kind != "output_text":
            self._violate("part-kind", f"annotation in {slot[1].kind} part")

    # ------------------------------------------------------------------ reasoning summaries

    def _on_summary_added(self, event: Mapping[str, Any]) -> None:
        item = self._item_ref(event)
        if item is None:
            return
        if item.type != "reasoning":
            self._violate("part-kind", f"summary part in {item.type} item")
        if item.parts:
            self._violate("part-order", "summary part after content parts")
        if item.summaries and not item.summaries[-1].closed:
            self._violate("part-order", "summary part added while the previous one is open")
        if event.get("summary_index") != len(item.summaries):
            self._violate(
                "content-index",
                f"summary_index {event.get('summary_index')!r}, expected {len(item.summaries)}",
            )
        if _part_text(event.get("part")) != "":
            self._violate("part-text", "added summary part text is not empty")
        item.summaries.append(_Part(kind="summary_text"))

    def _on_summary_delta(self, event: Mapping[str, Any]) -> None:
        delta = self._checked_delta(event)
        slot = self._slot(event, "summary_index", summary=True)
        if slot is None:
            return
        if slot[1].done_text is not None:
            self._violate("part-order", "delta after the summary text done event")
        if delta is not None:
            slot[1].deltas.append(delta)

    def _on_summary_text_done(self, event: Mapping[str, Any]) -> None:
        slot = self._slot(event, "summary_index", summary=True)
        if slot is not None:
            self._text_done(slot[1], "summary_text", event.get("text"))

    def _on_summary_done(self, event: Mapping[str, Any]) -> None:
        slot = self._slot(event, "summary_index", summary=True)
        if slot is not None:
            self._part_done(slot[1], event.get("part"))

    # ------------------------------------------------------------------ function calls

    def _on_args_delta(self, event: Mapping[str, Any]) -> None:
        delta = self._checked_delta(event)
        item = self._item_ref(event)
        if item is None:
            return
        if item.type != "function_call":
            self._violate("part-kind", f"arguments delta in {item.type} item")
        if item.args_done is not None:
            self._violate("part-order", "arguments delta after function_call_arguments.done")
        if delta is not None:
            item.args.append(delta)

    def _on_args_done(self, event: Mapping[str, Any]) -> None:
        item = self._item_ref(event)
        if item is None:
            return
        if item.type != "function_call":
            self._violate("part-kind", f"arguments done in {item.type} item")
        if item.args_done is not None:
            self._violate("part-order", "second function_call_arguments.done")
        args = event.get("arguments")
        joined = "".join(item.args)
        if args != joined:
            self._violate(
                "arguments-mismatch", f"arguments {_short(args)} != joined deltas {_short(joined)}"
            )
        item.args_done = args if isinstance(args, str) else ""


def _open_ids(open_items: Mapping[int, _Item], shown: int = 3) -> str:
    """The first ``shown`` ids of ``open_items`` and their count (O(1) in their number)."""
    ids = [item.id for item in itertools.islice(open_items.values(), shown)]
    more = f" and {len(open_items) - shown} more" if len(open_items) > shown else ""
    return f"{len(open_items)} item(s) {ids}{more}"


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_responses_events(
    events: Iterable[Mapping[str, Any]],
    *,
    allow: Collection[str] = (),
    require: Collection[str] = (),
    validate_schema: bool = True,
    first_sequence_number: int = 0,
) -> ResponsesCheck:
    """Check a complete list of Responses stream events (dicts) against the strict grammar."""
    checker = ResponsesStreamChecker(
        allow=allow,
        require=require,
        validate_schema=validate_schema,
        first_sequence_number=first_sequence_number,
    )
    for event in events:
        checker.feed(event)
    return checker.finish()


def _validates(cls: type[pydantic.BaseModel], event: Mapping[str, Any]) -> bool:
    try:
        cls.model_validate(dict(event), strict=True)
    except pydantic.ValidationError:
        return False
    return True
