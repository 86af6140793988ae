# SPDX-License-Identifier: Apache-2.0
"""``encrypted_content``: the compaction record sealed with the server's Fernet key.

A blob is ``tsfc1.`` followed by a Fernet token (AES-128-CBC + HMAC-SHA256, from
``cryptography``) of the JSON record ``{"version", "summary", "retained", "model"}``. The
key is ``TRTLLM_STREAM_FIX_COMPACTION_KEY`` (``Fernet.generate_key()`` output); without it a
key is generated per process and a warning says that replicas, and restarts, must share one.
Anything that does not open with the key (tampered, truncated, sealed with another key,
another provider's blob, larger than :data:`MAX_BLOB_CHARS`) is :class:`InvalidCompactionBlob`
naming the item, never text for the prompt.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import jsonlimits
from ..core.config import COMPACTION_KEY_ENV
from .errors import CompactionKeyError, InvalidCompactionBlob

KEY_ENV = COMPACTION_KEY_ENV
PREFIX = "tsfc1."
VERSION = 1
#: Largest ``encrypted_content`` accepted (characters); a summary and its retained items fit
#: well inside it (``window.MAX_SUMMARY_CHARS``, ``window.MAX_RETAINED_BYTES``).
MAX_BLOB_CHARS = 256 * 1024

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CompactionRecord:
    """What a compaction item carries: the model's summary and the items kept verbatim."""

    summary: str
    retained: list[dict[str, Any]] = field(default_factory=list)
    model: str = ""
    version: int = VERSION

    def to_json(self) -> bytes:
        value = {
            "version": self.version,
            "summary": self.summary,
            "retained": self.retained,
            "model": self.model,
        }
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


_generated: bytes | None = None


def load_key(environ: Mapping[str, str] | None = None) -> bytes:
    """The Fernet key from :data:`KEY_ENV`, or, when it is unset, this process's own key
    (generated once, with a warning); :class:`CompactionKeyError` for a value that is not a
    Fernet key."""
    from cryptography.fernet import Fernet

    global _generated
    value = (os.environ if environ is None else environ).get(KEY_ENV, "").strip()
    if not value:
        if _generated is not None:
            return _generated
        logger.warning(
            "%s is unset: compaction items are sealed with a key generated for this process; "
            "they stop opening after a restart and on other replicas (set the same key on "
            "every replica: python -c 'from cryptography.fernet import Fernet; "
            "print(Fernet.generate_key().decode())')",
            KEY_ENV,
        )
        _generated = Fernet.generate_key()
        return _generated
    try:
        Fernet(value.encode())
    except (ValueError, TypeError):
        raise CompactionKeyError(
            f"{KEY_ENV} is not a Fernet key (32 url-safe base64-encoded bytes)"
        ) from None
    return value.encode()


class BlobCodec:
    """Seals records into ``encrypted_content`` strings and opens them again."""

    def __init__(self, key: bytes) -> None:
        from cryptography.fernet import Fernet

        self._fernet = Fernet(key)

    def seal(self, record: CompactionRecord) -> str:
        token = PREFIX + self._fernet.encrypt(record.to_json()).decode("ascii")
        if len(token) > MAX_BLOB_CHARS:  # window.py bounds the record well below this
            raise ValueError(f"compaction blob of {len(token)} characters exceeds the bound")
        return token

    def open(self, blob: Any, param: str) -> CompactionRecord:
        """The record in ``blob``; :class:`InvalidCompactionBlob` naming ``param`` otherwise."""
        from cryptography.fernet import InvalidToken

        if not isinstance(blob, str) or not blob:
            raise InvalidCompactionBlob(param, "expected a non-empty string")
        if len(blob) > MAX_BLOB_CHARS:
            raise InvalidCompactionBlob(param, f"longer than {MAX_BLOB_CHARS} characters")
        if not blob.startswith(PREFIX):
            raise InvalidCompactionBlob(param, "not a compaction item of this server")
        try:
            plain = self._fernet.decrypt(blob[len(PREFIX) :].encode("ascii"))
        except (InvalidToken, UnicodeEncodeError, ValueError):
            raise InvalidCompactionBlob(
                param,
                "the content does not verify (modified, truncated or sealed with another key)",
            ) from None
        return _record(plain, param)


def _record(plain: bytes, param: str) -> CompactionRecord:
    try:
        value = jsonlimits.loads(plain, max_depth=32)
    except jsonlimits.JSONLimitError:
        value = None
    if (
        not isinstance(value, dict)
        or value.get("version") != VERSION
        or not isinstance(value.get("summary"), str)
        or not isinstance(value.get("model"), str)
        or not isinstance(value.get("retained"), list)
        or not all(isinstance(item, dict) for item in value["retained"])
    ):
        raise InvalidCompactionBlob(param, "unsupported compaction record version or layout")
    return CompactionRecord(value["summary"], value["retained"], value["model"], VERSION)
