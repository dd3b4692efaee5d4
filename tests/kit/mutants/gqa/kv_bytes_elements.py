"""Mutant: kv_cache_bytes counts elements, not bytes."""

# expects: gqa-kv-bytes-elements
# loses: kv-bytes
from solutions.gqa import *  # noqa: F403


def kv_cache_bytes(d_model, num_heads, num_kv_heads, T, dtype):
    return 2 * T * num_kv_heads * (d_model // num_heads)
