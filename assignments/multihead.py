# Generated from solutions/multihead.py by `make stubs`. Fill in the TODO regions, then run
# `make grade` (or `make grade EX=multihead`).
"""Exercise group 3: multi-head attention.

Shape legend: B batch, H heads, L query length, S key length, T sequence length (L = S = T),
D = d_model, d_k = D // H (the width of one head).
Mask convention: a bool tensor, True = blocked; it broadcasts to the scores' shape (B, H, L, S),
so an (L, S) mask applies to every sequence and head, a (B, 1, 1, S) padding mask to every
head and query of its sequence.
"""

from torch import nn

from .attention import scaled_dot_product_attention


def split_heads(x, num_heads):
    """Cut the model width into H heads of d_k = D // H features each.

    Args:
        x: (B, T, D).
        num_heads: H; D must be divisible by H.

    Returns:
        (B, H, T, d_k): head h owns the features h*d_k:(h+1)*d_k of every position.

    Raises:
        ValueError: when D is not divisible by H (the heads could not have equal widths).
    """
    # TODO (split_heads): about 5 lines.
    #   Goal: (B, T, D) -> (B, H, T, d_k), head h owning the features h*d_k:(h+1)*d_k.
    #   1. D not divisible by num_heads: raise ValueError with a message that names both numbers.
    #   2. Cut the feature axis into (H, d_k): (B, T, D) -> (B, T, H, d_k).  Use: Tensor.reshape.
    #   3. Move the head axis in front of the time axis: -> (B, H, T, d_k).  Use: Tensor.transpose.
    #   Beware: reshaping straight to (B, H, T, d_k) gives the right shape with the wrong
    #   features (it cuts along the time axis, not the feature axis).
    raise NotImplementedError("split_heads: not attempted yet")


def merge_heads(x):
    """The inverse of split_heads: put the heads back side by side.

    Args:
        x: (B, H, T, d_k).

    Returns:
        (B, T, H*d_k), with head h in the features h*d_k:(h+1)*d_k;
        merge_heads(split_heads(x, H)) equals x.
    """
    # TODO (merge_heads): about 2 lines.
    #   Goal: (B, H, T, d_k) -> (B, T, H*d_k), the inverse of split_heads.
    #   Undo split_heads's two steps, in the reverse order.  Use: Tensor.transpose, Tensor.reshape
    #   (Tensor.view fails on a transposed tensor, which is not contiguous; reshape copies when
    #   it must).
    raise NotImplementedError("merge_heads: not attempted yet")


class MultiHeadAttention(nn.Module):
    """Multi-head attention: H attentions side by side, each on its own d_k features.

        head_h = Attention(query W_qᵀ[h], key W_kᵀ[h], value W_vᵀ[h])   (d_k features each)
        out = concat(head_1, ..., head_H) W_oᵀ

    W_o (w_o) mixes the heads: without it, output feature slice h would only ever see head h.

    Args:
        d_model: D, the model width; must be divisible by num_heads.
        num_heads: H.
        dropout: probability of dropping an attention weight, in training mode only.
        bias: whether the four projections have a bias (default False).
    """

    def __init__(self, d_model, num_heads, dropout=0.0, bias=False):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(
                f"d_model = {d_model} is not divisible by num_heads = {num_heads}: every head "
                f"needs the same width d_k = d_model / num_heads"
            )
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        # The parameters, in this order (the grader loads its own weights by these names).
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, query, key=None, value=None, mask=None):
        """
        Args:
            query: (B, L, D).
            key: (B, S, D); defaults to query (self-attention).
            value: (B, S, D); defaults to key.
            mask: optional bool tensor broadcastable to (B, H, L, S), True = blocked,
                e.g. (L, S) or (B, 1, 1, S).

        Returns:
            out: (B, L, D).
            weights: (B, H, L, S), the attention weights as applied to the values (after
                dropout in training mode), one map per head.
        """
        # TODO (forward): about 9 lines; all H heads in one batched computation, no loop over heads.
        #   0. Defaults: the key is the query and the value is the key, when they are not given.
        #   1) project and split: self.w_q, self.w_k, self.w_v, then split_heads.
        #      query (B, L, D) -> q (B, H, L, d_k); key and value (B, S, D) -> k, v (B, H, S, d_k).
        #   2) attend: scaled_dot_product_attention (imported above) on every head at once.
        #      It scales by √d_k, the width of ONE head, and the mask broadcasts over the head
        #      axis. Dropout acts on the weights (self.dropout, the identity in eval mode), so
        #      apply the weights after dropout to v yourself:
        #      (B, H, L, S), (B, H, S, d_k) -> (B, H, L, d_k).
        #   3) concat: merge_heads -> (B, L, D).
        #   4) output projection: self.w_o mixes the heads -> (B, L, D). Return it with the weights.
        raise NotImplementedError("forward: not attempted yet")
