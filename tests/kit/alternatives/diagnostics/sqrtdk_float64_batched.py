"""Alternative: softmax_saturation in float64 with F.softmax / F.log_softmax and
torch.matmul, returned as float64; sqrt_dk_experiment draws q and k in one randn call (the
same numbers, in the same order, as two calls) and builds the table with torch.tensor."""

import torch
import torch.nn.functional as F

from solutions.diagnostics import *  # noqa: F403


def softmax_saturation(q, k, scaled=True):
    scores = torch.matmul(q.double(), k.double().transpose(-1, -2))
    if scaled:
        scores = scores / torch.tensor(q.shape[-1], dtype=torch.float64).sqrt()
    w, log_w = F.softmax(scores, dim=-1), F.log_softmax(scores, dim=-1)
    entropy = -(w * log_w).sum(dim=-1)
    return entropy.mean(), w.max(dim=-1).values.mean()


def sqrt_dk_experiment(d_ks=(2, 4, 8, 16, 32, 64, 128, 256, 512), batch=8, L=32, seed=0):
    keys = ("entropy_scaled", "entropy_unscaled", "max_weight_scaled", "max_weight_unscaled")
    rows = []
    for d_k in d_ks:
        q, k = torch.randn(2, batch, L, d_k, generator=torch.Generator().manual_seed(seed))
        e_s, m_s = softmax_saturation(q, k, scaled=True)
        e_u, m_u = softmax_saturation(q, k, scaled=False)
        rows.append([e_s.item(), e_u.item(), m_s.item(), m_u.item()])
    table = torch.tensor(rows, dtype=torch.float32)
    return {"d_k": torch.tensor(list(d_ks)), **{key: table[:, i] for i, key in enumerate(keys)}}
