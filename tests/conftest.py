# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures: the offline gpt-oss encoding and token helpers."""

from __future__ import annotations

import pytest

from trtllm_stream_fix.core import fastmodel
from trtllm_stream_fix.encoding import load_gpt_oss_encoding
from trtllm_stream_fix.testing import chat_baseline  # noqa: F401 - the "upstream" chat impl


def pytest_configure(config):
    # Every model the core builds is validated against its openai class: type errors fail.
    fastmodel.validating(True)


@pytest.fixture(scope="session")
def encoding():
    return load_gpt_oss_encoding()


@pytest.fixture(scope="session")
def tokens(encoding):
    """Encode Harmony text (special tokens allowed) to a token list."""

    def encode(text: str) -> list[int]:
        return list(encoding.encode(text, allowed_special="all"))

    return encode


@pytest.fixture
def fixed(monkeypatch):
    """The plugin installed for one test (``TRTLLM_STREAM_FIX`` unset), removed after it."""
    from trtllm_stream_fix.plugin.installer import install, uninstall

    monkeypatch.delenv("TRTLLM_STREAM_FIX", raising=False)
    uninstall()
    install()
    yield
    uninstall()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    """A ``redis-server`` of this session's own, without persistence (skipped without one)."""
    from trtllm_stream_fix.testing.redis_server import RedisServer, missing

    reason = missing()
    if reason:
        pytest.skip(reason)
    with RedisServer(tmp_path_factory.mktemp("redis")) as server:
        yield server
