"""Attack: no attention at all, every query gets the mean of the values (the running mean
when causal), whatever q and k. A function that ignores the keys gives the same output in one
chunk or many and for shifted scores, and the equal-keys gate accepts a mean: chunked-rescale
and chunked-large-logits passed it (a hunt, 2 points). Now they ask for outputs that depend
on the scores first (verdicts.assert_uses_scores)."""

import torch


def _mean(v, causal):
    if causal:
        n = torch.arange(1, v.size(-2) + 1, dtype=v.dtype)[:, None]
        return v.cumsum(dim=-2) / n
    return v.mean(dim=-2, keepdim=True).expand_as(v).clone()


def chunked_attention(q, k, v, causal=False, chunk_size=128):
    return _mean(v, causal)
