"""Exercise group 6: diagnostics and experiments on attention.

Shape legend: B batch, H heads, L query length, S key length, T sequence length, D = d_model,
d_k = D // H. Mask convention: a bool tensor, True = blocked.
"""

import torch
import torch.nn.functional as F
from torch import nn

from .multihead import MultiHeadAttention

# ----------------------------------------------------------------------------- head entropy

# A head's entropy says how spread out its attention is: a row spread evenly over n keys has
# entropy log n (the most it can have), a row with all its weight on one key has entropy 0.
# Comparing a row with log n, the n keys it may attend to, rather than log S, keeps causal
# and padded rows (which have fewer keys) from looking "focused" just because they are short.

# Thresholds of classify_heads, as fractions of log n (n = the keys a row may attend to).
COLLAPSED_BELOW = 0.1  # e.g. ≥ 97% of the weight on one key out of 16
UNIFORM_ABOVE = 0.9  # close to spreading the weight evenly over every allowed key


def head_entropy(weights):
    """The mean attention entropy of each head.

    Args:
        weights: (B, H, L, S) attention weights; each row sums to 1, or is all zero when
            the query had no key to attend to (a fully blocked row).

    Returns:
        (H,): for each head, the mean over the batch and the query rows of
        -Σ_s w_s log w_s (natural log, nats; 0 log 0 = 0). All-zero rows are left out of
        the mean; a head whose rows are all left out has entropy 0.
    """
    # TODO (head_entropy): about 5 lines.
    #   1. The entropy of every row, -Σ_s w log w: (B, H, L, S) -> (B, H, L). 0 log 0 must
    #      count as 0, and w times log w gives NaN there.  Use: torch.special.xlogy.
    #   2. The rows to keep: those with at least one non-zero weight, (B, H, L).
    #   3. Per head: the kept rows' entropies summed over the batch and the queries, divided by
    #      how many were kept (a head with no kept row gets 0, never 0 / 0).
    #      Use: Tensor.sum over two dims, Tensor.clamp_min.
    ### BEGIN SOLUTION
    row = -torch.special.xlogy(weights, weights).sum(dim=-1)  # (B, H, L)
    kept = (weights != 0).any(dim=-1)  # (B, H, L): fully blocked rows are left out
    total = (row * kept).sum(dim=(0, 2))  # (H,)
    return total / kept.sum(dim=(0, 2)).clamp_min(1)  # (H,); 0 for a head with no kept row
    ### END SOLUTION


def classify_heads(weights, mask=None, collapsed=COLLAPSED_BELOW, uniform=UNIFORM_ABOVE):
    """Label each head "collapsed", "uniform" or "fine" from its attention entropy.

    Each row's entropy is divided by log n, n = the number of keys that row may attend to
    (S minus the keys `mask` blocks): 0 means all weight on one key, 1 means spread evenly
    over every allowed key. A head's score is the mean of that ratio over its rows, leaving
    out rows with n < 2 (nothing to choose from) and all-zero rows.

    Args:
        weights: (B, H, L, S) attention weights.
        mask: optional bool tensor broadcastable to (B, H, L, S), True = blocked; the mask
            the weights were computed with. None: every key is allowed.
        collapsed, uniform: the thresholds on the score.

    Returns:
        A list of H strings: "collapsed" (score < collapsed), "uniform" (score > uniform),
        otherwise "fine" (also for a head with no row left to judge).
    """
    # TODO (classify_heads): about 10 lines.
    #   1. n, the number of keys each row may attend to, (B, H, L): every key when mask is None,
    #      otherwise those the mask (expanded to the weights' shape) does not block.
    #   2. The rows to judge: n of at least 2 (something to choose from), and not all zero.
    #   3. Per row, its entropy (as in head_entropy) divided by log n; clamp n to at least 2
    #      before the log, so that the rows you leave out never divide by log 1 = 0.
    #   4. Per head, the mean of that ratio over its judged rows (the batch and query dims).
    #   5. One label per head from the two thresholds; a head with no judged row is "fine".
    ### BEGIN SOLUTION
    B, H, L, S = weights.shape
    if mask is None:
        allowed = torch.ones(B, H, L, S, dtype=torch.bool, device=weights.device)
    else:
        allowed = ~mask.expand(B, H, L, S)
    n = allowed.sum(dim=-1)  # (B, H, L): the keys each row may attend to
    judged = (n >= 2) & (weights != 0).any(dim=-1)  # (B, H, L)
    row = -torch.special.xlogy(weights, weights).sum(dim=-1)  # (B, H, L)
    ratio = row / n.clamp_min(2).log()  # 0 = one key, 1 = even over all allowed keys
    score = (ratio * judged).sum(dim=(0, 2)) / judged.sum(dim=(0, 2)).clamp_min(1)  # (H,)
    labels = []
    for h in range(H):
        if not judged[:, h].any():
            labels.append("fine")
        elif score[h] < collapsed:
            labels.append("collapsed")
        elif score[h] > uniform:
            labels.append("uniform")
        else:
            labels.append("fine")
    return labels
    ### END SOLUTION


