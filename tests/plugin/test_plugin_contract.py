# SPDX-License-Identifier: Apache-2.0
"""Upstream's contract kept by the plugin, on every version line (issue 11, defects 1-6).

Against the stand-in (``tests/standin``), which reproduces the shapes read from the real
files: 271a1eda by default, 993c0eec with ``TRTLLM_STANDIN_LINE=993c0eec`` (in a fresh
interpreter). The same contract runs against the real files in ``test_plugin_real.py``.

1. A final-response call yields exactly one SSE event: no empty frame after the plugin
   ended a stream itself, every frame holds one event.
2. Sequence numbers are contiguous on every line, with or without egress restamping, inline
   and through pickling into post-processing workers.
3. Nothing follows a terminal event, even when the server raises after it.
4. A streamed response is stored like a non-streaming one, so ``previous_response_id``
   continues the conversation.
5. The ``.pth`` import hook patches even when another meta-path finder is inserted ahead.
6. The real-module stubs follow what the real files import.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "standin"))
import plugin_harness as harness

harness.use_standin()

from tensorrt_llm.serve import openai_server, responses_utils

from trtllm_stream_fix.checker.responses import check_responses_events
from trtllm_stream_fix.differential import openai_schema
from trtllm_stream_fix.differential.sdk_oracle import sdk_accumulate
from trtllm_stream_fix.plugin.realstub.drive import set_values
from trtllm_stream_fix.sim.model import generate_outputs, named_output

pytestmark = pytest.mark.cpu_only

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TRTLLM_STREAM_FIX"}
    env["PYTHONPATH"] = os.pathsep.join([str(harness.STANDIN_DIR), str(TESTS), str(REPO)])
    env.update(extra)
    return env


def _result(code: str, env: dict[str, str]) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, proc.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT ") :])


@pytest.mark.parametrize("split", [1, 20])
def test_no_empty_frame_and_one_event_per_frame_after_the_plugin_ended_a_stream(fixed, split):
    frames = harness.drive(harness.new_processor(), named_output("malformed_missing_start"), split)
    assert frames, "the stream produced nothing"
    assert all(frame.count("data: ") == 1 for frame in frames), frames
    events = harness.frames_to_events(frames)
    kinds = [e["type"] for e in events]
    assert kinds[-2:] == ["error", "response.failed"] and kinds.count("response.failed") == 1


def test_final_response_call_returns_exactly_one_event(fixed):
    processor = harness.new_processor()
    frames = harness.drive(processor, named_output("reasoning_answer"), 20)
    assert frames[-1].count("data: ") == 1
    assert json.loads(frames[-1].split("data: ", 1)[1])["type"] == "response.completed"


LINE_CODE = """
import json, os
import plugin_harness as h
h.use_standin()
import tensorrt_llm.serve.openai_server
from trtllm_stream_fix.plugin.installer import install
from trtllm_stream_fix.checker.responses import check_responses_events
from trtllm_stream_fix.differential.sdk_oracle import sdk_accumulate
from trtllm_stream_fix.sim.model import generate_outputs, named_output
report = install(mode="on")
outputs = [named_output("reasoning_answer"), named_output("malformed_missing_start"),
           named_output("length_cut"), *generate_outputs(6, seed=3)]
bad, runs = [], 0
for output in outputs:
    for split in (1, 20):
        for workers in (0, 2):
            events = h.stream(output, split, workers=workers)
            runs += 1
            check = check_responses_events(events)
            try:
                sdk_accumulate(events)
            except Exception as exc:
                bad.append(f"{output.name} k={split} w={workers}: SDK {exc}")
            if not check.ok:
                bad.append(f"{output.name} k={split} w={workers}: {check.violations[:1]}")
from trtllm_stream_fix.plugin.installer import OTHER_LINE
ours = [o for o in report.outcomes if o.detail != OTHER_LINE]  # the pre-class line's: absent
print("RESULT " + json.dumps({"statuses": sorted({o.status for o in ours}),
                              "runs": runs, "bad": bad[:5]}))
