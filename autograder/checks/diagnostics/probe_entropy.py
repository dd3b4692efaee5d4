"""Probe side of diagnostics.py's head-entropy checks: head_entropy and classify_heads.

Imported by the process that runs student code: nothing here judges or computes an answer.
Every size is drawn from the seed; B, H, L and S always differ, so an average over the wrong
axes gives a shape that names it.
"""

from __future__ import annotations

import torch

from ...core.check import WRONG_TYPE, Failure
from ...run.probing import randn


def _int(gen, low, high):
    """An int drawn uniformly from [low, high]."""
    return int(torch.randint(low, high + 1, (), generator=gen))


def _softmax_maps(gen, B, H, L, S, mask=None, sharpness=1.0):
    scores = randn(gen, B, H, L, S, scale=sharpness)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    w = scores.softmax(dim=-1)
    if mask is not None:
        w = w.masked_fill(mask.all(dim=-1, keepdim=True), 0.0)
    return w


def inputs_random(gen):
    # B = 2, H = 3, L in 4..6, S in 7..9: four different sizes.
    B, H, L, S = 2, 3, _int(gen, 4, 6), _int(gen, 7, 9)
    mask = torch.rand(B, 1, L, S, generator=gen) < 0.4
    mask[..., 0] = False
    for b in range(B):  # one fully blocked row per sequence, at a drawn position
        mask[b, 0, _int(gen, 0, L - 1)] = True
    return {"w": _softmax_maps(gen, B, H, L, S, mask, sharpness=2.0)}


def inputs_crafted(gen):
    # Four heads with closed-form entropies: log S, 0, log n, 0 (every row blocked).
    B, H, L, S = 2, 4, _int(gen, 5, 7), _int(gen, 8, 10)
    n = _int(gen, 2, S - 2)
    w = torch.zeros(B, H, L, S)
    w[:, 0] = 1.0 / S  # uniform rows: log S
    w[:, 1, torch.arange(L), torch.randint(S, (L,), generator=gen)] = 1.0  # one-hot: 0
    keys = torch.randperm(S, generator=gen)[:n]
    w[:, 2, :, keys] = 1.0 / n  # uniform over n keys: log n ...
    blocked = torch.randperm(L, generator=gen)[:2]
    w[:, 2, blocked] = 0.0  # ... and two fully blocked rows, left out
    # head 3: every row blocked -> 0
    return {"w": w, "S": S, "n": n}


def _causal_uniform(B, L):
    allowed = torch.ones(L, L).tril()
    return (allowed / allowed.sum(dim=-1, keepdim=True)).expand(B, L, L)


def inputs_classify(gen):
    # T < 10: the mean ratio of the even causal head is (T - 1) / T with row 0 (one allowed
    # key) judged, below 0.9 ("fine"), never at it, so that mistake's labels do not hang on
    # rounding.
    B, H, T = 2, 4, _int(gen, 7, 9)
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)  # causal
    maps = torch.zeros(B, H, T, T)
    maps[:, 0] = _causal_uniform(B, T)  # even over the allowed keys: "uniform"
    maps[:, 1] = torch.eye(T)  # each query on itself: "collapsed"
    maps[:, 2] = _softmax_maps(gen, B, 1, T, T, mask, sharpness=1.5)[:, 0]  # "fine"
    peaked = torch.eye(T) * 0.97 + _causal_uniform(1, T)[0] * 0.03  # nearly one-hot
    maps[:, 3] = peaked / peaked.sum(dim=-1, keepdim=True)
    order = torch.randperm(H, generator=gen)  # the heads in a drawn order
    S = _int(gen, 5, 8)
    random = _softmax_maps(gen, 2, 3, S, S, None, sharpness=3.0)
    return {
        "w": maps[:, order],
        "mask": mask,
        "random": random,
        **_padded(gen, B, H),
        **inputs_zeroed(gen),
    }


