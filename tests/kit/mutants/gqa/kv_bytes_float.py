"""Mutant: kv_cache_bytes divides with / (d_model / num_heads): the right count, as a float."""

# expects: gqa-kv-bytes-float
# loses: kv-bytes
import torch

from solutions.gqa import *  # noqa: F403


def kv_cache_bytes(d_model, num_heads, num_kv_heads, T, dtype=torch.float32):
    d_k = d_model / num_heads
    return 2 * T * num_kv_heads * d_k * torch.empty((), dtype=dtype).element_size()
