"""Mutant: greedy_decode takes the first position's logits (logits[:, 0]), not the last: with
the cache only the prefill differs (later calls have one token); without it, every step. The
cache is right: the incremental check keeps its points, the generate check names it."""

# expects: kv-first-position-logits
# loses: generate
import torch

from solutions.kvcache import *  # noqa: F403
from solutions.kvcache import KVCache


@torch.no_grad()
def greedy_decode(model, prompt, max_new_tokens, use_cache=True):
    cache = KVCache(len(model.layers)) if use_cache else None
    tokens, new, chosen_from = prompt, prompt, []
    for _ in range(max_new_tokens):
        logits = model(new, cache) if use_cache else model(tokens)
        first = logits[:, 0]
        next_token = first.argmax(dim=-1, keepdim=True)
        tokens = torch.cat([tokens, next_token], dim=1)
        new = next_token
        chosen_from.append(first)
    return tokens, torch.stack(chosen_from, dim=1)
