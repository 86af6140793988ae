# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.serve.disagg_auth``: signatures of disaggregated-serving
fields. A request without those fields needs none, as upstream decides."""

from __future__ import annotations

from typing import Any


def request_requires_internal_disagg_auth(request: Any) -> bool:
    return getattr(request, "disaggregated_params", None) is not None


def validate_internal_disagg_request(key: Any, request: Any, headers: Any) -> None:
    if request_requires_internal_disagg_auth(request):
        raise ValueError("disaggregated requests are not emulated")


def validate_subagent_affinity(key: Any, request: Any, role: Any, headers: Any) -> None:
    return None
