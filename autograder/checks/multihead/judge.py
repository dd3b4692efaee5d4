"""Judge side of multihead.py's checks: misconceptions, models of wrong computations, verdicts.

Only checks titled "matches the reference" compare values with it; the others judge the
student's own runs (self-consistency), so a difference is charged where it is named, once.
"""

from __future__ import annotations

import math

import torch

from ...core import verdicts
from ...core.check import NOT_FINITE, WRONG_DTYPE, CheckList, Failure, no_reference
from ...core.diagnosis import infer_scale, name_scale
from ...core.misconception_data import misconceptions_of
from ...core.verdicts import (
    ModelUnavailable,
    assert_close,
    assert_gradients,
    close,
    linear64,
    model,
    tensor,
    variants,
)
from ...trusted import multihead as trusted
from ..attention.judge import MISTAKES as ATTENTION_MISTAKES
from . import probe

CHECKS = CheckList("multihead")
MISTAKES = misconceptions_of(__name__)  # misconceptions.toml: messages and hint ladders

# --------------------------------------------------------------------------- models
# What multi-head attention with a given mistake computes, in float64, to recognise it. The
# @model functions are left out of the student copy (student_copy.py); where a verdict's
# decision needs the right computation, it takes the trusted multi-head attention's pieces,
# which the copy keeps.


