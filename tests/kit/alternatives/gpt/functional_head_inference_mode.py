"""Alternative: forward scores with F.linear on the embedding matrix itself (the tied
weight), the mask from torch.tril, the scale as math.sqrt(D); generate under
torch.inference_mode, with top-k through a sorted threshold and torch.where, the mode
restored by hand."""

import math

import torch
import torch.nn.functional as F

from solutions.gpt import CharVocab, load_corpus, train
from solutions.gpt import MiniGPT as Reference


class MiniGPT(Reference):
    def forward(self, idx, return_attn=False):
        T = idx.shape[-1]
        if T > self.max_len:
            raise ValueError(f"got {T} tokens; this model has positions for {self.max_len}")
        D = self.token_embed.weight.shape[1]
        x = self.pos_encoding(F.embedding(idx, self.token_embed.weight) * math.sqrt(D))
        allowed = torch.tril(torch.ones(T, T, device=idx.device)).bool()
        maps = []
        for block in self.blocks:
            x, w = block(x, mask=~allowed)
            maps.append(w)
        logits = F.linear(self.final_norm(x), self.token_embed.weight)
        if return_attn:
            return logits, maps
        return logits


@torch.inference_mode()
def generate(model, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    mode = model.training
    model.train(False)
    try:
        for _ in range(max_new_tokens):
            last = model(idx[:, max(0, idx.shape[1] - model.max_len) :])[:, -1]
            if temperature == 0:
                choice = torch.max(last, dim=1, keepdim=True).indices
            else:
                last = last / temperature
                if top_k is not None:
                    k = min(top_k, last.shape[-1])
                    cutoff = torch.sort(last, dim=-1, descending=True).values[:, k - 1 : k]
                    last = torch.where(last < cutoff, torch.full_like(last, -math.inf), last)
                choice = torch.multinomial(F.softmax(last, dim=-1), 1, generator=generator)
            idx = torch.cat((idx, choice), dim=-1)
    finally:
        model.train(mode)
    return idx
