# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.serve.metadata_server``: service discovery (etcd) is for
disaggregated deployments; a server started without a metadata config has none."""

from __future__ import annotations

from typing import Any


def create_metadata_server(config: Any) -> None:
    if config is not None:
        raise NotImplementedError("metadata servers (etcd) are not emulated")
    return None
