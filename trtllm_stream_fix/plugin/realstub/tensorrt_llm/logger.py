# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.logger``: a standard ``logging`` logger with ``warning_once``."""

import logging
from typing import ClassVar


class _Logger(logging.Logger):
    _once: ClassVar[set] = set()

    def warning_once(self, msg: str, *args: object, key: object = None) -> None:
        marker = key if key is not None else msg
        if marker not in self._once:
            self._once.add(marker)
            self.warning(msg, *args)


logger = _Logger("tensorrt_llm")
