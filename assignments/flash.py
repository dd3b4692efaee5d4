# Generated from solutions/flash.py by `make stubs`. Fill in the TODO regions, then run
# `make grade` (or `make grade EX=flash`).
"""Exercise group 10: FlashAttention-2, forward and backward, as a torch.autograd.Function.

chunked_attention (efficient.py) made the forward pass exact in O(T) memory with an online
softmax. Training needs the backward pass too, and autograd through any attention written
with tensor ops saves the (T, T) weights for it. FlashAttention (Dao et al., 2022; version 2,
Dao, 2023) writes the backward by hand: the forward saves only the output and one number per
query row, the log-sum-exp of its scores, and the backward recomputes the weights tile by tile
from it. Nothing of size (T, T) is ever stored; the price is one more score product per tile.

    flash_forward    tiles of queries x tiles of keys, online softmax  -> out, lse
    flash_backward   the weights recomputed per tile from lse          -> dq, dk, dv
    FlashAttention   the torch.autograd.Function that joins the two (saves q, k, v, out, lse)
    flash_attention  FlashAttention.apply with keyword arguments (given)

Causal attention skips every tile that lies wholly above the diagonal (all its keys after all
its queries): about half the work, not just half the scores masked.

Shape legend: B batch, H heads, T sequence length (self-attention: queries and keys are the
same positions), d query/key width, d_v value width. `...` is any number of leading batch
dimensions (none, (B,), (B, H), ...). A tile is block_q queries x block_k keys; the last tile
along an axis may be shorter. Everything is computed in q's dtype (float32 or float64; a GPU
kernel would keep the running values in float32 for half-precision inputs).
"""

import math

import torch


def _check_blocks(block_q, block_k):
    if block_q < 1 or block_k < 1:
        raise ValueError(
            f"block sizes must be at least 1, got block_q={block_q}, block_k={block_k}"
        )


def flash_forward(q, k, v, causal=False, block_q=64, block_k=64):
    """FlashAttention-2's forward pass: exact softmax attention, tile by tile.

    For each tile of block_q queries, the loop visits the tiles of block_k keys and keeps,
    per query row, the three running values of the online softmax:

        m    the largest scaled score seen so far                             (..., bq, 1)
        l    Σ exp(s - m) over the keys seen so far                           (..., bq, 1)
        acc  Σ exp(s - m) v over the keys seen so far                         (..., bq, d_v)

    with s = q kᵀ / √d. When a key tile raises the maximum from m to m_new, both sums were
    measured against m and are multiplied by exp(m - m_new) first. After the last key tile:

        out = acc / l        lse = m + log(l) = log Σ_j exp(s_j)    (the log-sum-exp)

    lse is all the backward pass needs to recompute the weights: P = exp(s - lse).
    When causal, query i attends to keys j <= i only: key tiles that start after the query
    tile's last query are never computed, and only tiles that cross the diagonal are masked.

    Args:
        q, k: (..., T, d).  v: (..., T, d_v).
        causal: when True, query i only attends to keys j <= i.
        block_q, block_k: queries and keys per tile, >= 1 (ValueError otherwise).

    Returns:
        out (..., T, d_v) and lse (..., T), in q's dtype; finite even when scores are in the
        thousands. No tensor larger than block_q x block_k scores per batch and head.
    """
    _check_blocks(block_q, block_k)
    # TODO (flash_forward): about 22 lines: two loops, query tiles outside, key tiles inside.
    #   1. T and d from q's shape; the scale 1/√d.
    #   2. For each query tile qs .. qe (block_q queries, the last one cut off at T):
    #      a. m = -inf, l = 0, acc = 0 in the shapes of the docstring, q's dtype and device.
    #         Use: Tensor.new_full, Tensor.new_zeros.
    #      b. The key tiles to visit: all of them, or when causal only those that start before
    #         qe (a tile whose keys all come after every query of the tile is skipped, never
    #         computed and masked).
    #      c. For each key tile ks .. ke: the tile's scaled scores (..., bq, bk); when causal
    #         and the tile crosses the diagonal, -inf where the key's position is after the
    #         query's (compare two aranges of absolute positions). Then the online update of
    #         chunked_attention: new maximum, rescale factor exp(m - m_new) for l and acc,
    #         the tile's terms exp(s - m_new).
    #      d. The tile's output acc / l and its log-sum-exp m + log(l), squeezed to (..., bq).
    #   3. Join the query tiles' outputs and log-sum-exps along the T axis.
    #   Use: torch.maximum, Tensor.amax, torch.exp, torch.log, torch.arange,
    #   Tensor.masked_fill, torch.cat.
    raise NotImplementedError("flash_forward: not attempted yet")


