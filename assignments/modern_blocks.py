# Generated from solutions/modern_blocks.py by `make stubs`. Fill in the TODO regions, then run
# `make grade` (or `make grade EX=modern_blocks`).
"""Exercise group 12: modern blocks: RMSNorm and the SwiGLU feed-forward.

Today's decoder-only language models (LLaMA, Mistral, Qwen, ...) replace the 2017 block's
LayerNorm by RMSNorm (no centring, no bias) and its ReLU/GELU feed-forward by a gated one,
SwiGLU. You write both. Shapes: `B` batch, `T` sequence length, `D` = d_model, `d_ff` the
hidden width of the feed-forward; `(..., D)` means any number of leading dimensions.
"""

import torch
import torch.nn.functional as F
from torch import nn


def rms_norm(
    x: torch.Tensor, weight: torch.Tensor | None = None, eps: float = 1e-6
) -> torch.Tensor:
    """Root-mean-square normalisation over the last dimension (Zhang & Sennrich, 2019).

        y = x / sqrt(mean(x², over the last dim) + eps) * weight

    x: (..., D); weight: (D,) or None (then no scaling); returns (..., D), x's dtype.
    Unlike LayerNorm it does not subtract the mean and has no bias. Equivalent to
    `nn.RMSNorm(D, eps=eps)` holding `weight`.
    """
    # TODO (rms_norm): about 4 lines. Divide each vector x[..., :] by its root mean square,
    # then scale it.
    # Equation: y = x / sqrt(mean_j x_j² + eps) * weight, the mean over the last dim (D).
    # Shapes: x (..., D), weight (D,) or None -> (..., D).
    # Allowed: tensor arithmetic, .pow, .mean(dim=..., keepdim=True), torch.sqrt or
    # torch.rsqrt. Not F.rms_norm or nn.RMSNorm. About 4 lines.
    raise NotImplementedError("rms_norm: not attempted yet")


class RMSNorm(nn.Module):
    """RMSNorm as a module: `rms_norm(x, self.weight, self.eps)`.

    `__init__(d_model, eps=1e-6)` creates `weight`, a parameter of D ones (given).
    forward: x (..., D) -> (..., D).
    """

    def __init__(self, d_model: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # TODO (RMSNorm): about 1 line. Normalise x with this module's own weight and eps.
        # Equation: y = x / sqrt(mean(x²) + self.eps) * self.weight, over the last dim.
        # Shapes: (..., D) -> (..., D). You may call your rms_norm. About 1 line.
        raise NotImplementedError("forward: not attempted yet")


class SwiGLU(nn.Module):
    """The gated feed-forward of LLaMA (Shazeer, 2020, "GLU Variants Improve Transformer").

        SwiGLU(x) = w_down( silu(w_gate(x)) * w_up(x) ),   silu(h) = h * sigmoid(h)

    `__init__(d_model, d_ff)` creates, in this order (given), `w_gate` and `w_up`
    (D -> d_ff) and `w_down` (d_ff -> D), all `nn.Linear` without bias.
    forward: x (..., D) -> (..., D). Only the gate branch goes through SiLU; the up branch
    stays linear, and the product of the two is projected back to D.
    """

    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.w_gate = nn.Linear(d_model, d_ff, bias=False)
        self.w_up = nn.Linear(d_model, d_ff, bias=False)
        self.w_down = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # TODO (SwiGLU): about 3 lines. The gated feed-forward.
        # Equation: out = w_down(silu(w_gate(x)) * w_up(x)), the product element by element.
        # Shapes: x (..., D) -> gate, up (..., d_ff) -> out (..., D).
        # Allowed: the three given linear layers, F.silu (or h * torch.sigmoid(h)).
        # About 3 lines.
        raise NotImplementedError("forward: not attempted yet")
