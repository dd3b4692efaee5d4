"""Exercise group 5: LayerNorm, the feed-forward network, and the Transformer block.

Shape legend: B batch, H heads, T sequence length, D = d_model, d_ff the hidden width of the
feed-forward network. Mask convention: a bool tensor, True = blocked.

A Transformer block has two sub-layers, attention and a position-wise feed-forward network,
each wrapped in a residual connection and a LayerNorm. Where the LayerNorm sits is a real
design choice with two standard answers:

    Post-LN (Vaswani et al., 2017):  x = norm(x + sublayer(x))
    Pre-LN (GPT-2 and most models since):  x = x + sublayer(norm(x))

Both are correct Transformers. They train differently: see docs/blocks.md and the
LN-placement experiment in diagnostics.py.
"""

import torch
import torch.nn.functional as F
from torch import nn

from .multihead import MultiHeadAttention


def layer_norm(x, weight=None, bias=None, eps=1e-5):
    """LayerNorm over the last dimension, as nn.LayerNorm computes it.

        y = (x - mean) / sqrt(var + eps) * weight + bias

    mean and var are taken over the last dim of each vector separately; var is the biased
    variance (divide by D, not D - 1), and eps sits inside the square root.

    Args:
        x: (..., D).
        weight, bias: optional (D,) gain and shift; None means 1 and 0.
        eps: added to the variance, so a constant vector does not divide by zero.

    Returns:
        (..., D), the same shape and dtype as x.

    Differentiable: gradients flow from the output back to x, weight and bias (nothing in
    between under torch.no_grad, .detach(), .item() or NumPy).
    """
    # TODO (layer_norm): about 6 lines.
    #   Goal: y = (x - mean) / sqrt(var + eps) * weight + bias, statistics over the last dim.
    #   1. The mean of each vector, kept as (..., 1) so that it broadcasts against x.
    #      Use: Tensor.mean with dim and keepdim.
    #   2. The biased variance, the mean squared deviation from that mean (divide by D, not
    #      D - 1: Tensor.var divides by D - 1 unless told otherwise).
    #   3. Normalise, with eps inside the square root.  Use: torch.sqrt (or torch.rsqrt).
    #   4. Scale and shift only with what is given: weight and bias may each be None.
    ### BEGIN SOLUTION
    mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
    var = (x - mean).pow(2).mean(dim=-1, keepdim=True)  # (..., 1), biased
    y = (x - mean) / torch.sqrt(var + eps)  # (..., D)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y
    ### END SOLUTION


class FeedForward(nn.Module):
    """The position-wise feed-forward network: the same two-layer MLP at every position.

        FFN(x) = linear2(dropout(act(linear1(x))))

    act is the exact GELU, x·Φ(x) (F.gelu), or ReLU. Dropout is active in training only.
    """

    def __init__(self, d_model, d_ff, dropout=0.0, activation="gelu"):
        super().__init__()
        if activation not in ("gelu", "relu"):
            raise ValueError(f"activation must be 'gelu' or 'relu', got {activation!r}")
        self.activation = activation
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        """x: (B, T, D) -> (B, T, D).

        Differentiable: gradients flow from the output back to x and every weight (nothing in
        between under torch.no_grad, .detach(), .item() or NumPy).
        """
        # TODO (FeedForward.forward): about 3 lines.
        #   Goal: linear2(dropout(act(linear1(x)))):  (B, T, D) -> (B, T, d_ff) -> (B, T, D).
        #   act is the exact GELU or ReLU, as self.activation says.
        #   Use: F.gelu (its default is the exact form) or F.relu, and the modules built above.
        ### BEGIN SOLUTION
        h = self.linear1(x)  # (B, T, D) -> (B, T, d_ff)
        h = F.gelu(h) if self.activation == "gelu" else F.relu(h)
        return self.linear2(self.dropout(h))  # (B, T, d_ff) -> (B, T, D)
        ### END SOLUTION


class TransformerBlock(nn.Module):
    """One Transformer encoder block, Pre-LN or Post-LN.

    Pre-LN (norm_first=True):             Post-LN (norm_first=False):
        x = x + drop(attn(norm1(x)))          x = norm1(x + drop(attn(x)))
        x = x + drop(ffn(norm2(x)))           x = norm2(x + drop(ffn(x)))

    With dropout 0 it computes what nn.TransformerEncoderLayer(batch_first=True,
    norm_first=...) computes with the same weights (the kit's tests check this).

    Args:
        d_model: D. num_heads: H (D must be divisible by H). d_ff: the FFN's hidden width.
        dropout: used after each sub-layer, and passed to attn and ffn.
        norm_first: True for Pre-LN, False for Post-LN.
        activation: "gelu" or "relu", for the FFN.
    """

    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, norm_first=True, activation="gelu"):
        super().__init__()
        self.norm_first = norm_first
        self.attn = MultiHeadAttention(d_model, num_heads, dropout=dropout, bias=False)
        self.ffn = FeedForward(d_model, d_ff, dropout=dropout, activation=activation)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        """
        Args:
            x: (B, T, D).
            mask: optional bool mask for the attention, True = blocked, e.g. (T, T) causal.

        Returns:
            x: (B, T, D), the block's output.
            weights: (B, H, T, T), the attention weights from self.attn.

        Differentiable: gradients flow from the output back to x and every weight (nothing in
        between under torch.no_grad, .detach(), .item() or NumPy).
        """
        # TODO (TransformerBlock.forward): about 8 lines: the docstring's two pairs of equations.
        #   1. self.attn with one argument is self-attention; it returns (out, weights).
        #   2. Pre-LN normalises the INPUT of each sub-layer and adds the sub-layer's output to the
        #      un-normalised x: the residual path never passes through a norm.
        #   3. Post-LN adds first and normalises the sum; the normalised sum is the new x.
        #   4. Each sub-layer's output passes through self.dropout before it is added.
        #   Return the new x and the attention weights.
        ### BEGIN SOLUTION
        if self.norm_first:
            h, weights = self.attn(self.norm1(x), mask=mask)
            x = x + self.dropout(h)
            x = x + self.dropout(self.ffn(self.norm2(x)))
        else:
            h, weights = self.attn(x, mask=mask)
            x = self.norm1(x + self.dropout(h))
            x = self.norm2(x + self.dropout(self.ffn(x)))
        return x, weights
        ### END SOLUTION
