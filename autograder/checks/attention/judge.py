"""Judge side of attention.py's checks: misconceptions, models of wrong computations, verdicts."""

from __future__ import annotations

import math

import torch

from ...core import CheckList, Failure, misconception
from ...diagnosis import infer_scale, name_scale
from ...tolerances import tolerance
from ...trusted.attention import broadcast_shape
from ...verdicts import Candidate, assert_close, close, model, tensor
from . import probe

CHECKS = CheckList("attention")

# --------------------------------------------------------------------------- misconceptions

SOFTMAX_DIM = misconception(
    "softmax-wrong-dim",
    "Your softmax normalises over the queries (dim=-2), not over the keys: the columns of the "
    "weights sum to 1 instead of the rows.",
    (
        "Each query spreads its attention over the keys, so each query's row of weights must be a "
        "probability distribution over the keys. Normalising down the columns spreads each key "
        "over the queries instead, which means nothing.",
        "The softmax normalises along one axis: choose the key axis, the last axis S of the (..., "
        "L, S) scores, with its dim argument.",
        "Call the softmax on the scores with dim=-1 (the keys, S), not dim=-2 (the queries, L); "
        "then every row of the weights sums to 1.",
    ),
)
NO_SCALING = misconception(
    "no-scaling",
    "Your scores were not scaled at all: softmax(q kᵀ) instead of softmax(q kᵀ / √d_k).",
    (
        "A dot product of two d_k-wide vectors sums d_k terms, so its spread grows like √d_k. "
        "Unscaled, the softmax saturates: one key takes almost all the weight and the gradients "
        "vanish. Dividing by √d_k keeps the scores near unit spread at any width.",
        "Divide the scores by the square root of d_k, the size of the last axis of q (math.sqrt), "
        "before the mask and the softmax.",
        "The scores are q @ kᵀ / math.sqrt(d_k), with d_k taken from q.size(-1), and only then "
        "masked and passed to the softmax.",
    ),
)
WRONG_SCALE = misconception(
    "wrong-scale",
    "Your scores were divided by {used}, but they should be divided by √d_k = {expected:.4g} (d_k "
    "= {d_k}, the width of q and k).",
    (
        "The scale undoes the growth of a dot product with the number of terms it sums. That "
        "number is the width of one query and one key, d_k, and nothing else.",
        "Take d_k from the queries themselves (the size of q's last axis) and divide the scores "
        "by its square root: not by d_k itself, d_v, the sequence length or the model width.",
        "Here d_k = {d_k}, so the divisor is math.sqrt(d_k) = {expected:.4g}, not {used}.",
    ),
)
RETURNED_SCORES = misconception(
    "returned-scores",
    "The weights you returned are the scores before the softmax.",
    (
        "The weights say how much each query takes from each key: probabilities, the output of "
        "the softmax. The scores are only their logits, any real numbers.",
        "Return the tensor that comes out of the softmax (the one you multiply the values with), "
        "not the scaled scores that go into it.",
        "Return (out, weights), where weights is the softmax of the masked scores (rows summing "
        "to 1) and out is weights times v.",
    ),
)
MASK_INVERTED = misconception(
    "mask-inverted",
    "Your mask works the wrong way round: you blocked the keys marked False (allowed) and let "
    "queries attend to the keys marked True (blocked).",
    (
        "Every mask convention answers one question: does True mean allowed or blocked? In this "
        "kit True means blocked, so the keys marked True must vanish from each query's view and "
        "the keys marked False must stay.",
        "Fill the scores with -inf where the mask is True: Tensor.masked_fill with the mask as "
        "given, not its negation. PyTorch's F.scaled_dot_product_attention uses the opposite "
        "convention (True = allowed): do not copy from it.",
        "On the scores: masked_fill(mask, float('-inf')), not masked_fill(~mask, ...).",
    ),
)
MASK_AFTER_SOFTMAX = misconception(
    "mask-after-softmax",
    "You applied the mask after the softmax: blocked weights are zero, but the remaining weights "
    "no longer sum to 1.",
    (
        "The softmax shares one unit of attention among the keys it is given. A blocked key must "
        "be removed before that sharing, so the allowed keys receive the whole unit; zeroing a "
        "weight afterwards takes probability away and gives it to no one.",
        "Mask the scores, not the weights: Tensor.masked_fill with -inf before the softmax, and "
        "no masking of the weights afterwards.",
        "Order: scores, then masked_fill(mask, float('-inf')) on them, then the softmax over "
        "dim=-1. exp(-inf) = 0, so the blocked keys get 0 and the others sum to 1.",
    ),
)
MASK_IGNORED = misconception(
    "mask-ignored",
    "Your result is the same as with no mask at all: the mask was not applied.",
    (
        "A mask works only if the blocked keys lose their influence; your result did not change "
        "at all, so the mask never reached the scores that the softmax used.",
        "Tensor.masked_fill returns a new tensor and leaves the original as it was: keep its "
        "result (or use the in-place masked_fill_), and feed the masked scores to the softmax.",
        "Assign the result back, scores = scores.masked_fill(mask, ...) with float('-inf') as the "
        "fill: a bare scores.masked_fill(...) on its own line throws its result away.",
    ),
)
NAN_BLOCKED_ROW = misconception(
    "nan-on-blocked-row",
    "A query whose keys are all blocked gave NaN: the softmax of a row of -inf is 0/0.",
    (
        "A query that may see no key has nothing to spread its attention over. The softmax of a "
        "row of -inf is 0/0 = NaN, and NaN spreads to the output and, in training, to every "
        "gradient. The docstring promises zeros for such a row instead.",
        "After the softmax, find the rows whose keys are all blocked (Tensor.all over the key "
        "axis, keeping that axis so it broadcasts) and set them to 0 with Tensor.masked_fill.",
        "mask.all over dim=-1 with keepdim=True is (..., L, 1) and True for a fully blocked row; "
        "after the softmax, masked_fill the weights with 0.0 there.",
    ),
)
BLOCKED_ROW_NOT_ZERO = misconception(
    "blocked-row-not-zero",
    "A query whose keys are all blocked got non-zero weights (e.g. uniform 1/S from a finite fill "
    "such as -1e9): it attends to keys it may not see.",
    (
        "A query with no visible key must receive nothing: zero weights and a zero output. A "
        "finite fill such as -1e9 makes the softmax of a fully blocked row uniform, 1/S on every "
        "key, so the query silently reads keys it may not see.",
        "After the softmax, set the fully blocked rows (Tensor.all over the key axis, with "
        "keepdim) to 0 with Tensor.masked_fill; the output, computed from these weights, is then "
        "0 as well.",
        "mask.all over dim=-1 with keepdim=True marks the fully blocked rows, (..., L, 1); "
        "masked_fill the weights with 0.0 there, after the softmax and before the product with v.",
    ),
)
FILL_TOO_WEAK = misconception(
    "mask-fill-too-weak",
    "Blocked keys still influence the result: your fill value is not small enough to remove them "
    "(a blocked key with a large score still gets weight).",
    (
        "A blocked key must get weight exactly 0, whatever the scores. A finite fill only makes "
        "its score low: when the allowed keys score lower still, or when the fill is added to a "
        "large score instead of replacing it, the blocked key keeps a share of the softmax.",
        "Fill the blocked scores with float('-inf'), whose exp is exactly 0, and handle the fully "
        "blocked rows after the softmax; if you need a finite value, the smallest of the dtype, "
        "torch.finfo(scores.dtype).min.",
        "masked_fill(mask, float('-inf')) on the scores; never a fixed number such as -1e4: the "
        "allowed scores can be lower still.",
    ),
)
CAUSAL_LEAK = misconception(
    "causal-leak",
    "Under a causal mask, changing later tokens changed the outputs of earlier positions: "
    "information leaks from the future.",
    (
        "Causal attention promises that position t reads only positions 0..t: the future may not "
        "change the past. In your output it did, so some query still sees a later key.",
        "Apply the given mask to every query row of the scores, before the softmax, filling its "
        "True entries with -inf; do not slice, transpose or reduce it.",
        "On the (..., L, S) scores, before the softmax: masked_fill(mask, float('-inf')) with the "
        "mask exactly as given (it broadcasts over the leading axes).",
    ),
)
BIAS_AFTER_SOFTMAX = misconception(
    "bias-after-softmax",
    "You added the bias after the softmax; it belongs to the scores, before the softmax.",
    (
        "An additive bias (relative positions, ALiBi) is a preference in log space: it shifts the "
        "scores, and the softmax turns that shift into a factor on the weights. Added after the "
        "softmax, it is no longer a preference and the rows no longer sum to 1.",
        "Add the bias to the scaled scores, before the mask and the softmax; the softmax then "
        "renormalises.",
        "Order: q kᵀ / √d_k + bias, then the mask, then the softmax over dim=-1.",
    ),
)
BIAS_SCALED = misconception(
    "bias-scaled",
    "You divided the bias by √d_k together with the scores: (q kᵀ + bias) / √d_k.",
    (
        "The bias is a ready-made shift of the scores, already on the softmax's scale. Only the "
        "dot products need the 1/√d_k correction, because only they grow with d_k.",
        "Scale the dot products first, then add the bias as it is, unscaled.",
        "q kᵀ / √d_k + bias, not (q kᵀ + bias) / √d_k.",
    ),
)
MASK_LEAKS = misconception(
    "mask-leaks",
    "A key that the mask blocks got a non-zero weight.",
    (
        "A blocked key must be invisible to its query: weight exactly 0. Yours got a share, so "
        "the blocking did not fully happen before the softmax.",
        "Fill the blocked scores (True = blocked) with -inf using Tensor.masked_fill before the "
        "softmax, and feed those filled scores to the softmax.",
        "On the scores: masked_fill(mask, float('-inf')), then the softmax over dim=-1; exp(-inf) "
        "is exactly 0.",
    ),
)
DTYPE_NOT_KEPT = misconception(
    "dtype-not-kept",
    "{what} has dtype {got}, but the inputs were {expected}: the input dtype must be kept.",
    (
        "The caller chose the precision: float64 inputs are there because someone needs float64 "
        "results. Code that silently changes the dtype loses that precision or breaks the code "
        "that uses the result.",
        "Do not convert (.float(), .to(torch.float32)) and do not create new tensors with a fixed "
        "dtype: pass dtype=q.dtype, or use the *_like functions.",
        "Expected {expected}, got {got}: look for a .float(), or a torch.tensor(...), "
        "torch.zeros(...) or torch.full(...) without dtype=q.dtype.",
    ),
)
BIAS_IGNORED = misconception(
    "bias-ignored",
    "Your result is the same as without the bias.",
    (
        "The bias is how relative positions or ALiBi reach the attention; a result that ignores "
        "it loses that information.",
        "Add the bias tensor to the scaled scores, before the mask and the softmax; it broadcasts "
        "to (..., L, S).",
        "The scores are q kᵀ / √d_k + bias; then mask them and take the softmax over dim=-1.",
    ),
)
# --------------------------------------------------------------------------- trusted models
# What attention with a given mistake computes, in float64, to recognise that mistake.


