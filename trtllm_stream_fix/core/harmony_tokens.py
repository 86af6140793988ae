# SPDX-License-Identifier: Apache-2.0
"""Special token ids of the gpt-oss Harmony encoding (o200k_harmony), checked against it."""

from __future__ import annotations

import weakref
from typing import Any

from .errors import EncodingMismatchError

ENDOFTEXT = 199999
RETURN = 200002  # ends the final answer; a stop token of the request, trimmed upstream
CONSTRAIN = 200003
CHANNEL = 200005
START = 200006
END = 200007  # ends any other message
MESSAGE = 200008  # ends a header
CALL = 200012  # ends a tool call; a stop token of the request, trimmed upstream

STOP_TOKENS = frozenset((END, RETURN, CALL))

# Their text forms that give away Harmony markup leaking into streamed text.
MARKUP = (
    "<|start|>",
    "<|channel|>",
    "<|message|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|constrain|>",
)
TOKEN_TEXT: dict[int, str] = {
    START: "<|start|>",
    CHANNEL: "<|channel|>",
    MESSAGE: "<|message|>",
    END: "<|end|>",
    RETURN: "<|return|>",
    CALL: "<|call|>",
    CONSTRAIN: "<|constrain|>",
    ENDOFTEXT: "<|endoftext|>",
}


_VOCAB_SIZES: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()


def vocab_size(encoding: Any) -> int:
    """The number of token ids ``encoding`` decodes, after checking the ids above against it.

    Computed once per encoding object (a few dozen decodes), then cached. Raises
    ``EncodingMismatchError`` naming the first id whose text or role differs.
    """
    found = _VOCAB_SIZES.get(encoding)
    if found is None:
        _check_token_ids(encoding)
        found = _decodable_ids(encoding)
        _VOCAB_SIZES[encoding] = found
    return found


def _check_token_ids(encoding: Any) -> None:
    for token, text in TOKEN_TEXT.items():
        try:
            decoded = encoding.decode_utf8([token])
        except Exception as exc:
            raise EncodingMismatchError(f"token {token} ({text}) does not decode: {exc}") from exc
        if decoded != text:
            raise EncodingMismatchError(
                f"token {token} decodes to {decoded!r}, expected {text!r}: "
                f"encoding {getattr(encoding, 'name', encoding)!r} is not o200k_harmony"
            )
    stops = set(encoding.stop_tokens())
    if stops != STOP_TOKENS:
        raise EncodingMismatchError(
            f"encoding stop tokens {sorted(stops)} differ from {sorted(STOP_TOKENS)}"
        )


def _decodes(encoding: Any, token: int) -> bool:
    try:
        encoding.decode([token])
    except Exception:
        return False
    return True


def _decodable_ids(encoding: Any) -> int:
    """The first id that does not decode (binary search above the highest special id)."""
    low = max(TOKEN_TEXT) + 1
    high = 2 * low
    while _decodes(encoding, high):
        low, high = high, 2 * high
    while low < high:  # the first id that does not decode lies in [low, high]
        mid = (low + high) // 2
        if _decodes(encoding, mid):
            low = mid + 1
        else:
            high = mid
    return low
