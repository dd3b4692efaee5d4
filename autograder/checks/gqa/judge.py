"""Judge side of gqa.py's checks: misconceptions, models of wrong computations, verdicts.

Only checks titled "matches the reference" compare values with it; the others (the groups,
the scale, the ValueErrors) judge the student's own runs, so a difference is charged where
it is named.
"""

from __future__ import annotations

import itertools
import math
import re

import torch

from ...core import verdicts
from ...core.check import WRONG_SHAPE, WRONG_TYPE, CheckList, Failure, no_reference
from ...core.diagnosis import infer_scale, name_scale
from ...core.misconception_data import misconceptions_of
from ...core.verdicts import ModelUnavailable, assert_close, close, linear64, model, tensor
from ...trusted.multihead import split_heads
from ..attention.judge import MISTAKES as ATTENTION_MISTAKES
from ..multihead.judge import MISTAKES as MULTIHEAD_MISTAKES
from . import probe

CHECKS = CheckList("gqa")
MISTAKES = misconceptions_of(__name__)  # misconceptions.toml: messages and hint ladders

# --------------------------------------------------------------------------- models
# What grouped-query attention with a given mistake computes, in float64, to recognise it.
# The @model functions are left out of the student copy (student_copy.py); the query and key
# heads that the scale's decisions need (_qk) come from the trusted split_heads, which the
# copy keeps, and kv_map (which llama's judge imports).


def kv_map(H, H_kv, how="ok"):
    """The key/value head each query head uses."""
    h = torch.arange(H)
    if how == "tiled":
        return h % H_kv
    if how == "first":
        return torch.zeros(H, dtype=torch.long)
    return h // (H // H_kv)


