# SPDX-License-Identifier: Apache-2.0
"""The real-module harness now ships in the package (``trtllm_stream_fix.plugin.realstub``,
used by ``doctor --selftest``); this name stays for the tests, benchmarks and tools."""

from trtllm_stream_fix.plugin.realstub import *  # noqa: F403
from trtllm_stream_fix.plugin.realstub import HERE, REAL_MODULES, THIRD_PARTY, activate  # noqa: F401