def _padded(gen, B, H):
    """Maps under a padding mask (B, 1, 1, S) blocking the last p keys: a head spread evenly
    over p allowed keys ("fine": log p / log(S - p) < 0.6, but 1, "uniform", for a count of
    the blocked keys instead of the allowed ones), even over every allowed key ("uniform"),
    one-hot ("collapsed"), random ("fine"); the heads in a drawn order."""
    # S < 10: even over every allowed key is log(S - p) / log S < 0.9 measured against log S
    # (classify-relative-to-log-s), which S = 10, p = 2 would reach.
    L, S, p = _int(gen, 4, 6), _int(gen, 8, 9), _int(gen, 2, 3)
    mask = torch.zeros(B, 1, 1, S, dtype=torch.bool)
    mask[..., S - p :] = True
    maps = torch.zeros(B, H, L, S)
    for b in range(B):
        for q in range(L):
            keys = torch.randperm(S - p, generator=gen)
            maps[b, 0, q, keys[:p]] = 1.0 / p
            maps[b, 2, q, keys[0]] = 1.0
    maps[:, 1, :, : S - p] = 1.0 / (S - p)
    maps[:, 3] = _softmax_maps(gen, B, 1, L, S, mask, sharpness=1.5)[:, 0]
    order = torch.randperm(H, generator=gen)
    return {"padded": maps[:, order], "padding_mask": mask}


def inputs_zeroed(gen):
    """Maps with all-zero rows and no mask (every row may attend to all S keys, so only the
    zeros say which rows to leave out): a head even over the S keys whose second sequence has
    about half its rows zero ("uniform": 1 for the judged rows, about 0.75 counting the zero
    rows), a head with every row zero ("fine": nothing to judge), and a head one-hot in every
    row of the first sequence with one even row left in the second ("collapsed": 1 / (L + 1)
    < 0.1, but 0.5 for a mean of per-sequence means); the heads in a drawn order."""
    B, H, L, S = 2, 3, _int(gen, 10, 12), _int(gen, 6, 8)
    maps = torch.zeros(B, H, L, S)
    maps[:, 0] = 1.0 / S
    maps[1, 0, torch.randperm(L, generator=gen)[: (L + 1) // 2]] = 0.0
    maps[0, 2, torch.arange(L), torch.randint(S, (L,), generator=gen)] = 1.0
    maps[1, 2, _int(gen, 0, L - 1)] = 1.0 / S
    order = torch.randperm(H, generator=gen)
    return {"zeroed": maps[:, order]}


# --------------------------------------------------------------------------- probes


def probe_entropy(mod, x):
    return {"entropy": mod.head_entropy(x["w"])}


def _joined(labels, what):
    if not isinstance(labels, (list, tuple)) or not all(isinstance(s, str) for s in labels):
        raise Failure(WRONG_TYPE, what=what, expected="a list of str", got=type(labels).__name__)
    return ",".join(labels)


def _own_entropies(mod, w):
    """What the student's own head_entropy gives on these maps: per head, and per row (each
    row of w as a head of its own, (B, H, L, S) -> (1, B·H·L, 1, S)), so that classify_heads
    is judged given the entropy the student's module computes (docs/fairness.md). Nothing
    when their head_entropy fails: classify_heads is then judged on its own."""
    B, H, L, S = w.shape
    try:
        found = {
            "heads": mod.head_entropy(w.clone()),
            "rows": mod.head_entropy(w.reshape(1, B * H * L, 1, S).clone()),
        }
    except Exception:  # noqa: BLE001 (not attempted or broken: head_entropy's checks say so)
        return {}
    return {k: v.detach() for k, v in found.items() if type(v) is torch.Tensor}


def probe_classify(mod, x):
    got = {
        "causal": _joined(mod.classify_heads(x["w"], mask=x["mask"]), "classify_heads' result"),
        "random": _joined(mod.classify_heads(x["random"]), "classify_heads' result"),
        "padded": _joined(
            mod.classify_heads(x["padded"], mask=x["padding_mask"]), "classify_heads' result"
        ),
        "zeroed": _joined(mod.classify_heads(x["zeroed"]), "classify_heads' result"),
    }
    for key, w in (
        ("causal", x["w"]),
        ("random", x["random"]),
        ("padded", x["padded"]),
        ("zeroed", x["zeroed"]),
    ):
        got.update({f"{key}/own-{k}": v for k, v in _own_entropies(mod, w).items()})
    return got
