"""Alternative: the embedding takes the head's Parameter, the mask is built inline, and the
embedding scale is math.sqrt(D)."""

import math

import torch

from solutions.gpt import CharVocab, generate, load_corpus, train
from solutions.gpt import MiniGPT as Reference


class MiniGPT(Reference):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.token_embed.weight = self.lm_head.weight

    def forward(self, idx, return_attn=False):
        T = idx.size(-1)
        if T > self.max_len:
            raise ValueError(f"{T} tokens, but max_len is {self.max_len}")
        h = self.pos_encoding(self.token_embed(idx) * math.sqrt(self.token_embed.embedding_dim))
        future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=idx.device), diagonal=1)
        maps = []
        for block in self.blocks:
            h, w = block(h, future)
            maps.append(w)
        out = self.lm_head(self.final_norm(h))
        return (out, maps) if return_attn else out
