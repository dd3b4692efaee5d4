"""Judge side of attention.py's checks: misconceptions, models of wrong computations, verdicts."""

from __future__ import annotations

import math

import torch

from ...core import verdicts
from ...core.check import CheckList, Failure
from ...core.diagnosis import infer_scale, name_scale
from ...core.misconception_data import misconceptions_of
from ...core.tolerances import tolerance
from ...core.verdicts import Candidate, assert_close, close, model, tensor
from ...trusted.attention import attention_with_bias as trusted_attention
from ...trusted.attention import broadcast_shape
from . import probe

CHECKS = CheckList("attention")
MISTAKES = misconceptions_of(__name__)  # misconceptions.toml: messages and hint ladders

# --------------------------------------------------------------------------- trusted models
# What attention with a given mistake computes, in float64, to recognise that mistake.


@model
def _attend(
    x,
    *,
    scale=None,
    dim=-1,
    mask_mode="before",
    bias_mode="scores",
    invert=False,
    fill="ok",
    returns="weights",
):
    """(out, weights) with the named mistake. fill: what the line that masks the scores does
    wrong, the rest as the docstring asks (fully blocked rows still zeroed): "inverted"
    (masked_fill(~mask, -inf)), "none" (its result not kept), "add" (scores + mask.float()),
    "multiply" (scores * ~mask). returns="scores": the scores (masked) are returned as the
    weights, the output being right."""
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
        if fill == "ok":
            scores = scores.masked_fill(mask, float("-inf"))
        elif fill == "inverted":
            scores = scores.masked_fill(~mask, float("-inf"))
        elif fill == "add":
            scores = scores + mask.double()
        elif fill == "multiply":
            scores = scores * (~mask).double()
    weights = scores.softmax(dim=dim)
    returned = scores
    if mask is not None:
        if mask_mode == "before":
            weights = weights.masked_fill(mask.all(dim=-1, keepdim=True), 0.0)
        elif mask_mode == "after":
            weights = weights.masked_fill(mask, 0.0)
    if bias is not None and bias_mode == "after":
        weights = weights + bias.double()
    return weights @ v, (returned if returns == "scores" else weights)


def _candidates(x, which: str):
    """(misconception, the output that mistake gives, details) for `which` in out/weights."""
    i = 0 if which == "out" else 1

    def lazy(**kw):
        return lambda: _attend(x, **kw)[i]

    d_k = x["q"].size(-1)
    found: list[Candidate] = [
        (MISTAKES["no-scaling"], lazy(scale=1.0), {}),
        (MISTAKES["softmax-wrong-dim"], lazy(dim=-2), {}),
    ]
    if x.get("mask") is not None:
        found += [
            (MISTAKES["mask-inverted"], lazy(invert=True), {}),
            (MISTAKES["mask-inverted"], lazy(fill="inverted"), {}),
            (MISTAKES["mask-after-softmax"], lazy(mask_mode="after"), {}),
            (MISTAKES["mask-ignored"], lazy(mask_mode="none"), {}),
            (MISTAKES["mask-ignored"], lazy(fill="none"), {}),
            (MISTAKES["mask-as-number"], lazy(fill="add"), {"how": "added to"}),
            (MISTAKES["mask-as-number"], lazy(fill="multiply"), {"how": "multiplied with"}),
        ]
    if x.get("bias") is not None:
        found += [
            (MISTAKES["bias-after-softmax"], lazy(bias_mode="after"), {}),
            (MISTAKES["bias-scaled"], lazy(bias_mode="scaled"), {}),
            (MISTAKES["bias-ignored"], lazy(bias_mode="none"), {}),
        ]
    if which == "weights":
        scores = lambda: x["q"].double() @ x["k"].double().transpose(-2, -1) / math.sqrt(d_k)  # noqa: E731
        found.append((MISTAKES["returned-scores"], scores, {}))
    return found


def _scale_failure(x, weights) -> Failure | None:
    """If the weights are a softmax of q kᵀ / c with the wrong c, the Failure naming c."""
    c = infer_scale(x["q"], x["k"], weights, x.get("mask"), x.get("bias"))
    d_k = x["q"].size(-1)
    if c is None or math.isclose(c, math.sqrt(d_k), rel_tol=1e-3):
        return None
    if math.isclose(c, 1.0, rel_tol=1e-3):
        return Failure(MISTAKES["no-scaling"])
    names = {"d_k": d_k, "d_v": x["v"].size(-1), "S": x["k"].size(-2), "L": x["q"].size(-2)}
    return Failure(
        MISTAKES["wrong-scale"], used=name_scale(c, names), expected=math.sqrt(d_k), d_k=d_k
    )


