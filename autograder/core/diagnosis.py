"""Inference helpers: recover what a student's code actually computed from its outputs."""

from __future__ import annotations

import math

import torch


def infer_scale(q, k, weights, mask=None, bias=None) -> float | None:
    """The divisor c such that weights ≈ softmax(q kᵀ / c + bias) over the allowed keys, or
    None if the weights are not such a softmax at any scale.

    Within a row, log w_j - log w_m = (s_j - s_m) / c + (bias_j - bias_m), so c is the
    least-squares slope of the score differences against the (bias-corrected) log-weight
    differences, over the keys the mask allows. Inputs should be small enough that no
    allowed weight underflows.
    """
    S = k.shape[-2]
    s = q.double() @ k.double().transpose(-2, -1)
    try:
        w = weights.double().expand(s.shape)
        allowed = torch.ones_like(s, dtype=torch.bool) if mask is None else ~mask.expand(s.shape)
        b = torch.zeros_like(s) if bias is None else bias.double().expand(s.shape)
    except RuntimeError:
        return None
    s, w, allowed, b = (t.reshape(-1, S) for t in (s, w, allowed, b))
    rows = allowed.sum(dim=-1) >= 2
    s, w, allowed, b = s[rows], w[rows], allowed[rows], b[rows]
    if not torch.isfinite(w).all() or (w[allowed] <= 0).any() or not rows.any():
        return None
    n = allowed.sum(dim=-1, keepdim=True)
    logw = torch.where(allowed, w.clamp_min(1e-300).log() - b, 0.0)
    s = torch.where(allowed, s, 0.0)
    ds = torch.where(allowed, s - s.sum(dim=-1, keepdim=True) / n, 0.0)
    dl = torch.where(allowed, logw - logw.sum(dim=-1, keepdim=True) / n, 0.0)
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
    square = round(c * c)
    if square >= 2 and math.isclose(c * c, square, rel_tol=1e-3):
        return f"{c:.4g} = √{square}, which is none of {', '.join(names)} (a model width?)"
    return f"{c:.4g}"