@model
def _attend(x, *, scale=None, dim=-1, mask_mode="before", bias_mode="scores", invert=False):
    q, k, v = (x[n].double() for n in ("q", "k", "v"))
    mask, bias = x.get("mask"), x.get("bias")
    if mask is not None and invert:
        mask = ~mask
    scale = math.sqrt(q.size(-1)) if scale is None else scale
    if bias is not None and bias_mode == "scaled":
        scores = (q @ k.transpose(-2, -1) + bias.double()) / scale
    else:
        scores = q @ k.transpose(-2, -1) / scale
        if bias is not None and bias_mode == "scores":
            scores = scores + bias.double()
    if mask is not None and mask_mode == "before":
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=dim)
    if mask is not None:
        if mask_mode == "before":
            weights = weights.masked_fill(mask.all(dim=-1, keepdim=True), 0.0)
        elif mask_mode == "after":
            weights = weights.masked_fill(mask, 0.0)
    if bias is not None and bias_mode == "after":
        weights = weights + bias.double()
    return weights @ v, weights


def _candidates(x, which: str):
    """(misconception, the output that mistake gives, details) for `which` in out/weights."""
    i = 0 if which == "out" else 1

    def lazy(**kw):
        return lambda: _attend(x, **kw)[i]

    d_k = x["q"].size(-1)
    found: list[Candidate] = [
        (NO_SCALING, lazy(scale=1.0), {}),
        (SOFTMAX_DIM, lazy(dim=-2), {}),
    ]
    if x.get("mask") is not None:
        found += [
            (MASK_INVERTED, lazy(invert=True), {}),
            (MASK_AFTER_SOFTMAX, lazy(mask_mode="after"), {}),
            (MASK_IGNORED, lazy(mask_mode="none"), {}),
        ]
    if x.get("bias") is not None:
        found += [
            (BIAS_AFTER_SOFTMAX, lazy(bias_mode="after"), {}),
            (BIAS_SCALED, lazy(bias_mode="scaled"), {}),
            (BIAS_IGNORED, lazy(bias_mode="none"), {}),
        ]
    if which == "weights":
        scores = lambda: x["q"].double() @ x["k"].double().transpose(-2, -1) / math.sqrt(d_k)  # noqa: E731
        found.append((RETURNED_SCORES, scores, {}))
    return found


