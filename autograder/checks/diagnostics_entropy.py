"""Checks for diagnostics.py, head entropy: head_entropy and classify_heads."""

from __future__ import annotations

import math

import torch

from ..core import WRONG_TYPE, Check, Failure, misconception
from ..verdicts import assert_close, tensor
from ._common import randn

MODULE = "diagnostics"
ORDER = 61

ENTROPY_LOG2 = misconception(
    "entropy-log2",
    "Your head entropies are in bits (log base 2); this kit measures them in nats (natural "
    "log), so a uniform row over S keys has entropy log S = ln S.",
    "Use torch.log (or torch.special.xlogy), not torch.log2.",
)
ENTROPY_BLOCKED_ROWS = misconception(
    "entropy-counts-blocked-rows",
    "Your mean includes the fully blocked rows (all-zero weights, entropy 0): they pull "
    "the heads' entropies down although those queries attended to nothing.",
    "Average only over rows with some non-zero weight: kept = (weights != 0).any(dim=-1).",
)
ENTROPY_NAN = misconception(
    "entropy-nan",
    "Your head entropy is NaN: 0 * log 0 computed as 0 * -inf. By convention 0 log 0 = 0.",
    "torch.special.xlogy(w, w) gives w log w with 0 for w = 0.",
)
ENTROPY_SIGN = misconception(
    "entropy-sign",
    "Your head entropies are negative: entropy is -Σ w log w (log w ≤ 0, so it is ≥ 0).",
    "Put the minus sign in front of the sum.",
)
ENTROPY_DIM = misconception(
    "entropy-wrong-dim",
    "Your entropy sums over the queries (dim=-2) instead of over the keys: each query's row "
    "of weights is the distribution.",
    "Sum w log w over dim=-1 (the keys), then average over the batch and the query rows.",
)
CLASSIFY_LOG_S = misconception(
    "classify-relative-to-log-s",
    "Your classification compares each row's entropy with log S, but a row under a causal "
    "or padding mask may only attend to n < S keys: spread evenly, it has entropy log n, "
    "and should count as uniform.",
    "Divide each row's entropy by log n, n = the number of keys it may attend to "
    "((~mask).sum(dim=-1)).",
)
CLASSIFY_WRONG = misconception(
    "classify-wrong-labels",
    "classify_heads gave {got} on {what}; expected {want}.",
    "Score each head by the mean over its rows of entropy / log n, then: < collapsed -> "
    "'collapsed', > uniform -> 'uniform', otherwise 'fine'.",
)


# --------------------------------------------------------------------------- trusted models


def _entropy(w, *, log=torch.log, keep_blocked=False, dim=-1):
    w = w.double()
    plogp = torch.where(w > 0, w * log(w.clamp_min(1e-300)), 0.0)
    row = -plogp.sum(dim=dim)  # (B, H, L) or (B, H, S)
    kept = torch.ones_like(row, dtype=torch.bool) if keep_blocked else (w != 0).any(dim=dim)
    return (row * kept).sum(dim=(0, 2)) / kept.sum(dim=(0, 2)).clamp_min(1)


def _candidates(w, like):
    def lazy(**kw):
        return lambda: _entropy(w, **kw).to(like.dtype)

    return [
        (ENTROPY_LOG2, lazy(log=torch.log2), {}),
        (ENTROPY_BLOCKED_ROWS, lazy(keep_blocked=True), {}),
        (ENTROPY_SIGN, lambda: -_entropy(w).to(like.dtype), {}),
        (ENTROPY_DIM, lazy(dim=-2), {}),
    ]


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


# --------------------------------------------------------------------------- inputs


def _softmax_maps(gen, B, H, L, S, mask=None, sharpness=1.0):
    scores = randn(gen, B, H, L, S, scale=sharpness)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    w = scores.softmax(dim=-1)
    if mask is not None:
        w = w.masked_fill(mask.all(dim=-1, keepdim=True), 0.0)
    return w


