"""Judge side of diagnostics.py's head-entropy checks: misconceptions, models of known wrong
computations, verdicts."""

from __future__ import annotations

import math

import torch

from ...core.check import WRONG_TYPE, CheckList, Failure, no_reference
from ...core.misconception_data import misconceptions_of
from ...core.verdicts import ModelUnavailable, assert_close, close, model, tensor
from . import probe_entropy as probe

CHECKS = CheckList("diagnostics")

MISTAKES = misconceptions_of(__name__)  # misconceptions.toml: messages and hint ladders

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
        (MISTAKES["entropy-log2"], lazy(log=torch.log2), {}),
        (MISTAKES["entropy-counts-blocked-rows"], lazy(keep_blocked=True), {}),
        (MISTAKES["entropy-sign"], lambda: -_entropy(w).to(like.dtype), {}),
        (MISTAKES["entropy-wrong-dim"], lazy(dim=-2), {}),
        (MISTAKES["entropy-summed-rows"], lazy(reduce="sum"), {}),
    ]


@model
def _labels(w, mask, *, relative_to_s=False, bits=False, keep=None, collapsed=0.1, uniform=0.9):
    """classify_heads' labels, joined by commas; bits=True: with every row's entropy in bits
    (log2), as a classify_heads right but for a head entropy in bits gives them. keep: the
    rows a mistake judges besides the right ones, "single" (rows with fewer than 2 allowed
    keys) or "zero" (all-zero rows)."""
    B, H, L, S = w.shape
    allowed = torch.ones(B, H, L, S, dtype=torch.bool) if mask is None else ~mask.expand_as(w)
    n = allowed.sum(dim=-1)
    judged = ((n >= 2) | (keep == "single")) & ((w != 0).any(dim=-1) | (keep == "zero"))
    row = _rows(w, bits=bits).reshape(B, H, L)
    norm = torch.full_like(row, math.log(S)) if relative_to_s else n.clamp_min(2).double().log()
    score = (row / norm * judged).sum(dim=(0, 2)) / judged.sum(dim=(0, 2)).clamp_min(1)
    labels = []
    for h in range(H):
        if not judged[:, h].any():  # nothing to judge (with keep="zero": never)
            labels.append("fine")
        else:
            s = float(score[h])
            labels.append("collapsed" if s < collapsed else "uniform" if s > uniform else "fine")
    return ",".join(labels)


@model
def _rows(w, *, bits=False):
    """Every row's entropy, (B, H, L, S) -> (B·H·L,), float64: in nats, or in bits."""
    w = w.double()
    plogp = torch.where(
        w > 0, w * (w.clamp_min(1e-300).log2() if bits else w.clamp_min(1e-300).log()), 0.0
    )
    return -plogp.sum(dim=-1).reshape(-1)


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
            raise Failure(
                MISTAKES["entropy-mean-wrong-axes"], got=tuple(value.shape), per=per, over=over
            )
    value = tensor(got, "entropy", "head_entropy's result", shape=(H,))
    if not torch.isfinite(value).all():
        raise Failure(MISTAKES["entropy-nan"])
    assert_close(value, want_value, "the head entropies", _candidates(w, value))


HEAD_ENTROPY = CHECKS.exercise("head_entropy", probe=probe.probe_entropy)


@HEAD_ENTROPY.check("entropy-random", inputs=probe.inputs_random)
def verdict_random(got, want, x):
    _check_entropy(got, want["entropy"], x["w"])


@HEAD_ENTROPY.check("entropy-crafted", inputs=probe.inputs_crafted)
@no_reference
def verdict_crafted(got, want, x):
    # The closed forms, independent of the reference: log S, 0, log n, 0.
    closed = torch.tensor([math.log(x["S"]), 0.0, math.log(x["n"]), 0.0])
    _check_entropy(got, closed, x["w"])


def _entropy_in_bits(got, key, w):
    """Whether the student's own head_entropy, run on these very maps (probe_classify), gives
    every row's entropy in bits, and the heads' mean of them: a mistake head_entropy's checks
    name (entropy-log2), after which classify_heads is judged with entropies in bits. Only
    that named mistake: an entropy that is zero, negative or NaN everywhere would let a
    constant classification pass (principle 14). False in the student copy where the kit
    recorded no such run."""
    rows, heads = got.get(f"{key}/own-rows"), got.get(f"{key}/own-heads")
    for value, n in ((rows, w[..., 0].numel()), (heads, w.size(1))):
        if type(value) is not torch.Tensor or tuple(value.shape) != (n,):
            return False
        if not value.is_floating_point() or not torch.isfinite(value).all():
            return False
    try:
        return close(rows, _rows(w, bits=True).to(rows.dtype)) and close(
            heads, _entropy(w, log=torch.log2).to(heads.dtype)
        )
    except ModelUnavailable:
        return False


def _right_given_own_entropy(value, got, key, w, mask):
    """Whether the labels are those of a classify_heads right but for the entropy it is
    given, the student's own, in bits (charged in head_entropy's checks; docs/fairness.md).
    The labels are computed here."""
    if not _entropy_in_bits(got, key, w):
        return False
    try:
        return value == _labels(w, mask, bits=True)
    except ModelUnavailable:
        return False


# Mistakes of classify_heads, each named when its labels are the student's on every case.
LABEL_MISTAKES = (
    (MISTAKES["classify-relative-to-log-s"], {"relative_to_s": True}),
    (MISTAKES["classify-keeps-single-key-rows"], {"keep": "single"}),
    (MISTAKES["classify-keeps-zero-rows"], {"keep": "zero"}),
)


def _named_mistake(got, cases, wrong):
    """The mistake of LABEL_MISTAKES whose labels are the student's on the case `wrong` and
    on the most other cases (a second mistake may show in the others), or None (none fits,
    or the student copy, which has no model for these labels)."""
    best, most = None, 0
    for mistake, how in LABEL_MISTAKES:
        try:
            fits = [got.get(key) == _labels(w, mask, **how) for key, w, mask, _ in cases]
        except ModelUnavailable:
            continue
        if fits[[key for key, *_ in cases].index(wrong)] and sum(fits) > most:
            best, most = mistake, sum(fits)
    return best


CLASSIFY_HEADS = CHECKS.exercise("classify_heads", probe=probe.probe_classify)


@CLASSIFY_HEADS.check("classify-heads", inputs=probe.inputs_classify)
def verdict_classify(got, want, x):
    cases = (
        (
            "causal",
            x["w"],
            x["mask"],
            "causal maps (uniform, one-hot, random, peaked; heads shuffled)",
        ),
        ("random", x["random"], None, "random maps, no mask"),
        (
            "padded",
            x["padded"],
            x["padding_mask"],
            "maps under a (B, 1, 1, S) padding mask (even over a few keys, even over all, "
            "one-hot, random; heads shuffled)",
        ),
        (
            "zeroed",
            x["zeroed"],
            None,
            "maps with all-zero rows, no mask (even over every key with half the rows of one "
            "sequence zero, every row zero, one-hot but for one even row; heads shuffled)",
        ),
    )
    for key, w, mask, what in cases:
        value = got.get(key)
        if type(value) is not str:
            raise Failure(WRONG_TYPE, what="classify_heads' result", expected="a list", got=value)
        if value == want[key] or _right_given_own_entropy(value, got, key, w, mask):
            continue
        named = _named_mistake(got, cases, key)
        if named is not None:
            raise Failure(named)
        raise Failure(
            MISTAKES["classify-wrong-labels"],
            got=value.split(","),
            want=want[key].split(","),
            what=what,
        )
