# SPDX-License-Identifier: Apache-2.0
"""Stand-in for the parts of TensorRT-LLM that the Responses streaming path touches.

Written for this project's CPU tests; it contains no upstream code. Module names, class
names, signatures and call-time lookups follow NVIDIA/TensorRT-LLM as read at commit
271a1edadcfa14c29b9fe4396b2cbee66b812b05 (``tensorrt_llm/serve/responses_utils.py``,
``tensorrt_llm/serve/openai_server.py``), with ``postprocess_handlers.py``,
``harmony_adapter.py`` (38134b130944ed5c037949456df20300126ec728),
``executor/postproc_worker.py`` and ``executor/result.py`` from the same era. Behaviour that
matters to the plugin is reproduced: the Harmony generator feeds a whole
``token_ids_diff`` to the parser and reads only the last delta, the trimmed stop token,
module-global lookups at call time, and pickling of the processor to PostprocWorkers.
"""

__version__ = "0.0.0+standin"
