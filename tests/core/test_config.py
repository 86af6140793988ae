# SPDX-License-Identifier: Apache-2.0
"""One reader of the ``TRTLLM_STREAM_FIX_*`` switches for Responses and chat."""

from __future__ import annotations

import pytest

from trtllm_stream_fix.core.config import StreamConfig
from trtllm_stream_fix.serving.chat_processor import chat_options

pytestmark = pytest.mark.cpu_only


@pytest.mark.parametrize(
    "env",
    [
        {"TRTLLM_STREAM_FIX_PREAMBLES": "bogus"},
        {"TRTLLM_STREAM_FIX_PARSER": "quick"},
        {"TRTLLM_STREAM_FIX_PREAMBLES": " Bogus "},
    ],
)
def test_a_bad_value_is_the_same_error_for_responses_and_chat(env):
    with pytest.raises(ValueError) as responses:
        StreamConfig.from_env(env)
    with pytest.raises(ValueError) as chat:
        chat_options(env)
    assert str(chat.value) == str(responses.value)
    (name,) = env
    assert str(chat.value).startswith(f"{name}=")


def test_chat_takes_preambles_and_parser_from_the_stream_config():
    env = {"TRTLLM_STREAM_FIX_PREAMBLES": "DROP", "TRTLLM_STREAM_FIX_PARSER": "reference"}
    config = StreamConfig.from_env(env)
    options = chat_options(env)
    assert (options.preambles, options.parser) == (config.preambles, config.parser)
    assert chat_options({}).preambles == "content"  # commentary: visible, in content
