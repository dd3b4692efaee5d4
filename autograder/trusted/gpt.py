"""Trusted MiniGPT, generate and the corpus helpers, used by the grader.

MiniGPT is assembled from the trusted stand-ins (trusted/blocks.py, trusted/positional.py,
trusted/masks.py), with the exercise's attribute names, so the same state_dict loads into
both. generate is written another way than solutions/ (top-k through a sorted threshold,
the mode restored by a context manager); a kit test proves both equal to the solution.
"""

from contextlib import contextmanager
from pathlib import Path

import torch
from torch import nn

from .blocks import TransformerBlock
from .masks import causal_mask
from .positional import PositionalEncoding

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus.txt"


class CharVocab:
    def __init__(self, text):
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}

    def __len__(self):
        return len(self.chars)

    def encode(self, text):
        return torch.tensor([self.index[c] for c in text], dtype=torch.int64)

    def decode(self, ids):
        return "".join(self.chars[int(i)] for i in ids)


def load_corpus(path=CORPUS):
    text = Path(path).read_text(encoding="utf-8")
    vocab = CharVocab(text)
    return text, vocab, vocab.encode(text)


class MiniGPT(nn.Module):
    def __init__(
        self,
        vocab_size,
        d_model=128,
        num_heads=4,
        num_layers=4,
        d_ff=512,
        max_len=128,
        dropout=0.1,
    ):
        super().__init__()
        self.max_len, self.d_model = max_len, d_model
        self.token_embed = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.token_embed.weight, std=0.02)
        self.pos_encoding = PositionalEncoding(d_model, max_len=max_len, dropout=dropout)
        self.blocks = nn.ModuleList(
            TransformerBlock(d_model, num_heads, d_ff, dropout, norm_first=True, activation="gelu")
            for _ in range(num_layers)
        )
        self.final_norm = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.token_embed.weight

    def forward(self, idx, return_attn=False):
        T = idx.size(1)
        if T > self.max_len:
            raise ValueError(f"sequence length {T} is longer than max_len = {self.max_len}")
        x = self.pos_encoding(self.token_embed(idx) * self.d_model**0.5)
        mask = causal_mask(T, device=idx.device)
        attn = []
        for block in self.blocks:
            x, weights = block(x, mask=mask)
            attn.append(weights)
        logits = self.lm_head(self.final_norm(x))
        return (logits, attn) if return_attn else logits


@contextmanager
def _evaluating(model):
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


def generate(model, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    with _evaluating(model), torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(idx[:, -model.max_len :])[:, -1]
            if temperature == 0:
                next_id = logits.max(dim=-1, keepdim=True).indices
            else:
                logits = logits / temperature
                if top_k is not None:
                    k = min(top_k, logits.size(-1))
                    threshold = logits.sort(dim=-1, descending=True).values[:, k - 1 : k]
                    logits = torch.where(logits >= threshold, logits, float("-inf"))
                probs = torch.softmax(logits, dim=-1)
                next_id = torch.multinomial(probs, 1, generator=generator)
            idx = torch.cat((idx, next_id), dim=1)
    return idx
