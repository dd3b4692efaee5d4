"""Alternative: @torch.no_grad(), top-k through a sorted threshold, torch.where."""

import torch

from solutions.gpt import CharVocab, MiniGPT, load_corpus, train


@torch.no_grad()
def generate(model, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    mode = model.training
    model.train(False)
    for _ in range(max_new_tokens):
        scores = model(idx[:, max(0, idx.size(1) - model.max_len) :])[:, -1]
        if temperature == 0:
            choice = scores.argmax(-1)[:, None]
        else:
            scores = scores / temperature
            if top_k:
                k = min(top_k, scores.shape[-1])
                floor = scores.sort(dim=-1, descending=True).values[:, k - 1, None]
                scores = torch.where(scores < floor, -torch.inf, scores)
            choice = torch.multinomial(torch.softmax(scores, -1), 1, generator=generator)
        idx = torch.cat((idx, choice), 1)
    model.train(mode)
    return idx
