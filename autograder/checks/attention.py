"""Checks for attention.py: scaled_dot_product_attention and attention_with_bias."""

from __future__ import annotations

import math

import torch

from ..core import Check, Failure, misconception
from ..diagnosis import infer_scale, name_scale
from ..tolerances import tolerance
from ..verdicts import assert_close, close, tensor
from ._common import pair, randn

MODULE = "attention"
ORDER = 10

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
    out = tensor(got, prefix + "out", "the output", shape=want[prefix + "out"].shape)
    weights = tensor(got, prefix + "weights", "the weights", shape=want[prefix + "weights"].shape)
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


# --------------------------------------------------------------------------- inputs


def _qkv(gen, batch, L, S, d_k, d_v, dtype=torch.float32, scale=1.0):
    return {
        "q": randn(gen, *batch, L, d_k, dtype=dtype, scale=scale),
        "k": randn(gen, *batch, S, d_k, dtype=dtype, scale=scale),
        "v": randn(gen, *batch, S, d_v, dtype=dtype),
    }


def _random_mask(gen, L, S, blocked_row=None):
    mask = torch.rand(L, S, generator=gen) < 0.4
    mask[torch.arange(L), torch.randint(S, (L,), generator=gen)] = False  # one key per row
    if blocked_row is not None:
        mask[blocked_row] = True
    return mask


def inputs_basic(gen):
    return _qkv(gen, (2,), 5, 7, 16, 12)


def inputs_batch_dims(gen):
    return {"4d": _qkv(gen, (2, 3), 4, 6, 12, 12), "2d": _qkv(gen, (), 4, 6, 12, 3)}


def inputs_float64(gen):
    return _qkv(gen, (2,), 5, 7, 16, 12, dtype=torch.float64)


def inputs_scale(gen):
    # Small q, k: no weight saturates, so the weights reveal the scores and the scale.
    return _qkv(gen, (3,), 5, 7, 16, 12, scale=0.5)


def inputs_mask_2d(gen):
    x = _qkv(gen, (2,), 5, 7, 16, 12)
    x["mask"] = _random_mask(gen, 5, 7)
    return x


def inputs_mask_4d(gen):
    x = _qkv(gen, (2, 2), 4, 6, 12, 12)
    x["mask"] = (torch.arange(6) >= torch.tensor([6, 3])[:, None])[:, None, None, :]
    return x


def inputs_blocked_row(gen):
    x = _qkv(gen, (2,), 5, 7, 16, 12)
    x["mask"] = _random_mask(gen, 5, 7, blocked_row=2)
    return x


def inputs_blocked_keys(gen):
    # float64: the second run has scores of order -1e4, where float32 keeps no decimals.
    x = _qkv(gen, (2,), 5, 7, 16, 12, dtype=torch.float64)
    x["mask"] = _random_mask(gen, 5, 7)
    x["mask"][:, 0] = True  # key 0 is blocked for every query
    # Second run: every key points away from the queries (scores near -2e4), and the
    # blocked key's value is huge. A finite fill such as -1e4 now beats every allowed key.
    x["k2"] = x["k"] - x["q"].sum(dim=1, keepdim=True) * 5e3
    x["v2"] = x["v"].clone()
    x["v2"][:, 0] = 1e3
    return x


def inputs_causal(gen):
    T = 6
    x = _qkv(gen, (2,), T, T, 12, 12)
    x["mask"] = torch.ones(T, T, dtype=torch.bool).triu(1)
    x["q2"], x["k2"], x["v2"] = (t.clone() for t in (x["q"], x["k"], x["v"]))
    for name in ("q2", "k2", "v2"):
        x[name][:, 4:] = randn(gen, 2, T - 4, 12, scale=3.0)
    return x


def inputs_bias(gen):
    x = _qkv(gen, (2,), 5, 7, 16, 12)
    x["bias"] = randn(gen, 5, 7, scale=2.0)
    return x


def inputs_bias_mask(gen):
    x = inputs_bias(gen)
    x["mask"] = _random_mask(gen, 5, 7, blocked_row=4)
    return x


# --------------------------------------------------------------------------- probes


def sdpa(mod, x):
    result = mod.scaled_dot_product_attention(x["q"], x["k"], x["v"], mask=x.get("mask"))
    out, weights = pair(result, "scaled_dot_product_attention's result")
    return {"out": out, "weights": weights}


def probe_sdpa(mod, x):
    return sdpa(mod, x)


def probe_batch_dims(mod, x):
    got = {}
    for shape, xs in x.items():
        got.update({f"{shape}/{k}": v for k, v in sdpa(mod, xs).items()})
    return got


def probe_blocked_keys(mod, x):
    first = sdpa(mod, x)
    second = sdpa(mod, {**x, "k": x["k2"], "v": x["v2"]})
    return {**first, "out2": second["out"], "weights2": second["weights"]}


def probe_causal(mod, x):
    first = sdpa(mod, x)
    second = sdpa(mod, {"q": x["q2"], "k": x["k2"], "v": x["v2"], "mask": x["mask"]})
    return {**first, "out2": second["out"], "weights2": second["weights"]}


def probe_bias(mod, x):
    result = mod.attention_with_bias(x["q"], x["k"], x["v"], x["bias"], mask=x.get("mask"))
    out, weights = pair(result, "attention_with_bias's result")
    return {"out": out, "weights": weights}


# --------------------------------------------------------------------------- verdicts


