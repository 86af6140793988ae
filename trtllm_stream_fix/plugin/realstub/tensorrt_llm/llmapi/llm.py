# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.llmapi.llm.RequestOutput`` (an annotation only)."""


class RequestOutput:
    pass
