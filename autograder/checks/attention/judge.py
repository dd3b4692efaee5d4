"""Judge side of attention.py's checks: misconceptions, models of wrong computations, verdicts."""

from __future__ import annotations

import math

import torch

from ...core import CheckList, Failure, misconception
from ...diagnosis import infer_scale, name_scale
from ...tolerances import tolerance
from ...trusted.attention import _broadcast
from ...verdicts import assert_close, close, tensor
from . import probe

CHECKS = CheckList("attention")

# --------------------------------------------------------------------------- misconceptions

SOFTMAX_DIM = misconception(
    "softmax-wrong-dim",
    "Your softmax normalises over the queries (dim=-2), not over the keys: the columns of "
    "the weights sum to 1 instead of the rows.",
    "Each query distributes its attention over the keys: torch.softmax(scores, dim=-1).",
)
NO_SCALING = misconception(
    "no-scaling",
    "Your scores were not scaled at all: softmax(q kᵀ) instead of softmax(q kᵀ / √d_k).",
    "Divide the scores by math.sqrt(d_k), d_k = q.size(-1). Without it the dot products grow "
    "with d_k and the softmax saturates (one weight ≈ 1, tiny gradients).",
)
WRONG_SCALE = misconception(
    "wrong-scale",
    "Your scores were divided by {used}, but they should be divided by √d_k = {expected:.4g} "
    "(d_k = {d_k}, the width of q and k).",
    "d_k is q.size(-1), the width of one query. Divide the scores by math.sqrt(d_k), not by "
    "d_k, d_v, the sequence length or the model width.",
)
RETURNED_SCORES = misconception(
    "returned-scores",
    "The weights you returned are the scores before the softmax.",
    "Return the softmax probabilities (rows summing to 1), the ones you multiply v with.",
)
MASK_INVERTED = misconception(
    "mask-inverted",
    "Your mask works the wrong way round: you blocked the keys marked False (allowed) and "
    "let queries attend to the keys marked True (blocked).",
    "In this kit True = blocked: scores.masked_fill(mask, float('-inf')), not ~mask. "
    "(torch.nn.functional.scaled_dot_product_attention uses the opposite convention.)",
)
MASK_AFTER_SOFTMAX = misconception(
    "mask-after-softmax",
    "You applied the mask after the softmax: blocked weights are zero, but the remaining "
    "weights no longer sum to 1.",
    "Mask the scores with -inf before the softmax, so the softmax renormalises over the "
    "allowed keys.",
)
MASK_IGNORED = misconception(
    "mask-ignored",
    "Your result is the same as with no mask at all: the mask was not applied.",
    "Use scores.masked_fill(mask, float('-inf')) and keep the returned tensor "
    "(masked_fill is not in-place; masked_fill_ is).",
)
NAN_BLOCKED_ROW = misconception(
    "nan-on-blocked-row",
    "A query whose keys are all blocked gave NaN: the softmax of a row of -inf is 0/0.",
    "After the softmax, set fully blocked rows to zero: "
    "weights.masked_fill(mask.all(dim=-1, keepdim=True), 0.0).",
)
BLOCKED_ROW_NOT_ZERO = misconception(
    "blocked-row-not-zero",
    "A query whose keys are all blocked got non-zero weights (e.g. uniform 1/S from a finite "
    "fill such as -1e9): it attends to keys it may not see.",
    "Zero fully blocked rows after the softmax: "
    "weights.masked_fill(mask.all(dim=-1, keepdim=True), 0.0); the output is then 0 too.",
)
FILL_TOO_WEAK = misconception(
    "mask-fill-too-weak",
    "Blocked keys still influence the result: your fill value is not small enough to "
    "remove them (a blocked key with a large score still gets weight).",
    "Fill with float('-inf') (then handle fully blocked rows), or at least "
    "torch.finfo(scores.dtype).min; never a fixed -1e4.",
)
CAUSAL_LEAK = misconception(
    "causal-leak",
    "Under a causal mask, changing later tokens changed the outputs of earlier positions: "
    "information leaks from the future.",
    "The mask must act on the scores before the softmax, for every query row.",
)
BIAS_AFTER_SOFTMAX = misconception(
    "bias-after-softmax",
    "You added the bias after the softmax; it belongs to the scores, before the softmax.",
    "scores = q kᵀ / √d_k + bias, then mask, then softmax: the bias is a log-space preference.",
)
BIAS_SCALED = misconception(
    "bias-scaled",
    "You divided the bias by √d_k together with the scores: (q kᵀ + bias) / √d_k.",
    "Scale the dot products first, then add the bias: q kᵀ / √d_k + bias.",
)
MASK_LEAKS = misconception(
    "mask-leaks",
    "A key that the mask blocks got a non-zero weight.",
    "Blocked scores must become -inf before the softmax (True = blocked): "
    "scores.masked_fill(mask, float('-inf')).",
)
DTYPE_NOT_KEPT = misconception(
    "dtype-not-kept",
    "{what} has dtype {got}, but the inputs were {expected}: the input dtype must be kept.",
    "Do not call .float() or create float32 tensors; new tensors take dtype=q.dtype.",
)
BIAS_IGNORED = misconception(
    "bias-ignored",
    "Your result is the same as without the bias.",
    "Add `bias` to the scaled scores before masking and the softmax.",
)