# ----------------------------------------------------------------------------- the W_O experiment

# Does W_O matter? The task: associative recall. A sequence shows num_pairs (key, value)
# pairs, one pair per position, then a query position holding one of those keys and no value;
# the model must output the value stored with that key. One attention layer can solve it: the
# query attends to the position whose key matches and copies its value. The experiment trains
# the same small model twice from the same initial weights, once with a learned W_O and once
# with W_O fixed to the identity (which computes exactly what "no W_O, just concatenate the
# heads" computes), and returns both loss curves.

RECALL_KEYS = 16  # key tokens 0..15
RECALL_VALUES = 16  # value tokens 0..15, and 16 = "no value" at the query position
RECALL_PAIRS = 6


def recall_batch(batch_size, num_pairs=RECALL_PAIRS, generator=None):
    """A batch of the associative-recall task (given: the kit generates its own data).

    Returns:
        keys: (B, T) int64, T = num_pairs + 1: distinct keys, then the queried key.
        values: (B, T) int64: each pair's value, then RECALL_VALUES ("no value").
        targets: (B,) int64: the value stored with the queried key.
    """
    B, n = batch_size, num_pairs
    keys = torch.rand(B, RECALL_KEYS, generator=generator).argsort(dim=-1)[:, :n]  # distinct
    values = torch.randint(RECALL_VALUES, (B, n), generator=generator)
    which = torch.randint(n, (B,), generator=generator)
    rows = torch.arange(B)
    keys = torch.cat([keys, keys[rows, which][:, None]], dim=1)
    values = torch.cat([values, torch.full((B, 1), RECALL_VALUES)], dim=1)
    return keys, values, values[rows, which]


class RecallModel(nn.Module):
    """Embeddings, one residual multi-head attention layer, LayerNorm, a linear read-out of
    the query position (given)."""

    def __init__(self, d_model=32, num_heads=4):
        super().__init__()
        self.key_embed = nn.Embedding(RECALL_KEYS, d_model)
        self.value_embed = nn.Embedding(RECALL_VALUES + 1, d_model)
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.norm = nn.LayerNorm(d_model)
        self.readout = nn.Linear(d_model, RECALL_VALUES)

    def forward(self, keys, values):
        x = self.key_embed(keys) + self.value_embed(values)  # (B, T, D)
        x = x + self.attn(x)[0]
        return self.readout(self.norm(x[:, -1]))  # (B, RECALL_VALUES): logits at the query


