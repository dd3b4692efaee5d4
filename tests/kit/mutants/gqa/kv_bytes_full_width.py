"""Mutant: kv_cache_bytes counts num_heads key/value heads (the MHA cache)."""

# expects: gqa-kv-bytes-full-width
# loses: kv-bytes
from solutions.gqa import *  # noqa: F403


def kv_cache_bytes(d_model, num_heads, num_kv_heads, T, dtype):
    return 2 * T * d_model * dtype.itemsize