"""


@pytest.mark.parametrize("line", ["271a1eda", "993c0eec"])
def test_every_version_line_streams_contiguous_correct_events(line):
    result = _result(LINE_CODE, _env(TRTLLM_STANDIN_LINE=line))
    assert result["statuses"] == ["patched"], result
    assert result["runs"] == 36 and result["bad"] == [], result


def test_nothing_follows_a_terminal_event_when_the_server_raises_after_it(fixed):
    processor = harness.new_processor()
    frames = processor.get_initial_responses()
    frames += harness.drive(processor, named_output("length_cut"), 20)
    assert '"type":"response.incomplete"' in frames[-1]

    async def server_stream():
        for frame in frames:
            yield frame
        raise RuntimeError("metrics failed after the terminal event")

    async def client() -> list[str]:
        out: list[str] = []
        guard = openai_server.guard_responses_stream
        with pytest.raises(RuntimeError):
            async for chunk in guard(server_stream(), processor.get_stream_failed_events):
                out.append(chunk)
        return out

    events = harness.frames_to_events(asyncio.run(client()))
    assert events[-1]["type"] == "response.incomplete"
    assert check_responses_events(events).ok


def test_a_stream_failing_before_any_terminal_still_gets_error_and_failed(fixed):
    processor = harness.new_processor()
    frames = processor.get_initial_responses()

    async def server_stream():
        for frame in frames:
            yield frame
        raise RuntimeError("engine died")

    async def client() -> list[str]:
        out: list[str] = []
        with pytest.raises(RuntimeError):
            async for chunk in responses_utils.guard_responses_stream(
                server_stream(), processor.get_stream_failed_events
            ):
                out.append(chunk)
        return out

    kinds = [e["type"] for e in harness.frames_to_events(asyncio.run(client()))]
    assert kinds[-2:] == ["error", "response.failed"]


def test_streamed_response_is_stored_and_previous_response_id_continues(fixed, encoding):
    from tensorrt_llm.serve.openai_protocol import ResponsesRequest

    first = named_output("reasoning_answer")
    server = openai_server.OpenAIServer(harness.engine_for(first, 20))
    turn1 = ResponsesRequest(input="hi", stream=True, store=True)

    async def run(request) -> list[str]:
        generator = await server.openai_responses(request)
        frames = [frame async for frame in generator]
        await asyncio.sleep(0)  # the store task scheduled with the terminal frame
        return frames

    events = harness.frames_to_events(asyncio.run(run(turn1)))
    final = events[-1]["response"]
    stored = asyncio.run(server.conversation_store.load_response(final["id"]))
    assert stored is not None, "the streamed turn was not stored"
    assert [item.id for item in stored.output] == [item["id"] for item in final["output"]]
    history = asyncio.run(server.conversation_store.get_conversation_history(final["id"]))
    answer = final["output"][-1]["content"][0]["text"]
    assert any(answer in str(message) for message in history)

    prompts: list[list[int]] = []
    replay = harness.engine_for(named_output("short_answer"), 20)

    def engine(prompt, sampling_params):
        prompts.append(list(prompt))
        return replay(prompt, sampling_params)

    server.engine = engine
    turn2 = ResponsesRequest(
        input="and?", stream=True, store=True, previous_response_id=final["id"]
    )
    events2 = harness.frames_to_events(asyncio.run(run(turn2)))
    assert events2[-1]["type"] == "response.completed"
    assert answer in encoding.decode(prompts[0])  # turn 2 sees turn 1's answer


#: What a client saw in the terminal event and must find again in the stored copy.
STORED_FIELDS = ("id", "object", "created_at", "status", "output", "usage", "incomplete_details")


def stream_and_load_stored(output) -> tuple:
    """Stream ``output`` through the stand-in server (20 tokens per response, store on):
    the server, the terminal event's response and the stored copy of the turn."""
    from tensorrt_llm.serve.openai_protocol import ResponsesRequest

    server = openai_server.OpenAIServer(harness.engine_for(output, 20))

    async def streamed() -> list[str]:
        generator = await server.openai_responses(ResponsesRequest(input="hi", stream=True))
        frames = [frame async for frame in generator]
        await asyncio.sleep(0)  # the store task scheduled with the terminal frame
        return frames

    terminal = harness.frames_to_events(asyncio.run(streamed()))[-1]["response"]
    stored = asyncio.run(server.conversation_store.load_response(terminal["id"]))
    assert stored is not None, "the streamed turn was not stored"
    return server, terminal, stored


