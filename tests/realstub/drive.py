# SPDX-License-Identifier: Apache-2.0
"""``python -m realstub.drive SOURCE_DIR [COUNT]``.

See ``trtllm_stream_fix.plugin.realstub.drive``.
"""

import runpy

from trtllm_stream_fix.plugin.realstub.drive import *  # noqa: F403
from trtllm_stream_fix.plugin.realstub.drive import MODEL, PROMPT, new_streaming_processor, run_all  # noqa: F401

if __name__ == "__main__":
    runpy.run_module("trtllm_stream_fix.plugin.realstub.drive", run_name="__main__")
