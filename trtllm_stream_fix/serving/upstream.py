# SPDX-License-Identifier: Apache-2.0
"""What serving reads from upstream's ``ResponsesStreamingProcessor``: the whole contract.

``HarmonyResponsesStream`` takes the owning processor and reads these attributes, nothing
else; ``sequence_number`` it also writes (the processor's running count, handed to the machine
before each ``feed`` and read back after).
"""

from __future__ import annotations

from typing import Any, Protocol


class UpstreamProcessor(Protocol):
    """The attributes of upstream's ``ResponsesStreamingProcessor`` that serving uses."""

    request: Any  # the ResponsesRequest (request_id, tools, store, previous_response_id, ...)
    sampling_params: Any  # temperature, top_p
    model_name: str
    response_creation_time: int
    sequence_number: int
    enable_store: bool
    conversation_store: Any  # upstream's ConversationHistoryStore, or None
