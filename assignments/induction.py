# Generated from solutions/induction.py by `make stubs`. Fill in the TODO regions, then run
# `make grade` (or `make grade EX=induction`).
"""Exercise group 17: induction heads, found inside a two-layer attention-only transformer.

Show a language model a random sequence of tokens twice, and from the second copy on it
predicts every next token almost perfectly: it looks back to where the current token occurred
before and copies the token that followed it. Olsson et al. (2022) call the attention head that
does this an *induction head*. It cannot work alone: to attend to "the token after the earlier
occurrence" it needs, at every position, a key that says which token came *before* it, and
that is written by a *previous-token head* in an earlier layer (K-composition).

You train the smallest model in which the pair forms (two layers of attention only, no
feed-forward, no norms; given), find the two heads by their attention patterns, and show that
the in-context loss drop on the repeated half is their work: it disappears when the circuit is
ablated (its heads' outputs zeroed).

Shape legend: B batch, H heads per layer, P period (the length of the random half), T = 2P
sequence length, L layers (here the number of layers; weights are self-attention, so queries
and keys are both T long), D = d_model, d_k = D // H, V vocabulary size. A head is named by
a pair (layer, head) of ints, both counted from 0.
"""

import math

import torch
from torch import nn
from torch.nn import functional as F


class AttentionOnlyLayer(nn.Module):
    """Causal multi-head self-attention, added to the residual stream by the model (given).

    `forward(x (B, T, D), mask (T, T) bool (True = blocked), keep (H,) float or None)` ->
    `(out (B, T, D), weights (B, H, T, T))`: head h's output (weights @ v, (B, T, d_k)) is
    multiplied by keep[h] before the heads are merged and projected by w_o, so keep[h] = 0
    ablates head h (its output zeroed; its attention weights are still returned).
    """

    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
        self.num_heads, self.d_k = num_heads, d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model, bias=False)
        self.w_k = nn.Linear(d_model, d_model, bias=False)
        self.w_v = nn.Linear(d_model, d_model, bias=False)
        self.w_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, mask, keep=None):
        B, T, D = x.shape

        def split(t):  # (B, T, D) -> (B, H, T, d_k)
            return t.reshape(B, T, self.num_heads, self.d_k).transpose(1, 2)

        q, k, v = split(self.w_q(x)), split(self.w_k(x)), split(self.w_v(x))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)  # (B, H, T, T)
        weights = scores.masked_fill(mask, float("-inf")).softmax(dim=-1)
        heads = weights @ v  # (B, H, T, d_k)
        if keep is not None:
            heads = heads * keep.to(heads.dtype)[:, None, None]  # head h times keep[h]
        return self.w_o(heads.transpose(1, 2).reshape(B, T, D)), weights


class AttentionOnlyTransformer(nn.Module):
    """A decoder of attention layers only (given): no feed-forward, no norm, no dropout.

        x = token_embed(idx) + pos_embed(0 .. T-1)                 (B, T, D)
        x = x + layer_l(x)          for l = 0 .. L-1, causal mask  (B, T, D)
        logits = unembed(x)                                        (B, T, V)

    `__init__(vocab_size, d_model=32, num_heads=2, num_layers=2, max_len=32)` creates, in
    this order: `token_embed` (V, D), `pos_embed` (max_len, D, learned), `layers`
    (num_layers AttentionOnlyLayers), `unembed` (D -> V, no bias); and keeps `vocab_size`,
    `num_heads`, `num_layers`, `max_len`.

    `forward(idx (B, T) int64, ablate=())` -> `(logits (B, T, V), [weights (B, H, T, T) for
    each layer])`. `ablate` lists heads (layer, head) whose outputs are zeroed.
    """

    def __init__(self, vocab_size, d_model=32, num_heads=2, num_layers=2, max_len=32):
        super().__init__()
        self.vocab_size, self.num_heads = vocab_size, num_heads
        self.num_layers, self.max_len = num_layers, max_len
        self.token_embed = nn.Embedding(vocab_size, d_model)
        self.pos_embed = nn.Embedding(max_len, d_model)
        self.layers = nn.ModuleList(
            AttentionOnlyLayer(d_model, num_heads) for _ in range(num_layers)
        )
        self.unembed = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, idx, ablate=()):
        B, T = idx.shape
        if T > self.max_len:
            raise ValueError(f"sequence length {T} exceeds max_len {self.max_len}")
        keep = torch.ones(self.num_layers, self.num_heads, device=idx.device)
        for layer, head in ablate:
            keep[layer, head] = 0.0
        x = self.token_embed(idx) + self.pos_embed(torch.arange(T, device=idx.device))
        mask = torch.ones(T, T, dtype=torch.bool, device=idx.device).triu(1)
        all_weights = []
        for layer, keep_l in zip(self.layers, keep, strict=True):
            out, weights = layer(x, mask, keep_l)
            x = x + out
            all_weights.append(weights)
        return self.unembed(x), all_weights


