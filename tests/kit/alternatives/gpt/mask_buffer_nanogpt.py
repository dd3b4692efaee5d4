"""Alternative: nanoGPT's way, the causal mask of max_len kept as a buffer (not saved with the
weights: persistent=False) and sliced to T; model.to(device) moves it with the weights."""

import torch

from solutions.gpt import CharVocab, generate, load_corpus, train
from solutions.gpt import MiniGPT as Reference


class MiniGPT(Reference):
    def __init__(self, vocab_size, d_model=128, num_heads=4, num_layers=4, d_ff=512,
                 max_len=128, dropout=0.1):  # fmt: skip
        super().__init__(vocab_size, d_model, num_heads, num_layers, d_ff, max_len, dropout)
        future = torch.ones(max_len, max_len, dtype=torch.bool).triu(1)
        self.register_buffer("future", future, persistent=False)

    def forward(self, idx, return_attn=False):
        T = idx.size(-1)
        if T > self.max_len:
            raise ValueError(f"cannot take T = {T} tokens: max_len is {self.max_len}")
        x = self.pos_encoding(self.token_embed(idx) * self.d_model**0.5)
        mask = self.future[:T, :T]
        attn = []
        for block in self.blocks:
            x, weights = block(x, mask=mask)
            attn.append(weights)
        logits = self.lm_head(self.final_norm(x))
        return (logits, attn) if return_attn else logits
