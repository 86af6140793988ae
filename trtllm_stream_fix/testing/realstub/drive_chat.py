# SPDX-License-Identifier: Apache-2.0
"""Drive the real ``postprocess_handlers`` Harmony chat post-processors as ``openai_server``
does, with the plugin installed; print one ``RESULT <json>`` line.

Usage: ``python -m trtllm_stream_fix.testing.realstub.drive_chat SOURCE_DIR [COUNT]``
(``run_chat`` is what ``doctor --selftest`` calls once the modules are imported). Per
synthetic output, at 1 and 20 tokens per engine response, inline and with the args pickled
to an emulated PostprocWorker: upstream's own ``ChatCompletionPostprocArgs``
(``from_request`` of a real ``ChatCompletionRequest``), then
``postprocess_handlers.chat_harmony_streaming_post_processor(res, args)`` per engine response
and ``data: [DONE]`` at the end, as ``chat_harmony``'s generator yields them; and
``chat_harmony_post_processor(res, args).model_dump()`` for the non-streaming body.
"""

from __future__ import annotations

import json
import pickle
import sys
import traceback
from types import SimpleNamespace
from typing import Any

from . import activate
from .drive import Result

MODEL = "gpt-oss-20b"


def _request(protocol: Any, stream: bool) -> Any:
    body: dict[str, Any] = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "hi"}],
        "stream": stream,
    }
    if stream:
        body["stream_options"] = {"include_usage": True}
    return protocol.ChatCompletionRequest(**body)


def _args(protocol: Any, args_type: Any, stream: bool) -> Any:
    """Upstream's post-processor args as ``chat_harmony`` builds them (``from_request``), or
    built by hand where the module has no request type (a stand-in)."""
    if hasattr(protocol, "ChatCompletionRequest") and hasattr(args_type, "from_request"):
        args = args_type.from_request(_request(protocol, stream))
    else:
        args = args_type(model=MODEL)
        if stream and hasattr(args, "stream_options"):
            args.stream_options = SimpleNamespace(include_usage=True)
    args.num_prompt_tokens = 7
    return args


def _payloads(frames: list[str]) -> list[Any]:
    out: list[Any] = []
    for frame in frames:
        assert frame.startswith("data: ") and frame.endswith("\n\n"), frame
        data = frame[len("data: ") : -2]
        out.append("[DONE]" if data == "[DONE]" else json.loads(data))
    return out


def run_chat(outputs: list[Any]) -> dict[str, Any]:
    """Per output: 1 and 20 tokens per response, inline and pickled; counts of the checks."""
    from tensorrt_llm.serve import openai_protocol, postprocess_handlers

    from ..chat_differential import (
        chat_visible,
        check_chat_payloads,
        completion_view,
        stream_view,
        strict_chat_violations,
    )
    from ..chat_oracle import SDKRejected, sdk_accumulate_chat
    from ..synthetic import engine_responses

    tally: dict[str, Any] = {"streams": 0, "strict": 0, "sdk": 0, "identical": 0}
    tally.update(nonstreaming=0, raised=0, examples=[], response_type=None)
    examples = tally["examples"]
    post = postprocess_handlers.chat_harmony_streaming_post_processor
    args_type = postprocess_handlers.ChatCompletionPostprocArgs
    for output in outputs:
        reference = None
        answer_args = _args(openai_protocol, args_type, False)
        result = Result(prompt_token_ids=[1] * 7)
        for response in engine_responses(output, 10**9):
            result.apply(response.token_ids_diff, response.finished, response.finish_reason)
        try:
            answer = postprocess_handlers.chat_harmony_post_processor(result, answer_args)
            tally["response_type"] = f"{type(answer).__module__}.{type(answer).__qualname__}"
            expected = completion_view(json.loads(json.dumps(answer.model_dump(), default=str)))
        except ValueError as exc:  # a generation that cannot complete: the stream's error
            expected = ("error", str(exc))
        except Exception as exc:  # the unpatched code can raise; counted, not fatal
            expected = ("raised", repr(exc))
        for split in (1, 20):
            for worker in (False, True):
                args = _args(openai_protocol, args_type, True)
                if worker:
                    args = pickle.loads(pickle.dumps(args))
                result = Result(prompt_token_ids=[1] * 7)
                frames: list[str] = []
                tally["streams"] += 1
                try:
                    for response in engine_responses(output, split):
                        result.apply(
                            response.token_ids_diff, response.finished, response.finish_reason
                        )
                        frames += post(result, args)
                except Exception as exc:  # the stream ends here, as the server's would
                    tally["raised"] += 1
                    if len(examples) < 5:
                        examples.append(f"{output.name} @ {split}: raised {exc!r:.200}")
                frames.append("data: [DONE]\n\n")
                payloads = _payloads(frames)
                visible = chat_visible(payloads)
                reference = reference or visible
                tally["identical"] += visible == reference
                check = check_chat_payloads(payloads)
                violations = strict_chat_violations(check)  # an error payload may end it
                if not violations:
                    tally["strict"] += 1
                elif len(examples) < 5:
                    examples.append(f"{output.name} @ {split}: {violations[:1]}")
                try:
                    sdk_accumulate_chat(payloads)
                    tally["sdk"] += 1
                except SDKRejected as exc:
                    if len(examples) < 5:
                        examples.append(f"{output.name} @ {split}: SDK {exc}")
                tally["nonstreaming"] += stream_view(check) == expected
    return tally


def main(root: str, count: int) -> dict[str, Any]:
    activate(root)
    from tensorrt_llm.serve import postprocess_handlers  # noqa: F401

    from ...plugin.installer import install, uninstall
    from ..synthetic import generate_outputs

    report = install()
    tally = run_chat(list(generate_outputs(count, seed=300)))
    response_type = tally.pop("response_type")
    examples = tally.pop("examples")
    restored = uninstall()
    return {
        "install": [(o.target, o.status) for o in report.outcomes],
        "uninstall": [(o.target, o.status) for o in restored.outcomes],
        "response_type": response_type,
        "tally": tally,
        "examples": examples,
    }


if __name__ == "__main__":
    try:
        result = main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 20)
    except Exception:
        result = {"error": traceback.format_exc()}
    print("RESULT " + json.dumps(result))
