"""Exercise group 13: grouped-query attention (GQA) and the key/value memory it saves.

Multi-head attention keeps one key head and one value head per query head. Grouped-query
attention (Ainslie et al., 2023) keeps only H_kv key/value heads and lets each group of
n_rep = H / H_kv consecutive query heads share one: query head h uses key/value head
h // n_rep. Multi-query attention (Shazeer, 2019) is H_kv = 1; multi-head attention is
H_kv = H. The keys and values a decoder caches shrink by the factor H / H_kv.

Shape legend: B batch, H query heads, H_kv key/value heads, n_rep = H // H_kv, T sequence
length, D = d_model, d_k = D // H (the width of one head, query or key).
Mask convention: a bool tensor, True = blocked; it broadcasts to the scores' shape (B, H, T, T).
"""

import torch
from torch import nn

from .attention import scaled_dot_product_attention


def repeat_kv(x, n_rep):
    """Repeat each key/value head n_rep times in a row, so that H_kv heads serve H queries.

    Args:
        x: (B, H_kv, T, d), the key (or value) heads.
        n_rep: how many query heads share one key head (n_rep = H // H_kv >= 1).

    Returns:
        (B, H_kv * n_rep, T, d): head j of the result is head j // n_rep of x, i.e. heads
        0, 0, ..., 0, 1, 1, ..., 1, ... (each n_rep times, consecutively); n_rep = 1 gives x.

    Differentiable: gradients flow from the output back to x (nothing in between under
    torch.no_grad, .detach(), .item() or NumPy).
    """
    # TODO (repeat_kv): about 1 to 3 lines, no Python loop over heads.
    #   Goal: out[:, j] = x[:, j // n_rep] for j in 0 .. H_kv*n_rep - 1.
    #   Shapes: (B, H_kv, T, d) -> (B, H_kv * n_rep, T, d).
    #   Allowed: torch.repeat_interleave, or indexing / expand + reshape. Careful: Tensor.repeat
    #   tiles the whole axis (0, 1, 0, 1, ...), which has the right shape and pairs the query
    #   heads with the wrong key heads.
    ### BEGIN SOLUTION
    return torch.repeat_interleave(x, n_rep, dim=1)
    ### END SOLUTION


def kv_cache_bytes(d_model, num_heads, num_kv_heads, T, dtype=torch.float32):
    """The memory, in bytes, that one attention layer's keys and values take for T tokens of
    one sequence (what a decoder's KV cache holds per layer).

    Args:
        d_model: D. num_heads: H. num_kv_heads: H_kv. T: the number of tokens.
        dtype: the dtype of the cached keys and values (torch.float32, torch.bfloat16, ...).

    Returns:
        An int: keys and values together, T tokens, H_kv heads of d_k = D // H features each.
    """
    # TODO (kv_cache_bytes): about 2 lines.
    #   bytes = 2 (keys and values) x T x H_kv x d_k x (bytes per element).
    #   The bytes per element of a dtype: torch.empty((), dtype=dtype).element_size(), or
    #   dtype.itemsize. Return a Python int.
    ### BEGIN SOLUTION
    d_k = d_model // num_heads
    return 2 * T * num_kv_heads * d_k * torch.empty((), dtype=dtype).element_size()
    ### END SOLUTION


class GroupedQueryAttention(nn.Module):
    """Grouped-query self-attention: H query heads share H_kv key/value heads in groups.

        q_h = x W_qᵀ[h]      (H heads of d_k features; w_q: D -> D)
        k_g = x W_kᵀ[g]      (H_kv heads of d_k features; w_k: D -> H_kv*d_k), same for v
        head_h = Attention(q_h, k_{h // n_rep}, v_{h // n_rep})
        out = concat(head_1, ..., head_H) W_oᵀ

    Args:
        d_model: D; must be divisible by num_heads.
        num_heads: H, the number of query heads.
        num_kv_heads: H_kv, the number of key/value heads; must divide num_heads.
            H_kv = 1 is multi-query attention, H_kv = H is multi-head attention.
        bias: whether the four projections have a bias (default False).

    Raises:
        ValueError: when num_kv_heads does not divide num_heads, or num_heads does not
            divide d_model; the message says which.
    """

    def __init__(self, d_model, num_heads, num_kv_heads, bias=False):
        super().__init__()
        # TODO (GroupedQueryAttention): about 10 lines.
        #   1. If num_heads % num_kv_heads != 0, raise ValueError saying that num_kv_heads does
        #      not divide num_heads, with both numbers; if d_model % num_heads != 0, raise
        #      ValueError saying that num_heads does not divide d_model, with both numbers.
        #   2. Store d_model, num_heads, num_kv_heads, d_k = D // H and n_rep, the number of
        #      query heads per key/value head, as attributes (self.n_rep is used in forward).
        ### BEGIN SOLUTION
        if num_kv_heads < 1 or num_heads % num_kv_heads != 0:
            raise ValueError(
                f"num_kv_heads = {num_kv_heads} does not divide num_heads = {num_heads}: "
                f"each key/value head must serve the same number of query heads"
            )
        if d_model % num_heads != 0:
            raise ValueError(
                f"num_heads = {num_heads} does not divide d_model = {d_model}: every head "
                f"needs the same width d_k = d_model / num_heads"
            )
        self.d_model = d_model
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.d_k = d_model // num_heads
        self.n_rep = num_heads // num_kv_heads
        ### END SOLUTION
        d_k = d_model // num_heads
        # The parameters, in this order (the grader loads its own weights by these names).
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, num_kv_heads * d_k, bias=bias)
        self.w_v = nn.Linear(d_model, num_kv_heads * d_k, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        """
        Args:
            x: (B, T, D).
            mask: optional bool tensor broadcastable to (B, H, T, T), True = blocked.

        Returns:
            out: (B, T, D).
            weights: (B, H, T, T), one map per query head.

        Differentiable: gradients flow from the output back to x and every weight (nothing in
        between under torch.no_grad, .detach(), .item() or NumPy).
        """
        # TODO (forward): about 8 lines, no loop over heads.
        #   1) project and split: q = w_q(x) -> (B, T, H, d_k) -> (B, H, T, d_k);
        #      k, v = w_k(x), w_v(x) -> (B, T, H_kv, d_k) -> (B, H_kv, T, d_k).
        #   2) share: repeat_kv(k, self.n_rep) and the same for v -> (B, H, T, d_k), so query
        #      head h meets key/value head h // n_rep.
        #   3) attend: scaled_dot_product_attention(q, k, v, mask) (imported above; it scales by
        #      √d_k, the width of one head) -> heads (B, H, T, d_k), weights (B, H, T, T).
        #   4) merge: (B, H, T, d_k) -> (B, T, D), then self.w_o(...). Return (out, weights).
        ### BEGIN SOLUTION
        B, T, _ = x.shape
        q = self.w_q(x).reshape(B, T, self.num_heads, self.d_k).transpose(1, 2)
        k = self.w_k(x).reshape(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        v = self.w_v(x).reshape(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        k, v = repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep)  # (B, H, T, d_k)
        heads, weights = scaled_dot_product_attention(q, k, v, mask)
        out = heads.transpose(1, 2).reshape(B, T, self.d_model)
        return self.w_o(out), weights
        ### END SOLUTION
