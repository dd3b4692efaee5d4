"""Mutant: each new token goes onto the cropped context instead of the whole sequence: once
the sequence is longer than max_len, its first tokens are lost."""

# expects: gen-wrong-context
# loses: generate-crop
import torch

from solutions.gpt import CharVocab, MiniGPT, load_corpus, train  # noqa: F401


def generate(model, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for _ in range(max_new_tokens):
                idx = idx[:, -model.max_len :]
                logits = model(idx)[:, -1, :]
                if temperature == 0:
                    next_id = logits.argmax(dim=-1, keepdim=True)
                else:
                    logits = logits / temperature
                    if top_k is not None:
                        kth = logits.topk(min(top_k, logits.size(-1)), dim=-1).values[:, -1:]
                        logits = logits.masked_fill(logits < kth, float("-inf"))
                    next_id = torch.multinomial(logits.softmax(dim=-1), 1, generator=generator)
                idx = torch.cat([idx, next_id], dim=1)
    finally:
        model.train(was_training)
    return idx
