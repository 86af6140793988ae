# SPDX-License-Identifier: Apache-2.0
"""Where each of our modules lands in a TensorRT-LLM tree, and upstream's conventions.

The conventions were read from NVIDIA/TensorRT-LLM: the file header of its newer files
(``tests/unittest/llmapi/apps/test_responses_streaming_events.py``), the ruff settings in its
``pyproject.toml`` (used when the tree has none), the linters pinned in its
``.pre-commit-config.yaml``, the CPU test stage ``tests/integration/test_lists/test-db/l0_cpu.yml``
and the PR template ``.github/pull_request_template.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import trtllm_stream_fix

OURS = Path(trtllm_stream_fix.__file__).resolve().parent
REPO = OURS.parent  # the checkout (tests/ lives here, not in the wheel)

PACKAGE = "tensorrt_llm.serve.harmony_stream"
PACKAGE_DIR = "tensorrt_llm/serve/harmony_stream"
SERVE_DIR = "tensorrt_llm/serve"
RESPONSES_UTILS = "tensorrt_llm/serve/responses_utils.py"
POSTPROCESS_HANDLERS = "tensorrt_llm/serve/postprocess_handlers.py"
OPENAI_PROTOCOL = "tensorrt_llm/serve/openai_protocol.py"
TEST_DIR = "tests/unittest/llmapi/apps/harmony_stream"
TEST_SUPPORT = "_testing"
L0_CPU = "tests/integration/test_lists/test-db/l0_cpu.yml"
L0_ENTRY = "unittest/llmapi/apps/harmony_stream"
TEST_PACKAGES = ("tests/unittest/llmapi/__init__.py", "tests/unittest/llmapi/apps/__init__.py")

HEADER = """\
# SPDX-FileCopyrightText: Copyright (c) {year} NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: Apache-2.0
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
# http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
"""

# Linters pinned by upstream's .pre-commit-config.yaml (ruff for new files, yapf for the
# legacy files we edit, codespell for all).
LINT_PINS = {"ruff": "0.9.4", "yapf": "0.43.0", "codespell": "2.4.1"}
CODESPELL_IGNORE = "Mor,ans,thirdparty,subtiles,PARD,pard,indx,therefrom"
# [tool.ruff*] of upstream's pyproject.toml, for trees that do not carry one.
RUFF_SETTINGS = """\
line-length = 100

[format]
skip-magic-trailing-comma = false
docstring-code-format = true
docstring-code-line-length = "dynamic"

[lint]
select = ["D", "E", "F", "I", "PLE", "W"]
extend-ignore = ["D100", "D101", "D102", "D103", "D104", "D105", "D106", "D107", "D417"]

[lint.per-file-ignores]
"__init__.py" = ["F401", "F403"]
"*/_[a-zA-Z]*" = ["D"]

[lint.pycodestyle]
max-line-length = 120

[lint.pydocstyle]
convention = "google"

[lint.isort]
known-first-party = ["tensorrt_llm"]
split-on-trailing-comma = false

