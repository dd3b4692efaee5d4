"""Mutant: the softmax computed in NumPy and turned back into a tensor: the right values, but
autograd never sees that step, so no gradient reaches q, k or v (a layer built on it never
learns)."""

# expects: no-gradient
# loses: reference
import math

import numpy as np
import torch

from solutions.attention import attention_with_bias  # noqa: F401


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    s = scores.detach().cpu().numpy().astype(np.float64)
    top = np.max(s, axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(s - top)
    total = e.sum(axis=-1, keepdims=True)
    w = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    weights = torch.from_numpy(w).to(dtype=q.dtype, device=q.device)
    return weights @ v, weights