# --------------------------------------------------------------------------- trusted models
# What attention with a given mistake computes, in float64, to recognise that mistake.


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
    found = [
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
    batch = _broadcast(x["q"].shape[:-2], x["k"].shape[:-2], x["v"].shape[:-2])  # no sympy import
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


@CHECKS.check(
    "reference",
    "matches the reference (L ≠ S, d_k ≠ d_v)",
    3,
    inputs=probe.inputs_basic,
    probe=probe.probe_sdpa,
    exercise="scaled_dot_product_attention",
)
def verdict_reference(got, want, x):
    _compare(got, want, x)


@CHECKS.check(
    "batch-dims",
    "matches the reference with no batch dim and with (B, H) batch dims",
    2,
    inputs=probe.inputs_batch_dims,
    probe=probe.probe_batch_dims,
    exercise="scaled_dot_product_attention",
)
def verdict_batch_dims(got, want, x):
    for shape, xs in x.items():
        _compare(got, want, xs, prefix=f"{shape}/")


CHECKS.check(
    "float64",
    "keeps float64 and matches the reference at float64 precision",
    1,
    inputs=probe.inputs_float64,
    probe=probe.probe_sdpa,
    exercise="scaled_dot_product_attention",
    verdict=verdict_reference,
)


@CHECKS.check(
    "rows-sum-to-one",
    "each query's weights sum to 1 over the keys",
    1,
    inputs=probe.inputs_same_width,
    probe=probe.probe_sdpa,
    exercise="scaled_dot_product_attention",
)
def verdict_rows_sum(got, want, x):
    weights = tensor(got, "weights", "the weights", floating=True, shape=want["weights"].shape)
    ones = torch.ones(weights.shape[:-1], dtype=weights.dtype)
    if close(weights.sum(dim=-1), ones):
        return
    if close(weights.sum(dim=-2), torch.ones_like(weights.sum(dim=-2))):
        raise Failure(SOFTMAX_DIM)
    assert_close(weights.sum(dim=-1), ones, "the row sums of the weights")


@CHECKS.check(
    "scale",
    "scores are scaled by 1/√d_k",
    2,
    inputs=probe.inputs_scale,
    probe=probe.probe_sdpa,
    exercise="scaled_dot_product_attention",
)
def verdict_scale(got, want, x):
    weights = tensor(got, "weights", "the weights", floating=True, shape=want["weights"].shape)
    failure = _scale_failure(x, weights)
    if failure:
        raise failure
    assert_close(weights, want["weights"], "the weights", _candidates(x, "weights"))


CHECKS.check(
    "mask-2d",
    "matches the reference with an (L, S) mask broadcast over the batch",
    2,
    inputs=probe.inputs_mask_2d,
    probe=probe.probe_sdpa,
    exercise="scaled_dot_product_attention",
    verdict=verdict_reference,
)
CHECKS.check(
    "mask-4d",
    "matches the reference with a (B, 1, 1, S) padding mask broadcast over heads and queries",
    2,
    inputs=probe.inputs_mask_4d,
    probe=probe.probe_sdpa,
    exercise="scaled_dot_product_attention",
    verdict=verdict_reference,
)


@CHECKS.check(
    "blocked-row",
    "a fully blocked row gives zero weights and output, no NaN",
    2,
    inputs=probe.inputs_blocked_row,
    probe=probe.probe_sdpa,
    exercise="scaled_dot_product_attention",
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


@CHECKS.check(
    "blocked-keys",
    "a blocked key's k and v change nothing, even when every allowed key scores low",
    1,
    inputs=probe.inputs_blocked_keys,
    probe=probe.probe_blocked_keys,
    exercise="scaled_dot_product_attention",
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


@CHECKS.check(
    "causal",
    "under a causal mask the future cannot change the past",
    1,
    inputs=probe.inputs_causal,
    probe=probe.probe_causal,
    exercise="scaled_dot_product_attention",
)
def verdict_causal(got, want, x):
    t = x["t"]
    out = tensor(got, "out", "the output", floating=True, shape=want["out"].shape)
    out2 = tensor(got, "out2", "the output", floating=True, shape=want["out"].shape)
    _consistent(got, x)
    if not close(out[:, :t], out2[:, :t]):
        raise Failure(CAUSAL_LEAK)


CHECKS.check(
    "bias",
    "attention_with_bias matches the reference",
    2,
    inputs=probe.inputs_bias,
    probe=probe.probe_bias,
    exercise="attention_with_bias",
    verdict=verdict_reference,
)
CHECKS.check(
    "bias-mask",
    "attention_with_bias matches the reference with a mask and a fully blocked row",
    1,
    inputs=probe.inputs_bias_mask,
    probe=probe.probe_bias,
    exercise="attention_with_bias",
    verdict=verdict_reference,
)
