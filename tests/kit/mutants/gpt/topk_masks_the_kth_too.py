"""Mutant: top-k masks the logits at or below the k-th largest (<= where < belongs): it keeps
k - 1 tokens, none for top_k = 1, and torch.multinomial gets a row of NaN."""

# expects: sampling-invalid-probabilities
# loses: generate-top-k
import torch

from solutions.gpt import CharVocab, MiniGPT, load_corpus, train


def generate(model, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for _ in range(max_new_tokens):
                context = idx[:, -model.max_len :]
                logits = model(context)[:, -1, :]
                if temperature == 0:
                    next_id = logits.argmax(dim=-1, keepdim=True)
                else:
                    logits = logits / temperature
                    if top_k is not None:
                        k = min(top_k, logits.size(-1))
                        kth = torch.topk(logits, k, dim=-1).values[:, -1:]
                        logits = logits.masked_fill(logits <= kth, float("-inf"))
                    probs = logits.softmax(dim=-1)
                    next_id = torch.multinomial(probs, 1, generator=generator)
                idx = torch.cat([idx, next_id], dim=1)
    finally:
        model.train(was_training)
    return idx