@pytest.mark.parametrize("name", ["reasoning_answer", "preamble_tool_call", "length_cut"])
def test_stored_streamed_response_is_what_the_client_saw_with_usage(fixed, name):
    """The stored copy of a streamed turn equals its terminal event's response (usage included,
    not null), and its usage equals the non-streaming response's for the same tokens."""
    from tensorrt_llm.serve.openai_protocol import ResponsesRequest

    server, terminal, stored = stream_and_load_stored(named_output(name))
    stored = stored.model_dump(mode="json", by_alias=True)
    assert terminal["usage"] is not None
    assert {k: stored.get(k) for k in STORED_FIELDS} == {k: terminal[k] for k in STORED_FIELDS}

    body = asyncio.run(server.openai_responses(ResponsesRequest(input="hi", store=False)))
    body = body.model_dump(mode="json", by_alias=True)
    assert set_values(stored["usage"]) == set_values(body["usage"]) != set_values({})
    assert stored.keys() == body.keys()  # the shape a stored non-streaming response has


USAGE_OUTPUTS = ["reasoning_answer", "preamble_tool_call", "length_cut", "malformed_missing_start"]


@pytest.mark.parametrize("workers", [0, 2], ids=["inline", "workers"])
@pytest.mark.parametrize("name", USAGE_OUTPUTS)
def test_non_streaming_usage_is_the_terminal_events(fixed, name, workers):
    """The same generation reports the same usage streamed (terminal event) and not streamed
    (the body), reasoning_tokens included: the machine's count of the same token ids, not
    upstream's non-streaming Harmony count (0)."""
    from tensorrt_llm.serve.openai_protocol import ResponsesRequest

    output = named_output(name)
    terminal = harness.stream(output, 20, workers=workers)[-1]["response"]
    server = openai_server.OpenAIServer(
        harness.engine_for(output, 20), num_postprocess_workers=workers
    )
    body = asyncio.run(server.openai_responses(ResponsesRequest(input="hi", store=False)))
    usage = body.model_dump(mode="json", by_alias=True)["usage"]
    assert set_values(usage) == set_values(terminal["usage"])
    if name == "reasoning_answer":  # the count the check is about is not zero
        assert usage["output_tokens_details"]["reasoning_tokens"] > 0


@pytest.mark.parametrize("cached", [3, "numpy"], ids=["int", "numpy"])
def test_the_terminal_usage_reports_the_prompt_tokens_the_engine_reports_cached(fixed, cached):
    """As upstream's usage does (``final_res.cached_tokens``), so the stream and the
    non-streaming body agree on ``input_tokens_details`` when the KV cache was reused."""
    import numpy

    count = numpy.int64(3) if cached == "numpy" else cached
    frames = harness.drive(harness.new_processor(), named_output("reasoning_answer"), 20, count)
    usage = harness.frames_to_events(frames)[-1]["response"]["usage"]
    assert usage["input_tokens_details"]["cached_tokens"] == 3
    assert usage["input_tokens"] == 3 and usage["total_tokens"] == 3 + usage["output_tokens"]
    plain = harness.drive(harness.new_processor(), named_output("reasoning_answer"), 20)
    assert harness.frames_to_events(plain)[-1]["response"]["usage"]["input_tokens_details"] == {
        **usage["input_tokens_details"],
        "cached_tokens": 0,
    }


def test_usage_wrapper_leaves_non_harmony_and_usage_less_responses_as_upstream_built_them():
    from types import SimpleNamespace

    from trtllm_stream_fix.plugin.replacements import create_response

    def built(final_res, use_harmony, request, model_name, response_creation_time, sampling):
        return SimpleNamespace(usage=final_res.usage), ["messages"]

    wrapped = create_response(built)
    res = SimpleNamespace(
        usage=object(), outputs=[SimpleNamespace(token_ids=[1], finish_reason="stop")]
    )
    assert wrapped(res, False, None, "m", 0, None)[0].usage is res.usage
    none = SimpleNamespace(usage=None, outputs=res.outputs)
    assert wrapped(none, False, None, "m", 0, sampling=None) == (
        SimpleNamespace(usage=None),
        ["messages"],
    )
    assert wrapped.__wrapped__ is built


