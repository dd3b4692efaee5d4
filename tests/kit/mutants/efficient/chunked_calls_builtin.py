"""Mutant: PyTorch's fused kernel does the work."""

# expects: chunked-calls-builtin
# loses: chunked-memory-inside
import torch.nn.functional as F

from solutions.efficient import linear_attention, local_attention, strided_attention


def chunked_attention(q, k, v, causal=False, chunk_size=128):
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