def verdict_reference(got, want, x):
    _compare(got, want, x)


def verdict_batch_dims(got, want, x):
    for shape, xs in x.items():
        _compare(got, want, xs, prefix=f"{shape}/")


def verdict_rows_sum(got, want, x):
    weights = tensor(got, "weights", "the weights", shape=want["weights"].shape)
    ones = torch.ones(weights.shape[:-1], dtype=weights.dtype)
    if close(weights.sum(dim=-1), ones):
        return
    if close(weights.sum(dim=-2), torch.ones_like(weights.sum(dim=-2))):
        raise Failure(SOFTMAX_DIM)
    assert_close(weights.sum(dim=-1), ones, "the row sums of the weights")


def verdict_scale(got, want, x):
    weights = tensor(got, "weights", "the weights", shape=want["weights"].shape)
    failure = _scale_failure(x, weights)
    if failure:
        raise failure
    assert_close(weights, want["weights"], "the weights", _candidates(x, "weights"))


def verdict_blocked_row(got, want, x):
    out = tensor(got, "out", "the output", shape=want["out"].shape)
    weights = tensor(got, "weights", "the weights", shape=want["weights"].shape)
    row = 2
    if not (torch.isfinite(weights).all() and torch.isfinite(out).all()):
        raise Failure(NAN_BLOCKED_ROW)
    if weights[:, row].abs().max() > 0 or out[:, row].abs().max() > tolerance(out.dtype)["atol"]:
        raise Failure(BLOCKED_ROW_NOT_ZERO)
    _compare(got, want, x)


def verdict_blocked_keys(got, want, x):
    _compare({"out": got.get("out"), "weights": got.get("weights")}, want, x)
    weights2 = tensor(got, "weights2", "the weights", shape=want["weights2"].shape)
    blocked = x["mask"].expand_as(weights2)
    if torch.nan_to_num(weights2[blocked], nan=1.0).abs().max() > 0:
        raise Failure(FILL_TOO_WEAK)
    second = {"q": x["q"], "k": x["k2"], "v": x["v2"], "mask": x["mask"]}
    _compare(
        {"out": got.get("out2"), "weights": got.get("weights2")},
        {"out": want["out2"], "weights": want["weights2"]},
        second,
    )


def verdict_causal(got, want, x):
    out2 = tensor(got, "out2", "the output", shape=want["out"].shape)
    out = tensor(got, "out", "the output", shape=want["out"].shape)
    if not close(out[:, :4], out2[:, :4]):
        raise Failure(CAUSAL_LEAK)
    _compare({"out": out, "weights": got.get("weights")}, want, x)


CHECKS = [
    Check(
        MODULE,
        "reference",
        "matches the reference (L ≠ S, d_k ≠ d_v)",
        3,
        inputs_basic,
        probe_sdpa,
        verdict_reference,
        "scaled_dot_product_attention",
    ),
    Check(
        MODULE,
        "batch-dims",
        "works with no batch dim and with (B, H) batch dims",
        2,
        inputs_batch_dims,
        probe_batch_dims,
        verdict_batch_dims,
        "scaled_dot_product_attention",
    ),
    Check(
        MODULE,
        "float64",
        "keeps float64 and matches at float64 precision",
        1,
        inputs_float64,
        probe_sdpa,
        verdict_reference,
        "scaled_dot_product_attention",
    ),
    Check(
        MODULE,
        "rows-sum-to-one",
        "each query's weights sum to 1 over the keys",
        1,
        inputs_basic,
        probe_sdpa,
        verdict_rows_sum,
        "scaled_dot_product_attention",
    ),
    Check(
        MODULE,
        "scale",
        "scores are scaled by 1/√d_k",
        2,
        inputs_scale,
        probe_sdpa,
        verdict_scale,
        "scaled_dot_product_attention",
    ),
    Check(
        MODULE,
        "mask-2d",
        "an (L, S) mask broadcasts over the batch",
        2,
        inputs_mask_2d,
        probe_sdpa,
        verdict_reference,
        "scaled_dot_product_attention",
    ),
    Check(
        MODULE,
        "mask-4d",
        "a (B, 1, 1, S) padding mask broadcasts over heads and queries",
        2,
        inputs_mask_4d,
        probe_sdpa,
        verdict_reference,
        "scaled_dot_product_attention",
    ),
    Check(
        MODULE,
        "blocked-row",
        "a fully blocked row gives zero weights and output, no NaN",
        2,
        inputs_blocked_row,
        probe_sdpa,
        verdict_blocked_row,
        "scaled_dot_product_attention",
    ),
    Check(
        MODULE,
        "blocked-keys",
        "a blocked key's k and v change nothing",
        1,
        inputs_blocked_keys,
        probe_blocked_keys,
        verdict_blocked_keys,
        "scaled_dot_product_attention",
    ),
    Check(
        MODULE,
        "causal",
        "under a causal mask the future cannot change the past",
        1,
        inputs_causal,
        probe_causal,
        verdict_causal,
        "scaled_dot_product_attention",
    ),
    Check(
        MODULE,
        "bias",
        "attention_with_bias matches the reference",
        2,
        inputs_bias,
        probe_bias,
        verdict_reference,
        "attention_with_bias",
    ),
    Check(
        MODULE,
        "bias-mask",
        "attention_with_bias with a mask and a fully blocked row",
        1,
        inputs_bias_mask,
        probe_bias,
        verdict_reference,
        "attention_with_bias",
    ),
]
