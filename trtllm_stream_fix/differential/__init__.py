# SPDX-License-Identifier: Apache-2.0
"""The differential check behind ``check`` and ``doctor --selftest``: synthetic engine outputs
through the fixed and upstream-equivalent paths at every split, judged by the OpenAI SDK's own
accumulators, the published schema and the strict checkers."""
