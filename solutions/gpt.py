"""Exercise group 7 (the capstone): MiniGPT, a small decoder-only language model.

Shape legend: B batch, H heads, T sequence length, D = d_model, d_k = D // H, V vocabulary
size. Token ids are int64 tensors (B, T); logits are float tensors (B, T, V).
Mask convention: a bool tensor, True = blocked.

Everything the model needs was built in the earlier exercises: token embeddings, sinusoidal
positions (positional.py), the causal mask (masks.py) and Pre-LN Transformer blocks
(blocks.py). What is new here: the output head shares its weight with the token embedding,
the model generates text one token at a time, and a short training run teaches it a corpus.
"""

from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from .blocks import TransformerBlock
from .masks import causal_mask
from .positional import PositionalEncoding

# The kit's corpus: plain text written for the kit, shipped in data/ (no downloads).
CORPUS = Path(__file__).resolve().parent.parent / "data" / "corpus.txt"


class CharVocab:
    """A character-level vocabulary: one token id per distinct character of a text."""

    def __init__(self, text):
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}

    def __len__(self):
        return len(self.chars)

    def encode(self, text):
        """str -> 1-D int64 tensor of token ids."""
        return torch.tensor([self.index[c] for c in text], dtype=torch.int64)

    def decode(self, ids):
        """A 1-D sequence of token ids -> str."""
        return "".join(self.chars[int(i)] for i in ids)


def load_corpus(path=CORPUS):
    """(text, vocab, data): the corpus, its CharVocab and the whole text encoded (int64)."""
    text = Path(path).read_text(encoding="utf-8")
    vocab = CharVocab(text)
    return text, vocab, vocab.encode(text)


class MiniGPT(nn.Module):
    """A decoder-only Transformer: logits for the next token at every position.

    forward(idx) computes, for token ids idx (B, T):
        x = token_embed(idx) * √D + PE[:T]          (B, T, D)
        x = block_n(... block_1(x, causal mask))     Pre-LN GELU blocks
        logits = lm_head(final_norm(x))               (B, T, V)
    lm_head has no bias and shares its weight with token_embed (weight tying): the same
    (V, D) matrix reads tokens in and scores them out, and it is one parameter, not two.
    """

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
        self.max_len = max_len
        self.d_model = d_model
        self.token_embed = nn.Embedding(vocab_size, d_model)
        # Small embeddings (std 0.02, as in GPT-2): tied to the output head, N(0, 1) entries
        # would start the model with huge logits and a loss far above log V.
        nn.init.normal_(self.token_embed.weight, std=0.02)
        self.pos_encoding = PositionalEncoding(d_model, max_len=max_len, dropout=dropout)
        self.blocks = nn.ModuleList(
            TransformerBlock(d_model, num_heads, d_ff, dropout, norm_first=True, activation="gelu")
            for _ in range(num_layers)
        )
        self.final_norm = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        # TODO (MiniGPT): tie the output head to the token embedding, one line.
        #   Both weights are (V, D). Make lm_head.weight *the same Parameter object* as
        #   token_embed.weight (plain assignment of the Parameter), so there is one storage,
        #   one gradient, and model.parameters() counts V * D once. Copying the values
        #   (.data.copy_, .clone()) is not tying: the two drift apart as soon as you train.
        ### BEGIN SOLUTION
        self.lm_head.weight = self.token_embed.weight
        ### END SOLUTION

    def forward(self, idx, return_attn=False):
        """Logits for the next token at every position.

        Args:
            idx: (B, T) int64 token ids, T <= max_len.
            return_attn: also return every block's attention weights.

        Returns:
            logits (B, T, V); with return_attn=True, (logits, weights) where weights is a
            list of num_layers tensors (B, H, T, T), first block first.

        Raises:
            ValueError: when T > max_len (there are no positions beyond max_len).
        """
        # TODO (MiniGPT.forward): about 12 lines.
        #   1. B, T = idx.shape. If T > self.max_len, raise ValueError naming T and max_len.
        #   2. x = self.token_embed(idx) * self.d_model ** 0.5: (B, T) -> (B, T, D). The
        #      √D keeps the embeddings (small, since they double as the output weights) on
        #      the scale of the positional encoding, whose entries are of order 1.
        #   3. x = self.pos_encoding(x) adds the positions.
        #   4. mask = causal_mask(T, device=idx.device): (T, T), True above the diagonal.
        #   5. For each block: x, weights = block(x, mask=mask); keep the weights in a list.
        #   6. logits = self.lm_head(self.final_norm(x)): (B, T, D) -> (B, T, V).
        #   7. Return logits, or (logits, the list) when return_attn.
        ### BEGIN SOLUTION
        B, T = idx.shape
        if T > self.max_len:
            raise ValueError(
                f"sequence length T = {T} is longer than max_len = {self.max_len}; "
                f"feed at most the last {self.max_len} tokens"
            )
        x = self.token_embed(idx) * self.d_model**0.5  # (B, T) -> (B, T, D)
        x = self.pos_encoding(x)  # + PE[:T], (B, T, D)
        mask = causal_mask(T, device=idx.device)  # (T, T), True = the future
        attn = []
        for block in self.blocks:
            x, weights = block(x, mask=mask)  # (B, T, D), (B, H, T, T)
            attn.append(weights)
        logits = self.lm_head(self.final_norm(x))  # (B, T, D) -> (B, T, V)
        return (logits, attn) if return_attn else logits
        ### END SOLUTION


