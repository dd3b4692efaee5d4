"""Mutant: with the cache, each step feeds the last token before the one just chosen (read
off the tokens before appending the new one), so the model sees every token one step late."""

# expects: kv-generate-feeds-previous
import torch

from solutions.kvcache import *  # noqa: F403
from solutions.kvcache import KVCache


@torch.no_grad()
def greedy_decode(model, prompt, max_new_tokens, use_cache=True):
    cache = KVCache(len(model.layers)) if use_cache else None
    tokens, new, logits = prompt, prompt, []
    for _ in range(max_new_tokens):
        last = (model(new, cache) if use_cache else model(tokens))[:, -1]
        logits.append(last)
        new = tokens[:, -1:]  # read before the chosen token is appended
        tokens = torch.cat([tokens, last.argmax(dim=-1, keepdim=True)], dim=1)
    return tokens, torch.stack(logits, dim=1)
