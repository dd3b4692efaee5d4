# Generated from solutions/gpt.py by `make stubs`. Fill in the TODO regions, then run
# `make grade` (or `make grade EX=gpt`).
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
        #   Both weights are (V, D). lm_head's weight must BE token_embed's Parameter (the same
        #   object, by plain assignment), so there is one storage, one gradient, and
        #   model.parameters() counts V·D once. Copying the values (.data.copy_, .clone()) is not
        #   tying: the two drift apart as soon as you train.
        raise NotImplementedError("__init__: not attempted yet")

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

        Differentiable: gradients flow from the output back to every weight (nothing in between
        under torch.no_grad, .detach(), .item() or NumPy).
        """
        # TODO (MiniGPT.forward): about 12 lines: the docstring's three equations.
        #   1. T longer than self.max_len: raise ValueError with a message naming T and max_len.
        #   2. Embed the tokens and multiply by √D, (B, T) -> (B, T, D): the embeddings are small
        #      (they double as the output weights), and √D brings them to the scale of the
        #      positional encoding, whose entries are of order 1. Then add the positions
        #      (self.pos_encoding).
        #   3. One causal mask (T, T) on idx's device, shared by every block.  Use: causal_mask.
        #   4. Each block maps (B, T, D) to (B, T, D) and also returns its weights (B, H, T, T):
        #      keep them in a list, first block first.
        #   5. The final norm, then the head: (B, T, D) -> (B, T, V).
        #   6. Return the logits, or (logits, the list) when return_attn.
        raise NotImplementedError("forward: not attempted yet")


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
    #   1. Remember whether the model was training, switch it to eval mode, and restore the old
    #      mode in a `finally:` so that it happens even on an error.
    #      Use: model.training, model.eval, model.train.
    #   2. Without gradients (torch.no_grad), repeat max_new_tokens times:
    #      a. the context is the last model.max_len tokens (there are no positions beyond);
    #      b. keep the last position's logits only: (B, T, V) -> (B, V);
    #      c. temperature 0: the argmax of each row, kept as (B, 1);
    #      d. otherwise divide the LOGITS by the temperature (dividing the probabilities would
    #         change nothing once they are renormalised); with top_k, k = min(top_k, V), and
    #         every logit below the k-th largest of its row becomes -inf (ties with the k-th are
    #         kept); then draw one id per row from the softmax, with the given generator.
    #         Use: torch.topk, Tensor.masked_fill, Tensor.softmax, torch.multinomial.
    #      e. append the new ids: (B, T) -> (B, T + 1).  Use: torch.cat.
    raise NotImplementedError("generate: not attempted yet")


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
    #   1. AdamW over all the model's parameters, learning rate lr; the model in train mode.
    #   2. Each step, batch_size random window starts in [0, len(data) - seq_len), drawn with
    #      torch.randint and the given generator, shape (batch_size,).
    #      x: the windows of seq_len tokens, (B, T). y: the same windows one token later, since
    #      position t of x must predict token t + 1 (the targets are the *next* tokens).
    #      Use: indexing data with a (B, T) tensor of positions, or torch.stack of slices.
    #   3. The loss: cross-entropy between the logits (B, T, V) and y (B, T); F.cross_entropy
    #      wants (N, V) scores and (N,) class ids, so flatten both.
    #   4. The usual update: clear the gradients, backpropagate, step the optimiser.
    #   5. Record each step's loss as a Python float (Tensor.item); return the list.
    raise NotImplementedError("train: not attempted yet")
