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
    #   1. B, T, D = x.shape. If D % num_heads != 0, raise ValueError with a message that
    #      says D is not divisible by num_heads, naming both numbers.
    #   2. x.reshape(B, T, num_heads, d_k) cuts the last dim into (H, d_k): (B, T, H, d_k).
    #   3. .transpose(1, 2) brings the heads forward: (B, H, T, d_k).
    #      (Reshaping straight to (B, H, T, d_k) gives the right shape with the wrong
    #      features: it cuts along the time axis, not the feature axis.)
    raise NotImplementedError("split_heads: not attempted yet")


def merge_heads(x):
    """The inverse of split_heads: put the heads back side by side.

    Args:
        x: (B, H, T, d_k).

    Returns:
        (B, T, H*d_k), with head h in the features h*d_k:(h+1)*d_k;
        merge_heads(split_heads(x, H)) equals x.
    """
    # TODO (merge_heads): about 2 lines. Undo split_heads in the reverse order:
    #   .transpose(1, 2) gives (B, T, H, d_k), then .reshape(B, T, H * d_k).
    #   (view needs a contiguous tensor and a transposed one is not; reshape copies if needed.)
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
        # TODO (forward): about 9 lines, no loop over heads (one batched matmul for all H).
        #   0. key defaults to query and value to key (`if key is None: ...`).
        #   1) project and split: split_heads(self.w_q(query), self.num_heads) -> (B, H, L, d_k);
        #      the same for key and value with w_k and w_v -> (B, H, S, d_k).
        #   2) attend: scaled_dot_product_attention(q, k, v, mask) (imported above) scales by
        #      √d_k, the width of ONE head; the mask broadcasts over the head axis.
        #      Dropout acts on the weights: weights = self.dropout(weights), then
        #      heads = weights @ v -> (B, H, L, d_k). (nn.Dropout is the identity in eval mode.)
        #   3) concat: merge_heads(heads) -> (B, L, D).
        #   4) output projection: self.w_o(...) mixes the heads. Return (out, weights).
        raise NotImplementedError("forward: not attempted yet")