def _split(t, n, heads_as="transpose"):
    """(B, T, n·d) -> (B, n, T, d); heads_as="view" or "split-view": by reshape alone, with no
    transpose (multihead's mistake)."""
    if heads_as in ("view", "split-view"):
        B, T, F = t.shape
        return t.reshape(B, n, T, F // n)
    return split_heads(t, n)


def _qk(x, pairing="ok", heads_as="transpose"):
    """The per-head queries and the keys they meet, float64: (B, H, T, d_k) each."""
    state, H, H_kv = x["state"], x["H"], x["H_kv"]
    q = _split(linear64(x["x"], state, "w_q"), H, heads_as)
    k = _split(linear64(x["x"], state, "w_k"), H_kv, heads_as)[:, kv_map(H, H_kv, pairing)]
    return q, k


@model
def _repeat_tiled(t, n_rep):
    """repeat_kv with the copies of the key/value heads tiled (0, 1, 0, 1), not grouped."""
    return t.repeat(1, n_rep, 1, 1)


@model
def _kv_bytes(case, mistake=None):
    """kv_cache_bytes for one case (D, H, H_kv, T, dtype), with one of the named mistakes
    (gqa-kv-bytes-full-width, gqa-kv-bytes-keys-only, gqa-kv-bytes-elements) or none."""
    D, H, H_kv, T, dtype = case
    size = getattr(torch, dtype).itemsize
    heads = H if mistake is MISTAKES["gqa-kv-bytes-full-width"] else H_kv
    count = 1 if mistake is MISTAKES["gqa-kv-bytes-keys-only"] else 2
    return (
        count * T * heads * (D // H) * (1 if mistake is MISTAKES["gqa-kv-bytes-elements"] else size)
    )


@model
def _gqa(x, *, pairing="ok", scale=None, wo=True, heads_as="transpose"):
    """Grouped-query attention in float64, with one named mistake: (out, weights).
    heads_as: "split-view", "merge-view" or "view" (both): heads split or merged by reshape
    alone (multihead's mistakes, made again where this layer splits and merges its heads)."""
    state, H, H_kv = x["state"], x["H"], x["H_kv"]
    q, k = _qk(x, pairing, heads_as)
    v = _split(linear64(x["x"], state, "w_v"), H_kv, heads_as)[:, kv_map(H, H_kv, pairing)]
    scores = q @ k.transpose(-2, -1) / (math.sqrt(q.size(-1)) if scale is None else scale)
    mask = x.get("mask")
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    if mask is not None:
        weights = weights.masked_fill(mask.all(dim=-1, keepdim=True), 0.0)
    B, _, T, _ = q.shape
    heads = weights @ v
    if heads_as in ("transpose", "split-view"):
        heads = heads.transpose(1, 2)
    merged = heads.reshape(B, T, -1)
    if not wo:
        return merged, weights
    return linear64(merged, state, "w_o"), weights


def _scale_details(x, c):
    D, H, H_kv = x["x"].size(-1), x["H"], x["H_kv"]
    d_k = D // H
    names = {"d_k": d_k, "d_model": D, "H_kv·d_k": H_kv * d_k, "T": x["x"].size(1)}
    return {"used": name_scale(c, names), "expected": math.sqrt(d_k), "d_k": d_k}


def _candidates(x, which, like):
    """(misconception, that mistake's output, details), cast to the student's dtype."""
    i = 0 if which == "out" else 1

    def lazy(**kw):
        return lambda: _gqa(x, **kw)[i].to(like.dtype)

    D, H, H_kv = x["x"].size(-1), x["H"], x["H_kv"]
    found = []
    if 1 < H_kv < H:
        found += [(MISTAKES["gqa-repeat-tiled"], lazy(pairing="tiled"), {})]
    if H_kv > 1:
        found += [(MISTAKES["gqa-one-kv-head"], lazy(pairing="first"), {})]
    for c in (math.sqrt(D), math.sqrt(H_kv * D // H)):
        if not math.isclose(c, math.sqrt(D // H)):
            found.append((MISTAKES["gqa-wrong-scale"], lazy(scale=c), _scale_details(x, c)))
    found.append((ATTENTION_MISTAKES["no-scaling"], lazy(scale=1.0), {}))
    found.append((MULTIHEAD_MISTAKES["split-view-no-transpose"], lazy(heads_as="split-view"), {}))
    found.append((MULTIHEAD_MISTAKES["split-view-no-transpose"], lazy(heads_as="view"), {}))
    if which == "out":
        found.append((MISTAKES["gqa-no-output-projection"], lazy(wo=False), {}))
        merge = MULTIHEAD_MISTAKES["merge-view-no-transpose"]
        found.append((merge, lazy(heads_as="merge-view"), {}))
    return found


# How the heads may be split and paired in a run that is right but for that: the right
# split, or the split by reshape alone (multihead's split-view-no-transpose, which the grouped
# and groups checks charge); the right pairing, or the tiled one, or the first key head only.
SPLITS = ("transpose", "split-view")


def _scale_failure(x, weights, pairings=("ok",), splits=("transpose",)):
    """If the weights are softmax(q_h k_gᵀ / c) with c ≠ √d_k, for one of the pairings of
    query and key heads and one of the ways to split them: the Failure naming c. None when
    they are not such a softmax."""
    for pairing, heads_as in itertools.product(pairings, splits):
        q, k = _qk(x, pairing, heads_as)
        c = infer_scale(q, k, weights, x.get("mask"))
        if c is None:
            continue
        if math.isclose(c, math.sqrt(q.size(-1)), rel_tol=1e-3):
            return None
        if math.isclose(c, 1.0, rel_tol=1e-3):
            return Failure(ATTENTION_MISTAKES["no-scaling"])
        return Failure(MISTAKES["gqa-wrong-scale"], **_scale_details(x, c))
    return None


# --------------------------------------------------------------------------- result guards


def _parameters(got, x):
    """The student's parameters have the shapes the check's weights need (the probe loaded
    nothing otherwise): full-width key/value projections are named."""
    D, H, H_kv = x["x"].size(-1), x["H"], x["H_kv"]
    d_k = D // H
    for name, value in x["state"].items():
        shape = got.get(f"param/{name}")
        if type(shape) is not torch.Tensor or shape.dtype != torch.long or shape.dim() != 1:
            raise Failure(
                WRONG_TYPE,
                what=f"GroupedQueryAttention's parameter {name}",
                expected=f"a tensor of shape {tuple(value.shape)}",
                got="no such parameter",
            )
        shape = tuple(int(s) for s in shape.tolist()[:8])
        if shape == tuple(value.shape):
            continue
        if name in ("w_k.weight", "w_v.weight") and shape == (D, D) and H_kv < H:
            layer = name.split(".")[0]
            raise Failure(
                MISTAKES["gqa-kv-full-width"],
                name=layer,
                D=D,
                got=D,
                H_kv=H_kv,
                d_k=d_k,
                expected=H_kv * d_k,
            )
        raise Failure(
            WRONG_SHAPE,
            what=f"GroupedQueryAttention's parameter {name}",
            got=shape,
            expected=tuple(value.shape),
        )


def _repeated_axis(shape, x):
    """The axis other than the heads' (1) that the keys the student's code passed to
    attention were repeated along (n_rep times as long there, every other size as the
    projected keys'), or None."""
    if type(shape) is not torch.Tensor or shape.dim() != 1 or len(shape) != 4:
        return None
    B, T, D = x["x"].shape
    H, H_kv = x["H"], x["H_kv"]
    n_rep, projected = H // H_kv, (B, H_kv, T, D // H)
    seen = [int(n) for n in shape.tolist()]
    for axis in (0, 2, 3):
        grown = [n * n_rep if a == axis else n for a, n in enumerate(projected)]
        if n_rep > 1 and seen == grown:
            return axis
    return None


def result(got, x, prefix=""):
    """The student's (out, weights) for inputs x: parameters, group count, type and shape."""
    _parameters(got, x)
    H, H_kv = x["H"], x["H_kv"]
    axis = _repeated_axis(got.get(prefix + "kv_shape_seen"), x)
    if axis is not None:  # whether attention then raised or broadcast into other shapes
        shape = tuple(int(n) for n in got[prefix + "kv_shape_seen"].tolist())
        raise Failure(
            MISTAKES["gqa-repeat-wrong-axis"], shape=shape, axis=axis, H=H, n_rep=H // H_kv
        )
    seen = got.get(prefix + "kv_heads_seen")
    if type(seen) is int:
        raise Failure(MISTAKES["gqa-wrong-group-count"], seen=seen, H=H, H_kv=H_kv, n_rep=H // H_kv)
    B, T, D = x["x"].shape
    dtype = x["x"].dtype
    weights = tensor(got, prefix + "weights", "the weights", shape=(B, x["H"], T, T), dtype=dtype)
    out = tensor(got, prefix + "out", "the output", shape=(B, T, D), dtype=dtype)
    return out, weights


def _rows_sum_to_one(weights):
    """Attention weights are distributions over the keys: what no zeros or noise can fake."""
    sums = weights.sum(dim=-1)
    assert_close(sums, torch.ones_like(sums), "the row sums of the weights (each should be 1)")


# --------------------------------------------------------------------------- repeat_kv


REPEAT_KV = CHECKS.exercise("repeat_kv", probe=probe.probe_repeat)


@REPEAT_KV.check("repeat-kv", inputs=probe.inputs_repeat)
def verdict_repeat(got, want, x):
    for i, (B, H_kv, T, d, n_rep) in enumerate(x["cases"]):
        xi = x[f"x{i}"]
        what = f"repeat_kv(x of shape {(B, H_kv, T, d)}, n_rep={n_rep})"
        value = tensor(got, f"x{i}", what, shape=(B, H_kv * n_rep, T, d), dtype=xi.dtype)
        tiled = lambda xi=xi, n_rep=n_rep: _repeat_tiled(xi, n_rep)  # noqa: E731
        assert_close(value, want[f"x{i}"], what, [(MISTAKES["gqa-repeat-tiled"], tiled, {})])
    repeated = {k.removeprefix("repeat/"): v for k, v in got.items() if k.startswith("repeat/")}
    verdicts.assert_gradients(repeated, None, "repeat_kv")  # to x


# --------------------------------------------------------------------------- sizes


def _why(case, D, H, H_kv):
    if case == "kv":
        return f"num_kv_heads = {H_kv} does not divide num_heads = {H}"
    return f"num_heads = {H} does not divide d_model = {D}"


def _says_which(case, text, D, H, H_kv):
    """Whether a message names the sizes that do not fit, in any reasonable words ("K/V" too),
    or gives their numbers."""
    lower = text.lower()
    numbers = set(re.findall(r"\d+", text))
    if case == "kv":
        spelled = lower.replace("/", "").replace("-", "").replace("_", "").replace(" ", "")
        words = ("kv", "key", "value", "group")
        return any(word in spelled for word in words) or {str(H), str(H_kv)} <= numbers
    words = ("d_model", "model", "embed", "dim", "width", "hidden")
    return any(word in lower for word in words) or str(D) in text


GROUPED_QUERY_ATTENTION = CHECKS.exercise("GroupedQueryAttention", probe=probe.probe_gqa)


@GROUPED_QUERY_ATTENTION.check(
    "sizes-error", inputs=probe.inputs_sizes_error, probe=probe.probe_sizes_error
)
@no_reference
def verdict_sizes_error(got, want, x):
    for case in ("kv", "d_model"):
        D, H, H_kv = x[case]
        details = {"D": D, "H": H, "H_kv": H_kv, "why": _why(case, D, H, H_kv)}
        outcome = got.get(f"{case}/outcome")
        if outcome != "ValueError":
            raise Failure(MISTAKES["gqa-no-valueerror"], got=str(outcome)[:100], **details)
        text = str(got.get(f"{case}/text", ""))
        if not _says_which(case, text, D, H, H_kv):
            raise Failure(MISTAKES["gqa-error-unclear"], text=verdicts.excerpt(text), **details)


# --------------------------------------------------------------------------- the layer


def _right_but_for_scale_or_pairing(x, out, weights):
    """Whether the run is grouped-query attention that is right but for its divisor (the one
    its weights show), for which key head each query head meets (tiled, or only the first),
    for how it splits or merges its heads (by reshape alone, no transpose), or for leaving
    out w_o: mistakes the grouped, scale and groups checks charge, which a check varying
    something else (one or H key heads, a mask, biases) lets pass (principle 10). The whole
    run must be that model's, weights and output, computed here. In the student copy, only
    where the kit recorded that model."""
    for pairing, heads_as in itertools.product(("ok", "tiled", "first"), SPLITS):
        q, k = _qk(x, pairing, heads_as)
        c = infer_scale(q, k, weights, x.get("mask"))
        if c is None or not c > 0:
            continue
        merges = ("transpose", "merge-view") if heads_as == "transpose" else (heads_as,)
        for how, wo in itertools.product(merges, (True, False)):
            try:
                o_model, w_model = _gqa(x, pairing=pairing, scale=c, heads_as=how, wo=wo)
            except ModelUnavailable:
                return False
            if close(weights, w_model.to(weights.dtype)) and close(out, o_model.to(out.dtype)):
                return True
    return False


def _compare(got, want, x, *, exempt=False):
    """Weights first (they say more about a mistake), then the output. With `exempt`, a run
    right but for its scale, its pairing of heads, its split or merge of the heads or a
    missing w_o passes (_right_but_for_scale_or_pairing)."""
    out, weights = result(got, x)
    right = close(weights, want["weights"]) and close(out, want["out"])
    if exempt and not right and _right_but_for_scale_or_pairing(x, out, weights):
        return
    if not close(weights, want["weights"]):
        failure = _scale_failure(x, weights)
        if failure:
            raise failure
    assert_close(weights, want["weights"], "the weights", _candidates(x, "weights", weights))
    assert_close(out, want["out"], "the output", _candidates(x, "out", out))


@GROUPED_QUERY_ATTENTION.check("grouped", inputs=probe.inputs_grouped, probe=probe.probe_grouped)
def verdict_grouped(got, want, x):
    _compare(got, want, x)
    # to x and each weight the reference's gradients reach; to w_k and w_v only where the
    # student's own repeat_kv lets a gradient through (else repeat-kv charges the cut)
    what = f"GroupedQueryAttention({x['x'].size(-1)}, {x['H']}, {x['H_kv']})"
    verdicts.assert_gradients(got, want, what, behind=[("repeat", r"grad/w_[kv]\.")])


def verdict_elsewhere(got, want, x):
    """The reference's values, but a wrong scale, pairing, split or merge of the heads, or a
    missing w_o, is charged elsewhere (grouped, scale, groups)."""
    _compare(got, want, x, exempt=True)


GROUPED_QUERY_ATTENTION.check("mqa", inputs=probe.inputs_mqa, verdict=verdict_elsewhere)
GROUPED_QUERY_ATTENTION.check("mha", inputs=probe.inputs_mha, verdict=verdict_elsewhere)
GROUPED_QUERY_ATTENTION.check("mask", inputs=probe.inputs_mask, verdict=verdict_elsewhere)
GROUPED_QUERY_ATTENTION.check("bias", inputs=probe.inputs_bias, verdict=verdict_elsewhere)


@GROUPED_QUERY_ATTENTION.check("scale", inputs=probe.inputs_scale)
def verdict_scale(got, want, x):
    """Judged on the student's own weights: they are softmax(q_h k_gᵀ / c) for c = √d_k. The
    pairing of query and key heads is the groups check's business, and the split of the
    heads the grouped and groups checks': the scale is inferred under the right pairing and
    split and under the named wrong ones."""
    _, weights = result(got, x)
    pairings = ("ok", "tiled", "first")
    failure = _scale_failure(x, weights, pairings, SPLITS)
    if failure:
        raise failure
    _rows_sum_to_one(weights)
    for pairing, heads_as in itertools.product(pairings, SPLITS):
        q, k = _qk(x, pairing, heads_as)
        if infer_scale(q, k, weights) is not None:
            return
    # Not a softmax of paired scores at any scale: named against the reference.
    assert_close(weights, want["weights"], "the weights", _candidates(x, "weights", weights))


def _split_by_view(x, weights):
    """Whether the weights are those of a run that splits its heads by reshape alone (no
    transpose), at the right scale and pairing (the model's, computed here)."""
    try:
        w_model = _gqa(x, heads_as="split-view")[1]
    except ModelUnavailable:  # the student copy: not named there
        return False
    return close(weights, w_model.to(weights.dtype))


@GROUPED_QUERY_ATTENTION.check("groups", inputs=probe.inputs_groups, probe=probe.probe_groups)
@no_reference
def verdict_groups(got, want, x):
    """Judged on the student's own runs: which query heads' weights move when one key head's
    projection rows move. Zeros or noise cannot pass (the weights must be distributions, and
    every key head must move exactly its group)."""
    H, H_kv = x["H"], x["H_kv"]
    n_rep = H // H_kv
    _, base = result(got, x)
    _rows_sum_to_one(base)
    changed = []
    for g in range(H_kv):
        _, after = result(got, x, prefix=f"g{g}/")
        diff = (after - base).abs().amax(dim=(0, 2, 3))
        changed.append([h for h in range(H) if diff[h] > 1e-5])
    expected = [list(range(g * n_rep, (g + 1) * n_rep)) for g in range(H_kv)]
    if changed == expected:
        return
    if changed == [[h for h in range(H) if h % H_kv == g] for g in range(H_kv)]:
        raise Failure(MISTAKES["gqa-repeat-tiled"])
    if changed[0] == list(range(H)) and not any(changed[1:]):
        raise Failure(MISTAKES["gqa-one-kv-head"])
    if _split_by_view(x, base):  # each "key head" holds some of every head's features
        raise Failure(MULTIHEAD_MISTAKES["split-view-no-transpose"])
    g = next(g for g in range(H_kv) if changed[g] != expected[g])
    raise Failure(
        MISTAKES["gqa-wrong-groups"], g=g, changed=changed[g] or "none", expected=expected[g]
    )


# --------------------------------------------------------------------------- kv_cache_bytes


# What repr() gives for a Python float (probe_kv_bytes sends anything but an int as its repr).
FLOAT_REPR = re.compile(r"-?(\d+\.\d+(e[+-]\d+)?|\d+e[+-]\d+|inf)|nan")

KV_CACHE_BYTES = CHECKS.exercise("kv_cache_bytes", probe=probe.probe_kv_bytes)


@KV_CACHE_BYTES.check("kv-bytes", inputs=probe.inputs_kv_bytes)
def verdict_kv_bytes(got, want, x):
    """Every case is compared; a mistake is named when it explains every case (a float16
    count of elements and a float32 count of key bytes alone can look alike)."""
    values, wrong = [], []
    for i, (D, H, H_kv, T, dtype) in enumerate(x["cases"]):
        args = f"{D}, {H}, {H_kv}, {T}, torch.{dtype}"
        value = got.get(f"bytes{i}")
        if type(value) is str and FLOAT_REPR.fullmatch(value):  # the probe's repr of a float
            raise Failure(MISTAKES["gqa-kv-bytes-float"], args=args, got=value)
        if type(value) is not int:
            raise Failure(
                WRONG_TYPE, what=f"kv_cache_bytes({args})", expected="an int", got=str(value)[:100]
            )
        values.append(value)
        if value != want[f"bytes{i}"]:
            wrong.append(i)
    if not wrong:
        return
    i = wrong[0]
    D, H, H_kv, T, dtype = x["cases"][i]
    details = {
        "args": f"{D}, {H}, {H_kv}, {T}, torch.{dtype}",
        "got": values[i],
        "want": want[f"bytes{i}"],  # a reference value: withheld on the hidden tier
        "size": getattr(torch, dtype).itemsize,
        "dtype": dtype,
    }
    for mistake in (
        MISTAKES["gqa-kv-bytes-full-width"],
        MISTAKES["gqa-kv-bytes-keys-only"],
        MISTAKES["gqa-kv-bytes-elements"],
    ):
        try:
            named = all(
                value == _kv_bytes(case, mistake)
                for value, case in zip(values, x["cases"], strict=True)
            )
        except ModelUnavailable:  # the student copy: not named there
            named = False
        if named:
            raise Failure(mistake, **details)
    raise Failure(MISTAKES["gqa-kv-bytes-wrong"], **details)
