"""Mutant: the context is cropped one token short (the last max_len - 1 tokens), at every
step, before the sequence is longer than max_len too: the sampling is right given what it fed
the model, so only the crop check is charged (principle 10)."""

# expects: gen-wrong-context
# loses: generate-crop
import torch

from solutions.gpt import CharVocab, MiniGPT, load_corpus, train


def generate(model, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for _ in range(max_new_tokens):
                context = idx[:, -(model.max_len - 1) :]
                logits = model(context)[:, -1, :]
                if temperature == 0:
                    next_id = logits.argmax(dim=-1, keepdim=True)
                else:
                    logits = logits / temperature
                    if top_k is not None:
                        k = min(top_k, logits.size(-1))
                        kth = torch.topk(logits, k, dim=-1).values[:, -1:]
                        logits = logits.masked_fill(logits < kth, float("-inf"))
                    probs = logits.softmax(dim=-1)
                    next_id = torch.multinomial(probs, 1, generator=generator)
                idx = torch.cat([idx, next_id], dim=1)
    finally:
        model.train(was_training)
    return idx
