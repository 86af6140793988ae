# SPDX-License-Identifier: Apache-2.0
"""The chat post-processor replacements, driven the way openai_server drives upstream's:
inline (one args object per request) and in a PostprocWorker (args pickled once)."""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass, field
from typing import Any

import pytest

from trtllm_stream_fix.differential.chat import chat_visible, check_chat_payloads
from trtllm_stream_fix.differential.chat_oracle import sdk_accumulate_chat
from trtllm_stream_fix.plugin.chat import (
    chat_harmony_post_processor,
    chat_harmony_streaming_post_processor,
    chat_options,
)
from trtllm_stream_fix.sim.model import engine_responses, named_output

pytestmark = pytest.mark.cpu_only


@dataclass
class StreamOptions:
    include_usage: bool = False


@dataclass(kw_only=True)
class Args:
    """The fields of upstream's ``ChatCompletionPostprocArgs`` the replacements read."""

    model: str = "gpt-oss-20b"
    tools: Any = None
    tool_choice: Any = None
    num_prompt_tokens: int = 7
    first_iteration: bool = True
    stream_options: StreamOptions | None = None
    stream_response_id: str | None = None
    stream_created: int | None = None


@dataclass
class Output:
    token_ids: list[int]
    token_ids_diff: list[int]
    finish_reason: str | None


@dataclass
class Result:
    outputs: list[Output]
    _done: bool
    aborted: list[bool] = field(default_factory=list)

    def abort(self) -> None:
        self.aborted.append(True)


def results(name: str, split: int) -> list[Result]:
    out = named_output(name)
    sent: list[int] = []
    rs = []
    for r in engine_responses(out, split):
        sent += r.token_ids_diff
        rs.append(Result([Output(list(sent), list(r.token_ids_diff), r.finish_reason)], r.finished))
    return rs


def serve(name: str, split: int, args: Args, *, worker: bool = False) -> list[Any]:
    """What the client receives, as openai_server's generator yields it (``[DONE]`` last)."""
    if worker:
        args = pickle.loads(pickle.dumps(args))  # the copy a PostprocWorker keeps
    frames: list[str] = []
    for rsp in results(name, split):
        frames += chat_harmony_streaming_post_processor(rsp, args)
    frames.append("data: [DONE]\n\n")
    assert all(f.startswith("data: ") and f.endswith("\n\n") for f in frames)
    body = [f[len("data: ") : -2] for f in frames]
    return [b if b == "[DONE]" else json.loads(b) for b in body]


@pytest.mark.parametrize("worker", [False, True])
@pytest.mark.parametrize("name", ["preamble_tool_call", "analysis_tool_call", "length_cut"])
def test_stream_is_correct_at_every_interval(name: str, worker: bool) -> None:
    streams = [
        serve(name, s, Args(stream_response_id="chatcmpl-x"), worker=worker) for s in (1, 20)
    ]
    assert chat_visible(streams[0]) == chat_visible(streams[1])
    for payloads in streams:
        check = check_chat_payloads(payloads)
        assert check.ok, check.violations
        sdk_accumulate_chat(payloads)
        assert payloads.count("[DONE]") == 1


def test_usage_follows_stream_options() -> None:
    with_usage = serve("short_answer", 3, Args(stream_options=StreamOptions(include_usage=True)))
    assert "usage" in with_usage[-2]
    without = serve("short_answer", 3, Args(stream_options=None))
    assert not any(isinstance(p, dict) and "usage" in p for p in without)


def test_parse_error_aborts_and_later_responses_send_nothing() -> None:
    args = Args()
    rs = results("malformed_missing_start", 2)
    frames = [chat_harmony_streaming_post_processor(r, args) for r in rs]
    error_at = next(i for i, f in enumerate(frames) if any('"error"' in x for x in f))
    assert error_at < len(rs) - 1 and rs[error_at].aborted == [True]
    assert all(f == [] for f in frames[error_at + 1 :])


def test_non_streaming_equals_the_stream_joined() -> None:
    rsp = results("preamble_tool_call", 1000)[-1]
    completion = chat_harmony_post_processor(rsp, Args(stream_response_id="chatcmpl-x"))
    body = completion.model_dump()
    message = body["choices"][0]["message"]
    streamed = sdk_accumulate_chat(
        serve("preamble_tool_call", 20, Args(stream_response_id="chatcmpl-x"))
    )
    theirs = streamed.completion["choices"][0]["message"]
    assert message["content"] == theirs["content"]
    assert message["reasoning"] == theirs["reasoning"]
    assert [c["id"] for c in message["tool_calls"]] == [c["id"] for c in theirs["tool_calls"]]
    assert body["choices"][0]["finish_reason"] == "tool_calls"
    rsp = results("malformed_missing_start", 1000)[-1]
    with pytest.raises(ValueError, match="invalid Harmony token sequence"):
        chat_harmony_post_processor(rsp, Args())


def test_options_from_the_environment() -> None:
    assert chat_options({}).preambles == "content"
    assert chat_options({"TRTLLM_STREAM_FIX_PREAMBLES": "drop"}).preambles == "drop"
    field_env = {"TRTLLM_STREAM_FIX_REASONING_FIELD": "reasoning_content"}
    assert chat_options(field_env).reasoning_field == "reasoning_content"
    assert chat_options({"TRTLLM_STREAM_FIX_PARSER": "fast"}).parser == "fast"
    with pytest.raises(ValueError, match="PARSER"):
        chat_options({"TRTLLM_STREAM_FIX_PARSER": "quick"})
    with pytest.raises(ValueError, match="REASONING_FIELD"):
        chat_options({"TRTLLM_STREAM_FIX_REASONING_FIELD": "thoughts"})
