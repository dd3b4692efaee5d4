# Generated from solutions/efficient.py by `make stubs`. Fill in the TODO regions, then run
# `make grade` (or `make grade EX=efficient`).
"""Exercise group 9: efficient attention, and what each shortcut gives up.

Plain attention builds a (T, T) score matrix: its memory grows with the square of the sequence
length. The four exercises here avoid or restrict it in four different ways:

    local_attention     each query sees a window of recent keys       (sparse, causal)
    strided_attention   a local band plus every stride-th key before  (sparse, causal)
    linear_attention    a kernel feature map instead of the softmax   (approximate, O(T))
    chunked_attention   exact softmax attention, one key chunk at a time (online softmax)

Shape legend: B batch, H heads, T sequence length (self-attention: queries and keys are the
same positions), d query/key width, d_v value width. `...` is any number of leading batch
dimensions (none, (B,), (B, H), ...). Mask convention: a bool tensor, True = blocked.
"""

import math

import torch
import torch.nn.functional as F

from .attention import scaled_dot_product_attention
from .masks import sliding_window_mask


def local_attention(q, k, v, window):
    """Causal local (sliding-window) attention: query i sees keys i - window + 1 .. i.

    Args:
        q, k: (..., T, d) queries and keys.  v: (..., T, d_v) values.
        window: how many keys each query may see (itself included), window >= 1.

    Returns:
        out (..., T, d_v) and weights (..., T, T); weights are exactly 0 outside the window,
        so this equals scaled_dot_product_attention under sliding_window_mask(T, window).

    Differentiable: gradients flow from the output back to q, k and v (nothing in between under
    torch.no_grad, .detach(), .item() or NumPy).
    """
    # TODO (local_attention): 2 lines, reusing what you already wrote.
    #   Build the (T, T) window mask on q's device (T is the length of q's axis -2) and attend
    #   under it.  Use: sliding_window_mask, scaled_dot_product_attention (both imported above).
    raise NotImplementedError("local_attention: not attempted yet")


def strided_attention(q, k, v, stride):
    """Strided sparse attention (Child et al., 2019): a local band plus a strided column set.

    Query i may attend to key j when j <= i (causal) and
        i - j < stride            (the local band: itself and the stride - 1 keys before), or
        (i - j) % stride == 0     (every stride-th key further back: i - stride, i - 2*stride, ...).

    Args:
        q, k: (..., T, d).  v: (..., T, d_v).  stride: an int >= 1.

    Returns:
        out (..., T, d_v) and weights (..., T, T), zero at every blocked key.

    Raises:
        ValueError: when stride < 1.

    Differentiable: gradients flow from the output back to q, k and v (nothing in between under
    torch.no_grad, .detach(), .item() or NumPy).
    """
    if stride < 1:
        raise ValueError(f"stride must be at least 1, got {stride}")
    # TODO (strided_attention): about 5 lines: build the blocked mask, then attend.
    #   1. Query positions as a column (T, 1) and key positions as a row (1, T), on q's device.
    #   2. Their difference, (T, T), says how far back key j lies from query i (negative: the
    #      future).
    #   3. Allowed: not in the future, and either inside the local band or a whole number of
    #      strides back (the docstring's two conditions).  Use: &, | and % on tensors.
    #   4. Attend with scaled_dot_product_attention, whose mask is True where a key is BLOCKED.
    raise NotImplementedError("strided_attention: not attempted yet")


