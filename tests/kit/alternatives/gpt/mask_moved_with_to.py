"""Alternative: the causal mask made on the CPU and moved to idx's device with .to, passed
positionally (right on any device)."""

from solutions.gpt import CharVocab, generate, load_corpus, train
from solutions.gpt import MiniGPT as Reference
from solutions.masks import causal_mask


class MiniGPT(Reference):
    def forward(self, idx, return_attn=False):
        T = idx.shape[1]
        if T > self.max_len:
            raise ValueError(f"T = {T} > max_len = {self.max_len}")
        h = self.token_embed(idx) * self.d_model**0.5
        h = self.pos_encoding(h)
        mask = causal_mask(T).to(idx.device)
        maps = []
        for block in self.blocks:
            h, w = block(h, mask)
            maps.append(w)
        logits = self.lm_head(self.final_norm(h))
        return (logits, maps) if return_attn else logits