def _scale_failure(x, weights) -> Failure | None:
    """If the weights are a softmax of q kᵀ / c with the wrong c, the Failure naming c."""
    c = infer_scale(x["q"], x["k"], weights, x.get("mask"), x.get("bias"))
    d_k = x["q"].size(-1)
    if c is None or math.isclose(c, math.sqrt(d_k), rel_tol=1e-3):
        return None
    if math.isclose(c, 1.0, rel_tol=1e-3):
        return Failure(NO_SCALING)
    names = {"d_k": d_k, "d_v": x["v"].size(-1), "S": x["k"].size(-2), "L": x["q"].size(-2)}
    return Failure(WRONG_SCALE, used=name_scale(c, names), expected=math.sqrt(d_k), d_k=d_k)


def _compare(got, want, x, *, prefix=""):
    """Weights first (they say more about a mistake), then the output."""
    out = tensor(got, prefix + "out", "the output", floating=True, shape=want[prefix + "out"].shape)
    weights = tensor(
        got, prefix + "weights", "the weights", floating=True, shape=want[prefix + "weights"].shape
    )
    for name, value in (("output", out), ("weights", weights)):
        expected = want[prefix + ("out" if name == "output" else name)].dtype
        if value.dtype != expected:
            raise Failure(DTYPE_NOT_KEPT, what=f"the {name}", got=value.dtype, expected=expected)
    if not close(weights, want[prefix + "weights"]):
        failure = _scale_failure(x, weights)
        if failure:
            raise failure
    assert_close(weights, want[prefix + "weights"], "the weights", _candidates(x, "weights"))
    assert_close(out, want[prefix + "out"], "the output", _candidates(x, "out"))


