"""Mutant: greedy_decode makes a new cache at every step and feeds it the whole sequence: the
logits are right, but no cache is ever reused."""

# expects: kv-cache-unused
# loses: incremental
import torch

from solutions.kvcache import *  # noqa: F403
from solutions.kvcache import KVCache


@torch.no_grad()
def greedy_decode(model, prompt, max_new_tokens, use_cache=True):
    tokens, logits = prompt, []
    for _ in range(max_new_tokens):
        cache = KVCache(len(model.layers)) if use_cache else None
        last = model(tokens, cache)[:, -1]
        logits.append(last)
        tokens = torch.cat([tokens, last.argmax(-1, keepdim=True)], dim=1)
    return tokens, torch.stack(logits, dim=1)