def test_usage_wrapper_gives_a_usage_less_harmony_response_the_streams_usage(fixed):
    """early-2026's ``_create_response`` builds no usage: the body then reports the usage the
    plugin's stream reports for the same generation (prompt and cached tokens from the
    engine's result, output and reasoning tokens counted by the machine)."""
    from types import SimpleNamespace

    from trtllm_stream_fix.plugin.replacements import create_response
    from trtllm_stream_fix.sim.model import engine_responses

    output = named_output("reasoning_answer")
    terminal = harness.stream(output, 20, workers=0)[-1]["response"]["usage"]
    token_ids = [t for r in engine_responses(output, 20) for t in r.token_ids_diff]
    res = SimpleNamespace(
        usage=None,
        prompt_token_ids=[0] * terminal["input_tokens"],
        cached_tokens=0,
        outputs=[SimpleNamespace(token_ids=token_ids, finish_reason="stop")],
    )

    def built(final_res, use_harmony, request, model_name, response_creation_time, sampling):
        return SimpleNamespace(usage=final_res.usage), ["messages"]

    usage = create_response(built)(res, True, None, "m", 0, None)[0].usage
    assert set_values(usage) == set_values(terminal)
    assert usage["output_tokens_details"]["reasoning_tokens"] > 0


@pytest.mark.parametrize("by_alias", [True, False], ids=["by_alias", "plain_dump"])
def test_stored_streamed_tool_call_has_only_openai_keys_however_dumped(fixed, by_alias):
    """A stored streamed turn with a function call, dumped as a server may dump it (upstream's
    GET /v1/responses/{id} calls ``model_dump()`` without ``by_alias``), names every key
    (null ones included) as OpenAI does: the terminal event's keys, no Python alias such as
    ``async_``, whichever way it is dumped."""
    _, terminal, stored = stream_and_load_stored(named_output("preamble_tool_call"))
    dumped = stored.model_dump(mode="json", by_alias=by_alias)
    assert any(item["type"] == "function_call" for item in dumped["output"])
    # output items: every key OpenAI's; the response keeps upstream's extra envelope keys
    unknown = openai_schema.unknown_keys(dumped, kinds="item:")
    assert unknown == [], unknown
    assert [sorted(i) for i in dumped["output"]] == [sorted(i) for i in terminal["output"]]


def test_streamed_events_pass_the_strict_checker_and_the_sdk(fixed):
    for output in generate_outputs(4, seed=11):
        events = harness.stream(output, 20)
        assert check_responses_events(events).ok
        sdk_accumulate(events)


HOOK_CODE = """
import importlib.machinery, json, sys
from trtllm_stream_fix.plugin import bootstrap
bootstrap.register()

class AheadFinder:
    '''Another plugin's finder, inserted before ours after start-up.'''
    def find_spec(self, name, path=None, target=None):
        if name != "tensorrt_llm.serve.responses_utils":
            return None
        return importlib.machinery.PathFinder.find_spec(name, path)

sys.meta_path.insert(0, AheadFinder())
import tensorrt_llm.serve.openai_server
from trtllm_stream_fix.plugin.installer import is_active
print("RESULT " + json.dumps({"active": is_active()}))
"""


def test_import_hook_patches_even_behind_a_finder_inserted_ahead_of_it():
    assert _result(HOOK_CODE, _env())["active"] is True


STUB_CODE = """
import json, sys
import realstub
realstub.activate(sys.argv[1])
import tensorrt_llm.serve.responses_utils as r
print("RESULT " + json.dumps({"ok": r.OK, "placeholder": r.StreamingParseResult.__name__}))
"""


def test_realstub_follows_what_the_real_files_import(tmp_path):
    serve = tmp_path / "tensorrt_llm" / "serve"
    serve.mkdir(parents=True)
    for name in ("openai_protocol", "harmony_adapter", "postprocess_handlers"):
        (serve / f"{name}.py").write_text("")
    (serve / "responses_utils.py").write_text(
        "from tensorrt_llm.serve.tool_parser.core_types import StreamingParseResult\n"
        "from tensorrt_llm.tokenizer.deepseek_v4 import DeepseekV4Tokenizer\n"
        "from tensorrt_llm.inputs.utils import resolve_hf_chat_template\n"
        "OK = True\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", STUB_CODE, str(tmp_path)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
    )
    assert "RESULT " in proc.stdout, proc.stderr[-2000:]
    result = json.loads(proc.stdout.split("RESULT ", 1)[1])
    assert result == {"ok": True, "placeholder": "StreamingParseResult"}
