# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures: the offline gpt-oss encoding and token helpers."""

from __future__ import annotations

import pytest

from trtllm_stream_fix.core import fastmodel
from trtllm_stream_fix.differential.responses import register_upstream_chat
from trtllm_stream_fix.encoding import load_gpt_oss_encoding

register_upstream_chat()  # the differential's "upstream" chat implementation


def pytest_addoption(parser):
    parser.addoption(
        "--validating",
        action="store_true",
        help="validate every model the core builds against its openai class (whole session)",
    )


def pytest_configure(config):
    # The default is the production path (models built by raw setters, unvalidated);
    # --validating checks every model against its openai class, so a type error fails.
    fastmodel.validating(config.getoption("--validating"))


@pytest.fixture(autouse=True)
def _validating_marker(request):
    """``@pytest.mark.validating``: that test runs with models validated, then restores."""
    if request.node.get_closest_marker("validating") is None:
        yield
        return
    was = fastmodel.is_validating()
    fastmodel.validating(True)
    try:
        yield
    finally:
        fastmodel.validating(was)


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
