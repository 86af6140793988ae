# SPDX-License-Identifier: Apache-2.0
"""One compaction: render the prompt, let the model generate, seal the summary into a window.

The generation goes through whatever ``generate`` the edge hands in (the simulated engine,
or upstream's own engine in a real server): prompt tokens in, engine steps out
(``token_ids_diff``, ``finished``, ``finish_reason``, as TensorRT-LLM streams them).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from openai.types.responses import ResponseUsage

from ..defaults import new_context, random_id
from .blob import BlobCodec
from .errors import CompactionError
from .prompt import RenderedPrompt, compaction_prompt, turn_prompt
from .summary import final_text
from .window import Item, compaction_item, expand, record_for, user_messages


class EngineStep(Protocol):
    """One engine response of the summary's generation."""

    @property
    def token_ids_diff(self) -> Sequence[int]: ...
    @property
    def finished(self) -> bool: ...
    @property
    def finish_reason(self) -> str | None: ...


Generate = Callable[[RenderedPrompt], AsyncIterator[EngineStep]]


@dataclass(frozen=True)
class Compaction:
    """A finished compaction: the item, the window a client continues from, the usage of
    the summary's generation, and (when measured) the conversation's prompt tokens before
    and after."""

    item: Item
    window: list[Item]
    summary: str
    usage: ResponseUsage
    tokens_before: int | None = None
    tokens_after: int | None = None


class Compactor:
    """Compacts conversations with the model behind ``generate``, sealed by ``codec``."""

    def __init__(
        self,
        codec: BlobCodec,
        encoding: Any,
        generate: Generate,
        new_id: Callable[[str], str] = random_id,
        max_prompt_tokens: int | None = None,
    ) -> None:
        self.codec = codec
        self.encoding = encoding
        self.generate = generate
        self.new_id = new_id
        #: The context window: a longer compaction prompt is OpenAI's 400
        #: ``context_length_exceeded`` (None: unbounded).
        self.max_prompt_tokens = max_prompt_tokens

    async def prompt_tokens(
        self, items: Sequence[Mapping[str, Any]], instructions: str | None
    ) -> int:
        """Tokens of an ordinary turn's prompt over ``items`` (compaction items expanded)."""
        rendered = await self._render(turn_prompt, items, instructions)
        return len(rendered.tokens)

    async def steps(
        self,
        model: str,
        items: Sequence[Mapping[str, Any]],
        instructions: str | None,
        *,
        measure: bool = False,
    ) -> AsyncIterator[int | Compaction]:
        """The token count of each engine step of the summary, then the :class:`Compaction`
        of ``items`` (compaction items already expanded); ``measure`` renders the turn
        prompts before and after too (two more renderings: figures, not serving)."""
        prompt = await self._render(compaction_prompt, items, instructions)
        limit = self.max_prompt_tokens
        if limit is not None and len(prompt.tokens) > limit:
            raise CompactionError(
                f"the compaction prompt has {len(prompt.tokens)} tokens, more than the "
                f"context window ({limit}): compact earlier",
                param="input",
                code="context_length_exceeded",
            )
        tokens: list[int] = []
        finish_reason: str | None = None
        async for step in self.generate(prompt):
            tokens += step.token_ids_diff
            if step.token_ids_diff:
                yield len(step.token_ids_diff)
            if step.finished:
                finish_reason = step.finish_reason
                break
        context = new_context(model=model, num_prompt_tokens=len(prompt.tokens))
        summary, usage = final_text(context, tokens, finish_reason, self.encoding)
        record = record_for(summary, items, model)
        item = compaction_item(self.new_id("cmp"), self.codec.seal(record))
        window = [*user_messages(items, self.new_id), item]
        compaction = Compaction(item, window, record.summary, usage)
        if measure:
            compaction = dataclasses.replace(
                compaction,
                tokens_before=await self.prompt_tokens(items, instructions),
                tokens_after=await self.prompt_tokens(
                    expand(window, self.codec),  # type: ignore[arg-type]
                    instructions,
                ),
            )
        yield compaction

    async def compact(
        self,
        model: str,
        items: Sequence[Mapping[str, Any]],
        instructions: str | None,
        *,
        measure: bool = False,
    ) -> Compaction:
        """:meth:`steps` run to the end."""
        async for step in self.steps(model, items, instructions, measure=measure):
            if isinstance(step, Compaction):
                return step
        raise AssertionError("steps() always ends with a Compaction")  # pragma: no cover

    async def _render(
        self, build: Any, items: Sequence[Mapping[str, Any]], instructions: str | None
    ) -> RenderedPrompt:
        try:
            return await asyncio.to_thread(build, self.encoding, items, instructions)
        except Exception as exc:  # openai_harmony refuses what it cannot render
            raise CompactionError(f"the conversation cannot be rendered: {exc}") from None
