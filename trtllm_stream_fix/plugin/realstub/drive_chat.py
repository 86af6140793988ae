# SPDX-License-Identifier: Apache-2.0
"""Drive the real ``postprocess_handlers`` Harmony chat post-processors as ``openai_server``
does, with the plugin installed; print one ``RESULT <json>`` line.

Usage: ``python -m trtllm_stream_fix.plugin.realstub.drive_chat SOURCE_DIR [COUNT]``
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
from typing import Any

from . import activate

MODEL = "gpt-oss-20b"


def run_chat(outputs: list[Any]) -> dict[str, Any]:
    """Per output: 1 and 20 tokens per response, inline and pickled; counts of the checks."""
    from tensorrt_llm.serve import openai_protocol, postprocess_handlers

    from ...differential.chat import (
        chat_visible,
        check_chat_payloads,
        completion_view,
        stream_view,
        strict_chat_violations,
    )
    from ...differential.chat_oracle import SDKRejected, sdk_accumulate_chat
    from ...differential.chat_requests import (
        chat_args,
        finished_result,
        sse_payloads,
        stream_frames,
    )

    tally: dict[str, Any] = {"streams": 0, "strict": 0, "sdk": 0, "identical": 0}
    tally.update(nonstreaming=0, raised=0, examples=[], response_type=None)
    examples = tally["examples"]
    post = postprocess_handlers.chat_harmony_streaming_post_processor
    args_type = postprocess_handlers.ChatCompletionPostprocArgs
    for output in outputs:
        reference = None
        answer_args = chat_args(openai_protocol, args_type, False)
        try:
            answer = postprocess_handlers.chat_harmony_post_processor(
                finished_result(output), answer_args
            )
            tally["response_type"] = f"{type(answer).__module__}.{type(answer).__qualname__}"
            expected = completion_view(json.loads(json.dumps(answer.model_dump(), default=str)))
        except ValueError as exc:  # a generation that cannot complete: the stream's error
            expected = ("error", str(exc))
        except Exception as exc:  # the unpatched code can raise; counted, not fatal
            expected = ("raised", repr(exc))
        for split in (1, 20):
            for worker in (False, True):
                args = chat_args(openai_protocol, args_type, True)
                if worker:
                    args = pickle.loads(pickle.dumps(args))
                tally["streams"] += 1
                try:
                    frames = stream_frames(post, output, split, args)
                except Exception as exc:  # the stream ends here: it counts as raised only
                    tally["raised"] += 1
                    if len(examples) < 5:
                        examples.append(f"{output.name} @ {split}: raised {exc!r:.200}")
                    continue
                payloads = sse_payloads(frames)
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

    from ...sim.model import generate_outputs
    from ..installer import install, uninstall

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