def repeated_tokens(batch_size, period, vocab_size, generator=None):
    """Random token sequences repeated once: (B, T = 2P) int64.

    The first half is `torch.randint(vocab_size, (batch_size, period), generator=generator)`
    (one call, exactly this one, so the grader can draw the same tokens); the second half is
    a copy of the first: tokens[:, P + j] == tokens[:, j] for j = 0 .. P-1.
    """
    # TODO (repeated_tokens): about 2 lines.
    #   Draw the first half with the one torch.randint call of the docstring (pass the
    #   generator), then put a copy of it after itself along the time axis (torch.cat, dim=1).
    raise NotImplementedError("repeated_tokens: not attempted yet")


def previous_token_scores(weights):
    """How much each head attends to the previous token: (B, H, T, T) -> (H,).

        score[h] = mean over b and over queries i = 1 .. T-1 of weights[b, h, i, i-1]

    Query 0 has no previous token and is left out of the mean (T-1 queries per sequence).
    A head that always looks one token back scores 1; a head that spreads its attention evenly
    over the causal window scores about (log T) / T.
    """
    # TODO (previous_token_scores): about 2 lines.
    #   The entries weights[..., i, i-1] form the diagonal just below the main one (query i,
    #   key i-1): torch.diagonal with an offset, over the last two dims, gives them as
    #   (B, H, T-1). Average them over the batch and over the queries, keeping the heads.
    raise NotImplementedError("previous_token_scores: not attempted yet")


def induction_scores(weights, period):
    """How much each head attends to the token *after* the current token's earlier occurrence.

    weights (B, H, T, T) of a model run on repeated_tokens (T = 2P) -> (H,):

        score[h] = mean over b and over queries i = P .. 2P-1 of weights[b, h, i, i-P+1]

    Query i of the repeated half holds a copy of token i-P; the token that followed that
    earlier occurrence sits at i-P+1, and it is the token i+1 will be. An induction head
    attends there; a head that attends to i-P (the earlier copy itself) is a "duplicate token"
    head, not an induction head. Queries of the first half have no earlier occurrence and are
    left out.
    """
    # TODO (induction_scores): about 3 lines.
    #   Pick, for each query i of the repeated half (P .. 2P-1), the key i - P + 1: advanced
    #   indexing with two index tensors of length P (torch.arange) on the last two dims gives
    #   (B, H, P). Average over the batch and over the queries, keeping the heads.
    raise NotImplementedError("induction_scores: not attempted yet")


def head_scores(model, tokens, period):
    """Every head's two scores on a batch of repeated tokens: -> (previous (L, H), induction
    (L, H)), float tensors, row l for layer l.

    Run the model once on tokens (B, 2P) without gradients and score the attention weights of
    each layer with previous_token_scores and induction_scores.
    """
    # TODO (head_scores): about 4 lines.
    #   The model returns (logits, [weights per layer]); no gradients are needed
    #   (torch.no_grad). Score each layer's (B, H, T, T) weights with your two functions and
    #   stack the per-layer (H,) results into (L, H) tables (torch.stack).
    raise NotImplementedError("head_scores: not attempted yet")


