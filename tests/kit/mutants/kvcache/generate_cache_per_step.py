"""Mutant: greedy_decode makes a new cache at every step, so after the prefill each new token
attends to itself only."""

# expects: kv-generate-cache-per-step
import torch

from solutions.kvcache import *  # noqa: F403
from solutions.kvcache import KVCache


@torch.no_grad()
def greedy_decode(model, prompt, max_new_tokens, use_cache=True):
    tokens, new, logits = prompt, prompt, []
    for _ in range(max_new_tokens):
        if use_cache:
            last = model(new, KVCache(len(model.layers)))[:, -1]  # a fresh cache per step
        else:
            last = model(tokens)[:, -1]
        logits.append(last)
        new = last.argmax(dim=-1, keepdim=True)
        tokens = torch.cat([tokens, new], dim=1)
    return tokens, torch.stack(logits, dim=1)
