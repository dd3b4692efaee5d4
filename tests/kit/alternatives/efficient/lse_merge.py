"""Alternative: each key chunk is attended on its own and the partial results are merged
through their log-sum-exps (the split-K form of FlashAttention-2); the patterns go through
the kit's own masks; linear attention by einsum with a chunk-free cumsum."""

import torch
import torch.nn.functional as F

from .attention import scaled_dot_product_attention
from .masks import causal_mask, sliding_window_mask


def local_attention(q, k, v, window):
    return scaled_dot_product_attention(q, k, v, sliding_window_mask(q.size(-2), window))


def strided_attention(q, k, v, stride):
    if stride < 1:
        raise ValueError(f"stride must be >= 1, got {stride}")
    T = q.size(-2)
    i = torch.arange(T).unsqueeze(1)
    j = torch.arange(T).unsqueeze(0)
    strided = ((i - j) % stride == 0) | (i - j < stride)
    return scaled_dot_product_attention(q, k, v, causal_mask(T) | ~strided)


def linear_attention(q, k, v, causal=False, eps=1e-6):
    fq, fk = F.elu(q) + 1, F.elu(k) + 1
    if causal:
        kv = torch.einsum("...td,...te->...tde", fk, v).cumsum(dim=-3)
        z = fk.cumsum(dim=-2)
        num = torch.einsum("...td,...tde->...te", fq, kv)
        den = torch.einsum("...td,...td->...t", fq, z)
    else:
        num = torch.einsum("...td,...de->...te", fq, torch.einsum("...td,...te->...de", fk, v))
        den = torch.einsum("...td,...d->...t", fq, fk.sum(dim=-2))
    return num / (den.unsqueeze(-1) + eps)


def chunked_attention(q, k, v, causal=False, chunk_size=128):
    T, d = q.shape[-2:]
    rows = torch.arange(T)[:, None]
    out, lse = None, None
    for start in range(0, T, chunk_size):
        s = (q @ k[..., start : start + chunk_size, :].mT) * d**-0.5
        if causal:
            cols = torch.arange(start, start + s.size(-1))[None, :]
            s = s.masked_fill(cols > rows, float("-inf"))
        part_lse = torch.logsumexp(s, dim=-1, keepdim=True)  # -inf for a row with no key
        part = torch.nan_to_num(torch.exp(s - part_lse)) @ v[..., start : start + chunk_size, :]
        if out is None:
            out, lse = part, part_lse
            continue
        new_lse = torch.logaddexp(lse, part_lse)
        w_old = torch.exp(lse - new_lse)
        w_new = torch.nan_to_num(torch.exp(part_lse - new_lse))
        out, lse = out * w_old + part * w_new, new_lse
    return out
