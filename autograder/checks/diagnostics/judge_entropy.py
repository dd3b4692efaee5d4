"""Judge side of diagnostics.py's head-entropy checks: misconceptions, models of known wrong
computations, verdicts."""

from __future__ import annotations

import math

import torch

from ...core import WRONG_TYPE, CheckList, Failure, Misconceptions, no_reference
from ...verdicts import assert_close, model, tensor
from . import probe_entropy as probe

misconception = Misconceptions(__name__)  # this module's (core.Misconceptions)

CHECKS = CheckList("diagnostics")

ENTROPY_LOG2 = misconception(
    "entropy-log2",
    "Your head entropies are in bits (log base 2); this kit measures them in nats (natural "
    "log), so a uniform row over S keys has entropy log S = ln S.",
    (
        "The unit of an entropy follows the base of its logarithm; this kit, like PyTorch's "
        "losses, measures in nats, with the natural logarithm.",
        "Use the natural logarithm: torch.log, or torch.special.xlogy, which also handles "
        "the zero weights.",
        "Use torch.log (or torch.special.xlogy), not torch.log2; a uniform row over S keys "
        "then has entropy ln S.",
    ),
)
ENTROPY_BLOCKED_ROWS = misconception(
    "entropy-counts-blocked-rows",
    "Your mean includes the fully blocked rows (all-zero weights, entropy 0): they pull "
    "the heads' entropies down although those queries attended to nothing.",
    (
        "A query whose keys are all masked attends to nothing: its row of weights is all "
        "zero, not a distribution, and says nothing about how sharp the head is.",
        "Mark the rows that have at least one non-zero weight (an any over the keys) and "
        "average the row entropies over those rows only.",
        "Keep the rows where (weights != 0).any(dim=-1) holds: sum the entropies of those "
        "rows and divide by how many there are.",
    ),
)
ENTROPY_NAN = misconception(
    "entropy-nan",
    "Your head entropy is NaN: 0 * log 0 computed as 0 * -inf. By convention 0 log 0 = 0.",
    (
        "A weight of exactly 0 adds nothing to the entropy: 0 log 0 = 0, the limit of w log "
        "w as w goes to 0. Computed literally it is 0 times minus infinity, which is NaN.",
        "Use torch.special.xlogy, which returns 0 where its first argument is 0; or set "
        "those terms to 0 with torch.where before summing.",
        "torch.special.xlogy(w, w) gives w log w with 0 for w = 0; the entropy is minus its "
        "sum over the keys.",
    ),
)
ENTROPY_SIGN = misconception(
    "entropy-sign",
    "Your head entropies are negative: entropy is -Σ w log w (log w ≤ 0, so it is ≥ 0).",
    (
        "Entropy is never negative: every weight is at most 1, so each log w is ≤ 0, and the "
        "minus sign in H = -Σ w log w makes the total ≥ 0.",
        "Negate the sum of w log w over the keys.",
        "Put the minus sign in front of the sum over the keys: H = -Σ w log w.",
    ),
)
ENTROPY_DIM = misconception(
    "entropy-wrong-dim",
    "Your entropy sums over the queries (dim=-2) instead of over the keys: each query's row "
    "of weights is the distribution.",
    (
        "Each query's row of attention weights is a probability distribution over the keys; "
        "entropy measures how spread that distribution is, so it runs along the keys.",
        "Sum w log w over the last dimension (the keys, dim=-1): one entropy per batch "
        "element, head and query.",
        "Sum w log w over dim=-1 (the keys), then average over the batch and the query rows.",
    ),
)
ENTROPY_SUMMED = misconception(
    "entropy-summed-rows",
    "Your head entropies are the sum of the rows' entropies, not their mean: a head's value "
    "then grows with the batch size and the number of queries.",
    (
        "A head's entropy is an average over its rows, so that heads stay comparable "
        "whatever the batch size or the number of queries.",
        "Per head, divide the sum over the kept rows by the number of kept rows; a head with "
        "no kept row must not divide by 0.",
        "Count the kept rows of each head over dims (0, 2), clamp the count to at least 1 "
        "(clamp_min), and divide the summed entropies by it.",
    ),
)
ENTROPY_AXES = misconception(
    "entropy-mean-wrong-axes",
    "head_entropy's result has shape {got}: one value per {per}, so you averaged over "
    "{over} instead of over the batch and the query rows.",
    (
        "head_entropy answers one question per head: how spread is its attention, on "
        "average? So the heads stay, and everything else is averaged away.",
        "Reduce the (B, H, L) row entropies over the batch dimension and the query dimension "
        "together, leaving dimension 1.",
        "Keep the heads: reduce dims (0, 2) of the (B, H, L) row entropies, giving shape (H,).",
    ),
)
CLASSIFY_LOG_S = misconception(
    "classify-relative-to-log-s",
    "Your classification compares each row's entropy with log S, but a row under a causal "
    "or padding mask may only attend to n < S keys: spread evenly, it has entropy log n, "
    "and should count as uniform.",
    (
        "How uniform a row is depends on how many keys it could attend to: under a causal or "
        "padding mask, a row with n allowed keys is perfectly even at entropy log n, not log "
        "S.",
        "Count each row's allowed keys from the mask (the entries not masked, summed over "
        "the keys) and divide the row's entropy by the log of that count.",
        "Divide each row's entropy by log n, n = the number of keys it may attend to "
        "((~mask).sum(dim=-1)); a row with fewer than 2 allowed keys cannot be judged: leave "
        "it out.",
    ),
)
CLASSIFY_WRONG = misconception(
    "classify-wrong-labels",
    "classify_heads gave {got} on {what}; expected {want}.",
    (
        "A head is collapsed when its rows put nearly all their weight on one key, uniform "
        "when they spread it evenly over the allowed keys; the thresholds apply to a "
        "normalised entropy between 0 and 1, not to a raw one.",
        "For each head, average entropy / log n over its judged rows, then compare that "
        "score with the collapsed threshold and then with the uniform threshold.",
        "Score each head by the mean over its rows of entropy / log n, then: < collapsed -> "
        "'collapsed', > uniform -> 'uniform', otherwise 'fine'.",
    ),
)