# --------------------------------------------------------------------------- verdicts


def _consistent(got, x, *, out="out", weights="weights"):
    """The student's own run is attention: weights respect the mask, rows that may attend
    sum to 1, fully blocked rows are 0, and out = weights @ v. A property check asks this of
    the runs it judges, so a result that computes nothing (zeros, random) cannot pass it."""
    L, S = x["q"].size(-2), x["k"].size(-2)
    batch = broadcast_shape(
        x["q"].shape[:-2], x["k"].shape[:-2], x["v"].shape[:-2]
    )  # no sympy import
    w = tensor(got, weights, "the weights", floating=True, shape=(*batch, L, S))
    o = tensor(got, out, "the output", floating=True, shape=(*batch, L, x["v"].size(-1)))
    if not (torch.isfinite(w).all() and torch.isfinite(o).all()):
        raise Failure(NAN_BLOCKED_ROW)
    mask = x.get("mask")
    if mask is not None:
        mask = mask.expand(*batch, L, S)
        open_rows = ~mask.all(dim=-1)
        leaked = w[mask & open_rows[..., None]]
        if leaked.numel() and leaked.abs().max() > 0:
            raise Failure(MASK_LEAKS)
    else:
        open_rows = torch.ones(*batch, L, dtype=torch.bool)
    sums = w.sum(dim=-1)
    if not close(sums[open_rows], torch.ones_like(sums[open_rows])):
        if close(w.sum(dim=-2), torch.ones_like(w.sum(dim=-2))):
            raise Failure(SOFTMAX_DIM)
        assert_close(
            sums[open_rows], torch.ones_like(sums[open_rows]), "the row sums of the weights"
        )
    if (w[~open_rows] != 0).any():
        raise Failure(BLOCKED_ROW_NOT_ZERO)
    assert_close(o, (w.double() @ x["v"].double()).to(o.dtype), "the output (weights @ v)")


SCALED_DOT_PRODUCT_ATTENTION = CHECKS.exercise(
    "scaled_dot_product_attention", probe=probe.probe_sdpa
)


@SCALED_DOT_PRODUCT_ATTENTION.check(
    "reference", "matches the reference (L ≠ S, d_k ≠ d_v)", 3, inputs=probe.inputs_basic
)
def verdict_reference(got, want, x):
    _compare(got, want, x)


@SCALED_DOT_PRODUCT_ATTENTION.check(
    "batch-dims",
    "matches the reference with no batch dim and with (B, H) batch dims",
    2,
    inputs=probe.inputs_batch_dims,
    probe=probe.probe_batch_dims,
)
def verdict_batch_dims(got, want, x):
    for shape, xs in x.items():
        _compare(got, want, xs, prefix=f"{shape}/")


SCALED_DOT_PRODUCT_ATTENTION.check(
    "float64",
    "keeps float64 and matches the reference at float64 precision",
    1,
    inputs=probe.inputs_float64,
    verdict=verdict_reference,
)


