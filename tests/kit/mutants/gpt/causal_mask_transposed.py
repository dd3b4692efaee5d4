"""Mutant: the blocks run with the causal mask transposed (causal_mask(T).T: True = blocked
below the diagonal, so each query sees itself and the later keys, never the earlier ones)."""

# expects: gpt-no-causal-mask
# loses: causal, return-attn
from solutions.gpt import CharVocab, generate, load_corpus, train
from solutions.gpt import MiniGPT as Reference
from solutions.masks import causal_mask


class MiniGPT(Reference):
    def forward(self, idx, return_attn=False):
        B, T = idx.shape
        if T > self.max_len:
            raise ValueError(f"T = {T} > max_len = {self.max_len}")
        x = self.token_embed(idx) * self.d_model**0.5
        x = self.pos_encoding(x)
        mask = causal_mask(T, device=idx.device).T
        attn = []
        for block in self.blocks:
            x, weights = block(x, mask)
            attn.append(weights)
        logits = self.lm_head(self.final_norm(x))
        return (logits, attn) if return_attn else logits