# --------------------------------------------------------------------------- models
# What head_entropy computes with a given mistake, in float64, to recognise that mistake.


@model
def _entropy(w, *, log=torch.log, keep_blocked=False, dim=-1, reduce="mean"):
    w = w.double()
    plogp = torch.where(w > 0, w * log(w.clamp_min(1e-300)), 0.0)
    row = -plogp.sum(dim=dim)  # (B, H, L) or (B, H, S)
    kept = torch.ones_like(row, dtype=torch.bool) if keep_blocked else (w != 0).any(dim=dim)
    total = (row * kept).sum(dim=(0, 2))
    return total if reduce == "sum" else total / kept.sum(dim=(0, 2)).clamp_min(1)


def _candidates(w, like):
    def lazy(**kw):
        return lambda: _entropy(w, **kw).to(like.dtype)

    return [
        (ENTROPY_LOG2, lazy(log=torch.log2), {}),
        (ENTROPY_BLOCKED_ROWS, lazy(keep_blocked=True), {}),
        (ENTROPY_SIGN, lambda: -_entropy(w).to(like.dtype), {}),
        (ENTROPY_DIM, lazy(dim=-2), {}),
        (ENTROPY_SUMMED, lazy(reduce="sum"), {}),
    ]


@model
def _labels(w, mask, *, relative_to_s=False, collapsed=0.1, uniform=0.9):
    B, H, L, S = w.shape
    allowed = torch.ones(B, H, L, S, dtype=torch.bool) if mask is None else ~mask.expand_as(w)
    n = allowed.sum(dim=-1)
    judged = (n >= 2) & (w != 0).any(dim=-1)
    w = w.double()
    row = -torch.where(w > 0, w * w.clamp_min(1e-300).log(), 0.0).sum(dim=-1)
    norm = torch.full_like(row, math.log(S)) if relative_to_s else n.clamp_min(2).double().log()
    score = (row / norm * judged).sum(dim=(0, 2)) / judged.sum(dim=(0, 2)).clamp_min(1)
    labels = []
    for h in range(H):
        if not judged[:, h].any():
            labels.append("fine")
        else:
            s = float(score[h])
            labels.append("collapsed" if s < collapsed else "uniform" if s > uniform else "fine")
    return ",".join(labels)


# --------------------------------------------------------------------------- verdicts


def _check_entropy(got, want_value, w):
    B, H, L, S = w.shape
    value = got.get("entropy")
    if type(value) is torch.Tensor and value.dim() == 1 and value.size(0) != H:
        # B, H and L differ in every input (probe_entropy), so the shape names the axes.
        axes = {
            L: ("query row", "the batch and the heads"),
            B: ("sequence", "the heads and the query rows"),
        }
        if value.size(0) in axes:
            per, over = axes[value.size(0)]
            raise Failure(ENTROPY_AXES, got=tuple(value.shape), per=per, over=over)
    value = tensor(got, "entropy", "head_entropy's result", shape=(H,))
    if not torch.isfinite(value).all():
        raise Failure(ENTROPY_NAN)
    assert_close(value, want_value, "the head entropies", _candidates(w, value))


HEAD_ENTROPY = CHECKS.exercise("head_entropy", probe=probe.probe_entropy)


@HEAD_ENTROPY.check(
    "entropy-random",
    "head_entropy matches the reference on random attention maps with fully blocked rows",
    2,
    inputs=probe.inputs_random,
)
def verdict_random(got, want, x):
    _check_entropy(got, want["entropy"], x["w"])


@HEAD_ENTROPY.check(
    "entropy-crafted",
    "head_entropy: uniform rows = log S, one-hot rows = 0, blocked rows left out",
    2,
    inputs=probe.inputs_crafted,
)
@no_reference
def verdict_crafted(got, want, x):
    # The closed forms, independent of the reference: log S, 0, log n, 0.
    closed = torch.tensor([math.log(x["S"]), 0.0, math.log(x["n"]), 0.0])
    _check_entropy(got, closed, x["w"])


CLASSIFY_HEADS = CHECKS.exercise("classify_heads", probe=probe.probe_classify)


@CLASSIFY_HEADS.check(
    "classify-heads",
    "classify_heads: collapsed / uniform / fine, relative to log n (n = allowed keys)",
    2,
    inputs=probe.inputs_classify,
)
def verdict_classify(got, want, x):
    for key, w, mask, what in (
        (
            "causal",
            x["w"],
            x["mask"],
            "causal maps (uniform, one-hot, random, peaked; heads shuffled)",
        ),
        ("random", x["random"], None, "random maps, no mask"),
    ):
        value = got.get(key)
        if type(value) is not str:
            raise Failure(WRONG_TYPE, what="classify_heads' result", expected="a list", got=value)
        if value == want[key]:
            continue
        if mask is not None and value == _labels(w, mask, relative_to_s=True):
            raise Failure(CLASSIFY_LOG_S)
        raise Failure(CLASSIFY_WRONG, got=value.split(","), want=want[key].split(","), what=what)
