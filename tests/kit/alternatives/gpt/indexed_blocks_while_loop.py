"""Alternative: explicit indexing over the blocks, the embedding scale from the weight's
shape, the mask passed positionally; generate as a while loop under @torch.no_grad(), the
context from a start index, top-k through topk + masked_scatter."""

import torch

from solutions.gpt import CharVocab, load_corpus, train
from solutions.gpt import MiniGPT as Reference
from solutions.masks import causal_mask


class MiniGPT(Reference):
    def forward(self, idx, return_attn=False):
        B, T = idx.size()
        if not T <= self.max_len:
            raise ValueError(f"T = {T} exceeds max_len = {self.max_len}")
        scale = self.token_embed.weight.size(1) ** 0.5
        x = self.pos_encoding(self.token_embed(idx) * scale)
        mask = causal_mask(T, device=idx.device)
        weights = []
        for i in range(len(self.blocks)):
            x, w = self.blocks[i](x, mask)
            weights.append(w)
        out = self.lm_head(self.final_norm(x))
        return (out, weights) if return_attn else out


@torch.no_grad()
def generate(model, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    was_training = model.training
    model.eval()
    steps = 0
    while steps < max_new_tokens:
        start = max(idx.size(1) - model.max_len, 0)
        logits = model(idx[:, start:])[:, -1, :]
        if temperature == 0:
            nxt = logits.argmax(-1).unsqueeze(-1)
        else:
            logits = logits / temperature
            if top_k is not None:
                k = min(top_k, logits.size(-1))
                kth = logits.topk(k).values.min(dim=-1, keepdim=True).values
                keep = logits >= kth
                logits = torch.full_like(logits, float("-inf")).masked_scatter(keep, logits[keep])
            nxt = torch.multinomial(torch.softmax(logits, -1), num_samples=1, generator=generator)
        idx = torch.cat([idx, nxt], 1)
        steps += 1
    model.train(was_training)
    return idx
