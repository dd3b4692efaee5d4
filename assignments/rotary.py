# Generated from solutions/rotary.py by `make stubs`. Fill in the TODO regions, then run
# `make grade` (or `make grade EX=rotary`).
"""Exercise group 11: rotary position embeddings (RoPE), as in LLaMA and GPT-NeoX.

Instead of adding a position vector to the token, rotary embeddings turn each query and key:
the features are grouped into pairs, and the pair i of the vector at position p is rotated by
the angle p·θ_i, θ_i = base^(-2i/d). A rotation keeps lengths, and the dot product of a query
turned by m·θ and a key turned by n·θ depends on m - n only: attention sees relative positions.

Pair convention of this kit ("halves", as in LLaMA's Hugging Face code and GPT-NeoX): feature
i is paired with feature i + d/2, for i = 0 .. d/2 - 1. (Meta's original LLaMA code and GPT-J
pair neighbours (2i, 2i + 1) instead: the "interleaved" convention. Both are correct in
themselves, but weights trained with one do not work with the other.)

Shape legend: B batch, H heads, T sequence length, d the width of one head (even).
`...` is any number of leading batch dimensions (none, (B,), (B, H), ...).
Mask convention: a bool tensor, True = blocked.
"""

import torch

from .attention import scaled_dot_product_attention


def apply_rotary(x, positions, base=10000.0):
    """Rotate the feature pairs (i, i + d/2) of x by the angles positions · θ_i.

    With θ_i = base^(-2i/d), i = 0 .. d/2 - 1, and a = p · θ_i for the row at position p:

        out[..., i]         = x[..., i] · cos(a) - x[..., i + d/2] · sin(a)
        out[..., i + d/2]   = x[..., i + d/2] · cos(a) + x[..., i] · sin(a)

    Args:
        x: (..., T, d) queries or keys (not values), d even.
        positions: (T,) integer tensor, the position of each of the T rows. A KV cache that
            has already seen p0 tokens passes p0 + torch.arange(T): do not assume 0 .. T-1.
            Any non-negative integers, in any order and as large as the caller needs
            (thousands): compute the angles from them, not from a table of fixed length.
        base: the base of the frequencies (10000 in the original paper; LLaMA 3 uses 500000).

    Returns:
        (..., T, d), the same shape, dtype and device as x.

    Raises:
        ValueError: when d is odd (its message gives d).

    Promises: position 0 leaves a row unchanged; every row keeps its length; the dot product
    of a query rotated at position m and a key rotated at position n depends on m - n only.

    Differentiable: gradients flow from the output back to x (nothing in between under
    torch.no_grad, .detach(), .item() or NumPy).
    """
    # TODO (apply_rotary): rotate pairs (i, i + d/2) by p·θ_i, about 10 lines.
    #   - d is the width of the last dimension of x; an odd d raises ValueError with a
    #     message that gives d.
    #   - θ_i = base^(-2i/d) for i = 0 .. d/2 - 1 (one frequency per pair, from 1 down to
    #     about 1/base); angles = positions (as floats) times θ: shape (T, d/2). Compute the
    #     angles in float32 or float64, never in the precision of half-width floats.
    #   - Split x into its halves x1 = x[..., :d/2], x2 = x[..., d/2:] and combine them with
    #     cos(angles) and sin(angles) as in the equations above; (T, d/2) broadcasts against
    #     (..., T, d/2).
    #   - Return a tensor of x's dtype (cast cos and sin to x.dtype).
    #   Allowed: torch.arange, torch.cos, torch.sin, torch.cat, slicing, broadcasting.
    raise NotImplementedError("apply_rotary: not attempted yet")


def rotary_attention(q, k, v, positions, mask=None, base=10000.0):
    """Self-attention with rotary embeddings: rotate q and k, then attend.

    Args:
        q, k: (..., T, d) queries and keys, d even.  v: (..., T, d_v) values.
        positions: (T,) integer tensor, the positions of the T rows (shared by q and k).
        mask: optional bool tensor broadcastable to (..., T, T); True = blocked.
        base: as in apply_rotary.

    Returns:
        (out (..., T, d_v), weights (..., T, T)), as scaled_dot_product_attention returns.

    Promises: shifting every position by the same amount changes nothing (attention sees
    relative positions only); v is not rotated.

    Differentiable: gradients flow from the output back to q, k and v (nothing in between under
    torch.no_grad, .detach(), .item() or NumPy).
    """
    # TODO (rotary_attention): about 3 lines. Rotate the queries and the keys (never the
    #   values) with apply_rotary at `positions`, then attend with the attention function
    #   imported above, passing the mask through.
    raise NotImplementedError("rotary_attention: not attempted yet")