@model
def _split(x, H, how="ok"):
    B, T, D = x.shape
    if how == "no-transpose":
        return x.reshape(B, H, T, D // H)
    if how == "interleaved":
        return x.reshape(B, T, D // H, H).permute(0, 3, 1, 2)
    return x.reshape(B, T, H, D // H).transpose(1, 2)


@model
def _merge(x, how="ok"):
    B, H, T, d_k = x.shape
    if how == "no-transpose":
        return x.reshape(B, T, H * d_k)
    if how == "interleaved":
        return x.permute(0, 2, 3, 1).reshape(B, T, H * d_k)
    return x.transpose(1, 2).reshape(B, T, H * d_k)


@model
def _project_out(merged, state, wo="ok", d_k=None):
    w_o = state["w_o.weight"].double()
    if wo == "per-head":
        H = w_o.size(0) // d_k
        w_o = w_o * torch.block_diag(*[torch.ones(d_k, d_k, dtype=torch.float64)] * H)
    out = merged @ w_o.T
    if "w_o.bias" in state:
        out = out + state["w_o.bias"].double()
    return out


def _heads(x, name):
    """The projection `name` (w_q, w_k or w_v) of the query, the key or the value (defaulting
    as forward does), split into heads by the trusted split_heads: (B, H, T, d_k), float64."""
    query = x["query"]
    key = x.get("key", query)
    inputs = {"w_q": query, "w_k": key, "w_v": x.get("value", key)}[name]
    return trusted.split_heads(linear64(inputs, x["state"], name), x["H"])


def _follows(x, weights):
    """The output that the standard path, w_o(merge(weights @ v)), gives from these weights
    (float64), from the trusted merge_heads."""
    return linear64(trusted.merge_heads(weights.double() @ _heads(x, "w_v")), x["state"], "w_o")


def _trusted_mha(x, scale):
    """Multi-head attention with the divisor `scale`, from the trusted layer (kept in the
    student copy): w_q (and its bias) multiplied by √d_k / scale. (out, weights), float64."""
    state, H = x["state"], x["H"]
    D = x["query"].size(-1)
    factor = math.sqrt(D // H) / scale
    state = {k: v.double() * (factor if k.startswith("w_q.") else 1.0) for k, v in state.items()}
    layer = trusted.MultiHeadAttention(D, H, bias="w_q.bias" in state).double().eval()
    layer.load_state_dict(state)
    query = x["query"].double()
    key = x.get("key", x["query"]).double()
    value = x.get("value", x.get("key", x["query"])).double()
    with torch.no_grad():
        return layer(query, key, value, mask=x.get("mask"))


@model
def _mha(x, *, split="ok", merge="ok", scale=None, wo="ok", mask_mode="ok"):
    """Multi-head attention in float64, with one named mistake: (out, weights)."""
    state, H = x["state"], x["H"]
    query = x["query"]
    key = x.get("key", query)
    value = x.get("value", key)
    v_in = linear64(value, state, "w_v")
    if wo == "values":
        v_in = linear64(v_in, state, "w_o")
    q = _split(linear64(query, state, "w_q"), H, split)
    k = _split(linear64(key, state, "w_k"), H, split)
    v = _split(v_in, H, split)
    d_k = q.size(-1)
    scores = q @ k.transpose(-2, -1) / (math.sqrt(d_k) if scale is None else scale)
    mask = x.get("mask")
    if mask is not None and mask_mode != "ignored":
        mask = ~mask if mask_mode == "inverted" else mask
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    if mask is not None and mask_mode != "ignored":
        weights = weights.masked_fill(mask.all(dim=-1, keepdim=True), 0.0)
    merged = _merge(weights @ v, merge)
    if wo in ("none", "values"):
        return merged, weights
    return _project_out(merged, state, wo, d_k), weights


@model
def _mha_own_parts(x, split_l, split_s, merge):
    """Multi-head attention in float64 with the student's own split_heads and merge_heads,
    given as where each feature goes (flat indices, from _own_parts): (out, weights)."""
    state, H = x["state"], x["H"]
    query = x["query"]
    key = x.get("key", query)
    value = x.get("value", key)

    def split(t, index):
        B, T, D = t.shape
        return t.reshape(B, T * D)[:, index].reshape(B, H, T, D // H)

    q = split(linear64(query, state, "w_q"), split_l)
    k = split(linear64(key, state, "w_k"), split_s)
    v = split(linear64(value, state, "w_v"), split_s)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    mask = x.get("mask")
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    if mask is not None:
        weights = weights.masked_fill(mask.all(dim=-1, keepdim=True), 0.0)
    heads = weights @ v
    B, _, L, d_k = heads.shape
    merged = heads.reshape(B, H * L * d_k)[:, merge].reshape(B, L, H * d_k)
    return linear64(merged, state, "w_o"), weights


def _own_parts(got, x):
    """(split at L, split at S, merge): where the student's own split_heads and merge_heads
    send each feature (the probe's own_split_merge), when each is a permutation of the right
    shape and one of them is not the trusted one's; else None."""
    query = x["query"]
    H, (L, D), S = x["H"], query.shape[1:], x.get("key", query).size(-2)
    found = []
    for key, shape in (
        ("own_split/L", (1, H, L, D // H)),
        ("own_split/S", (1, H, S, D // H)),
        ("own_merge", (1, L, D)),
    ):
        value = got.get(key)
        if type(value) is not torch.Tensor or tuple(value.shape) != shape:
            return None
        if not value.is_floating_point() or not torch.isfinite(value).all():
            return None
        flat = value.double().flatten()
        if not torch.equal(flat.sort().values, torch.arange(flat.numel(), dtype=torch.float64)):
            return None
        found.append(flat.long())
    trusted_parts = [
        trusted.split_heads(torch.arange(L * D).reshape(1, L, D), H).flatten(),
        trusted.split_heads(torch.arange(S * D).reshape(1, S, D), H).flatten(),
        trusted.merge_heads(torch.arange(L * D).reshape(1, H, L, D // H)).flatten(),
    ]
    if all(torch.equal(a, b) for a, b in zip(found, trusted_parts, strict=True)):
        return None
    return tuple(found)


def _right_with_own_parts(got, x, out, weights, out_too):
    """Whether the run is multi-head attention done right with the student's own (wrong)
    split_heads or merge_heads: their own checks charge that mistake (isolation within the
    module, principle 6). In the student copy, only where the kit recorded that model."""
    parts = _own_parts(got, x)
    if parts is None:
        return False
    try:
        o_model, w_model = _mha_own_parts(x, *parts)
    except ModelUnavailable:
        return False
    if not close(weights, w_model.to(weights.dtype)):
        return False
    return not out_too or close(out, o_model.to(out.dtype))


def _scale_names(x):
    D, H = x["query"].size(-1), x["H"]
    key = x.get("key", x["query"])
    return {"d_k": D // H, "d_model": D, "S": key.size(-2), "L": x["query"].size(-2)}


def _scale_details(x, c):
    names = _scale_names(x)
    return {"used": name_scale(c, names), "expected": math.sqrt(names["d_k"]), "d_k": names["d_k"]}


def _candidates(x, which, like):
    """(misconception, that mistake's output, details), cast to the student's dtype."""
    i = 0 if which == "out" else 1

    def lazy(**kw):
        return lambda: _mha(x, **kw)[i].to(like.dtype)

    D = x["query"].size(-1)
    found = [
        (MISTAKES["split-view-no-transpose"], lazy(split="no-transpose"), {}),
        (MISTAKES["split-interleaved"], lazy(split="interleaved"), {}),
        (MISTAKES["mha-wrong-scale"], lazy(scale=math.sqrt(D)), _scale_details(x, math.sqrt(D))),
        (ATTENTION_MISTAKES["no-scaling"], lazy(scale=1.0), {}),
    ]
    if x.get("mask") is not None:
        found += [
            (ATTENTION_MISTAKES["mask-inverted"], lazy(mask_mode="inverted"), {}),
            (ATTENTION_MISTAKES["mask-ignored"], lazy(mask_mode="ignored"), {}),
        ]
    if which == "out":
        found += [
            (MISTAKES["merge-view-no-transpose"], lazy(merge="no-transpose"), {}),
            (MISTAKES["merge-interleaved"], lazy(merge="interleaved"), {}),
            (MISTAKES["mha-no-output-projection"], lazy(wo="none"), {}),
            (MISTAKES["mha-wo-before-merge"], lazy(wo="values"), {}),
            (MISTAKES["mha-wo-per-head"], lazy(wo="per-head"), {}),
        ]
    return found


def _scale_failure(x, weights):
    """If the weights are softmax(q_h k_hᵀ / c) with c ≠ √d_k: the Failure naming c."""
    q, k = _heads(x, "w_q"), _heads(x, "w_k")
    c = infer_scale(q, k, weights, x.get("mask"))
    d_k = q.size(-1)
    if c is None or math.isclose(c, math.sqrt(d_k), rel_tol=1e-3):
        return None
    if math.isclose(c, 1.0, rel_tol=1e-3):
        return Failure(ATTENTION_MISTAKES["no-scaling"])
    return Failure(MISTAKES["mha-wrong-scale"], **_scale_details(x, c))


# --------------------------------------------------------------------------- result guards


def _float(got, key, what, shape, dtype):
    """got[key] as a tensor of the expected shape and floating dtype. A bool or integer
    result is refused here, before any value is compared (issue 12.2)."""
    value = tensor(got, key, what, shape=shape)
    if value.dtype != dtype:
        raise Failure(WRONG_DTYPE, what=what, got=value.dtype, expected=dtype)
    return value


def _result(got, x, prefix="", *, averaged_ok=False):
    """The student's (out, weights) for inputs x, type, shape and dtype checked. A check
    that does not judge the per-head maps (averaged_ok) takes head-averaged weights as one
    head, (B, 1, L, S): their shape is charged by the checks that need it."""
    B, L, D = x["query"].shape
    S = x.get("key", x["query"]).size(-2)
    value = got.get(prefix + "weights")
    dtype = x["query"].dtype
    if type(value) is torch.Tensor and value.dim() == 3 and value.shape == (B, L, S):
        if not averaged_ok:
            raise Failure(MISTAKES["mha-weights-averaged"], got=tuple(value.shape))
        weights = _float(got, prefix + "weights", "the weights", (B, L, S), dtype)[:, None]
        return _float(got, prefix + "out", "the output", (B, L, D), dtype), weights
    weights = _float(got, prefix + "weights", "the weights", (B, x["H"], L, S), dtype)
    out = _float(got, prefix + "out", "the output", (B, L, D), dtype)
    return out, weights


def _compare(got, want, x, prefix="", *, out_too=True):
    """Weights first (they say more about a mistake), then the output. A wrong divisor is
    charged by the `scale` check alone: here, attention that is right but for its divisor
    passes (docs/principles.md, principle 10)."""
    out, weights = _result(got, x, prefix)
    w_want, o_want = want[prefix + "weights"], want[prefix + "out"]
    right = close(weights, w_want) and (not out_too or close(out, o_want))
    if not right and not prefix and _right_with_own_parts(got, x, out, weights, out_too):
        return
    if not close(weights, w_want):
        failure = _scale_failure(x, weights)
        if failure and _right_but_for_the_divisor(x, out, weights, out_too):
            return
        if failure:
            raise failure
    assert_close(weights, w_want, "the weights", _candidates(x, "weights", weights))
    if out_too:
        assert_close(out, o_want, "the output", _candidates(x, "out", out))


def _right_but_for_the_divisor(x, out, weights, out_too):
    """Whether the student's run is multi-head attention with another divisor (the one
    infer_scale reads off their weights, snapped to the named widths it is close to). In
    the student copy, which has no _mha, the trusted layer computes it."""
    c = infer_scale(_heads(x, "w_q"), _heads(x, "w_k"), weights, x.get("mask"))
    if c is None:
        return False
    for width in _scale_names(x).values():
        for named in (math.sqrt(width), float(width)):
            if math.isclose(c, named, rel_tol=1e-3):
                c = named
    try:
        found = _mha(x, scale=c)
    except ModelUnavailable:
        found = _trusted_mha(x, c)
    o_model, w_model = (t.to(weights.dtype) for t in found)
    return close(weights, w_model) and (not out_too or close(out, o_model.to(out.dtype)))


def _rows_sum_to_one(weights, open_rows=None):
    """Attention weights are distributions over the keys: what no zeros or noise can fake."""
    sums = weights.sum(dim=-1)
    if open_rows is not None:
        sums = sums[..., open_rows]
    assert_close(sums, torch.ones_like(sums), "the row sums of the weights (each should be 1)")


# --------------------------------------------------------------------------- split / merge


SPLIT_HEADS = CHECKS.exercise("split_heads", probe=probe.probe_split)


@SPLIT_HEADS.check("split", inputs=probe.inputs_split)
def verdict_split(got, want, x):
    for i, (B, T, D, H) in enumerate(x["cases"]):
        what = f"split_heads(x of shape {(B, T, D)}, {H})"
        value = got.get(f"x{i}")
        if type(value) is torch.Tensor and tuple(value.shape) == (B, T, H, D // H) and T != H:
            raise Failure(MISTAKES["split-view-no-transpose"])
        xi = x[f"x{i}"]
        value = _float(got, f"x{i}", what, (B, H, T, D // H), xi.dtype)
        mistakes = [
            (MISTAKES["split-view-no-transpose"], "no-transpose"),
            (MISTAKES["split-interleaved"], "interleaved"),
        ]
        assert_close(value, want[f"x{i}"], what, variants(_split, xi, H, mistakes=mistakes))


MERGE_HEADS = CHECKS.exercise("merge_heads", probe=probe.probe_merge)


@MERGE_HEADS.check("merge", inputs=probe.inputs_merge)
def verdict_merge(got, want, x):
    for i, (B, H, T, d_k) in enumerate(x["cases"]):
        what = f"merge_heads(x of shape {(B, H, T, d_k)})"
        xi = x[f"x{i}"]
        value = _float(got, f"x{i}", what, (B, T, H * d_k), xi.dtype)
        mistakes = [
            (MISTAKES["merge-view-no-transpose"], "no-transpose"),
            (MISTAKES["merge-interleaved"], "interleaved"),
        ]
        assert_close(value, want[f"x{i}"], what, variants(_merge, xi, mistakes=mistakes))


@SPLIT_HEADS.check("split-error", inputs=probe.inputs_split_error, probe=probe.probe_split_error)
@no_reference
def verdict_split_error(got, want, x):
    D, H = x["x"].size(-1), x["H"]
    if got.get("outcome") != "ValueError":
        raise Failure(MISTAKES["split-no-valueerror"], D=D, H=H, got=got.get("outcome"))
    text = str(got.get("text", ""))
    if "divisib" not in text.lower() and not (str(D) in text and str(H) in text):
        raise Failure(MISTAKES["split-error-unclear"], text=verdicts.excerpt(text))


# --------------------------------------------------------------------------- MultiHeadAttention


MULTI_HEAD_ATTENTION = CHECKS.exercise("MultiHeadAttention", probe=probe.probe_mha)


@MULTI_HEAD_ATTENTION.check("self-attention", inputs=probe.inputs_self)
def verdict_mha(got, want, x):
    _compare(got, want, x)


MULTI_HEAD_ATTENTION.check("cross", inputs=probe.inputs_cross, verdict=verdict_mha)
MULTI_HEAD_ATTENTION.check("mask", inputs=probe.inputs_mask, verdict=verdict_mha)


@MULTI_HEAD_ATTENTION.check("blocked-row", inputs=probe.inputs_blocked_row)
@no_reference
def verdict_blocked_row(got, want, x):
    """Judged on the student's own run: the blocked row's weights are zero in every head,
    nothing is NaN, and every other row is a distribution (so zeros cannot pass). Named with
    attention.py's ids, for code that computes attention itself (the trusted attention has
    it right). The output row is not compared: where it lands is merge_heads' business."""
    out, weights = _result(got, x, averaged_ok=True)
    row = x["row"]
    if not (torch.isfinite(weights[:, :, row]).all() and torch.isfinite(out[:, row]).all()):
        raise Failure(ATTENTION_MISTAKES["nan-on-blocked-row"])
    if weights[:, :, row].abs().max() > 0:
        others = weights[:, :, torch.arange(weights.size(-2)) != row]
        allowed = ~x["mask"][torch.arange(x["mask"].size(0)) != row].expand_as(others)
        if others[allowed].abs().max() == 0:  # every weight sits on a blocked key
            raise Failure(ATTENTION_MISTAKES["mask-inverted"])
        if (others[~allowed].abs() > 1e-6).any():  # weight on keys blocked in other rows too:
            raise Failure(ATTENTION_MISTAKES["mask-ignored"])  # no fill at all, not a finite one
        raise Failure(ATTENTION_MISTAKES["blocked-row-not-zero"])
    if not torch.isfinite(weights).all():
        raise Failure(NOT_FINITE, what="the weights", count=int((~weights.isfinite()).sum()))
    _rows_sum_to_one(weights, torch.arange(weights.size(-2)) != row)


MULTI_HEAD_ATTENTION.check("padding-mask", inputs=probe.inputs_padding, verdict=verdict_mha)


@MULTI_HEAD_ATTENTION.check("defaults", inputs=probe.inputs_defaults, probe=probe.probe_defaults)
@no_reference
def verdict_defaults(got, want, x):
    """Judged on the student's own calls: forward(q) = forward(q, q, q) and forward(q, m) =
    forward(q, m, m); the key and the value must each matter, so constant outputs fail."""
    memory = {**x, "key": x["memory"], "value": x["memory"]}
    out = {}
    for tag, names in probe.DEFAULT_CALLS:
        inputs = memory if len(names) > 1 else x
        out[tag] = _result(got, inputs, prefix=f"{tag}/", averaged_ok=True)[0]
    if not close(out["self"], out["self3"]):
        raise Failure(MISTAKES["mha-defaults-not-self-attention"])
    if not close(out["kv"], out["kv3"]):
        if close(out["kv"], out["kvq"]):
            raise Failure(MISTAKES["mha-value-defaults-to-query"])
        assert_close(
            out["kv"],
            out["kv3"],
            "forward(query, key), which should equal forward(query, key, key)",
        )
    if close(out["kv3"], out["kvm2"]):
        raise Failure(MISTAKES["mha-input-ignored"], which="values")
    if close(out["self3"], out["kv3"]):
        raise Failure(MISTAKES["mha-input-ignored"], which="keys and values")


@MULTI_HEAD_ATTENTION.check("scale", inputs=probe.inputs_scale)
def verdict_scale(got, want, x):
    out, weights = _result(got, x)
    failure = _scale_failure(x, weights)
    if failure:
        raise failure
    _compare(got, want, x, out_too=False)


MULTI_HEAD_ATTENTION.check("bias", inputs=probe.inputs_bias, verdict=verdict_mha)

# --------------------------------------------------------------------------- the W_O diagnostic


def _slices_changed(got, x, tag, h):
    """Which output feature slices (one per head) changed when head h's queries changed."""
    B, T, D = x["query"].shape
    d_k = D // x["H"]
    base = _float(got, f"{tag}/base", "the output", (B, T, D), x["query"].dtype)
    after = _float(got, f"{tag}/h{h}", "the output", (B, T, D), x["query"].dtype)
    diff = (after - base).abs().amax(dim=(0, 1))
    return [j for j in range(x["H"]) if diff[j * d_k : (j + 1) * d_k].max() > 1e-4]


def _feature_text(x, heads):
    d_k = x["query"].size(-1) // x["H"]
    return ", ".join(f"{j * d_k}:{(j + 1) * d_k}" for j in heads) or "none"


@MULTI_HEAD_ATTENTION.check("w-o", inputs=probe.inputs_wo, probe=probe.probe_wo)
@no_reference
def verdict_wo(got, want, x):
    """Judged on the student's own runs: which output slices move when one head's queries
    move. Zeros or noise cannot pass (nothing moves, or everything does)."""
    H = x["H"]
    for h in range(H):
        changed = _slices_changed(got, x, "random", h)
        if changed != list(range(H)):
            out = got["random/base"]
            for mistake, output, _ in _candidates(x, "out", out):
                if mistake not in (
                    MISTAKES["mha-no-output-projection"],
                    MISTAKES["mha-wo-before-merge"],
                    MISTAKES["mha-wo-per-head"],
                ):
                    continue
                try:
                    if close(out, output()):
                        raise Failure(mistake)
                except ModelUnavailable:  # the student copy: not named there
                    continue
            raise Failure(MISTAKES["wo-no-mixing"], head=h, changed=_feature_text(x, changed))
    for h in range(H):
        changed = _slices_changed(got, x, "identity", h)
        if changed != [h]:
            raise Failure(
                MISTAKES["wo-identity-mixes"],
                head=h,
                expected=_feature_text(x, [h]),
                changed=_feature_text(x, changed),
            )


# --------------------------------------------------------------------------- vectorisation


@MULTI_HEAD_ATTENTION.advice("vectorised", inputs=probe.inputs_vector, probe=probe.probe_vector)
def verdict_vector(got, want, x):
    """The op counts are recorded in the student's process (a TorchDispatchMode): code that
    runs there can hide ops from it (issue 12.3). No returned data shows whether the heads
    were looped over, so this check weighs 1 point; official grading should not trust it."""
    counts = {}
    for k in ("mm2", "mm8", "ops2", "ops8"):
        value = got.get(k)
        if type(value) is not int:
            raise Failure(
                WRONG_DTYPE, what=f"the op count {k}", got=type(value).__name__, expected="int"
            )
        counts[k] = value
    if counts["mm8"] > counts["mm2"] or counts["ops8"] > counts["ops2"]:
        raise Failure(MISTAKES["mha-loop-over-heads"], **counts)
    # Code that computes nothing makes no loop either: the weights must be attention weights.
    B, T, _ = x["query"].shape
    for H in (2, 8):
        weights = got.get(f"weights{H}")
        averaged = type(weights) is torch.Tensor and tuple(weights.shape) == (B, T, T)
        shape = (B, T, T) if averaged else (B, H, T, T)  # averaged: charged elsewhere
        _rows_sum_to_one(_float(got, f"weights{H}", "the weights", shape, x["query"].dtype))


# --------------------------------------------------------------------------- dropout


@MULTI_HEAD_ATTENTION.check("dropout", inputs=probe.inputs_dropout, probe=probe.probe_dropout)
@no_reference
def verdict_dropout(got, want, x):
    """Judged on the student's own runs: with dropout=p, eval mode (with and without
    autograd) gives exactly the dropout-0 result; training mode drops about p of the weights
    at random, scales the kept ones by 1/(1 - p), and the output uses those weights."""
    p = x["p"]
    t = {}
    for tag in ("p0", "eval", "eval-grad", "train", "train2"):
        t[tag] = _result(got, x, prefix=f"{tag}/")
    for tag in ("eval", "eval-grad"):
        if not (close(t[tag][0], t["p0"][0]) and close(t[tag][1], t["p0"][1])):
            raise Failure(MISTAKES["mha-dropout-in-eval"])
    (o0, w0), (o, w) = t["p0"], t["train"]
    if close(w, w0):
        if close(o, o0):
            raise Failure(MISTAKES["mha-dropout-ignored"])
        raise Failure(MISTAKES["mha-dropout-not-on-weights"])
    kept = w != 0
    if not kept.all() and close(w[kept], w0[kept]):
        raise Failure(MISTAKES["mha-dropout-not-rescaled"])
    candidates = w0 != 0
    dropped = float((~kept[candidates]).double().mean())
    spread = 5 * math.sqrt(p * (1 - p) / int(candidates.sum()))
    if abs(dropped - p) > spread:
        raise Failure(MISTAKES["mha-dropout-wrong-rate"], p=p, dropped=dropped)
    assert_close(
        w,
        torch.where(kept, w0 / (1 - p), 0.0),
        "the training-mode weights (each either 0 or w / (1 - p))",
    )
    if torch.equal(t["train2"][1] != 0, kept):
        raise Failure(MISTAKES["mha-dropout-not-random"])
    # Placement: where the student's dropout-0 output follows from its weights the standard
    # way (w_o(merge(w @ v))), the training output must follow from the dropped weights the
    # same way. Code whose output path differs is charged in the checks that name that.
    if close(o0, _follows(x, w0).to(o.dtype)) and not close(o, _follows(x, w).to(o.dtype)):
        raise Failure(MISTAKES["mha-dropout-not-on-weights"])
    assert_gradients(got, None, f"MultiHeadAttention(dropout={p}) in training mode")
