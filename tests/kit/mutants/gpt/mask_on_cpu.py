"""Mutant: forward makes the causal mask without idx's device (causal_mask(T)): right on a
CPU, a crash on a GPU."""

# expects: gpt-mask-on-cpu
# loses: causal
from solutions.gpt import CharVocab, generate, load_corpus, train
from solutions.gpt import MiniGPT as Reference
from solutions.masks import causal_mask


class MiniGPT(Reference):
    def forward(self, idx, return_attn=False):
        B, T = idx.shape
        if T > self.max_len:
            raise ValueError(f"T = {T} is longer than max_len = {self.max_len}")
        x = self.pos_encoding(self.token_embed(idx) * self.d_model**0.5)
        mask = causal_mask(T)
        attn = []
        for block in self.blocks:
            x, weights = block(x, mask=mask)
            attn.append(weights)
        logits = self.lm_head(self.final_norm(x))
        return (logits, attn) if return_attn else logits