def _own_conventions(x, out, weights) -> bool:
    """Whether the run is this check's attention computed with the student's own divisor c
    (the one their weights show, core.diagnosis.infer_scale) or with the softmax over the
    queries: mistakes that the reference, scale and rows-sum-to-one checks charge, and that a
    check varying something else (batch dims, the dtype, a mask's shape) lets pass, so that
    they cost points once (principle 10). Computed with the trusted attention (both kits have
    it), in float64, within the tolerance of the student's dtype."""
    q, k, v, mask = x["q"], x["k"], x["v"], x.get("mask")
    if not (torch.isfinite(out).all() and torch.isfinite(weights).all()):
        return False
    d_k = q.size(-1)
    for over_queries in (False, True):
        a, b, w, m = q, k, weights, mask
        if over_queries:  # softmax over the queries: the keys' softmax over them, transposed
            a, b, w = k, q, weights.transpose(-2, -1)
            m = None if mask is None else mask.transpose(-2, -1)
        c = infer_scale(a, b, w, m)
        if c is None or not c > 0:
            continue
        scaled = a.double() * (math.sqrt(d_k) / c)
        own = trusted_attention(scaled, b.double(), b.double(), None, m)[1]
        own = own.transpose(-2, -1) if over_queries else own
        if close(weights, own.to(weights.dtype)) and close(out, (own @ v.double()).to(out.dtype)):
            return True
    return False


def _returned_scores(x, out, weights, want_out) -> bool:
    """Whether the run has the reference's output and returns the scaled scores (on the keys
    the mask allows) as its weights: a mistake that the reference check names."""
    scores = x["q"].double() @ x["k"].double().transpose(-2, -1) / math.sqrt(x["q"].size(-1))
    mask = x.get("mask")
    try:
        allowed = torch.ones(weights.shape, dtype=torch.bool)
        if mask is not None:
            allowed = ~mask.expand(weights.shape)
        scores = scores.expand(weights.shape)
    except RuntimeError:
        return False
    return close(out, want_out) and close(weights[allowed], scores[allowed].to(weights.dtype))


def _compare(got, want, x, *, prefix="", exempt=False):
    """Weights first (they say more about a mistake), then the output. With `exempt`, a run
    that only has the scale or the softmax axis wrong (_own_conventions), or that returns
    the scores as its weights (_returned_scores), passes: the reference check names those."""
    out = tensor(got, prefix + "out", "the output", floating=True, shape=want[prefix + "out"].shape)
    weights = tensor(
        got, prefix + "weights", "the weights", floating=True, shape=want[prefix + "weights"].shape
    )
    for name, value in (("output", out), ("weights", weights)):
        expected = want[prefix + ("out" if name == "output" else name)].dtype
        if value.dtype != expected:
            raise Failure(
                MISTAKES["dtype-not-kept"], what=f"the {name}", got=value.dtype, expected=expected
            )
    right = close(weights, want[prefix + "weights"]) and close(out, want[prefix + "out"])
    if exempt and not right:
        if _own_conventions(x, out, weights):
            return
        if _returned_scores(x, out, weights, want[prefix + "out"]):
            return
    if not close(weights, want[prefix + "weights"]):
        failure = _scale_failure(x, weights)
        if failure:
            raise failure
    assert_close(weights, want[prefix + "weights"], "the weights", _candidates(x, "weights"))
    assert_close(out, want[prefix + "out"], "the output", _candidates(x, "out"))


# --------------------------------------------------------------------------- mask mistakes

# The mask's mistakes that mask-2d names (as _attend flags): the other mask checks, which vary
# the mask's shape or content, pass a run that is wholly that mistake's, so each costs points
# once (principle 10). Replayed with the reference: the student copy decides alike.
MASK_MISTAKES = {
    "inverted": {"invert": True},
    "inverted-fill": {"fill": "inverted"},
    "after": {"mask_mode": "after"},
    "ignored": {"mask_mode": "none"},
    "ignored-fill": {"fill": "none"},
    "added": {"fill": "add"},
    "multiplied": {"fill": "multiply"},
}


# What the reference, scale and rows-sum-to-one checks name and a check varying the mask lets
# pass: the softmax over the queries (NaN in a key column the mask blocks for every query),
# the scores returned as the weights.
NAMED_ELSEWHERE = {"over-queries": {"dim": -2}, "returned-scores": {"returns": "scores"}}
PASSED_BY_MASK_CHECKS = {**MASK_MISTAKES, **NAMED_ELSEWHERE}


