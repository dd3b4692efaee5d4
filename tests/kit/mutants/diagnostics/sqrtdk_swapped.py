"""Mutant: the experiment files the scaled run under "unscaled" and the other way round."""

# expects: sqrtdk-scaled-swapped
import torch

from solutions.diagnostics import *  # noqa: F403
from solutions.diagnostics import softmax_saturation


def sqrt_dk_experiment(d_ks=(2, 4, 8, 16, 32, 64, 128, 256, 512), batch=8, L=32, seed=0):
    rows = []
    for d_k in d_ks:
        gen = torch.Generator().manual_seed(seed)
        q = torch.randn(batch, L, d_k, generator=gen)
        k = torch.randn(batch, L, d_k, generator=gen)
        e_s, m_s = softmax_saturation(q, k, scaled=False)
        e_u, m_u = softmax_saturation(q, k, scaled=True)
        rows.append(torch.stack([e_s, e_u, m_s, m_u]))
    table = torch.stack(rows)
    names = ("entropy_scaled", "entropy_unscaled", "max_weight_scaled", "max_weight_unscaled")
    return {"d_k": torch.tensor(d_ks), **{n: table[:, i] for i, n in enumerate(names)}}
