"""Mutant: greedy_decode keeps one cache for the whole session (created on the first call), so a
second sequence starts with the first one's keys and values."""

# expects: kv-cache-not-reset
import torch

from solutions.kvcache import *  # noqa: F403
from solutions.kvcache import KVCache

_CACHE = {}


@torch.no_grad()
def greedy_decode(model, prompt, max_new_tokens, use_cache=True):
    cache = _CACHE.setdefault(id(model), KVCache(len(model.layers))) if use_cache else None
    tokens, step_tokens, logits = prompt, prompt, []
    for _ in range(max_new_tokens):
        last = (model(step_tokens, cache) if use_cache else model(tokens))[:, -1]
        logits.append(last)
        step_tokens = last.argmax(dim=-1, keepdim=True)
        tokens = torch.cat([tokens, step_tokens], dim=1)
    return tokens, torch.stack(logits, dim=1)
