# SPDX-License-Identifier: Apache-2.0
"""Serving glue shared by the trtllm-serve plugin and the upstream change set.

``processor`` is what a ``ResponsesStreamingProcessor`` delegates its Harmony path to: the
plugin's subclass calls it at run time, and ``upstream-pr`` converts the same source into
``tensorrt_llm/serve/harmony_stream/processor.py`` for upstream's class to call. One source,
two consumers: the run-time fix and the reviewed change cannot drift apart.
"""
