# SPDX-License-Identifier: Apache-2.0
"""Run a token list through ours or the baseline with explicit engine responses.

``trtllm_stream_fix.testing.streams`` with the differential's ``make_stream``, so the tests
can run the upstream-equivalent baseline too (upstream's copy of the tests runs ours only).
"""

from __future__ import annotations

import functools

from trtllm_stream_fix.differential.responses import make_stream
from trtllm_stream_fix.testing import streams
from trtllm_stream_fix.testing.streams import of_type, split, text_by_item

run = functools.partial(streams.run, make=make_stream)

__all__ = ["of_type", "run", "split", "text_by_item"]
