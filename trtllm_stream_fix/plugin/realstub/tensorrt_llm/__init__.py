# SPDX-License-Identifier: Apache-2.0
"""Stand-in for the ``tensorrt_llm`` package root (the real one loads native bindings).

Only a namespace: submodules are our stubs, except the Responses modules that
``realstub.activate`` loads from a TensorRT-LLM source tree.
"""
