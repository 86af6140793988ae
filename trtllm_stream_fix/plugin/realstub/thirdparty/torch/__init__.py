# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``torch`` when it is not installed: ``openai_protocol`` names ``torch.Tensor``
in an annotation and builds tensors only for ``logit_bias`` and disaggregated logits."""


class Tensor:
    pass


float16 = "float16"
float32 = "float32"
bfloat16 = "bfloat16"


def zeros(*args, **kwargs):
    raise NotImplementedError("logit_bias needs torch")


def from_numpy(array):
    raise NotImplementedError("disaggregated logits need torch")
