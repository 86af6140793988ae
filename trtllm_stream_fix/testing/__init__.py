# SPDX-License-Identifier: Apache-2.0
"""Test support: synthetic gpt-oss outputs, the upstream-equivalent baseline, the
batch-size differential, the client-visible normaliser and the OpenAI SDK oracle."""
