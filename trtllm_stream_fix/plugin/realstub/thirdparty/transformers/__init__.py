# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``transformers`` when it is not installed: ``responses_utils`` imports two
classes for annotations of its non-Harmony (chat template) path; an older ``openai_server``
imports ``AutoConfig`` for its model-config fallback, which the realstub path never calls."""


class AutoProcessor:
    pass


class PretrainedConfig:
    pass


class AutoConfig:
    pass
