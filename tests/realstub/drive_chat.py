# SPDX-License-Identifier: Apache-2.0
"""``python -m realstub.drive_chat SOURCE_DIR [COUNT]``.

See ``trtllm_stream_fix.plugin.realstub.drive_chat``.
"""

import runpy

if __name__ == "__main__":
    runpy.run_module("trtllm_stream_fix.plugin.realstub.drive_chat", run_name="__main__")
