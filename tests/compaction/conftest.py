# SPDX-License-Identifier: Apache-2.0
"""A simulated server with compaction (a fixed Fernet key) for the compaction tests."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet

from trtllm_stream_fix.sim import EngineConfig, create_app, serve_in_thread


@pytest.fixture(scope="session")
def key() -> bytes:
    """The server's compaction key (tests open its blobs with it)."""
    return Fernet.generate_key()


@pytest.fixture(scope="module")
def base_url(key):
    with serve_in_thread(create_app(EngineConfig(stream_interval=20), compaction_key=key)) as url:
        yield url
