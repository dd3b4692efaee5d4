"""Mutant: one row-entropy helper in bits (log2), shared by head_entropy and classify_heads:
the mistake is head_entropy's; classify_heads is right given the entropies it is handed."""

# expects: entropy-log2
# loses: entropy-random, entropy-crafted
import torch

from solutions.diagnostics import *  # noqa: F403
from solutions.diagnostics import COLLAPSED_BELOW, UNIFORM_ABOVE


def _row_entropy(weights):
    """-Σ_s w log2 w per row: (B, H, L, S) -> (B, H, L)."""
    return -(weights * torch.log2(weights.clamp_min(1e-30))).sum(dim=-1)


def head_entropy(weights):
    row = _row_entropy(weights)
    kept = (weights != 0).any(dim=-1)
    return (row * kept).sum(dim=(0, 2)) / kept.sum(dim=(0, 2)).clamp_min(1)


def classify_heads(weights, mask=None, collapsed=COLLAPSED_BELOW, uniform=UNIFORM_ABOVE):
    B, H, L, S = weights.shape
    allowed = (
        torch.ones_like(weights, dtype=torch.bool) if mask is None else ~mask.expand(B, H, L, S)
    )
    n = allowed.sum(dim=-1)
    judged = (n >= 2) & (weights != 0).any(dim=-1)
    ratio = _row_entropy(weights) / n.clamp_min(2).log()
    score = (ratio * judged).sum(dim=(0, 2)) / judged.sum(dim=(0, 2)).clamp_min(1)
    labels = []
    for h in range(H):
        s = float(score[h])
        if not judged[:, h].any():
            labels.append("fine")
        else:
            labels.append("collapsed" if s < collapsed else "uniform" if s > uniform else "fine")
    return labels