def flash_backward(q, k, v, out, lse, grad_out, causal=False, block_q=64, block_k=64):
    """FlashAttention-2's backward pass: the gradients of out = softmax(q kᵀ / √d) v.

    With S = q kᵀ / √d, P = softmax(S) and dO = grad_out, the gradients are

        dV = Pᵀ dO        dP = dO Vᵀ        dS = P ∘ (dP - D)        D = rowsum(dO ∘ O)
        dQ = dS K / √d    dK = dSᵀ Q / √d

    D_i = Σ_j P_ij dP_ij is the softmax's correction term; since O = P V it equals
    dO_i · O_i, one number per query row, computed once before the loops. P is never kept:
    each tile's weights are recomputed from the saved log-sum-exp, P = exp(S - lse), already
    normalised. The loops run over key tiles outside (dK and dV of a key tile are finished
    there) and query tiles inside (dQ of a query tile gathers from every key tile). When
    causal, the tiles wholly above the diagonal are skipped, as in the forward pass.

    Args:
        q, k: (..., T, d).  v: (..., T, d_v).
        out: (..., T, d_v) and lse: (..., T), what flash_forward returned for q, k, v.
        grad_out: (..., T, d_v), the gradient of the loss with respect to out.
        causal, block_q, block_k: as in flash_forward.

    Returns:
        dq (..., T, d), dk (..., T, d), dv (..., T, d_v), in q's dtype.
    """
    _check_blocks(block_q, block_k)
    # TODO (flash_backward): about 24 lines: D first, then key tiles outside, query tiles inside.
    #   1. T, d and the scale; D = rowsum(dO ∘ O), (..., T); dq starts at zero, (..., T, d).
    #   2. For each key tile ks .. ke: dk_j and dv_j start at zero, (..., bk, d) and
    #      (..., bk, d_v). The query tiles to visit: all, or when causal only those whose last
    #      query is at or after ks (the first is the tile that holds query ks).
    #   3. For each query tile qs .. qe:
    #      a. the tile's scaled scores, masked as in flash_forward when causal and the tile
    #         crosses the diagonal;
    #      b. the weights P = exp(S - lse) with the rows' lse (..., bq, 1): no max, no sum;
    #      c. dv_j gains Pᵀ dO_i; dP = dO_i Vⱼᵀ; dS = P ∘ (dP - D_i);
    #      d. dq of the query tile gains dS Kⱼ / √d; dk_j gains dSᵀ Q_i / √d.
    #   4. Join the key tiles' dk_j and dv_j along the T axis.
    #   Use: @, Tensor.transpose, torch.exp, Tensor.sum, Tensor.new_zeros, torch.cat.
    raise NotImplementedError("flash_backward: not attempted yet")


class FlashAttention(torch.autograd.Function):
    """Attention with FlashAttention's memory: forward and backward written by hand.

    forward(ctx, q, k, v, causal, block_q, block_k) -> out (..., T, d_v)
        runs flash_forward and saves for backward q, k, v, out and lse (through
        ctx.save_for_backward; the flags and block sizes as plain ctx attributes): O(T)
        per batch and head besides the inputs, nothing of size (T, T).
    backward(ctx, grad_out) -> (dq, dk, dv, None, None, None)
        runs flash_backward on what forward saved; one gradient per input of forward, None
        for the three that are not tensors.

    Use it through flash_attention (below), or FlashAttention.apply(q, k, v, causal, bq, bk).
    """

    @staticmethod
    def forward(ctx, q, k, v, causal=False, block_q=64, block_k=64):
        # TODO (FlashAttention.forward): 4 lines. Run flash_forward, save the five tensors
        #   the backward pass needs with ctx.save_for_backward (never the weights), keep the
        #   three other arguments as attributes of ctx, return the output.
        raise NotImplementedError("forward: not attempted yet")

    @staticmethod
    def backward(ctx, grad_out):
        # TODO (FlashAttention.backward): 3 lines. Take the saved tensors back
        #   (ctx.saved_tensors, in the order they were saved), run flash_backward, and return
        #   one gradient per argument of forward: None for causal, block_q and block_k.
        raise NotImplementedError("backward: not attempted yet")


def flash_attention(q, k, v, causal=False, block_q=64, block_k=64):
    """softmax(q kᵀ / √d) v (under the causal mask when causal=True), differentiable, with
    FlashAttention's memory: q, k (..., T, d), v (..., T, d_v) -> out (..., T, d_v).
    Given: it only passes its arguments to FlashAttention.apply (which takes no keywords)."""
    return FlashAttention.apply(q, k, v, causal, block_q, block_k)
