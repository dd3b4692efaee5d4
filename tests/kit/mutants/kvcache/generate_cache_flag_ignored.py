"""Mutant: greedy_decode always uses a cache, use_cache=False included."""

# expects: kv-cache-flag-ignored
# loses: generate
import torch

from solutions.kvcache import *  # noqa: F403
from solutions.kvcache import KVCache


@torch.no_grad()
def greedy_decode(model, prompt, max_new_tokens, use_cache=True):
    cache = KVCache(len(model.layers))
    tokens, new, logits = prompt, prompt, []
    for _ in range(max_new_tokens):
        last = model(new, cache)[:, -1]
        logits.append(last)
        new = last.argmax(-1, keepdim=True)
        tokens = torch.cat([tokens, new], dim=1)
    return tokens, torch.stack(logits, dim=1)