def generate(model, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    """Extend each sequence of idx by max_new_tokens tokens, one at a time.

    Each step feeds the last model.max_len tokens (the context), takes the logits at the
    last position, and picks the next token:
      - temperature == 0: greedy, the argmax;
      - otherwise: logits / temperature; with top_k, every logit below the k-th largest
        becomes -inf (ties with the k-th are kept; k larger than V means all of V); then
        torch.multinomial(softmax(logits), 1, generator=generator).

    Args:
        model: a MiniGPT (anything with .max_len whose forward maps (B, T) to (B, T, V)).
        idx: (B, T) int64 token ids, the prompt.
        generator: a torch.Generator, so that sampling is reproducible.

    Returns:
        (B, T + max_new_tokens) int64: the prompt followed by the new tokens.

    Runs without gradient tracking and in eval mode (no dropout), and leaves the model in
    the train/eval mode it found it in.
    """
    # TODO (generate): about 18 lines.
    #   1. Remember was_training = model.training, then model.eval().
    #   2. Inside `with torch.no_grad():`, loop max_new_tokens times:
    #      a. context = idx[:, -model.max_len:] (the model has no positions beyond max_len);
    #      b. logits = model(context)[:, -1, :]: (B, T, V) -> (B, V), the last position;
    #      c. temperature == 0: next_id = logits.argmax(dim=-1, keepdim=True), (B, 1);
    #      d. otherwise divide the logits by temperature (before the softmax: dividing the
    #         probabilities afterwards changes nothing once multinomial renormalises them);
    #         with top_k, k = min(top_k, V), kth = torch.topk(logits, k).values[:, -1:],
    #         logits = logits.masked_fill(logits < kth, float("-inf")) (before sampling);
    #         next_id = torch.multinomial(logits.softmax(dim=-1), 1, generator=generator);
    #      e. idx = torch.cat([idx, next_id], dim=1).
    #   3. model.train(was_training), in a `finally:` so it happens even on an error.
    ### BEGIN SOLUTION
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for _ in range(max_new_tokens):
                context = idx[:, -model.max_len :]  # (B, <= max_len)
                logits = model(context)[:, -1, :]  # (B, T, V) -> (B, V)
                if temperature == 0:
                    next_id = logits.argmax(dim=-1, keepdim=True)  # (B, 1)
                else:
                    logits = logits / temperature
                    if top_k is not None:
                        k = min(top_k, logits.size(-1))
                        kth = torch.topk(logits, k, dim=-1).values[:, -1:]  # (B, 1)
                        logits = logits.masked_fill(logits < kth, float("-inf"))
                    probs = logits.softmax(dim=-1)  # (B, V)
                    next_id = torch.multinomial(probs, 1, generator=generator)  # (B, 1)
                idx = torch.cat([idx, next_id], dim=1)  # (B, T + 1)
    finally:
        model.train(was_training)
    return idx
    ### END SOLUTION


def train(model, data, steps=300, batch_size=32, seq_len=64, lr=3e-3, generator=None):
    """Train model to predict the next token of `data`, and return the loss of every step.

    Args:
        model: a MiniGPT; seq_len must be at most model.max_len.
        data: 1-D int64 tensor, a whole corpus encoded as token ids.
        steps: the number of optimiser steps.
        batch_size, seq_len: each step trains on batch_size windows of seq_len tokens.
        lr: the learning rate of torch.optim.AdamW.
        generator: a torch.Generator for drawing the windows (reproducible runs).

    Returns:
        a list of `steps` floats: the mean cross-entropy (nats per token) of each step's
        batch, before that step's update.
    """
    # TODO (train): about 14 lines.
    #   1. optimizer = torch.optim.AdamW(model.parameters(), lr=lr); model.train().
    #   2. Each step, draw batch_size window starts with
    #      torch.randint(len(data) - seq_len, (batch_size,), generator=generator).
    #      x = the windows data[s : s + seq_len]       (stack them: (B, T))
    #      y = the same windows shifted by one token, data[s + 1 : s + seq_len + 1]:
    #      position t of x must predict token t + 1 (the targets are the *next* tokens).
    #   3. logits = model(x): (B, T, V). loss = F.cross_entropy(logits.reshape(-1, V),
    #      y.reshape(-1)): cross_entropy wants (N, V) scores and (N,) class ids.
    #   4. optimizer.zero_grad(), loss.backward(), optimizer.step().
    #   5. Append loss.item() to the list you return.
    ### BEGIN SOLUTION
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    offsets = torch.arange(seq_len)  # (T,)
    losses = []
    for _ in range(steps):
        starts = torch.randint(len(data) - seq_len, (batch_size,), generator=generator)
        x = data[starts[:, None] + offsets]  # (B, T)
        y = data[starts[:, None] + offsets + 1]  # (B, T), the next tokens
        logits = model(x)  # (B, T, V)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
    ### END SOLUTION
