"""Inference helpers: recover what a student's code actually computed from its outputs."""

from __future__ import annotations

import math

import torch


def infer_scale(q: torch.Tensor, k: torch.Tensor, weights: torch.Tensor) -> float | None:
    """The divisor c such that weights ≈ softmax(q kᵀ / c), or None if the weights are not a
    softmax of the raw scores at any scale.

    Within a row, log w_j - log w_m = (s_j - s_m) / c, so c is the least-squares slope of the
    score differences against the log-weight differences. Inputs should be small enough that
    no weight underflows; entries below 1e-30 are left out.
    """
    s = (q.double() @ k.double().transpose(-2, -1)).reshape(-1, k.shape[-2])
    w = weights.double().reshape(-1, k.shape[-2])
    if w.shape != s.shape or not torch.isfinite(w).all() or (w <= 0).any():
        return None
    logw = w.clamp_min(1e-300).log()
    ds = s - s.mean(dim=-1, keepdim=True)
    dl = logw - logw.mean(dim=-1, keepdim=True)
    denom = (ds * dl).sum()
    if denom.abs() < 1e-12:
        return None
    c = float((ds * ds).sum() / denom)
    # It must explain every entry, not only on average.
    if not torch.allclose(dl, ds / c, atol=1e-3, rtol=1e-3):
        return None
    return c


def name_scale(c: float, names: dict[str, float]) -> str:
    """Describe a divisor: '8 = √64' or '16' or '0.25 (you multiplied)'; names maps a text
    such as 'd_model' to its value, and the best match is named."""
    for label, value in names.items():
        if math.isclose(c, math.sqrt(value), rel_tol=1e-3):
            return f"{c:.4g} = √{value:g} (√{label})"
        if math.isclose(c, value, rel_tol=1e-3):
            return f"{c:.4g} = {label}"
        if math.isclose(c, 1 / math.sqrt(value), rel_tol=1e-3):
            return f"{c:.4g} = 1/√{value:g} (you multiplied by √{label} instead of dividing)"
    return f"{c:.4g}"
