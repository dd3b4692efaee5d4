"""Alternative: Meta's LLaMA RMSNorm, `self._norm(x.float()).type_as(x) * self.weight`: the
norm computed in float32 for every input (float64 too) and cast back to x's dtype. The result
keeps x's dtype, with float32's precision: the rms-norm check reads float64 results so."""

import torch

from solutions.modern_blocks import *  # noqa: F403


def _norm(x, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def rms_norm(x, weight=None, eps=1e-6):
    output = _norm(x.float(), eps).type_as(x)
    return output if weight is None else output * weight
