"""Mutant: the window passed on one short (window - 1): sliding_window_mask refuses window 1's
call with a ValueError, and every other window keeps one key too few."""

# expects: call-refused
# loses: local
from solutions.efficient import chunked_attention, linear_attention, strided_attention  # noqa: F401

from .attention import scaled_dot_product_attention
from .masks import sliding_window_mask


def local_attention(q, k, v, window):
    mask = sliding_window_mask(q.size(-2), window - 1, device=q.device)
    return scaled_dot_product_attention(q, k, v, mask=mask)