def inputs_random(gen):
    mask = torch.rand(2, 1, 5, 7, generator=gen) < 0.4
    mask[..., 0] = False
    mask[0, 0, 3] = True  # fully blocked rows
    mask[1, 0, 1] = True
    return {"w": _softmax_maps(gen, 2, 3, 5, 7, mask, sharpness=2.0)}


def inputs_crafted(gen):
    B, H, L, S = 2, 4, 5, 6
    w = torch.zeros(B, H, L, S)
    w[:, 0] = 1.0 / S  # uniform rows: log S
    w[:, 1, torch.arange(L), torch.randint(S, (L,), generator=gen)] = 1.0  # one-hot: 0
    w[:, 2, :, :3] = 1.0 / 3  # uniform over 3 keys: log 3 ...
    w[:, 2, 1:3] = 0.0  # ... and fully blocked rows, left out
    # head 3: every row blocked -> 0
    return {"w": w}


def _causal_uniform(B, L):
    allowed = torch.ones(L, L).tril()
    return (allowed / allowed.sum(dim=-1, keepdim=True)).expand(B, L, L)


def inputs_classify(gen):
    B, H, T = 2, 4, 8
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)  # causal
    w = torch.zeros(B, H, T, T)
    w[:, 0] = _causal_uniform(B, T)  # even over the allowed keys: "uniform"
    w[:, 1] = torch.eye(T)  # each query on itself: "collapsed"
    w[:, 2] = _softmax_maps(gen, B, 1, T, T, mask, sharpness=1.5)[:, 0]  # "fine"
    peaked = torch.eye(T) * 0.97 + _causal_uniform(1, T)[0] * 0.03  # nearly one-hot
    w[:, 3] = peaked / peaked.sum(dim=-1, keepdim=True)
    random = _softmax_maps(gen, 2, 3, 6, 6, None, sharpness=3.0)
    return {"w": w, "mask": mask, "random": random}


# --------------------------------------------------------------------------- probes


def probe_entropy(mod, x):
    return {"entropy": mod.head_entropy(x["w"])}


def _joined(labels, what):
    if not isinstance(labels, (list, tuple)) or not all(isinstance(s, str) for s in labels):
        raise Failure(WRONG_TYPE, what=what, expected="a list of str", got=type(labels).__name__)
    return ",".join(labels)


def probe_classify(mod, x):
    return {
        "causal": _joined(mod.classify_heads(x["w"], mask=x["mask"]), "classify_heads' result"),
        "random": _joined(mod.classify_heads(x["random"]), "classify_heads' result"),
    }


# --------------------------------------------------------------------------- verdicts


def _check_entropy(got, want_value, w):
    H = w.size(1)
    value = tensor(got, "entropy", "head_entropy's result", shape=(H,))
    if not torch.isfinite(value).all():
        raise Failure(ENTROPY_NAN)
    assert_close(value, want_value, "the head entropies", _candidates(w, value))


def verdict_random(got, want, x):
    _check_entropy(got, want["entropy"], x["w"])


def verdict_crafted(got, want, x):
    # The closed forms, independent of the reference: log S, 0, log 3, 0.
    closed = torch.tensor([math.log(6), 0.0, math.log(3), 0.0])
    _check_entropy(got, closed, x["w"])


def verdict_classify(got, want, x):
    for key, w, mask, what in (
        ("causal", x["w"], x["mask"], "causal maps (uniform, one-hot, random, peaked)"),
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


CHECKS = [
    Check(
        MODULE,
        "entropy-random",
        "head_entropy on random attention maps with fully blocked rows",
        2,
        inputs_random,
        probe_entropy,
        verdict_random,
        "head_entropy",
    ),
    Check(
        MODULE,
        "entropy-crafted",
        "head_entropy: uniform rows = log S, one-hot rows = 0, blocked rows left out",
        2,
        inputs_crafted,
        probe_entropy,
        verdict_crafted,
        "head_entropy",
    ),
    Check(
        MODULE,
        "classify-heads",
        "classify_heads: collapsed / uniform / fine, relative to log n (n = allowed keys)",
        2,
        inputs_classify,
        probe_classify,
        verdict_classify,
        "classify_heads",
    ),
]
