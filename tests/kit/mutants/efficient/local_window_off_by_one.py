"""Mutant: the window lets one key too many through (i - j > window instead of >=)."""

# expects: local-window-off-by-one
from solutions.attention import scaled_dot_product_attention
from solutions.efficient import chunked_attention, linear_attention, strided_attention
from solutions.masks import sliding_window_mask


def local_attention(q, k, v, window):
    mask = sliding_window_mask(q.size(-2), window + 1, device=q.device)
    return scaled_dot_product_attention(q, k, v, mask=mask)
