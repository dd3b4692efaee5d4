"""Mutant: torch.multinomial without the generator it was given: the draws come from torch's
global generator, and a seeded run cannot be reproduced."""

# expects: gen-generator-unused
# loses: generate-sample
import torch

from solutions.gpt import CharVocab, MiniGPT, load_corpus, train  # noqa: F401


def generate(model, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for _ in range(max_new_tokens):
                logits = model(idx[:, -model.max_len :])[:, -1, :]
                if temperature == 0:
                    next_id = logits.argmax(dim=-1, keepdim=True)
                else:
                    logits = logits / temperature
                    if top_k is not None:
                        kth = logits.topk(min(top_k, logits.size(-1)), dim=-1).values[:, -1:]
                        logits = logits.masked_fill(logits < kth, float("-inf"))
                    next_id = torch.multinomial(logits.softmax(dim=-1), 1)
                idx = torch.cat([idx, next_id], dim=1)
    finally:
        model.train(was_training)
    return idx
