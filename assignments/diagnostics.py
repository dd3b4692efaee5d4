# Generated from solutions/diagnostics.py by `make stubs`. Fill in the TODO regions, then run
# `make grade` (or `make grade EX=diagnostics`).
"""Exercise group: diagnostics and experiments on attention.

Shape legend: B batch, H heads, L query length, S key length, T sequence length, D = d_model,
d_k = D // H. Mask convention: a bool tensor, True = blocked.
"""

import torch

# ----------------------------------------------------------------------------- head entropy

# ----------------------------------------------------------------------------- the W_O experiment

# ----------------------------------------------------------------------------- LN placement

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
    #   1. scores = q @ k.transpose(-2, -1): (..., L, d_k) x (..., d_k, S) -> (..., L, S);
    #      divide by q.size(-1) ** 0.5 when `scaled`.
    #   2. weights = scores.softmax(dim=-1).
    #   3. Entropy per row: -(w log w).sum(dim=-1). A saturated softmax has weights that
    #      underflow to exactly 0, and 0 * log 0 is NaN in floating point:
    #      torch.special.xlogy(w, w) computes w log w with 0 log 0 = 0.
    #   4. Largest weight per row: weights.amax(dim=-1) (over the keys).
    #   5. Return the two means over all rows, (entropy.mean(), max_weight.mean()).
    raise NotImplementedError("softmax_saturation: not attempted yet")


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
    #   1. Start with five empty lists (or a dict of lists).
    #   2. For each d_k: gen = torch.Generator().manual_seed(seed);
    #      q = torch.randn(batch, L, d_k, generator=gen); k = the same call, after q.
    #   3. Call softmax_saturation twice (scaled=True, scaled=False) and append the four
    #      numbers.
    #   4. Return the dict, each list turned into a tensor: torch.tensor(d_ks) for "d_k",
    #      torch.stack(values) (or torch.tensor of floats) for the measurements.
    raise NotImplementedError("sqrt_dk_experiment: not attempted yet")
