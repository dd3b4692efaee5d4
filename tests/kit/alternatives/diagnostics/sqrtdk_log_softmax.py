"""Alternative: entropy from log_softmax (finite at saturation), draws kept in the order given,
results gathered as Python floats."""

import torch

from solutions.diagnostics import *  # noqa: F403


def softmax_saturation(q, k, scaled=True):
    d_k = q.shape[-1]
    scores = torch.einsum("...ld,...sd->...ls", q, k)
    if scaled:
        scores = scores * d_k**-0.5
    log_w = torch.log_softmax(scores, dim=-1)
    w = log_w.exp()
    entropy = -(w * log_w).sum(-1)  # log_w is finite, so 0 * log_w = 0
    return entropy.flatten().mean(), w.max(dim=-1).values.flatten().mean()


def sqrt_dk_experiment(d_ks=(2, 4, 8, 16, 32, 64, 128, 256, 512), batch=8, L=32, seed=0):
    names = ("entropy_scaled", "max_weight_scaled", "entropy_unscaled", "max_weight_unscaled")
    table = {name: [] for name in names}
    for d_k in d_ks:
        gen = torch.Generator()
        gen.manual_seed(seed)
        q, k = (torch.randn(batch, L, d_k, generator=gen) for _ in range(2))
        for tag, scaled in (("scaled", True), ("unscaled", False)):
            entropy, largest = softmax_saturation(q, k, scaled)
            table[f"entropy_{tag}"].append(entropy.item())
            table[f"max_weight_{tag}"].append(largest.item())
    result = {name: torch.tensor(values) for name, values in table.items()}
    result["d_k"] = torch.tensor(list(d_ks))
    return result
