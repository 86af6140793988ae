# SPDX-License-Identifier: Apache-2.0
"""Strict checker for Chat Completions streams (``POST /v1/chat/completions``, stream).

Rules (codes in :data:`CHAT_RULES`): every chunk is a ``chat.completion.chunk`` with a
stable id; each choice gets exactly one finish_reason and nothing after it; reasoning
(``reasoning_content`` or ``reasoning``) is assembled apart from content, and Harmony markup
text in either is a warning (advisory: the checker sees text, not token ids, and a model may
write ``<|end|>`` with ordinary tokens); tool-call deltas carry id and name once (first
delta of an index) and their arguments are concatenated; the stream ends with
``data: [DONE]`` and nothing follows it. Error payloads (``{"error": ...}`` or
``{"object": "error", ...}``) are detected and end the stream as failed.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..jsonlimits import MAX_DEPTH, too_deep
from .findings import Findings, FindingsView
from .harmony_markup import MARKUP
from .responses import check_stream_id

__all__ = [
    "CHAT_ADVISORY_RULES",
    "CHAT_RULES",
    "ChatCheck",
    "ChatChoice",
    "ChatStreamChecker",
    "ChatToolCall",
]

#: Rule codes of the Chat Completions checker.
CHAT_RULES: dict[str, str] = {
    "schema": "a chunk is a JSON object of object chat.completion.chunk with a choices list",
    "chunk-id": "every chunk carries the same non-empty id",
    "choice-index": "every choice has an int index",
    "finish-twice": "a choice gets exactly one finish_reason",
    "finish-reason": "finish_reason is stop, length, tool_calls, content_filter or function_call",
    "finish-missing": "every choice ends with a finish_reason",
    "after-finish": "no content, reasoning or tool-call delta after the choice finished",
    "markup-leak": "no Harmony markup text (<|end|>, <|channel|>, ...) in content or reasoning "
    "(a warning unless required: the checker sees text, and a model may write markup as text)",
    "tool-call-index": "tool-call indexes count 0, 1, ... per choice",
    "tool-call-first": "the first delta of a tool call carries its id and function name",
    "tool-call-identity": "id and name are not changed by later deltas",
    "usage-total": "usage.total_tokens == prompt_tokens + completion_tokens",
    "done-missing": "the stream ends with data: [DONE]",
    "after-done": "nothing follows data: [DONE]",
}

#: Rules reported as warnings unless passed in ``require``.
CHAT_ADVISORY_RULES = frozenset(("markup-leak",))
_FINISH_REASONS = frozenset({"stop", "length", "tool_calls", "content_filter", "function_call"})


@dataclass
class ChatToolCall:
    """One tool call assembled from its deltas."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass
class ChatChoice:
    """One choice assembled from the stream."""

    index: int
    role: str | None = None
    content: str = ""
    reasoning: str = ""
    refusal: str = ""
    tool_calls: list[ChatToolCall] = field(default_factory=list)
    finish_reason: str | None = None


