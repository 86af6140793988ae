# SPDX-License-Identifier: Apache-2.0
"""Content text from token bytes, by openai-harmony 0.0.8's per-token UTF-8 rules.

An incomplete sequence waits for the next token; one invalid sequence per token becomes
U+FFFD and what follows it waits; bytes still pending when the message ends are decoded
with U+FFFD for what is not valid. ``fast_harmony`` decodes whole runs this way, and
``harmony_driver`` uses ``ContentDecoder`` on openai-harmony versions whose parser drops a
message's text after invalid UTF-8 (0.0.4).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

_TABLES: dict[str, list[bytes]] = {}
_REPLACEMENT = "\ufffd"


def token_bytes(encoding: Any) -> list[bytes]:
    """Bytes of every token id of ``encoding`` (index = id), built once per encoding name."""
    table = _TABLES.get(encoding.name)
    if table is None:
        decode = encoding._inner.decode_bytes if hasattr(encoding, "_inner") else None
        decode = decode or encoding.decode_bytes
        table = []
        while True:
            try:
                table.append(bytes(decode([len(table)])))
            except Exception:  # the first id outside the vocabulary ends it
                break
        _TABLES[encoding.name] = table
    return table


def decode_invalid(data: bytes) -> tuple[str, bytes]:
    """One content token's ``(delta, pending bytes)`` for invalid UTF-8 ``data``.

    ``data`` is the bytes pending before the token, then its own. As openai_harmony's parser
    decides: the valid prefix is the delta; then either the unfinished last character waits for the
    next token, or the first invalid sequence becomes U+FFFD and what follows it waits.
    """
    try:
        data.decode()
    except UnicodeDecodeError as exc:
        valid, end, reason = exc.start, exc.end, exc.reason
    else:
        return data.decode(), b""
    delta = data[:valid].decode()
    if reason == "unexpected end of data" and end == len(data):
        return delta, data[valid:]
    return delta + _REPLACEMENT, data[end:]


def decode_run(table: list[bytes], tokens: Sequence[int], pending: bytes) -> tuple[str, bytes]:
    """``(text, pending bytes)`` of content ``tokens`` decoded one by one after ``pending``."""
    deltas = []
    for token in tokens:
        data = pending + table[token]
        try:
            deltas.append(data.decode())
            pending = b""
        except UnicodeDecodeError:
            delta, pending = decode_invalid(data)
            deltas.append(delta)
    return "".join(deltas), pending


class ContentDecoder:
    """One message's content text, token by token (``push``), settled at its end (``close``)."""

    __slots__ = ("_pending", "_table")

    def __init__(self, table: list[bytes]) -> None:
        self._table = table
        self._pending = b""

    def push(self, token: int) -> str:
        """The text ``token`` (an id in the table) adds; "" while a sequence is unfinished."""
        delta, self._pending = decode_run(self._table, (token,), self._pending)
        return delta

    def close(self) -> str:
        """End the message: the text settled now (pending bytes, U+FFFD where invalid)."""
        settled = self._pending.decode("utf-8", "replace") if self._pending else ""
        self._pending = b""
        return settled
