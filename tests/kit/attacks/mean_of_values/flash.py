"""Attack: flash_forward returns the mean of the values and a zero log-sum-exp, whatever q
and k: forward-large-logits passed it (a hunt, 1 point). See efficient.py."""

import torch


def flash_forward(q, k, v, causal=False, block_q=64, block_k=64):
    if causal:
        n = torch.arange(1, v.size(-2) + 1, dtype=v.dtype)[:, None]
        return v.cumsum(dim=-2) / n, torch.zeros(q.shape[:-1], dtype=q.dtype)
    return v.mean(dim=-2, keepdim=True).expand_as(v).clone(), torch.zeros(
        q.shape[:-1], dtype=q.dtype
    )