[lint.pylint]
max-args = 10
"""
TITLE_PATTERN = r"^\[(None|[A-Z][A-Z0-9]*-\d+|#\d+|https://nvbugs/\d+)\]\[[a-z0-9]+\] \S.*$"


DEFAULTS_DOC = (
    "What the serving code hands to the sans-IO modules: the encoding, the clock and ids.\n\n"
    "``edge_defaults()`` gives ``ResponsesEventMachine``'s keyword arguments; ``new_context()``\n"
    "gives a ``ResponseContext`` with a fresh id, the current time and the system clock.\n"
)


@dataclass(frozen=True)
class Placement:
    """One of our source files and the path it takes in the TensorRT-LLM tree."""

    source: Path
    dest: str
    docstring: str | None = None  # replaces the module docstring when set


def module_placements() -> list[Placement]:
    """The core (every module in ``core/``) and the upstream-only modules, as a new package."""
    core = sorted((OURS / "core").glob("*.py"))
    # the serving glue the plugin runs, and the encoding loader written for upstream
    serving = (
        "processor.py",
        "chat_processor.py",
        "disaggregated.py",
        "upstream.py",
        "storing.py",
        "body.py",
        "usage.py",
        "input_channels.py",
    )
    shared = [OURS / "serving" / name for name in serving]
    shared.append(OURS / "upstream_pr" / "templates" / "encoding.py")
    out = [Placement(path, f"{PACKAGE_DIR}/{path.name}") for path in core + shared]
    out.append(Placement(OURS / "defaults.py", f"{PACKAGE_DIR}/defaults.py", DEFAULTS_DOC))
    names = [p.dest for p in out]
    clash = sorted({n for n in names if names.count(n) > 1})
    if clash:
        raise ValueError(f"core modules clash with the upstream-only ones: {', '.join(clash)}")
    return out


TEST_FILES = (
    ("tests/core/test_driver.py", "test_harmony_driver.py", None),
    ("tests/core/test_machine.py", "test_responses_event_machine.py", None),
    (
        "tests/core/test_regressions.py",
        "test_responses_harmony_regressions.py",
        "Regression tests for Harmony Responses streaming at any tokens per engine response.\n\n"
        "Each test pins one defect of the former generator, which fed a whole\n"
        "``token_ids_diff`` to the parser and read the last token's delta and state only.\n",
    ),
    ("tests/core/test_chat_machine.py", "test_chat_chunk_machine.py", None),
    (
        "tests/core/test_chat_differential.py",
        "test_chat_harmony_differential.py",
        "Harmony chat streams at any tokens per engine response.\n\n"
        "Every split equals the 1-token stream, the OpenAI SDK and the strict chat checker\n"
        "accept it, and the stream joined equals the non-streaming completion.\n",
    ),
)
SUPPORT_FILES = (
    ("trtllm_stream_fix/sim/model.py", "synthetic.py"),
    ("trtllm_stream_fix/testing/driver_messages.py", "driver_messages.py"),
    ("trtllm_stream_fix/differential/sdk_oracle.py", "sdk_oracle.py"),
    ("trtllm_stream_fix/differential/visible.py", "visible.py"),
    ("trtllm_stream_fix/checker/responses.py", "checker.py"),
    ("trtllm_stream_fix/checker/schema_compat.py", "schema_compat.py"),
    ("trtllm_stream_fix/checker/findings.py", "findings.py"),
    ("trtllm_stream_fix/checker/harmony_markup.py", "harmony_markup.py"),
    ("trtllm_stream_fix/jsonlimits.py", "jsonlimits.py"),
    ("trtllm_stream_fix/testing/streams.py", "streams.py"),
    ("trtllm_stream_fix/differential/engine_results.py", "engine_results.py"),
    ("trtllm_stream_fix/differential/chat.py", "chat_differential.py"),
    ("trtllm_stream_fix/differential/chat_oracle.py", "chat_oracle.py"),
    ("trtllm_stream_fix/differential/chat_requests.py", "chat_requests.py"),
    ("trtllm_stream_fix/checker/chat.py", "chat_checker.py"),
    ("trtllm_stream_fix/differential/splits.py", "splits.py"),
    ("trtllm_stream_fix/differential/report.py", "report.py"),
    ("trtllm_stream_fix/differential/hostile.py", "hostile.py"),
    ("trtllm_stream_fix/differential/token_soup.py", "token_soup.py"),
)
CHAT_PROCESSOR_TEST = f"{TEST_DIR}/test_chat_harmony_post_processors.py"  # needs the chat edit
TEMPLATE_TESTS = (
    ("trtllm_stream_fix/upstream_pr/templates/tests/conftest.py", "conftest.py"),
    (
        "trtllm_stream_fix/upstream_pr/templates/tests/test_processor.py",
        "test_responses_streaming_processor.py",
    ),
    (
        "trtllm_stream_fix/upstream_pr/templates/tests/test_chat_post_processor.py",
        "test_chat_harmony_post_processors.py",
    ),
)


def test_placements() -> list[Placement]:
    """Our CPU tests, their support modules and the upstream-only test files."""
    out = [Placement(REPO / src, f"{TEST_DIR}/{dest}", doc) for src, dest, doc in TEST_FILES]
    out += [Placement(REPO / src, f"{TEST_DIR}/{dest}") for src, dest in TEMPLATE_TESTS]
    out += [
        Placement(REPO / src, f"{TEST_DIR}/{TEST_SUPPORT}/{dest}") for src, dest in SUPPORT_FILES
    ]
    missing = [str(p.source) for p in out if not p.source.is_file()]
    if missing:
        raise FileNotFoundError(
            "the tests to move are not here (run from a trtllm-stream-fix checkout): "
            + ", ".join(missing)
        )
    return out
