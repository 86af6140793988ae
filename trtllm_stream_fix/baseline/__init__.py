# SPDX-License-Identifier: Apache-2.0
"""What upstream TensorRT-LLM streams without the fix, rebuilt from its code: the Responses
stream (:mod:`.responses`) and the Chat Completions chunks (:mod:`.chat`). ``demo``, ``check``
and the simulated server's ``upstream`` mode compare against it."""
