"""Mutant: kv_cache_bytes counts the keys only."""

# expects: gqa-kv-bytes-keys-only
# loses: kv-bytes
from solutions.gqa import *  # noqa: F403


def kv_cache_bytes(d_model, num_heads, num_kv_heads, T, dtype):
    return T * num_kv_heads * (d_model // num_heads) * dtype.itemsize