@dataclass
class ChatCheck:
    """Result of checking one Chat Completions stream."""

    violations: list[str]
    warnings: list[str]
    choices: list[ChatChoice]
    completion_id: str | None
    done: bool
    chunks: int
    error: dict[str, Any] | None = None
    usage: dict[str, Any] | None = None
    rules: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No violation, no error payload, ``[DONE]`` received."""
        return not self.violations and self.error is None and self.done

    @property
    def terminal(self) -> str | None:
        """``"completed"`` after ``[DONE]``, ``"failed"`` after an error payload, else None."""
        if self.error is not None:
            return "failed"
        return "completed" if self.done else None

    def has(self, rule: str) -> bool:
        """True if a violation of ``rule`` was reported."""
        return rule in self.rules


class ChatStreamChecker(FindingsView):
    """Incremental checker: :meth:`feed` each parsed chunk, :meth:`feed_done` on ``[DONE]``.

    ``allow``: rule codes reported as warnings instead of violations; the advisory rules
    (:data:`CHAT_ADVISORY_RULES`) are warnings unless named in ``require``.
    """

    def __init__(self, *, allow: Collection[str] = (), require: Collection[str] = ()) -> None:
        unknown = (set(allow) | set(require)) - CHAT_RULES.keys()
        if unknown:
            msg = f"unknown rule codes in allow: {sorted(unknown)}; known: {sorted(CHAT_RULES)}"
            raise ValueError(msg)
        self.allow = frozenset(allow) | (CHAT_ADVISORY_RULES - set(require))
        self._violations = Findings("violations")
        self._warnings = Findings("warnings")
        self.choices: dict[int, ChatChoice] = {}
        self.completion_id: str | None = None
        self.done = False
        self.error: dict[str, Any] | None = None
        self.usage: dict[str, Any] | None = None
        self._index = -1
        self._finished = False
        #: Text pieces per (choice index, attribute), joined by :meth:`_join` (linear in
        #: the stream, where ``str +=`` on an attribute copies the whole text per delta).
        self._pieces: dict[tuple[int, str], list[str]] = {}
        #: Argument pieces per tool call (the call object's id).
        self._arg_pieces: dict[int, tuple[ChatToolCall, list[str]]] = {}
        #: Tool calls by (choice index, call index): one lookup per delta.
        self._calls: dict[tuple[int, int], ChatToolCall] = {}

    def _join(self) -> None:
        """Write the joined text pieces into the choices and calls."""
        for (idx, attr), pieces in self._pieces.items():
            if len(pieces) > 1:
                pieces[:] = ["".join(pieces)]
            setattr(self.choices[idx], attr, pieces[0] if pieces else "")
        for call, pieces in self._arg_pieces.values():
            if len(pieces) > 1:
                pieces[:] = ["".join(pieces)]
            call.arguments = pieces[0] if pieces else ""

    def _violate(self, rule: str, message: str) -> None:
        where = "end of stream" if self._finished else f"chunk {self._index}"
        text = f"{where}: [{rule}] {message}"
        (self._warnings if rule in self.allow else self._violations).add(rule, text)

    def _warn(self, kind: str, message: str) -> None:
        self._warnings.add(kind, f"chunk {self._index}: {message}")

    @property
    def terminated(self) -> bool:
        """True after ``[DONE]`` or an error payload."""
        return self.done or self.error is not None

    def feed_done(self) -> None:
        """The ``data: [DONE]`` sentinel arrived."""
        self._index += 1
        if self.done:
            self._violate("after-done", "second [DONE]")
        self.done = True

    def feed(self, chunk: Any) -> None:
        """Check one parsed ``data:`` payload."""
        if self._finished:
            msg = "ChatStreamChecker.feed() called after finish()"
            raise RuntimeError(msg)
        self._index += 1
        if self.done:
            self._violate("after-done", "chunk after [DONE]")
            return
        if not isinstance(chunk, Mapping):
            self._violate("schema", "chunk is not a JSON object")
            return
        if too_deep(chunk, MAX_DEPTH):
            self._violate("schema", f"chunk nested deeper than {MAX_DEPTH} levels")
            return
        if chunk.get("error") or chunk.get("object") == "error":
            err = chunk.get("error")
            if isinstance(err, Mapping):
                self.error = dict(err)
            elif err:
                self.error = {"message": str(err)}
            else:
                self.error = {k: v for k, v in chunk.items() if k != "object"}
            return
        if chunk.get("object") != "chat.completion.chunk":
            self._violate("schema", f"object {chunk.get('object')!r} != chat.completion.chunk")
        self.completion_id = check_stream_id(
            self.completion_id, chunk.get("id"), "chunk-id", "chunk id", self._violate
        )
        usage = chunk.get("usage")
        if isinstance(usage, Mapping):
            self.usage = dict(usage)
            p, c, t = (usage.get(k) for k in ("prompt_tokens", "completion_tokens", "total_tokens"))
            if not (isinstance(p, int) and isinstance(c, int) and isinstance(t, int)) or t != p + c:
                self._violate(
                    "usage-total",
                    f"total_tokens {t!r} != prompt_tokens {p!r} + completion_tokens {c!r}",
                )
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            self._violate("schema", "choices is not a list")
            return
        for choice in choices:
            self._on_choice(choice)

    def _on_choice(self, choice: Any) -> None:
        if not isinstance(choice, Mapping):
            self._violate("schema", "choice is not an object")
            return
        idx = choice.get("index")
        if not isinstance(idx, int) or isinstance(idx, bool):
            self._violate("choice-index", f"choice index {idx!r} is not an int")
            return
        state = self.choices.setdefault(idx, ChatChoice(index=idx))
        delta = choice.get("delta")
        delta = delta if isinstance(delta, Mapping) else {}
        finished_before = state.finish_reason is not None
        has_payload = any(
            delta.get(k)
            for k in ("content", "reasoning_content", "reasoning", "refusal", "tool_calls")
        )
        if finished_before and has_payload:
            self._violate(
                "after-finish",
                f"delta for choice {idx} after finish_reason {state.finish_reason!r}",
            )
        role = delta.get("role")
        if role is not None:
            if state.role is not None and role != state.role:
                self._warn("role", f"role changed to {_short(role)}")
            state.role = role
        for key, attr in (
            ("content", "content"),
            ("reasoning_content", "reasoning"),
            ("reasoning", "reasoning"),
            ("refusal", "refusal"),
        ):
            value = delta.get(key)
            if value is None:
                continue
            if not isinstance(value, str):
                self._violate("schema", f"delta.{key} {value!r} is not a string")
                continue
            if "<|" in value:
                self._markup(key, value)
            self._pieces.setdefault((idx, attr), []).append(value)
        tool_calls = delta.get("tool_calls")
        if tool_calls is not None:
            if isinstance(tool_calls, list):
                for call in tool_calls:
                    self._on_tool_call(state, call)
            else:
                self._violate("schema", "delta.tool_calls is not a list")
        reason = choice.get("finish_reason")
        if reason is not None and not isinstance(reason, str):
            self._violate("finish-reason", f"finish_reason {_short(reason)} is not a string")
            reason = _short(reason)
        if reason is not None:
            if finished_before:
                self._violate(
                    "finish-twice",
                    f"choice {idx} finish_reason {reason!r} after {state.finish_reason!r}",
                )
            else:
                state.finish_reason = reason
            if reason not in _FINISH_REASONS:
                self._violate("finish-reason", f"unknown finish_reason {reason!r}")

    def _markup(self, key: str, value: str) -> None:
        # Text, not token ids: a model may write "<|end|>" with ordinary tokens (explaining
        # Harmony), which the parser rightly streams as content; so advisory, as for Responses.
        if any(m in value for m in MARKUP):
            self._violate("markup-leak", f"Harmony markup text in delta.{key}: {value[:60]!r}")

    def _on_tool_call(self, state: ChatChoice, call: Any) -> None:
        if not isinstance(call, Mapping):
            self._violate("schema", "tool call delta is not an object")
            return
        k = call.get("index")
        fn = call.get("function")
        fn = fn if isinstance(fn, Mapping) else {}
        cid, name, args = call.get("id"), fn.get("name"), fn.get("arguments")
        index = k if isinstance(k, int) and not isinstance(k, bool) else None
        existing = self._calls.get((state.index, index)) if index is not None else None
        if existing is None:
            if k != len(state.tool_calls):
                self._violate(
                    "tool-call-index", f"tool call index {k!r}, expected {len(state.tool_calls)}"
                )
            if not cid or not name:
                self._violate("tool-call-first", f"first delta of tool call {k!r} lacks id or name")
            existing = ChatToolCall(
                index=-1 if index is None else index, id=cid or None, name=name or None
            )
            state.tool_calls.append(existing)
            if index is not None:
                self._calls.setdefault((state.index, index), existing)
        else:
            for label, new, old in (("id", cid, existing.id), ("name", name, existing.name)):
                if not new:
                    continue
                if old is None:
                    setattr(existing, label, new)
                elif new != old:
                    self._violate("tool-call-identity", f"tool call {k} {label} {new!r} != {old!r}")
                else:
                    self._warn("tool-call-repeat", f"tool call {k} repeats {label}")
        if args is not None:
            if isinstance(args, str):
                self._arg_pieces.setdefault(id(existing), (existing, []))[1].append(args)
            else:
                self._violate("schema", f"tool call arguments {args!r} are not a string")

    def finish(self) -> ChatCheck:
        """End of stream: report a missing ``[DONE]`` or unfinished choices."""
        if not self._finished:
            self._finished = True
            self._join()
            if not (self._violations.counts | self._warnings.counts)["markup-leak"]:
                # Framing split over several deltas shows in the assembled text.
                for state in self.choices.values():
                    for key in ("content", "reasoning"):
                        text = getattr(state, key)
                        if "<|" in text and any(m in text for m in MARKUP):
                            self._violate("markup-leak", f"Harmony markup text in the joined {key}")
            if self.error is None:
                if not self.done:
                    self._violate("done-missing", "stream ended without data: [DONE]")
                for state in self.choices.values():
                    if state.finish_reason is None:
                        self._violate("finish-missing", f"choice {state.index} never finished")
        return self.result()

    def result(self) -> ChatCheck:
        """The result so far."""
        self._join()
        return ChatCheck(
            violations=list(self.violations),
            warnings=list(self.warnings),
            choices=[self.choices[k] for k in sorted(self.choices)],
            completion_id=self.completion_id,
            done=self.done,
            chunks=self._index + 1,
            error=self.error,
            usage=self.usage,
            rules=list(self.rules),
        )


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
