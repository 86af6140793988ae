# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.serve.disagg_auth``: signatures of disaggregated-serving fields.

As upstream decides: only the fields that name a peer to pull KV cache from
(``encoded_opaque_state``, ``ctx_info_endpoint``) need the orchestrator's signature; a
context-only or generation-only request without them needs none. The fake engine hands off no
opaque state, so its requests are never protected; a protected one is refused (no key here).
"""

from __future__ import annotations

from typing import Any


def request_requires_internal_disagg_auth(request: Any) -> bool:
    params = getattr(request, "disaggregated_params", None)
    return params is not None and (
        getattr(params, "encoded_opaque_state", None) is not None
        or getattr(params, "ctx_info_endpoint", None) is not None
    )


def validate_internal_disagg_request(key: Any, request: Any, headers: Any) -> None:
    if request_requires_internal_disagg_auth(request):
        raise ValueError("signed disaggregated request fields are not emulated")


def validate_subagent_affinity(key: Any, request: Any, role: Any, headers: Any) -> None:
    return None
