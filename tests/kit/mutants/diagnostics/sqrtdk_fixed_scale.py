"""Mutant: the "scaled" scores are divided by a fixed 8 (√64), whatever d_k is."""

# expects: sqrtdk-finding-scaled
import torch

from solutions.diagnostics import *  # noqa: F403


def softmax_saturation(q, k, scaled=True):
    scores = q @ k.transpose(-2, -1)
    if scaled:
        scores = scores / 8.0
    w = scores.softmax(dim=-1)
    return -torch.special.xlogy(w, w).sum(dim=-1).mean(), w.amax(dim=-1).mean()


def sqrt_dk_experiment(d_ks=(2, 4, 8, 16, 32, 64, 128, 256, 512), batch=8, L=32, seed=0):
    out = {n: [] for n in ("entropy_scaled", "entropy_unscaled")}
    out.update({n: [] for n in ("max_weight_scaled", "max_weight_unscaled")})
    for d_k in d_ks:
        gen = torch.Generator().manual_seed(seed)
        q = torch.randn(batch, L, d_k, generator=gen)
        k = torch.randn(batch, L, d_k, generator=gen)
        for scaled, tag in ((True, "scaled"), (False, "unscaled")):
            e, m = softmax_saturation(q, k, scaled)
            out[f"entropy_{tag}"].append(e)
            out[f"max_weight_{tag}"].append(m)
    return {"d_k": torch.tensor(d_ks), **{n: torch.stack(v) for n, v in out.items()}}