def _mask_calls(x):
    """The calls a mask check's probe makes: (suffix of its outputs, inputs)."""
    calls = [("", x)]
    if "k3" in x:  # blocked-keys
        calls += [("2", {**x, "k": x["k2"], "v": x["v2"]}), ("3", {**x, "k": x["k3"]})]
    elif "q2" in x:  # causal
        calls.append(("2", {**x, "q": x["q2"], "k": x["k2"], "v": x["v2"]}))
    return calls


def _mask_replays(x, modes=None):
    found = {}
    for mode, flags in (modes or PASSED_BY_MASK_CHECKS).items():
        for suffix, case in _mask_calls(x):
            out, weights = _attend(case, **flags)
            found[f"{mode}/out{suffix}"] = out.to(case["q"].dtype)
            found[f"{mode}/weights{suffix}"] = weights.to(case["q"].dtype)
    return found


def _same_run(value, replay) -> bool:
    """value is the replay: NaN where it has NaN (a row the mistake leaves without a key),
    within tolerance elsewhere."""
    if not isinstance(value, torch.Tensor) or value.shape != replay.shape:
        return False
    nan = torch.isnan(replay)
    if not torch.equal(torch.isnan(value), nan):
        return False
    return close(value.masked_fill(nan, 0.0), replay.masked_fill(nan, 0.0))


def _elsewhere_replays(x):
    return _mask_replays(x, NAMED_ELSEWHERE)


def _mask_mistake_elsewhere(got, want, x, modes=None) -> bool:
    """Whether every call of the check is wholly one of `modes` (default:
    PASSED_BY_MASK_CHECKS)."""
    return any(
        all(
            _same_run(got.get(f"{name}{suffix}"), want[f"replay/{mode}/{name}{suffix}"])
            for suffix, _ in _mask_calls(x)
            for name in ("out", "weights")
        )
        for mode in (modes or PASSED_BY_MASK_CHECKS)
    )


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
        raise Failure(MISTAKES["nan-on-blocked-row"])
    mask = x.get("mask")
    if mask is not None:
        mask = mask.expand(*batch, L, S)
        open_rows = ~mask.all(dim=-1)
        leaked = w[mask & open_rows[..., None]]
        if leaked.numel() and leaked.abs().max() > 0:
            raise Failure(MISTAKES["mask-leaks"])
    else:
        open_rows = torch.ones(*batch, L, dtype=torch.bool)
    sums = w.sum(dim=-1)
    if not close(sums[open_rows], torch.ones_like(sums[open_rows])):
        if close(w.sum(dim=-2), torch.ones_like(w.sum(dim=-2))):
            raise Failure(MISTAKES["softmax-wrong-dim"])
        assert_close(
            sums[open_rows], torch.ones_like(sums[open_rows]), "the row sums of the weights"
        )
    if (w[~open_rows] != 0).any():
        raise Failure(MISTAKES["blocked-row-not-zero"])
    assert_close(o, (w.double() @ x["v"].double()).to(o.dtype), "the output (weights @ v)")


SCALED_DOT_PRODUCT_ATTENTION = CHECKS.exercise(
    "scaled_dot_product_attention", probe=probe.probe_sdpa
)


@SCALED_DOT_PRODUCT_ATTENTION.check(
    "reference", inputs=probe.inputs_basic, probe=probe.probe_reference
)
def verdict_reference(got, want, x):
    _compare(got, want, x)
    verdicts.assert_gradients(got, None, "scaled_dot_product_attention")  # to q, k and v


def verdict_elsewhere(got, want, x):
    """The reference's values, but a wrong scale or softmax axis is charged elsewhere (the
    reference, scale and rows-sum-to-one checks): this check varies something else."""
    _compare(got, want, x, exempt=True)


@SCALED_DOT_PRODUCT_ATTENTION.check(
    "batch-dims", inputs=probe.inputs_batch_dims, probe=probe.probe_batch_dims
)
def verdict_batch_dims(got, want, x):
    for shape, xs in x.items():
        _compare(got, want, xs, prefix=f"{shape}/", exempt=True)


SCALED_DOT_PRODUCT_ATTENTION.check(
    "float64", inputs=probe.inputs_float64, verdict=verdict_elsewhere
)


@SCALED_DOT_PRODUCT_ATTENTION.check("rows-sum-to-one", inputs=probe.inputs_same_width)
def verdict_rows_sum(got, want, x):
    weights = tensor(got, "weights", "the weights", floating=True, shape=want["weights"].shape)
    ones = torch.ones(weights.shape[:-1], dtype=weights.dtype)
    if close(weights.sum(dim=-1), ones):
        return
    if close(weights.sum(dim=-2), torch.ones_like(weights.sum(dim=-2))):
        raise Failure(MISTAKES["softmax-wrong-dim"])
    assert_close(weights.sum(dim=-1), ones, "the row sums of the weights")


