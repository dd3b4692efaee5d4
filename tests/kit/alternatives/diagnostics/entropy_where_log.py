"""Alternative: w log w with torch.where, a masked mean with nansum, ratios with log n."""

import torch

from solutions.diagnostics import *  # noqa: F403


def head_entropy(weights):
    plogp = torch.where(weights > 0, weights * weights.clamp_min(1e-38).log(), 0.0)
    row = -plogp.sum(-1)
    row = torch.where((weights > 0).any(-1), row, float("nan"))  # blocked rows -> NaN
    return torch.nan_to_num(row.nanmean(dim=(0, 2)), nan=0.0)


def classify_heads(weights, mask=None, collapsed=0.1, uniform=0.9):
    allowed = torch.ones_like(weights, dtype=torch.bool) if mask is None else ~mask
    n = allowed.expand_as(weights).sum(-1).double()
    plogp = torch.where(weights > 0, weights * weights.clamp_min(1e-38).log(), 0.0)
    ratio = -plogp.sum(-1) / n.log()
    ratio = torch.where((n >= 2) & (weights > 0).any(-1), ratio, float("nan"))
    labels = []
    for score in ratio.transpose(0, 1).flatten(1).nanmean(-1).tolist():
        if score != score:  # NaN: no row to judge
            labels.append("fine")
        else:
            labels.append(
                "collapsed" if score < collapsed else "uniform" if score > uniform else "fine"
            )
    return labels
