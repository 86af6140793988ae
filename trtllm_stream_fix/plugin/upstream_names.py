# SPDX-License-Identifier: Apache-2.0
"""The dotted names of the upstream modules the plugin patches or reads, written once.

Imports nothing, so the import hook (``bootstrap``, loaded by the ``.pth`` file in every
interpreter) can watch them without loading the rest of the plugin.
"""

from __future__ import annotations

SERVE = "tensorrt_llm.serve"
RESPONSES_UTILS = f"{SERVE}.responses_utils"
OPENAI_SERVER = f"{SERVE}.openai_server"
POSTPROCESS_HANDLERS = f"{SERVE}.postprocess_handlers"
OPENAI_PROTOCOL = f"{SERVE}.openai_protocol"
SERVE_CLI = "tensorrt_llm.commands.serve"
SAMPLING_PARAMS = "tensorrt_llm.sampling_params"
