"""Mutant: cache_bytes_per_token returns elements, not bytes."""

# expects: mla-bytes-elements
# loses: cache-bytes
import math  # noqa: F401

import torch
from torch import nn  # noqa: F401

import solutions.mla as _s
from solutions.attention import scaled_dot_product_attention  # noqa: F401
from solutions.mla import *  # noqa: F403
from solutions.rotary import apply_rotary  # noqa: F401


def cache_bytes_per_token(kind, num_heads, d_head, num_kv_heads=None, d_c=None, d_rope=None,
                          dtype=torch.float32):  # fmt: skip
    if kind == "mha":
        elements = 2 * num_heads * d_head  # a key and a value per head
    elif kind == "gqa":
        elements = 2 * num_kv_heads * d_head
    elif kind == "mqa":
        elements = 2 * d_head
    elif kind == "mla":
        elements = d_c + d_rope  # one latent for keys and values, one shared rotary key
    else:
        raise ValueError(f"kind must be 'mha', 'gqa', 'mqa' or 'mla', got {kind!r}")
    return int(elements)
