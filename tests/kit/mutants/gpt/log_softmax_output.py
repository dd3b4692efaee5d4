"""Mutant: forward returns log_softmax(logits), log-probabilities instead of logits. Causal,
with one (B, H, T, T) weight tensor per block: only the logits check may charge it."""

# expects: gpt-log-softmax-output
# loses: logits
from solutions.gpt import CharVocab, generate, load_corpus, train
from solutions.gpt import MiniGPT as Reference


class MiniGPT(Reference):
    def forward(self, idx, return_attn=False):
        logits, attn = super().forward(idx, return_attn=True)
        logits = logits.log_softmax(dim=-1)
        return (logits, attn) if return_attn else logits