@SCALED_DOT_PRODUCT_ATTENTION.check("scale", inputs=probe.inputs_scale)
def verdict_scale(got, want, x):
    weights = tensor(got, "weights", "the weights", floating=True, shape=want["weights"].shape)
    failure = _scale_failure(x, weights)
    if failure:
        raise failure
    assert_close(weights, want["weights"], "the weights", _candidates(x, "weights"))


@SCALED_DOT_PRODUCT_ATTENTION.check(
    "mask-2d", inputs=probe.inputs_mask_2d, replays=_elsewhere_replays
)
def verdict_mask_2d(got, want, x):
    """The mask's own mistakes are named here; the softmax's axis and the scores returned
    as weights pass (named by the reference and rows-sum-to-one checks), NaN rows too."""
    if not _mask_mistake_elsewhere(got, want, x, NAMED_ELSEWHERE):
        verdict_elsewhere(got, want, x)


@SCALED_DOT_PRODUCT_ATTENTION.check("mask-4d", inputs=probe.inputs_mask_4d, replays=_mask_replays)
def verdict_mask_4d(got, want, x):
    if not _mask_mistake_elsewhere(got, want, x):
        verdict_elsewhere(got, want, x)


@SCALED_DOT_PRODUCT_ATTENTION.check(
    "blocked-row", inputs=probe.inputs_blocked_row, replays=_mask_replays
)
def verdict_blocked_row(got, want, x):
    if _mask_mistake_elsewhere(got, want, x):
        return
    out = tensor(got, "out", "the output", floating=True, shape=want["out"].shape)
    weights = tensor(got, "weights", "the weights", floating=True, shape=want["weights"].shape)
    row = x["row"]
    if not (torch.isfinite(weights[:, row]).all() and torch.isfinite(out[:, row]).all()):
        raise Failure(MISTAKES["nan-on-blocked-row"])
    if weights[:, row].abs().max() > 0 or out[:, row].abs().max() > tolerance(out.dtype)["atol"]:
        raise Failure(MISTAKES["blocked-row-not-zero"])
    _consistent(got, x)


@SCALED_DOT_PRODUCT_ATTENTION.check(
    "blocked-keys",
    inputs=probe.inputs_blocked_keys,
    probe=probe.probe_blocked_keys,
    replays=_mask_replays,
)
def verdict_blocked_keys(got, want, x):
    if _mask_mistake_elsewhere(got, want, x):
        return
    _consistent(got, x)
    second = {**x, "k": x["k2"], "v": x["v2"]}
    _consistent(got, second, out="out2", weights="weights2")
    out = tensor(got, "out", "the output", floating=True)
    out2 = tensor(got, "out2", "the output", floating=True)
    if not close(out2, out):
        raise Failure(MISTAKES["mask-fill-too-weak"])
    third = {**x, "k": x["k3"]}
    weights3 = tensor(got, "weights3", "the weights", floating=True, shape=want["weights3"].shape)
    blocked = x["mask"].expand_as(weights3)
    if torch.nan_to_num(weights3[blocked], nan=1.0).abs().max() > 0:
        raise Failure(MISTAKES["mask-fill-too-weak"])
    _consistent(got, third, out="out3", weights="weights3")


@SCALED_DOT_PRODUCT_ATTENTION.check(
    "causal", inputs=probe.inputs_causal, probe=probe.probe_causal, replays=_mask_replays
)
def verdict_causal(got, want, x):
    if _mask_mistake_elsewhere(got, want, x):
        return
    t = x["t"]
    out = tensor(got, "out", "the output", floating=True, shape=want["out"].shape)
    out2 = tensor(got, "out2", "the output", floating=True, shape=want["out"].shape)
    _consistent(got, x)
    if not close(out[:, :t], out2[:, :t]):
        raise Failure(MISTAKES["causal-leak"])


ATTENTION_WITH_BIAS = CHECKS.exercise("attention_with_bias", probe=probe.probe_bias)


@ATTENTION_WITH_BIAS.check("bias", inputs=probe.inputs_bias, probe=probe.probe_bias_gradients)
def verdict_bias(got, want, x):
    _compare(got, want, x)
    verdicts.assert_gradients(got, None, "attention_with_bias")  # to q, k, v and the bias


ATTENTION_WITH_BIAS.check("bias-mask", inputs=probe.inputs_bias_mask, verdict=_compare)
