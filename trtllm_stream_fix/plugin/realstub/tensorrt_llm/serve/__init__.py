# SPDX-License-Identifier: Apache-2.0
"""Stand-in for the ``tensorrt_llm.serve`` package: the serve helpers that are off the Harmony
Responses streaming path. ``realstub.activate`` loads ``openai_protocol``, ``harmony_adapter``,
``responses_utils`` and ``postprocess_handlers`` from the real source tree."""