def linear_attention(q, k, v, causal=False, eps=1e-6):
    """Linear attention (Katharopoulos et al., 2020) with the feature map phi(x) = elu(x) + 1.

    The softmax's exp(q·k) is replaced by a kernel phi(q)·phi(k) with phi > 0, so the sums over
    keys can be taken once and shared by every query:

        out_i = phi(q_i)ᵀ (Σ_j phi(k_j) v_jᵀ) / (phi(q_i)ᵀ Σ_j phi(k_j) + eps)

    with j over all positions, or over j <= i when causal (running prefix sums). No (T, T)
    tensor is ever built: time and memory grow linearly with T. There is no 1/√d scaling.

    Args:
        q, k: (..., T, d).  v: (..., T, d_v).
        causal: when True, query i only uses keys j <= i.
        eps: added to the normaliser (which is > 0 anyway, since phi > 0).

    Returns:
        out: (..., T, d_v).

    Differentiable: gradients flow from the output back to q, k and v (nothing in between under
    torch.no_grad, .detach(), .item() or NumPy).
    """
    # TODO (linear_attention): about 9 lines; no (T, T) tensor anywhere.
    #   1. The features phi(q) and phi(k), phi(x) = elu(x) + 1 > 0: (..., T, d).  Use: F.elu.
    #   2. Not causal: two sums over all the keys, computed once and shared by every query,
    #        Σ_j phi(k_j) v_jᵀ  (..., d, d_v)   and   Σ_j phi(k_j)  (..., d);
    #      then each query's numerator phi(q_i)ᵀ (first sum), (..., T, d_v), and denominator
    #      phi(q_i)ᵀ (second sum), (..., T, 1).  Use: @, Tensor.transpose, Tensor.sum.
    #   3. Causal: the same two sums over j <= i only, one per position i: running sums along
    #      the T axis, (..., T, d, d_v) and (..., T, d). Build the outer products phi(k_j) v_jᵀ
    #      by broadcasting (None indexing); contract each query with its own position's sums.
    #      Use: torch.cumsum, Tensor.sum.
    #   4. The output: the numerator divided by (the denominator + eps).
    raise NotImplementedError("linear_attention: not attempted yet")


def chunked_attention(q, k, v, causal=False, chunk_size=128):
    """Exact softmax attention, computed over key chunks with an online softmax.

    The result equals softmax(q kᵀ / √d) v (under the causal mask when causal=True), but the
    keys are visited chunk_size at a time, so at most (T, chunk_size) scores exist at once per
    batch and head: no tensor it creates is larger than T × max(chunk_size, d, d_v) per batch
    and head (the grader measures this). For each query row the loop keeps three running values:

        m    the largest score seen so far                                    (..., T, 1)
        l    Σ exp(score - m) over the keys seen so far                       (..., T, 1)
        acc  Σ exp(score - m) v over the keys seen so far                     (..., T, d_v)

    When a new chunk raises the maximum from m to m_new, the old sums were measured against m,
    so both are multiplied by exp(m - m_new) before the chunk's own terms are added. At the end,
    out = acc / l. (This is the heart of FlashAttention, Dao et al., 2022.)

    Args:
        q, k: (..., T, d).  v: (..., T, d_v).
        causal: when True, query i only attends to keys j <= i.
        chunk_size: keys per chunk, >= 1 (the last chunk may be shorter).

    Returns:
        out: (..., T, d_v), finite even when the scores are in the thousands.

    Differentiable: gradients flow from the output back to q, k and v (nothing in between under
    torch.no_grad, .detach(), .item() or NumPy).
    """
    # TODO (chunked_attention): about 16 lines: a loop over key chunks that keeps the three
    #   running values of the docstring (m, l, acc), and no (T, T) tensor, not even a mask.
    #   1. Start with m = -inf, l = 0 and acc = 0, in the docstring's shapes, with q's dtype and
    #      device.  Use: Tensor.new_full, Tensor.new_zeros.
    #   2. For each chunk of keys, from `start` to start + chunk_size or to T, whichever comes
    #      first (the last chunk may be shorter):
    #      a. the chunk's scaled scores, (..., T, c); when causal, -inf where the key's position
    #         is after the query's (a (T, c) comparison of two aranges, never a (T, T) mask);
    #      b. the new maximum of each row: the larger of m and the chunk's row maxima;
    #      c. the factor exp(m - m_new) that rescales the old sums, and the chunk's terms
    #         exp(score - m_new), each at most 1 (no overflow);
    #      d. l and acc: rescale the old sums, then add the chunk's (the row sums of the terms;
    #         the terms applied to the chunk's values); m becomes the new maximum.
    #   3. The output is acc divided by l.
    #   Causal rows never compute -inf - (-inf): the first chunk holds key 0, which every query
    #   may see, so m is finite after it.
    #   Use: torch.maximum, Tensor.amax, torch.exp, torch.arange, Tensor.masked_fill.
    raise NotImplementedError("chunked_attention: not attempted yet")