def find_heads(previous, induction):
    """The induction head and the previous-token head it composes with.

    previous, induction: (L, H) score tables (head_scores), L >= 2. Returns
    `(induction_head, previous_head)`, each a pair (layer, head) of Python ints:

        induction_head = the head with the highest induction score in layers 1 .. L-1
        previous_head  = the head with the highest previous-token score in the layers before
                         the induction head's layer (0 .. layer-1)

    Layer 0 cannot hold an induction head: the key it needs ("my previous token was x") must
    be written into the residual stream by an earlier layer's previous-token head. Ties go to
    the first head in (layer, head) order.
    """
    # TODO (find_heads): about 5 lines.
    #   1) argmax of the induction table without its first row; flat index -> (layer, head)
    #      with divmod by H (remember the row you dropped).
    #   2) argmax of the previous-token table's rows above that layer, the same way.
    #   Return ints (int(...)), not tensors.
    raise NotImplementedError("find_heads: not attempted yet")


def in_context_losses(logits, tokens, period):
    """The next-token loss on each half: -> (first, repeated), two 0-dim float tensors.

    logits (B, T, V) of a model run on tokens (B, T = 2P). Position t predicts token t+1 with
    the loss -log softmax(logits[b, t])[tokens[b, t+1]] (nats). Average it

        first:    over the targets t+1 = 1 .. P-1      (the random half; target 0 has no
                  position before it)
        repeated: over the targets t+1 = P+1 .. 2P-1   (the repeated half, where an earlier
                  occurrence tells the answer; target P, the first token of the copy, is
                  left out: nothing before it says that the sequence starts again)

    and over the batch. The in-context loss drop is first - repeated.
    """
    # TODO (in_context_losses): about 5 lines.
    #   1) log-probabilities (F.log_softmax over V) of positions 0 .. T-2, and the targets,
    #      tokens shifted by one (positions 1 .. T-1); pick each target's log-probability
    #      (gather on the last dim) -> (B, T-1), entry t is the loss of target t+1.
    #   2) average the entries whose target is in 1 .. P-1, and those in P+1 .. 2P-1.
    raise NotImplementedError("in_context_losses: not attempted yet")


def loss_drop(model, tokens, period, ablate=()):
    """The in-context loss drop, first - repeated (in_context_losses), of the model on tokens
    (B, 2P), with the heads listed in `ablate` ((layer, head) pairs) zeroed: a 0-dim tensor.

    An induction circuit makes the drop large (the repeated half is predicted from context);
    ablating its heads makes it vanish. No gradients.
    """
    # TODO (loss_drop): about 3 lines: run the model with ablate (no gradients), then
    #   your in_context_losses.
    raise NotImplementedError("loss_drop: not attempted yet")


def train_induction(
    model, steps, batch_size=32, min_period=6, max_period=16, lr=1e-2, generator=None
):
    """Train the model to predict the next token of repeated random sequences; -> the list
    of the `steps` training losses (Python floats).

    Each step: draw the period P = `torch.randint(min_period, max_period + 1, (),
    generator=generator)` (a new one every step: with a fixed period the model could copy
    from a fixed position back, without any induction), the batch `repeated_tokens(batch_size,
    P, model.vocab_size, generator)`, the mean cross-entropy of every next-token prediction
    (positions 0 .. 2P-2 predict tokens 1 .. 2P-1), and one AdamW step (lr, the optimizer's
    other defaults), created once before the loop on model.parameters(). The model is in
    training mode throughout.
    """
    # TODO (train_induction): about 10 lines.
    #   1) training mode for the model, and one AdamW optimiser over its parameters (lr).
    #   2) each step: the period (int(...)), the batch, logits = model(tokens)[0], the loss
    #      F.cross_entropy(logits[:, :-1] flattened to (N, V), tokens[:, 1:] flattened),
    #      zero_grad, backward, step; keep loss.item().
    raise NotImplementedError("train_induction: not attempted yet")
