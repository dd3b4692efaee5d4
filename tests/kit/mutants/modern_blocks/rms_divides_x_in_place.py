"""Mutant: rms_norm divides x in place (x /= rms): right values, but the caller's x is changed,
so a LLaMA block's residual x + attn(norm(x)) adds the normalised x."""

# expects: changed-input
# loses: rms-norm
import torch

from solutions.modern_blocks import RMSNorm, SwiGLU  # noqa: F401


def rms_norm(x, weight=None, eps=1e-6):
    x /= torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)
    return x * weight if weight is not None else x
