# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.logger``: a standard ``logging`` logger."""

import logging

logger = logging.getLogger("tensorrt_llm")
