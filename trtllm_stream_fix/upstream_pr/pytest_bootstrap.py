# SPDX-License-Identifier: Apache-2.0
"""pytest plugin for ``upstream-pr --check``: import the patched tree before collection.

Loaded with ``-p`` in the test subprocess; ``TRTLLM_STREAM_FIX_UPSTREAM_ROOT`` names the
patched copy, whose real Responses modules (and the new package) ``harness.activate`` loads.
"""

from __future__ import annotations

import os
from pathlib import Path

from .harness import activate

activate(Path(os.environ["TRTLLM_STREAM_FIX_UPSTREAM_ROOT"]))
