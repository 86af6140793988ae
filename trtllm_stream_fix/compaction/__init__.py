# SPDX-License-Identifier: Apache-2.0
"""Compaction for gpt-oss: ``/v1/responses/compact``, ``compaction`` input items, Codex's
``compaction_trigger`` and ``context_management``, the summary written by the model itself.

The sans-IO parts (``prompt``, ``window``, ``blob``, ``summary``, ``stream``) take the
encoding, the key and the generation function from the edges (``sim.compaction`` for the
simulated server). See docs/compaction.md. Its errors are in :mod:`.errors` (hierarchy
there), re-exported here.
"""

from .errors import CompactionError, CompactionKeyError, InvalidCompactionBlob

__all__ = ["CompactionError", "CompactionKeyError", "InvalidCompactionBlob"]
