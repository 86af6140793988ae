# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``msgspec.msgpack``: a decoder that refuses (MessagePack bodies are not used)."""

from typing import Any


class Decoder:
    def decode(self, data: bytes) -> Any:
        raise NotImplementedError("MessagePack request bodies need msgspec")
