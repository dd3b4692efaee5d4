"""Mutant: greedy_decode never uses the cache: with use_cache=True it recomputes the whole
prefix at every step, as without. Its logits are right; the cache is never used."""

# expects: kv-cache-unused
# loses: incremental
import torch

from solutions.kvcache import *  # noqa: F403


@torch.no_grad()
def greedy_decode(model, prompt, max_new_tokens, use_cache=True):
    tokens, logits = prompt, []
    for _ in range(max_new_tokens):
        last = model(tokens)[:, -1]
        logits.append(last)
        tokens = torch.cat([tokens, last.argmax(-1, keepdim=True)], dim=1)
    return tokens, torch.stack(logits, dim=1)
