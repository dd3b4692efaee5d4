"""Mutant: with the cache, every step feeds the whole sequence again."""

# expects: kv-generate-feeds-all
import torch

from solutions.kvcache import *  # noqa: F403
from solutions.kvcache import KVCache


@torch.no_grad()
def greedy_decode(model, prompt, max_new_tokens, use_cache=True):
    cache = KVCache(len(model.layers)) if use_cache else None
    tokens, logits = prompt, []
    for _ in range(max_new_tokens):
        last = model(tokens, cache)[:, -1]  # the whole sequence, cache or not
        logits.append(last)
        tokens = torch.cat([tokens, last.argmax(-1, keepdim=True)], dim=1)
    return tokens, torch.stack(logits, dim=1)