def fix_wo_to_identity(attn):
    """Set attn.w_o to the identity map and freeze it (no gradient, never updated)."""
    # TODO (fix_wo_to_identity): about 4 lines.
    #   1. Without recording gradients, copy the D x D identity into attn.w_o's weight, and zero
    #      its bias when it has one.  Use: torch.no_grad, torch.eye, Tensor.copy_, Tensor.zero_.
    #   2. Freeze w_o's parameters, so that backward gives them no gradient and no optimiser
    #      changes them.  Use: Tensor.requires_grad_.
    ### BEGIN SOLUTION
    with torch.no_grad():
        attn.w_o.weight.copy_(torch.eye(attn.w_o.weight.size(0)))
        if attn.w_o.bias is not None:
            attn.w_o.bias.zero_()
    for p in attn.w_o.parameters():
        p.requires_grad_(False)
    ### END SOLUTION


def train_recall(model, steps, batch_size=32, lr=3e-3, seed=0):
    """Train `model` on fresh recall batches with Adam; return the loss of every step.

    Returns:
        (steps,) float tensor: the cross-entropy of each step's batch, before that step's
        update.
    """
    # TODO (train_recall): about 10 lines. The reference curve is reproduced exactly only
    # if the random draws and the updates happen in this order:
    #   1. One torch.Generator seeded with `seed`: every batch is drawn from it.
    #   2. Adam (learning rate lr) over the parameters that require a gradient, and only those.
    #   3. Each step: a batch from recall_batch with that generator; the cross-entropy of the
    #      model's logits against the targets (F.cross_entropy); clear the gradients,
    #      backpropagate, step; record the loss as a Python float.
    #   4. Return the recorded losses as one tensor.
    ### BEGIN SOLUTION
    gen = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=lr)
    losses = []
    for _ in range(steps):
        keys, values, targets = recall_batch(batch_size, generator=gen)
        loss = F.cross_entropy(model(keys, values), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return torch.tensor(losses)
    ### END SOLUTION


def wo_experiment(steps=300, seed=0):
    """Train RecallModel twice from the same initial weights: with a learned W_O, and with
    W_O fixed to the identity.

    Returns:
        {"learned": (steps,), "identity": (steps,)}: the two loss curves.
    """
    # TODO (wo_experiment): about 7 lines.
    #   For each variant, "learned" first: seed the global RNG (torch.manual_seed) with `seed`
    #   just before building a RecallModel, so both variants start from the same weights; for
    #   "identity", fix its W_O with fix_wo_to_identity; train it with train_recall for `steps`
    #   steps and the same seed, so both see the same batches. Return the two curves in a dict.
    ### BEGIN SOLUTION
    curves = {}
    for variant in ("learned", "identity"):
        torch.manual_seed(seed)
        model = RecallModel()
        if variant == "identity":
            fix_wo_to_identity(model.attn)
        curves[variant] = train_recall(model, steps, seed=seed)
    return curves
    ### END SOLUTION


# ----------------------------------------------------------------------------- LN placement

# Where the LayerNorm sits changes how gradients reach the weights at initialisation.
# Xiong et al. (2020) showed that Post-LN has large gradients near the output, which is why
# it needs a learning-rate warm-up, while Pre-LN trains stably without one. The comparison
# only means something when nothing but the placement differs: the same weights, the same
# input, the same loss (docs/blocks.md).


def layer_gradient_norms(blocks, x, target, final_norm=None):
    """The gradient norm of each block's parameters, for one loss on one batch.

    The stack runs x through blocks[0], blocks[1], ... (each returns (x, weights)), then
    final_norm when it is given (Pre-LN stacks end with one), and the loss is the mean
    squared error F.mse_loss(out, target).

    Args:
        blocks: a sequence of N TransformerBlock.
        x, target: (B, T, D).
        final_norm: an optional nn.LayerNorm applied to the last block's output.

    Returns:
        (N,) tensor, entry l = sqrt(sum of the squared gradients of every parameter of
        blocks[l]), the gradient of this one loss only (earlier gradients do not count).
    """
    # TODO (layer_gradient_norms): about 8 lines.
    #   1. Clear every block's old gradients first: backward adds to .grad, it does not
    #      overwrite it.
    #   2. Run x through the blocks in order (each returns (x, weights)), then through
    #      final_norm when it is given; backpropagate F.mse_loss against target.
    #   3. Per block: the square root of the sum of the squares of ALL its parameters'
    #      gradients together (skip a parameter with no gradient), one number per block.
    #      Stack the N numbers into one tensor.
    ### BEGIN SOLUTION
    for block in blocks:
        block.zero_grad()
    h = x
    for block in blocks:
        h, _ = block(h)  # (B, T, D) -> (B, T, D)
    if final_norm is not None:
        h = final_norm(h)
    F.mse_loss(h, target).backward()
    norms = [
        torch.sqrt(sum(p.grad.pow(2).sum() for p in block.parameters() if p.grad is not None))
        for block in blocks
    ]
    return torch.stack(norms)  # (N,)
    ### END SOLUTION


def compare_ln_placement(
    num_layers=8, d_model=32, num_heads=4, d_ff=64, batch=4, seq_len=16, seed=0
):
    """Per-layer gradient norms at initialisation, Pre-LN against Post-LN, everything else equal.

    Builds num_layers Pre-LN TransformerBlocks (PyTorch's default initialisation, after seeding
    the global RNG with `seed`), then a Post-LN stack holding exactly the same weights
    (load_state_dict), draws one input x and one target (B, T, D) from torch.randn, and
    measures both stacks with layer_gradient_norms. The Pre-LN stack gets a final LayerNorm,
    as Pre-LN models do; the Post-LN stack already ends with one.

    Returns:
        {"pre_ln": (N,) tensor, "post_ln": (N,) tensor}.
    """
    from .blocks import TransformerBlock

    # TODO (compare_ln_placement): about 10 lines.
    #   1. Seed the global RNG with `seed`, then build num_layers Pre-LN TransformerBlocks in an
    #      nn.ModuleList (PyTorch's default initialisation).
    #   2. Build the Post-LN stack the same way, then load the Pre-LN stack's state_dict into
    #      it: the two stacks differ in the placement only.
    #   3. Only then draw x and then target, each (batch, seq_len, d_model), with torch.randn:
    #      ONE pair for both stacks (two inputs would compare two unrelated experiments).
    #   4. Measure both with layer_gradient_norms: the Pre-LN stack with a fresh final
    #      nn.LayerNorm(d_model), the Post-LN stack with none (it already ends with a norm).
    ### BEGIN SOLUTION
    torch.manual_seed(seed)
    layers = range(num_layers)
    pre = nn.ModuleList(TransformerBlock(d_model, num_heads, d_ff, norm_first=True) for _ in layers)
    post = nn.ModuleList(
        TransformerBlock(d_model, num_heads, d_ff, norm_first=False) for _ in layers
    )
    post.load_state_dict(pre.state_dict())  # the same weights: only the placement differs
    x = torch.randn(batch, seq_len, d_model)
    target = torch.randn(batch, seq_len, d_model)
    return {
        "pre_ln": layer_gradient_norms(pre, x, target, nn.LayerNorm(d_model)),
        "post_ln": layer_gradient_norms(post, x, target),
    }
    ### END SOLUTION


# ----------------------------------------------------------------------------- the √d_k experiment

# What the 1/√d_k in attention is for. With q and k of independent standard-normal entries,
# each score q·k is a sum of d_k products of variance 1, so its standard deviation is √d_k:
# without the scale, wider heads give larger scores and a softmax that puts almost all its
# weight on one key. Dividing by √d_k brings the scores back to variance 1, whatever d_k.

SQRT_DK_SIZES = (2, 4, 8, 16, 32, 64, 128, 256, 512)


def softmax_saturation(q, k, scaled=True):
    """How peaked the attention weights softmax(q kᵀ / √d_k) are, averaged over all rows.

    Args:
        q: (..., L, d_k) queries.
        k: (..., S, d_k) keys.
        scaled: divide the scores by √d_k (d_k = q.size(-1)) when True; use q kᵀ as it is
            when False.

    Returns:
        (entropy, max_weight), two 0-dim tensors: the mean over every query row of the
        entropy -Σ_s w_s log w_s (natural log, nats; 0 log 0 = 0) and of the row's largest
        weight. A uniform row over S keys has entropy log S and largest weight 1/S; a row
        with all its weight on one key has entropy 0 and largest weight 1.
    """
    # TODO (softmax_saturation): about 5 lines.
    #   1. The scores, one per (query, key): (..., L, d_k), (..., S, d_k) -> (..., L, S),
    #      divided by √d_k (the width of q) only when `scaled`.
    #   2. The weights: a softmax over the keys.
    #   3. Each row's entropy. A saturated softmax has weights that underflow to exactly 0, and
    #      0 · log 0 is NaN in floating point.  Use: torch.special.xlogy.
    #   4. Each row's largest weight.  Use: Tensor.amax.
    #   5. Return the two means over all the rows, as 0-dim tensors.
    ### BEGIN SOLUTION
    scores = q @ k.transpose(-2, -1)  # (..., L, d_k) x (..., d_k, S) -> (..., L, S)
    if scaled:
        scores = scores / q.size(-1) ** 0.5
    weights = scores.softmax(dim=-1)  # (..., L, S)
    entropy = -torch.special.xlogy(weights, weights).sum(dim=-1)  # (..., L)
    return entropy.mean(), weights.amax(dim=-1).mean()
    ### END SOLUTION


def sqrt_dk_experiment(d_ks=SQRT_DK_SIZES, batch=8, L=32, seed=0):
    """The √d_k experiment: softmax saturation with and without the scale, as d_k grows.

    For each d_k in `d_ks`, in order: a fresh generator, torch.Generator().manual_seed(seed),
    draws q = torch.randn(batch, L, d_k) and then k = torch.randn(batch, L, d_k) from it
    (standard normal entries: self-attention scores between random vectors). Both
    softmax_saturation(q, k, scaled=True) and softmax_saturation(q, k, scaled=False) are
    measured on the same q and k.

    Returns:
        a dict of 1-D tensors of length len(d_ks):
        "d_k" (int64), and "entropy_scaled", "entropy_unscaled", "max_weight_scaled",
        "max_weight_unscaled" (float32), entry i measured at d_ks[i].
    """
    # TODO (sqrt_dk_experiment): about 12 lines.
    #   For each d_k, in order: a fresh torch.Generator seeded with `seed`; draw q and then k,
    #   each (batch, L, d_k), with torch.randn from it; measure softmax_saturation on them,
    #   scaled and unscaled, and collect the four numbers.
    #   Return the dict of the docstring: "d_k" as an int64 tensor, and each measurement as a
    #   tensor of len(d_ks) entries (torch.stack of the 0-dim tensors).
    ### BEGIN SOLUTION
    names = ("entropy_scaled", "entropy_unscaled", "max_weight_scaled", "max_weight_unscaled")
    results = {name: [] for name in names}
    for d_k in d_ks:
        gen = torch.Generator().manual_seed(seed)
        q = torch.randn(batch, L, d_k, generator=gen)  # (B, L, d_k)
        k = torch.randn(batch, L, d_k, generator=gen)  # (B, S = L, d_k)
        for scaled, tag in ((True, "scaled"), (False, "unscaled")):
            entropy, max_weight = softmax_saturation(q, k, scaled=scaled)
            results[f"entropy_{tag}"].append(entropy)
            results[f"max_weight_{tag}"].append(max_weight)
    out = {"d_k": torch.tensor(d_ks, dtype=torch.int64)}
    out.update({name: torch.stack(values) for name, values in results.items()})
    return out
    ### END SOLUTION
