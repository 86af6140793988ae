# SPDX-License-Identifier: Apache-2.0
"""Simulated gpt-oss engine (its synthetic model in :mod:`.model`) and local OpenAI Responses
server (no GPU needed). Its errors are in :mod:`.errors` (hierarchy there)."""

from .engine import EngineConfig, Generation, SimulatedEngine
from .errors import InjectedDisconnect, RequestError, TurnRequestError
from .server import create_app
from .threaded import serve_in_thread

__all__ = [
    "EngineConfig",
    "Generation",
    "InjectedDisconnect",
    "RequestError",
    "SimulatedEngine",
    "TurnRequestError",
    "create_app",
    "serve_in_thread",
]
