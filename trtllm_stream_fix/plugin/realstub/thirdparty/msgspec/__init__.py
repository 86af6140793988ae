# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``msgspec`` when it is not installed: ``openai_server`` builds a MessagePack
decoder at import for request bodies sent with ``X-TRTLLM-Msgpack: 1``, which the harness's
clients never send."""

from . import msgpack


class DecodeError(ValueError):
    pass


__all__ = ["DecodeError", "msgpack"]
