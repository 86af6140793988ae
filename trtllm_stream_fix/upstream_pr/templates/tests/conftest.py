# SPDX-License-Identifier: Apache-2.0
"""Fixtures: the gpt-oss Harmony encoding and a Harmony-markup encoder."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ....core import fastmodel
from ..encoding import load_gpt_oss_encoding


def pytest_configure(config: pytest.Config) -> None:
    """Every model the event machine builds is validated against its openai class."""
    config.addinivalue_line("markers", "validating: models validated (on for every test here)")
    fastmodel.validating(True)


@pytest.fixture(scope="session")
def encoding() -> Any:
    """The gpt-oss encoding; skips when its vocabulary cannot be loaded (no network)."""
    try:
        return load_gpt_oss_encoding()
    except Exception as exc:  # the vocabulary download failed
        pytest.skip(f"gpt-oss Harmony encoding unavailable: {exc}")


@pytest.fixture(scope="session")
def tokens(encoding: Any) -> Callable[[str], list[int]]:
    """Encode Harmony text (special tokens allowed) to a token list."""

    def encode(text: str) -> list[int]:
        return list(encoding.encode(text, allowed_special="all"))

    return encode