@SCALED_DOT_PRODUCT_ATTENTION.check(
    "rows-sum-to-one",
    "each query's weights sum to 1 over the keys",
    1,
    inputs=probe.inputs_same_width,
)
def verdict_rows_sum(got, want, x):
    weights = tensor(got, "weights", "the weights", floating=True, shape=want["weights"].shape)
    ones = torch.ones(weights.shape[:-1], dtype=weights.dtype)
    if close(weights.sum(dim=-1), ones):
        return
    if close(weights.sum(dim=-2), torch.ones_like(weights.sum(dim=-2))):
        raise Failure(SOFTMAX_DIM)
    assert_close(weights.sum(dim=-1), ones, "the row sums of the weights")


@SCALED_DOT_PRODUCT_ATTENTION.check(
    "scale", "scores are scaled by 1/√d_k", 2, inputs=probe.inputs_scale
)
def verdict_scale(got, want, x):
    weights = tensor(got, "weights", "the weights", floating=True, shape=want["weights"].shape)
    failure = _scale_failure(x, weights)
    if failure:
        raise failure
    assert_close(weights, want["weights"], "the weights", _candidates(x, "weights"))


SCALED_DOT_PRODUCT_ATTENTION.check(
    "mask-2d",
    "matches the reference with an (L, S) mask broadcast over the batch",
    2,
    inputs=probe.inputs_mask_2d,
    verdict=verdict_reference,
)
SCALED_DOT_PRODUCT_ATTENTION.check(
    "mask-4d",
    "matches the reference with a (B, 1, 1, S) padding mask broadcast over heads and queries",
    2,
    inputs=probe.inputs_mask_4d,
    verdict=verdict_reference,
)


@SCALED_DOT_PRODUCT_ATTENTION.check(
    "blocked-row",
    "a fully blocked row gives zero weights and output, no NaN",
    2,
    inputs=probe.inputs_blocked_row,
)
def verdict_blocked_row(got, want, x):
    out = tensor(got, "out", "the output", floating=True, shape=want["out"].shape)
    weights = tensor(got, "weights", "the weights", floating=True, shape=want["weights"].shape)
    row = x["row"]
    if not (torch.isfinite(weights[:, row]).all() and torch.isfinite(out[:, row]).all()):
        raise Failure(NAN_BLOCKED_ROW)
    if weights[:, row].abs().max() > 0 or out[:, row].abs().max() > tolerance(out.dtype)["atol"]:
        raise Failure(BLOCKED_ROW_NOT_ZERO)
    _consistent(got, x)


@SCALED_DOT_PRODUCT_ATTENTION.check(
    "blocked-keys",
    "a blocked key's k and v change nothing, even when every allowed key scores low",
    1,
    inputs=probe.inputs_blocked_keys,
    probe=probe.probe_blocked_keys,
)
def verdict_blocked_keys(got, want, x):
    _consistent(got, x)
    second = {**x, "k": x["k2"], "v": x["v2"]}
    _consistent(got, second, out="out2", weights="weights2")
    out = tensor(got, "out", "the output", floating=True)
    out2 = tensor(got, "out2", "the output", floating=True)
    if not close(out2, out):
        raise Failure(FILL_TOO_WEAK)
    third = {**x, "k": x["k3"]}
    weights3 = tensor(got, "weights3", "the weights", floating=True, shape=want["weights3"].shape)
    blocked = x["mask"].expand_as(weights3)
    if torch.nan_to_num(weights3[blocked], nan=1.0).abs().max() > 0:
        raise Failure(FILL_TOO_WEAK)
    _consistent(got, third, out="out3", weights="weights3")


@SCALED_DOT_PRODUCT_ATTENTION.check(
    "causal",
    "under a causal mask the future cannot change the past",
    1,
    inputs=probe.inputs_causal,
    probe=probe.probe_causal,
)
def verdict_causal(got, want, x):
    t = x["t"]
    out = tensor(got, "out", "the output", floating=True, shape=want["out"].shape)
    out2 = tensor(got, "out2", "the output", floating=True, shape=want["out"].shape)
    _consistent(got, x)
    if not close(out[:, :t], out2[:, :t]):
        raise Failure(CAUSAL_LEAK)


ATTENTION_WITH_BIAS = CHECKS.exercise("attention_with_bias", probe=probe.probe_bias)


ATTENTION_WITH_BIAS.check(
    "bias",
    "attention_with_bias matches the reference",
    2,
    inputs=probe.inputs_bias,
    verdict=verdict_reference,
)
ATTENTION_WITH_BIAS.check(
    "bias-mask",
    "attention_with_bias matches the reference with a mask and a fully blocked row",
    1,
    inputs=probe.inputs_bias_mask,
    verdict=verdict_reference,
)
