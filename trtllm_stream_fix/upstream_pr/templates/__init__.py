# SPDX-License-Identifier: Apache-2.0
"""Modules written for TensorRT-LLM itself, converted by ``upstream-pr`` like the core.

``processor`` and ``encoding`` become modules of the new upstream package; ``tests/`` holds
the upstream-only test files. They import the core with relative imports, exactly as the
core does, so the same namespace conversion applies.
"""
